//! Deleted means gone, for an attachment: once deleted, no earlier event
//! carries its name or link, neither its own nor those of the message it
//! was attached to (its `message.created` and every `message.updated`),
//! where it becomes `{"id", "deleted": true}`; the message's other
//! attachments stay as they were. Nothing of its name is left in the
//! database.

use confab_tests::http::TestApp;
use reqwest::Method;
use serde_json::{json, Value};

use super::{created, events_until, say};
use crate::support::{id_of, pair};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0";

async fn a_deleted_attachment_leaves_its_messages_earlier_events(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let upload = id_of(
        app.upload(&alice, "secret-merger-plan.png", PNG)
            .await
            .expect(201),
    );
    let body = json!({
        "conversation_id": conv,
        "message": "two files",
        "attachments": [
            {"id": upload},
            {"file_url": "https://files.example/keep.png", "filename": "keep.png"},
        ],
    });
    let sent = app
        .json(Method::POST, &alice, "/v1/messages", &body)
        .await
        .expect(201)
        .clone();
    let m = id_of(&sent);
    // A message.updated of it (an edit), and the read mark bob's open makes.
    app.put(
        &alice,
        &format!("/v1/messages/{m}"),
        &[("message", "two files!")],
    )
    .await
    .expect(200);
    app.get(&bob, &format!("/v1/conversations/{conv}"))
        .await
        .expect(200);
    let marker = say(&app, &alice, &conv, "before").await;
    let before = events_until(&app, &bob, None, created(&marker)).await;
    let raw = serde_json::to_string(&before).expect("json");
    assert!(raw.contains("secret-merger-plan"), "it was there: {raw}");

    app.delete(&alice, &format!("/v1/attachments/{upload}"))
        .await
        .expect(204);

    let marker = say(&app, &alice, &conv, "after").await;
    for who in [&alice, &bob] {
        let events = events_until(&app, who, None, created(&marker)).await;
        let raw = serde_json::to_string(&events).expect("json");
        assert!(
            !raw.contains("secret-merger-plan") && !raw.contains(&format!("{upload}/content")),
            "{} still reads its name or link: {raw}",
            who.username
        );
        let of_message: Vec<&Value> = events
            .iter()
            .filter(|e| {
                (e["type"] == "message.created" || e["type"] == "message.updated")
                    && e["payload"]["id"] == m.as_str()
            })
            .collect();
        assert!(of_message.len() >= 2, "{events:?}");
        for e in of_message {
            assert_eq!(
                e["payload"]["attachments"][0],
                json!({"id": upload, "deleted": true}),
                "{e}"
            );
            assert_eq!(
                e["payload"]["attachments"][1]["filename"], "keep.png",
                "{e}"
            );
            assert_eq!(e["payload"]["conversation_id"], conv.as_str(), "{e}");
        }
    }
    let left = confab_tests::db::mentions(app.database_url(), app.backend, &["secret-merger-plan"]);
    assert!(left.is_empty(), "its name is still stored: {left:?}");
    // The message itself reads without it.
    let now = app.get(&bob, &format!("/v1/messages/{m}")).await;
    let attachments = now.expect(200)["attachments"]
        .as_array()
        .expect("list")
        .clone();
    assert_eq!(attachments.len(), 1, "{attachments:?}");
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    a_deleted_attachment_leaves_its_messages_earlier_events,
);
