//! Messages: appending, reading, changing and deleting them.

use async_trait::async_trait;
use confab_domain::{
    AddAttachment, Contact, ContactId, ConversationId, Message, MessageId, MessageText, Page,
    Paged, ReactionName, Timestamp,
};

use crate::{Completion, MessageList, Outbox, StoreError};

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
