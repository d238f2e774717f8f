//! The new fields in events and webhooks: a reply's `message.created`
//! carries its quote, thread and mentions as its members would GET it; an
//! edit's `message.updated` carries `edited_at`; once the quoted message is
//! deleted, the reply's earlier events show `{"id", "deleted": true}` as
//! its quote and the quoted text is nowhere in the catch-up (docs/api.md
//! "Deleted means gone"), also when the quoted message goes
//! with its erased sender (section 14); webhooks carry the same fields.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use confab_server::startup::{RateLimits, ServerOptions};
use confab_tests::db::Backend;
use confab_tests::http::TestApp;
use reqwest::Method;
use serde_json::{json, Value};

use super::{caught_up, created_of, message, quote_of, send, thread_reply, trio, without_activity};
use crate::support::{conversation_created, id_of};

/// The ids a message payload mentions, sorted.
fn mentions_of(m: &Value) -> Vec<String> {
    let mut ids: Vec<String> = m["mentions"]
        .as_array()
        .unwrap_or_else(|| panic!("mentions is not an array: {m}"))
        .iter()
        .map(|v| v.as_str().expect("an id").to_owned())
        .collect();
    ids.sort();
    ids
}

async fn a_reply_s_events_carry_its_quote_thread_and_mentions(app: TestApp) {
    let (alice, bob, carol, conv) = trio(&app).await;
    let since_alice = conversation_created(&app, &alice).await;
    let since_carol = conversation_created(&app, &carol).await;
    let quoted = send(&app, &alice, &conv, "what do you think?", &[]).await;
    let q = id_of(&quoted);
    let parent = id_of(&send(&app, &alice, &conv, "a thread", &[]).await);
    let reply = send(
        &app,
        &bob,
        &conv,
        "I think yes",
        &[
            ("reply_to_id", q.as_str()),
            ("parent_id", parent.as_str()),
            ("mentions[]", alice.id.as_str()),
            ("mentions[]", carol.id.as_str()),
        ],
    )
    .await;
    let r = id_of(&reply);
    let mut want_mentions = vec![alice.id.clone(), carol.id.clone()];
    want_mentions.sort();

    for (who, since) in [(&alice, &since_alice), (&carol, &since_carol)] {
        let (raw, events) = caught_up(&app, &who.token, since, |e| created_of(e, &r)).await;
        let e = events
            .iter()
            .find(|e| created_of(e, &r))
            .expect("the reply's event");
        let payload = &e["payload"];
        assert_eq!(
            payload["reply_to"],
            quote_of(&quoted, "what do you think?"),
            "{raw}"
        );
        assert_eq!(payload["parent_id"], parent.as_str(), "{raw}");
        assert_eq!(mentions_of(payload), want_mentions, "{raw}");
        assert_eq!(payload["reply_count"], 0);
        assert!(payload["last_reply_at"].is_null());
        assert!(payload["edited_at"].is_null());
        // As the recipient would GET it (then: unread, unedited).
        let got = message(&app, who, &r).await;
        assert_eq!(without_activity(payload), without_activity(&got), "{raw}");
    }

    // An edit's message.updated carries edited_at and the new text.
    let edited = app
        .put(
            &bob,
            &format!("/v1/messages/{r}"),
            &[("message", "I think no")],
        )
        .await;
    let edited = edited.expect(200).clone();
    let (raw, events) = caught_up(&app, &alice.token, &since_alice, |e| {
        e["type"] == "message.updated" && e["payload"]["id"] == r.as_str()
    })
    .await;
    let e = events
        .iter()
        .find(|e| e["type"] == "message.updated" && e["payload"]["id"] == r.as_str())
        .expect("the edit's event");
    assert_eq!(e["payload"]["message"], "I think no", "{raw}");
    assert_eq!(e["payload"]["edited_at"], edited["edited_at"], "{raw}");
    assert!(e["payload"]["edited_at"].is_i64(), "{raw}");
    assert_eq!(e["payload"]["parent_id"], parent.as_str(), "{raw}");
    assert_eq!(mentions_of(&e["payload"]), want_mentions, "{raw}");
}

async fn deleting_the_quoted_message_scrubs_it_from_the_reply_s_events(app: TestApp) {
    let (alice, bob, carol, conv) = trio(&app).await;
    let since: Vec<String> = {
        let mut out = Vec::new();
        for who in [&alice, &bob, &carol] {
            out.push(conversation_created(&app, who).await);
        }
        out
    };
    let quoted = send(&app, &alice, &conv, "the vault code is xyzzy-1", &[]).await;
    let q = id_of(&quoted);
    // Quoted by a reply, by a thread reply, edited, quoted again.
    let reply = id_of(&send(&app, &bob, &conv, "noted", &[("reply_to_id", q.as_str())]).await);
    let top = id_of(&send(&app, &carol, &conv, "a thread", &[]).await);
    let in_thread = send(
        &app,
        &carol,
        &conv,
        "also noted",
        &[("reply_to_id", q.as_str()), ("parent_id", top.as_str())],
    )
    .await;
    let in_thread = id_of(&in_thread);
    app.put(
        &alice,
        &format!("/v1/messages/{q}"),
        &[("message", "the vault code is xyzzy-2")],
    )
    .await
    .expect(200);
    let late = id_of(
        &send(
            &app,
            &carol,
            &conv,
            "noted as well",
            &[("reply_to_id", q.as_str())],
        )
        .await,
    );
    // The reply changes too (a reaction: message.updated with the quote).
    app.put(
        &alice,
        &format!("/v1/messages/{reply}"),
        &[("reactions[like][]", "alice")],
    )
    .await
    .expect(200);
    let (raw, _) = caught_up(&app, &bob.token, &since[1], |e| {
        e["type"] == "message.updated" && e["payload"]["id"] == reply.as_str()
    })
    .await;
    assert!(raw.contains("xyzzy-1"), "the quote was there: {raw}");
    assert!(raw.contains("xyzzy-2"), "the quote was there: {raw}");

    app.delete(&alice, &format!("/v1/messages/{q}"))
        .await
        .expect(204);

    let later = app
        .service
        .issue_token("carol", None)
        .await
        .expect("a new token");
    let readers = [
        (alice.token.clone(), since[0].clone()),
        (bob.token.clone(), since[1].clone()),
        (carol.token.clone(), since[2].clone()),
        (later, since[2].clone()),
    ];
    let gone = json!({"id": q, "deleted": true});
    for (token, since) in &readers {
        let (raw, events) = caught_up(&app, token, since, |e| {
            e["type"] == "message.deleted" && e["payload"]["id"] == q.as_str()
        })
        .await;
        assert!(
            !raw.contains("xyzzy"),
            "the quoted text is still there: {raw}"
        );
        assert!(
            !raw.contains("vault code"),
            "the quoted text is still there: {raw}"
        );
        // Each event of each reply: still there, its own text whole, the
        // quote gone.
        for (id, text, events_of) in [
            (&reply, "noted", 2),
            (&in_thread, "also noted", 1),
            (&late, "noted as well", 1),
        ] {
            let of: Vec<&Value> = events
                .iter()
                .filter(|e| e["payload"]["id"] == id.as_str())
                .collect();
            // (Its created and any change before; the deletion of the
            // quoted message may add one of its own.)
            assert!(of.len() >= events_of, "events of {text}: {raw}");
            assert!(
                of.iter().any(|e| e["type"] == "message.created"),
                "{text} was created: {raw}"
            );
            for e in of {
                assert_eq!(e["payload"]["message"], text, "{e}");
                assert_eq!(e["payload"]["reply_to"], gone, "{e}");
            }
        }
        // The quoted message's own events: only its id.
        for e in events.iter().filter(|e| e["payload"]["id"] == q.as_str()) {
            let want = if e["type"] == "message.deleted" {
                json!({ "id": q })
            } else {
                gone.clone()
            };
            assert_eq!(e["payload"], want, "{e}");
        }
    }
}

async fn erasing_the_sender_takes_back_their_quotes_threads_and_mentions(app: TestApp) {
    let (alice, bob, carol, conv) = trio(&app).await;
    let since = conversation_created(&app, &carol).await;
    let quoted = id_of(&send(&app, &bob, &conv, "bob says xyzzy-erased", &[]).await);
    send(
        &app,
        &bob,
        &conv,
        "hi @carol",
        &[("mentions[]", carol.id.as_str())],
    )
    .await;
    let parent = id_of(&send(&app, &alice, &conv, "a thread", &[]).await);
    let carols = thread_reply(&app, &carol, &conv, &parent, "carol replies").await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    thread_reply(&app, &bob, &conv, &parent, "bob replies").await;
    let quoting = id_of(
        &send(
            &app,
            &carol,
            &conv,
            "quoting bob",
            &[("reply_to_id", quoted.as_str())],
        )
        .await,
    );
    assert_eq!(super::counts(&app, &carol, &conv).await, (4, 1));
    assert_eq!(message(&app, &alice, &parent).await["reply_count"], 2);
    let (raw, _) = caught_up(&app, &carol.token, &since, |e| created_of(e, &quoting)).await;
    assert!(raw.contains("xyzzy-erased"), "the quote was there: {raw}");

    let key = app
        .service
        .create_server_key("depth")
        .await
        .expect("create key")
        .secret;
    let r = app
        .send(
            Method::DELETE,
            &format!("/v1/admin/contacts/{}", bob.id),
            Some(&key),
            None,
            &[],
        )
        .await;
    r.expect(204);

    // Carol's unread mention went with bob's message.
    assert_eq!(super::counts(&app, &carol, &conv).await, (1, 0));
    // The thread counts carol's reply alone, and its time.
    let p = message(&app, &alice, &parent).await;
    assert_eq!(p["reply_count"], 1, "{p}");
    assert_eq!(p["last_reply_at"], carols["created_at"], "{p}");
    let thread = app
        .get(
            &alice,
            &format!("/v1/messages?parent_id={parent}&limit=100"),
        )
        .await;
    assert_eq!(
        crate::support::data_ids(thread.expect(200)),
        [id_of(&carols)]
    );
    // Carol's quote: only the id is left, in the message and its events.
    let gone = json!({"id": quoted, "deleted": true});
    assert_eq!(message(&app, &carol, &quoting).await["reply_to"], gone);
    let (raw, events) = caught_up(&app, &carol.token, &since, |e| {
        e["type"] == "message.deleted" && e["payload"]["id"] == quoted.as_str()
    })
    .await;
    assert!(
        !raw.contains("xyzzy-erased"),
        "the quoted text is still there: {raw}"
    );
    let e = events
        .iter()
        .find(|e| created_of(e, &quoting))
        .expect("the quoting message's event");
    assert_eq!(e["payload"]["reply_to"], gone, "{e}");
    assert_eq!(e["payload"]["message"], "quoting bob", "{e}");
}

/// A tiny HTTP server on 127.0.0.1 that answers every request 200 and
/// keeps each request body; its URL and the bodies.
fn webhook_receiver() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let bodies: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    let kept = bodies.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut buf: Vec<u8> = Vec::new();
            let mut chunk = [0u8; 8192];
            let body = loop {
                let Ok(n) = stream.read(&mut chunk) else {
                    break None;
                };
                if n == 0 {
                    break None;
                }
                buf.extend_from_slice(&chunk[..n]);
                let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                    continue;
                };
                let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if buf.len() >= end + 4 + length {
                    break Some(
                        String::from_utf8_lossy(&buf[end + 4..end + 4 + length]).into_owned(),
                    );
                }
            };
            if let Some(body) = body {
                if let Ok(mut all) = kept.lock() {
                    all.push(body);
                }
            }
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    (format!("http://127.0.0.1:{port}/hook"), bodies)
}

/// Waits (at most 15 s) until the receiver holds an event that `found`
/// picks; returns it.
async fn delivered(bodies: &Arc<Mutex<Vec<String>>>, found: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let all: Vec<String> = bodies.lock().expect("bodies").clone();
        for body in &all {
            if let Ok(v) = serde_json::from_str::<Value>(body) {
                if found(&v) {
                    return v;
                }
            }
        }
        assert!(
            Instant::now() < deadline,
            "no such webhook delivery: {all:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn webhooks_carry_the_new_fields(backend: Backend) {
    // The receiver is on this machine: allowed as
    // `CONFAB_WEBHOOK_ALLOW_PRIVATE=true` allows it.
    let app = TestApp::spawn_with_options(
        backend,
        ServerOptions {
            webhook_allow_private: true,
            rate_limits: RateLimits {
                anonymous: None,
                ..RateLimits::default()
            },
            ..ServerOptions::default()
        },
    )
    .await;
    let (url, bodies) = webhook_receiver();
    let key = app
        .service
        .create_server_key("depth")
        .await
        .expect("create key")
        .secret;
    let r = app
        .send(
            Method::POST,
            "/v1/admin/webhooks",
            Some(&key),
            Some((
                "application/json",
                json!({"url": url, "events": ["message.created", "message.updated"]})
                    .to_string()
                    .into_bytes(),
            )),
            &[],
        )
        .await;
    r.expect(201);

    let (alice, bob, carol, conv) = trio(&app).await;
    let quoted = send(&app, &alice, &conv, "quote this", &[]).await;
    let parent = id_of(&send(&app, &carol, &conv, "thread here", &[]).await);
    let reply = send(
        &app,
        &bob,
        &conv,
        "replying",
        &[
            ("reply_to_id", id_of(&quoted).as_str()),
            ("parent_id", parent.as_str()),
            ("mentions[]", carol.id.as_str()),
        ],
    )
    .await;
    let r = id_of(&reply);
    let plain = thread_reply(&app, &alice, &conv, &parent, "plain reply").await;

    let e = delivered(&bodies, |v| created_of(v, &r)).await;
    let payload = &e["payload"];
    assert_eq!(payload["reply_to"], quote_of(&quoted, "quote this"), "{e}");
    assert_eq!(payload["parent_id"], parent.as_str(), "{e}");
    assert_eq!(payload["mentions"], json!([carol.id]), "{e}");
    assert_eq!(payload["reply_count"], 0, "{e}");
    assert!(payload["last_reply_at"].is_null(), "{e}");
    assert!(payload["edited_at"].is_null(), "{e}");
    let e = delivered(&bodies, |v| created_of(v, &id_of(&plain))).await;
    assert!(e["payload"]["reply_to"].is_null(), "{e}");
    assert_eq!(e["payload"]["mentions"], json!([]), "{e}");
    assert_eq!(e["payload"]["parent_id"], parent.as_str(), "{e}");

    // An edit: message.updated with edited_at.
    let edited = app
        .put(
            &bob,
            &format!("/v1/messages/{r}"),
            &[("message", "replying, edited")],
        )
        .await;
    let edited_at = edited.expect(200)["edited_at"].clone();
    assert!(edited_at.is_i64(), "{}", edited.raw);
    let e = delivered(&bodies, |v| {
        v["type"] == "message.updated"
            && v["payload"]["id"] == r.as_str()
            && v["payload"]["message"] == "replying, edited"
    })
    .await;
    assert_eq!(e["payload"]["edited_at"], edited_at, "{e}");
    assert_eq!(e["payload"]["parent_id"], parent.as_str(), "{e}");
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    a_reply_s_events_carry_its_quote_thread_and_mentions,
    deleting_the_quoted_message_scrubs_it_from_the_reply_s_events,
    erasing_the_sender_takes_back_their_quotes_threads_and_mentions,
);

mod hooks {
    confab_tests::on_both_stores!(
        crate::support::on_backend;
        webhooks_carry_the_new_fields,
    );
    use super::webhooks_carry_the_new_fields;
}
