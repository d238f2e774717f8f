//! confab's use cases: who may do what, in which order. Each public method of
//! [`Confab`] is one operation of the API, taking the authenticated caller.
//!
//! Depends on the domain and the ports only. Never on diesel, actix or a
//! store adapter: the server wires a store in at startup, tests wire mocks.
//!
//! Rules of thumb kept everywhere:
//! - what the caller may not see answers `NotFound`, exactly like what does
//!   not exist (no existence oracle);
//! - inputs are validated before anything is written, and each write is one
//!   store call (one transaction), so a refused request changed nothing.

mod auth;
mod contacts;
mod conversations;
mod error;
mod events;
pub mod file_type;
mod files;
mod groups;
mod idempotency;
mod jobs;
mod keys;
mod messages;
mod moderation;
mod retention;
mod search;
#[cfg(test)]
mod tests;
mod tickets;
mod typing;
mod upload_limits;
mod webhooks;

use std::sync::Arc;

use confab_domain::{Event, EventId, Timestamp};
use confab_ports::{Clock, IdGenerator, Outbox, Store};
use uuid::Uuid;

pub use auth::MintedToken;
pub use confab_ports::SearchFilter;
pub use confab_ports::{
    AttachmentFilter, ByteRange, FileReader, FileStorage, FileWriter, StorageUse,
};
pub use confab_ports::{
    ConversationFilter, DbBudget, EventSignal, NoSignal, PayloadRenderer, PoolState, StoreError,
    WithBudget,
};
pub use confab_ports::{ConversationMember, Made, MessageList, ReactionMade, ServerKey, TokenInfo};
pub use confab_ports::{EventWakeups, PollOnly, StoredEvent};
pub use confab_ports::{Job, JobKind, JobState};
pub use contacts::PUSH_RECIPIENTS_MAX;
pub use conversations::ConversationTarget;
pub use error::{BoxError, ServiceError};
pub use events::{FanOutBatch, FanOutEvent, FanOutLimits, StreamToken};
pub use files::{Upload, DEFAULT_MAX_UPLOAD_BYTES, UPLOAD_TTL_SECS};
pub use groups::{GroupUpdate, NewGroupRequest};
pub use idempotency::{
    Completion, IdempotencyKey, Idempotent, KeyClaim, StoredResponse, DEFAULT_KEYS_PER_DAY,
    KEY_TTL_SECS, LEASE_SECS,
};
pub use jobs::Finished;
pub use keys::{is_server_key, CreatedKey, KEY_NAME_MAX, KEY_PREFIX};
pub use messages::{AttachmentInput, MessageUpdate, SendMessage};
pub use retention::EVENT_TTL_SECS;
pub use search::DEFAULT_SEARCHES_PER_CONTACT;
pub use tickets::{is_ticket, Ticket, TicketCaller, TICKET_PREFIX, TICKET_TTL_SECS};
pub use upload_limits::{
    Admission, UploadLimits, UploadSlot, DEFAULT_MIN_FREE_BYTES, DEFAULT_UPLOADS_PER_CONTACT,
    DEFAULT_UPLOAD_QUOTA_BYTES,
};
pub use webhooks::*;

/// The ports the service runs on. Each is a separate trait object so tests
/// can mock them one by one; in production they are all the same store.
#[derive(Clone)]
pub struct Ports {
    pub contacts: Arc<dyn confab_ports::ContactStore>,
    pub tokens: Arc<dyn confab_ports::TokenStore>,
    pub conversations: Arc<dyn confab_ports::ConversationStore>,
    pub messages: Arc<dyn confab_ports::MessageStore>,
    pub attachments: Arc<dyn confab_ports::AttachmentStore>,
    pub groups: Arc<dyn confab_ports::GroupStore>,
    pub moderation: Arc<dyn confab_ports::ModerationStore>,
    pub depth: Arc<dyn confab_ports::DepthStore>,
    pub search: Arc<dyn confab_ports::SearchStore>,
    pub idempotency: Arc<dyn confab_ports::IdempotencyStore>,
    pub webhooks: Arc<dyn confab_ports::WebhookStore>,
    pub events: Arc<dyn confab_ports::EventStore>,
    pub jobs: Arc<dyn confab_ports::JobStore>,
    pub health: Arc<dyn confab_ports::HealthCheck>,
    /// When to read the events table for this process's streams.
    pub wakeups: Arc<dyn EventWakeups>,
    pub clock: Arc<dyn Clock>,
    pub ids: Arc<dyn IdGenerator>,
    /// Renders event payloads in the wire format (the server's).
    pub render: Arc<dyn PayloadRenderer>,
    /// Told after each committed write with events.
    pub signal: Arc<dyn EventSignal>,
    /// Passes typing news to every process's hub (docs/api.md "Typing").
    pub typing: Arc<dyn confab_ports::TypingRelay>,
}

impl Ports {
    /// All storage ports served by one store, with the system clock and
    /// UUIDv7 ids; events rendered by `render`, their commits told to
    /// `signal`.
    pub fn from_store<S: Store + 'static>(
        store: S,
        render: Arc<dyn PayloadRenderer>,
        signal: Arc<dyn EventSignal>,
    ) -> Self {
        Self::assemble(
            Arc::new(store),
            Arc::new(PollOnly(std::time::Duration::from_secs(1))),
            Arc::new(SystemClock),
            Arc::new(UuidV7),
            render,
            signal,
        )
    }

    /// These ports with every storage port on `store` instead (the
    /// wakeups, clock, ids, renderer and signal kept).
    fn with_store<S: Store + 'static>(&self, store: Arc<S>) -> Self {
        Self::assemble(
            store,
            self.wakeups.clone(),
            self.clock.clone(),
            self.ids.clone(),
            self.render.clone(),
            self.signal.clone(),
        )
        .typing_by(self.typing.clone())
    }

    /// These ports with typing news passed by `typing`.
    #[must_use]
    pub fn typing_by(mut self, typing: Arc<dyn confab_ports::TypingRelay>) -> Self {
        self.typing = typing;
        self
    }

    /// Every storage port on `store`, with the rest given.
    fn assemble<S: Store + 'static>(
        store: Arc<S>,
        wakeups: Arc<dyn EventWakeups>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
        render: Arc<dyn PayloadRenderer>,
        signal: Arc<dyn EventSignal>,
    ) -> Self {
        Self {
            contacts: store.clone(),
            tokens: store.clone(),
            conversations: store.clone(),
            messages: store.clone(),
            attachments: store.clone(),
            groups: store.clone(),
            moderation: store.clone(),
            depth: store.clone(),
            search: store.clone(),
            idempotency: store.clone(),
            webhooks: store.clone(),
            events: store.clone(),
            jobs: store.clone(),
            health: store,
            wakeups,
            clock,
            ids,
            render,
            signal,
            typing: Arc::new(confab_ports::NoTyping),
        }
    }
}

/// The application: every use case. Clones share the token cache.
#[derive(Clone)]
pub struct Confab {
    ports: Ports,
    tokens: Arc<auth::TokenCache>,
    /// Live server keys and the contacts they act for, recently looked up.
    keys: Arc<keys::KeyCache>,
    /// New idempotency keys a contact may claim a day; `None`: no limit
    /// (see [`Confab::with_idempotency_quota`]).
    keys_per_day: Option<u32>,
    /// The most members a group may have (see
    /// [`Confab::with_max_group_members`]).
    max_group_members: u64,
    /// Where uploaded files' bytes are (see [`Confab::with_files`]).
    files: Arc<dyn FileStorage>,
    /// The largest upload, in bytes.
    max_upload_bytes: u64,
    /// What one contact may take of the storage, and its uploads under
    /// way (see [`Confab::with_upload_limits`]).
    uploads: Arc<upload_limits::UploadGate>,
    /// The storage ports again, on handles of the store that share a
    /// request's budget (see [`Confab::within`]); `None`: no budgets.
    budgeted: Option<Arc<BudgetedPorts>>,
    /// The typing starts that hold now (see [`Confab::typing`]).
    typing_board: Arc<typing::TypingBoard>,
    /// The searches each contact runs now, and how many it may (see
    /// [`Confab::with_max_searches_per_contact`]).
    searches: Arc<search::SearchSlots>,
    /// New reports a contact may file an hour; `None`: no limit (see
    /// [`Confab::with_report_quota`]).
    reports_per_hour: Option<u32>,
}

/// Builds the storage ports on handles of the store that share a budget.
type BudgetedPorts = dyn Fn(&Ports, DbBudget) -> Ports + Send + Sync;

impl Confab {
    /// The service on `ports`, with the default limits
    /// ([`DEFAULT_KEYS_PER_DAY`]).
    pub fn new(ports: Ports) -> Self {
        Self {
            ports,
            tokens: Arc::default(),
            keys: Arc::default(),
            keys_per_day: Some(DEFAULT_KEYS_PER_DAY),
            max_group_members: confab_domain::DEFAULT_MAX_GROUP_MEMBERS,
            files: Arc::new(files::NoFiles),
            max_upload_bytes: DEFAULT_MAX_UPLOAD_BYTES,
            uploads: Arc::new(upload_limits::UploadGate::new(UploadLimits::default())),
            budgeted: None,
            typing_board: Arc::default(),
            searches: Arc::new(search::SearchSlots::new(DEFAULT_SEARCHES_PER_CONTACT)),
            reports_per_hour: Some(confab_domain::DEFAULT_REPORTS_PER_HOUR),
        }
    }

    /// At most `max` searches at once per contact, all its tokens together
    /// (`CONFAB_MAX_SEARCHES_PER_CONTACT`, at least 1); one more is
    /// [`ServiceError::TooManySearches`].
    #[must_use]
    pub fn with_max_searches_per_contact(mut self, max: u32) -> Self {
        self.searches = Arc::new(search::SearchSlots::new(max));
        self
    }

    /// Keeps uploaded files in `files`, each at most `max_upload_bytes`
    /// (docs/api.md "Files and attachments", `CONFAB_STORAGE_URL`,
    /// `CONFAB_MAX_UPLOAD_BYTES`). Without it, uploads are refused as
    /// unavailable.
    #[must_use]
    pub fn with_files(mut self, files: Arc<dyn FileStorage>, max_upload_bytes: u64) -> Self {
        self.files = files;
        self.max_upload_bytes = max_upload_bytes;
        self
    }

    /// Uploads of at most `max` bytes (the storage kept).
    #[must_use]
    pub fn with_max_upload_bytes(mut self, max: u64) -> Self {
        self.max_upload_bytes = max;
        self
    }

    /// The service with event payloads rendered by `render` (the server
    /// renders per request: a file's link names the host it was asked
    /// on).
    #[must_use]
    pub fn rendering(&self, render: Arc<dyn PayloadRenderer>) -> Self {
        let mut service = self.clone();
        service.ports.render = render;
        service
    }

    /// Lets each request's store calls share a budget ([`Confab::within`]):
    /// `store` is the store behind the ports, whose handles can carry one.
    #[must_use]
    pub fn with_request_budgets<S>(mut self, store: S) -> Self
    where
        S: Store + WithBudget + 'static,
    {
        self.budgeted = Some(Arc::new(move |ports: &Ports, budget| {
            ports.with_store(Arc::new(store.with_budget(budget)))
        }));
        self
    }

    /// The service for one request whose store calls together wait at most
    /// `budget` (docs/api.md "Limits": no request waits on the database longer
    /// than 2 s). Each call waits at most the smaller of its own deadline and
    /// what is left. Without [`Confab::with_request_budgets`], the service
    /// as it is.
    #[must_use]
    pub fn within(&self, budget: DbBudget) -> Self {
        match &self.budgeted {
            Some(rebuild) => Self {
                ports: rebuild(&self.ports, budget),
                ..self.clone()
            },
            None => self.clone(),
        }
    }

    /// At most `keys_per_day` new idempotency keys per contact and UTC day
    /// (docs/api.md "Retry safely: idempotency keys", `CONFAB_IDEMPOTENCY_KEYS_PER_DAY`); one more is
    /// [`ServiceError::IdempotencyQuota`]. 0: no limit.
    #[must_use]
    pub fn with_idempotency_quota(mut self, keys_per_day: u32) -> Self {
        self.keys_per_day = (keys_per_day > 0).then_some(keys_per_day);
        self
    }

    /// At most `per_hour` new reports per contact and UTC hour, all its
    /// tokens together (`CONFAB_REPORTS_PER_HOUR`); one more is
    /// [`ServiceError::ReportQuota`], and writes nothing. 0: no limit.
    #[must_use]
    pub fn with_report_quota(mut self, per_hour: u32) -> Self {
        self.reports_per_hour = (per_hour > 0).then_some(per_hour);
        self
    }

    /// At most `max` members in a group (docs/api.md "Groups",
    /// `CONFAB_MAX_GROUP_MEMBERS`); a change past it is refused with
    /// [`confab_domain::Rule::TooManyMembers`], writing nothing.
    #[must_use]
    pub fn with_max_group_members(mut self, max: u64) -> Self {
        self.max_group_members = max;
        self
    }

    fn now(&self) -> Timestamp {
        self.ports.clock.now()
    }

    fn new_uuid(&self) -> Uuid {
        self.ports.ids.new_id()
    }

    /// Fresh event ids (time-ordered, from the id generator).
    fn event_ids(&self) -> impl FnMut() -> EventId + '_ {
        move || EventId::from_uuid(self.new_uuid())
    }

    /// The events of a write, to hand to the store with it.
    fn outbox(&self, events: Vec<Event>) -> Outbox {
        Outbox::new(events, self.ports.render.clone())
    }

    /// After a write committed: wakes this process's event streams.
    fn committed(&self) {
        self.ports.signal.committed();
    }

    /// Whether the store answers (for readiness probes).
    pub async fn ready(&self) -> Result<(), ServiceError> {
        Ok(self.ports.health.ping().await?)
    }

    /// The store's connection pool, for metrics.
    pub fn pool_state(&self) -> Option<PoolState> {
        self.ports.health.pool_state()
    }
}

/// The wall clock, in microseconds.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let micros = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
        Timestamp::from_micros(micros)
    }
}

/// Time-ordered UUIDv7 ids.
pub struct UuidV7;

impl IdGenerator for UuidV7 {
    fn new_id(&self) -> Uuid {
        Uuid::now_v7()
    }
}
