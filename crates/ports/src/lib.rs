//! confab's ports: the storage traits the use cases need, plus the clock and
//! the id generator, so that the service can be tested with mocks (feature
//! `mocks`) and run on any store.
//!
//! Depends only on the domain. Never on diesel, actix or any adapter.
//!
//! Every storage method is one unit of work: it commits entirely or not at
//! all. Visibility ("is the viewer a member?") is answered by the store in the
//! same query that loads the data, so that a membership change is seen at once.
//!
//! Every write of the API takes an [`Outbox`]: the events the change makes
//! (API.md section 11). The store writes them, with their recipients
//! resolved and their payloads rendered from what it wrote, in the write's
//! own transaction: a committed change has its events, a failed or refused
//! one (an error) has none.

#![warn(missing_docs)]

use async_trait::async_trait;
use confab_domain::{
    AddAttachment, AvatarUrl, Contact, ContactId, ContactProfilePatch, Conversation,
    ConversationId, ConversationView, DomainError, Group, GroupDescription, GroupId, GroupMember,
    GroupName, GroupRole, MemberStatePatch, Message, MessageId, MessageText, Page, Paged,
    PinnedMessageChange, ReactionName, Timestamp,
};
use uuid::Uuid;

mod budget;
pub use budget::{DbBudget, WithBudget};
mod events;
pub use events::{
    EventSignal, EventStore, EventWithRecipients, FanOutBatch, FanOutLimits, NoSignal, Outbox,
    PayloadRenderer, StoredEvent,
};
#[cfg(feature = "mocks")]
pub use events::{MockEventSignal, MockEventStore, MockPayloadRenderer};
mod attachments;
#[cfg(feature = "mocks")]
pub use attachments::MockAttachmentStore;
pub use attachments::{AttachmentFilter, AttachmentStore};
mod files;
pub use files::{ByteRange, FileReader, FileStorage, FileWriter};
#[cfg(feature = "mocks")]
pub use files::{MockFileReader, MockFileStorage, MockFileWriter};
mod depth;
mod moderation;
#[cfg(feature = "mocks")]
pub use depth::MockDepthStore;
pub use depth::{DepthStore, MessageList};
#[cfg(feature = "mocks")]
pub use moderation::MockModerationStore;
pub use moderation::{Made, ModerationStore};
mod webhooks;
pub use webhooks::*;
mod search;
#[cfg(feature = "mocks")]
pub use search::MockSearchStore;
pub use search::{SearchFilter, SearchStore};
mod typing;
#[cfg(feature = "mocks")]
pub use typing::MockTypingRelay;
pub use typing::{NoTyping, TypingRelay};
mod wakeups;
#[cfg(feature = "mocks")]
pub use wakeups::MockEventWakeups;
pub use wakeups::{EventWakeups, PollOnly};

/// The cause of a [`StoreError`]: the database's or pool's own error, kept
/// whole so that the log shows the full chain.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a store call failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The target of a write does not exist (any more).
    #[error("not found")]
    NotFound,
    /// A uniqueness rule refused the write (e.g. a username taken in any case).
    #[error("conflict: {0}")]
    Conflict(String),
    /// A page cursor names an item that is not in the list being paged.
    #[error("cursor is not in the list")]
    CursorNotFound,
    /// A domain rule that must be checked atomically with the write refused it
    /// (e.g. the 33rd reaction name, the 11th attachment, a pinned message
    /// that is not in the conversation).
    #[error(transparent)]
    Rule(#[from] DomainError),
    /// The idempotency key a write was to complete is no longer held by its
    /// request (its lease ran out and a retry took it over): nothing was
    /// written.
    #[error("idempotency key no longer held")]
    ClaimLost,
    /// The database cannot be reached (connection refused, pool timed out).
    /// The source says why.
    #[error("database unavailable")]
    Unavailable(#[source] BoxError),
    /// Anything else. The source is for the log, never for a client.
    #[error("store failure")]
    Other(#[source] BoxError),
}

/// The current time. A port so tests can pin it.
#[cfg_attr(feature = "mocks", mockall::automock)]
pub trait Clock: Send + Sync {
    /// The time now, to the microsecond: what the use cases stamp changes
    /// with and compare deadlines (token expiry, leases) against.
    fn now(&self) -> Timestamp;
}

/// New identifiers (UUIDv7 in production: time-ordered, unguessable enough
/// for ids, never secrets).
#[cfg_attr(feature = "mocks", mockall::automock)]
pub trait IdGenerator: Send + Sync {
    /// A fresh identifier, never returned before: for new contacts,
    /// conversations, messages, groups, tokens, events and claims.
    fn new_id(&self) -> Uuid;
}

/// Contacts: the users of the service.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait ContactStore: Send + Sync {
    /// Stores a new contact, with the `outbox`'s events (`contact.created`).
    /// # Errors
    /// - MUST return `Conflict` when the username is taken in any letter case.
    async fn create_contact(&self, contact: Contact, outbox: Outbox)
        -> Result<Contact, StoreError>;
    /// The contact with this id, if any.
    async fn contact(&self, id: ContactId) -> Result<Option<Contact>, StoreError>;
    /// The contact with this username compared case-insensitively, if any.
    async fn contact_by_username(&self, username: &str) -> Result<Option<Contact>, StoreError>;
    /// Changes the submitted profile attributes; returns the contact. Writes
    /// the `outbox`'s events (`contact.updated`, payload the contact as
    /// returned) when the patch is not empty.
    /// # Errors
    /// - MUST return `NotFound` when the contact does not exist.
    async fn update_contact(
        &self,
        id: ContactId,
        patch: ContactProfilePatch,
        outbox: Outbox,
    ) -> Result<Contact, StoreError>;
    /// Records activity: sets `last_active_at` to `at` if it is later. No
    /// event: activity is recorded on requests, an event each would flood
    /// every stream.
    async fn touch_contact(&self, id: ContactId, at: Timestamp) -> Result<(), StoreError>;
    /// A page of every contact, newest first (`created_at` desc, id desc);
    /// with `username`, only the contact of that username compared
    /// case-insensitively (at most one). For the server API, never for
    /// contacts: they find each other by username only.
    /// # Errors
    /// - MUST return `CursorNotFound` when the cursor is not a contact.
    async fn list_contacts(
        &self,
        username: Option<String>,
        page: Page<ContactId>,
    ) -> Result<Paged<Contact>, StoreError>;
    /// What erasing the contact will delete and change, from which the
    /// erase's events are made; `None` when there is no such contact.
    async fn erase_plan(&self, id: ContactId) -> Result<Option<ErasePlan>, StoreError>;
    /// Erases the contact (the right to be forgotten, API.md section 14),
    /// in one transaction: its direct conversations, its messages in
    /// groups, its memberships (a group it was the only member of is
    /// deleted; one whose last owner it was passes ownership to its oldest
    /// admin, else its oldest member), its reactions, states, tokens and
    /// idempotency keys, and the contact. What others wrote stays; every
    /// kept event or stored answer that showed the contact keeps nothing of
    /// it. Whatever the contact wrote after the plan was read goes too
    /// (without an event of its own).
    /// # Errors
    /// - MUST return `NotFound` when there is no such contact.
    async fn erase_contact(&self, erasure: Erasure) -> Result<(), StoreError>;
    /// The messages `contact` sent, oldest first (by id), at most `limit`
    /// after `after` (from the first when `None`): a page of its export.
    async fn messages_sent(
        &self,
        contact: ContactId,
        after: Option<MessageId>,
        limit: u32,
    ) -> Result<Vec<Message>, StoreError>;
    /// The reactions `contact` made, in the order made, at most `limit`
    /// after the one numbered `after` (0: from the first): a page of its
    /// export.
    async fn reactions_made(
        &self,
        contact: ContactId,
        after: i64,
        limit: u32,
    ) -> Result<Vec<ReactionMade>, StoreError>;
}

/// A reaction a contact made, as its export lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReactionMade {
    /// Its number: the order reactions were made in (a page cursor).
    pub seq: i64,
    /// The message reacted to.
    pub message_id: MessageId,
    /// The reaction's name.
    pub name: String,
    /// When it was made.
    pub created_at: Timestamp,
}

/// What erasing a contact touches ([`ContactStore::erase_plan`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErasePlan {
    /// Its direct conversations: deleted (`conversation.deleted`).
    pub direct_conversations: Vec<ConversationId>,
    /// The messages it sent in group conversations: deleted
    /// (`message.deleted`), each with its conversation.
    pub group_messages: Vec<(MessageId, ConversationId)>,
    /// The groups it leaves (`group.updated`).
    pub groups_left: Vec<GroupId>,
    /// The groups it was the only member of: deleted (`group.deleted`).
    pub groups_deleted: Vec<GroupId>,
}

/// An erase to carry out ([`ContactStore::erase_contact`]).
#[derive(Clone)]
pub struct Erasure {
    /// The contact erased.
    pub contact: ContactId,
    /// The plan its events were made from.
    pub plan: ErasePlan,
    /// `conversation.deleted` of its direct conversations and
    /// `message.deleted` of its group messages.
    pub outbox: Outbox,
    /// Each group's own event (`group.updated` when it leaves,
    /// `group.deleted` when the group goes with it).
    pub groups: Vec<(GroupId, Outbox)>,
    /// When it is done.
    pub at: Timestamp,
}

/// A token to store. Only the hash of the secret is ever stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewToken {
    /// Names the token.
    pub id: Uuid,
    /// The contact the token authenticates; it must exist.
    pub contact_id: ContactId,
    /// Lowercase hex SHA-256 of the secret.
    pub hash: String,
    /// When the token was issued.
    pub created_at: Timestamp,
    /// The token is refused from this instant on; `None`: it never expires
    /// (it can still be revoked).
    pub expires_at: Option<Timestamp>,
}

/// Credentials: contacts' access tokens and the server keys of app backends.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait TokenStore: Send + Sync {
    /// Stores a new, live token for its contact.
    /// # Errors
    /// - MUST return `NotFound` when the contact does not exist.
    async fn insert_token(&self, token: NewToken) -> Result<(), StoreError>;
    /// The contact holding the token with this hash, when that token is
    /// neither revoked nor expired at `now`.
    async fn contact_for_token(
        &self,
        hash: &str,
        now: Timestamp,
    ) -> Result<Option<Contact>, StoreError>;
    /// Revokes every live token of the contact (neither revoked nor expired
    /// at `at`), recording `at` as their revocation time; returns how many
    /// (0 when it has none).
    async fn revoke_tokens(&self, contact_id: ContactId, at: Timestamp) -> Result<u64, StoreError>;
    /// Revokes the token `id` if it is live at `at`, recording `at`;
    /// returns its contact, `None` when there is no such live token.
    async fn revoke_token(&self, id: Uuid, at: Timestamp) -> Result<Option<ContactId>, StoreError>;
    /// A page of the contact's live tokens (neither revoked nor expired at
    /// `now`), newest first (`created_at` desc, id desc).
    /// # Errors
    /// - MUST return `NotFound` when the contact does not exist.
    /// - MUST return `CursorNotFound` when the cursor is not a token of the
    ///   contact.
    async fn list_tokens(
        &self,
        contact_id: ContactId,
        now: Timestamp,
        page: Page<Uuid>,
    ) -> Result<Paged<TokenInfo>, StoreError>;
    /// Records a request with the token of this hash: sets its
    /// `last_used_at` to `at` if that is later (no event).
    async fn touch_token(&self, hash: &str, at: Timestamp) -> Result<(), StoreError>;
    /// Stores an event ticket for the live token with `token_hash` (neither
    /// revoked nor expired at `created_at`).
    /// # Errors
    /// - MUST return `NotFound` when there is no such live token.
    async fn insert_ticket(&self, ticket: NewTicket) -> Result<(), StoreError>;
    /// The holder of the ticket with this hash, when the ticket has not
    /// expired at `now` and its token is live at `now`.
    async fn ticket_holder(
        &self,
        hash: &str,
        now: Timestamp,
    ) -> Result<Option<TicketHolder>, StoreError>;
    /// Deletes at most `batch` tickets that expired before `before`;
    /// returns how many.
    async fn prune_tickets(&self, before: Timestamp, batch: u32) -> Result<u64, StoreError>;
    /// Stores a new, live server key.
    /// # Errors
    /// - MUST return `Conflict` when the hash is already stored.
    async fn insert_server_key(&self, key: NewServerKey) -> Result<(), StoreError>;
    /// The live (not revoked) server key with this hash.
    async fn server_key(&self, hash: &str) -> Result<Option<ServerKey>, StoreError>;
    /// Every server key, revoked ones included, oldest first.
    async fn list_server_keys(&self) -> Result<Vec<ServerKey>, StoreError>;
    /// Revokes the key `id` at `at`; returns it as revoked (its earlier
    /// revocation time when it was revoked already), `None` when there is
    /// no such key.
    async fn revoke_server_key(
        &self,
        id: Uuid,
        at: Timestamp,
    ) -> Result<Option<ServerKey>, StoreError>;
    /// Records a request with the key: sets its `last_used_at` to `at` if
    /// that is later.
    async fn touch_server_key(&self, id: Uuid, at: Timestamp) -> Result<(), StoreError>;
}

/// An event ticket to store (a browser's credential for `GET
/// /v1/events`): only the hash of its secret is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTicket {
    /// Lowercase hex SHA-256 of the ticket's secret.
    pub hash: String,
    /// The hash of the token that makes it: the ticket lives no longer
    /// than that token.
    pub token_hash: String,
    /// When it was made; the token must be live then.
    pub created_at: Timestamp,
    /// The ticket is refused from this instant on.
    pub expires_at: Timestamp,
}

/// Whom a live event ticket authenticates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TicketHolder {
    /// The contact of the token that made the ticket.
    pub contact: Contact,
    /// That token's hash: a stream opened with the ticket ends when the
    /// token is revoked.
    pub token_hash: String,
}

/// A token as the server API lists it: never its secret nor its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenInfo {
    /// Names the token (to revoke it alone).
    pub id: Uuid,
    /// The contact it authenticates.
    pub contact_id: ContactId,
    /// When it was issued.
    pub created_at: Timestamp,
    /// When it stops being accepted; `None`: never.
    pub expires_at: Option<Timestamp>,
    /// Its latest request (recorded at most once a minute); `None`: not
    /// used yet.
    pub last_used_at: Option<Timestamp>,
}

/// A server key to store. Only the hash of the secret is ever stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewServerKey {
    /// Names the key.
    pub id: Uuid,
    /// The operator's name for it (what it is for).
    pub name: String,
    /// Lowercase hex SHA-256 of the secret.
    pub hash: String,
    /// When the key was made.
    pub created_at: Timestamp,
}

/// A server key as stored: never its secret nor its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerKey {
    /// Names the key (the request log's `actor`).
    pub id: Uuid,
    /// The operator's name for it.
    pub name: String,
    /// When it was made.
    pub created_at: Timestamp,
    /// Its latest request (recorded at most once a minute); `None`: not
    /// used yet.
    pub last_used_at: Option<Timestamp>,
    /// When it was revoked; `None`: live.
    pub revoked_at: Option<Timestamp>,
}

/// A member of a conversation as the server API lists it: for push
/// notifications, whether they muted it and how many messages they have
/// not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationMember {
    /// The member.
    pub contact: Contact,
    /// Whether the member muted the conversation.
    pub is_muted: bool,
    /// The member's unread count, as their conversation list shows it.
    pub unread_count: u64,
}

/// Filters of the conversation list; `None` filters nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConversationFilter {
    /// `Some(true)`: only those the viewer muted; `Some(false)`: only those
    /// it did not.
    pub muted: Option<bool>,
    /// `Some(true)`: only those the viewer archived; `Some(false)`: only
    /// those it did not (or unarchived).
    pub archived: Option<bool>,
    /// `Some(true)`: only those the viewer pinned for itself; `Some(false)`:
    /// only those it did not. The viewer's own pin, not the shared pinned
    /// message.
    pub pinned: Option<bool>,
    /// Only the conversations of this group (none when the viewer is not
    /// its member); direct conversations never match.
    pub group_id: Option<GroupId>,
}

/// Conversations and each member's own state in them.
///
/// A contact is a member of a direct conversation when it is its creator or
/// its peer, and of a group conversation while it is a member of the group.
/// Per-member state a member never changed reads as `MemberState::default()`.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait ConversationStore: Send + Sync {
    /// Stores a new conversation with the `outbox`'s events
    /// (`conversation.created`, each member's payload its own view); with a
    /// `completion`, stores its response in the same transaction.
    /// # Errors
    /// - MUST return `NotFound` when the peer contact or the group does not exist.
    /// - MUST return `ClaimLost`, writing nothing, when the completion's
    ///   claim is no longer held.
    async fn create_conversation(
        &self,
        conversation: Conversation,
        outbox: Outbox,
        completion: Option<Completion<()>>,
    ) -> Result<(), StoreError>;
    /// A page of the conversation's members with their mute state and
    /// unread count (server API): a direct conversation's creator then
    /// peer, a group conversation's members in the order they joined (a
    /// cursor names a member); `None` when there is no such conversation.
    /// # Errors
    /// - MUST return `CursorNotFound` when the cursor is not a member.
    async fn conversation_members(
        &self,
        id: ConversationId,
        page: Page<ContactId>,
    ) -> Result<Option<Paged<ConversationMember>>, StoreError>;
    /// The oldest direct conversation between `a` and `b` (either of them
    /// its creator), if any.
    async fn direct_conversation_between(
        &self,
        a: ContactId,
        b: ContactId,
    ) -> Result<Option<ConversationId>, StoreError>;
    /// The conversation as `viewer` sees it; `None` when it does not exist or
    /// `viewer` is not a member.
    async fn conversation_for(
        &self,
        viewer: ContactId,
        id: ConversationId,
    ) -> Result<Option<ConversationView>, StoreError>;
    /// The viewer's conversations, latest activity first
    /// (`COALESCE(last_active_at, created_at)` desc, then id desc).
    /// # Errors
    /// - MUST return `CursorNotFound` when the cursor is not in this filtered list.
    async fn list_conversations(
        &self,
        viewer: ContactId,
        filter: ConversationFilter,
        page: Page<ConversationId>,
    ) -> Result<Paged<ConversationView>, StoreError>;
    /// Opens the conversation for `viewer` at `at`, in one transaction: the
    /// viewer's `last_opened_at` becomes `at`, and every message from another
    /// sender whose `read_at` is null gets `read_at = at`. Writes the
    /// `outbox`'s events: `conversation.updated` with the view returned, and
    /// for a `Subject::MessagesMarkedRead` event one `message.updated` per
    /// message marked read (each with its own new id, payload the message
    /// as read), none when none was.
    /// # Errors
    /// - MUST return `NotFound` when it does not exist or viewer is not a member.
    async fn open_conversation(
        &self,
        viewer: ContactId,
        id: ConversationId,
        at: Timestamp,
        outbox: Outbox,
    ) -> Result<ConversationView, StoreError>;
    /// Changes the shared pinned message (if given) and the viewer's own
    /// state, in one transaction; returns the new view. Writes the
    /// `outbox`'s events (`conversation.updated`): for the viewer alone, its
    /// payload the view returned; for every member, each with their own
    /// view as payload.
    /// # Errors
    /// - MUST return `NotFound` when it does not exist or viewer is not a member.
    /// - MUST return `Rule(Invalid { field: PinnedMessage, rule:
    ///   OutsideConversation })` when the message to pin is not (any more) in
    ///   this conversation.
    async fn update_conversation(
        &self,
        viewer: ContactId,
        id: ConversationId,
        pinned: Option<PinnedMessageChange>,
        patch: MemberStatePatch,
        outbox: Outbox,
    ) -> Result<ConversationView, StoreError>;
    /// Deletes the conversation with all its messages, their reactions and
    /// attachments, and every member's state, when `by` is (still) a member
    /// (checked in the same statement). Writes the `outbox`'s events
    /// (`conversation.deleted`) for the members it had before.
    /// # Errors
    /// - MUST return `NotFound` when it does not exist or `by` is not a member.
    async fn delete_conversation(
        &self,
        id: ConversationId,
        by: ContactId,
        outbox: Outbox,
    ) -> Result<(), StoreError>;
}

/// A message to append, as the sender gave it: a plain carrier, unchecked.
/// The store builds the message it writes through
/// [`confab_domain::Message::new`], which checks the rules between its
/// parts (see [`MessageStore::append_message`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMessage {
    /// The new message's id.
    pub id: MessageId,
    /// The conversation it is sent to.
    pub conversation_id: ConversationId,
    /// The caller: the store checks its membership in the write itself and
    /// returns it as the message's sender without reading it back.
    pub sender: Contact,
    /// What the message says.
    pub text: MessageText,
    /// Its attachments, kept in this order: new ones by URL with their
    /// new ids, and the sender's own uploads, which the store attaches
    /// (refusing, as `Rule` on `Field::Upload(i)`, one that is not the
    /// sender's or is attached already); at most
    /// [`confab_domain::MAX_ATTACHMENTS`].
    pub attachments: Vec<AddAttachment>,
    /// When it was sent: the message's and its attachments' `created_at`,
    /// and the conversation's new `last_active_at`.
    pub created_at: Timestamp,
    /// The message it quotes, as read by the service (a message of the
    /// same conversation, checked there).
    pub reply_to: Option<confab_domain::Quote>,
    /// The message whose thread it replies in (a top-level message of the
    /// same conversation, checked by the service): its `reply_count` and
    /// `last_reply_at` move in the same transaction.
    pub parent_id: Option<MessageId>,
    /// The members it mentions (checked by the service): each one's unread
    /// mention count grows in the same transaction, the sender's never.
    pub mentions: confab_domain::Mentions,
}

/// Changes to a message, applied together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageChange {
    /// The new text; `None` keeps it. A text equal to the old one changes
    /// nothing.
    pub text: Option<MessageText>,
    /// Reactions added in the name of `reactor`; ones it has already are skipped.
    pub add_reactions: Vec<ReactionName>,
    /// The caller: it reacts, and it must (still) be a member of the
    /// message's conversation.
    pub reactor: ContactId,
    /// Appended after the existing attachments, in this order (uploads as
    /// in [`NewMessage::attachments`]).
    pub add_attachments: Vec<AddAttachment>,
    /// The members it mentions from now on; `None` keeps them. Those newly
    /// mentioned for whom it is unread count one more unread mention,
    /// those no longer mentioned one fewer.
    pub mentions: Option<confab_domain::Mentions>,
    /// The id the text it replaces is kept under, when the text changes.
    pub edit_id: confab_domain::EditId,
    /// Becomes `updated_at` if anything actually changed (and `edited_at`
    /// when the text did: the text it replaces is kept as an edit).
    pub at: Timestamp,
}

/// Messages with their reactions and attachments.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait MessageStore: Send + Sync {
    /// Appends a message with its attachments and sets the conversation's
    /// `last_active_at` to the message's `created_at`, in one transaction
    /// that also checks the sender's membership (so that a member removed
    /// concurrently cannot post). Returns the message as stored, built from
    /// what was written (no read back), and writes the `outbox`'s events
    /// (`message.created`, payload the message returned). With a
    /// `completion`, stores its response in the same transaction.
    /// # Errors
    /// - MUST return `NotFound` when the conversation does not exist or the
    ///   sender is not a member of it.
    /// - MUST return `Rule(..)`, writing nothing, when the message breaks a
    ///   rule of [`confab_domain::Message::new`] (more than
    ///   [`confab_domain::MAX_ATTACHMENTS`] attachments).
    /// - MUST return `ClaimLost`, writing nothing, when the completion's
    ///   claim is no longer held.
    async fn append_message(
        &self,
        message: NewMessage,
        outbox: Outbox,
        completion: Option<Completion<Message>>,
    ) -> Result<Message, StoreError>;
    /// The message with this id, when `viewer` is a member of its
    /// conversation (checked in the same query); else `None`.
    async fn message_for(
        &self,
        viewer: ContactId,
        id: MessageId,
    ) -> Result<Option<Message>, StoreError>;
    /// Messages of the viewer's conversations (or of one of them), newest
    /// first (`created_at` desc, then id desc). Senders, reactions and
    /// attachments of a page are loaded with a fixed number of queries.
    /// # Errors
    /// - MUST return `NotFound` when the list's conversation, or the
    ///   message whose thread it lists, does not exist or the viewer is not
    ///   a member (checked in the page's query).
    /// - MUST return `CursorNotFound` when the cursor is not in this list.
    async fn list_messages(
        &self,
        viewer: ContactId,
        list: MessageList,
        page: Page<MessageId>,
    ) -> Result<Paged<Message>, StoreError>;
    /// Applies `change` in one transaction and sets `updated_at` when
    /// anything changed (new text differing from the old, a reaction or an
    /// attachment added). The caller (`change.reactor`) must be a member of
    /// the message's conversation, checked in the transaction itself.
    /// Writes the `outbox`'s events (`message.updated` with the message
    /// returned, `attachment.created` with each appended attachment) only
    /// when anything changed.
    /// # Errors
    /// - MUST return `NotFound` when the message does not exist or the caller
    ///   is not a member.
    /// - MUST return `Rule(..)` when the message would have more than
    ///   [`confab_domain::MAX_REACTION_NAMES`] distinct reaction names or
    ///   more than [`confab_domain::MAX_ATTACHMENTS`] attachments
    ///   (checked under the message's lock, so that concurrent changes
    ///   cannot pass them together).
    async fn update_message(
        &self,
        id: MessageId,
        change: MessageChange,
        outbox: Outbox,
    ) -> Result<Message, StoreError>;
    /// Removes `reactor`'s reaction `name` (no error if it has none); sets
    /// `updated_at = at` if one was removed. `reactor` must be a member of
    /// the message's conversation, checked in the transaction itself.
    /// Writes the `outbox`'s events (`message.updated`) only when one was
    /// removed.
    /// # Errors
    /// - MUST return `NotFound` when the message does not exist or `reactor`
    ///   is not a member.
    async fn remove_reaction(
        &self,
        id: MessageId,
        reactor: ContactId,
        name: ReactionName,
        at: Timestamp,
        outbox: Outbox,
    ) -> Result<Message, StoreError>;
    /// Deletes the message with its reactions and attachments, when `by` is
    /// (still) a member of its conversation (checked in the same statement);
    /// a conversation that had it pinned gets `pinned_message_id = null`.
    /// Writes the `outbox`'s events (`message.deleted`) for the members of
    /// its conversation.
    /// # Errors
    /// - MUST return `NotFound` when it does not exist or `by` is not a member.
    async fn delete_message(
        &self,
        id: MessageId,
        by: ContactId,
        outbox: Outbox,
    ) -> Result<(), StoreError>;
}

/// A group to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewGroup {
    /// The new group's id.
    pub id: GroupId,
    /// Its name.
    pub name: GroupName,
    /// Its description.
    pub description: GroupDescription,
    /// Its picture.
    pub avatar_url: AvatarUrl,
    /// Becomes the owner and first member.
    pub created_by: ContactId,
    /// Further members (duplicates and the creator are ignored).
    pub member_ids: Vec<ContactId>,
    /// When it was created: the group's `created_at`, by which the
    /// viewer's groups are listed.
    pub created_at: Timestamp,
    /// The most members the group may have.
    pub max_members: u64,
}

/// Changes to a group, applied together. Its default changes nothing,
/// within the default limit of members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupChange {
    /// The new name; `None` keeps it.
    pub name: Option<GroupName>,
    /// The new description; `None` keeps it.
    pub description: Option<GroupDescription>,
    /// The new picture; `None` keeps it.
    pub avatar_url: Option<AvatarUrl>,
    /// Added as members (ones already in are skipped).
    pub add: Vec<ContactId>,
    /// Removed (ones not in are skipped).
    pub remove: Vec<ContactId>,
    /// Members made admins (after `add` and `remove`; admins already and
    /// the owner are skipped).
    pub add_admins: Vec<ContactId>,
    /// Admins made plain members again (others are skipped).
    pub remove_admins: Vec<ContactId>,
    /// The most members the group may have after the change.
    pub max_members: u64,
}

impl Default for GroupChange {
    fn default() -> Self {
        Self {
            name: None,
            description: None,
            avatar_url: None,
            add: Vec::new(),
            remove: Vec::new(),
            add_admins: Vec::new(),
            remove_admins: Vec::new(),
            max_members: confab_domain::DEFAULT_MAX_GROUP_MEMBERS,
        }
    }
}

/// Groups and their members.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait GroupStore: Send + Sync {
    /// Stores a new group with the `outbox`'s events (`group.created`,
    /// payload the group returned); with a `completion`, stores its
    /// response in the same transaction. Its members (the creator first,
    /// as owner, then `member_ids` in their order) joined at `at`. Returns
    /// the group as stored, with its members.
    /// # Errors
    /// - MUST return `Rule(Invalid { field: Members, rule: UnknownContacts })`
    ///   when a member id is not an existing contact.
    /// - MUST return `Rule(Invalid { field: Members, rule: TooManyMembers
    ///   })`, writing nothing, when the group would have more than
    ///   `max_members` members.
    /// - MUST return `ClaimLost`, writing nothing, when the completion's
    ///   claim is no longer held.
    async fn create_group(
        &self,
        group: NewGroup,
        at: Timestamp,
        outbox: Outbox,
        completion: Option<Completion<Group>>,
    ) -> Result<Group, StoreError>;
    /// The group with its first members (in the order they joined),
    /// their count and its owners, when `viewer` is a member; else
    /// `None`. Its cost does not grow with the group's size.
    async fn group_for(&self, viewer: ContactId, id: GroupId) -> Result<Option<Group>, StoreError>;
    /// A page of the group's members, in the order they joined (oldest
    /// first; a cursor names a member), when `viewer` is a member; else
    /// `None`.
    /// # Errors
    /// - MUST return `CursorNotFound` when the cursor is not a member.
    async fn group_members(
        &self,
        viewer: ContactId,
        id: GroupId,
        page: Page<ContactId>,
    ) -> Result<Option<Paged<GroupMember>>, StoreError>;
    /// The roles in group `id` of those of `contacts` who are its
    /// members, in no order (a non-member is left out).
    async fn member_roles(
        &self,
        id: GroupId,
        contacts: Vec<ContactId>,
    ) -> Result<Vec<(ContactId, GroupRole)>, StoreError>;
    /// The viewer's groups, newest first (`created_at` desc, id desc).
    /// # Errors
    /// - MUST return `CursorNotFound` when the cursor is not in this list.
    async fn list_groups(
        &self,
        viewer: ContactId,
        page: Page<GroupId>,
    ) -> Result<Paged<Group>, StoreError>;
    /// Applies `change` in one transaction (contacts added join at `at`,
    /// after the members already in); returns the group as it is after.
    /// Writes the `outbox`'s events (`group.updated`, payload the group
    /// returned) when anything changed, for the members after it and, of
    /// the audience's `also`, only those it removed.
    /// # Errors
    /// - MUST return `NotFound` when the group does not exist.
    /// - MUST return `Rule(Invalid { field: AddedMembers, rule:
    ///   UnknownContacts })` when an added id is not an existing contact.
    /// - MUST return `Rule(Invalid { field: AddedMembers, rule:
    ///   TooManyMembers })`, writing nothing, when the group would have
    ///   more than `max_members` members after it.
    async fn update_group(
        &self,
        id: GroupId,
        change: GroupChange,
        at: Timestamp,
        outbox: Outbox,
    ) -> Result<Group, StoreError>;
    /// Deletes the group with its conversations and their messages, with
    /// the `outbox`'s events (`group.deleted`) for the members it had.
    /// # Errors
    /// - MUST return `NotFound` when it does not exist.
    async fn delete_group(&self, id: GroupId, outbox: Outbox) -> Result<(), StoreError>;
}

/// What a request answered, kept so that a retry with the same
/// idempotency key gets it again byte for byte. The store keeps it as it
/// is given and reads nothing into it: what the code and the location mean
/// is the caller's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    /// The answer's code (the kind of outcome, in the caller's numbering),
    /// replayed as it was.
    pub code: u16,
    /// Where the answer points, when it named the created resource.
    pub location: Option<String>,
    /// The answer's body, replayed byte for byte.
    pub body: String,
}

/// A request's hold on its caller's idempotency key: only the holder may
/// complete or release it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyClaim {
    /// The caller: keys are kept per contact, so two contacts may use the
    /// same key.
    pub contact_id: ContactId,
    /// The idempotency key as the caller gave it (compared exactly).
    pub key: String,
    /// Names this holder; a takeover after the lease gives a new one.
    pub holder: Uuid,
}

/// A new claim on a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRequest {
    /// The key, its caller, and the holder to claim it for.
    pub claim: KeyClaim,
    /// Of the request (its method, path and body); a key is only ever
    /// replayed for the same request.
    pub fingerprint: String,
    /// When the claim is made: the key's creation time if it is claimed,
    /// the instant a held key's lease is judged against (it has run out
    /// when its `locked_until` is not after `now`), and the quota's day.
    pub now: Timestamp,
    /// The claim may be taken over after this (its holder died).
    pub locked_until: Timestamp,
    /// Keys created before this are expired and may be claimed afresh.
    pub expired_before: Timestamp,
    /// How many new keys (not stored, or stored but expired) the caller
    /// may claim in the UTC day of `now` ([`ClaimRequest::quota_day`]),
    /// all its tokens together (API.md section 9); one more is
    /// [`ClaimOutcome::QuotaExceeded`]. `None`: no limit. New keys are
    /// counted either way, so that a limit set later counts the whole day.
    pub new_keys_per_day: Option<u32>,
}

impl ClaimRequest {
    /// Seconds in a day of the quota.
    pub const SECS_PER_DAY: i64 = 24 * 60 * 60;

    /// The UTC day the claim counts against: whole days since the Unix
    /// epoch at `now`.
    ///
    /// ```
    /// use confab_domain::{ContactId, Timestamp};
    /// use confab_ports::{ClaimRequest, KeyClaim};
    /// use uuid::Uuid;
    ///
    /// let now = Timestamp::from_secs(86_400 + 3_600); // 01:00 UTC on day 1
    /// let request = ClaimRequest {
    ///     claim: KeyClaim {
    ///         contact_id: ContactId::from_uuid(Uuid::from_u128(1)),
    ///         key: "send-1".to_owned(),
    ///         holder: Uuid::from_u128(2),
    ///     },
    ///     fingerprint: "digest".to_owned(),
    ///     now,
    ///     locked_until: now.plus_secs(10),
    ///     expired_before: now.plus_secs(-86_400),
    ///     new_keys_per_day: Some(10_000),
    /// };
    /// assert_eq!(request.quota_day(), 1);
    /// // The quota starts over at midnight UTC, 23 hours later.
    /// assert_eq!(request.secs_to_next_quota_day(), 23 * 3_600);
    /// ```
    pub const fn quota_day(&self) -> i64 {
        self.now.secs().div_euclid(Self::SECS_PER_DAY)
    }

    /// Whole seconds from `now` to the next UTC day, when the quota starts
    /// over (1 to 86,400).
    pub const fn secs_to_next_quota_day(&self) -> i64 {
        Self::SECS_PER_DAY - self.now.secs().rem_euclid(Self::SECS_PER_DAY)
    }
}

/// What the store found when claiming a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// The key is the caller's to use (new, expired, or its holder's lease
    /// ran out).
    Claimed,
    /// Another request holds it (`same_request`: with the same fingerprint).
    InFlight {
        /// The holder runs the same request (a retry came too early);
        /// `false`: the key was used for another request.
        same_request: bool,
    },
    /// Already answered (`same_request`: with the same fingerprint).
    Completed {
        /// The answer is for the same request, so it may be replayed;
        /// `false`: the key was used for another request.
        same_request: bool,
        /// The answer kept for the key.
        response: StoredResponse,
    },
    /// A new key, refused: the caller already claimed
    /// [`ClaimRequest::new_keys_per_day`] new keys this day. Nothing of
    /// the claim was stored.
    QuotaExceeded,
}

/// Completes a claimed key in the transaction of the write it protects:
/// the store renders the response from what it wrote and stores it before
/// committing, and refuses to commit when the claim was lost meanwhile.
pub struct Completion<T> {
    /// The claim the response is stored under: it must still be held when
    /// the write commits.
    pub claim: KeyClaim,
    render: Box<dyn FnOnce(&T) -> StoredResponse + Send>,
}

impl<T: 'static> Completion<T> {
    /// Completes `claim` with the response `render` makes of what the
    /// write returns.
    pub fn new(
        claim: KeyClaim,
        render: impl FnOnce(&T) -> StoredResponse + Send + 'static,
    ) -> Self {
        Self {
            claim,
            render: Box::new(render),
        }
    }

    /// The response for `written`, with the claim to store it under.
    pub fn render(self, written: &T) -> (KeyClaim, StoredResponse) {
        let response = (self.render)(written);
        (self.claim, response)
    }

    /// A completion for a write that returns `U`, whose response is
    /// rendered from the `T` that `f` makes of it.
    pub fn adapt<U>(self, f: impl FnOnce(&U) -> T + Send + 'static) -> Completion<U> {
        let render = self.render;
        Completion {
            claim: self.claim,
            render: Box::new(move |u: &U| render(&f(u))),
        }
    }
}

impl<T> std::fmt::Debug for Completion<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Completion")
            .field("claim", &self.claim)
            .finish_non_exhaustive()
    }
}

/// Idempotency keys: claimed before a request runs, completed in the
/// request's own write (see [`Completion`]), or here when the request ended
/// in an answer without a write.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// Claims the key for `request.claim.holder` unless another live
    /// request holds it or it was already answered. A new key counts
    /// against the caller's quota of the day in the same unit of work, and
    /// past the quota nothing of it is stored (`QuotaExceeded`); a key
    /// stored before (a retry, a replay, a takeover after the lease) does
    /// not count.
    async fn claim_key(&self, request: ClaimRequest) -> Result<ClaimOutcome, StoreError>;
    /// Stores `response` for a key its holder still holds; `false` when the
    /// claim was lost.
    async fn complete_key(
        &self,
        claim: KeyClaim,
        response: StoredResponse,
    ) -> Result<bool, StoreError>;
    /// Gives up a key still held and not answered, so a retry can run.
    async fn release_key(&self, claim: KeyClaim) -> Result<(), StoreError>;
    /// Forgets keys created before `before`, and the quota counts of the
    /// days before `before`'s; returns how many keys.
    async fn prune_keys(&self, before: Timestamp) -> Result<u64, StoreError>;
}

/// Whether the store answers at all (for a readiness probe).
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait HealthCheck: Send + Sync {
    /// Answers `Ok` when the store runs a trivial query; reads and writes
    /// nothing.
    /// # Errors
    /// - `Unavailable` when the database cannot be reached (or does not
    ///   answer within the store's own deadline).
    async fn ping(&self) -> Result<(), StoreError>;

    /// The connection pool's figures, for the process's metrics (`None`: no pool).
    fn pool_state(&self) -> Option<PoolState> {
        None
    }
}

/// A store's connection pool right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolState {
    /// Most connections the pool opens.
    pub max_size: u32,
    /// Connections open (idle and in use).
    pub connections: u32,
    /// Open connections not in use.
    pub idle: u32,
    /// Callers waiting for (or taking) a connection.
    pub waiting: u32,
}

/// Everything a store adapter provides.
pub trait Store:
    ContactStore
    + TokenStore
    + ConversationStore
    + MessageStore
    + AttachmentStore
    + GroupStore
    + ModerationStore
    + DepthStore
    + SearchStore
    + IdempotencyStore
    + WebhookStore
    + EventStore
    + HealthCheck
{
}
impl<T> Store for T where
    T: ContactStore
        + TokenStore
        + ConversationStore
        + MessageStore
        + AttachmentStore
        + GroupStore
        + ModerationStore
        + DepthStore
        + SearchStore
        + IdempotencyStore
        + WebhookStore
        + EventStore
        + HealthCheck
{
}
