//! How many event streams each contact may hold open at once
//! (`CONFAB_MAX_STREAMS_PER_CONTACT`, docs/api.md "Hostile load"): a
//! stream holds a connection, a file descriptor and a task for as long as
//! the client likes, so one token must not be able to open them without
//! end. All of a contact's tokens share the contact's slots.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use confab_domain::ContactId;

/// The open streams of every contact (one per server, shared by its
/// workers).
#[derive(Debug)]
pub struct StreamSlots {
    max: usize,
    open: Arc<Mutex<HashMap<ContactId, usize>>>,
}

/// One open stream's slot: given back when dropped (the stream's body is
/// dropped when its connection closes or the stream ends).
#[derive(Debug)]
pub struct StreamSlot {
    contact: ContactId,
    open: Arc<Mutex<HashMap<ContactId, usize>>>,
}

fn lock(open: &Mutex<HashMap<ContactId, usize>>) -> MutexGuard<'_, HashMap<ContactId, usize>> {
    // Every change to the map is complete before the guard drops.
    open.lock().unwrap_or_else(PoisonError::into_inner)
}

impl StreamSlots {
    /// The default of `CONFAB_MAX_STREAMS_PER_CONTACT`.
    pub const DEFAULT_MAX: usize = 10;

    /// At most `max` streams per contact (at least 1).
    pub fn new(max: usize) -> Self {
        Self {
            max: max.max(1),
            open: Arc::default(),
        }
    }

    /// The most streams one contact may hold open.
    pub fn max(&self) -> usize {
        self.max
    }

    /// A slot for one more of `contact`'s streams, or `None` when the
    /// contact holds `max` already.
    pub fn take(&self, contact: ContactId) -> Option<StreamSlot> {
        let mut open = lock(&self.open);
        let n = open.entry(contact).or_insert(0);
        if *n >= self.max {
            return None;
        }
        *n += 1;
        Some(StreamSlot {
            contact,
            open: self.open.clone(),
        })
    }

    /// Streams open now, all contacts together.
    pub fn open(&self) -> usize {
        lock(&self.open).values().sum()
    }
}

impl Default for StreamSlots {
    fn default() -> Self {
        Self::new(Self::DEFAULT_MAX)
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = lock(&self.open);
        if let Some(n) = open.get_mut(&self.contact) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.contact);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn contact(n: u128) -> ContactId {
        ContactId::from_uuid(Uuid::from_u128(n))
    }

    #[test]
    fn a_contact_holds_at_most_max_and_a_closed_stream_gives_its_slot_back() {
        let slots = StreamSlots::new(2);
        let a1 = slots.take(contact(1)).expect("first");
        let _a2 = slots.take(contact(1)).expect("second");
        assert!(slots.take(contact(1)).is_none(), "a third is refused");
        // Another contact has slots of its own.
        let _b = slots.take(contact(2)).expect("another contact");
        assert_eq!(slots.open(), 3);
        drop(a1);
        assert!(slots.take(contact(1)).is_some(), "a slot came back");
    }

    #[test]
    fn no_entry_is_kept_for_a_contact_without_streams() {
        let slots = StreamSlots::new(1);
        drop(slots.take(contact(7)));
        assert!(lock(&slots.open).is_empty());
        assert_eq!(slots.open(), 0);
    }
}
