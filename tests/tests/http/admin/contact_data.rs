//! A contact's data through the server API: the export of everything
//! stored about them (`GET /v1/admin/contacts/:id/export`) and its erasure
//! (`DELETE /v1/admin/contacts/:id`).

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use confab_tests::http::{TestApp, User};

use super::{admin, call, mint, server_key};
use crate::events::Sse;
use crate::support::UNKNOWN_ID;

/// The export: every kind of thing stored about the contact, one JSON
/// object a line, no secret of any kind, ended by `end`.
async fn export_is_ndjson_of_everything_about_the_contact(app: TestApp) {
    let key = server_key(&app).await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let minted = mint(&app, &key, &alice.id, json!({"expires_in": 600})).await;
    let minted = minted.expect(201)["token"]
        .as_str()
        .expect("token")
        .to_owned();
    let direct = app.direct(&alice, &bob).await;
    let mut sent = Vec::new();
    // Sent by the key for her: more than a contact's burst allows.
    let as_alice = [("confab-contact", alice.id.as_str())];
    for i in 0..250 {
        let r = call(
            &app,
            Method::POST,
            "/v1/messages",
            &key,
            Some(json!({"conversation_id": direct, "message": format!("note {i}")})),
            &as_alice,
        )
        .await;
        sent.push(r.expect(201)["id"].clone());
    }
    let bobs = app.send_message(&bob, &direct, "from bob").await;
    app.json(
        Method::PUT,
        &alice,
        &format!("/v1/messages/{}", bobs["id"].as_str().expect("id")),
        &json!({"reactions": {"like": ["alice"]}}),
    )
    .await
    .expect(200);
    app.json(
        Method::POST,
        &alice,
        "/v1/groups",
        &json!({"name": "book club", "contact_ids": [bob.id]}),
    )
    .await
    .expect(201);
    // Her block and her report (docs/api.md "Blocks and reports"): stored about her.
    let carol = app.user("carol").await;
    app.post(&alice, &format!("/v1/contacts/{}/block", carol.id), &[])
        .await
        .expect(201);
    let report = app
        .post(
            &alice,
            "/v1/reports",
            &[("contact_id", carol.id.as_str()), ("reason", "spam")],
        )
        .await;
    let report_id = report.expect(201)["id"].clone();
    // Carol's report of alice is carol's, not alice's.
    app.post(
        &carol,
        "/v1/reports",
        &[("contact_id", alice.id.as_str()), ("reason", "other")],
    )
    .await
    .expect(201);
    let path = format!("/v1/admin/contacts/{}/export", alice.id);
    let r = admin(&app, Method::GET, &path, &key, None).await;
    r.expect(200);
    assert!(
        r.header("content-type")
            .is_some_and(|t| t.starts_with("application/x-ndjson")),
        "{:?}",
        r.headers
    );
    let lines: Vec<Value> = r
        .raw
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let kinds: Vec<&str> = lines
        .iter()
        .map(|l| l["kind"].as_str().expect("kind"))
        .collect();
    let count = |k: &str| kinds.iter().filter(|x| **x == k).count();
    assert_eq!(kinds[0], "contact");
    assert_eq!(lines[0]["id"], alice.id.as_str());
    assert_eq!(lines[0]["phone_number"], "+15550100");
    assert_eq!(kinds.last(), Some(&"end"));
    assert_eq!(count("token"), 2, "the CLI's and the minted one");
    assert_eq!(count("conversation"), 1);
    assert_eq!(count("group"), 1);
    assert_eq!(count("message"), 250, "hers only, every page of them");
    assert_eq!(count("reaction"), 1);
    assert_eq!(count("block"), 1);
    assert_eq!(count("report"), 1);
    let block = lines.iter().find(|l| l["kind"] == "block").expect("block");
    assert_eq!(block["contact"]["id"], carol.id.as_str());
    // Others' numbers stay private in her export.
    assert!(block["contact"]["phone_number"].is_null(), "{block}");
    let filed = lines
        .iter()
        .find(|l| l["kind"] == "report")
        .expect("report");
    assert_eq!(filed["id"], report_id);
    assert_eq!(filed["reason"], "spam");
    let messages: Vec<&Value> = lines
        .iter()
        .filter(|l| l["kind"] == "message")
        .map(|l| &l["id"])
        .collect();
    assert_eq!(messages, sent.iter().collect::<Vec<_>>(), "oldest first");
    let reaction = lines
        .iter()
        .find(|l| l["kind"] == "reaction")
        .expect("reaction");
    assert_eq!(reaction["message_id"], bobs["id"]);
    assert_eq!(reaction["name"], "like");
    let conversation = lines
        .iter()
        .find(|l| l["kind"] == "conversation")
        .expect("conversation");
    assert_eq!(conversation["id"], direct.as_str());
    assert!(
        conversation.get("unread_count").is_some(),
        "her own state: {conversation}"
    );
    // No secret: neither token nor the key.
    for secret in [&alice.token[4..], &minted[4..], &key[7..]] {
        assert!(!r.raw.contains(secret), "a secret is in the export");
    }
    // Not for a contact token; nothing for an unknown contact.
    app.get(&alice, &path)
        .await
        .expect_error(403, "forbidden", None);
    admin(
        &app,
        Method::GET,
        &format!("/v1/admin/contacts/{UNKNOWN_ID}/export"),
        &key,
        None,
    )
    .await
    .expect_error(404, "not_found", None);
}

/// `user`'s unread count of `conversation` as their list shows it (opening
/// the conversation would mark it read).
async fn unread_in_list(app: &TestApp, user: &User, conversation: &str) -> Value {
    let listed = app.get(user, "/v1/conversations").await;
    listed.expect(200)["data"]
        .as_array()
        .expect("data")
        .iter()
        .find(|c| c["id"] == conversation)
        .unwrap_or_else(|| panic!("{} does not list {conversation}", user.username))["unread_count"]
        .clone()
}

/// Erase: one request, and nothing of the contact remains in any table but
/// what others wrote; others hear what went, groups keep going without it.
async fn erase_leaves_nothing_of_the_contact(app: TestApp) {
    let key = server_key(&app).await;
    // Alice, with values found nowhere else.
    let created = admin(
        &app,
        Method::POST,
        "/v1/admin/contacts",
        &key,
        Some(
            json!({"username": "zedalice", "phone_number": "+15559876543",
                    "avatar_url": "https://example.com/zedalice.png"}),
        ),
    )
    .await;
    let alice_id = created.expect(201)["id"].as_str().expect("id").to_owned();
    let minted = mint(&app, &key, &alice_id, json!({})).await;
    let alice = User {
        id: alice_id.clone(),
        username: "zedalice".into(),
        token: minted.expect(201)["token"]
            .as_str()
            .expect("token")
            .to_owned(),
    };
    // An event ticket (it names her token and her).
    app.send(
        Method::POST,
        "/v1/events/tickets",
        Some(&alice.token),
        None,
        &[],
    )
    .await
    .expect(201);
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    // A direct conversation, both writing; a reaction each way.
    let direct = app.direct(&alice, &bob).await;
    let hers = app
        .send_message(&alice, &direct, "secret-direct-text")
        .await;
    app.send_message(&bob, &direct, "bob-direct-text").await;
    app.json(
        Method::PUT,
        &bob,
        &format!("/v1/messages/{}", hers["id"].as_str().expect("id")),
        &json!({"reactions": {"like": ["bob"]}}),
    )
    .await;
    // Her group (she owns it), with bob and carol; carol muted it.
    let mine = app
        .json(
            Method::POST,
            &alice,
            "/v1/groups",
            &json!({"name": "hers", "contact_ids": [bob.id, carol.id]}),
        )
        .await;
    let mine = mine.expect(201)["id"].as_str().expect("id").to_owned();
    let talk = app
        .json(
            Method::POST,
            &alice,
            "/v1/conversations",
            &json!({"group_id": mine}),
        )
        .await;
    let talk = talk.expect(201)["id"].as_str().expect("id").to_owned();
    // Sent with an Idempotency-Key: the stored answer shows her.
    app.send(
        Method::POST,
        "/v1/messages",
        Some(&alice.token),
        Some((
            "application/json",
            json!({"conversation_id": talk, "message": "secret-group-text-1"})
                .to_string()
                .into_bytes(),
        )),
        &[("idempotency-key", "k-1")],
    )
    .await
    .expect(201);
    app.send_message(&alice, &talk, "secret-group-text-2").await;
    let bobs = app.send_message(&bob, &talk, "bob-group-text").await;
    let bobs_id = bobs["id"].as_str().expect("id").to_owned();
    app.json(
        Method::PUT,
        &alice,
        &format!("/v1/messages/{bobs_id}"),
        &json!({"reactions": {"heart": ["zedalice"]}}),
    )
    .await
    .expect(200);
    // Bob's group, she is a member; a group of hers alone.
    let theirs = app
        .json(
            Method::POST,
            &bob,
            "/v1/groups",
            &json!({"name": "bobs", "contact_ids": [alice.id]}),
        )
        .await;
    let theirs = theirs.expect(201)["id"].as_str().expect("id").to_owned();
    let alone = app
        .json(Method::POST, &alice, "/v1/groups", &json!({"name": "solo"}))
        .await;
    let alone = alone.expect(201)["id"].as_str().expect("id").to_owned();
    assert_eq!(unread_in_list(&app, &carol, &talk).await, 3);
    let mut bob_stream = Sse::open(&app.base_url, &bob.token, "/v1/events", &[]).await;
    let mut her_stream = Sse::open(&app.base_url, &alice.token, "/v1/events", &[]).await;

    let path = format!("/v1/admin/contacts/{alice_id}");
    let erased_at = Instant::now();
    admin(&app, Method::DELETE, &path, &key, None)
        .await
        .expect(204);

    // Her token is gone, her stream ends within 5 s.
    app.get(&alice, "/v1/contacts/me")
        .await
        .expect_error(401, "unauthorized", None);
    while her_stream.frame(Duration::from_secs(6)).await.is_some() {}
    assert!(her_stream.ended && erased_at.elapsed() < Duration::from_secs(5));
    // Bob hears what went.
    for kind in [
        "conversation.deleted",
        "message.deleted",
        "message.deleted",
        "group.updated",
        "group.updated",
    ] {
        bob_stream
            .event_of(kind, Duration::from_secs(5))
            .await
            .unwrap_or_else(|| panic!("bob did not hear {kind}"));
    }
    // Gone from the API.
    admin(&app, Method::GET, &path, &key, None)
        .await
        .expect_error(404, "not_found", None);
    admin(&app, Method::DELETE, &path, &key, None)
        .await
        .expect_error(404, "not_found", None);
    app.get(&bob, &format!("/v1/conversations/{direct}"))
        .await
        .expect_error(404, "not_found", None);
    app.get(&bob, &format!("/v1/groups/{alone}"))
        .await
        .expect_error(404, "not_found", None);
    // Her group goes on: bob, its oldest member, owns it; her messages are
    // gone from it and from carol's unread count; bob's message keeps its
    // text, without her reaction.
    let group = app.get(&bob, &format!("/v1/groups/{mine}")).await;
    let group = group.expect(200).clone();
    assert_eq!(group["member_count"], 2, "{group}");
    app.json(
        Method::PUT,
        &bob,
        &format!("/v1/groups/{mine}"),
        &json!({"name": "ours"}),
    )
    .await
    .expect(200);
    let page = app
        .get(&carol, &format!("/v1/messages?conversation_id={talk}"))
        .await;
    let page = page.expect(200).clone();
    let texts: Vec<&str> = page["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|m| m["message"].as_str().expect("text"))
        .collect();
    assert_eq!(texts, ["bob-group-text"]);
    assert_eq!(page["data"][0]["reactions"], json!([]), "{page}");
    assert_eq!(unread_in_list(&app, &carol, &talk).await, 1);
    let bobs_group = app.get(&bob, &format!("/v1/groups/{theirs}")).await;
    assert_eq!(bobs_group.expect(200)["member_count"], 1);
    // Nothing in any table names her, shows her or holds what she wrote.
    let left = confab_tests::db::mentions(
        app.database_url(),
        app.backend,
        &[
            &alice_id,
            "zedalice",
            "+15559876543",
            "secret-direct-text",
            "secret-group-text",
        ],
    );
    assert!(left.is_empty(), "left behind: {left:#?}");
    // What bob and carol wrote stays.
    let kept = confab_tests::db::mentions(app.database_url(), app.backend, &["bob-group-text"]);
    assert!(kept.iter().any(|m| m.starts_with("messages.")), "{kept:?}");
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    erase_leaves_nothing_of_the_contact,
    export_is_ndjson_of_everything_about_the_contact,
);
