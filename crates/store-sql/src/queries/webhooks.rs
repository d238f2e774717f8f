//! Webhooks (API.md section 11): the list, and the state of their
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

use confab_domain::{EventId, EventType, Timestamp};
use confab_ports::{StoredEvent, Webhook, WebhookId, WebhookSecret};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer};

use crate::error::{inconsistent, Error};
use crate::id::{DbId, IdSql};
use crate::schema::{events, webhooks};

/// What the webhook statements write differently per database.
pub(crate) trait WebhookSql {
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
pub(crate) struct WebhookRow {
    pub(crate) id: DbId,
    pub(crate) url: String,
    pub(crate) event_types: String,
    pub(crate) secret: String,
    pub(crate) created_at: i64,
    pub(crate) cursor_position: i64,
}

impl WebhookRow {
    pub(crate) fn into_webhook(self) -> Result<Webhook, Error> {
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
pub(crate) struct RetryKey {
    #[diesel(sql_type = IdSql)]
    pub(crate) webhook_id: DbId,
    #[diesel(sql_type = IdSql)]
    pub(crate) event_id: DbId,
    #[diesel(sql_type = Integer)]
    pub(crate) attempt: i32,
    #[diesel(sql_type = BigInt)]
    pub(crate) first_attempt_at: i64,
}

/// An event row as webhooks read it.
#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = events)]
pub(crate) struct EventRow {
    pub(crate) id: DbId,
    pub(crate) kind: String,
    pub(crate) created_at: i64,
    pub(crate) position: i64,
    pub(crate) payload: String,
}

impl EventRow {
    pub(crate) fn into_event(self) -> Result<StoredEvent, Error> {
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
pub(crate) fn encode_types(types: &[EventType]) -> String {
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

/// The single value of a `SELECT <expression>`.
#[derive(Debug, QueryableByName)]
pub(crate) struct Position {
    #[diesel(sql_type = BigInt)]
    pub(crate) position: i64,
}

/// The lease statement's text: `$1` holder, `$2` until, `$3` now. `end`:
/// the backend's `EVENT_START_SQL`, the last position that is final now.
pub(crate) fn lease_webhook_sql<Db: WebhookSql>(end: &str) -> String {
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
pub(crate) fn lease_retries_sql<Db: WebhookSql>() -> String {
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

/// Expands the functions of this file in a backend's `queries` module (see
/// [`super::instantiate`]).
macro_rules! expand {
    () => {
        use confab_domain::{EventId, EventType, Timestamp};
        use confab_ports::{
            CursorMove, EventBatch, LeasedRetry, RetryOutcome, Webhook, WebhookId, WebhookLease,
            WebhookSecret,
        };
        use diesel::prelude::*;
        use diesel::sql_types::BigInt;
        use uuid::Uuid;

        use super::{Backend, Conn, Db, Result};
        use crate::error::inconsistent;
        use crate::id::{DbId, IdSql};
        use crate::queries::not_found;
        use crate::queries::webhooks::{
            encode_types, lease_retries_sql, lease_webhook_sql, EventRow, Position, RetryKey,
            WebhookRow,
        };
        use crate::schema::{events, webhook_retries as retries, webhooks};
        use crate::SqlBackend;

        /// The last position that is final now: every event up to it is
        /// readable, every event committed later lies after it.
        fn final_end(conn: &mut Conn) -> Result<i64> {
            let row: Position = diesel::sql_query(format!(
                "SELECT {} AS position",
                <Backend as SqlBackend>::EVENT_START_SQL
            ))
            .get_result(conn)?;
            Ok(row.position)
        }

        pub(crate) fn create_webhook(
            conn: &mut Conn,
            id: WebhookId,
            url: String,
            types: Vec<EventType>,
            secret: WebhookSecret,
            created_at: Timestamp,
        ) -> Result<Webhook> {
            // Every event committed from now on lies after it.
            let cursor = final_end(conn)?;
            diesel::insert_into(webhooks::table)
                .values((
                    webhooks::id.eq(DbId::from(*id.as_uuid())),
                    webhooks::url.eq(&url),
                    webhooks::event_types.eq(encode_types(&types)),
                    webhooks::secret.eq(secret.expose()),
                    webhooks::created_at.eq(created_at.micros()),
                    webhooks::cursor_position.eq(cursor),
                    webhooks::leased_until.eq(0_i64),
                ))
                .execute(conn)?;
            Ok(Webhook {
                id,
                url,
                events: types,
                secret,
                created_at,
            })
        }

        pub(crate) fn list_webhooks(conn: &mut Conn) -> Result<Vec<Webhook>> {
            webhooks::table
                .order((webhooks::created_at.asc(), webhooks::id.asc()))
                .select(WebhookRow::as_select())
                .load(conn)?
                .into_iter()
                .map(WebhookRow::into_webhook)
                .collect()
        }

        pub(crate) fn delete_webhook(conn: &mut Conn, id: WebhookId) -> Result<()> {
            let id = DbId::from(*id.as_uuid());
            // Its retries first: SQLite enforces the cascade only where
            // foreign keys are on, and this needs no such assumption.
            diesel::delete(retries::table.filter(retries::webhook_id.eq(id))).execute(conn)?;
            let deleted = diesel::delete(webhooks::table.find(id)).execute(conn)?;
            if deleted == 0 {
                return Err(not_found());
            }
            Ok(())
        }

        /// Whether a webhook is free at `now` with events after its cursor:
        /// a read, so that idle polling never takes SQLite's write lock.
        pub(crate) fn webhook_work_waiting(conn: &mut Conn, now: Timestamp) -> Result<bool> {
            let found: Option<DbId> = webhooks::table
                .filter(webhooks::leased_until.le(now.micros()))
                .filter(diesel::dsl::exists(
                    events::table
                        .filter(events::position.gt(webhooks::cursor_position))
                        .filter(events::position.le(diesel::dsl::sql::<BigInt>(
                            <Backend as SqlBackend>::EVENT_START_SQL,
                        ))),
                ))
                .select(webhooks::id)
                .first(conn)
                .optional()?;
            Ok(found.is_some())
        }

        /// Whether a retry is due at `now` (a read, like
        /// [`webhook_work_waiting`]).
        pub(crate) fn retry_due(conn: &mut Conn, now: Timestamp) -> Result<bool> {
            let found: Option<DbId> = retries::table
                .filter(retries::next_at.le(now.micros()))
                .select(retries::webhook_id)
                .first(conn)
                .optional()?;
            Ok(found.is_some())
        }

        pub(crate) fn lease_webhook(
            conn: &mut Conn,
            holder: Uuid,
            now: Timestamp,
            until: Timestamp,
        ) -> Result<Option<WebhookLease>> {
            let row: Option<WebhookRow> = diesel::sql_query(lease_webhook_sql::<Db>(
                <Backend as SqlBackend>::EVENT_START_SQL,
            ))
            .bind::<IdSql, _>(DbId::from(holder))
            .bind::<BigInt, _>(until.micros())
            .bind::<BigInt, _>(now.micros())
            .get_result(conn)
            .optional()?;
            let Some(row) = row else {
                return Ok(None);
            };
            let cursor = row.cursor_position;
            Ok(Some(WebhookLease {
                webhook: row.into_webhook()?,
                holder,
                cursor,
                until,
            }))
        }

        pub(crate) fn webhook_events(
            conn: &mut Conn,
            types: Vec<EventType>,
            after: i64,
            limit: u32,
        ) -> Result<EventBatch> {
            let end = final_end(conn)?;
            let mut query = events::table
                .filter(events::position.gt(after))
                .filter(events::position.le(end))
                .into_boxed();
            if !types.is_empty() {
                let names: Vec<&str> = types.iter().map(|t| t.name()).collect();
                query = query.filter(events::kind.eq_any(names));
            }
            let rows: Vec<EventRow> = query
                .order(events::position.asc())
                .limit(i64::from(limit))
                .select(EventRow::as_select())
                .load(conn)?;
            let full = rows.len() >= usize::try_from(limit).unwrap_or(usize::MAX);
            let through = match rows.last() {
                // More may follow the last one returned.
                Some(last) if full => last.position,
                // Every readable event was returned or filtered out.
                _ => end.max(after),
            };
            let events = rows
                .into_iter()
                .map(EventRow::into_event)
                .collect::<Result<Vec<_>>>()?;
            Ok(EventBatch { events, through })
        }

        pub(crate) fn move_cursor(conn: &mut Conn, change: CursorMove) -> Result<bool> {
            let id = DbId::from(*change.webhook.as_uuid());
            let moved = diesel::update(
                webhooks::table
                    .find(id)
                    .filter(webhooks::leased_by.eq(DbId::from(change.holder)))
                    .filter(webhooks::leased_until.gt(change.now.micros())),
            )
            .set((
                webhooks::cursor_position.eq(change.to),
                webhooks::leased_until.eq(change.renew_until.micros()),
            ))
            .execute(conn)?;
            if moved == 0 {
                return Ok(false);
            }
            if let Some(retry) = change.retry {
                diesel::insert_into(retries::table)
                    .values((
                        retries::webhook_id.eq(id),
                        retries::event_id.eq(DbId::from(*retry.event.as_uuid())),
                        retries::attempt.eq(1),
                        retries::next_at.eq(retry.next_at.micros()),
                        retries::first_attempt_at.eq(retry.first_attempt_at.micros()),
                    ))
                    .on_conflict_do_nothing()
                    .execute(conn)?;
            }
            Ok(true)
        }

        pub(crate) fn release_webhook(
            conn: &mut Conn,
            id: WebhookId,
            holder: Uuid,
            now: Timestamp,
        ) -> Result<()> {
            diesel::update(
                webhooks::table
                    .find(DbId::from(*id.as_uuid()))
                    .filter(webhooks::leased_by.eq(DbId::from(holder))),
            )
            .set((
                webhooks::leased_by.eq(None::<DbId>),
                webhooks::leased_until.eq(now.micros()),
            ))
            .execute(conn)?;
            Ok(())
        }

        pub(crate) fn lease_retries(
            conn: &mut Conn,
            holder: Uuid,
            now: Timestamp,
            until: Timestamp,
            limit: u32,
        ) -> Result<Vec<LeasedRetry>> {
            let keys: Vec<RetryKey> = diesel::sql_query(lease_retries_sql::<Db>())
                .bind::<IdSql, _>(DbId::from(holder))
                .bind::<BigInt, _>(until.micros())
                .bind::<BigInt, _>(now.micros())
                .bind::<BigInt, _>(i64::from(limit))
                .load(conn)?;
            if keys.is_empty() {
                return Ok(Vec::new());
            }
            let mut rows: Vec<(WebhookRow, EventRow)> = retries::table
                .inner_join(webhooks::table)
                .inner_join(events::table)
                .filter(retries::leased_by.eq(DbId::from(holder)))
                .select((WebhookRow::as_select(), EventRow::as_select()))
                .load(conn)?;
            let mut leased = Vec::with_capacity(keys.len());
            for key in keys {
                let found = rows
                    .iter()
                    .position(|(w, e)| w.id == key.webhook_id && e.id == key.event_id);
                let Some(i) = found else {
                    return Err(inconsistent(format!(
                        "leased retry of webhook {} for event {} has no webhook or event",
                        key.webhook_id.uuid(),
                        key.event_id.uuid()
                    )));
                };
                let (webhook, event) = rows.swap_remove(i);
                leased.push(LeasedRetry {
                    webhook: webhook.into_webhook()?,
                    event: event.into_event()?,
                    attempt: u32::try_from(key.attempt).unwrap_or(u32::MAX),
                    first_attempt_at: Timestamp::from_micros(key.first_attempt_at),
                    holder,
                });
            }
            Ok(leased)
        }

        pub(crate) fn settle_retry(
            conn: &mut Conn,
            webhook: WebhookId,
            event: EventId,
            holder: Uuid,
            outcome: RetryOutcome,
        ) -> Result<bool> {
            let this = retries::table
                .filter(retries::webhook_id.eq(DbId::from(*webhook.as_uuid())))
                .filter(retries::event_id.eq(DbId::from(*event.as_uuid())))
                .filter(retries::leased_by.eq(DbId::from(holder)));
            let settled = match outcome {
                RetryOutcome::Done => diesel::delete(this).execute(conn)?,
                RetryOutcome::RetryAt(at) => diesel::update(this)
                    .set((
                        retries::next_at.eq(at.micros()),
                        retries::leased_by.eq(None::<DbId>),
                    ))
                    .execute(conn)?,
            };
            Ok(settled == 1)
        }
    };
}
pub(crate) use expand;
