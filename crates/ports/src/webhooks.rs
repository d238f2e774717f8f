//! Webhooks (docs/api.md "Webhooks"): the operator's list of URLs that receive
//! every event (or those of some types), and the units of work of their
//! delivery. First attempts follow a per-webhook cursor over the events,
//! in event order, made by whoever holds the webhook's lease; a failed
//! attempt becomes a retry, leased on its own, so it never holds back the
//! events after it. Leases run out, so that an attempt in flight when its
//! process died is made again (at least once); while one holds, no other
//! process makes that attempt.

use std::fmt;
use std::net::IpAddr;

use async_trait::async_trait;
use confab_domain::{EventId, EventType, Page, Paged, Timestamp};
use uuid::Uuid;

use crate::{StoreError, StoredEvent};

/// Names a webhook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WebhookId(Uuid);

impl WebhookId {
    /// The webhook named by `id`.
    pub const fn from_uuid(id: Uuid) -> Self {
        Self(id)
    }
    /// The id as a UUID.
    pub const fn as_uuid(&self) -> &Uuid {
        &self.0
    }
}

impl fmt::Display for WebhookId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0.hyphenated(), f)
    }
}

/// The key a webhook's deliveries are signed with. Never printed by
/// `Debug`; [`WebhookSecret::expose`] is the one way to read it.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret(String);

impl WebhookSecret {
    /// Wraps `secret`, so that it is never printed by mistake.
    pub fn new(secret: String) -> Self {
        Self(secret)
    }
    /// The secret itself: to sign with, or to show once at creation.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WebhookSecret(<redacted>)")
    }
}

/// A webhook as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    /// Names the webhook.
    pub id: WebhookId,
    /// An `http://` or `https://` URL, checked when it was created.
    pub url: String,
    /// The types it receives; empty: every type.
    pub events: Vec<EventType>,
    /// The key its deliveries are signed with.
    pub secret: WebhookSecret,
    /// When it was created; webhooks are listed in this order.
    pub created_at: Timestamp,
}

/// A webhook held for its first attempts until `until`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookLease {
    /// The webhook held.
    pub webhook: Webhook,
    /// Names this hold: only it may move the cursor.
    pub holder: Uuid,
    /// The position of the last event whose first attempt was made.
    pub cursor: i64,
    /// When the lease runs out unless [`WebhookStore::move_cursor`] renews
    /// it: then another holder may take the webhook.
    pub until: Timestamp,
}

/// Events a webhook's filter takes, after its cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventBatch {
    /// Oldest first.
    pub events: Vec<StoredEvent>,
    /// How far the read went: every readable event up to this position was
    /// returned or filtered out, so the cursor may move here once the
    /// returned ones are attempted. At least `after`.
    pub through: i64,
}

/// A failed first attempt, to retry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRetry {
    /// The event whose first attempt failed.
    pub event: EventId,
    /// When the next attempt (the second) is due.
    pub next_at: Timestamp,
    /// When the first attempt was made.
    pub first_attempt_at: Timestamp,
}

/// One attempt to deliver an event to a webhook, as the operator reads it
/// (`GET /v1/admin/webhooks/:id/deliveries`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryAttempt {
    /// Names the record (a page cursor).
    pub id: Uuid,
    /// The event sent.
    pub event: EventId,
    /// 1 for the first attempt, 2 for the first retry, ...
    pub attempt: u32,
    /// The receiver's answer, when there was one.
    pub status: Option<u16>,
    /// Why there was no answer (a timeout, a refused address, a failed
    /// connection), when there was none.
    pub error: Option<String>,
    /// When the attempt ended.
    pub at: Timestamp,
}

/// What the deliveries still owe, for the operator's metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WebhookBacklog {
    /// Deliveries whose last attempt failed and that wait for a retry.
    pub retrying: u64,
    /// When the oldest event not yet delivered to some webhook was made:
    /// waiting for its first attempt, or for a retry; `None`: none waits.
    pub oldest_pending_at: Option<Timestamp>,
}

/// Moves a leased webhook's cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorMove {
    /// The leased webhook.
    pub webhook: WebhookId,
    /// The lease's holder ([`WebhookLease::holder`]).
    pub holder: Uuid,
    /// The new cursor: the position of the event just attempted, or a
    /// batch's `through`.
    pub to: i64,
    /// The attempt just made failed: recorded with the move, in its
    /// transaction, so that an event is either still ahead of the cursor or
    /// delivered or due for a retry.
    pub retry: Option<NewRetry>,
    /// The attempt just made, recorded with the move (none when the move
    /// skips events the filter does not take).
    pub attempt: Option<DeliveryAttempt>,
    /// The lease holds only while it has not run out by `now`...
    pub now: Timestamp,
    /// ... and then holds until this.
    pub renew_until: Timestamp,
}

/// A retry held for one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeasedRetry {
    /// The webhook to deliver to, as stored now.
    pub webhook: Webhook,
    /// The event to deliver again, with its payload as the acting contact
    /// sees it.
    pub event: StoredEvent,
    /// The number of this attempt (2 for the first retry).
    pub attempt: u32,
    /// When the first attempt was made ([`NewRetry::first_attempt_at`]).
    pub first_attempt_at: Timestamp,
    /// Names this hold: only it may settle the retry.
    pub holder: Uuid,
}

/// What became of a retry's attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryOutcome {
    /// Delivered, or given up: the retry is forgotten.
    Done,
    /// Failed: the next attempt is due at this time.
    RetryAt(Timestamp),
}

/// Webhooks and their deliveries' state.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait WebhookStore: Send + Sync {
    /// Stores a webhook whose cursor is the end of the events readable now,
    /// so that it receives every event committed after this call.
    async fn create_webhook(
        &self,
        id: WebhookId,
        url: String,
        events: Vec<EventType>,
        secret: WebhookSecret,
        created_at: Timestamp,
    ) -> Result<Webhook, StoreError>;
    /// Every webhook, oldest first.
    async fn list_webhooks(&self) -> Result<Vec<Webhook>, StoreError>;
    /// Deletes the webhook with its retries; an attempt in flight can no
    /// longer move its cursor.
    /// # Errors
    /// - MUST return `NotFound` when there is no such webhook.
    async fn delete_webhook(&self, id: WebhookId) -> Result<(), StoreError>;
    /// Takes one webhook whose lease is free (none, or run out by `now`)
    /// and which has readable events after its cursor, for `holder` until
    /// `until`. Never the same webhook to two callers while the lease
    /// holds, whichever process they run in.
    async fn lease_webhook(
        &self,
        holder: Uuid,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<Option<WebhookLease>, StoreError>;
    /// The readable events after position `after` whose type is in `types`
    /// (any type when empty), oldest first, at most `limit`, with their
    /// payload as the acting contact sees it.
    async fn webhook_events(
        &self,
        types: Vec<EventType>,
        after: i64,
        limit: u32,
    ) -> Result<EventBatch, StoreError>;
    /// Moves the cursor (and records the retry) only while `holder` still
    /// holds the lease at `now`, renewing it; `false` (nothing written)
    /// when the lease was lost or the webhook deleted.
    async fn move_cursor(&self, change: CursorMove) -> Result<bool, StoreError>;
    /// Gives up `holder`'s lease at `now`, so that any process may take
    /// the webhook again at once.
    async fn release_webhook(
        &self,
        id: WebhookId,
        holder: Uuid,
        now: Timestamp,
    ) -> Result<(), StoreError>;
    /// Takes at most `limit` retries due at `now` (oldest due first), for
    /// `holder` until `until` (then they are due again), counting the
    /// attempt each is for. Never the same retry to two callers while the
    /// lease holds.
    async fn lease_retries(
        &self,
        holder: Uuid,
        now: Timestamp,
        until: Timestamp,
        limit: u32,
    ) -> Result<Vec<LeasedRetry>, StoreError>;
    /// Settles a leased retry and records its `attempt`; `false` (nothing
    /// written) when `holder` no longer holds it.
    async fn settle_retry(
        &self,
        webhook: WebhookId,
        event: EventId,
        holder: Uuid,
        outcome: RetryOutcome,
        attempt: DeliveryAttempt,
    ) -> Result<bool, StoreError>;
    /// A page of the webhook's attempts, newest first; `None` when there is
    /// no such webhook.
    /// # Errors
    /// - MUST return `CursorNotFound` when the cursor is not an attempt of
    ///   this webhook.
    async fn list_deliveries(
        &self,
        webhook: WebhookId,
        page: Page<Uuid>,
    ) -> Result<Option<Paged<DeliveryAttempt>>, StoreError>;
    /// What the deliveries owe now (a few indexed reads).
    async fn webhook_backlog(&self) -> Result<WebhookBacklog, StoreError>;
    /// Deletes at most `batch` attempt records made before `before`;
    /// returns how many.
    async fn prune_deliveries(&self, before: Timestamp, batch: u32) -> Result<u64, StoreError>;
}

/// Resolves host names to the addresses a connection would use (so that
/// the service can refuse private ones).
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait HostResolver: Send + Sync {
    /// Every address of `host`; an error when it cannot be resolved.
    async fn resolve(&self, host: &str) -> Result<Vec<IpAddr>, String>;
}
