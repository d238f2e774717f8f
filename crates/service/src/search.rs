//! Search (docs/api.md "Search messages"): a contact finds messages of their own
//! conversations by what the text says. A contact runs at most a few
//! searches at once ([`Confab::with_max_searches_per_contact`]): a search
//! may read every message its caller can see, and many at once from one
//! contact would take the database from everyone else.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use confab_domain::{
    Contact, ContactId, Cursor, DomainError, Field, Message, MessageId, Page, Paged, SearchQuery,
};
use confab_ports::{SearchFilter, StoreError};

use crate::error::page_error;
use crate::{Confab, ServiceError};

/// How many searches one contact may run at once, all its tokens together,
/// unless the service is told otherwise.
pub const DEFAULT_SEARCHES_PER_CONTACT: u32 = 2;

impl Confab {
    /// The messages of the caller's conversations that contain every term
    /// of `query`, newest first, by `filter`; pages go forward only.
    ///
    /// # Errors
    /// [`ServiceError::TooManySearches`] while the caller already runs as
    /// many searches as a contact may (nothing is read).
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
        // Held until the store answers (or the request is dropped).
        let _slot = SearchSlots::take(&self.searches, caller.id()).ok_or(
            ServiceError::TooManySearches {
                max: self.searches.max,
            },
        )?;
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

/// The searches each contact has running in this process.
#[derive(Debug)]
pub(crate) struct SearchSlots {
    max: u32,
    running: Mutex<HashMap<ContactId, u32>>,
}

impl SearchSlots {
    /// At most `max` searches per contact at once (at least 1).
    pub(crate) fn new(max: u32) -> Self {
        Self {
            max: max.max(1),
            running: Mutex::default(),
        }
    }

    /// A slot for one more search of `contact`, given back when dropped;
    /// `None` when it already runs `max`.
    pub(crate) fn take(slots: &Arc<Self>, contact: ContactId) -> Option<SearchSlot> {
        let mut running = slots.running.lock().unwrap_or_else(PoisonError::into_inner);
        let n = running.entry(contact).or_insert(0);
        if *n >= slots.max {
            return None;
        }
        *n += 1;
        Some(SearchSlot {
            slots: slots.clone(),
            contact,
        })
    }

    /// How many searches `contact` runs now.
    #[cfg(test)]
    pub(crate) fn running(&self, contact: ContactId) -> u32 {
        let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        running.get(&contact).copied().unwrap_or(0)
    }
}

/// One running search of a contact (see [`SearchSlots::take`]).
#[derive(Debug)]
pub(crate) struct SearchSlot {
    slots: Arc<SearchSlots>,
    contact: ContactId,
}

impl Drop for SearchSlot {
    fn drop(&mut self) {
        let mut running = self
            .slots
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = running.get_mut(&self.contact) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                // A contact that searches no more costs no memory.
                running.remove(&self.contact);
            }
        }
    }
}
