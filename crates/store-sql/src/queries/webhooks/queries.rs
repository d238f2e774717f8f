//! The webhook queries, generic over the backend (docs/api.md
//! "Webhooks"; see the parent module for leases, cursors and the bound on
//! the events read). Each runs inside the transaction its caller (the port
//! implementation) opened.

use confab_domain::{EventId, EventType, Page, Paged, Timestamp};
use confab_ports::{
    CursorMove, DeliveryAttempt, EventBatch, LeasedRetry, RetryOutcome, Webhook, WebhookBacklog,
    WebhookId, WebhookLease, WebhookSecret,
};
use diesel::OptionalExtension;
use uuid::Uuid;

use super::statements::{self as s, DeliveryRow, OldestRetried};
use super::{
    encode_types, lease_retries_sql, lease_webhook_sql, EventRow, MinAt, Position, RetryKey,
    WebhookRow,
};
use crate::error::inconsistent;
use crate::id::DbId;
use crate::queries::paging::{fetch_size, finish_page, seek, Seek};
use crate::queries::{not_found, Result};
use crate::raw::{numbered, Bind};
use crate::run::{Exec, Run};
use crate::SqlBackend;

/// The last position that is final now: every event up to it is
/// readable, every event committed later lies after it.
fn final_end<B: SqlBackend>(conn: &mut B::Conn) -> Result<i64> {
    let row: Position = conn.get_row(diesel::sql_query(format!(
        "SELECT {} AS position",
        B::EVENT_START_SQL
    )))?;
    Ok(row.position)
}

/// Stores a new webhook; its cursor starts at the last final position.
pub fn create_webhook<B: SqlBackend>(
    conn: &mut B::Conn,
    id: WebhookId,
    url: String,
    types: Vec<EventType>,
    secret: WebhookSecret,
    created_at: Timestamp,
) -> Result<Webhook> {
    // Every event committed from now on lies after it.
    let cursor = final_end::<B>(conn)?;
    conn.exec(s::insert_webhook(
        DbId::from(*id.as_uuid()),
        url.clone(),
        encode_types(&types),
        secret.expose().to_owned(),
        created_at.micros(),
        cursor,
    ))?;
    Ok(Webhook {
        id,
        url,
        events: types,
        secret,
        created_at,
    })
}

/// Every webhook, oldest first.
pub fn list_webhooks<B: SqlBackend>(conn: &mut B::Conn) -> Result<Vec<Webhook>> {
    let rows: Vec<WebhookRow> = conn.load_rows(s::all_webhooks::<B::Db>())?;
    rows.into_iter().map(WebhookRow::into_webhook).collect()
}

/// Deletes a webhook with its retries and delivery records.
pub fn delete_webhook<B: SqlBackend>(conn: &mut B::Conn, id: WebhookId) -> Result<()> {
    let id = DbId::from(*id.as_uuid());
    // Its retries first: SQLite enforces the cascade only where
    // foreign keys are on, and this needs no such assumption.
    conn.exec(s::delete_retries_of(id))?;
    conn.exec(s::delete_deliveries_of(id))?;
    let deleted = conn.exec(s::delete_webhook(id))?;
    if deleted == 0 {
        return Err(not_found());
    }
    Ok(())
}

/// Whether a webhook is free at `now` with events after its cursor:
/// a read, so that idle polling never takes SQLite's write lock.
pub fn webhook_work_waiting<B: SqlBackend>(conn: &mut B::Conn, now: Timestamp) -> Result<bool> {
    let found: Option<DbId> = conn
        .get_row(s::free_webhook_with_events(
            now.micros(),
            B::EVENT_START_SQL,
        ))
        .optional()?;
    Ok(found.is_some())
}

/// Whether a retry is due at `now` (a read, like
/// [`webhook_work_waiting`]).
pub fn retry_due<B: SqlBackend>(conn: &mut B::Conn, now: Timestamp) -> Result<bool> {
    let found: Option<DbId> = conn.get_row(s::due_retry(now.micros())).optional()?;
    Ok(found.is_some())
}

/// Leases a free webhook with events after its cursor to `holder` until
/// `until`; `None` when there is none.
pub fn lease_webhook<B: SqlBackend>(
    conn: &mut B::Conn,
    holder: Uuid,
    now: Timestamp,
    until: Timestamp,
) -> Result<Option<WebhookLease>> {
    let statement = numbered::<B::Db>(
        lease_webhook_sql::<B::Db>(B::EVENT_START_SQL),
        vec![
            Bind::Id(DbId::from(holder)),
            Bind::Int(until.micros()),
            Bind::Int(now.micros()),
        ],
    );
    let row: Option<WebhookRow> = conn.get_row(statement).optional()?;
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

/// Up to `limit` readable events after `after` of the given types (all
/// when none), and how far the batch read.
pub fn webhook_events<B: SqlBackend>(
    conn: &mut B::Conn,
    types: Vec<EventType>,
    after: i64,
    limit: u32,
) -> Result<EventBatch> {
    let end = final_end::<B>(conn)?;
    let fetch = i64::from(limit);
    let rows: Vec<EventRow> = if types.is_empty() {
        conn.load_rows(s::events_between::<B::Db>(after, end, fetch))?
    } else {
        let names: Vec<String> = types.iter().map(|t| t.name().to_owned()).collect();
        conn.load_rows(s::events_of_kinds_between::<B::Db>(
            after, end, names, fetch,
        ))?
    };
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

/// Moves a leased webhook's cursor (and renews the lease), with the
/// retry and the attempt record that go with it; `false` when the lease
/// was lost.
pub fn move_cursor<B: SqlBackend>(conn: &mut B::Conn, change: CursorMove) -> Result<bool> {
    let id = DbId::from(*change.webhook.as_uuid());
    let moved = conn.exec(s::move_cursor(
        id,
        DbId::from(change.holder),
        change.now.micros(),
        change.to,
        change.renew_until.micros(),
    ))?;
    if moved == 0 {
        return Ok(false);
    }
    if let Some(retry) = change.retry {
        conn.exec(s::insert_retry::<B::Db>(
            id,
            DbId::from(*retry.event.as_uuid()),
            retry.next_at.micros(),
            retry.first_attempt_at.micros(),
        )?)?;
    }
    if let Some(attempt) = change.attempt {
        record_attempt::<B>(conn, id, attempt)?;
    }
    Ok(true)
}

/// Keeps the record of one attempt.
fn record_attempt<B: SqlBackend>(
    conn: &mut B::Conn,
    webhook: DbId,
    a: DeliveryAttempt,
) -> Result<()> {
    conn.exec(s::insert_delivery(
        DbId::from(a.id),
        webhook,
        DbId::from(*a.event.as_uuid()),
        i32::try_from(a.attempt).unwrap_or(i32::MAX),
        a.status.map(i32::from),
        a.error,
        a.at.micros(),
    ))?;
    Ok(())
}

/// A page of a webhook's delivery records, newest first; `None` when
/// there is no such webhook.
pub fn list_deliveries<B: SqlBackend>(
    conn: &mut B::Conn,
    webhook: WebhookId,
    page: Page<Uuid>,
) -> Result<Option<Paged<DeliveryAttempt>>> {
    let w = DbId::from(*webhook.as_uuid());
    let found: i64 = conn.get_row(s::webhooks_with_id(w))?;
    if found == 0 {
        return Ok(None);
    }
    let (limit, fetch) = fetch_size(&page);
    let seek = seek(page.cursor, |id: Uuid| {
        let key: Option<(i64, DbId)> = conn
            .get_row(s::delivery_key(DbId::from(id), w))
            .optional()?;
        Ok(key)
    })?;
    let backwards = seek.backwards();
    let rows: Vec<DeliveryRow> = match seek {
        Seek::First => conn.load_rows(s::deliveries_from_newest(w, fetch))?,
        Seek::After((at, id)) => conn.load_rows(s::deliveries_after(w, at, id, fetch))?,
        Seek::Before((at, id)) => conn.load_rows(s::deliveries_before(w, at, id, fetch))?,
    };
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

/// How many retries wait, and when the oldest event still to deliver was
/// made.
pub fn webhook_backlog<B: SqlBackend>(conn: &mut B::Conn) -> Result<WebhookBacklog> {
    let retrying: i64 = conn.get_row(s::retry_count())?;
    // The first event after each webhook's cursor (one index probe per
    // webhook), and the events waiting for a retry.
    let first_pending: MinAt = conn.get_row(diesel::sql_query(
        "SELECT MIN((SELECT e.created_at FROM events e \
                     WHERE e.position > w.cursor_position ORDER BY e.position LIMIT 1)) AS at \
         FROM webhooks w",
    ))?;
    let retry_pending: OldestRetried = conn.get_row(s::oldest_retried_event())?;
    let oldest = match (first_pending.at, retry_pending) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Ok(WebhookBacklog {
        retrying: u64::try_from(retrying).unwrap_or(0),
        oldest_pending_at: oldest.map(Timestamp::from_micros),
    })
}

/// Deletes up to `batch` delivery records made before `before`, oldest
/// first; how many it deleted.
pub fn prune_deliveries<B: SqlBackend>(
    conn: &mut B::Conn,
    before: Timestamp,
    batch: u32,
) -> Result<u64> {
    let old: Vec<DbId> =
        conn.load_rows(s::deliveries_made_before(before.micros(), i64::from(batch)))?;
    if old.is_empty() {
        return Ok(0);
    }
    let n = conn.exec(s::delete_deliveries(old))?;
    Ok(n as u64)
}

/// Frees a webhook from `holder`'s lease, due again at `now`.
pub fn release_webhook<B: SqlBackend>(
    conn: &mut B::Conn,
    id: WebhookId,
    holder: Uuid,
    now: Timestamp,
) -> Result<()> {
    conn.exec(s::release_webhook(
        DbId::from(*id.as_uuid()),
        DbId::from(holder),
        now.micros(),
    ))?;
    Ok(())
}

/// Leases up to `limit` due retries to `holder` until `until`, with their
/// webhooks and events.
pub fn lease_retries<B: SqlBackend>(
    conn: &mut B::Conn,
    holder: Uuid,
    now: Timestamp,
    until: Timestamp,
    limit: u32,
) -> Result<Vec<LeasedRetry>> {
    let statement = numbered::<B::Db>(
        lease_retries_sql::<B::Db>(),
        vec![
            Bind::Id(DbId::from(holder)),
            Bind::Int(until.micros()),
            Bind::Int(now.micros()),
            Bind::Int(i64::from(limit)),
        ],
    );
    let keys: Vec<RetryKey> = conn.load_rows(statement)?;
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let mut rows: Vec<(WebhookRow, EventRow)> =
        conn.load_rows(s::leased_retries::<B::Db>(DbId::from(holder)))?;
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

/// Settles a leased retry as `outcome` and records its attempt; `false`
/// when `holder` no longer held it.
pub fn settle_retry<B: SqlBackend>(
    conn: &mut B::Conn,
    webhook: WebhookId,
    event: EventId,
    holder: Uuid,
    outcome: RetryOutcome,
    attempt: DeliveryAttempt,
) -> Result<bool> {
    let (w, e, h) = (
        DbId::from(*webhook.as_uuid()),
        DbId::from(*event.as_uuid()),
        DbId::from(holder),
    );
    let settled = match outcome {
        RetryOutcome::Done => conn.exec(s::delete_held_retry(w, e, h))?,
        RetryOutcome::RetryAt(at) => conn.exec(s::postpone_held_retry(w, e, h, at.micros()))?,
    };
    if settled == 1 {
        record_attempt::<B>(conn, w, attempt)?;
    }
    Ok(settled == 1)
}
