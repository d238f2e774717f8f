//! Row structs (private to the stores) and their conversions into domain
//! entities, the same for both databases.
//!
//! Domain values and entities are rebuilt through their validating
//! constructors: a stored value that no longer passes (`corrupt`), or values
//! that together break a rule of their entity (`broken`: a message with
//! eleven attachments), are reported as `StoreError::Other`, never smuggled
//! into an entity.

use confab_domain::{
    Attachment, AttachmentId, AvatarUrl, Contact, ContactId, ContactParts, ContentDigest,
    Conversation, ConversationId, ConversationKind, ConversationParts, FileSize, FileSource,
    FileType, FileUrl, Filename, GroupId, MemberState, Mentions, Message, MessageId, MessageParts,
    MessageText, PhoneNumber, Quote, QuotedMessage, Reaction, ReactionName, Reactor, Timestamp,
    Username,
};
use diesel::backend::Backend;
use diesel::expression::{
    is_aggregate, AppearsOnTable, Expression, SelectableExpression, ValidGrouping,
};
use diesel::prelude::*;
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::sql_types::{Nullable, Text};
use uuid::Uuid;

use crate::error::{broken, corrupt, inconsistent, Error};
use crate::id::DbId;
use crate::schema::{
    attachments, contacts, conversation_states, conversations, group_members, groups, messages,
    reactions, server_keys, tokens,
};
use crate::SqlBackend;

mod relations;
pub use relations::{message_with, relation_columns, JsonColumn, RelationsJson, WholeRow};

/// Conversions between domain ids and the store's id column type.
pub trait DbKey {
    fn db(&self) -> DbId;
}

macro_rules! db_key {
    ($($t:ty),*) => {$(
        impl DbKey for $t {
            fn db(&self) -> DbId {
                DbId::from(*self.as_uuid())
            }
        }
    )*};
}
db_key!(
    ContactId,
    ConversationId,
    MessageId,
    GroupId,
    AttachmentId,
    confab_domain::EditId
);

impl DbKey for Uuid {
    fn db(&self) -> DbId {
        DbId::from(*self)
    }
}

pub fn contact_id(id: DbId) -> ContactId {
    ContactId::from_uuid(id.uuid())
}
pub fn conversation_id(id: DbId) -> ConversationId {
    ConversationId::from_uuid(id.uuid())
}
pub fn message_id(id: DbId) -> MessageId {
    MessageId::from_uuid(id.uuid())
}
pub fn group_id(id: DbId) -> GroupId {
    GroupId::from_uuid(id.uuid())
}

pub fn ts(micros: i64) -> Timestamp {
    Timestamp::from_micros(micros)
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(
    table_name = contacts,
    treat_none_as_default_value = false
)]
#[cfg_attr(feature = "postgres", diesel(check_for_backend(diesel::pg::Pg)))]
#[cfg_attr(feature = "sqlite", diesel(check_for_backend(diesel::sqlite::Sqlite)))]
pub struct ContactRow {
    pub id: DbId,
    pub username: String,
    pub username_folded: String,
    pub phone_number: String,
    pub avatar_url: String,
    pub last_active_at: i64,
    pub created_at: i64,
}

impl From<&Contact> for ContactRow {
    fn from(c: &Contact) -> Self {
        Self {
            id: c.id().db(),
            username: c.username().as_str().to_owned(),
            username_folded: c.username().folded(),
            phone_number: c.phone_number().as_str().to_owned(),
            avatar_url: c.avatar_url().as_str().to_owned(),
            last_active_at: c.last_active_at().micros(),
            created_at: c.created_at().micros(),
        }
    }
}

impl TryFrom<ContactRow> for Contact {
    type Error = Error;
    fn try_from(r: ContactRow) -> Result<Self, Error> {
        let id = contact_id(r.id);
        Contact::new(ContactParts {
            id,
            username: Username::new(r.username).map_err(|e| corrupt("username", e))?,
            phone_number: PhoneNumber::new(r.phone_number)
                .map_err(|e| corrupt("phone_number", e))?,
            avatar_url: AvatarUrl::new(r.avatar_url).map_err(|e| corrupt("avatar_url", e))?,
            last_active_at: ts(r.last_active_at),
            created_at: ts(r.created_at),
        })
        .map_err(|e| broken(format!("contact {id}"), e))
    }
}

/// The profile attributes a contact may change; `None` leaves a column alone.
#[derive(AsChangeset)]
#[diesel(table_name = contacts)]
pub struct ContactChangeset {
    pub phone_number: Option<String>,
    pub avatar_url: Option<String>,
}

#[derive(Insertable)]
#[diesel(table_name = tokens, treat_none_as_default_value = false)]
pub struct TokenRow {
    pub id: DbId,
    pub contact_id: DbId,
    pub token_hash: String,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
    pub last_used_at: Option<i64>,
}

/// A token as listed (never its hash).
#[derive(Queryable, Selectable)]
#[diesel(table_name = tokens)]
#[cfg_attr(feature = "postgres", diesel(check_for_backend(diesel::pg::Pg)))]
#[cfg_attr(feature = "sqlite", diesel(check_for_backend(diesel::sqlite::Sqlite)))]
pub struct TokenInfoRow {
    pub id: DbId,
    pub contact_id: DbId,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub last_used_at: Option<i64>,
}

impl From<TokenInfoRow> for confab_ports::TokenInfo {
    fn from(row: TokenInfoRow) -> Self {
        Self {
            id: row.id.uuid(),
            contact_id: contact_id(row.contact_id),
            created_at: Timestamp::from_micros(row.created_at),
            expires_at: row.expires_at.map(Timestamp::from_micros),
            last_used_at: row.last_used_at.map(Timestamp::from_micros),
        }
    }
}

#[derive(Insertable)]
#[diesel(table_name = server_keys, treat_none_as_default_value = false)]
pub struct NewServerKeyRow {
    pub id: DbId,
    pub name: String,
    pub key_hash: String,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

/// A server key as read (never its hash).
#[derive(Queryable, Selectable)]
#[diesel(table_name = server_keys)]
#[cfg_attr(feature = "postgres", diesel(check_for_backend(diesel::pg::Pg)))]
#[cfg_attr(feature = "sqlite", diesel(check_for_backend(diesel::sqlite::Sqlite)))]
pub struct ServerKeyRow {
    pub id: DbId,
    pub name: String,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

impl From<ServerKeyRow> for confab_ports::ServerKey {
    fn from(row: ServerKeyRow) -> Self {
        Self {
            id: row.id.uuid(),
            name: row.name,
            created_at: Timestamp::from_micros(row.created_at),
            last_used_at: row.last_used_at.map(Timestamp::from_micros),
            revoked_at: row.revoked_at.map(Timestamp::from_micros),
        }
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(
    table_name = groups,
    treat_none_as_default_value = false
)]
#[cfg_attr(feature = "postgres", diesel(check_for_backend(diesel::pg::Pg)))]
#[cfg_attr(feature = "sqlite", diesel(check_for_backend(diesel::sqlite::Sqlite)))]
pub struct GroupRow {
    pub id: DbId,
    pub name: String,
    pub description: String,
    pub avatar_url: String,
    pub created_by: DbId,
    pub created_at: i64,
    pub member_count: i64,
}

#[derive(AsChangeset)]
#[diesel(table_name = groups)]
pub struct GroupChangeset {
    pub name: Option<String>,
    pub description: Option<String>,
    pub avatar_url: Option<String>,
}

#[derive(Insertable)]
#[diesel(table_name = group_members)]
pub struct GroupMemberRow {
    pub group_id: DbId,
    pub contact_id: DbId,
    pub role: &'static str,
    pub seq: i64,
    pub joined_at: i64,
    pub from_position: i64,
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(
    table_name = conversations,
    treat_none_as_default_value = false
)]
#[cfg_attr(feature = "postgres", diesel(check_for_backend(diesel::pg::Pg)))]
#[cfg_attr(feature = "sqlite", diesel(check_for_backend(diesel::sqlite::Sqlite)))]
pub struct ConversationRow {
    pub id: DbId,
    pub group_id: Option<DbId>,
    pub creator_id: DbId,
    pub peer_id: Option<DbId>,
    pub pinned_message_id: Option<DbId>,
    pub last_active_at: Option<i64>,
    pub activity_at: i64,
    pub created_at: i64,
}

impl From<&Conversation> for ConversationRow {
    fn from(c: &Conversation) -> Self {
        let (group_id, peer_id) = match c.kind() {
            ConversationKind::Direct { peer_id } => (None, Some(peer_id.db())),
            ConversationKind::Group { group_id } => (Some(group_id.db()), None),
        };
        Self {
            id: c.id().db(),
            group_id,
            creator_id: c.creator_id().db(),
            peer_id,
            pinned_message_id: c.pinned_message_id().map(|m| m.db()),
            last_active_at: c.last_active_at().map(Timestamp::micros),
            activity_at: c.last_active_at().unwrap_or(c.created_at()).micros(),
            created_at: c.created_at().micros(),
        }
    }
}

impl TryFrom<ConversationRow> for Conversation {
    type Error = Error;
    fn try_from(r: ConversationRow) -> Result<Self, Error> {
        let kind = match (r.group_id, r.peer_id) {
            (Some(g), None) => ConversationKind::Group {
                group_id: group_id(g),
            },
            (None, Some(p)) => ConversationKind::Direct {
                peer_id: contact_id(p),
            },
            _ => {
                return Err(inconsistent(format!(
                    "conversation {} has neither exactly a group nor a peer",
                    conversation_id(r.id)
                )))
            }
        };
        let id = conversation_id(r.id);
        Conversation::new(ConversationParts {
            id,
            kind,
            creator_id: contact_id(r.creator_id),
            pinned_message_id: r.pinned_message_id.map(message_id),
            last_active_at: r.last_active_at.map(ts),
            created_at: ts(r.created_at),
        })
        .map_err(|e| broken(format!("conversation {id}"), e))
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(
    table_name = conversation_states,
    treat_none_as_default_value = false
)]
#[cfg_attr(feature = "postgres", diesel(check_for_backend(diesel::pg::Pg)))]
#[cfg_attr(feature = "sqlite", diesel(check_for_backend(diesel::sqlite::Sqlite)))]
pub struct StateRow {
    pub conversation_id: DbId,
    pub contact_id: DbId,
    pub is_pinned: bool,
    pub is_muted: bool,
    pub archived_at: Option<i64>,
    pub last_opened_at: Option<i64>,
    pub read_seq: i64,
    pub own_after: i64,
    pub mention_unread: i64,
}

impl StateRow {
    /// A new row with `state`'s own attributes, having read nothing
    /// and sent nothing (see the migration `big_groups`: a member's
    /// unread count is worked out from positions, never stored).
    pub fn new(conversation: DbId, contact: DbId, state: MemberState) -> Self {
        Self {
            conversation_id: conversation,
            contact_id: contact,
            is_pinned: state.is_pinned,
            is_muted: state.is_muted,
            archived_at: state.archived_at.map(Timestamp::micros),
            last_opened_at: state.last_opened_at.map(Timestamp::micros),
            read_seq: 0,
            own_after: 0,
            mention_unread: 0,
        }
    }

    /// The member's state, with `unread` (from [`unread_sql`]).
    pub fn into_state(self, unread: i64) -> MemberState {
        MemberState {
            is_pinned: self.is_pinned,
            is_muted: self.is_muted,
            archived_at: self.archived_at.map(ts),
            last_opened_at: self.last_opened_at.map(ts),
            unread_count: u64::try_from(unread).unwrap_or(0),
            // Never more than the unread messages: a mention counted for
            // a message the member has read since is not shown.
            unread_mention_count: u64::try_from(self.mention_unread.min(unread)).unwrap_or(0),
        }
    }
}

/// A member's state from their row (absent: the default one), with
/// `unread` (from [`unread_sql`]).
pub fn member_state(row: Option<StateRow>, unread: i64) -> MemberState {
    match row {
        Some(row) => row.into_state(unread),
        None => MemberState {
            unread_count: u64::try_from(unread).unwrap_or(0),
            ..MemberState::default()
        },
    }
}

/// A member's unread count in conversation `c` (a table or alias
/// name of `conversations`) as an SQL expression, from their state row
/// `s` (an alias of `conversation_states`, all NULL when absent): the
/// messages numbered after where they read up to, less their own and
/// the gaps deleted messages from others left (migration
/// `big_groups`). A member without a state row never sent a message
/// there (a send creates the sender's row), so every gap is one from
/// others. A conversation without deletions (`deleted_count` 0) costs
/// no look at the gaps; one with them, a range of its gaps after the
/// member's position.
pub fn unread_sql(c: &str, s: &str) -> String {
    format!(
        "({c}.message_seq - COALESCE({s}.read_seq, 0) - COALESCE({s}.own_after, 0) \
         - CASE WHEN {c}.deleted_count = 0 THEN 0 ELSE ( \
             SELECT COUNT(*) FROM message_gaps gap \
             WHERE gap.conversation_id = {c}.id AND gap.seq > COALESCE({s}.read_seq, 0) \
                 AND ({s}.contact_id IS NULL OR gap.sender_id <> {s}.contact_id)) END)"
    )
}

/// A row of the inbox's statement (`queries/conversations.rs`): a
/// conversation, then the viewer's state row, absent (all NULL) when the
/// viewer never changed anything; the state's columns are prefixed
/// `state_`.
#[derive(QueryableByName)]
pub struct InboxRow {
    #[diesel(sql_type = crate::id::IdSql)]
    id: DbId,
    #[diesel(sql_type = Nullable<crate::id::IdSql>)]
    group_id: Option<DbId>,
    #[diesel(sql_type = crate::id::IdSql)]
    creator_id: DbId,
    #[diesel(sql_type = Nullable<crate::id::IdSql>)]
    peer_id: Option<DbId>,
    #[diesel(sql_type = Nullable<crate::id::IdSql>)]
    pinned_message_id: Option<DbId>,
    #[diesel(sql_type = Nullable<diesel::sql_types::BigInt>)]
    last_active_at: Option<i64>,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    activity_at: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    created_at: i64,
    #[diesel(sql_type = Nullable<crate::id::IdSql>)]
    state_contact_id: Option<DbId>,
    #[diesel(sql_type = Nullable<diesel::sql_types::Bool>)]
    state_is_pinned: Option<bool>,
    #[diesel(sql_type = Nullable<diesel::sql_types::Bool>)]
    state_is_muted: Option<bool>,
    #[diesel(sql_type = Nullable<diesel::sql_types::BigInt>)]
    state_archived_at: Option<i64>,
    #[diesel(sql_type = Nullable<diesel::sql_types::BigInt>)]
    state_last_opened_at: Option<i64>,
    #[diesel(sql_type = Nullable<diesel::sql_types::BigInt>)]
    state_read_seq: Option<i64>,
    #[diesel(sql_type = Nullable<diesel::sql_types::BigInt>)]
    state_own_after: Option<i64>,
    #[diesel(sql_type = Nullable<diesel::sql_types::BigInt>)]
    state_mention_unread: Option<i64>,
    /// The viewer's unread count ([`unread_sql`]).
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    unread: i64,
}

impl InboxRow {
    /// The columns, in the names above, of conversation `c` and state row
    /// `s` (a `LEFT JOIN`).
    pub fn columns() -> String {
        format!(
            "c.id, c.group_id, c.creator_id, c.peer_id, \
             c.pinned_message_id, c.last_active_at, c.activity_at, c.created_at, \
             s.contact_id AS state_contact_id, s.is_pinned AS state_is_pinned, \
             s.is_muted AS state_is_muted, s.archived_at AS state_archived_at, \
             s.last_opened_at AS state_last_opened_at, s.read_seq AS state_read_seq, \
             s.own_after AS state_own_after, s.mention_unread AS state_mention_unread, \
             {} AS unread",
            unread_sql("c", "s")
        )
    }

    /// The conversation, the viewer's state row, and their unread count.
    pub fn split(self) -> Result<(ConversationRow, Option<StateRow>, i64), Error> {
        let conversation = ConversationRow {
            id: self.id,
            group_id: self.group_id,
            creator_id: self.creator_id,
            peer_id: self.peer_id,
            pinned_message_id: self.pinned_message_id,
            last_active_at: self.last_active_at,
            activity_at: self.activity_at,
            created_at: self.created_at,
        };
        let unread = self.unread;
        let Some(contact_id) = self.state_contact_id else {
            return Ok((conversation, None, unread));
        };
        // The columns are NOT NULL in the table: present with the row.
        let state = match (
            self.state_is_pinned,
            self.state_is_muted,
            self.state_read_seq,
            self.state_own_after,
            self.state_mention_unread,
        ) {
            (
                Some(is_pinned),
                Some(is_muted),
                Some(read_seq),
                Some(own_after),
                Some(mention_unread),
            ) => StateRow {
                conversation_id: self.id,
                contact_id,
                is_pinned,
                is_muted,
                archived_at: self.state_archived_at,
                last_opened_at: self.state_last_opened_at,
                read_seq,
                own_after,
                mention_unread,
            },
            _ => {
                return Err(inconsistent(format!(
                    "the state row of conversation {} has NULL columns",
                    conversation_id(self.id)
                )))
            }
        };
        Ok((conversation, Some(state), unread))
    }
}

/// A member's own attributes to change; `None` leaves a column alone and
/// `archived_at: Some(None)` sets it to NULL.
#[derive(AsChangeset)]
#[diesel(table_name = conversation_states)]
pub struct StateChangeset {
    pub is_pinned: Option<bool>,
    pub is_muted: Option<bool>,
    pub archived_at: Option<Option<i64>>,
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(
    table_name = messages,
    treat_none_as_default_value = false
)]
#[cfg_attr(feature = "postgres", diesel(check_for_backend(diesel::pg::Pg)))]
#[cfg_attr(feature = "sqlite", diesel(check_for_backend(diesel::sqlite::Sqlite)))]
pub struct MessageRow {
    pub id: DbId,
    pub conversation_id: DbId,
    pub sender_id: DbId,
    pub body: String,
    pub read_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: Option<i64>,
    pub reply_to_id: Option<DbId>,
    pub parent_id: Option<DbId>,
    pub reply_count: i64,
    pub last_reply_at: Option<i64>,
    pub edited_at: Option<i64>,
    /// A JSON array of ids; NULL when it mentions no one.
    pub mentions: Option<String>,
}

/// A change to a message row; `None` leaves a column alone.
#[derive(AsChangeset)]
#[diesel(table_name = messages)]
pub struct MessageChangeset {
    pub body: Option<String>,
    /// `body` folded for search (`confab_domain::fold`), with it.
    pub body_folded: Option<String>,
    pub updated_at: Option<i64>,
    pub edited_at: Option<i64>,
    pub mentions: Option<Option<String>>,
}

#[derive(Insertable)]
#[diesel(table_name = reactions)]
pub struct NewReactionRow {
    pub message_id: DbId,
    pub name: String,
    pub contact_id: DbId,
    pub created_at: i64,
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(
    table_name = attachments,
    treat_none_as_default_value = false
)]
#[cfg_attr(feature = "postgres", diesel(check_for_backend(diesel::pg::Pg)))]
#[cfg_attr(feature = "sqlite", diesel(check_for_backend(diesel::sqlite::Sqlite)))]
pub struct AttachmentRow {
    pub id: DbId,
    pub message_id: Option<DbId>,
    pub seq: i32,
    pub filename: String,
    pub file_url: Option<String>,
    pub file_type: String,
    pub file_size: Option<i64>,
    pub created_at: i64,
    pub uploader_id: DbId,
    pub conversation_id: Option<DbId>,
    pub content_sha256: Option<String>,
}

impl AttachmentRow {
    /// The row of `a`, at place `seq` of its message (0 for an upload not
    /// attached).
    pub fn of(a: &Attachment, seq: i32) -> Self {
        let (file_url, content_sha256) = match &a.source {
            FileSource::Link(url) => (Some(url.as_str().to_owned()), None),
            FileSource::Stored(digest) => (None, Some(digest.to_hex())),
        };
        Self {
            id: a.id.db(),
            message_id: a.message_id.map(|m| m.db()),
            seq,
            filename: a.filename.as_str().to_owned(),
            file_url,
            file_type: a.file_type.as_str().to_owned(),
            file_size: a.file_size.map(FileSize::bytes),
            created_at: a.created_at.micros(),
            uploader_id: a.uploader.db(),
            conversation_id: a.conversation_id.map(|c| c.db()),
            content_sha256,
        }
    }
}

impl TryFrom<AttachmentRow> for Attachment {
    type Error = Error;
    fn try_from(r: AttachmentRow) -> Result<Self, Error> {
        let id = AttachmentId::from_uuid(r.id.uuid());
        let source = match (r.file_url, r.content_sha256) {
            (Some(url), None) => {
                FileSource::Link(FileUrl::new(url).map_err(|e| corrupt("file_url", e))?)
            }
            (None, Some(hex)) => {
                FileSource::Stored(ContentDigest::from_hex(&hex).ok_or_else(|| {
                    inconsistent(format!("attachment {id} has an unreadable digest"))
                })?)
            }
            _ => {
                return Err(inconsistent(format!(
                    "attachment {id} has not exactly one of a URL and stored bytes"
                )))
            }
        };
        Ok(Self {
            id,
            message_id: r.message_id.map(message_id),
            conversation_id: r.conversation_id.map(conversation_id),
            uploader: contact_id(r.uploader_id),
            filename: Filename::new(r.filename).map_err(|e| corrupt("filename", e))?,
            source,
            file_type: FileType::new(r.file_type).map_err(|e| corrupt("file_type", e))?,
            file_size: r
                .file_size
                .map(FileSize::new)
                .transpose()
                .map_err(|e| corrupt("file_size", e))?,
            created_at: ts(r.created_at),
        })
    }
}

/// A reactor, from the reaction's contact id and that contact's username.
pub fn reactor(id: DbId, username: String) -> Result<Reactor, Error> {
    Ok(Reactor {
        contact_id: contact_id(id),
        username: Username::new(username).map_err(|e| corrupt("username", e))?,
    })
}

/// A message's reactions from its reaction rows (name, reactor) in the
/// order they were made: a name's reaction stays where its first reaction
/// placed it, reactors in the order they reacted.
pub fn group_reactions(
    message: MessageId,
    rows: impl IntoIterator<Item = (String, Reactor)>,
) -> Result<Vec<Reaction>, Error> {
    let mut by_name: Vec<(String, Vec<Reactor>)> = Vec::new();
    for (name, reactor) in rows {
        match by_name.iter_mut().find(|(n, _)| *n == name) {
            Some((_, reactors)) => reactors.push(reactor),
            None => by_name.push((name, vec![reactor])),
        }
    }
    by_name
        .into_iter()
        .map(|(name, reactors)| {
            let name = ReactionName::new(name).map_err(|e| corrupt("reaction name", e))?;
            Reaction::new(name, reactors)
                .map_err(|e| broken(format!("reaction of message {message}"), e))
        })
        .collect()
}

/// A message's mentions as its `mentions` column holds them: a JSON
/// array of ids; NULL when it mentions no one.
pub fn mentions_json(mentions: &Mentions) -> Option<String> {
    if mentions.is_empty() {
        return None;
    }
    let ids: Vec<String> = mentions
        .contacts()
        .iter()
        .map(|c| format!("\"{c}\""))
        .collect();
    Some(format!("[{}]", ids.join(",")))
}

/// A message's mentions from its row's `mentions` column (a JSON array
/// of ids; NULL when none).
pub fn mentions_of(json: Option<&str>) -> Result<Mentions, Error> {
    let Some(json) = json else {
        return Ok(Mentions::none());
    };
    let unreadable = |e: String| inconsistent(format!("the mentions do not read: {e}"));
    let ids: Vec<String> = serde_json::from_str(json).map_err(|e| unreadable(e.to_string()))?;
    let ids = ids
        .iter()
        .map(|i| Uuid::parse_str(i).map(ContactId::from_uuid))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| unreadable(e.to_string()))?;
    Mentions::new(ids).map_err(|e| corrupt("mentions", e))
}

/// A message from its row, its sender's row, its relations and the
/// message it quotes (`None` when it quotes none, or when the one it
/// quoted is gone: then its id is all that is left).
pub fn message(
    row: MessageRow,
    sender: ContactRow,
    (reactions, attachments): (Vec<Reaction>, Vec<Attachment>),
    quoted: Option<QuotedMessage>,
) -> Result<Message, Error> {
    let id = message_id(row.id);
    let reply_to = row.reply_to_id.map(|q| match quoted {
        Some(quoted) => Quote::Message(quoted),
        None => Quote::Deleted(message_id(q)),
    });
    let mentions = mentions_of(row.mentions.as_deref())?;
    Message::new(MessageParts {
        id,
        conversation_id: conversation_id(row.conversation_id),
        sender: Contact::try_from(sender)?,
        // A message that is only its attachments has no text (docs/api.md
        // "Files and attachments").
        text: if row.body.is_empty() {
            MessageText::none()
        } else {
            MessageText::new(row.body).map_err(|e| corrupt("message text", e))?
        },
        reactions,
        attachments,
        read_at: row.read_at.map(ts),
        created_at: ts(row.created_at),
        updated_at: row.updated_at.map(ts),
        reply_to,
        parent_id: row.parent_id.map(message_id),
        reply_count: u64::try_from(row.reply_count).unwrap_or(0),
        last_reply_at: row.last_reply_at.map(ts),
        mentions,
        edited_at: row.edited_at.map(ts),
    })
    .map_err(|e| broken(format!("message {id}"), e))
}
