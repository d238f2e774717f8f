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

use confab_domain::{EventId, EventType, Page, Paged, Timestamp};
use confab_ports::{
    CursorMove, DeliveryAttempt, EventBatch, LeasedRetry, RetryOutcome, Webhook, WebhookBacklog,
    WebhookId, WebhookLease, WebhookSecret,
};
use diesel::prelude::*;
use diesel::sql_types::BigInt;
use uuid::Uuid;

use super::{Backend, Conn, Db, Result};
use confab_store_sql::error::inconsistent;
use confab_store_sql::id::{DbId, IdSql};
use confab_store_sql::keyset;
use confab_store_sql::queries::not_found;
use confab_store_sql::queries::paging::{fetch_size, finish_page, seek};
use confab_store_sql::queries::webhooks::{
    encode_types, lease_retries_sql, lease_webhook_sql, EventRow, Position, RetryKey, WebhookRow,
};
use confab_store_sql::schema::{
    events, webhook_deliveries as deliveries, webhook_retries as retries, webhooks,
};
use confab_store_sql::SqlBackend;

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
    diesel::delete(deliveries::table.filter(deliveries::webhook_id.eq(id))).execute(conn)?;
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
    if let Some(attempt) = change.attempt {
        record_attempt(conn, id, attempt)?;
    }
    Ok(true)
}

/// Keeps the record of one attempt.
fn record_attempt(conn: &mut Conn, webhook: DbId, a: DeliveryAttempt) -> Result<()> {
    diesel::insert_into(deliveries::table)
        .values((
            deliveries::id.eq(DbId::from(a.id)),
            deliveries::webhook_id.eq(webhook),
            deliveries::event_id.eq(DbId::from(*a.event.as_uuid())),
            deliveries::attempt.eq(i32::try_from(a.attempt).unwrap_or(i32::MAX)),
            deliveries::status.eq(a.status.map(i32::from)),
            deliveries::error.eq(a.error),
            deliveries::attempted_at.eq(a.at.micros()),
        ))
        .execute(conn)?;
    Ok(())
}

pub(crate) fn list_deliveries(
    conn: &mut Conn,
    webhook: WebhookId,
    page: Page<Uuid>,
) -> Result<Option<Paged<DeliveryAttempt>>> {
    let w = DbId::from(*webhook.as_uuid());
    if webhooks::table.find(w).count().get_result::<i64>(conn)? == 0 {
        return Ok(None);
    }
    let (limit, fetch) = fetch_size(&page);
    let seek = seek(page.cursor, |id: Uuid| {
        Ok(deliveries::table
            .find(DbId::from(id))
            .filter(deliveries::webhook_id.eq(w))
            .select((deliveries::attempted_at, deliveries::id))
            .first::<(i64, DbId)>(conn)
            .optional()?)
    })?;
    let backwards = seek.backwards();
    let q = deliveries::table
        .filter(deliveries::webhook_id.eq(w))
        .into_boxed::<Db>();
    type Row = (DbId, DbId, i32, Option<i32>, Option<String>, i64);
    let rows: Vec<Row> = keyset!(q, deliveries::attempted_at, deliveries::id, seek)
        .select((
            deliveries::id,
            deliveries::event_id,
            deliveries::attempt,
            deliveries::status,
            deliveries::error,
            deliveries::attempted_at,
        ))
        .limit(fetch)
        .load(conn)?;
    let (rows, has_more) = finish_page(rows, limit, backwards);
    let items = rows
        .into_iter()
        .map(|(id, event, attempt, status, error, at)| DeliveryAttempt {
            id: id.uuid(),
            event: EventId::from_uuid(event.uuid()),
            attempt: u32::try_from(attempt).unwrap_or(0),
            status: status.and_then(|s| u16::try_from(s).ok()),
            error,
            at: Timestamp::from_micros(at),
        })
        .collect();
    Ok(Some(Paged { items, has_more }))
}

pub(crate) fn webhook_backlog(conn: &mut Conn) -> Result<WebhookBacklog> {
    let retrying: i64 = retries::table.count().get_result(conn)?;
    // The first event after each webhook's cursor (one index probe per
    // webhook), and the events waiting for a retry.
    let first_pending: Option<i64> = diesel::sql_query(
        "SELECT MIN((SELECT e.created_at FROM events e \
                     WHERE e.position > w.cursor_position ORDER BY e.position LIMIT 1)) AS at \
         FROM webhooks w",
    )
    .get_result::<MinAt>(conn)?
    .at;
    let retry_pending: Option<i64> = retries::table
        .inner_join(events::table.on(events::id.eq(retries::event_id)))
        .select(diesel::dsl::min(events::created_at))
        .first(conn)?;
    let oldest = match (first_pending, retry_pending) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Ok(WebhookBacklog {
        retrying: u64::try_from(retrying).unwrap_or(0),
        oldest_pending_at: oldest.map(Timestamp::from_micros),
    })
}

#[derive(QueryableByName)]
struct MinAt {
    #[diesel(sql_type = diesel::sql_types::Nullable<BigInt>)]
    at: Option<i64>,
}

pub(crate) fn prune_deliveries(conn: &mut Conn, before: Timestamp, batch: u32) -> Result<u64> {
    let old: Vec<DbId> = deliveries::table
        .filter(deliveries::attempted_at.lt(before.micros()))
        .order(deliveries::attempted_at.asc())
        .select(deliveries::id)
        .limit(i64::from(batch))
        .load(conn)?;
    if old.is_empty() {
        return Ok(0);
    }
    let n = diesel::delete(deliveries::table.filter(deliveries::id.eq_any(old))).execute(conn)?;
    Ok(n as u64)
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
    attempt: DeliveryAttempt,
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
    if settled == 1 {
        record_attempt(conn, DbId::from(*webhook.as_uuid()), attempt)?;
    }
    Ok(settled == 1)
}
