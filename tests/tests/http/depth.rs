//! Replies, threads, mentions and edits (docs/api.md "Reply, quote, start a thread") over real HTTP
//! on both stores: quotes that read as the quoted message does now and as
//! `{"id", "deleted": true}` once it is gone (`replies`), threads with their
//! counts, lists and cursors (`threads`), mentions and the per-member
//! `unread_mention_count` (`mentions`), edits with their history
//! (`edits`), the new fields in events, catch-ups and webhooks
//! (`events`), and typing news on the streams (`typing`). Every refusal is checked to have written nothing.

mod edits;
mod events;
mod mentions;
mod replies;
mod threads;
mod typing;

use std::time::{Duration, Instant};

use confab_tests::http::{Resp, TestApp, User};
use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{group_conversation, id_of, listed_conversation, new_group};

/// A group conversation of alice (owner), bob and carol.
async fn trio(app: &TestApp) -> (User, User, User, String) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let group = new_group(app, &alice, "Depth", &[&bob, &carol]).await;
    let conv = group_conversation(app, &alice, &group).await;
    (alice, bob, carol, conv)
}

/// `from` posts `text` into `conv` with the `extra` form pairs
/// (`reply_to_id`, `parent_id`, `mentions[]`...); the answer.
async fn try_send(
    app: &TestApp,
    from: &User,
    conv: &str,
    text: &str,
    extra: &[(&str, &str)],
) -> Resp {
    let mut pairs = vec![("conversation_id", conv), ("message", text)];
    pairs.extend_from_slice(extra);
    app.post(from, "/v1/messages", &pairs).await
}

/// [`try_send`], which must succeed: the message.
async fn send(app: &TestApp, from: &User, conv: &str, text: &str, extra: &[(&str, &str)]) -> Value {
    let r = try_send(app, from, conv, text, extra).await;
    r.expect(201).clone()
}

/// `from` sends `text` into `conv` as a reply in the thread of `parent`.
async fn thread_reply(app: &TestApp, from: &User, conv: &str, parent: &str, text: &str) -> Value {
    send(app, from, conv, text, &[("parent_id", parent)]).await
}

/// `from` sends `text` into `conv` mentioning `who` (form `mentions[]`).
async fn send_mentioning(
    app: &TestApp,
    from: &User,
    conv: &str,
    text: &str,
    who: &[&User],
) -> Value {
    let pairs: Vec<(&str, &str)> = who.iter().map(|u| ("mentions[]", u.id.as_str())).collect();
    send(app, from, conv, text, &pairs).await
}

/// A JSON `POST /v1/messages`; the answer.
async fn try_send_json(app: &TestApp, from: &User, body: &Value) -> Resp {
    app.json(Method::POST, from, "/v1/messages", body).await
}

/// `GET /v1/messages/:id` as `user`, which must succeed.
async fn message(app: &TestApp, user: &User, id: &str) -> Value {
    let r = app.get(user, &format!("/v1/messages/{id}")).await;
    r.expect(200).clone()
}

/// The messages of `conv` with thread replies (`include_replies=true`),
/// one page of 100, as `user` sees them.
async fn all_messages(app: &TestApp, user: &User, conv: &str) -> Vec<Value> {
    let r = app
        .get(
            user,
            &format!("/v1/messages?conversation_id={conv}&include_replies=true&limit=100"),
        )
        .await;
    r.expect(200)["data"].as_array().expect("data").clone()
}

/// `(unread_count, unread_mention_count)` of `conv` as `user` lists it
/// (listing does not open it).
async fn counts(app: &TestApp, user: &User, conv: &str) -> (i64, i64) {
    let c = listed_conversation(app, user, conv).await;
    let unread = c["unread_count"]
        .as_i64()
        .unwrap_or_else(|| panic!("unread_count is not an integer: {c}"));
    let mentions = c["unread_mention_count"]
        .as_i64()
        .unwrap_or_else(|| panic!("unread_mention_count is not an integer: {c}"));
    (unread, mentions)
}

/// Opens `conv` as `user` (`GET /v1/conversations/:id`); the conversation.
async fn open(app: &TestApp, user: &User, conv: &str) -> Value {
    let r = app.get(user, &format!("/v1/conversations/{conv}")).await;
    r.expect(200).clone()
}

/// A copy of `v` without the contacts' `last_active_at` (any request
/// moves it).
fn without_activity(v: &Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                if map.contains_key("username") {
                    map.remove("last_active_at");
                }
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v = v.clone();
    strip(&mut v);
    v
}

/// What a refused request must leave as it was: every message of `conv`
/// (thread replies included, with their counts, quotes and mentions) and
/// the conversation as each of `members` lists it (unread counts, last
/// activity).
async fn snapshot(app: &TestApp, conv: &str, members: &[&User]) -> Value {
    let messages = all_messages(app, members[0], conv).await;
    let mut seen = Vec::new();
    for m in members {
        seen.push(listed_conversation(app, m, conv).await);
    }
    without_activity(&json!({ "messages": messages, "conversations": seen }))
}

/// The field names of a message object this section adds, with their
/// values for a plain message (no quote, no thread, no mention, no edit).
fn assert_plain(m: &Value) {
    assert!(m["reply_to"].is_null(), "reply_to: {m}");
    assert!(m["parent_id"].is_null(), "parent_id: {m}");
    assert_eq!(m["reply_count"], 0, "reply_count: {m}");
    assert!(m["last_reply_at"].is_null(), "last_reply_at: {m}");
    assert_eq!(m["mentions"], json!([]), "mentions: {m}");
    assert!(m["edited_at"].is_null(), "edited_at: {m}");
    for key in [
        "reply_to",
        "parent_id",
        "reply_count",
        "last_reply_at",
        "mentions",
        "edited_at",
    ] {
        assert!(m.get(key).is_some(), "message lacks {key}: {m}");
    }
}

/// The quote a message shows of `quoted` (its id, sender and `text`).
fn quote_of(quoted: &Value, text: &str) -> Value {
    json!({
        "id": quoted["id"],
        "contact": {
            "id": quoted["contact"]["id"],
            "username": quoted["contact"]["username"],
        },
        "message": text,
    })
}

/// One page of `token`'s catch-up after event `after` (`GET
/// /v1/events?after=` with `Accept: application/json`): the raw bodies
/// and every event, paging until `has_more` is false.
async fn catch_up(app: &TestApp, token: &str, after: &str) -> (String, Vec<Value>) {
    let mut raw = String::new();
    let mut events: Vec<Value> = Vec::new();
    let mut cursor = after.to_owned();
    for _ in 0..100 {
        let r = app
            .send(
                Method::GET,
                &format!("/v1/events?after={cursor}&limit=100"),
                Some(token),
                None,
                &[("accept", "application/json")],
            )
            .await;
        let body = r.expect(200).clone();
        raw.push_str(&r.raw);
        let data = body["data"].as_array().expect("data").clone();
        events.extend(data);
        if body["has_more"] != true {
            return (raw, events);
        }
        cursor = id_of(events.last().expect("a full page"));
    }
    panic!("the catch-up does not end");
}

/// Waits (at most 10 s: PostgreSQL lists an event once no older
/// transaction still runs) until `token`'s catch-up after `after` holds an
/// event that `found` picks; returns that catch-up.
async fn caught_up(
    app: &TestApp,
    token: &str,
    after: &str,
    found: impl Fn(&Value) -> bool,
) -> (String, Vec<Value>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (raw, events) = catch_up(app, token, after).await;
        if events.iter().any(&found) {
            return (raw, events);
        }
        assert!(
            Instant::now() < deadline,
            "the event waited for never came: {raw}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Whether `e` is the `message.created` of message `id`.
fn created_of(e: &Value, id: &str) -> bool {
    e["type"] == "message.created" && e["payload"]["id"] == id
}
