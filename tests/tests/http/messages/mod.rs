//! docs/api.md "Messages" (messages) with the list rules of section 4: send, get,
//! list and page, edit, react, attach, unreact, delete, and many clients
//! sending at once.

mod changes;
mod concurrency;
mod list;
mod send;

use confab_tests::http::{TestApp, User};
use serde_json::Value;

use crate::support::{self, group_conversation, id_of, new_group};

/// A group conversation of alice (owner), bob and carol.
async fn trio(app: &TestApp) -> (User, User, User, String) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let group_id = new_group(app, &alice, "Trio", &[&bob, &carol]).await;
    let conv = group_conversation(app, &alice, &group_id).await;
    (alice, bob, carol, conv)
}

/// One page of `GET /v1/messages` with the given query: (ids, has_more).
async fn page(app: &TestApp, user: &User, query: &str) -> (Vec<String>, bool) {
    support::page(app, user, &format!("/v1/messages?{query}")).await
}

fn message_path(m: &Value) -> String {
    format!("/v1/messages/{}", id_of(m))
}

/// `user` PUTs the reaction `pairs` to the message at `path`, which must
/// succeed; returns the message's reactions after it.
async fn react(app: &TestApp, user: &User, path: &str, pairs: &[(&str, &str)]) -> Value {
    let r = app.put(user, path, pairs).await;
    r.expect(200)["reactions"].clone()
}
