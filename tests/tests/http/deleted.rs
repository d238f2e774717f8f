//! Deleted means gone (docs/api.md "Deleted means gone"), over HTTP on both stores: after
//! `DELETE /v1/messages/:id` or `DELETE /v1/conversations/:id`, the
//! catch-up list (`GET /v1/events?after=` with `Accept: application/json`)
//! shows the earlier events of what was deleted as `{"id", "deleted":
//! true}` payloads, to every member and to a token issued afterwards, and
//! nowhere in its body is there a trace of the text, reactions or files.

use std::time::{Duration, Instant};

use confab_tests::http::TestApp;
use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{conversation_created, id_of, pair};

/// `user`'s catch-up list after event `after`: the raw body and its events.
async fn catch_up(app: &TestApp, token: &str, after: &str) -> (String, Vec<Value>) {
    let r = app
        .send(
            Method::GET,
            &format!("/v1/events?after={after}&limit=100"),
            Some(token),
            None,
            &[("accept", "application/json")],
        )
        .await;
    let body = r.expect(200).clone();
    assert_eq!(body["has_more"], false, "one page: {}", r.raw);
    let data = body["data"].as_array().expect("data").clone();
    (r.raw, data)
}

/// Waits (at most 10 s) until `token`'s catch-up after `after` holds an
/// event of `kind` (PostgreSQL makes an event readable once no older
/// transaction still runs); returns that catch-up.
async fn caught_up(app: &TestApp, token: &str, after: &str, kind: &str) -> (String, Vec<Value>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (raw, data) = catch_up(app, token, after).await;
        if data.iter().any(|e| e["type"] == kind) {
            return (raw, data);
        }
        assert!(Instant::now() < deadline, "no {kind} event: {raw}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Asserts that `raw` holds none of `secrets`.
#[track_caller]
fn assert_no_trace(raw: &str, secrets: &[&str]) {
    for s in secrets {
        assert!(!raw.contains(s), "{s:?} is still in the catch-up: {raw}");
    }
}

async fn a_deleted_message_leaves_the_catch_up(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let since = conversation_created(&app, &bob).await;

    // Sent with a file, reacted to, read, and one message that stays.
    let r = app
        .post(
            &alice,
            "/v1/messages",
            &[
                ("conversation_id", conv.as_str()),
                ("message", "meet at the old mill xyzzy"),
                (
                    "attachments[0][file_url]",
                    "https://files.example/plan-xyzzy.pdf",
                ),
                ("attachments[0][filename]", "plan-xyzzy.pdf"),
            ],
        )
        .await;
    let m = id_of(r.expect(201));
    let kept = id_of(&app.send_message(&bob, &conv, "this one stays").await);
    app.put(
        &bob,
        &format!("/v1/messages/{m}"),
        &[("reactions[xyzzyreaction][]", "bob")],
    )
    .await
    .expect(200);
    app.get(&bob, &format!("/v1/conversations/{conv}"))
        .await
        .expect(200);
    let (raw, _) = caught_up(&app, &bob.token, &since, "conversation.updated").await;
    assert!(raw.contains("xyzzy"), "the text was there: {raw}");

    app.delete(&alice, &format!("/v1/messages/{m}"))
        .await
        .expect(204);

    let later = app
        .service
        .issue_token("bob", None)
        .await
        .expect("a new token");
    for token in [&alice.token, &bob.token, &later] {
        let (raw, data) = caught_up(&app, token, &since, "message.deleted").await;
        assert_no_trace(&raw, &["xyzzy", "old mill", "files.example"]);
        let of_m: Vec<&Value> = data
            .iter()
            .filter(|e| e["payload"]["id"] == m.as_str())
            .collect();
        // message.created, the reaction's and the read mark's
        // message.updated, and the deletion.
        assert_eq!(of_m.len(), 4, "{raw}");
        for e in of_m {
            let want = if e["type"] == "message.deleted" {
                json!({ "id": m })
            } else {
                json!({ "id": m, "deleted": true })
            };
            assert_eq!(e["payload"], want, "{e}");
        }
        assert!(
            data.iter().any(|e| e["type"] == "message.created"
                && e["payload"]["id"] == kept.as_str()
                && e["payload"]["message"] == "this one stays"),
            "the other message is whole: {raw}"
        );
    }
}

async fn a_deleted_conversation_leaves_the_catch_up(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let since = conversation_created(&app, &alice).await;
    let m = id_of(
        &app.send_message(&alice, &conv, "the vault code is plugh")
            .await,
    );
    app.put(
        &alice,
        &format!("/v1/conversations/{conv}"),
        &[("pinned_message_id", m.as_str())],
    )
    .await
    .expect(200);
    app.put(
        &bob,
        &format!("/v1/conversations/{conv}"),
        &[("is_muted", "true")],
    )
    .await
    .expect(200);
    let (raw, _) = caught_up(&app, &bob.token, &since, "conversation.updated").await;
    assert!(raw.contains("plugh"), "the text was there: {raw}");

    app.delete(&bob, &format!("/v1/conversations/{conv}"))
        .await
        .expect(204);

    for token in [&alice.token, &bob.token] {
        let (raw, data) = caught_up(&app, token, &since, "conversation.deleted").await;
        assert_no_trace(&raw, &["plugh", "is_muted", "pinned_message_id"]);
        assert!(!data.is_empty());
        for e in &data {
            let want = match e["type"].as_str() {
                Some("conversation.deleted") => json!({ "id": conv }),
                Some("message.created") => json!({ "id": m, "deleted": true }),
                Some("conversation.updated") => json!({ "id": conv, "deleted": true }),
                _ => panic!("unexpected event {e}"),
            };
            assert_eq!(e["payload"], want, "{e}");
        }
    }
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    a_deleted_message_leaves_the_catch_up,
    a_deleted_conversation_leaves_the_catch_up,
);
