//! Edits: `edited_at` moves with the text only (reactions and attachments
//! move `updated_at`), `GET /v1/messages/:id/edits` lists the earlier
//! texts newest first to every member and pages them, an edit to the same
//! text adds nothing, and deleting the message deletes its history (from
//! the catch-up too).

use std::time::Duration;

use confab_tests::http::{TestApp, User};
use serde_json::Value;

use super::{caught_up, message, send, trio};
use crate::support::{
    assert_id, assert_recent, conversation_created, id_of, keys, page, UNKNOWN_ID,
};

/// The edits of message `m` as `user` lists them (one page of 100).
async fn edits(app: &TestApp, user: &User, m: &str) -> Vec<Value> {
    let r = app
        .get(user, &format!("/v1/messages/{m}/edits?limit=100"))
        .await;
    let body = r.expect(200);
    assert_eq!(body["has_more"], false, "{}", r.raw);
    body["data"].as_array().expect("data").clone()
}

/// The texts of `edits`, in order.
fn texts(edits: &[Value]) -> Vec<&str> {
    edits
        .iter()
        .map(|e| e["message"].as_str().expect("message"))
        .collect()
}

/// `by` changes the text of `m` to `text`, which must succeed: the message.
async fn edit(app: &TestApp, by: &User, m: &str, text: &str) -> Value {
    let r = app
        .put(by, &format!("/v1/messages/{m}"), &[("message", text)])
        .await;
    r.expect(200).clone()
}

async fn an_edit_sets_edited_at_and_keeps_the_earlier_text(app: TestApp) {
    let (alice, bob, carol, conv) = trio(&app).await;
    let dave = app.user("dave").await;
    let sent = send(&app, &alice, &conv, "first words", &[]).await;
    let m = id_of(&sent);
    let path = format!("/v1/messages/{m}");
    assert!(sent["edited_at"].is_null());
    assert!(edits(&app, &alice, &m).await.is_empty());

    // A reaction and an attachment move updated_at, never edited_at.
    let r = app.put(&bob, &path, &[("reactions[like][]", "bob")]).await;
    let reacted = r.expect(200).clone();
    assert_recent(&reacted["updated_at"]);
    assert!(reacted["edited_at"].is_null(), "{reacted}");
    let r = app
        .put(
            &alice,
            &path,
            &[
                ("attachments[0][file_url]", "https://files.example/a.pdf"),
                ("attachments[0][filename]", "a.pdf"),
            ],
        )
        .await;
    let attached = r.expect(200).clone();
    assert!(attached["edited_at"].is_null(), "{attached}");
    assert!(edits(&app, &bob, &m).await.is_empty());

    // The text: edited_at, and the earlier text kept.
    let edited = edit(&app, &alice, &m, "second words").await;
    assert_eq!(edited["message"], "second words");
    let edited_at = assert_recent(&edited["edited_at"]);
    assert_recent(&edited["updated_at"]);
    let got = message(&app, &carol, &m).await;
    assert_eq!(got["edited_at"], edited_at);
    let history = edits(&app, &carol, &m).await;
    assert_eq!(texts(&history), ["first words"]);
    let e = &history[0];
    assert_eq!(keys(e), ["edited_at", "id", "message"], "{e}");
    assert_id(&e["id"]);
    assert_recent(&e["edited_at"]);
    // The list row shows it too.
    let rows = crate::support::conversation_messages(&app, &bob, &conv).await;
    assert_eq!(rows[0]["edited_at"], edited_at);

    // The same text again adds nothing and keeps edited_at.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let same = edit(&app, &alice, &m, "second words").await;
    assert_eq!(same["edited_at"], edited_at, "{same}");
    assert_eq!(edits(&app, &alice, &m).await, history);
    // A reaction later still leaves edited_at.
    let r = app
        .put(&carol, &path, &[("reactions[heart][]", "carol")])
        .await;
    assert_eq!(r.expect(200)["edited_at"], edited_at);

    // Another edit: newest first, to every member.
    let third = edit(&app, &alice, &m, "third words").await;
    let third_at = assert_recent(&third["edited_at"]);
    assert!(third_at > edited_at, "{edited_at} then {third_at}");
    for who in [&alice, &bob, &carol] {
        let history = edits(&app, who, &m).await;
        assert_eq!(texts(&history), ["second words", "first words"]);
        let at: Vec<i64> = history
            .iter()
            .map(|e| e["edited_at"].as_i64().expect("edited_at"))
            .collect();
        assert!(at[0] >= at[1], "newest first: {history:?}");
    }

    // Refused edits keep the text and add nothing.
    let r = app.put(&bob, &path, &[("message", "bob's words")]).await;
    r.expect(403);
    assert_eq!(r.body["code"], "forbidden", "{}", r.raw);
    app.put(&alice, &path, &[("message", "   ")])
        .await
        .expect_error(400, "parameter_invalid", Some("message"));
    assert_eq!(message(&app, &bob, &m).await["message"], "third words");
    assert_eq!(
        texts(&edits(&app, &bob, &m).await),
        ["second words", "first words"]
    );

    // Not a member, or no such message: 404.
    app.get(&dave, &format!("/v1/messages/{m}/edits"))
        .await
        .expect_error(404, "not_found", None);
    let r = app
        .get(&alice, &format!("/v1/messages/{UNKNOWN_ID}/edits"))
        .await;
    r.expect(404);
    assert_eq!(r.body["code"], "not_found");
}

async fn the_edit_history_is_paged(app: TestApp) {
    let (alice, bob, _carol, conv) = trio(&app).await;
    let m = id_of(&send(&app, &alice, &conv, "v0", &[]).await);
    let other = id_of(&send(&app, &alice, &conv, "w0", &[]).await);
    for i in 1..=5 {
        edit(&app, &alice, &m, &format!("v{i}")).await;
    }
    edit(&app, &alice, &other, "w1").await;
    let history = edits(&app, &bob, &m).await;
    assert_eq!(texts(&history), ["v4", "v3", "v2", "v1", "v0"]);
    let e: Vec<String> = history.iter().map(id_of).collect();
    let other_edit = id_of(&edits(&app, &bob, &other).await[0]);
    let list = |query: &str| format!("/v1/messages/{m}/edits?{query}");

    assert_eq!(
        page(&app, &bob, &list("limit=2")).await,
        (vec![e[0].clone(), e[1].clone()], true)
    );
    assert_eq!(
        page(
            &app,
            &bob,
            &list(&format!("limit=2&starting_after={}", e[1]))
        )
        .await,
        (vec![e[2].clone(), e[3].clone()], true)
    );
    assert_eq!(
        page(
            &app,
            &bob,
            &list(&format!("limit=2&starting_after={}", e[3]))
        )
        .await,
        (vec![e[4].clone()], false)
    );
    assert_eq!(
        page(
            &app,
            &bob,
            &list(&format!("limit=2&ending_before={}", e[4]))
        )
        .await,
        (vec![e[2].clone(), e[3].clone()], true)
    );
    assert_eq!(
        page(
            &app,
            &bob,
            &list(&format!("limit=2&ending_before={}", e[1]))
        )
        .await,
        (vec![e[0].clone()], false)
    );
    // The default page holds all five.
    assert_eq!(page(&app, &bob, &list("")).await.0, e);
    // Cursors not in this history, bad limits, both cursors: 400.
    for bad in [&other_edit, &m, &UNKNOWN_ID.to_owned()] {
        app.get(&bob, &list(&format!("starting_after={bad}")))
            .await
            .expect_error(400, "parameter_invalid", Some("starting_after"));
        app.get(&bob, &list(&format!("ending_before={bad}")))
            .await
            .expect_error(400, "parameter_invalid", Some("ending_before"));
    }
    for bad in ["0", "101", "x"] {
        app.get(&bob, &list(&format!("limit={bad}")))
            .await
            .expect_error(400, "parameter_invalid", Some("limit"));
    }
    let r = app
        .get(
            &bob,
            &list(&format!("starting_after={}&ending_before={}", e[0], e[2])),
        )
        .await;
    r.expect(400);
}

async fn deleting_a_message_deletes_its_history(app: TestApp) {
    let (alice, bob, _carol, conv) = trio(&app).await;
    let since = conversation_created(&app, &bob).await;
    let m = id_of(&send(&app, &alice, &conv, "draft plugh one", &[]).await);
    let kept = id_of(&send(&app, &alice, &conv, "kept text", &[]).await);
    edit(&app, &alice, &m, "draft plugh two").await;
    edit(&app, &alice, &m, "final plugh three").await;
    edit(&app, &alice, &kept, "kept text, edited").await;
    assert_eq!(edits(&app, &bob, &m).await.len(), 2);

    app.delete(&alice, &format!("/v1/messages/{m}"))
        .await
        .expect(204);
    for who in [&alice, &bob] {
        app.get(who, &format!("/v1/messages/{m}/edits"))
            .await
            .expect_error(404, "not_found", None);
    }
    // The other message's history stays.
    assert_eq!(texts(&edits(&app, &bob, &kept).await), ["kept text"]);
    // And no earlier text is left in the catch-up either.
    let (raw, events) = caught_up(&app, &bob.token, &since, |e| {
        e["type"] == "message.deleted" && e["payload"]["id"] == m.as_str()
    })
    .await;
    assert!(!raw.contains("plugh"), "{raw}");
    assert!(
        events.iter().any(|e| e["payload"]["id"] == kept.as_str()
            && e["payload"]["message"] == "kept text, edited"),
        "{raw}"
    );
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    an_edit_sets_edited_at_and_keeps_the_earlier_text,
    the_edit_history_is_paged,
    deleting_a_message_deletes_its_history,
);
