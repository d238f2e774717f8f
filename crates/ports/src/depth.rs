//! What the service asks the store about a conversation's depth (docs/api.md
//! "Reply, quote, start a thread"): which contacts may be mentioned, the lists of a thread, and
//! a message's earlier texts.

use async_trait::async_trait;
use confab_domain::{ContactId, ConversationId, EditId, MessageEdit, MessageId, Page, Paged};

use crate::StoreError;

/// Which messages a page lists ([`crate::MessageStore::list_messages`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageList {
    /// Every message of every conversation the viewer is a member of,
    /// thread replies included.
    Feed,
    /// One conversation's messages; its thread replies only with
    /// `include_replies`.
    Conversation {
        /// The conversation.
        id: ConversationId,
        /// Whether thread replies are listed too.
        include_replies: bool,
    },
    /// The replies in one message's thread.
    Thread(MessageId),
}

/// A conversation's whole list (thread replies included), or the feed:
/// what a list asked by conversation alone meant before threads.
impl From<Option<ConversationId>> for MessageList {
    fn from(conversation: Option<ConversationId>) -> Self {
        match conversation {
            Some(id) => Self::Conversation {
                id,
                include_replies: true,
            },
            None => Self::Feed,
        }
    }
}

/// The store's side of replies, threads, mentions and edits.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait DepthStore: Send + Sync {
    /// Those of `contacts` who are members of `conversation` now, in no
    /// particular order: what a message there may mention (a caller who
    /// lists themself learns whether they are a member). One statement,
    /// its cost bounded by the list, never by the conversation's size.
    async fn members_among(
        &self,
        conversation: ConversationId,
        contacts: Vec<ContactId>,
    ) -> Result<Vec<ContactId>, StoreError>;

    /// The earlier texts of a message, newest first, when `viewer` is a
    /// member of its conversation.
    /// # Errors
    /// - MUST return `NotFound` when the message does not exist or the
    ///   viewer is not a member.
    /// - MUST return `CursorNotFound` when the cursor is not one of its
    ///   edits.
    async fn message_edits(
        &self,
        viewer: ContactId,
        message: MessageId,
        page: Page<EditId>,
    ) -> Result<Paged<MessageEdit>, StoreError>;
}
