//! The authorization matrix (API.md sections 0, 2, 3 and 5 to 8): every `/v1`
//! operation (each route and method, and each kind of change a PUT can
//! make) tried by every kind of caller: the group owner, the member who
//! created the conversation and sent the message, another member, an
//! outsider, and requests with no token, a revoked token and an expired
//! one. Each gets the answer the contract demands; when allowed, the
//! request did what it says; when refused, nothing changed (snapshots of the
//! affected objects, before and after).
//!
//! One server per store. Each cell starts from a fixture as made: a fresh
//! one, or the previous cell's when that cell provably left it so (see the
//! loop), which keeps the run short without one cell seeing another's
//! effects.

use confab_tests::http::{encode_form, Resp, TestApp, User};
use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{
    check, group_conversation, id_of, ids_of, listed_conversation, member_ids, new_group,
};

#[derive(Clone, Copy, Debug)]
enum Role {
    /// The group's owner.
    Owner,
    /// A plain member who created the conversation and sent the message.
    Creator,
    /// Another plain member.
    Member,
    /// A contact in none of it.
    Outsider,
    /// The owner's request without an `Authorization` header.
    NoToken,
    /// The owner's request with a token of theirs that was revoked.
    Revoked,
    /// The creator's request with a token of theirs that expired.
    Expired,
}

/// The columns of the matrix, in order.
const ROLES: [Role; 7] = [
    Role::Owner,
    Role::Creator,
    Role::Member,
    Role::Outsider,
    Role::NoToken,
    Role::Revoked,
    Role::Expired,
];

#[derive(Clone, Copy, Debug)]
enum Op {
    // Messages.
    ListAllMessages,
    ListConversationMessages,
    SendMessage,
    GetMessage,
    EditMessage,
    React,
    /// A reaction in another member's name.
    ReactAsOther,
    AppendAttachment,
    Unreact,
    DeleteMessage,
    // Conversations.
    ListConversations,
    ListGroupConversations,
    CreateGroupConversation,
    CreateDirectConversation,
    GetConversation,
    UpdateConversation,
    /// Sets the shared `pinned_message_id`.
    PinMessage,
    DeleteConversation,
    /// Deletes the direct conversation the bystander started with the member.
    DeleteDirectConversation,
    // Groups.
    ListGroups,
    CreateGroup,
    GetGroup,
    UpdateGroup,
    AddMember,
    /// Removes the bystander, another member.
    RemoveMember,
    LeaveGroup,
    DeleteGroup,
    // Contacts.
    FindContact,
    GetMe,
    UpdateMe,
    GetContact,
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
    /// 401 `unauthorized` with `WWW-Authenticate: Bearer`.
    Unauthorized,
}

impl Want {
    fn refused(self) -> bool {
        !matches!(self, Want::Success(_) | Want::Listed(_))
    }
}

/// Whether `op` only reads (API.md: GET by id opens a conversation, so that
/// one writes).
fn is_read(op: Op) -> bool {
    matches!(
        op,
        Op::ListAllMessages
            | Op::ListConversationMessages
            | Op::GetMessage
            | Op::ListConversations
            | Op::ListGroupConversations
            | Op::ListGroups
            | Op::GetGroup
            | Op::FindContact
            | Op::GetMe
            | Op::GetContact
    )
}

/// A row of the matrix: the answers of the four authenticated roles; every
/// request without a live token is 401, whatever the operation.
const fn row(owner: Want, creator: Want, member: Want, outsider: Want) -> [Want; 7] {
    use Want::Unauthorized as U;
    [owner, creator, member, outsider, U, U, U]
}

/// A row where the three members get the same answer.
const fn members(member: Want, outsider: Want) -> [Want; 7] {
    row(member, member, member, outsider)
}

/// The contacts the whole matrix shares, and the two dead tokens.
struct Cast {
    owner: User,
    creator: User,
    member: User,
    outsider: User,
    /// A token of the owner's, revoked.
    revoked: String,
    /// A token of the creator's, expired.
    expired: String,
}

impl Cast {
    async fn new(app: &TestApp) -> Cast {
        let mut owner = app.user("olive").await;
        let creator = app.user("cora").await;
        let revoked = app.revoke_and_reissue(&mut owner).await;
        let expired = app.expired_token(&creator).await;
        Cast {
            owner,
            creator,
            member: app.user("mike").await,
            outsider: app.user("otto").await,
            revoked,
            expired,
        }
    }

    /// Whose request it is (the ids and names in its body) and the token it
    /// carries.
    fn caller(&self, role: Role) -> (&User, Option<&str>) {
        match role {
            Role::Owner => (&self.owner, Some(&self.owner.token)),
            Role::Creator => (&self.creator, Some(&self.creator.token)),
            Role::Member => (&self.member, Some(&self.member.token)),
            Role::Outsider => (&self.outsider, Some(&self.outsider.token)),
            Role::NoToken => (&self.owner, None),
            Role::Revoked => (&self.owner, Some(&self.revoked)),
            Role::Expired => (&self.creator, Some(&self.expired)),
        }
    }
}

/// What a cell acts on: a group (owner, creator, member and a
/// bystander), a conversation the creator made in it, a message the creator
/// sent there and reacted to, and a direct conversation the bystander
/// started with the member.
struct Fixture {
    /// A member of the group, new for each fixture: the target of operations on
    /// someone else (react in their name, remove them, talk to them).
    bystander: User,
    group: String,
    conversation: String,
    message: String,
    /// Set by the creator's reaction.
    message_updated_at: Value,
    direct: String,
}

async fn fixture(app: &TestApp, cast: &Cast, n: usize) -> Fixture {
    let bystander = app.user(&format!("bea{n}")).await;
    let group = new_group(
        app,
        &cast.owner,
        "Team",
        &[&cast.member, &cast.creator, &bystander],
    )
    .await;
    let conversation = group_conversation(app, &cast.creator, &group).await;
    let message = id_of(
        &app.send_message(&cast.creator, &conversation, "hello")
            .await,
    );
    let reacted = app
        .put(
            &cast.creator,
            &format!("/v1/messages/{message}"),
            &[("reactions[like][]", "cora")],
        )
        .await;
    let message_updated_at = reacted.expect(200)["updated_at"].clone();
    let direct = app.direct(&bystander, &cast.member).await;
    Fixture {
        bystander,
        group,
        conversation,
        message,
        message_updated_at,
        direct,
    }
}

/// One request: method, path and form body (none when empty).
struct Req {
    method: Method,
    path: String,
    form: Vec<(&'static str, String)>,
}

fn req(method: Method, path: String, form: &[(&'static str, &str)]) -> Req {
    Req {
        method,
        path,
        form: form.iter().map(|(k, v)| (*k, (*v).to_owned())).collect(),
    }
}

/// The request `op` makes when `who` sends it, and the fixture's item a list
/// should hold.
fn request(cast: &Cast, fx: &Fixture, op: Op, who: &User) -> (Req, Option<String>) {
    use Method as M;
    let group = format!("/v1/groups/{}", fx.group);
    let conv = format!("/v1/conversations/{}", fx.conversation);
    let msg = format!("/v1/messages/{}", fx.message);
    let bea = &fx.bystander;
    let r = match op {
        Op::ListAllMessages => {
            let r = req(M::GET, "/v1/messages?limit=100".into(), &[]);
            return (r, Some(fx.message.clone()));
        }
        Op::ListConversationMessages => {
            let path = format!("/v1/messages?limit=100&conversation_id={}", fx.conversation);
            return (req(M::GET, path, &[]), Some(fx.message.clone()));
        }
        Op::SendMessage => req(
            M::POST,
            "/v1/messages".into(),
            &[("conversation_id", &fx.conversation), ("message", "me too")],
        ),
        Op::GetMessage => req(M::GET, msg, &[]),
        Op::EditMessage => req(M::PUT, msg, &[("message", "edited")]),
        Op::React => req(M::PUT, msg, &[("reactions[like][]", &who.username)]),
        Op::ReactAsOther => req(M::PUT, msg, &[("reactions[like][]", &bea.username)]),
        Op::AppendAttachment => req(
            M::PUT,
            msg,
            &[
                ("attachments[0][file_url]", "https://example.com/a.png"),
                ("attachments[0][filename]", "a.png"),
            ],
        ),
        Op::Unreact => req(M::DELETE, format!("{msg}/reactions/like"), &[]),
        Op::DeleteMessage => req(M::DELETE, msg, &[]),
        Op::ListConversations => {
            let r = req(M::GET, "/v1/conversations?limit=100".into(), &[]);
            return (r, Some(fx.conversation.clone()));
        }
        Op::ListGroupConversations => {
            let path = format!("/v1/conversations?limit=100&group_id={}", fx.group);
            return (req(M::GET, path, &[]), Some(fx.conversation.clone()));
        }
        Op::CreateGroupConversation => req(
            M::POST,
            "/v1/conversations".into(),
            &[("group_id", &fx.group)],
        ),
        Op::CreateDirectConversation => req(
            M::POST,
            "/v1/conversations".into(),
            &[("contact_id", &bea.id)],
        ),
        Op::GetConversation => req(M::GET, conv, &[]),
        Op::UpdateConversation => req(M::PUT, conv, &[("is_muted", "true")]),
        Op::PinMessage => req(M::PUT, conv, &[("pinned_message_id", &fx.message)]),
        Op::DeleteConversation => req(M::DELETE, conv, &[]),
        Op::DeleteDirectConversation => {
            req(M::DELETE, format!("/v1/conversations/{}", fx.direct), &[])
        }
        Op::ListGroups => {
            let r = req(M::GET, "/v1/groups?limit=100".into(), &[]);
            return (r, Some(fx.group.clone()));
        }
        Op::CreateGroup => req(
            M::POST,
            "/v1/groups".into(),
            &[("name", "New"), ("contact_ids[]", &bea.id)],
        ),
        Op::GetGroup => req(M::GET, group, &[]),
        Op::UpdateGroup => req(M::PUT, group, &[("name", "Renamed")]),
        // The outsider, whoever asks (the outsider too: adding oneself).
        Op::AddMember => req(M::PUT, group, &[("add_contact_ids[]", &cast.outsider.id)]),
        Op::RemoveMember => req(M::PUT, group, &[("remove_contact_ids[]", &bea.id)]),
        Op::LeaveGroup => req(M::PUT, group, &[("remove_contact_ids[]", &who.id)]),
        Op::DeleteGroup => req(M::DELETE, group, &[]),
        Op::FindContact => req(
            M::GET,
            format!("/v1/contacts?username={}", bea.username),
            &[],
        ),
        Op::GetMe => req(M::GET, "/v1/contacts/me".into(), &[]),
        Op::UpdateMe => req(
            M::PUT,
            "/v1/contacts/me".into(),
            &[("phone_number", "+15550199")],
        ),
        Op::GetContact => req(M::GET, format!("/v1/contacts/{}", bea.id), &[]),
    };
    (r, None)
}

async fn send(app: &TestApp, token: Option<&str>, r: &Req) -> Resp {
    let body = (!r.form.is_empty()).then(|| {
        let pairs: Vec<(&str, &str)> = r.form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        (
            "application/x-www-form-urlencoded",
            encode_form(&pairs).into_bytes(),
        )
    });
    app.send(r.method.clone(), &r.path, token, body, &[]).await
}

/// One view of the world, as one user gets it.
struct View {
    label: String,
    status: u16,
    body: Value,
}

/// What a refused request must leave as it was: the group as the owner
/// sees it (members' profiles included), the group's conversations as each
/// member sees them (their own state too), the bystander's conversations
/// and groups (where a new direct conversation or group would show), and
/// the conversation's messages.
async fn snapshot(app: &TestApp, cast: &Cast, fx: &Fixture) -> Vec<View> {
    let group_conversations = format!("/v1/conversations?limit=100&group_id={}", fx.group);
    let views = [
        (&cast.owner, format!("/v1/groups/{}", fx.group)),
        (
            &cast.owner,
            format!("/v1/messages?limit=100&conversation_id={}", fx.conversation),
        ),
        (&cast.owner, group_conversations.clone()),
        (&cast.creator, group_conversations.clone()),
        (&cast.member, group_conversations),
        (&fx.bystander, "/v1/conversations?limit=100".to_owned()),
        (&fx.bystander, "/v1/groups?limit=100".to_owned()),
    ];
    let mut out = Vec::with_capacity(views.len());
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
    out
}

/// Drops `last_active_at` from the contact objects in `v`: any request a
/// contact makes may move it (API.md section 3), refused ones too.
fn forget_activity(v: &mut Value) {
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

/// The ids in a list envelope, or none when it is not one (no panic: the
/// matrix reports every wrong cell).
fn listed_ids(body: &Value) -> Vec<String> {
    body["data"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// After a refused request: every view is as before, and the fixture is
/// still what `fixture` made. Returns the views when all is so.
async fn check_untouched(
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
    let group = &after[0].body;
    let all = ids_of(&[&cast.owner, &cast.creator, &cast.member, &fx.bystander]);
    check!(
        failures,
        after[0].status == 200
            && group["name"] == "Team"
            && group["contacts"].is_array()
            && member_ids(group) == all,
        "{ctx}: refused, yet the group changed: {group}"
    );
    let messages = &after[1].body;
    let m = &messages["data"][0];
    check!(
        failures,
        after[1].status == 200
            && listed_ids(messages) == vec![fx.message.clone()]
            && m["message"] == "hello"
            && m["reactions"] == json!([{"like": ["cora"]}])
            && m["attachments"] == json!([])
            && m["updated_at"] == fx.message_updated_at,
        "{ctx}: refused, yet the messages changed: {messages}"
    );
    let conversations = &after[3].body;
    let c = &conversations["data"][0];
    check!(
        failures,
        listed_ids(conversations) == vec![fx.conversation.clone()]
            && c["is_muted"] == false
            && c["pinned_message_id"].is_null(),
        "{ctx}: refused, yet the conversation changed: {conversations}"
    );
    (failures.len() == known).then_some(after)
}

async fn authorization_matrix(app: TestApp) {
    use Op::*;
    use Want::*;
    let started = std::time::Instant::now();
    let cast = Cast::new(&app).await;
    const NF: Want = NotFound(None);
    const NF_GROUP: Want = NotFound(Some("group_id"));
    const NF_CONV: Want = NotFound(Some("conversation_id"));
    const ANYONE_200: [Want; 7] = members(Success(200), Success(200));
    // Columns: owner, creator, member, outsider (`members(m, o)` when the
    // three members agree); then no token, revoked, expired: always 401.
    let table: [(Op, [Want; 7]); 31] = [
        (ListAllMessages, members(Listed(true), Listed(false))),
        (ListConversationMessages, members(Listed(true), NF_CONV)),
        (SendMessage, members(Success(201), NF_CONV)),
        (GetMessage, members(Success(200), NF)),
        (EditMessage, row(Forbidden, Success(200), Forbidden, NF)),
        (React, members(Success(200), NF)),
        (ReactAsOther, members(Forbidden, NF)),
        (
            AppendAttachment,
            row(Forbidden, Success(200), Forbidden, NF),
        ),
        (Unreact, members(Success(200), NF)),
        (DeleteMessage, row(Forbidden, Success(204), Forbidden, NF)),
        (ListConversations, members(Listed(true), Listed(false))),
        (ListGroupConversations, members(Listed(true), NF_GROUP)),
        (CreateGroupConversation, members(Success(201), NF_GROUP)),
        (
            CreateDirectConversation,
            members(Success(201), Success(201)),
        ),
        (GetConversation, members(Success(200), NF)),
        (UpdateConversation, members(Success(200), NF)),
        (PinMessage, members(Success(200), NF)),
        (
            DeleteConversation,
            row(Success(204), Success(204), Forbidden, NF),
        ),
        (DeleteDirectConversation, row(NF, NF, Success(204), NF)),
        (ListGroups, members(Listed(true), Listed(false))),
        (CreateGroup, members(Success(201), Success(201))),
        (GetGroup, members(Success(200), NF)),
        (UpdateGroup, row(Success(200), Forbidden, Forbidden, NF)),
        (AddMember, row(Success(200), Forbidden, Forbidden, NF)),
        (RemoveMember, row(Success(200), Forbidden, Forbidden, NF)),
        (
            LeaveGroup,
            row(
                Invalid("remove_contact_ids"),
                Success(200),
                Success(200),
                NF,
            ),
        ),
        (DeleteGroup, row(Success(204), Forbidden, Forbidden, NF)),
        (FindContact, ANYONE_200),
        (GetMe, ANYONE_200),
        (UpdateMe, ANYONE_200),
        (GetContact, ANYONE_200),
    ];
    let mut failures = Vec::new();
    let mut cells = 0;
    let mut fixtures = 0;
    // A cell gets a fresh fixture unless the previous one provably left
    // its own as made: refused with every view unchanged (its views after
    // are then this cell's views before), or an allowed read.
    let mut kept: Option<(Fixture, Option<Vec<View>>)> = None;
    for (op, wants) in table {
        for (role, want) in ROLES.into_iter().zip(wants) {
            cells += 1;
            let (fx, views) = match kept.take() {
                Some(kept) => kept,
                None => {
                    fixtures += 1;
                    (fixture(&app, &cast, fixtures).await, None)
                }
            };
            let (who, token) = cast.caller(role);
            let (req, item) = request(&cast, &fx, op, who);
            let ctx = format!("{op:?} as {role:?} ({} {})", req.method, req.path);
            let before = match (want.refused(), views) {
                (false, _) => None,
                (true, Some(views)) => Some(views),
                (true, None) => Some(snapshot(&app, &cast, &fx).await),
            };
            let r = send(&app, token, &req).await;
            let status = r.status.as_u16();
            let (want_status, want_code, want_param) = match want {
                Success(s) => (s, None, None),
                Listed(_) => (200, None, None),
                NotFound(p) => (404, Some("not_found"), p),
                Forbidden => (403, Some("forbidden"), None),
                Invalid(p) => (400, Some("parameter_invalid"), Some(p)),
                Unauthorized => (401, Some("unauthorized"), None),
            };
            if status != want_status {
                failures.push(format!(
                    "{ctx}: want {want_status}, got {status}: {}",
                    r.raw
                ));
            } else if let Some(code) = want_code {
                check!(
                    failures,
                    r.body["code"] == code
                        && r.body["type"] == "invalid_request"
                        && r.body["param"] == json!(want_param)
                        && r.body["message"].is_string(),
                    "{ctx}: want code {code} param {want_param:?}, got {}",
                    r.raw
                );
                if let Unauthorized = want {
                    let www = r.header("www-authenticate");
                    check!(
                        failures,
                        www.is_some_and(|h| h.starts_with("Bearer")),
                        "{ctx}: WWW-Authenticate is {www:?}"
                    );
                }
            } else {
                if let (Listed(listed), Some(item)) = (want, &item) {
                    check!(
                        failures,
                        listed_ids(&r.body).contains(item) == listed,
                        "{ctx}: listed should be {listed}: {}",
                        r.raw
                    );
                }
                check_effect(&app, &cast, &fx, (op, who, &r), &ctx, &mut failures).await;
            }
            match before {
                Some(before) => {
                    let after =
                        check_untouched(&app, &cast, &fx, &before, &ctx, &mut failures).await;
                    if after.is_some() {
                        kept = Some((fx, after));
                    }
                }
                None if is_read(op) && status == want_status => kept = Some((fx, None)),
                None => {}
            }
        }
    }
    // Figures for the record (shown with --nocapture).
    println!(
        "authorization matrix on {:?}: {cells} cells, {fixtures} fixtures, {:.1} s",
        app.backend,
        started.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} wrong answers out of {cells} cells:\n{}",
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
    let bea = &fx.bystander;
    let members = [&cast.owner, &cast.creator, &cast.member, bea];
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
            check_status(app, failures, ctx, &cast.owner, &msg, 404).await;
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
        Op::CreateDirectConversation => {
            check!(
                failures,
                b["contact_id"] == bea.id.as_str() && b["group_id"].is_null(),
                "{ctx}: {b}"
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
            check!(
                failures,
                b["contacts"].is_array()
                    && member_ids(b) == ids_of(&[&cast.owner, &cast.creator, &cast.member]),
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
                b["id"] == user.id.as_str() && b["username"] == user.username.as_str(),
                "{ctx}: {b}"
            );
        }
        Op::UpdateMe => {
            check!(
                failures,
                b["id"] == user.id.as_str() && b["phone_number"] == "+15550199",
                "{ctx}: {b}"
            );
            let seen = app.get(bea, &format!("/v1/contacts/{}", user.id)).await;
            check!(
                failures,
                seen.body["phone_number"] == "+15550199",
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
        Op::ListAllMessages
        | Op::ListConversationMessages
        | Op::ListConversations
        | Op::ListGroupConversations
        | Op::ListGroups => {}
        // Never allowed: a wrong status is reported before effects.
        Op::ReactAsOther => {}
    }
}

/// The matrix drives each actor's token as fast as the machine allows
/// (about a thousand requests a token in a few seconds, more than the
/// default 100/s with a burst of 200 on a fast machine): what it checks is
/// who may do what, so its server allows more per token. The limit itself is
/// tested in tests/tests/http/rate_limit.rs.
async fn on_matrix_server<F, Fut>(backend: confab_tests::db::Backend, test: F)
where
    F: FnOnce(TestApp) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let limits = confab_server::startup::RateLimits {
        per_contact: confab_server::startup::Quota::new(100_000, 100_000),
        anonymous: None,
        per_key: None,
    };
    test(TestApp::spawn_with(backend, limits).await).await;
}

confab_tests::on_both_stores!(crate::authorization::on_matrix_server; authorization_matrix);
