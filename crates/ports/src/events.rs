//! Events (API.md section 11): written by each write in its own transaction
//! (the outbox), read by the event streams, the catch-up list and webhooks.

use std::sync::Arc;

use async_trait::async_trait;
use confab_domain::{
    Attachment, Contact, ContactId, ConversationView, Event, EventId, EventType, Group, Message,
    Timestamp,
};
use uuid::Uuid;

use crate::StoreError;

/// Renders an event's payload: the object as its recipient would `GET` it,
/// in the wire format. Supplied by the server, which alone knows that
/// format; a store calls it inside the write's transaction with what it
/// wrote.
#[cfg_attr(feature = "mocks", mockall::automock)]
pub trait PayloadRenderer: Send + Sync {
    fn contact(&self, contact: &Contact) -> String;
    fn conversation(&self, conversation: &ConversationView) -> String;
    fn message(&self, message: &Message) -> String;
    fn group(&self, group: &Group) -> String;
    fn attachment(&self, attachment: &Attachment) -> String;
    /// The payload of a `*.deleted` event: `{"id": ...}`.
    fn deleted(&self, id: Uuid) -> String;
}

/// The events of one write, with what renders their payloads. The store
/// writes every event (with its resolved recipients and rendered payloads)
/// in the write's transaction, or none when the write fails.
#[derive(Clone)]
pub struct Outbox {
    pub events: Vec<Event>,
    pub render: Arc<dyn PayloadRenderer>,
}

impl Outbox {
    pub fn new(events: Vec<Event>, render: Arc<dyn PayloadRenderer>) -> Self {
        Self { events, render }
    }
}

impl std::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbox")
            .field("events", &self.events)
            .finish_non_exhaustive()
    }
}

/// An event as stored for one reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    pub id: EventId,
    pub kind: EventType,
    pub created_at: Timestamp,
    /// Commit order: an event is readable only once no event before this
    /// position can still commit, so a reader that has read up to a
    /// position never misses one behind it.
    pub position: i64,
    /// The JSON payload as this reader sees it (for webhooks: as the actor
    /// sees it).
    pub payload: String,
}

/// An event with every recipient and the payload as each sees it (for the
/// fan-out of one process to all its streams).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventWithRecipients {
    /// With the payload as the actor sees it.
    pub event: StoredEvent,
    pub recipients: Vec<(ContactId, String)>,
}

/// Reading events.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait EventStore: Send + Sync {
    /// The position of the kept event with this id; `None` when it is
    /// unknown or pruned.
    async fn event_position(&self, id: EventId) -> Result<Option<i64>, StoreError>;
    /// A position that every event committed from now on lies after: a
    /// stream starting now reads the events after it.
    async fn event_start(&self) -> Result<i64, StoreError>;
    /// The recipient's readable events after position `after`, oldest
    /// first, at most `limit`, each with its payload as the recipient sees
    /// it.
    async fn events_for(
        &self,
        recipient: ContactId,
        after: i64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>, StoreError>;
    /// Every recipient's readable events after position `after`, oldest
    /// first: at most `limit` events, each with all its recipients (for the
    /// fan-out of one process to all its streams).
    async fn recent_events(
        &self,
        after: i64,
        limit: u32,
    ) -> Result<Vec<EventWithRecipients>, StoreError>;
    /// The token hashes among `hashes` that are still live at `now` (so
    /// that one statement checks every open stream's token).
    async fn live_token_hashes(
        &self,
        hashes: Vec<String>,
        now: Timestamp,
    ) -> Result<Vec<String>, StoreError>;
    /// Deletes at most `batch` events created before `before` (with their
    /// recipients); returns how many.
    async fn prune_events(&self, before: Timestamp, batch: u32) -> Result<u64, StoreError>;
}

/// Told after each committed write with events, so that the process's own
/// streams wake at once (other processes learn of it from the database).
#[cfg_attr(feature = "mocks", mockall::automock)]
pub trait EventSignal: Send + Sync {
    fn committed(&self);
}

/// A signal nobody listens to (the CLI, tests without streams).
pub struct NoSignal;

impl EventSignal for NoSignal {
    fn committed(&self) {}
}
