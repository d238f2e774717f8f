//! What an allowed request must have done.

use confab_tests::http::{Resp, TestApp, User};
use reqwest::Method;
use serde_json::{json, Value};

use super::cast::{Cast, Fixture};
use super::requests::Op;
use super::snapshot::{forget_activity, listed_ids, roles};
use crate::support::{check, id_of, ids_of, listed_conversation, member_ids};

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

/// Records unless `user` sending into `conversation` gets `status` (and,
/// when refused, `contact_blocked` naming `conversation_id`).
async fn check_send(
    app: &TestApp,
    failures: &mut Vec<String>,
    ctx: &str,
    user: &User,
    conversation: &str,
    status: u16,
) {
    let r = app
        .post(
            user,
            "/v1/messages",
            &[("conversation_id", conversation), ("message", "and now?")],
        )
        .await;
    let code_ok = status != 403
        || (r.body["code"] == "contact_blocked" && r.body["param"] == "conversation_id");
    check!(
        failures,
        r.status.as_u16() == status && code_ok,
        "{ctx}: then {} sending into {conversation} should be {status}, got {}: {}",
        user.username,
        r.status.as_u16(),
        r.raw
    );
}

/// Phone privacy (docs/api.md "Authentication and tokens" and "Blocks and reports"): every contact object in an
/// answer shows its `phone_number` only to that contact; everyone else
/// gets `null`.
pub(super) fn check_phones(body: &Value, viewer: &User, ctx: &str, failures: &mut Vec<String>) {
    match body {
        Value::Object(map) => {
            if map.contains_key("username") && map.contains_key("avatar_url") {
                let own = map.get("id").and_then(Value::as_str) == Some(viewer.id.as_str());
                let phone = map.get("phone_number");
                let ok = if own {
                    phone.is_some_and(Value::is_string)
                } else {
                    phone == Some(&Value::Null)
                };
                check!(
                    failures,
                    ok,
                    "{ctx}: {} sees this contact's phone_number wrongly: {body}",
                    viewer.username
                );
            }
            for v in map.values() {
                check_phones(v, viewer, ctx, failures);
            }
        }
        Value::Array(items) => {
            for v in items {
                check_phones(v, viewer, ctx, failures);
            }
        }
        _ => {}
    }
}

/// The group's members and their roles, as `user` lists them.
async fn member_roles(app: &TestApp, user: &User, fx: &Fixture) -> Vec<(String, String)> {
    let r = app
        .get(user, &format!("/v1/groups/{}/members?limit=100", fx.group))
        .await;
    roles(&r.body)
}

/// After an allowed request: it did what it says.
pub(super) async fn check_effect(
    app: &TestApp,
    cast: &Cast,
    fx: &Fixture,
    (op, user, r): (Op, &User, &Resp),
    ctx: &str,
    failures: &mut Vec<String>,
) {
    let b = &r.body;
    check_phones(b, user, ctx, failures);
    let group = format!("/v1/groups/{}", fx.group);
    let conv = format!("/v1/conversations/{}", fx.conversation);
    let msg = format!("/v1/messages/{}", fx.message);
    let bea = &fx.bystander;
    let members = fx.members(cast);
    match op {
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
            // Added once, in the caller's name, after the creator's.
            let mut likers = vec!["cora"];
            if user.id != cast.creator.id {
                likers.push(&user.username);
            }
            check!(
                failures,
                b["reactions"] == json!([{ "like": likers }]),
                "{ctx}: {b}"
            );
        }
        Op::AppendAttachment => {
            let a = &b["attachments"];
            check!(
                failures,
                a.as_array().map(Vec::len) == Some(1)
                    && a[0]["filename"] == "a.png"
                    && a[0]["message_id"] == fx.message.as_str()
                    && b["updated_at"].is_i64(),
                "{ctx}: {b}"
            );
        }
        Op::Unreact => {
            // Only one's own reaction goes: the creator's stays for others.
            let want = if user.id == cast.creator.id {
                json!([])
            } else {
                json!([{"like": ["cora"]}])
            };
            check!(
                failures,
                b["id"] == fx.message.as_str() && b["reactions"] == want,
                "{ctx}: {b}"
            );
        }
        Op::DeleteMessage => {
            check!(failures, r.raw.is_empty(), "{ctx}: body {}", r.raw);
            // Gone for every member, the sender too; the conversation stays.
            for u in [&cast.owner, &cast.creator, bea] {
                check_status(app, failures, ctx, u, &msg, 404).await;
            }
            check_status(app, failures, ctx, &cast.owner, &conv, 200).await;
        }
        Op::CreateGroupConversation => {
            check!(
                failures,
                b["group_id"] == fx.group.as_str() && b["contact_id"].is_null(),
                "{ctx}: {b}"
            );
            let new_id = id_of(b);
            // Every member sees it.
            for u in members {
                let path = format!("/v1/conversations/{new_id}");
                check_status(app, failures, ctx, u, &path, 200).await;
            }
        }
        Op::CreateDirectConversation | Op::CreateDirectWithBlocker => {
            check!(
                failures,
                b["contact_id"] == bea.id.as_str() && b["group_id"].is_null(),
                "{ctx}: {b}"
            );
            // distinct=true gives the member the conversation the bystander
            // started with them (200); anyone else a new one.
            let existing = r.status.as_u16() == 200;
            check!(
                failures,
                (id_of(b) == fx.direct) == existing,
                "{ctx}: the existing direct conversation is {}: {b}",
                fx.direct
            );
            // The other member sees it, with the caller as its contact.
            let seen = app
                .get(bea, &format!("/v1/conversations/{}", id_of(b)))
                .await;
            check!(
                failures,
                seen.status.as_u16() == 200 && seen.body["contact_id"] == user.id.as_str(),
                "{ctx}: then {} sees {}",
                bea.username,
                seen.raw
            );
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
            for other in members {
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
        Op::PinMessage => {
            check!(
                failures,
                b["pinned_message_id"] == fx.message.as_str(),
                "{ctx}: {b}"
            );
            // Shared: every member sees the pin.
            for other in members {
                let c = listed_conversation(app, other, &fx.conversation).await;
                check!(
                    failures,
                    c["pinned_message_id"] == fx.message.as_str(),
                    "{ctx}: {} sees {c}",
                    other.username
                );
            }
        }
        Op::DeleteConversation => {
            check!(failures, r.raw.is_empty(), "{ctx}: body {}", r.raw);
            for u in members {
                check_status(app, failures, ctx, u, &conv, 404).await;
                check_status(app, failures, ctx, u, &msg, 404).await;
            }
            // The group stays.
            check_status(app, failures, ctx, &cast.member, &group, 200).await;
        }
        Op::DeleteDirectConversation => {
            check!(failures, r.raw.is_empty(), "{ctx}: body {}", r.raw);
            let direct = format!("/v1/conversations/{}", fx.direct);
            for u in [&cast.member, bea] {
                check_status(app, failures, ctx, u, &direct, 404).await;
            }
        }
        Op::CreateGroup => {
            check!(
                failures,
                b["name"] == "New"
                    && b["contacts"].is_array()
                    && member_ids(b) == ids_of(&[user, bea]),
                "{ctx}: {b}"
            );
            // The creator owns it: they may rename it; the member sees it.
            let path = format!("/v1/groups/{}", id_of(b));
            let renamed = app.put(user, &path, &[("name", "Mine")]).await;
            check!(
                failures,
                renamed.status.as_u16() == 200,
                "{ctx}: then the creator renames it: {}",
                renamed.raw
            );
            check_status(app, failures, ctx, bea, &path, 200).await;
        }
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
        Op::AddMember => {
            check!(
                failures,
                b["contacts"].is_array() && member_ids(b).contains(&cast.outsider.id),
                "{ctx}: {b}"
            );
            // In the group and, live, in its conversations.
            check_status(app, failures, ctx, &cast.outsider, &group, 200).await;
            check_status(app, failures, ctx, &cast.outsider, &msg, 200).await;
        }
        Op::RemoveMember => {
            let rest: Vec<&User> = members.into_iter().filter(|u| u.id != bea.id).collect();
            check!(
                failures,
                b["contacts"].is_array() && member_ids(b) == ids_of(&rest),
                "{ctx}: {b}"
            );
            check_status(app, failures, ctx, bea, &group, 404).await;
            check_status(app, failures, ctx, bea, &conv, 404).await;
        }
        Op::LeaveGroup => {
            let rest: Vec<&User> = members.into_iter().filter(|u| u.id != user.id).collect();
            check!(
                failures,
                b["contacts"].is_array() && member_ids(b) == ids_of(&rest),
                "{ctx}: {b}"
            );
            // Gone from the group and from all its conversations at once.
            check_status(app, failures, ctx, user, &group, 404).await;
            check_status(app, failures, ctx, user, &conv, 404).await;
            check_status(app, failures, ctx, user, &msg, 404).await;
        }
        Op::DeleteGroup => {
            check!(failures, r.raw.is_empty(), "{ctx}: body {}", r.raw);
            for u in members {
                check_status(app, failures, ctx, u, &group, 404).await;
                check_status(app, failures, ctx, u, &conv, 404).await;
                check_status(app, failures, ctx, u, &msg, 404).await;
            }
        }
        Op::GetMembers => {
            check!(
                failures,
                roles(b) == super::snapshot::fixture_roles(cast, fx),
                "{ctx}: owner, admin and members: {b}"
            );
        }
        Op::MakeAdmin => {
            check!(failures, b["id"] == fx.group.as_str(), "{ctx}: {b}");
            let bea_role = member_roles(app, &cast.member, fx)
                .await
                .into_iter()
                .find(|(id, _)| *id == bea.id);
            check!(
                failures,
                bea_role.as_ref().map(|(_, r)| r.as_str()) == Some("admin"),
                "{ctx}: then the bystander's role is {bea_role:?}"
            );
            // An admin's power, at once: adding a member.
            let add = app
                .put(bea, &group, &[("add_contact_ids[]", &cast.outsider.id)])
                .await;
            check!(
                failures,
                add.status.as_u16() == 200,
                "{ctx}: then the new admin adds a member: {}",
                add.raw
            );
        }
        Op::RemoveAdmin => {
            let role = member_roles(app, &cast.member, fx)
                .await
                .into_iter()
                .find(|(id, _)| *id == cast.admin.id);
            check!(
                failures,
                role.as_ref().map(|(_, r)| r.as_str()) == Some("member"),
                "{ctx}: then the admin's role is {role:?}"
            );
            // No admin's power left.
            let add = app
                .put(
                    &cast.admin,
                    &group,
                    &[("add_contact_ids[]", &cast.outsider.id)],
                )
                .await;
            check!(
                failures,
                add.status.as_u16() == 403 && add.body["code"] == "forbidden",
                "{ctx}: then the former admin adds a member: {}",
                add.raw
            );
        }
        Op::RemoveAdminAsMember => {
            let rest: Vec<&User> = members
                .into_iter()
                .filter(|u| u.id != cast.admin.id)
                .collect();
            check!(
                failures,
                b["contacts"].is_array() && member_ids(b) == ids_of(&rest),
                "{ctx}: {b}"
            );
            check_status(app, failures, ctx, &cast.admin, &group, 404).await;
            check_status(app, failures, ctx, &cast.admin, &conv, 404).await;
        }
        Op::FindContact => {
            check!(
                failures,
                listed_ids(b) == vec![bea.id.clone()],
                "{ctx}: {b}"
            );
        }
        Op::GetMe => {
            check!(
                failures,
                b["id"] == user.id.as_str()
                    && b["username"] == user.username.as_str()
                    && b["phone_number"].is_string(),
                "{ctx}: {b}"
            );
        }
        Op::UpdateMe => {
            check!(
                failures,
                b["id"] == user.id.as_str() && b["phone_number"] == "+15550199",
                "{ctx}: {b}"
            );
            // Changed, and still private.
            let seen = app.get(bea, &format!("/v1/contacts/{}", user.id)).await;
            check!(
                failures,
                seen.status.as_u16() == 200 && seen.body["phone_number"].is_null(),
                "{ctx}: then {} sees {}",
                bea.username,
                seen.raw
            );
        }
        Op::GetContact => {
            check!(
                failures,
                b["id"] == bea.id.as_str() && b["username"] == bea.username.as_str(),
                "{ctx}: {b}"
            );
        }
        Op::ListEdits => {
            // The fixture's message was never edited.
            check!(
                failures,
                b["data"] == serde_json::json!([]) && b["has_more"] == false,
                "{ctx}: {b}"
            );
        }
        Op::Typing | Op::TypingInBlockedDirect => {
            check!(failures, r.raw.is_empty(), "{ctx}: body {}", r.raw);
        }
        Op::BlockContact => check_block(app, cast, fx, (user, r), ctx, failures).await,
        Op::UnblockContact => {
            check!(failures, r.raw.is_empty(), "{ctx}: body {}", r.raw);
            let path = format!("/v1/contacts/{}/block", bea.id);
            check_status(app, failures, ctx, user, &path, 404).await;
            // Both write again, at once.
            check_send(app, failures, ctx, user, &fx.blocker_direct, 201).await;
            check_send(app, failures, ctx, bea, &fx.blocker_direct, 201).await;
        }
        Op::SendInBlockedDirect => {
            check!(
                failures,
                b["conversation_id"] == fx.direct.as_str()
                    && b["contact"]["id"] == user.id.as_str()
                    && b["message"] == "let me in",
                "{ctx}: {b}"
            );
            check_status(
                app,
                failures,
                ctx,
                bea,
                &format!("/v1/messages/{}", id_of(b)),
                200,
            )
            .await;
        }
        Op::AddBlockerToGroup => {
            check!(
                failures,
                b["contacts"].is_array() && member_ids(b).contains(&bea.id),
                "{ctx}: {b}"
            );
            let home = format!("/v1/groups/{}", cast.home(user));
            check_status(app, failures, ctx, bea, &home, 200).await;
        }
        Op::ReportMessage | Op::ReportContact => {
            check_report(app, cast, fx, (op, user, r), ctx, failures).await;
        }
        Op::ListAllMessages
        | Op::ListConversationMessages
        | Op::SearchMessages
        | Op::SearchConversation
        | Op::ListConversations
        | Op::ListGroupConversations
        | Op::ListGroups
        | Op::ListBlocked => {}
        // Never allowed: a wrong status is reported before effects.
        Op::ReactAsOther => {}
    }
}

/// After a block of the bystander: the block object, found again; a new
/// block stops the direct conversation both ways at once.
async fn check_block(
    app: &TestApp,
    cast: &Cast,
    fx: &Fixture,
    (user, r): (&User, &Resp),
    ctx: &str,
    failures: &mut Vec<String>,
) {
    let b = &r.body;
    let bea = &fx.bystander;
    let path = format!("/v1/contacts/{}/block", bea.id);
    check!(
        failures,
        b["contact"]["id"] == bea.id.as_str() && b["created_at"].is_i64(),
        "{ctx}: {b}"
    );
    if r.status.as_u16() == 201 {
        let location = r.header("location").unwrap_or("");
        check!(
            failures,
            location.ends_with(&path),
            "{ctx}: Location {location:?}"
        );
    } else {
        // Already blocked: the first block, unchanged.
        check!(
            failures,
            b["created_at"] == fx.blocker_block_at,
            "{ctx}: the first block was made at {}: {b}",
            fx.blocker_block_at
        );
    }
    let got = app.get(user, &path).await;
    let (mut seen, mut answered) = (got.body.clone(), b.clone());
    forget_activity(&mut seen);
    forget_activity(&mut answered);
    check!(
        failures,
        got.status.as_u16() == 200 && seen == answered,
        "{ctx}: then GET {path} answers {}",
        got.raw
    );
    if user.id == cast.member.id {
        // Their direct conversation: closed to both, on the next request.
        check_send(app, failures, ctx, user, &fx.direct, 403).await;
        check_send(app, failures, ctx, bea, &fx.direct, 403).await;
    }
}

/// After a report: the report object, which its reporter (only) finds
/// again, and the operator with who made it.
async fn check_report(
    app: &TestApp,
    cast: &Cast,
    fx: &Fixture,
    (op, user, r): (Op, &User, &Resp),
    ctx: &str,
    failures: &mut Vec<String>,
) {
    let b = &r.body;
    let bea = &fx.bystander;
    let (message_id, contact_id, reason, description) = match op {
        Op::ReportMessage => (json!(fx.message), &cast.creator.id, "spam", ""),
        _ => (Value::Null, &bea.id, "harassment", "rude"),
    };
    check!(
        failures,
        b["message_id"] == message_id
            && b["contact_id"] == contact_id.as_str()
            && b["reason"] == reason
            && b["description"] == description
            && b["status"] == "open"
            && b["created_at"].is_i64()
            && b["id"].is_string(),
        "{ctx}: {b}"
    );
    let Some(id) = b["id"].as_str() else { return };
    let path = format!("/v1/reports/{id}");
    let location = r.header("location").unwrap_or("");
    check!(
        failures,
        location.ends_with(&path),
        "{ctx}: Location {location:?}"
    );
    let own = app.get(user, &path).await;
    check!(
        failures,
        own.status.as_u16() == 200 && &own.body == b,
        "{ctx}: then GET {path} as the reporter: {}",
        own.raw
    );
    for other in [bea, &cast.creator] {
        if other.id != user.id {
            check_status(app, failures, ctx, other, &path, 404).await;
        }
    }
    let admin = app
        .send(
            Method::GET,
            &format!("/v1/admin/reports/{id}"),
            Some(&cast.key),
            None,
            &[],
        )
        .await;
    check!(
        failures,
        admin.status.as_u16() == 200
            && admin.body["reporter_id"] == user.id.as_str()
            && admin.body["updated_at"] == b["created_at"],
        "{ctx}: then the operator sees {}",
        admin.raw
    );
}
