//! Conversations, their members and each member's own state in them.

use async_trait::async_trait;
use confab_domain::{
    Contact, ContactId, Conversation, ConversationId, ConversationView, GroupId, MemberStatePatch,
    Page, Paged, PinnedMessageChange, Timestamp,
};

use crate::{Completion, Outbox, StoreError};

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
    /// ([`PayloadRenderer::conversation_shared`](crate::PayloadRenderer::conversation_shared)),
    /// and the viewer's own view beside it for the viewer.
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
