//! What the service asks the store when a contact searches their messages
//! (docs/api.md "Search messages").

use async_trait::async_trait;
use confab_domain::{
    ContactId, ConversationId, Message, MessageId, Page, Paged, SearchQuery, Timestamp,
};

use crate::StoreError;

/// Which of the viewer's messages a search looks among, besides its terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SearchFilter {
    /// Only this conversation's messages (one of the viewer's).
    pub conversation: Option<ConversationId>,
    /// Only the messages this contact sent.
    pub sender: Option<ContactId>,
    /// Only messages created at or after this time.
    pub created_from: Option<Timestamp>,
    /// Only messages created before this time.
    pub created_until: Option<Timestamp>,
}

/// The store's side of search.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait SearchStore: Send + Sync {
    /// A page of the messages of `viewer`'s conversations (membership as it
    /// is now) whose text contains every term of `query`, folded as the
    /// domain folds ([`confab_domain::fold`]), newest first, by the filter.
    /// Pages go forward only: the cursor, if any, is `Cursor::After`.
    /// Its cost follows the viewer's messages and matches, not the size of
    /// the whole store; no text of the query ever becomes SQL syntax.
    /// # Errors
    /// - MUST return `NotFound` when the filter's conversation is not one
    ///   of the viewer's.
    /// - MUST return `CursorNotFound` when the cursor is not a message of
    ///   the viewer's conversations.
    async fn search_messages(
        &self,
        viewer: ContactId,
        query: SearchQuery,
        filter: SearchFilter,
        page: Page<MessageId>,
    ) -> Result<Paged<Message>, StoreError>;
}
