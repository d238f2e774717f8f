//! Reading events (docs/api.md "Listen for events"): a recipient's events after a
//! position, the events of the recipients with a stream in a process (its
//! fan-out, in batches bounded in events, payload bytes and recipient rows:
//! docs/api.md "Limits"), and pruning.
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
use diesel::sql_types::{BigInt, Nullable, Text};

use super::{Backend, Conn, Db, Result};
use confab_store_sql::error::inconsistent;
use confab_store_sql::id::{DbId, IdSql};
use confab_store_sql::queries::events_read::{prefix_within, size, OWNERS_PER_QUERY};
use confab_store_sql::rows::{contact_id, ts, DbKey};
use confab_store_sql::schema::{
    event_groups, event_recipients, events, group_member_spans, group_members, server_keys, tokens,
};
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

/// A row of [`events_for`]'s statement.
#[derive(QueryableByName)]
struct ForRow {
    #[diesel(sql_type = IdSql)]
    id: DbId,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = BigInt)]
    created_at: i64,
    #[diesel(sql_type = BigInt)]
    position: i64,
    #[diesel(sql_type = Nullable<Text>)]
    own: Option<String>,
    #[diesel(sql_type = Text)]
    payload: String,
}

/// A recipient's events after `after`, oldest first: their own
/// recipient rows, and the events of their groups read by group
/// (`event_groups`, migration `big_groups`): of each group they
/// belong to, from the position they joined at, and of each
/// membership that ended, within its span. Each arm is an index range
/// cut to `limit`; an event that reaches the recipient twice (as a
/// contact and through a group) is listed once, with its own payload
/// when it has one.
pub(crate) fn events_for(
    conn: &mut Conn,
    recipient: ContactId,
    after: i64,
    limit: u32,
) -> Result<Vec<StoredEvent>> {
    use confab_store_sql::raw::{Bind, Sql};

    let horizon = <Backend as SqlBackend>::EVENT_HORIZON_SQL;
    let mut sql = Sql::default();
    let me = sql.id(recipient.db());
    let after = sql.bind(Bind::Int(after));
    let n = sql.bind(Bind::Int(i64::from(limit)));
    let own = format!(
        "SELECT r.position, r.payload AS own FROM event_recipients r \
         WHERE r.contact_id = {me} AND r.position > {after} AND r.position < {horizon} \
         ORDER BY r.position LIMIT {n}"
    );
    let of_group = |g: &str, from: &str, until: Option<&str>| {
        let until = until
            .map(|u| format!(" AND eg.position < {u}"))
            .unwrap_or_default();
        format!(
            "SELECT eg.position, CAST(NULL AS TEXT) AS own FROM event_groups eg \
             WHERE eg.group_id = {g} AND eg.position > {after} AND eg.position >= {from}{until} \
                 AND eg.position < {horizon} \
             ORDER BY eg.position LIMIT {n}"
        )
    };
    let (groups, spans) = if Backend::LATERAL {
        (
            format!(
                "SELECT x.* FROM group_members gm CROSS JOIN LATERAL ({}) x \
                 WHERE gm.contact_id = {me}",
                of_group("gm.group_id", "gm.from_position", None)
            ),
            format!(
                "SELECT x.* FROM group_member_spans sp CROSS JOIN LATERAL ({}) x \
                 WHERE sp.contact_id = {me} AND sp.until_position > {after}",
                of_group("sp.group_id", "sp.from_position", Some("sp.until_position"))
            ),
        )
    } else {
        (
            format!(
                "SELECT eg.position, CAST(NULL AS TEXT) AS own \
                 FROM group_members gm CROSS JOIN event_groups eg ON eg.group_id = gm.group_id \
                 WHERE gm.contact_id = {me} AND eg.position > {after} \
                     AND eg.position >= gm.from_position AND eg.position < {horizon} \
                 ORDER BY eg.position LIMIT {n}"
            ),
            format!(
                "SELECT eg.position, CAST(NULL AS TEXT) AS own \
                 FROM group_member_spans sp CROSS JOIN event_groups eg ON eg.group_id = sp.group_id \
                 WHERE sp.contact_id = {me} AND sp.until_position > {after} \
                     AND eg.position > {after} AND eg.position >= sp.from_position \
                     AND eg.position < sp.until_position AND eg.position < {horizon} \
                 ORDER BY eg.position LIMIT {n}"
            ),
        )
    };
    sql.push(&format!(
        "SELECT e.id, e.type AS kind, e.created_at, e.position, u.own, e.payload \
         FROM ( \
             SELECT position, MIN(own) AS own FROM ( \
                 SELECT * FROM ({own}) AS a \
                 UNION ALL SELECT * FROM ({groups}) AS b \
                 UNION ALL SELECT * FROM ({spans}) AS c \
             ) AS arms GROUP BY position ORDER BY position LIMIT {n} \
         ) AS u JOIN events e ON e.position = u.position \
         ORDER BY e.position"
    ));
    sql.query::<Db>()
        .load::<ForRow>(conn)?
        .into_iter()
        .map(|r| {
            stored(
                r.id,
                &r.kind,
                r.created_at,
                r.position,
                r.own.unwrap_or(r.payload),
            )
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
    // The events read by group reach the members in `to` (their rows
    // carry no payload of their own): merged in position order, each
    // recipient of an event once.
    let by_group = group_recipients(conn, first, last, to)?;
    if !by_group.is_empty() {
        kept.extend(by_group.into_iter().map(|(p, who)| (p, who, None)));
        // One with an own payload first, so that it is the one kept.
        kept.sort_by_key(|k| (k.0, k.1, k.2.is_none()));
        kept.dedup_by(|later, kept| later.0 == kept.0 && later.1 == kept.1);
    }

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

/// The recipients in `to` of the events read by group at positions
/// `first..=last` (`event_groups`): the members of each event's group
/// who joined at or before it, and those whose membership ended after
/// it (their spans). What it reads grows with the events and with the
/// members in `to` (a statement per [`OWNERS_PER_QUERY`] of them, by
/// their keys), never with the groups' sizes.
fn group_recipients(
    conn: &mut Conn,
    first: i64,
    last: i64,
    to: &HashSet<ContactId>,
) -> Result<Vec<(i64, ContactId)>> {
    if to.is_empty() {
        return Ok(Vec::new());
    }
    let events: Vec<(i64, DbId)> = event_groups::table
        .filter(event_groups::position.between(first, last))
        .order(event_groups::position.asc())
        .select((event_groups::position, event_groups::group_id))
        .load(conn)?;
    if events.is_empty() {
        return Ok(Vec::new());
    }
    let mut groups: Vec<DbId> = events.iter().map(|e| e.1).collect();
    groups.sort_unstable();
    groups.dedup();
    // Each group's members in `to`: (from, until) of each stay.
    let mut stays: HashMap<DbId, Vec<(ContactId, i64, i64)>> = HashMap::new();
    let wanted: Vec<DbId> = to.iter().map(DbKey::db).collect();
    for chunk in wanted.chunks(OWNERS_PER_QUERY) {
        let members: Vec<(DbId, DbId, i64)> = group_members::table
            .filter(group_members::group_id.eq_any(&groups))
            .filter(group_members::contact_id.eq_any(chunk))
            .select((
                group_members::group_id,
                group_members::contact_id,
                group_members::from_position,
            ))
            .load(conn)?;
        for (g, who, from) in members {
            stays
                .entry(g)
                .or_default()
                .push((contact_id(who), from, i64::MAX));
        }
        let spans: Vec<(DbId, DbId, i64, i64)> = group_member_spans::table
            .filter(group_member_spans::contact_id.eq_any(chunk))
            .filter(group_member_spans::group_id.eq_any(&groups))
            .filter(group_member_spans::until_position.gt(first))
            .select((
                group_member_spans::group_id,
                group_member_spans::contact_id,
                group_member_spans::from_position,
                group_member_spans::until_position,
            ))
            .load(conn)?;
        for (g, who, from, until) in spans {
            stays
                .entry(g)
                .or_default()
                .push((contact_id(who), from, until));
        }
    }
    let mut out = Vec::new();
    for (position, g) in events {
        if let Some(members) = stays.get(&g) {
            out.extend(
                members
                    .iter()
                    .filter(|(_, from, until)| *from <= position && position < *until)
                    .map(|(who, _, _)| (position, *who)),
            );
        }
    }
    Ok(out)
}

pub(crate) fn live_token_hashes(
    conn: &mut Conn,
    hashes: Vec<String>,
    now: Timestamp,
) -> Result<Vec<String>> {
    if hashes.is_empty() {
        return Ok(Vec::new());
    }
    let mut live: Vec<String> = tokens::table
        .filter(tokens::token_hash.eq_any(&hashes))
        .filter(tokens::revoked_at.is_null())
        .filter(
            tokens::expires_at
                .is_null()
                .or(tokens::expires_at.gt(now.micros())),
        )
        .select(tokens::token_hash)
        .load(conn)?;
    // A stream opened by a server key acting for a contact lives as long
    // as its key (docs/api.md "Server API: from an app's backend").
    if live.len() < hashes.len() {
        live.extend(
            server_keys::table
                .filter(server_keys::key_hash.eq_any(&hashes))
                .filter(server_keys::revoked_at.is_null())
                .select(server_keys::key_hash)
                .load::<String>(conn)?,
        );
    }
    Ok(live)
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
    diesel::delete(event_groups::table.filter(event_groups::position.eq_any(&doomed)))
        .execute(conn)?;
    let n = diesel::delete(events::table.filter(events::position.eq_any(&doomed))).execute(conn)?;
    // Ended memberships whose span lies wholly before the events kept
    // have nothing left to show (by the index on `until_position`).
    let oldest_kept: Option<i64> = events::table
        .select(diesel::dsl::min(events::position))
        .first(conn)?;
    let spans = group_member_spans::table
        .filter(group_member_spans::until_position.le(oldest_kept.unwrap_or(i64::MAX)));
    diesel::delete(spans).execute(conn)?;
    Ok(n as u64)
}
