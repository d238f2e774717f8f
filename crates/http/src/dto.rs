//! The wire objects as OpenAPI describes them: each struct's schema is
//! derived from its fields. Timestamps are integer Unix seconds; ids are
//! lowercase and hyphenated; a field that may be null is still always
//! present (`required`).
//!
//! One writer per object: a message, a contact, an attachment, a group and
//! the page of a list are written by [`crate::wire`] alone, so their
//! structs here are schemas only and write nothing. A conversation is
//! written by the serde derive of [`ConversationDto`], its only writer.
//!
//! The doc comments of these structs and of their fields are the
//! descriptions in the OpenAPI document: what a reader of the code alone
//! needs is in `//` comments.

use confab_domain::{Conversation, ConversationView, Timestamp};
use serde::Serialize;
use utoipa::openapi::schema::{
    AdditionalProperties, ArrayBuilder, KnownFormat, ObjectBuilder, Schema, SchemaFormat, Type,
};
use utoipa::openapi::RefOr;
use utoipa::ToSchema;

fn secs(t: Timestamp) -> i64 {
    t.secs()
}

fn opt_secs(t: Option<Timestamp>) -> Option<i64> {
    t.map(Timestamp::secs)
}

/// `{"has_more": bool, "data": [...]}`.
// Schema only (nothing reads its fields): written by `wire::list`.
#[allow(dead_code)]
#[derive(Debug, ToSchema)]
pub struct ListDto<T> {
    pub has_more: bool,
    pub data: Vec<T>,
}

// The contact object (no doc comment: the schema's description would
// change). Schema only (nothing reads its fields): written by
// `wire::contact`.
#[allow(dead_code)]
#[derive(Debug, ToSchema)]
pub struct ContactDto {
    id: String,
    username: String,
    /// Only the contact themself and server keys see it; `null` for
    /// everyone else.
    #[schema(required = true)]
    phone_number: Option<String>,
    avatar_url: String,
    last_active_at: i64,
    created_at: i64,
}

// Schema only (nothing reads its fields): written by `wire`.
#[allow(dead_code)]
#[derive(Debug, ToSchema)]
pub struct AttachmentDto {
    pub id: String,
    /// `null` for an upload not attached yet.
    #[schema(required = true)]
    pub message_id: Option<String>,
    pub filename: String,
    pub file_url: String,
    pub file_type: String,
    #[schema(required = true)]
    pub file_size: Option<i64>,
    pub created_at: i64,
}

/// `POST /v1/attachments`: the multipart form of an upload.
// Schema only (set by hand below): the handler reads the parts as they
// stream in.
#[derive(Debug)]
pub struct UploadForm;

impl utoipa::PartialSchema for UploadForm {
    fn schema() -> RefOr<Schema> {
        let file = ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
            .description(Some(
                "The file; its part's filename is the attachment's name unless `filename` \
                 is given. At most CONFAB_MAX_UPLOAD_BYTES.",
            ));
        let filename = ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(255))
            .pattern(Some(r"^[^/\\\x00-\x1f\x7f-\x9f]+$"))
            .description(Some(
                "The attachment's name: 1 to 255 characters without `/`, `\\` or control \
                 characters.",
            ));
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some(
                "The parts of the upload: `file`, and optionally `filename`; any other part \
                 is refused.",
            ))
            .property("file", file)
            .required("file")
            .property("filename", filename)
            .additional_properties(Some(AdditionalProperties::FreeForm(false)))
            .into()
    }
}

impl ToSchema for UploadForm {}

/// One reaction name with its reactors' usernames: the single-key object
/// `{"like": ["alice", "bob"]}`.
// Schema only (set by hand below): written by `wire`.
#[derive(Debug)]
pub struct ReactionDto;

impl utoipa::PartialSchema for ReactionDto {
    fn schema() -> RefOr<Schema> {
        let usernames = ArrayBuilder::new().items(ObjectBuilder::new().schema_type(Type::String));
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .additional_properties(Some(usernames))
            .min_properties(Some(1))
            .max_properties(Some(1))
            .description(Some(
                "one reaction name and the usernames of its reactors, in the order they reacted",
            ))
            .into()
    }
}

impl ToSchema for ReactionDto {}

// Schema only (nothing reads its fields): written by `wire`.
#[allow(dead_code)]
#[derive(Debug, ToSchema)]
pub struct MessageDto {
    pub id: String,
    pub conversation_id: String,
    pub contact: ContactDto,
    pub message: String,
    pub reactions: Vec<ReactionDto>,
    pub attachments: Vec<AttachmentDto>,
    #[schema(required = true)]
    pub read_at: Option<i64>,
    pub created_at: i64,
    /// When anything last changed (text, reactions, attachments).
    #[schema(required = true)]
    pub updated_at: Option<i64>,
    /// The message it quotes, as that message reads now; null when it
    /// quotes none.
    #[schema(required = true)]
    pub reply_to: Option<QuoteDto>,
    /// The message whose thread it replies in; null for a message of the
    /// conversation itself.
    #[schema(required = true)]
    pub parent_id: Option<String>,
    /// The replies in its thread.
    #[schema(minimum = 0)]
    pub reply_count: u64,
    /// When its thread's latest reply was sent; null without replies.
    #[schema(required = true)]
    pub last_reply_at: Option<i64>,
    /// The ids of the members it mentions.
    pub mentions: Vec<String>,
    /// When its text last changed; null if never.
    #[schema(required = true)]
    pub edited_at: Option<i64>,
}

/// The message a reply quotes: `{"id","contact","message"}` while it
/// exists, `{"id","deleted":true}` once it is deleted (never its text).
// Schema only (nothing reads its fields): written by `wire`.
#[allow(dead_code)]
#[derive(Debug, ToSchema)]
pub struct QuoteDto {
    pub id: String,
    /// Its sender; absent once it is deleted.
    pub contact: Option<QuotedContactDto>,
    /// Its text now; absent once it is deleted.
    pub message: Option<String>,
    /// `true` once it is deleted; absent before.
    pub deleted: Option<bool>,
}

/// The sender of a quoted message.
// Schema only (nothing reads its fields): written by `wire`.
#[allow(dead_code)]
#[derive(Debug, ToSchema)]
pub struct QuotedContactDto {
    pub id: String,
    pub username: String,
}

/// An earlier text of an edited message.
// Schema only (nothing reads its fields): written by `wire`.
#[allow(dead_code)]
#[derive(Debug, ToSchema)]
pub struct EditDto {
    /// The edit's id (a cursor of the list).
    pub id: String,
    /// The text the message had until this edit.
    pub message: String,
    /// When the edit replaced it.
    pub edited_at: i64,
}

/// A conversation as the caller sees it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConversationDto {
    pub id: String,
    /// The other member of a direct conversation; null for a group one.
    #[schema(required = true)]
    pub contact_id: Option<String>,
    #[schema(required = true)]
    pub group_id: Option<String>,
    #[schema(required = true)]
    pub pinned_message_id: Option<String>,
    pub is_pinned: bool,
    pub is_muted: bool,
    #[schema(required = true)]
    pub last_active_at: Option<i64>,
    #[schema(required = true)]
    pub last_opened_at: Option<i64>,
    pub created_at: i64,
    #[schema(required = true)]
    pub archived_at: Option<i64>,
    /// The caller's messages from others that arrived after the caller
    /// last opened this conversation (all of them if never opened).
    #[schema(minimum = 0)]
    pub unread_count: u64,
    /// Those of the unread messages that mention the caller.
    #[schema(minimum = 0)]
    pub unread_mention_count: u64,
}

impl From<&ConversationView> for ConversationDto {
    fn from(v: &ConversationView) -> Self {
        let c = &v.conversation;
        Self {
            id: c.id().to_string(),
            contact_id: v.contact_id().map(|id| id.to_string()),
            group_id: c.group_id().map(|id| id.to_string()),
            pinned_message_id: c.pinned_message_id().map(|id| id.to_string()),
            is_pinned: v.state.is_pinned,
            is_muted: v.state.is_muted,
            last_active_at: opt_secs(c.last_active_at()),
            last_opened_at: opt_secs(v.state.last_opened_at),
            created_at: secs(c.created_at()),
            archived_at: opt_secs(v.state.archived_at),
            unread_count: v.state.unread_count,
            unread_mention_count: v.state.unread_mention_count,
        }
    }
}

/// A group conversation's shared attributes alone: the payload of the
/// `conversation.updated` of a change every member shares (its pinned
/// message), the same for all of them. A member's own attributes
/// (`is_pinned`, `is_muted`, `archived_at`, `last_opened_at`,
/// `unread_count`, `unread_mention_count`) are not in it: each member's
/// stay as they were. (Event payloads are not in the OpenAPI document.)
#[derive(Debug, Serialize)]
pub struct SharedConversationDto {
    pub id: String,
    /// Null: a group conversation's.
    pub contact_id: Option<String>,
    pub group_id: Option<String>,
    pub pinned_message_id: Option<String>,
    pub last_active_at: Option<i64>,
    pub created_at: i64,
}

impl From<&Conversation> for SharedConversationDto {
    fn from(c: &Conversation) -> Self {
        Self {
            id: c.id().to_string(),
            // The other member is a direct conversation's, and differs by
            // member: never shared.
            contact_id: None,
            group_id: c.group_id().map(|id| id.to_string()),
            pinned_message_id: c.pinned_message_id().map(|id| id.to_string()),
            last_active_at: opt_secs(c.last_active_at()),
            created_at: secs(c.created_at()),
        }
    }
}

// Schema only (nothing reads its fields): written by `wire::write_member`.
#[allow(dead_code)]
#[derive(Debug, ToSchema)]
pub struct GroupMemberDto {
    pub contact: ContactDto,
    #[schema(inline)]
    pub role: RoleDto,
    /// When the contact joined the group (Unix seconds).
    pub joined_at: i64,
}

// Schema only (nothing reads its fields): written by `wire`, with at most
// `wire::GROUP_EMBEDDED_MEMBERS` contacts.
#[allow(dead_code)]
#[derive(Debug, ToSchema)]
pub struct GroupDto {
    pub id: String,
    pub name: String,
    pub description: String,
    pub avatar_url: String,
    /// The first 100 members, in the order they joined (`member_count`
    /// counts them all).
    pub contacts: Vec<ContactDto>,
    /// How many members the group has.
    pub member_count: u64,
    pub created_at: i64,
}

/// A contact's token as the server API lists it: never its secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenDto {
    pub id: String,
    pub contact_id: String,
    pub created_at: i64,
    /// `null`: never expires.
    pub expires_at: Option<i64>,
    /// The token's latest request (recorded at most once a minute); `null`:
    /// not used yet.
    pub last_used_at: Option<i64>,
}

impl From<&confab_service::TokenInfo> for TokenDto {
    fn from(t: &confab_service::TokenInfo) -> Self {
        Self {
            id: t.id.to_string(),
            contact_id: t.contact_id.to_string(),
            created_at: secs(t.created_at),
            expires_at: opt_secs(t.expires_at),
            last_used_at: opt_secs(t.last_used_at),
        }
    }
}

/// A token just minted: `token` is shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct MintedTokenDto {
    pub id: String,
    /// The secret: send it as `Authorization: Bearer <token>`.
    pub token: String,
    pub contact_id: String,
    pub created_at: i64,
    /// `null`: never expires.
    pub expires_at: Option<i64>,
}

impl From<&confab_service::MintedToken> for MintedTokenDto {
    fn from(t: &confab_service::MintedToken) -> Self {
        Self {
            id: t.id.to_string(),
            token: t.token.clone(),
            contact_id: t.contact_id.to_string(),
            created_at: secs(t.created_at),
            expires_at: opt_secs(t.expires_at),
        }
    }
}

/// A webhook: its events are POSTed to `url`, signed with its secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookDto {
    pub id: String,
    pub url: String,
    /// The event types it receives; empty: every type.
    pub events: Vec<String>,
    pub created_at: i64,
    /// The signing secret: only in the answer to its creation, else absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

impl WebhookDto {
    pub fn of(w: &confab_service::Webhook, with_secret: bool) -> Self {
        Self {
            id: w.id.to_string(),
            url: w.url.clone(),
            events: w.events.iter().map(|t| t.name().to_owned()).collect(),
            created_at: secs(w.created_at),
            secret: with_secret.then(|| w.secret.expose().to_owned()),
        }
    }
}

/// A conversation's member as the server API lists it, for push
/// notifications.
// Schema only (nothing reads its fields): written by
// `routes::admin::write_conversation_member`.
#[allow(dead_code)]
#[derive(Debug, ToSchema)]
pub struct ConversationMemberDto {
    pub contact: ContactDto,
    /// Whether the member muted the conversation (then do not notify).
    pub is_muted: bool,
    /// The member's unread count (a badge).
    pub unread_count: i64,
}

/// One attempt to deliver an event to a webhook.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryDto {
    pub id: String,
    /// The event sent (`Confab-Event-Id`).
    pub event_id: String,
    /// 1 for the first attempt, 2 for the first retry, ...
    pub attempt: u32,
    /// The receiver's HTTP status; `null` when there was no answer.
    pub status: Option<u16>,
    /// Why there was no answer (a timeout, a refused address, a failed
    /// connection); `null` when there was one.
    pub error: Option<String>,
    pub attempted_at: i64,
}

impl From<&confab_service::DeliveryAttempt> for DeliveryDto {
    fn from(d: &confab_service::DeliveryAttempt) -> Self {
        Self {
            id: d.id.to_string(),
            event_id: d.event.to_string(),
            attempt: d.attempt,
            status: d.status,
            error: d.error.clone(),
            attempted_at: secs(d.at),
        }
    }
}

/// What the member may do in the group.
#[allow(dead_code)]
#[derive(Debug, ToSchema)]
#[schema(rename_all = "lowercase")]
pub enum RoleDto {
    Owner,
    Admin,
    Member,
}

// Schema only (nothing reads its fields): written by `wire::write_block`.
#[allow(dead_code)]
#[derive(Debug, ToSchema)]
pub struct BlockDto {
    pub contact: ContactDto,
    /// When the block was made (Unix seconds).
    pub created_at: i64,
}

/// Why a report was made.
#[allow(dead_code)]
#[derive(Debug, ToSchema)]
#[schema(rename_all = "lowercase")]
pub enum ReportReasonDto {
    Spam,
    Harassment,
    Inappropriate,
    Other,
}

/// Where a report stands.
#[allow(dead_code)]
#[derive(Debug, ToSchema)]
#[schema(rename_all = "lowercase")]
pub enum ReportStatusDto {
    Open,
    Resolved,
    Dismissed,
}

// Schema only (nothing reads its fields): written by `wire::write_report`.
#[allow(dead_code)]
#[derive(Debug, ToSchema)]
pub struct ReportDto {
    pub id: String,
    /// The message reported (`null` for a report of a contact).
    #[schema(required = true)]
    pub message_id: Option<String>,
    /// The contact reported; for a message, its sender.
    pub contact_id: String,
    #[schema(inline)]
    pub reason: ReportReasonDto,
    pub description: String,
    #[schema(inline)]
    pub status: ReportStatusDto,
    pub created_at: i64,
}

// Schema only (nothing reads its fields): written by `wire::write_report`
// for the operator.
#[allow(dead_code)]
#[derive(Debug, ToSchema)]
pub struct AdminReportDto {
    pub id: String,
    /// Who reported.
    pub reporter_id: String,
    /// The message reported (`null` for a report of a contact).
    #[schema(required = true)]
    pub message_id: Option<String>,
    /// The contact reported; for a message, its sender.
    pub contact_id: String,
    #[schema(inline)]
    pub reason: ReportReasonDto,
    pub description: String,
    #[schema(inline)]
    pub status: ReportStatusDto,
    pub created_at: i64,
    /// When its status last changed (Unix seconds).
    pub updated_at: i64,
}

/// A job (docs/api.md, "Jobs"): work that goes on in the background after
/// its request answered, such as a big erase.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobDto {
    pub id: String,
    /// What it does: `contact.erase`.
    pub kind: String,
    /// `running` until done, then `succeeded`.
    pub state: String,
    /// What it works on (the contact erased); `null` once an erase is
    /// done: the erased contact's id is not kept.
    pub subject_id: Option<String>,
    pub created_at: i64,
    /// `null` until done.
    pub finished_at: Option<i64>,
    /// The batches done so far (each a short transaction).
    pub batches_done: i64,
}

impl From<&confab_service::Job> for JobDto {
    fn from(j: &confab_service::Job) -> Self {
        Self {
            id: j.id.to_string(),
            kind: j.kind.as_str().to_owned(),
            state: j.state.as_str().to_owned(),
            subject_id: j.subject.map(|s| s.to_string()),
            created_at: secs(j.created_at),
            finished_at: opt_secs(j.finished_at),
            batches_done: j.progress,
        }
    }
}
