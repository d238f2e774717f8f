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
//! (docs/api.md "Listen for events"). The store writes them, with their recipients
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
pub use attachments::{AttachmentFilter, AttachmentStore, StorageUse, Uploaded};
mod jobs;
#[cfg(feature = "mocks")]
pub use jobs::MockJobStore;
pub use jobs::{Job, JobKind, JobState, JobStore};
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
mod idempotency;
#[cfg(feature = "mocks")]
pub use idempotency::MockIdempotencyStore;
mod tokens;
pub use idempotency::{
    ClaimOutcome, ClaimRequest, Completion, IdempotencyStore, KeyClaim, StoredResponse,
};
#[cfg(feature = "mocks")]
pub use tokens::MockTokenStore;
pub use tokens::{
    LiveToken, Lookup, NewServerKey, NewTicket, NewToken, ServerKey, TicketHolder, TokenInfo,
    TokenStore,
};
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
    /// returned) when a submitted value differs from the stored one (the
    /// same values again write nothing).
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
    /// Erases the contact (the right to be forgotten, docs/api.md "Server API: from an app's backend"),
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
    /// state, in one transaction, each only where it differs from what is
    /// stored; returns the new view. Writes the `outbox`'s events
    /// (`conversation.updated`) only when a row changed: for the viewer
    /// alone, its payload the view returned; for every member of a direct
    /// conversation, each with their own view as payload; for a group
    /// conversation's members, one event read by the group whose payload
    /// is the shared attributes alone
    /// ([`PayloadRenderer::conversation_shared`]), and the viewer's own
    /// view beside it for the viewer.
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
    /// after the members already in; details written only where they
    /// differ from the group's); returns the group as it is after.
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
    + JobStore
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
        + JobStore
        + HealthCheck
{
}
