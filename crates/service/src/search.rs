//! Search (API.md section 17): a contact finds messages of their own
//! conversations by what the text says.

use confab_domain::{
    Contact, Cursor, DomainError, Field, Message, MessageId, Page, Paged, SearchQuery,
};
use confab_ports::{SearchFilter, StoreError};

use crate::error::page_error;
use crate::{Confab, ServiceError};

impl Confab {
    /// The messages of the caller's conversations that contain every term
    /// of `query`, newest first, by `filter`; pages go forward only.
    pub async fn search_messages(
        &self,
        caller: &Contact,
        query: SearchQuery,
        filter: SearchFilter,
        page: Page<MessageId>,
    ) -> Result<Paged<Message>, ServiceError> {
        if let Some(Cursor::Before(_)) = page.cursor {
            return Err(DomainError::invalid(
                Field::PageBefore,
                "does not apply: search results page forward only",
            )
            .into());
        }
        self.ports
            .search
            .search_messages(caller.id(), query, filter, page)
            .await
            .map_err(|e| match e {
                StoreError::NotFound => ServiceError::not_found_of(Field::Conversation),
                e => page_error(&page, e),
            })
    }
}
