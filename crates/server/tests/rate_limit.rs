//! Rate limits over HTTP: a contact over its burst gets 429 `rate_limited`
//! with `Retry-After` and the `RateLimit-*` headers while another goes on;
//! requests without a valid token are limited per address, and once an
//! address is over, a bad token from it is refused while a valid one still
//! gets through (API.md section 9 "Hostile load"); 0 turns limits off.

mod common;

use common::{Resp, TestApp};
use confab_server::startup::{Quota, RateLimits};

fn limits(per_contact: Option<Quota>, anonymous: Option<Quota>) -> RateLimits {
    RateLimits {
        per_contact,
        anonymous,
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

#[tokio::test]
async fn a_contact_over_its_burst_is_limited_and_others_are_not() {
    // One request a second, three at once: a fourth in a row is over.
    let app = TestApp::spawn_with(limits(Quota::new(1, 3), None)).await;
    let alice = app.token("alice").await;
    let bob = app.token("bob").await;
    let mut remaining = Vec::new();
    for _ in 0..3 {
        let r = app.get("/v1/contacts/me", Some(&alice)).await;
        assert_eq!(r.status.as_u16(), 200);
        assert_eq!(numeric(&r, "ratelimit-limit"), 3);
        remaining.push(numeric(&r, "ratelimit-remaining"));
    }
    assert_eq!(remaining, [2, 1, 0]);
    let r = app.get("/v1/contacts/me", Some(&alice)).await;
    assert_limited(&r, 3);
    // Any route, any method: the budget is the contact's.
    assert_limited(&app.get("/v1/messages", Some(&alice)).await, 3);
    let r = app.get("/v1/contacts/me", Some(&bob)).await;
    assert_eq!(r.status.as_u16(), 200);
    // The budget refills: after the advertised wait, alice may go on.
    let wait = numeric(
        &app.get("/v1/contacts/me", Some(&alice)).await,
        "retry-after",
    );
    tokio::time::sleep(std::time::Duration::from_secs(wait)).await;
    assert_eq!(
        app.get("/v1/contacts/me", Some(&alice))
            .await
            .status
            .as_u16(),
        200
    );
}

#[tokio::test]
async fn requests_without_a_valid_token_are_limited_per_address() {
    let app = TestApp::spawn_with(limits(None, Quota::new(1, 3))).await;
    let alice = app.token("alice").await;
    let unknown = format!("cfb_{}", "0".repeat(64));
    assert_eq!(app.get("/v1/contacts/me", None).await.status.as_u16(), 401);
    assert_eq!(
        app.get("/v1/contacts/me", Some("garbage"))
            .await
            .status
            .as_u16(),
        401
    );
    assert_eq!(
        app.get("/v1/contacts/me", Some(&unknown))
            .await
            .status
            .as_u16(),
        401
    );
    assert_limited(&app.get("/v1/contacts/me", Some(&unknown)).await, 3);
    // The address is spent: a bad token or none is refused, a valid token
    // from it is not (it may be a neighbour behind the same NAT).
    assert_limited(&app.get("/v1/contacts/me", Some(&unknown)).await, 3);
    assert_limited(&app.get("/v1/contacts/me", None).await, 3);
    assert_eq!(
        app.get("/v1/contacts/me", Some(&alice))
            .await
            .status
            .as_u16(),
        200
    );
    // Outside /v1 nothing is limited.
    assert_eq!(app.get("/healthz", None).await.status.as_u16(), 200);
}

#[tokio::test]
async fn zero_turns_the_limits_off() {
    let app = TestApp::spawn_with(RateLimits::OFF).await;
    let alice = app.token("alice").await;
    for _ in 0..60 {
        let r = app.get("/v1/contacts/me", Some(&alice)).await;
        assert_eq!(r.status.as_u16(), 200);
        assert_eq!(r.header("ratelimit-limit"), None);
    }
    for _ in 0..60 {
        assert_eq!(app.get("/v1/contacts/me", None).await.status.as_u16(), 401);
    }
}

#[tokio::test]
async fn the_default_limit_leaves_a_busy_client_alone() {
    let app = TestApp::spawn().await;
    let alice = app.token("alice").await;
    let defaults = RateLimits::default();
    let burst = defaults
        .per_contact
        .map(|q| q.burst.get())
        .expect("on by default");
    for _ in 0..burst {
        let r = app.get("/v1/contacts/me", Some(&alice)).await;
        assert_eq!(r.status.as_u16(), 200);
    }
}
