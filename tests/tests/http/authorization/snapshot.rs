//! What a refused request must leave as it was, seen before and after it.

use confab_tests::http::{TestApp, User};
use reqwest::Method;
use serde_json::{json, Value};

use super::cast::{Cast, Fixture};
use crate::support::{check, ids_of, member_ids};

/// One view of the world, as one user (or the operator) gets it.
pub(super) struct View {
    label: String,
    status: u16,
    body: Value,
}

// Where the views the checks below read are in a snapshot.
const GROUP: usize = 0;
const MESSAGES: usize = 1;
const CREATOR_CONVERSATIONS: usize = 3;
const MEMBERS: usize = 7;
const BYSTANDER_BLOCKS: usize = 9;
const BLOCKER_BLOCKS: usize = 10;

/// What a refused request must leave as it was: the group as the owner
/// sees it (members' profiles included) and its members with their roles,
/// the group's conversations as each member sees them (their own state
/// too), the conversation's messages, the bystander's conversations,
/// groups and messages (where a new direct conversation, a group or a
/// message to them would show), everyone's blocks, the newest group and
/// conversation of those whose refusals are about making one, and the
/// reports as the operator sees them.
pub(super) async fn snapshot(app: &TestApp, cast: &Cast, fx: &Fixture) -> Vec<View> {
    let group_conversations = format!("/v1/conversations?limit=100&group_id={}", fx.group);
    let bea = &fx.bystander;
    let blocks = "/v1/contacts/blocked?limit=100";
    let mut views: Vec<(&User, String)> = vec![
        (&cast.owner, format!("/v1/groups/{}", fx.group)),
        (
            &cast.owner,
            format!("/v1/messages?limit=100&conversation_id={}", fx.conversation),
        ),
        (&cast.owner, group_conversations.clone()),
        (&cast.creator, group_conversations.clone()),
        (&cast.member, group_conversations),
        (bea, "/v1/conversations?limit=100".to_owned()),
        (bea, "/v1/groups?limit=100".to_owned()),
        (
            &cast.owner,
            format!("/v1/groups/{}/members?limit=100", fx.group),
        ),
        (bea, "/v1/messages?limit=100".to_owned()),
        (bea, blocks.to_owned()),
        (&cast.blocker, blocks.to_owned()),
    ];
    for user in [
        &cast.owner,
        &cast.creator,
        &cast.member,
        &cast.outsider,
        &cast.admin,
        &cast.blocked,
    ] {
        views.push((user, blocks.to_owned()));
    }
    // Newest first, so a group or conversation made by mistake shows.
    for user in [&cast.owner, &cast.creator, &cast.blocked, &cast.blocker] {
        views.push((user, "/v1/groups?limit=1".to_owned()));
        views.push((user, "/v1/conversations?limit=1".to_owned()));
    }
    let mut out = Vec::with_capacity(views.len() + 1);
    for (user, path) in views {
        let r = app.get(user, &path).await;
        let mut body = r.body;
        forget_activity(&mut body);
        out.push(View {
            label: format!("GET {path} as {}", user.username),
            status: r.status.as_u16(),
            body,
        });
    }
    // The matrix makes far fewer than 100 reports: all on one page.
    let path = "/v1/admin/reports?limit=100";
    let r = app
        .send(Method::GET, path, Some(&cast.key), None, &[])
        .await;
    out.push(View {
        label: format!("GET {path} with a server key"),
        status: r.status.as_u16(),
        body: r.body,
    });
    out
}

/// Drops `last_active_at` from the contact objects in `v`: any request a
/// contact makes may move it (docs/api.md "Authentication and tokens"), refused ones too.
pub(super) fn forget_activity(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if map.contains_key("username") {
                map.remove("last_active_at");
            }
            map.values_mut().for_each(forget_activity);
        }
        Value::Array(items) => items.iter_mut().for_each(forget_activity),
        _ => {}
    }
}

/// The ids in a list envelope (an item's `id`, or its contact's for the
/// lists of members and blocks), or none when it is not one (no panic:
/// the matrix reports every wrong cell).
pub(super) fn listed_ids(body: &Value) -> Vec<String> {
    body["data"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| {
                    i["id"]
                        .as_str()
                        .or_else(|| i["contact"]["id"].as_str())
                        .map(str::to_owned)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The role of each member in a members list, by contact id.
pub(super) fn roles(body: &Value) -> Vec<(String, String)> {
    let mut roles: Vec<(String, String)> = body["data"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|m| {
                    (
                        m["contact"]["id"].as_str().unwrap_or("?").to_owned(),
                        m["role"].as_str().unwrap_or("?").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    roles.sort();
    roles
}

/// The roles the fixture gives: the owner, the admin, plain members.
pub(super) fn fixture_roles(cast: &Cast, fx: &Fixture) -> Vec<(String, String)> {
    let mut want: Vec<(String, String)> = fx
        .members(cast)
        .iter()
        .map(|u| {
            let role = if u.id == cast.owner.id {
                "owner"
            } else if u.id == cast.admin.id {
                "admin"
            } else {
                "member"
            };
            (u.id.clone(), role.to_owned())
        })
        .collect();
    want.sort();
    want
}

/// After a refused request: every view is as before, and the fixture is
/// still what `fixture` made. Returns the views when all is so.
pub(super) async fn check_untouched(
    app: &TestApp,
    cast: &Cast,
    fx: &Fixture,
    before: &[View],
    ctx: &str,
    failures: &mut Vec<String>,
) -> Option<Vec<View>> {
    let known = failures.len();
    let after = snapshot(app, cast, fx).await;
    for (b, a) in before.iter().zip(&after) {
        check!(
            failures,
            (b.status, &b.body) == (a.status, &a.body),
            "{ctx}: refused, yet {} changed:\n  before {} {}\n  after  {} {}",
            a.label,
            b.status,
            b.body,
            a.status,
            a.body
        );
    }
    // Every view is one the fixture lets its viewer see (a wrong path
    // would compare two equal errors).
    for a in &after {
        check!(
            failures,
            a.status == 200,
            "{ctx}: {} answers {}: {}",
            a.label,
            a.status,
            a.body
        );
    }
    let group = &after[GROUP].body;
    let all = ids_of(&fx.members(cast));
    check!(
        failures,
        after[GROUP].status == 200
            && group["name"] == "Team"
            && group["contacts"].is_array()
            && member_ids(group) == all,
        "{ctx}: refused, yet the group changed: {group}"
    );
    let members = &after[MEMBERS].body;
    check!(
        failures,
        after[MEMBERS].status == 200 && roles(members) == fixture_roles(cast, fx),
        "{ctx}: refused, yet the roles changed: {members}"
    );
    let messages = &after[MESSAGES].body;
    let m = &messages["data"][0];
    check!(
        failures,
        after[MESSAGES].status == 200
            && listed_ids(messages) == vec![fx.message.clone()]
            && m["message"] == "hello"
            && m["reactions"] == json!([{"like": ["cora"]}])
            && m["attachments"] == json!([])
            && m["updated_at"] == fx.message_updated_at,
        "{ctx}: refused, yet the messages changed: {messages}"
    );
    let conversations = &after[CREATOR_CONVERSATIONS].body;
    let c = &conversations["data"][0];
    check!(
        failures,
        listed_ids(conversations) == vec![fx.conversation.clone()]
            && c["is_muted"] == false
            && c["pinned_message_id"].is_null(),
        "{ctx}: refused, yet the conversation changed: {conversations}"
    );
    let theirs = &after[BYSTANDER_BLOCKS].body;
    check!(
        failures,
        listed_ids(theirs) == vec![cast.blocked.id.clone()],
        "{ctx}: refused, yet the bystander's blocks changed: {theirs}"
    );
    let blockers = &after[BLOCKER_BLOCKS].body;
    check!(
        failures,
        listed_ids(blockers).first() == Some(&fx.bystander.id),
        "{ctx}: refused, yet the blocker's block changed: {blockers}"
    );
    (failures.len() == known).then_some(after)
}
