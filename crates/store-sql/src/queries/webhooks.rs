//! Webhooks (docs/api.md "Webhooks"): the list, and the state of their
//! deliveries. First attempts follow each webhook's cursor over the events,
//! made by whoever holds its lease; failed ones become retry rows, leased
//! one by one. Both leases are taken in one statement that PostgreSQL runs
//! with `FOR UPDATE SKIP LOCKED` (several processes never take the same
//! row; none waits on another's) and SQLite under its single writer.
//!
//! Events are read only up to the backend's `EVENT_START_SQL`, the last
//! position that is final now (see the events migration): on PostgreSQL a
//! transaction with a lower id may still commit an event behind one already
//! committed, so a cursor must never pass a position that could still fill.
//! That bound is read once per batch, so that a batch that read everything
//! up to it may move the cursor there (SQLite's `EVENT_HORIZON_SQL`, "no
//! limit", would let an event committed meanwhile be passed over).
//!
//! The queries (`queries.rs`, re-exported here) are generic over the
//! backend; the statements they run are named in [`statements`], and
//! listed there as what a backend's connection must run. This module holds
//! the rows and the text of the lease statements.

use confab_domain::{EventId, EventType, Timestamp};
use confab_ports::{StoredEvent, Webhook, WebhookId, WebhookSecret};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer};

use crate::error::{inconsistent, Error};
use crate::id::{DbId, IdSql};
use crate::schema::{events, webhooks};

mod queries;
pub mod statements;

pub use queries::*;

/// What the webhook statements write differently per database.
pub trait WebhookSql {
    /// Ends the `SELECT` that picks rows to lease.
    const SKIP_LOCKED: &'static str;
    /// `sql` with its `$n` placeholders as the database writes them.
    fn placeholders(sql: &str) -> String;
}

#[cfg(feature = "postgres")]
impl WebhookSql for diesel::pg::Pg {
    const SKIP_LOCKED: &'static str = "FOR UPDATE OF w SKIP LOCKED";
    fn placeholders(sql: &str) -> String {
        sql.to_owned()
    }
}

#[cfg(feature = "sqlite")]
impl WebhookSql for diesel::sqlite::Sqlite {
    /// The statement runs in a `BEGIN IMMEDIATE` transaction, which holds
    /// the database's write lock.
    const SKIP_LOCKED: &'static str = "";
    fn placeholders(sql: &str) -> String {
        sql.replace('$', "?")
    }
}

/// A webhook row.
#[derive(Debug, Queryable, Selectable, QueryableByName)]
#[diesel(table_name = webhooks)]
pub struct WebhookRow {
    pub id: DbId,
    pub url: String,
    pub event_types: String,
    pub secret: String,
    pub created_at: i64,
    pub cursor_position: i64,
}

impl WebhookRow {
    pub fn into_webhook(self) -> Result<Webhook, Error> {
        Ok(Webhook {
            id: WebhookId::from_uuid(self.id.uuid()),
            url: self.url,
            events: decode_types(&self.event_types)?,
            secret: WebhookSecret::new(self.secret),
            created_at: Timestamp::from_micros(self.created_at),
        })
    }
}

/// A retry as its lease returns it.
#[derive(Debug, QueryableByName)]
pub struct RetryKey {
    #[diesel(sql_type = IdSql)]
    pub webhook_id: DbId,
    #[diesel(sql_type = IdSql)]
    pub event_id: DbId,
    #[diesel(sql_type = Integer)]
    pub attempt: i32,
    #[diesel(sql_type = BigInt)]
    pub first_attempt_at: i64,
}

/// An event row as webhooks read it.
#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = events)]
pub struct EventRow {
    pub id: DbId,
    pub kind: String,
    pub created_at: i64,
    pub position: i64,
    pub payload: String,
}

impl EventRow {
    pub fn into_event(self) -> Result<StoredEvent, Error> {
        Ok(StoredEvent {
            id: EventId::from_uuid(self.id.uuid()),
            kind: self
                .kind
                .parse()
                .map_err(|_| inconsistent(format!("unknown event type {:?}", self.kind)))?,
            created_at: Timestamp::from_micros(self.created_at),
            position: self.position,
            payload: self.payload,
        })
    }
}

/// The filter as stored: names, comma-separated (empty: every type).
pub fn encode_types(types: &[EventType]) -> String {
    types.iter().map(|t| t.name()).collect::<Vec<_>>().join(",")
}

fn decode_types(stored: &str) -> Result<Vec<EventType>, Error> {
    stored
        .split(',')
        .filter(|name| !name.is_empty())
        .map(|name| {
            name.parse()
                .map_err(|_| inconsistent(format!("unknown webhook event type {name:?}")))
        })
        .collect()
}

/// The earliest of some times, if any (`SELECT MIN(..) AS at`).
#[derive(Debug, QueryableByName)]
pub struct MinAt {
    #[diesel(sql_type = diesel::sql_types::Nullable<BigInt>)]
    pub at: Option<i64>,
}

/// The single value of a `SELECT <expression>`.
#[derive(Debug, QueryableByName)]
pub struct Position {
    #[diesel(sql_type = BigInt)]
    pub position: i64,
}

/// The lease statement's text: `$1` holder, `$2` until, `$3` now. `end`:
/// the backend's `EVENT_START_SQL`, the last position that is final now.
pub fn lease_webhook_sql<Db: WebhookSql>(end: &str) -> String {
    Db::placeholders(&format!(
        "UPDATE webhooks SET leased_by = $1, leased_until = $2 \
         WHERE leased_until <= $3 AND id = ( \
             SELECT w.id FROM webhooks w \
             WHERE w.leased_until <= $3 AND EXISTS ( \
                 SELECT 1 FROM events e \
                 WHERE e.position > w.cursor_position AND e.position <= {end} \
             ) \
             ORDER BY w.leased_until, w.id LIMIT 1 {lock} \
         ) \
         RETURNING id, url, event_types, secret, created_at, cursor_position",
        lock = Db::SKIP_LOCKED,
    ))
}

/// The retries' lease statement: `$1` holder, `$2` until, `$3` now, `$4`
/// limit. The lease moves `next_at` to its end: an attempt whose process
/// died is due again then.
pub fn lease_retries_sql<Db: WebhookSql>() -> String {
    Db::placeholders(&format!(
        "UPDATE webhook_retries SET leased_by = $1, next_at = $2, attempt = attempt + 1 \
         WHERE next_at <= $3 AND (webhook_id, event_id) IN ( \
             SELECT w.webhook_id, w.event_id FROM webhook_retries w \
             WHERE w.next_at <= $3 ORDER BY w.next_at LIMIT $4 {lock} \
         ) \
         RETURNING webhook_id, event_id, attempt, first_attempt_at",
        lock = Db::SKIP_LOCKED,
    ))
}
