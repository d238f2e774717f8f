//! Rate limits over HTTP: a contact over its burst gets 429 `rate_limited`
//! with `Retry-After` and the `RateLimit-*` headers while another goes on;
//! requests without a valid token are limited per address, and once an
//! address is over, a bad token from it is refused while a valid one still
//! gets through (docs/api.md "Hostile load"); 0 turns limits off.

use confab_server::startup::{Quota, RateLimits};
use confab_tests::db::Backend;
use confab_tests::http::{Resp, TestApp};
use reqwest::Method;

fn limits(per_contact: Option<Quota>, anonymous: Option<Quota>) -> RateLimits {
    RateLimits {
        per_contact,
        anonymous,
        per_key: None,
    }
}

fn numeric(r: &Resp, name: &str) -> u64 {
    r.header(name)
        .unwrap_or_else(|| panic!("no {name} header"))
        .parse()
        .unwrap_or_else(|_| panic!("{name} is not a number"))
}

#[track_caller]
fn assert_limited(r: &Resp, limit: u64) {
    assert_eq!(r.status.as_u16(), 429, "{:?}", r.body);
    assert_eq!(r.body["type"], "invalid_request");
    assert_eq!(r.body["code"], "rate_limited");
    assert!(r.body["message"].is_string());
    assert!(r.body["param"].is_null());
    assert!(numeric(r, "retry-after") >= 1);
    assert_eq!(numeric(r, "ratelimit-limit"), limit);
    assert_eq!(numeric(r, "ratelimit-remaining"), 0);
    assert!(numeric(r, "ratelimit-reset") >= 1);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("cache-control"), Some("no-store"));
}

async fn a_contact_over_its_burst_is_limited_and_others_are_not(backend: Backend) {
    // One request a second, three at once: a fourth in a row is over.
    let app = TestApp::spawn_with(backend, limits(Quota::new(1, 3), None)).await;
    let alice = app.user("alice").await.token;
    let bob = app.user("bob").await.token;
    let mut remaining = Vec::new();
    for _ in 0..3 {
        let r = app
            .send(Method::GET, "/v1/contacts/me", Some(&alice), None, &[])
            .await;
        assert_eq!(r.status.as_u16(), 200);
        assert_eq!(numeric(&r, "ratelimit-limit"), 3);
        remaining.push(numeric(&r, "ratelimit-remaining"));
    }
    assert_eq!(remaining, [2, 1, 0]);
    let r = app
        .send(Method::GET, "/v1/contacts/me", Some(&alice), None, &[])
        .await;
    assert_limited(&r, 3);
    // Any route, any method: the budget is the contact's.
    assert_limited(
        &app.send(Method::GET, "/v1/messages", Some(&alice), None, &[])
            .await,
        3,
    );
    let r = app
        .send(Method::GET, "/v1/contacts/me", Some(&bob), None, &[])
        .await;
    assert_eq!(r.status.as_u16(), 200);
    // The budget refills: after the advertised wait, alice may go on.
    let wait = numeric(
        &app.send(Method::GET, "/v1/contacts/me", Some(&alice), None, &[])
            .await,
        "retry-after",
    );
    tokio::time::sleep(std::time::Duration::from_secs(wait)).await;
    assert_eq!(
        app.send(Method::GET, "/v1/contacts/me", Some(&alice), None, &[])
            .await
            .status
            .as_u16(),
        200
    );
}

async fn requests_without_a_valid_token_are_limited_per_address(backend: Backend) {
    let app = TestApp::spawn_with(backend, limits(None, Quota::new(1, 3))).await;
    let alice = app.user("alice").await.token;
    let unknown = format!("cfb_{}", "0".repeat(64));
    assert_eq!(
        app.send(Method::GET, "/v1/contacts/me", None, None, &[])
            .await
            .status
            .as_u16(),
        401
    );
    assert_eq!(
        app.send(Method::GET, "/v1/contacts/me", Some("garbage"), None, &[])
            .await
            .status
            .as_u16(),
        401
    );
    assert_eq!(
        app.send(Method::GET, "/v1/contacts/me", Some(&unknown), None, &[])
            .await
            .status
            .as_u16(),
        401
    );
    assert_limited(
        &app.send(Method::GET, "/v1/contacts/me", Some(&unknown), None, &[])
            .await,
        3,
    );
    // The address is spent: a bad token or none is refused, a valid token
    // from it is not (it may be a neighbour behind the same NAT).
    assert_limited(
        &app.send(Method::GET, "/v1/contacts/me", Some(&unknown), None, &[])
            .await,
        3,
    );
    assert_limited(
        &app.send(Method::GET, "/v1/contacts/me", None, None, &[])
            .await,
        3,
    );
    assert_eq!(
        app.send(Method::GET, "/v1/contacts/me", Some(&alice), None, &[])
            .await
            .status
            .as_u16(),
        200
    );
    // Outside /v1 nothing is limited.
    assert_eq!(
        app.send(Method::GET, "/healthz", None, None, &[])
            .await
            .status
            .as_u16(),
        200
    );
}

async fn zero_turns_the_limits_off(backend: Backend) {
    let app = TestApp::spawn_with(backend, RateLimits::OFF).await;
    let alice = app.user("alice").await.token;
    for _ in 0..60 {
        let r = app
            .send(Method::GET, "/v1/contacts/me", Some(&alice), None, &[])
            .await;
        assert_eq!(r.status.as_u16(), 200);
        assert_eq!(r.header("ratelimit-limit"), None);
    }
    for _ in 0..60 {
        assert_eq!(
            app.send(Method::GET, "/v1/contacts/me", None, None, &[])
                .await
                .status
                .as_u16(),
            401
        );
    }
}

async fn the_default_limit_leaves_a_busy_client_alone(backend: Backend) {
    let app = TestApp::spawn_with(backend, RateLimits::default()).await;
    let alice = app.user("alice").await.token;
    let defaults = RateLimits::default();
    let burst = defaults
        .per_contact
        .map(|q| q.burst.get())
        .expect("on by default");
    for _ in 0..burst {
        let r = app
            .send(Method::GET, "/v1/contacts/me", Some(&alice), None, &[])
            .await;
        assert_eq!(r.status.as_u16(), 200);
    }
}

confab_tests::on_both_stores!(crate::support::on_backend;
    a_contact_over_its_burst_is_limited_and_others_are_not,
    requests_without_a_valid_token_are_limited_per_address,
    zero_turns_the_limits_off,
    the_default_limit_leaves_a_busy_client_alone,
);
