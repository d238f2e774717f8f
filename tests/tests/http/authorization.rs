//! The authorization matrix (API.md sections 6 and 7): every group and
//! group-conversation operation, tried by an outsider, a member, the owner
//! and the member who created the conversation, with the answer each must
//! get and, when allowed, its effect or, when refused, that nothing changed.

use confab_tests::http::{Resp, TestApp, User};
use serde_json::json;

use crate::support::{
    check, data_ids, group_conversation, id_of, ids_of, listed_conversation, member_ids, new_group,
};

#[derive(Clone, Copy, Debug)]
enum Role {
    Outsider,
    Member,
    Owner,
    /// A plain member who created the conversation and sent the message.
    Creator,
}

const ROLES: [Role; 4] = [Role::Outsider, Role::Member, Role::Owner, Role::Creator];

#[derive(Clone, Copy, Debug)]
enum Op {
    GetGroup,
    ListGroups,
    UpdateGroup,
    LeaveGroup,
    DeleteGroup,
    CreateConversation,
    ListGroupConversations,
    ListConversations,
    GetConversation,
    UpdateConversation,
    DeleteConversation,
    SendMessage,
    ListConversationMessages,
    ListAllMessages,
    GetMessage,
    EditMessage,
    React,
    Unreact,
    DeleteMessage,
}

#[derive(Clone, Copy, Debug)]
enum Want {
    /// This success status.
    Success(u16),
    /// 200, and the fixture's item is (or is not) in the list.
    Listed(bool),
    /// 404 `not_found` with this `param`.
    NotFound(Option<&'static str>),
    /// 403 `forbidden`.
    Forbidden,
    /// 400 `parameter_invalid` with this `param`.
    Invalid(&'static str),
}

/// A row of the matrix: `outsider` for the outsider, `member` alike for
/// the member, the owner and the creator.
const fn members(outsider: Want, member: Want) -> [Want; 4] {
    [outsider, member, member, member]
}

struct Cast {
    owner: User,
    member: User,
    creator: User,
    outsider: User,
}

impl Cast {
    fn get(&self, role: Role) -> &User {
        match role {
            Role::Outsider => &self.outsider,
            Role::Member => &self.member,
            Role::Owner => &self.owner,
            Role::Creator => &self.creator,
        }
    }
}

/// A fresh group (owner, member, creator), a conversation the creator made
/// in it, and a message the creator sent there.
struct Fixture {
    group: String,
    conversation: String,
    message: String,
}

async fn fixture(app: &TestApp, cast: &Cast) -> Fixture {
    let group = new_group(app, &cast.owner, "Team", &[&cast.member, &cast.creator]).await;
    let conversation = group_conversation(app, &cast.creator, &group).await;
    let message = id_of(
        &app.send_message(&cast.creator, &conversation, "hello")
            .await,
    );
    Fixture {
        group,
        conversation,
        message,
    }
}

async fn perform(app: &TestApp, fx: &Fixture, op: Op, user: &User) -> (Resp, Option<String>) {
    let group = format!("/v1/groups/{}", fx.group);
    let conv = format!("/v1/conversations/{}", fx.conversation);
    let msg = format!("/v1/messages/{}", fx.message);
    match op {
        Op::GetGroup => (app.get(user, &group).await, None),
        Op::ListGroups => (
            app.get(user, "/v1/groups?limit=100").await,
            Some(fx.group.clone()),
        ),
        Op::UpdateGroup => (app.put(user, &group, &[("name", "Renamed")]).await, None),
        Op::LeaveGroup => (
            app.put(user, &group, &[("remove_contact_ids[]", &user.id)])
                .await,
            None,
        ),
        Op::DeleteGroup => (app.delete(user, &group).await, None),
        Op::CreateConversation => (
            app.post(user, "/v1/conversations", &[("group_id", &fx.group)])
                .await,
            None,
        ),
        Op::ListGroupConversations => (
            app.get(
                user,
                &format!("/v1/conversations?limit=100&group_id={}", fx.group),
            )
            .await,
            Some(fx.conversation.clone()),
        ),
        Op::ListConversations => (
            app.get(user, "/v1/conversations?limit=100").await,
            Some(fx.conversation.clone()),
        ),
        Op::GetConversation => (app.get(user, &conv).await, None),
        Op::UpdateConversation => (app.put(user, &conv, &[("is_muted", "true")]).await, None),
        Op::DeleteConversation => (app.delete(user, &conv).await, None),
        Op::SendMessage => (
            app.post(
                user,
                "/v1/messages",
                &[("conversation_id", &fx.conversation), ("message", "me too")],
            )
            .await,
            None,
        ),
        Op::ListConversationMessages => (
            app.get(
                user,
                &format!("/v1/messages?limit=100&conversation_id={}", fx.conversation),
            )
            .await,
            Some(fx.message.clone()),
        ),
        Op::ListAllMessages => (
            app.get(user, "/v1/messages?limit=100").await,
            Some(fx.message.clone()),
        ),
        Op::GetMessage => (app.get(user, &msg).await, None),
        Op::EditMessage => (app.put(user, &msg, &[("message", "edited")]).await, None),
        Op::React => (
            app.put(user, &msg, &[("reactions[like][]", &user.username)])
                .await,
            None,
        ),
        Op::Unreact => (
            app.delete(user, &format!("{msg}/reactions/like")).await,
            None,
        ),
        Op::DeleteMessage => (app.delete(user, &msg).await, None),
    }
}

/// After a refused request: the group, the conversation and the message are
/// all exactly as the fixture made them.
async fn check_untouched(
    app: &TestApp,
    cast: &Cast,
    fx: &Fixture,
    ctx: &str,
    failures: &mut Vec<String>,
) {
    let r = app
        .get(&cast.owner, &format!("/v1/groups/{}", fx.group))
        .await;
    check!(
        failures,
        r.status.as_u16() == 200
            && r.body["name"] == "Team"
            && member_ids(&r.body) == ids_of(&[&cast.owner, &cast.member, &cast.creator]),
        "{ctx}: refused, yet the group changed: {}",
        r.raw
    );
    let r = app
        .get(
            &cast.owner,
            &format!("/v1/messages?conversation_id={}", fx.conversation),
        )
        .await;
    let m = &r.body["data"][0];
    check!(
        failures,
        r.status.as_u16() == 200
            && data_ids(&r.body) == vec![fx.message.clone()]
            && m["message"] == "hello"
            && m["reactions"] == json!([])
            && m["updated_at"].is_null(),
        "{ctx}: refused, yet the messages changed: {}",
        r.raw
    );
    let c = listed_conversation(app, &cast.creator, &fx.conversation).await;
    check!(failures, c["is_muted"] == false, "{ctx}: {c}");
}

async fn authorization_matrix(app: TestApp) {
    use Op::*;
    use Want::*;
    let cast = Cast {
        owner: app.user("olive").await,
        member: app.user("mike").await,
        creator: app.user("cora").await,
        outsider: app.user("otto").await,
    };
    const NF: Want = NotFound(None);
    const NF_GROUP: Want = NotFound(Some("group_id"));
    const NF_CONV: Want = NotFound(Some("conversation_id"));
    // Columns: outsider, member, owner, creator (a member who made the
    // conversation and sent the message); `members` where all three member
    // roles get the same answer.
    let table: [(Op, [Want; 4]); 19] = [
        (GetGroup, members(NF, Success(200))),
        (ListGroups, members(Listed(false), Listed(true))),
        (UpdateGroup, [NF, Forbidden, Success(200), Forbidden]),
        (
            LeaveGroup,
            [
                NF,
                Success(200),
                Invalid("remove_contact_ids"),
                Success(200),
            ],
        ),
        (DeleteGroup, [NF, Forbidden, Success(204), Forbidden]),
        (CreateConversation, members(NF_GROUP, Success(201))),
        (ListGroupConversations, members(NF_GROUP, Listed(true))),
        (ListConversations, members(Listed(false), Listed(true))),
        (GetConversation, members(NF, Success(200))),
        (UpdateConversation, members(NF, Success(200))),
        (
            DeleteConversation,
            [NF, Forbidden, Success(204), Success(204)],
        ),
        (SendMessage, members(NF_CONV, Success(201))),
        (ListConversationMessages, members(NF_CONV, Listed(true))),
        (ListAllMessages, members(Listed(false), Listed(true))),
        (GetMessage, members(NF, Success(200))),
        (EditMessage, [NF, Forbidden, Forbidden, Success(200)]),
        (React, members(NF, Success(200))),
        (Unreact, members(NF, Success(200))),
        (DeleteMessage, [NF, Forbidden, Forbidden, Success(204)]),
    ];
    let mut failures = Vec::new();
    for (op, wants) in table {
        for (role, want) in ROLES.into_iter().zip(wants) {
            let fx = fixture(&app, &cast).await;
            let user = cast.get(role);
            let (r, item) = perform(&app, &fx, op, user).await;
            let ctx = format!("{op:?} as {role:?}");
            let status = r.status.as_u16();
            let (want_status, want_code, want_param) = match want {
                Success(s) => (s, None, None),
                Listed(_) => (200, None, None),
                NotFound(p) => (404, Some("not_found"), p),
                Forbidden => (403, Some("forbidden"), None),
                Invalid(p) => (400, Some("parameter_invalid"), Some(p)),
            };
            if status != want_status {
                failures.push(format!(
                    "{ctx}: want {want_status}, got {status}: {}",
                    r.raw
                ));
                continue;
            }
            if let Some(code) = want_code {
                if r.body["code"] != code
                    || r.body["type"] != "invalid_request"
                    || r.body["param"] != json!(want_param)
                {
                    failures.push(format!(
                        "{ctx}: want code {code} param {want_param:?}, got {}",
                        r.raw
                    ));
                }
                check_untouched(&app, &cast, &fx, &ctx, &mut failures).await;
                continue;
            }
            if let (Listed(listed), Some(item)) = (want, item) {
                let ids = data_ids(&r.body);
                check!(
                    failures,
                    ids.contains(&item) == listed,
                    "{ctx}: listed should be {listed}: {}",
                    r.raw
                );
            }
            check_effect(&app, &cast, &fx, (op, user, &r), &ctx, &mut failures).await;
        }
    }
    assert!(
        failures.is_empty(),
        "{} wrong answers:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Records unless `path` answers `status` for `user`.
async fn check_status(
    app: &TestApp,
    failures: &mut Vec<String>,
    ctx: &str,
    user: &User,
    path: &str,
    status: u16,
) {
    let r = app.get(user, path).await;
    check!(
        failures,
        r.status.as_u16() == status,
        "{ctx}: then GET {path} as {} should be {status}, got {}: {}",
        user.username,
        r.status.as_u16(),
        r.raw
    );
}

/// After an allowed request: it did what it says.
async fn check_effect(
    app: &TestApp,
    cast: &Cast,
    fx: &Fixture,
    (op, user, r): (Op, &User, &Resp),
    ctx: &str,
    failures: &mut Vec<String>,
) {
    let b = &r.body;
    let group = format!("/v1/groups/{}", fx.group);
    let conv = format!("/v1/conversations/{}", fx.conversation);
    let msg = format!("/v1/messages/{}", fx.message);
    match op {
        Op::GetGroup => check!(failures, b["id"] == fx.group.as_str(), "{ctx}: {b}"),
        Op::UpdateGroup => {
            check!(failures, b["name"] == "Renamed", "{ctx}: {b}");
            let g = app.get(&cast.member, &group).await;
            check!(
                failures,
                g.body["name"] == "Renamed",
                "{ctx}: then {}",
                g.raw
            );
        }
        Op::LeaveGroup => {
            let members = member_ids(b);
            check!(
                failures,
                !members.contains(&user.id) && members.len() == 2,
                "{ctx}: {b}"
            );
            // Gone from the group and from all its conversations at once.
            check_status(app, failures, ctx, user, &group, 404).await;
            check_status(app, failures, ctx, user, &conv, 404).await;
            check_status(app, failures, ctx, user, &msg, 404).await;
        }
        Op::DeleteGroup => {
            check!(failures, r.raw.is_empty(), "{ctx}: body {}", r.raw);
            for u in [&cast.owner, &cast.member, &cast.creator] {
                check_status(app, failures, ctx, u, &group, 404).await;
                check_status(app, failures, ctx, u, &conv, 404).await;
                check_status(app, failures, ctx, u, &msg, 404).await;
            }
        }
        Op::CreateConversation => {
            check!(
                failures,
                b["group_id"] == fx.group.as_str() && b["contact_id"].is_null(),
                "{ctx}: {b}"
            );
            let new_id = id_of(b);
            // Every member sees it.
            for u in [&cast.owner, &cast.member, &cast.creator] {
                let path = format!("/v1/conversations/{new_id}");
                check_status(app, failures, ctx, u, &path, 200).await;
            }
        }
        Op::GetConversation => {
            check!(
                failures,
                b["id"] == fx.conversation.as_str()
                    && b["group_id"] == fx.group.as_str()
                    && b["last_opened_at"].is_i64(),
                "{ctx}: {b}"
            );
        }
        Op::UpdateConversation => {
            check!(failures, b["is_muted"] == true, "{ctx}: {b}");
            // Per-member: the others are not muted.
            for other in [&cast.owner, &cast.member, &cast.creator] {
                if other.id != user.id {
                    let c = listed_conversation(app, other, &fx.conversation).await;
                    check!(
                        failures,
                        c["is_muted"] == false,
                        "{ctx}: {} sees {c}",
                        other.username
                    );
                }
            }
        }
        Op::DeleteConversation => {
            check!(failures, r.raw.is_empty(), "{ctx}: body {}", r.raw);
            for u in [&cast.owner, &cast.member, &cast.creator] {
                check_status(app, failures, ctx, u, &conv, 404).await;
                check_status(app, failures, ctx, u, &msg, 404).await;
            }
            // The group stays.
            check_status(app, failures, ctx, &cast.member, &group, 200).await;
        }
        Op::SendMessage => {
            check!(
                failures,
                b["conversation_id"] == fx.conversation.as_str()
                    && b["contact"]["id"] == user.id.as_str()
                    && b["message"] == "me too",
                "{ctx}: {b}"
            );
        }
        Op::GetMessage => {
            check!(
                failures,
                b["id"] == fx.message.as_str() && b["message"] == "hello",
                "{ctx}: {b}"
            );
        }
        Op::EditMessage => {
            check!(
                failures,
                b["message"] == "edited" && b["updated_at"].is_i64(),
                "{ctx}: {b}"
            );
        }
        Op::React => {
            check!(
                failures,
                b["reactions"] == json!([{"like": [user.username]}]),
                "{ctx}: {b}"
            );
        }
        Op::Unreact => {
            check!(
                failures,
                b["id"] == fx.message.as_str() && b["reactions"] == json!([]),
                "{ctx}: {b}"
            );
        }
        Op::DeleteMessage => {
            check!(failures, r.raw.is_empty(), "{ctx}: body {}", r.raw);
            check_status(app, failures, ctx, &cast.owner, &msg, 404).await;
            check_status(app, failures, ctx, &cast.owner, &conv, 200).await;
        }
        Op::ListGroups
        | Op::ListGroupConversations
        | Op::ListConversations
        | Op::ListConversationMessages
        | Op::ListAllMessages => {}
    }
}

confab_tests::on_both_stores!(crate::support::on_server; authorization_matrix);
