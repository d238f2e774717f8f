//! Events (docs/api.md "Listen for events"): written by each write in its own transaction
//! (the outbox), read by the event streams, the catch-up list and webhooks.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use confab_domain::{
    Attachment, Contact, ContactId, Conversation, ConversationView, Event, EventId, EventType,
    Group, Message, Report, Timestamp,
};
use uuid::Uuid;

use crate::StoreError;

/// Renders an event's payload: the object as its recipient would `GET` it,
/// in the wire format. Supplied by the server, which alone knows that
/// format; a store calls it inside the write's transaction with what it
/// wrote.
#[cfg_attr(feature = "mocks", mockall::automock)]
pub trait PayloadRenderer: Send + Sync {
    /// The payload of an event about `contact`: the contact as written.
    fn contact(&self, contact: &Contact) -> String;
    /// The payload of an event about a conversation, for the contact whose
    /// view `conversation` is (its `viewer`): a conversation reads
    /// differently to each member, so the store renders one per recipient
    /// whose view it wrote.
    fn conversation(&self, conversation: &ConversationView) -> String;
    /// The payload of an event about a change of a group conversation's
    /// shared state (its pinned message), the same for every member: its
    /// shared attributes alone, none of a member's own (pin, mute,
    /// archive, last opened, unread counts), which each member keeps.
    fn conversation_shared(&self, conversation: &Conversation) -> String;
    /// The payload of an event about `message`: the message as written,
    /// with its reactions and attachments.
    fn message(&self, message: &Message) -> String;
    /// The payload of an event about `group`: the group as written, with
    /// its members.
    fn group(&self, group: &Group) -> String;
    /// The payload of an event about `attachment` (`attachment.created`).
    fn attachment(&self, attachment: &Attachment) -> String;
    /// The payload of a `*.deleted` event: `{"id": ...}`.
    fn deleted(&self, id: Uuid) -> String;
    /// The payload of an event about `report` (`report.created`, for the
    /// operator): the report as the operator reads it.
    fn report(&self, report: &Report) -> String;
}

/// The events of one write, with what renders their payloads. The store
/// writes every event (with its resolved recipients and rendered payloads)
/// in the write's transaction, or none when the write fails.
#[derive(Clone)]
pub struct Outbox {
    /// The write's events, in the order they happened (their positions
    /// keep it). Each names its audience, which the store resolves to
    /// recipients when it writes the event.
    pub events: Vec<Event>,
    /// Renders the events' payloads from what the write wrote.
    pub render: Arc<dyn PayloadRenderer>,
}

impl Outbox {
    /// The `events` of one write, their payloads to be rendered by
    /// `render`.
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
    /// The event's id, the same for every recipient.
    pub id: EventId,
    /// What happened (`message.created`, `group.deleted`, ...).
    pub kind: EventType,
    /// When the change was made (the event's `at`), to the microsecond.
    pub created_at: Timestamp,
    /// Commit order: an event is readable only once no event before this
    /// position can still commit, so a reader that has read up to a
    /// position never misses one behind it.
    pub position: i64,
    /// The JSON payload as this reader sees it (for webhooks: as the actor
    /// sees it).
    pub payload: String,
}

/// An event with those of its recipients a reader asked for (the contacts
/// with an open stream in this process), for the fan-out of one process to
/// its streams.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventWithRecipients {
    /// With the shared payload: the object as the actor sees it, which is
    /// also what every recipient without a payload of their own sees. Held
    /// once, whatever the number of recipients.
    pub event: StoredEvent,
    /// The asked-for recipients, each with their own payload when it
    /// differs from the shared one (`None`: the shared payload). Never a
    /// recipient who was not asked for.
    pub recipients: Vec<(ContactId, Option<String>)>,
}

/// How much one read of [`EventStore::recent_events`] may take, so that what
/// it holds is bounded whatever the size of an event's audience or payload
/// (docs/api.md "Limits"). Every limit yields to the first event: a read takes
/// at least one whole event (with every asked-for recipient), so that it
/// always makes progress; that event's audience is bounded by the largest
/// group, its payload by what a payload embeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FanOutLimits {
    /// Events at most.
    pub events: u32,
    /// Payload bytes at most: the events' shared payloads and the
    /// asked-for recipients' own payloads together.
    pub bytes: u64,
    /// Recipient rows examined at most (all of an event's recipients are
    /// examined to find the asked-for ones).
    pub recipient_rows: u32,
}

impl FanOutLimits {
    /// At most `events` events, within the default byte and recipient
    /// budgets.
    pub fn events(events: u32) -> Self {
        Self {
            events,
            ..Self::default()
        }
    }
}

impl Default for FanOutLimits {
    /// 256 events, 4 MiB of payloads, 20,000 recipient rows.
    fn default() -> Self {
        Self {
            events: 256,
            bytes: 4 << 20,
            recipient_rows: 20_000,
        }
    }
}

/// What one read of [`EventStore::recent_events`] returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FanOutBatch {
    /// Every readable event after the position asked for, oldest first, up
    /// to where a limit cut the read; each with the asked-for recipients
    /// (none when no asked-for contact receives it).
    pub events: Vec<EventWithRecipients>,
    /// A limit cut the read: more events may follow the last one.
    pub more: bool,
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
    /// The readable events after position `after`, oldest first, within
    /// `limits`, each with those of its recipients who are in `to` (for the
    /// fan-out of one process to its streams: `to` are the contacts it has
    /// streams for). What the read holds grows with the events and with the
    /// recipients in `to`, never with the recipients outside it: their
    /// rows are examined in the database, and none of their payloads is
    /// read.
    async fn recent_events(
        &self,
        after: i64,
        limits: FanOutLimits,
        to: Arc<HashSet<ContactId>>,
    ) -> Result<FanOutBatch, StoreError>;
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
    /// A write with events has committed (called after the commit, never
    /// for a write that failed). Returns at once: it only wakes readers,
    /// which then read the events from the store.
    fn committed(&self);
}

/// A signal nobody listens to (the CLI, tests without streams).
pub struct NoSignal;

impl EventSignal for NoSignal {
    fn committed(&self) {}
}
