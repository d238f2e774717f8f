//! The operations (the rows) and the request each one makes.

use confab_tests::http::{encode_form, Resp, TestApp, User};
use reqwest::Method;

use super::cast::{Cast, Fixture};

#[derive(Clone, Copy, Debug)]
pub(super) enum Op {
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
    /// `GET /v1/messages/:id/edits`.
    ListEdits,
    /// `GET /v1/messages/search` for the fixture's message's text.
    SearchMessages,
    /// The same search within the fixture's conversation.
    SearchConversation,
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
    /// `POST /v1/conversations/:id/typing` in the group's conversation.
    Typing,
    /// Typing in the caller's direct conversation with the bystander (the
    /// member's, for those without one), as `SendInBlockedDirect`.
    TypingInBlockedDirect,
    // Groups.
    ListGroups,
    CreateGroup,
    GetGroup,
    UpdateGroup,
    AddMember,
    /// Removes the bystander, a plain member.
    RemoveMember,
    LeaveGroup,
    DeleteGroup,
    /// `GET /v1/groups/:id/members` (and each member's `role`).
    GetMembers,
    /// Makes the bystander an admin (`add_admin_ids[]`).
    MakeAdmin,
    /// Makes the admin a plain member again (`remove_admin_ids[]`).
    RemoveAdmin,
    /// Removes the admin from the group (`remove_contact_ids[]`).
    RemoveAdminAsMember,
    // Contacts.
    FindContact,
    GetMe,
    UpdateMe,
    GetContact,
    // Blocks.
    /// Blocks the bystander.
    BlockContact,
    /// Unblocks the bystander.
    UnblockContact,
    ListBlocked,
    /// Sends into the caller's direct conversation with the bystander (the
    /// member's, for those without one).
    SendInBlockedDirect,
    /// `distinct=true` with the bystander: the Blocked's blocker, whom the
    /// Blocker blocked.
    CreateDirectWithBlocker,
    /// Adds the bystander (the Blocked's blocker) to the caller's own group.
    AddBlockerToGroup,
    // Reports.
    /// Reports the creator's message.
    ReportMessage,
    /// Reports the bystander.
    ReportContact,
}

/// Whether `op` only reads (docs/api.md: GET by id opens a conversation, so that
/// one writes).
pub(super) fn is_read(op: Op) -> bool {
    matches!(
        op,
        Op::ListAllMessages
            | Op::ListConversationMessages
            | Op::GetMessage
            | Op::ListEdits
            | Op::SearchMessages
            | Op::SearchConversation
            // Typing changes nothing stored.
            | Op::Typing
            | Op::ListConversations
            | Op::ListGroupConversations
            | Op::ListGroups
            | Op::GetGroup
            | Op::GetMembers
            | Op::FindContact
            | Op::GetMe
            | Op::GetContact
            | Op::ListBlocked
    )
}

/// One request: method, path and form body (none when empty).
pub(super) struct Req {
    pub(super) method: Method,
    pub(super) path: String,
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
pub(super) fn request(cast: &Cast, fx: &Fixture, op: Op, who: &User) -> (Req, Option<String>) {
    use Method as M;
    let group = format!("/v1/groups/{}", fx.group);
    let conv = format!("/v1/conversations/{}", fx.conversation);
    let msg = format!("/v1/messages/{}", fx.message);
    let bea = &fx.bystander;
    let block = format!("/v1/contacts/{}/block", bea.id);
    let r = match op {
        Op::ListAllMessages => {
            let r = req(M::GET, "/v1/messages?limit=100".into(), &[]);
            return (r, Some(fx.message.clone()));
        }
        Op::ListConversationMessages => {
            let path = format!("/v1/messages?limit=100&conversation_id={}", fx.conversation);
            return (req(M::GET, path, &[]), Some(fx.message.clone()));
        }
        Op::SearchMessages => {
            let r = req(
                M::GET,
                "/v1/messages/search?query=HELLO&limit=100".into(),
                &[],
            );
            return (r, Some(fx.message.clone()));
        }
        Op::SearchConversation => {
            let path = format!(
                "/v1/messages/search?query=hello&limit=100&conversation_id={}",
                fx.conversation
            );
            return (req(M::GET, path, &[]), Some(fx.message.clone()));
        }
        Op::SendMessage => req(
            M::POST,
            "/v1/messages".into(),
            &[("conversation_id", &fx.conversation), ("message", "me too")],
        ),
        Op::GetMessage => req(M::GET, msg.clone(), &[]),
        Op::ListEdits => req(M::GET, format!("{msg}/edits"), &[]),
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
        Op::GetMembers => req(M::GET, format!("{group}/members?limit=100"), &[]),
        Op::MakeAdmin => req(M::PUT, group, &[("add_admin_ids[]", &bea.id)]),
        Op::RemoveAdmin => req(M::PUT, group, &[("remove_admin_ids[]", &cast.admin.id)]),
        Op::RemoveAdminAsMember => req(M::PUT, group, &[("remove_contact_ids[]", &cast.admin.id)]),
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
        Op::BlockContact => req(M::POST, block, &[]),
        Op::UnblockContact => req(M::DELETE, block, &[]),
        Op::ListBlocked => {
            let r = req(M::GET, "/v1/contacts/blocked?limit=100".into(), &[]);
            return (r, Some(bea.id.clone()));
        }
        Op::Typing => req(M::POST, format!("{conv}/typing"), &[]),
        Op::TypingInBlockedDirect => req(
            M::POST,
            format!("/v1/conversations/{}/typing", fx.direct_of(cast, who)),
            &[("state", "start")],
        ),
        Op::SendInBlockedDirect => req(
            M::POST,
            "/v1/messages".into(),
            &[
                ("conversation_id", fx.direct_of(cast, who)),
                ("message", "let me in"),
            ],
        ),
        Op::CreateDirectWithBlocker => req(
            M::POST,
            "/v1/conversations".into(),
            &[("contact_id", &bea.id), ("distinct", "true")],
        ),
        Op::AddBlockerToGroup => req(
            M::PUT,
            format!("/v1/groups/{}", cast.home(who)),
            &[("add_contact_ids[]", &bea.id)],
        ),
        Op::ReportMessage => req(
            M::POST,
            "/v1/reports".into(),
            &[("message_id", &fx.message), ("reason", "spam")],
        ),
        Op::ReportContact => req(
            M::POST,
            "/v1/reports".into(),
            &[
                ("contact_id", &bea.id),
                ("reason", "harassment"),
                ("description", "rude"),
            ],
        ),
    };
    (r, None)
}

pub(super) async fn send(app: &TestApp, token: Option<&str>, r: &Req) -> Resp {
    let body = (!r.form.is_empty()).then(|| {
        let pairs: Vec<(&str, &str)> = r.form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        (
            "application/x-www-form-urlencoded",
            encode_form(&pairs).into_bytes(),
        )
    });
    app.send(r.method.clone(), &r.path, token, body, &[]).await
}
