//! Blocks and removals stop every write that reaches the other side: an
//! attachment's new name (its `attachment.updated` carries the uploader's
//! text to the conversation), a direct conversation's pinned message, a
//! profile change. What stays one's own stays allowed.

use confab_tests::http::{TestApp, User};
use reqwest::Method;
use serde_json::{json, Value};

use super::{created, events_until, kinds, latest_event, say};
use crate::support::{group_conversation, id_of, new_group, pair};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0";

/// `who` uploads a file named `name` and sends it into `conv`: its id.
async fn send_file(app: &TestApp, who: &User, conv: &str, name: &str) -> String {
    let upload = id_of(app.upload(who, name, PNG).await.expect(201));
    let body =
        json!({"conversation_id": conv, "message": "a file", "attachments": [{"id": upload}]});
    app.json(Method::POST, who, "/v1/messages", &body)
        .await
        .expect(201);
    upload
}

async fn rename(app: &TestApp, who: &User, id: &str, name: &str) -> confab_tests::http::Resp {
    app.put(who, &format!("/v1/attachments/{id}"), &[("filename", name)])
        .await
}

async fn block(app: &TestApp, who: &User, whom: &User) {
    let r = app
        .post(who, &format!("/v1/contacts/{}/block", whom.id), &[])
        .await;
    assert!(matches!(r.status.as_u16(), 200 | 201), "{}", r.raw);
}

async fn renames_and_pins_do_not_reach_across_a_block(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let file = send_file(&app, &alice, &conv, "holiday.png").await;
    let bobs_file = send_file(&app, &bob, &conv, "beach.png").await;
    let m = say(&app, &alice, &conv, "pin me").await;
    let marker = say(&app, &bob, &conv, "ready").await;
    events_until(&app, &bob, None, created(&marker)).await;
    let from_bob = latest_event(&app, &bob).await;
    let path = format!("/v1/conversations/{conv}");

    // Bob blocks alice: neither writes to the other there, whichever side.
    block(&app, &bob, &alice).await;
    for (who, target, name) in [
        (&alice, &file, "you cannot block me"),
        (&bob, &bobs_file, "nor can I write to you"),
    ] {
        rename(&app, who, target, name)
            .await
            .expect_error(403, "contact_blocked", None);
        app.put(who, &path, &[("pinned_message_id", &m)])
            .await
            .expect_error(403, "contact_blocked", None);
    }
    // One's own state stays one's own: a mute is allowed, and tells the
    // other nothing.
    app.put(&alice, &path, &[("is_muted", "true")])
        .await
        .expect(200);
    // The file keeps its name.
    let r = app.get(&alice, &format!("/v1/attachments/{file}")).await;
    assert_eq!(r.expect(200)["filename"], "holiday.png");
    // Bob heard of none of it: his next event is his own mute.
    app.put(&bob, &path, &[("is_muted", "true")])
        .await
        .expect(200);
    let events = events_until(&app, &bob, from_bob.as_deref(), |e: &Value| {
        e["type"] == "conversation.updated"
    })
    .await;
    assert_eq!(kinds(&events), ["conversation.updated"], "{events:?}");
    assert_eq!(events[0]["payload"]["is_muted"], true);
    // A profile change of alice's no longer reaches bob, who blocked her.
    app.put(
        &alice,
        "/v1/contacts/me",
        &[("avatar_url", "https://example.com/hello-bob.png")],
    )
    .await
    .expect(200);
    app.put(&bob, &path, &[("is_muted", "false")])
        .await
        .expect(200);
    let events = events_until(&app, &bob, from_bob.as_deref(), |e: &Value| {
        e["type"] == "conversation.updated" && e["payload"]["is_muted"] == false
    })
    .await;
    assert!(
        !kinds(&events).contains(&"contact.updated"),
        "the blocker heard of the blocked's profile: {events:?}"
    );
}

async fn a_removed_member_renames_nothing_in_the_conversation_they_left(app: TestApp) {
    let carol = app.user("carol").await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let group = new_group(&app, &carol, "team", &[&alice, &bob]).await;
    let conv = group_conversation(&app, &carol, &group).await;
    let file = send_file(&app, &alice, &conv, "minutes.png").await;
    let marker = say(&app, &bob, &conv, "ready").await;
    events_until(&app, &bob, None, created(&marker)).await;
    let from_bob = latest_event(&app, &bob).await;
    app.put(
        &carol,
        &format!("/v1/groups/{group}"),
        &[("remove_contact_ids[]", &alice.id)],
    )
    .await
    .expect(200);

    // Her file is still hers to see, not hers to rename there.
    let r = app.get(&alice, &format!("/v1/attachments/{file}")).await;
    assert_eq!(r.expect(200)["filename"], "minutes.png");
    rename(&app, &alice, &file, "still here, listening")
        .await
        .expect_error(403, "forbidden", None);
    let marker = say(&app, &carol, &conv, "after").await;
    let events = events_until(&app, &bob, from_bob.as_deref(), created(&marker)).await;
    assert!(
        !kinds(&events).contains(&"attachment.updated"),
        "the conversation heard a removed member: {events:?}"
    );
    // An upload of hers not attached anywhere is renamed as before.
    let loose = id_of(app.upload(&alice, "draft.png", PNG).await.expect(201));
    let r = rename(&app, &alice, &loose, "final.png").await;
    assert_eq!(r.expect(200)["filename"], "final.png");
    // A member renames their file in the conversation as before.
    let bobs = send_file(&app, &bob, &conv, "b.png").await;
    let r = rename(&app, &bob, &bobs, "bob.png").await;
    assert_eq!(r.expect(200)["filename"], "bob.png");
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    renames_and_pins_do_not_reach_across_a_block,
    a_removed_member_renames_nothing_in_the_conversation_they_left,
);
