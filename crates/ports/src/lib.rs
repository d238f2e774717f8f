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
use confab_domain::{DomainError, Timestamp};
use uuid::Uuid;

mod contacts;
#[cfg(feature = "mocks")]
pub use contacts::MockContactStore;
pub use contacts::{ContactStore, ErasePlan, Erasure, ReactionMade};
mod conversations;
#[cfg(feature = "mocks")]
pub use conversations::MockConversationStore;
pub use conversations::{ConversationFilter, ConversationMember, ConversationStore};
mod messages;
#[cfg(feature = "mocks")]
pub use messages::MockMessageStore;
pub use messages::{MessageChange, MessageStore, NewMessage};
mod groups;
#[cfg(feature = "mocks")]
pub use groups::MockGroupStore;
pub use groups::{GroupChange, GroupStore, NewGroup};
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

/// Defines [`Store`] as all of the given traits, and gives it to every
/// type that has them all, so that the list is written once.
macro_rules! store_of {
    ($(#[$doc:meta])* $first:ident $(+ $rest:ident)*) => {
        $(#[$doc])*
        pub trait Store: $first $(+ $rest)* {}
        impl<T> Store for T where T: $first $(+ $rest)* {}
    };
}

store_of! {
    /// Everything a store adapter provides.
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
}
