//! `Idempotency-Key` on POST (docs/api.md "Retry safely: idempotency keys") over HTTP: replay, reuse,
//! in flight, per caller, concurrency, and what is kept.

use std::net::TcpListener;
use std::sync::Arc;

use confab_server::startup::{Application, RateLimits};
use confab_tests::http::{encode_form, Resp, TestApp, User};
use reqwest::header::CONTENT_TYPE;
use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{data_ids, now_secs, UNKNOWN_ID};

const FORM: &str = "application/x-www-form-urlencoded";

/// A form POST with an idempotency key.
async fn post_keyed(
    app: &TestApp,
    user: &User,
    path: &str,
    key: &str,
    pairs: &[(&str, &str)],
) -> Resp {
    app.send(
        Method::POST,
        path,
        Some(&user.token),
        Some((FORM, encode_form(pairs).into_bytes())),
        &[("Idempotency-Key", key)],
    )
    .await
}

/// A JSON POST with an idempotency key.
async fn post_json_keyed(
    app: &TestApp,
    user: &User,
    path: &str,
    key: &str,
    body: &serde_json::Value,
) -> Resp {
    app.send(
        Method::POST,
        path,
        Some(&user.token),
        Some(("application/json", body.to_string().into_bytes())),
        &[("Idempotency-Key", key)],
    )
    .await
}

async fn messages_in(app: &TestApp, user: &User, conversation: &str) -> Vec<String> {
    let r = app
        .get(
            user,
            &format!("/v1/messages?conversation_id={conversation}&limit=100"),
        )
        .await;
    data_ids(r.expect(200))
}

async fn idempotency_a_retry_gets_the_first_answer_again(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let c = app.direct(&alice, &bob).await;
    let pairs = [("conversation_id", c.as_str()), ("message", "once")];
    let first = post_keyed(&app, &alice, "/v1/messages", "send-1", &pairs).await;
    first.expect(201);
    assert_eq!(first.header("idempotent-replayed"), None);
    let again = post_keyed(&app, &alice, "/v1/messages", "send-1", &pairs).await;
    again.expect(201);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.raw, first.raw, "the same body, byte for byte");
    assert_eq!(again.header("location"), first.header("location"));
    assert_eq!(again.header("content-type"), Some("application/json"));
    assert_eq!(
        messages_in(&app, &alice, &c).await,
        vec![first.body["id"].as_str().expect("id").to_owned()]
    );

    // Without a key, every POST is a new message.
    app.send_message(&alice, &c, "once").await;
    app.send_message(&alice, &c, "once").await;
    assert_eq!(messages_in(&app, &alice, &c).await.len(), 3);
}

async fn idempotency_a_key_names_one_request_of_one_caller(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let c = app.direct(&alice, &bob).await;
    let pairs = [("conversation_id", c.as_str()), ("message", "first")];
    post_keyed(&app, &alice, "/v1/messages", "k", &pairs)
        .await
        .expect(201);
    // Another body, or another operation, with the key: 422.
    post_keyed(
        &app,
        &alice,
        "/v1/messages",
        "k",
        &[("conversation_id", c.as_str()), ("message", "second")],
    )
    .await
    .expect_error(422, "idempotency_key_reused", Some("Idempotency-Key"));
    post_keyed(
        &app,
        &alice,
        "/v1/conversations",
        "k",
        &[("contact_id", bob.id.as_str())],
    )
    .await
    .expect_error(422, "idempotency_key_reused", Some("Idempotency-Key"));
    // Another caller's key of the same name is theirs.
    let theirs = post_keyed(
        &app,
        &bob,
        "/v1/messages",
        "k",
        &[("conversation_id", c.as_str()), ("message", "first")],
    )
    .await;
    theirs.expect(201);
    assert_eq!(theirs.header("idempotent-replayed"), None);
    assert_eq!(messages_in(&app, &alice, &c).await.len(), 2);
}

async fn idempotency_sixteen_concurrent_requests_make_one_message(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let c = app.direct(&alice, &bob).await;
    let app = Arc::new(app);
    let pairs = vec![
        ("conversation_id".to_owned(), c.clone()),
        ("message".to_owned(), "racing".to_owned()),
    ];
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (app, alice, pairs) = (app.clone(), alice.clone(), pairs.clone());
            tokio::spawn(async move {
                let pairs: Vec<(&str, &str)> = pairs
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                post_keyed(&app, &alice, "/v1/messages", "race", &pairs).await
            })
        })
        .collect();
    let mut ids = std::collections::BTreeSet::new();
    let (mut fresh, mut in_flight) = (0, 0);
    for t in tasks {
        let r = t.await.expect("join");
        match r.status.as_u16() {
            201 => {
                if r.header("idempotent-replayed").is_none() {
                    fresh += 1;
                }
                ids.insert(r.body["id"].as_str().expect("id").to_owned());
            }
            409 => {
                r.expect_error(409, "conflict", Some("Idempotency-Key"));
                in_flight += 1;
            }
            other => panic!("unexpected {other}: {}", r.raw),
        }
    }
    assert_eq!(
        fresh, 1,
        "exactly one request ran ({in_flight} were in flight)"
    );
    assert_eq!(ids.len(), 1);
    // Those refused as in flight get the one answer when they retry.
    let pairs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let retry = post_keyed(&app, &alice, "/v1/messages", "race", &pairs).await;
    retry.expect(201);
    assert_eq!(retry.header("idempotent-replayed"), Some("true"));
    assert!(ids.contains(retry.body["id"].as_str().expect("id")));
    assert_eq!(messages_in(&app, &alice, &c).await.len(), 1);
}

async fn idempotency_what_the_operation_refused_is_kept_but_malformed_requests_are_not(
    app: TestApp,
) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let c = app.direct(&alice, &bob).await;
    // carol is not in the conversation: 404, and a retry gets that 404.
    let pairs = [("conversation_id", c.as_str()), ("message", "hi")];
    let refused = post_keyed(&app, &carol, "/v1/messages", "c1", &pairs).await;
    refused.expect_error(404, "not_found", Some("conversation_id"));
    let again = post_keyed(&app, &carol, "/v1/messages", "c1", &pairs).await;
    again.expect_error(404, "not_found", Some("conversation_id"));
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.raw, refused.raw);

    // A request refused before it ran (a malformed body) keeps nothing:
    // the corrected request may use the key.
    post_keyed(
        &app,
        &alice,
        "/v1/messages",
        "a1",
        &[("conversation_id", c.as_str())],
    )
    .await
    .expect_error(400, "parameter_missing", Some("message"));
    post_keyed(&app, &alice, "/v1/messages", "a1", &pairs)
        .await
        .expect(201);

    // A malformed key: 400 naming the header.
    for bad in [String::new(), "k".repeat(256)] {
        post_keyed(&app, &alice, "/v1/messages", &bad, &pairs)
            .await
            .expect_error(400, "parameter_invalid", Some("Idempotency-Key"));
    }
    let longest = "k".repeat(255);
    post_keyed(&app, &alice, "/v1/messages", &longest, &pairs)
        .await
        .expect(201);
}

async fn idempotency_covers_every_post(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let conv = [("contact_id", bob.id.as_str())];
    let a = post_keyed(&app, &alice, "/v1/conversations", "conv", &conv).await;
    let b = post_keyed(&app, &alice, "/v1/conversations", "conv", &conv).await;
    assert_eq!(a.expect(201)["id"], b.expect(201)["id"]);
    assert_eq!(b.header("idempotent-replayed"), Some("true"));
    let listed = app.get(&alice, "/v1/conversations").await;
    assert_eq!(data_ids(listed.expect(200)).len(), 1);

    // JSON bodies too.
    let body = json!({"name": "team", "contact_ids": [bob.id]});
    let send = |key: &'static str| post_json_keyed(&app, &alice, "/v1/groups", key, &body);
    let g1 = send("grp").await;
    let g2 = send("grp").await;
    assert_eq!(g1.expect(201)["id"], g2.expect(201)["id"]);
    assert_eq!(g2.raw, g1.raw);
    assert_eq!(g2.header("idempotent-replayed"), Some("true"));
    let groups = app.get(&alice, "/v1/groups").await;
    assert_eq!(data_ids(groups.expect(200)).len(), 1);

    // Other methods ignore the header.
    let c = id_str(&a);
    for _ in 0..2 {
        let r = app
            .send(
                Method::PUT,
                &format!("/v1/conversations/{c}"),
                Some(&alice.token),
                Some((FORM, b"is_muted=true".to_vec())),
                &[("Idempotency-Key", "conv")],
            )
            .await;
        r.expect(200);
        assert_eq!(r.header("idempotent-replayed"), None);
    }
}

/// A second server on the application's service and database whose
/// service allows `keys_per_day` new idempotency keys a contact a day (the
/// harness's server runs the default, 10,000); returns its base URL.
async fn server_with_quota(app: &TestApp, keys_per_day: u32) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let service = app.service.clone().with_idempotency_quota(keys_per_day);
    let limits = RateLimits {
        anonymous: None,
        ..RateLimits::default()
    };
    let server = Application::build_with(service, listener, limits)
        .await
        .expect("build");
    tokio::spawn(server.run_until_stopped());
    format!("http://127.0.0.1:{port}")
}

/// A form POST to the server at `base`, with `token` and `key`.
async fn post_at(
    app: &TestApp,
    base: &str,
    token: &str,
    key: Option<&str>,
    pairs: &[(&str, &str)],
) -> Resp {
    let mut req = app
        .client
        .post(format!("{base}/v1/messages"))
        .bearer_auth(token)
        .header(CONTENT_TYPE, FORM)
        .body(encode_form(pairs));
    if let Some(key) = key {
        req = req.header("Idempotency-Key", key);
    }
    let resp = req.send().await.expect("request sent");
    let (status, headers) = (resp.status(), resp.headers().clone());
    let raw = resp.text().await.expect("body read");
    let body = serde_json::from_str(&raw).unwrap_or(Value::Null);
    Resp {
        status,
        headers,
        body,
        raw,
    }
}

/// A flood of new keys in small: keyed POSTs from several tokens of one
/// contact, answered 201 or 404, each stored a key. Past the contact's
/// quota of new keys a new key is 429 `idempotency_quota` with
/// `Retry-After` (the next UTC day) and stores nothing, while retries of
/// the keys claimed before still replay, requests without a key still
/// run, and other contacts keep their own quota.
async fn idempotency_new_keys_past_the_daily_quota_are_refused(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let c = app.direct(&alice, &bob).await;
    let limited = server_with_quota(&app, 3).await;
    let second = app
        .service
        .issue_token("alice", None)
        .await
        .expect("second token");
    let hello = [("conversation_id", c.as_str()), ("message", "hello")];
    let nowhere = [("conversation_id", UNKNOWN_ID), ("message", "lost")];

    let first = post_at(&app, &limited, &alice.token, Some("k1"), &hello).await;
    first.expect(201);
    post_at(&app, &limited, &second, Some("k2"), &nowhere)
        .await
        .expect_error(404, "not_found", Some("conversation_id"));
    post_at(&app, &limited, &alice.token, Some("k3"), &nowhere)
        .await
        .expect_error(404, "not_found", Some("conversation_id"));

    for token in [&second, &alice.token] {
        let refused = post_at(&app, &limited, token, Some("k4"), &hello).await;
        refused.expect_error(429, "idempotency_quota", Some("Idempotency-Key"));
        assert_eq!(refused.header("idempotent-replayed"), None);
        let retry_after: i64 = refused
            .header("retry-after")
            .expect("Retry-After")
            .parse()
            .expect("whole seconds");
        let to_midnight = 86_400 - now_secs().rem_euclid(86_400);
        let off = (retry_after - to_midnight).rem_euclid(86_400);
        assert!(
            (1..=86_400).contains(&retry_after) && (off <= 2 || off >= 86_398),
            "Retry-After {retry_after}, the next UTC day in {to_midnight} s"
        );
    }

    // Keys claimed before are retries, not new keys: they replay.
    let again = post_at(&app, &limited, &second, Some("k1"), &hello).await;
    again.expect(201);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.raw, first.raw);
    let again = post_at(&app, &limited, &alice.token, Some("k2"), &nowhere).await;
    again.expect_error(404, "not_found", Some("conversation_id"));
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    // Without a key, the request runs.
    post_at(&app, &limited, &alice.token, None, &hello)
        .await
        .expect(201);
    // Bob has a quota of his own.
    let theirs = [("conversation_id", c.as_str()), ("message", "mine")];
    post_at(&app, &limited, &bob.token, Some("k4"), &theirs)
        .await
        .expect(201);

    // The refused k4 stored nothing: under the default quota it is a new
    // key that runs (not a replay, not in flight).
    let fresh = post_keyed(&app, &alice, "/v1/messages", "k4", &hello).await;
    fresh.expect(201);
    assert_eq!(fresh.header("idempotent-replayed"), None);
    assert_eq!(messages_in(&app, &alice, &c).await.len(), 4);
}

fn id_str(r: &Resp) -> String {
    r.body["id"].as_str().expect("id").to_owned()
}

/// docs/api.md "Requests and answers": a retry that serializes its body again (JSON instead
/// of a form, another key order, other spacing) is the same request; other
/// parameters are not.
async fn idempotency_compares_parameters_not_bytes(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let c = app.direct(&alice, &bob).await;
    let first = post_keyed(
        &app,
        &alice,
        "/v1/messages",
        "mobile-1",
        &[("conversation_id", c.as_str()), ("message", "sent once")],
    )
    .await;
    first.expect(201);
    let bodies = [
        format!(r#"{{"message":"sent once","conversation_id":"{c}"}}"#),
        format!("{{\n  \"conversation_id\" : \"{c}\",\n  \"message\" : \"sent once\"\n}}"),
    ];
    for body in bodies {
        let again = app
            .send(
                Method::POST,
                "/v1/messages",
                Some(&alice.token),
                Some(("application/json", body.clone().into_bytes())),
                &[("Idempotency-Key", "mobile-1")],
            )
            .await;
        again.expect(201);
        assert_eq!(again.header("idempotent-replayed"), Some("true"), "{body}");
        assert_eq!(again.raw, first.raw);
    }
    // The form again, its keys in the other order.
    let again = post_keyed(
        &app,
        &alice,
        "/v1/messages",
        "mobile-1",
        &[("message", "sent once"), ("conversation_id", c.as_str())],
    )
    .await;
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(messages_in(&app, &alice, &c).await.len(), 1);
    // Another text is another request.
    let other = format!(r#"{{"message":"sent twice","conversation_id":"{c}"}}"#);
    app.send(
        Method::POST,
        "/v1/messages",
        Some(&alice.token),
        Some(("application/json", other.into_bytes())),
        &[("Idempotency-Key", "mobile-1")],
    )
    .await
    .expect_error(422, "idempotency_key_reused", Some("Idempotency-Key"));
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    idempotency_compares_parameters_not_bytes,
    idempotency_a_retry_gets_the_first_answer_again,
    idempotency_a_key_names_one_request_of_one_caller,
    idempotency_sixteen_concurrent_requests_make_one_message,
    idempotency_what_the_operation_refused_is_kept_but_malformed_requests_are_not,
    idempotency_covers_every_post,
    idempotency_new_keys_past_the_daily_quota_are_refused,
);
