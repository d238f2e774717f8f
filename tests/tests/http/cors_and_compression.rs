//! CORS (`CONFAB_CORS_ORIGINS`): off by default; when on, a preflight from
//! an allowed origin is answered before authentication, and answers carry
//! the CORS headers, errors included. Compression: gzip when asked for.

use std::io::Read as _;

use confab_server::startup::RateLimits;
use confab_server::startup::{CorsOrigins, ServerOptions};
use confab_tests::db::Backend;
use confab_tests::http::TestApp;
use reqwest::{Method, StatusCode};

const ORIGIN: &str = "https://app.example";

async fn app_with_cors(backend: Backend, cors: CorsOrigins) -> TestApp {
    TestApp::spawn_with_options(
        backend,
        ServerOptions {
            cors,
            ..ServerOptions::default()
        },
    )
    .await
}

async fn preflight(app: &TestApp, origin: &str) -> reqwest::Response {
    app.client
        .request(Method::OPTIONS, format!("{}/v1/messages", app.base_url))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization, content-type, idempotency-key, x-request-id",
        )
        .send()
        .await
        .expect("preflight sent")
}

fn header<'a>(r: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    r.headers().get(name).and_then(|v| v.to_str().ok())
}

fn lower_list(value: Option<&str>) -> Vec<String> {
    value
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_ascii_lowercase())
        .collect()
}

async fn preflight_from_an_allowed_origin_is_answered_before_authentication(backend: Backend) {
    let app = app_with_cors(backend, CorsOrigins::Some(vec![ORIGIN.to_owned()])).await;
    let r = preflight(&app, ORIGIN).await;
    assert!(
        matches!(r.status(), StatusCode::OK | StatusCode::NO_CONTENT),
        "{}",
        r.status()
    );
    assert_eq!(header(&r, "access-control-allow-origin"), Some(ORIGIN));
    let allowed = lower_list(header(&r, "access-control-allow-headers"));
    for h in [
        "authorization",
        "content-type",
        "idempotency-key",
        "x-request-id",
    ] {
        assert!(allowed.contains(&h.to_owned()), "{h}: {allowed:?}");
    }
    let methods = lower_list(header(&r, "access-control-allow-methods"));
    for m in ["get", "post", "put", "patch", "delete"] {
        assert!(methods.contains(&m.to_owned()), "{m}: {methods:?}");
    }
    assert!(header(&r, "x-request-id").is_some());

    // Actual requests, a refusal included, carry the CORS headers.
    for (token, status) in [(None, 401), (Some(app.user("alice").await.token), 200)] {
        let mut req = app
            .client
            .get(format!("{}/v1/contacts/me", app.base_url))
            .header("origin", ORIGIN);
        if let Some(t) = &token {
            req = req.bearer_auth(t);
        }
        let r = req.send().await.expect("sent");
        assert_eq!(r.status().as_u16(), status);
        assert_eq!(header(&r, "access-control-allow-origin"), Some(ORIGIN));
        let exposed = lower_list(header(&r, "access-control-expose-headers"));
        for h in [
            "location",
            "retry-after",
            "ratelimit-limit",
            "ratelimit-remaining",
            "ratelimit-reset",
            "x-request-id",
            "idempotent-replayed",
        ] {
            assert!(exposed.contains(&h.to_owned()), "{h}: {exposed:?}");
        }
    }

    // Another origin gets no CORS grant (its preflight is refused, 403
    // `forbidden` as JSON, and its requests are served without CORS
    // headers).
    let r = preflight(&app, "https://evil.example").await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(header(&r, "access-control-allow-origin"), None);
    assert_eq!(header(&r, "content-type"), Some("application/json"));
    assert_eq!(header(&r, "cache-control"), Some("no-store"));
    let body: serde_json::Value = r.json().await.expect("a JSON error");
    assert_eq!(body["code"], "forbidden", "{body}");
    let r = app
        .client
        .get(format!("{}/healthz", app.base_url))
        .header("origin", "https://evil.example")
        .send()
        .await
        .expect("sent");
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(header(&r, "access-control-allow-origin"), None);
}

async fn any_origin_when_asked_with_a_star(backend: Backend) {
    let app = app_with_cors(backend, CorsOrigins::Any).await;
    let r = preflight(&app, "https://whoever.example").await;
    assert!(r.status().is_success(), "{}", r.status());
    assert_eq!(header(&r, "access-control-allow-origin"), Some("*"));
}

async fn cors_is_off_by_default(backend: Backend) {
    let app = TestApp::spawn_with(backend, RateLimits::default()).await;
    let r = preflight(&app, ORIGIN).await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(header(&r, "access-control-allow-origin"), None);
    let r = app
        .client
        .get(format!("{}/healthz", app.base_url))
        .header("origin", ORIGIN)
        .send()
        .await
        .expect("sent");
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(header(&r, "access-control-allow-origin"), None);
    assert_eq!(header(&r, "access-control-expose-headers"), None);
}

async fn a_large_list_is_gzipped_when_asked_and_plain_otherwise(backend: Backend) {
    let app = TestApp::spawn_with(backend, RateLimits::default()).await;
    let alice = app.user("alice").await.token;
    let bob = app.user("bob").await.token;
    let bob_id = app
        .send(Method::GET, "/v1/contacts/me", Some(&bob), None, &[])
        .await
        .body["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let form = format!("contact_id={bob_id}");
    let conv = app
        .send(
            Method::POST,
            "/v1/conversations",
            Some(&alice),
            Some((
                "application/x-www-form-urlencoded",
                form.clone().into_bytes(),
            )),
            &[],
        )
        .await;
    assert_eq!(conv.status.as_u16(), 201, "{:?}", conv.body);
    let conv_id = conv.body["id"].as_str().expect("id").to_owned();
    for i in 0..30 {
        let form = format!("conversation_id={conv_id}&message=message+number+{i}+of+a+long+list");
        let r = app
            .send(
                Method::POST,
                "/v1/messages",
                Some(&alice),
                Some((
                    "application/x-www-form-urlencoded",
                    form.clone().into_bytes(),
                )),
                &[],
            )
            .await;
        assert_eq!(r.status.as_u16(), 201);
    }
    let url = format!(
        "{}/v1/messages?conversation_id={conv_id}&limit=100",
        app.base_url
    );

    let plain = app
        .client
        .get(&url)
        .bearer_auth(&alice)
        .send()
        .await
        .expect("sent");
    assert_eq!(plain.status(), StatusCode::OK);
    assert_eq!(header(&plain, "content-encoding"), None);
    let plain_body = plain.bytes().await.expect("body");
    let list: serde_json::Value = serde_json::from_slice(&plain_body).expect("plain JSON");
    assert_eq!(list["data"].as_array().map(Vec::len), Some(30));

    let gz = app
        .client
        .get(&url)
        .bearer_auth(&alice)
        .header("accept-encoding", "gzip")
        .send()
        .await
        .expect("sent");
    assert_eq!(gz.status(), StatusCode::OK);
    assert_eq!(header(&gz, "content-encoding"), Some("gzip"));
    assert!(lower_list(header(&gz, "vary")).contains(&"accept-encoding".to_owned()));
    assert_eq!(header(&gz, "cache-control"), Some("no-store"));
    let compressed = gz.bytes().await.expect("body");
    assert!(
        compressed.len() < plain_body.len() / 2,
        "{} vs {}",
        compressed.len(),
        plain_body.len()
    );
    let mut unzipped = Vec::new();
    flate2::read::GzDecoder::new(&compressed[..])
        .read_to_end(&mut unzipped)
        .expect("gunzip");
    assert_eq!(unzipped, plain_body);
}

confab_tests::on_both_stores!(crate::support::on_backend;
    preflight_from_an_allowed_origin_is_answered_before_authentication,
    any_origin_when_asked_with_a_star,
    cors_is_off_by_default,
    a_large_list_is_gzipped_when_asked_and_plain_otherwise,
);
