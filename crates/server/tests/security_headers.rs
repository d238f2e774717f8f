//! Every response carries `Cache-Control: no-store` and
//! `X-Content-Type-Options: nosniff`: successes, errors of our handlers,
//! and errors actix produces itself (rewritten to JSON).

mod common;

use common::TestApp;
use reqwest::Method;

#[tokio::test]
async fn every_kind_of_response_has_the_security_headers() {
    let app = TestApp::spawn().await;
    let token = app.token("alice").await;
    let responses = [
        app.get("/healthz", None).await,
        app.get("/v1/contacts/me", Some(&token)).await,
        app.get("/v1/contacts/me", None).await,
        app.get("/v1/messages?limit=0", Some(&token)).await,
        app.get("/v1/nowhere", Some(&token)).await,
        app.get("/nowhere", None).await,
        app.send(Method::PATCH, "/v1/messages", Some(&token), None)
            .await,
        app.send(Method::POST, "/v1/messages", Some(&token), Some("a=%zz"))
            .await,
    ];
    let statuses: Vec<u16> = responses.iter().map(|r| r.status.as_u16()).collect();
    assert_eq!(statuses, [200, 200, 401, 400, 404, 404, 405, 400]);
    for (r, status) in responses.iter().zip(statuses) {
        assert_eq!(r.header("cache-control"), Some("no-store"), "{status}");
        assert_eq!(
            r.header("x-content-type-options"),
            Some("nosniff"),
            "{status}"
        );
    }
}
