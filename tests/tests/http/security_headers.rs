//! Every response carries `Cache-Control: no-store` and
//! `X-Content-Type-Options: nosniff`: successes, errors of our handlers,
//! and errors actix produces itself (rewritten to JSON).

use confab_server::startup::RateLimits;
use confab_tests::db::Backend;
use confab_tests::http::TestApp;
use reqwest::Method;

async fn every_kind_of_response_has_the_security_headers(backend: Backend) {
    let app = TestApp::spawn_with(backend, RateLimits::default()).await;
    let token = app.user("alice").await.token;
    let responses = [
        app.send(Method::GET, "/healthz", None, None, &[]).await,
        app.send(Method::GET, "/v1/contacts/me", Some(&token), None, &[])
            .await,
        app.send(Method::GET, "/v1/contacts/me", None, None, &[])
            .await,
        app.send(Method::GET, "/v1/messages?limit=0", Some(&token), None, &[])
            .await,
        app.send(Method::GET, "/v1/nowhere", Some(&token), None, &[])
            .await,
        app.send(Method::GET, "/nowhere", None, None, &[]).await,
        app.send(Method::PATCH, "/v1/messages", Some(&token), None, &[])
            .await,
        app.send(
            Method::POST,
            "/v1/messages",
            Some(&token),
            Some((
                "application/x-www-form-urlencoded",
                "a=%zz".as_bytes().to_vec(),
            )),
            &[],
        )
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

confab_tests::on_both_stores!(crate::support::on_backend;
    every_kind_of_response_has_the_security_headers,
);
