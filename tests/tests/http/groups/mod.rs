//! Groups and group conversations (docs/api.md "Objects", 6 and 7): the group
//! object, validation, paging, owner and member rights, live membership
//! and per-member conversation state. The authorization matrix of every
//! group and group-conversation operation is in `authorization`.

mod big;
mod conversations;
mod membership;
mod object;
mod rights;

use confab_tests::http::{TestApp, User};
use serde_json::Value;

use crate::support::data_ids;

// ---------------------------------------------------------------- helpers

/// `by` adds `who` to the group, which must succeed; returns the group.
async fn add_member(app: &TestApp, by: &User, group_id: &str, who: &User) -> Value {
    let path = format!("/v1/groups/{group_id}");
    let r = app.put(by, &path, &[("add_contact_ids[]", &who.id)]).await;
    r.expect(200).clone()
}

/// `by` removes `who` (themself, to leave) from the group, which must
/// succeed; returns the group.
async fn remove_member(app: &TestApp, by: &User, group_id: &str, who: &User) -> Value {
    let path = format!("/v1/groups/{group_id}");
    let r = app
        .put(by, &path, &[("remove_contact_ids[]", &who.id)])
        .await;
    r.expect(200).clone()
}

/// All of `user`'s conversations (one page of 100 is plenty here).
async fn conversation_ids(app: &TestApp, user: &User, query: &str) -> Vec<String> {
    let r = app
        .get(user, &format!("/v1/conversations?limit=100{query}"))
        .await;
    data_ids(r.expect(200))
}

/// All messages `user` can see (one page of 100).
async fn all_message_ids(app: &TestApp, user: &User) -> Vec<String> {
    let r = app.get(user, "/v1/messages?limit=100").await;
    data_ids(r.expect(200))
}

async fn group_ids(app: &TestApp, user: &User) -> Vec<String> {
    let r = app.get(user, "/v1/groups?limit=100").await;
    data_ids(r.expect(200))
}
