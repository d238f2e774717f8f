//! Reading events (API.md section 11): a recipient's events after a
//! position, the events of the recipients with a stream in a process (its
//! fan-out, in batches bounded in events, payload bytes and recipient rows:
//! API.md section 9), and pruning.
//!
//! Only readable events are read: positions below the backend's horizon
//! ([`crate::SqlBackend::EVENT_HORIZON_SQL`]), which no event that commits
//! later can lie under. A reader that has read up to a position therefore
//! never misses an event behind it.

use std::collections::{HashMap, HashSet};

use confab_domain::{ContactId, EventId, EventType, Timestamp};
use confab_ports::{EventWithRecipients, FanOutBatch, FanOutLimits, StoredEvent};
use diesel::connection::DefaultLoadingMode;
use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable};

use super::{Backend, Conn, Result};
use confab_store_sql::error::inconsistent;
use confab_store_sql::id::DbId;
use confab_store_sql::queries::events_read::{prefix_within, size, OWNERS_PER_QUERY};
use confab_store_sql::rows::{contact_id, ts, DbKey};
use confab_store_sql::schema::{event_recipients, events, tokens};
use confab_store_sql::SqlBackend;

/// The positions below this are readable (see the module docs).
fn horizon() -> diesel::expression::SqlLiteral<BigInt> {
    sql::<BigInt>(<Backend as SqlBackend>::EVENT_HORIZON_SQL)
}

fn stored(
    id: DbId,
    kind: &str,
    created_at: i64,
    position: i64,
    payload: String,
) -> Result<StoredEvent> {
    let kind = kind
        .parse::<EventType>()
        .map_err(|_| inconsistent(format!("stored event type {kind:?} is unknown")))?;
    Ok(StoredEvent {
        id: EventId::from_uuid(id.uuid()),
        kind,
        created_at: ts(created_at),
        position,
        payload,
    })
}

pub(crate) fn event_position(conn: &mut Conn, id: EventId) -> Result<Option<i64>> {
    Ok(events::table
        .filter(events::id.eq(id.as_uuid().db()))
        .select(events::position)
        .first::<i64>(conn)
        .optional()?)
}

pub(crate) fn event_start(conn: &mut Conn) -> Result<i64> {
    Ok(
        diesel::select(sql::<BigInt>(<Backend as SqlBackend>::EVENT_START_SQL))
            .get_result::<i64>(conn)?,
    )
}

pub(crate) fn events_for(
    conn: &mut Conn,
    recipient: ContactId,
    after: i64,
    limit: u32,
) -> Result<Vec<StoredEvent>> {
    let rows: Vec<(DbId, String, i64, i64, Option<String>, String)> = event_recipients::table
        .inner_join(events::table)
        .filter(event_recipients::contact_id.eq(recipient.db()))
        .filter(event_recipients::position.gt(after))
        .filter(event_recipients::position.lt(horizon()))
        .order(event_recipients::position.asc())
        .limit(i64::from(limit))
        .select((
            events::id,
            events::kind,
            events::created_at,
            event_recipients::position,
            event_recipients::payload,
            events::payload,
        ))
        .load(conn)?;
    rows.into_iter()
        .map(|(id, kind, at, position, own, shared)| {
            stored(id, &kind, at, position, own.unwrap_or(shared))
        })
        .collect()
}

/// A payload's size in bytes, as an SQL expression over `column`
/// (a qualified column name): PostgreSQL answers it from the stored
/// length, without reading a TOASTed value.
fn octets(column: &str) -> String {
    format!("CAST(octet_length({column}) AS BIGINT)")
}

/// The event fan-out (see [`confab_ports::EventStore::recent_events`]),
/// in four statements on one connection:
///
/// 1. the next events' positions and payload sizes (at most
///    `limits.events`), cut to the prefix whose shared payloads fit
///    `limits.bytes`;
/// 2. their recipients' rows, without payloads, at most
///    `limits.recipient_rows` (cut to the events whose rows were all
///    read, or all rows of the first event alone), of which only
///    those in `to` are kept, with the size of their own payload;
///    the prefix is cut again so that own payloads fit the budget;
/// 3. those events with their shared payloads;
/// 4. the own payloads of the kept recipients that have one (a
///    statement per [`OWNERS_PER_QUERY`] of them).
///
/// Positions below the horizon never change, so the statements see
/// the same events without a transaction; an event pruned (or a
/// payload scrubbed) between them is left out (or read scrubbed).
pub(crate) fn recent_events(
    conn: &mut Conn,
    after: i64,
    limits: FanOutLimits,
    to: &HashSet<ContactId>,
) -> Result<FanOutBatch> {
    let events_limit = limits.events.max(1);
    let heads: Vec<(i64, i64)> = events::table
        .filter(events::position.gt(after))
        .filter(events::position.lt(horizon()))
        .order(events::position.asc())
        .limit(i64::from(events_limit))
        .select((events::position, sql::<BigInt>(&octets("events.payload"))))
        .load(conn)?;
    let Some(&(first, _)) = heads.first() else {
        return Ok(FanOutBatch::default());
    };
    let mut more = heads.len() >= events_limit as usize;
    let mut take = prefix_within(heads.iter().map(|h| size(h.1)), limits.bytes);

    // Recipient rows of the prefix, in position order, up to the
    // row budget; only those in `to` are kept (no payload is read).
    let rows_limit = limits.recipient_rows.max(1);
    let last = heads[take - 1].0;
    let mut kept: Vec<(i64, ContactId, Option<i64>)> = Vec::new();
    let mut seen = 0u32;
    let mut last_seen = first;
    let scan = event_recipients::table
        .filter(event_recipients::position.between(first, last))
        .order(event_recipients::position.asc())
        .limit(i64::from(rows_limit))
        .select((
            event_recipients::position,
            event_recipients::contact_id,
            sql::<Nullable<BigInt>>(&octets("event_recipients.payload")),
        ));
    for row in scan.load_iter::<(i64, DbId, Option<i64>), DefaultLoadingMode>(conn)? {
        let (position, who, own) = row?;
        seen += 1;
        last_seen = position;
        let who = contact_id(who);
        if to.contains(&who) {
            kept.push((position, who, own));
        }
    }
    if seen >= rows_limit {
        // The rows of the last event seen may go on past the limit.
        if last_seen > first {
            take = heads[..take].partition_point(|h| h.0 < last_seen);
            kept.retain(|k| k.0 < last_seen);
        } else {
            // The first event alone has more rows than the budget:
            // it is read whole, by itself.
            take = 1;
            kept = event_recipients::table
                .filter(event_recipients::position.eq(first))
                .select((
                    event_recipients::contact_id,
                    sql::<Nullable<BigInt>>(&octets("event_recipients.payload")),
                ))
                .load_iter::<(DbId, Option<i64>), DefaultLoadingMode>(conn)?
                .filter_map(|row| match row {
                    Ok((who, own)) => {
                        let who = contact_id(who);
                        to.contains(&who).then_some(Ok((first, who, own)))
                    }
                    Err(e) => Some(Err(e)),
                })
                .collect::<diesel::QueryResult<_>>()?;
        }
    }

    // The kept recipients' own payloads count against the budget
    // too: the prefix is cut again by each event's shared and own
    // payloads together.
    let mut costs = Vec::with_capacity(take);
    let mut k = 0;
    for &(position, shared) in &heads[..take] {
        let mut cost = size(shared);
        while let Some(&(p, _, own)) = kept.get(k) {
            if p > position {
                break;
            }
            if p == position {
                cost = cost.saturating_add(own.map_or(0, size));
            }
            k += 1;
        }
        costs.push(cost);
    }
    let cut = prefix_within(costs.into_iter(), limits.bytes);
    if cut < heads.len() {
        more = true;
    }
    let last = heads[cut - 1].0;
    kept.retain(|k| k.0 <= last);

    let rows: Vec<(DbId, String, i64, i64, String)> = events::table
        .filter(events::position.between(first, last))
        .order(events::position.asc())
        .select((
            events::id,
            events::kind,
            events::created_at,
            events::position,
            events::payload,
        ))
        .load(conn)?;

    // The own payloads, by contact (a bounded list of binds each).
    let mut owners: Vec<DbId> = kept
        .iter()
        .filter(|k| k.2.is_some())
        .map(|k| k.1.db())
        .collect();
    owners.sort_unstable();
    owners.dedup();
    let mut own: HashMap<(i64, ContactId), String> = HashMap::new();
    for chunk in owners.chunks(OWNERS_PER_QUERY) {
        let found: Vec<(i64, DbId, Option<String>)> = event_recipients::table
            .filter(event_recipients::position.between(first, last))
            .filter(event_recipients::contact_id.eq_any(chunk))
            .filter(event_recipients::payload.is_not_null())
            .select((
                event_recipients::position,
                event_recipients::contact_id,
                event_recipients::payload,
            ))
            .load(conn)?;
        for (position, who, payload) in found {
            if let Some(payload) = payload {
                own.insert((position, contact_id(who)), payload);
            }
        }
    }

    let mut kept = kept.into_iter().peekable();
    let mut out = Vec::with_capacity(rows.len());
    for (id, kind, at, position, payload) in rows {
        let mut recipients = Vec::new();
        while let Some((p, who, _)) = kept.next_if(|k| k.0 <= position) {
            if p == position {
                // None (the shared payload) also when the own one
                // was scrubbed since it was sized.
                recipients.push((who, own.remove(&(p, who))));
            }
        }
        out.push(EventWithRecipients {
            event: stored(id, &kind, at, position, payload)?,
            recipients,
        });
    }
    Ok(FanOutBatch { events: out, more })
}

pub(crate) fn live_token_hashes(
    conn: &mut Conn,
    hashes: Vec<String>,
    now: Timestamp,
) -> Result<Vec<String>> {
    if hashes.is_empty() {
        return Ok(Vec::new());
    }
    Ok(tokens::table
        .filter(tokens::token_hash.eq_any(hashes))
        .filter(tokens::revoked_at.is_null())
        .filter(
            tokens::expires_at
                .is_null()
                .or(tokens::expires_at.gt(now.micros())),
        )
        .select(tokens::token_hash)
        .load(conn)?)
}

pub(crate) fn prune_events(conn: &mut Conn, before: Timestamp, batch: u32) -> Result<u64> {
    // A bounded batch per transaction: pruning never holds locks
    // long enough to stall writers. The oldest events are the first
    // by position (commit order; creation time follows it within a
    // statement's duration): of the first `batch`, those created
    // before `before`. No index on `created_at` is kept for this:
    // it cost every write with events an index entry.
    let oldest = events::table
        .order(events::position.asc())
        .limit(i64::from(batch))
        .select((events::position, events::created_at))
        .load::<(i64, i64)>(conn)?;
    let doomed: Vec<i64> = oldest
        .into_iter()
        .filter(|&(_, at)| at < before.micros())
        .map(|(position, _)| position)
        .collect();
    if doomed.is_empty() {
        return Ok(0);
    }
    // Recipients share their event's position; they go first, by
    // the position index (no foreign key cascades to them on
    // PostgreSQL: it cost every recipient row a lookup).
    diesel::delete(event_recipients::table.filter(event_recipients::position.eq_any(&doomed)))
        .execute(conn)?;
    let n = diesel::delete(events::table.filter(events::position.eq_any(&doomed))).execute(conn)?;
    Ok(n as u64)
}
