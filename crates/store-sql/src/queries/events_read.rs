//! Reading events (API.md section 11): a recipient's events after a
//! position, every recipient's (for a process's fan-out), and pruning.
//!
//! Only readable events are read: positions below the backend's horizon
//! ([`crate::SqlBackend::EVENT_HORIZON_SQL`]), which no event that commits
//! later can lie under. A reader that has read up to a position therefore
//! never misses an event behind it.

/// Expands the functions of this file in a backend's `queries` module (see
/// [`super::instantiate`]).
macro_rules! expand {
    () => {
        use confab_domain::{ContactId, EventId, EventType, Timestamp};
        use confab_ports::{EventWithRecipients, StoredEvent};
        use diesel::dsl::sql;
        use diesel::prelude::*;
        use diesel::sql_types::BigInt;

        use super::{Backend, Conn, Result};
        use crate::error::inconsistent;
        use crate::id::DbId;
        use crate::rows::{contact_id, ts, DbKey};
        use crate::schema::{event_recipients, events, tokens};
        use crate::SqlBackend;

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
                .map_err(|()| inconsistent(format!("stored event type {kind:?} is unknown")))?;
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
            let rows: Vec<(DbId, String, i64, i64, Option<String>, String)> =
                event_recipients::table
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

        pub(crate) fn recent_events(
            conn: &mut Conn,
            after: i64,
            limit: u32,
        ) -> Result<Vec<EventWithRecipients>> {
            let rows: Vec<(DbId, String, i64, i64, String)> = events::table
                .filter(events::position.gt(after))
                .filter(events::position.lt(horizon()))
                .order(events::position.asc())
                .limit(i64::from(limit))
                .select((
                    events::id,
                    events::kind,
                    events::created_at,
                    events::position,
                    events::payload,
                ))
                .load(conn)?;
            let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
                return Ok(Vec::new());
            };
            // The recipients of exactly these events, by their positions'
            // range (one index range scan).
            let recipients: Vec<(i64, DbId, Option<String>)> = event_recipients::table
                .filter(event_recipients::position.between(first.3, last.3))
                .order(event_recipients::position.asc())
                .select((
                    event_recipients::position,
                    event_recipients::contact_id,
                    event_recipients::payload,
                ))
                .load(conn)?;
            let mut recipients = recipients.into_iter().peekable();
            let mut out = Vec::with_capacity(rows.len());
            for (id, kind, at, position, payload) in rows {
                let mut to = Vec::new();
                while let Some((p, _, _)) = recipients.peek() {
                    if *p > position {
                        break;
                    }
                    if let Some((p, who, own)) = recipients.next() {
                        if p == position {
                            to.push((contact_id(who), own.unwrap_or_else(|| payload.clone())));
                        }
                    }
                }
                out.push(EventWithRecipients {
                    event: stored(id, &kind, at, position, payload)?,
                    recipients: to,
                });
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
            diesel::delete(
                event_recipients::table.filter(event_recipients::position.eq_any(&doomed)),
            )
            .execute(conn)?;
            let n = diesel::delete(events::table.filter(events::position.eq_any(&doomed)))
                .execute(conn)?;
            Ok(n as u64)
        }
    };
}
pub(crate) use expand;
