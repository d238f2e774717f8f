//! Moderation (docs/api.md "Blocks and reports") over real HTTP on both stores:
//! group roles (`roles`), blocks (`blocks`), reports (`reports`) and phone
//! privacy, with a scenario whose every event is read for a phone number
//! or a refused text (`privacy`). Who may do what in one table, across
//! every operation, is the authorization matrix.

mod blocks;
mod privacy;
mod reports;
mod roles;

use std::time::{Duration, Instant};

use confab_tests::http::{Resp, TestApp, User};
use reqwest::Method;
use serde_json::Value;

/// A server key made the way `confab key create` makes one.
async fn server_key(app: &TestApp) -> String {
    app.service
        .create_server_key("moderation")
        .await
        .expect("create key")
        .secret
}

/// A request with a server key (`/v1/admin/*`, or as a contact with
/// `Confab-Contact` in `headers`), a JSON body if any.
async fn with_key(
    app: &TestApp,
    method: Method,
    path: &str,
    key: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> Resp {
    let body = body.map(|b| ("application/json", b.to_string().into_bytes()));
    app.send(method, path, Some(key), body, headers).await
}

/// A contact with this phone number and a token, as the operator's CLI
/// makes them (`TestApp::user` gives everyone `+15550100`).
async fn user_with_phone(app: &TestApp, username: &str, phone: &str) -> User {
    let contact = app
        .service
        .create_contact(username, phone, None)
        .await
        .expect("create contact");
    let token = app
        .service
        .issue_token(username, None)
        .await
        .expect("issue token");
    User {
        id: contact.id().to_string(),
        username: username.to_owned(),
        token,
    }
}

/// `by` blocks `whom`; the answer.
async fn block(app: &TestApp, by: &User, whom: &User) -> Resp {
    app.post(by, &format!("/v1/contacts/{}/block", whom.id), &[])
        .await
}

/// `by` unblocks `whom`; the answer.
async fn unblock(app: &TestApp, by: &User, whom: &User) -> Resp {
    app.delete(by, &format!("/v1/contacts/{}/block", whom.id))
        .await
}

/// `from` tries to send `text` into `conversation`; the answer.
async fn try_send(app: &TestApp, from: &User, conversation: &str, text: &str) -> Resp {
    app.post(
        from,
        "/v1/messages",
        &[("conversation_id", conversation), ("message", text)],
    )
    .await
}

/// The members of a group as `by` lists them: (contact id, role), oldest
/// member first.
async fn roles(app: &TestApp, by: &User, group: &str) -> Vec<(String, String)> {
    let r = app
        .get(by, &format!("/v1/groups/{group}/members?limit=100"))
        .await;
    r.expect(200)["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|m| {
            (
                m["contact"]["id"].as_str().expect("contact id").to_owned(),
                m["role"].as_str().expect("role").to_owned(),
            )
        })
        .collect()
}

/// The role of `who` in `group`, as `by` lists it.
async fn role_of(app: &TestApp, by: &User, group: &str, who: &User) -> String {
    roles(app, by, group)
        .await
        .into_iter()
        .find(|(id, _)| *id == who.id)
        .map(|(_, role)| role)
        .unwrap_or_else(|| panic!("{} is no member of {group}", who.username))
}

/// One page of `user`'s events as the JSON list (`GET /v1/events` with
/// `Accept: application/json`).
async fn events_page(app: &TestApp, user: &User, query: &str) -> Value {
    let r = app
        .send(
            Method::GET,
            &format!("/v1/events?{query}"),
            Some(&user.token),
            None,
            &[("accept", "application/json")],
        )
        .await;
    r.expect(200).clone()
}

/// Every event `user` can get, oldest first, paging `limit` at a time
/// with `after=`.
async fn all_events(app: &TestApp, user: &User, limit: usize) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut query = format!("limit={limit}");
    for _ in 0..1000 {
        let page = events_page(app, user, &query).await;
        let data = page["data"].as_array().expect("data").clone();
        assert!(data.len() <= limit, "{page}");
        out.extend(data);
        if page["has_more"] != true {
            return out;
        }
        let last = out.last().expect("a full page")["id"]
            .as_str()
            .expect("event id");
        query = format!("limit={limit}&after={last}");
    }
    panic!("paging {}'s events does not end", user.username);
}

/// Waits (up to 10 s: PostgreSQL lists an event once every older
/// transaction has ended) until `user`'s events hold one that `found`
/// picks; returns every event up to then.
async fn events_until(app: &TestApp, user: &User, found: impl Fn(&Value) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let events = all_events(app, user, 100).await;
        if events.iter().any(&found) {
            return events;
        }
        assert!(
            Instant::now() < deadline,
            "{} never got the event waited for: {events:#?}",
            user.username
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Sends a marker message from `from` into `conversation` and waits until
/// `to` lists its `message.created`: every change committed before it is
/// then listed too. Returns `to`'s events.
async fn after_marker(
    app: &TestApp,
    from: &User,
    to: &User,
    conversation: &str,
    marker: &str,
) -> Vec<Value> {
    let sent = app.send_message(from, conversation, marker).await;
    let id = sent["id"].as_str().expect("id").to_owned();
    events_until(app, to, |e| {
        e["type"] == "message.created" && e["payload"]["id"] == id.as_str()
    })
    .await
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
