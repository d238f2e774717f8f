//! The events outbox (docs/api.md "Listen for events"): every write hands its events here,
//! inside its own transaction, so that a committed change has its events and
//! a rolled-back one has none.
//!
//! A write's events cost a few statements whatever their number: one `INSERT
//! INTO events ... RETURNING` (the positions: PostgreSQL's from the
//! transaction id, SQLite's `AUTOINCREMENT`), and one `INSERT INTO
//! event_recipients ... SELECT` that resolves every audience's contacts in
//! the database (a `UNION ALL` arm per audience), with the per-recipient
//! payloads (each member's own view of a conversation) as a `VALUES` arm,
//! and one `INSERT INTO event_groups ... SELECT` for the audiences that
//! are a group's members: one row per group, read by its members (fan-out
//! on read: a send into a group of 10,000 writes one row, not 10,000).
//! Both are raw SQL (`crate::raw`, kept prepared when small): their shape
//! depends on the audiences, and a statement per audience or per recipient
//! is what this avoids.
//!
//! A deletion's recipients are resolved before the delete: its writer calls
//! [`write`] first.
//!
//! Generic over the backend: the write queries still compiled per backend
//! call it through their `outbox` module, which passes their store.
//!
//! Each event also names what it is about ([`About`]: its subject, and the
//! conversation and message whose content its payload carries), so that a
//! deletion finds every earlier event of the deleted message or
//! conversation by index and [`scrub`]s it in its own transaction: docs/api.md
//! "Deleted means gone" (migration `deleted_leaves_events`).

use std::collections::HashMap;

use confab_domain::{Audience, Event};
use confab_ports::{Outbox, PayloadRenderer};
use diesel::backend::Backend;
use diesel::prelude::*;
use diesel::sql_types::BigInt;

use crate::error::inconsistent;
use crate::id::{DbId, IdSql};
use crate::queries::Result;
use crate::raw::{Bind, RawQuery, Sql};
use crate::rows::DbKey;
use crate::run::{Exec, Run};
use crate::SqlBackend;

mod payload;

use payload::{about, payload, About, Payload};
pub use payload::{expand_marked_read, Written};

/// Event rows per `INSERT INTO events` (at most eight binds each):
/// under every database's limit on binds.
const EVENTS_PER_INSERT: usize = 1000;
/// Binds per `INSERT INTO event_recipients` before another starts
/// (SQLite allows 32766).
const MAX_BINDS: usize = 30_000;

/// An event inserted, and its position.
#[derive(QueryableByName)]
pub struct Placed {
    #[diesel(sql_type = IdSql)]
    id: DbId,
    #[diesel(sql_type = BigInt)]
    position: i64,
}

/// Inserts the events; returns each one's position.
fn insert_events<B: SqlBackend>(
    conn: &mut B::Conn,
    events: &[(&Event, &str, About)],
) -> Result<HashMap<DbId, i64>> {
    let mut placed = HashMap::with_capacity(events.len());
    let columns = if B::event_position(0).is_some() {
        "id, position, type, actor_id, created_at, payload, \
         subject_id, conversation_id, message_id"
    } else {
        "id, type, actor_id, created_at, payload, subject_id, conversation_id, message_id"
    };
    for (n, chunk) in events.chunks(EVENTS_PER_INSERT).enumerate() {
        let mut sql = Sql::default();
        sql.push(&format!("INSERT INTO events ({columns}) VALUES "));
        for (i, (e, payload, about)) in chunk.iter().enumerate() {
            let id = sql.id(e.id.as_uuid().db());
            let position = B::event_position(n * EVENTS_PER_INSERT + i)
                .map(|p| format!("{p}, "))
                .unwrap_or_default();
            let kind = sql.bind(Bind::Text(e.kind.name().to_owned()));
            let actor = sql.id(e.actor.db());
            let at = sql.bind(Bind::Int(e.at.micros()));
            let payload = sql.bind(Bind::Text((*payload).to_owned()));
            let subject = sql.id(about.subject);
            let mut maybe = |id: Option<DbId>| match id {
                Some(id) => sql.id(id),
                None => "NULL".to_owned(),
            };
            let (conversation, message) = (maybe(about.conversation), maybe(about.message));
            let sep = if i == 0 { "" } else { ", " };
            sql.push(&format!(
                "{sep}({id}, {position}{kind}, {actor}, {at}, {payload}, \
                 {subject}, {conversation}, {message})"
            ));
        }
        sql.push(" RETURNING id, position");
        let rows: Vec<Placed> = conn.load_rows(sql.query::<B::Db>())?;
        placed.extend(rows.into_iter().map(|p| (p.id, p.position)));
    }
    Ok(placed)
}

/// Who an audience is, as up to two subqueries: the contacts who get a
/// recipient row each (one column, `contact_id`, without duplicates),
/// and the groups whose members read the event by group (one column,
/// `group_id`: one `event_groups` row each, whatever the group's size;
/// fan-out on read, migration `big_groups`). A group's members see its
/// events from the position they joined at; members a change removes
/// see that change's events through the span their writer records
/// after them (`queries/groups.rs`), so an audience's `also` needs no
/// rows of its own. This is the first: the contacts of `audience` who
/// get a recipient row each.
fn contacts_of(sql: &mut Sql, audience: &Audience) -> Option<String> {
    match audience {
        Audience::Contact(c) => {
            let c = sql.id(c.db());
            Some(format!("SELECT {c} AS contact_id"))
        }
        // Both of a direct conversation (a group one's are its group's).
        Audience::ConversationMembers(c) => {
            let c = sql.id(c.db());
            Some(format!(
                "SELECT creator_id AS contact_id FROM conversations \
                     WHERE id = {c} AND group_id IS NULL \
                 UNION SELECT peer_id FROM conversations \
                     WHERE id = {c} AND group_id IS NULL AND peer_id IS NOT NULL"
            ))
        }
        Audience::GroupMembers { .. } => None,
        // The contact and the peers of its direct conversations, but
        // those who blocked it: a block stops what it writes reaching
        // them (its profile's text included), and the blocked, who
        // still hears the blocker's, learns nothing of it.
        Audience::ContactCircle(c) => {
            let c = sql.id(c.db());
            let unless_blocked_by = |peer: &str| {
                format!(
                    "NOT EXISTS (SELECT 1 FROM blocks b \
                         WHERE b.blocker_id = conversations.{peer} AND b.blocked_id = {c})"
                )
            };
            Some(format!(
                "SELECT {c} AS contact_id \
                 UNION SELECT peer_id FROM conversations \
                     WHERE creator_id = {c} AND group_id IS NULL AND peer_id IS NOT NULL \
                         AND {} \
                 UNION SELECT creator_id FROM conversations \
                     WHERE peer_id = {c} AND group_id IS NULL AND {}",
                unless_blocked_by("peer_id"),
                unless_blocked_by("creator_id"),
            ))
        }
        // No contact: the event is the operator's (webhooks) alone.
        Audience::Operator => None,
    }
}

/// The groups of `audience` whose members read the event by group.
fn groups_of(sql: &mut Sql, audience: &Audience) -> Option<String> {
    match audience {
        Audience::Contact(_) | Audience::Operator => None,
        Audience::ConversationMembers(c) => {
            let c = sql.id(c.db());
            Some(format!(
                "SELECT group_id FROM conversations WHERE id = {c} AND group_id IS NOT NULL"
            ))
        }
        Audience::GroupMembers { group, also: _ } => {
            let g = sql.id(group.db());
            Some(format!("SELECT {g} AS group_id"))
        }
        // Its groups that have a conversation.
        Audience::ContactCircle(c) => {
            let c = sql.id(c.db());
            Some(format!(
                "SELECT me.group_id FROM group_members me \
                 WHERE me.contact_id = {c} AND EXISTS ( \
                     SELECT 1 FROM conversations x WHERE x.group_id = me.group_id)"
            ))
        }
    }
}

/// Inserts every recipient of `events` (already inserted, at
/// `placed`): one statement, more only past [`MAX_BINDS`].
fn insert_recipients<B: SqlBackend>(
    conn: &mut B::Conn,
    events: &[Event],
    payloads: &[Payload],
    placed: &HashMap<DbId, i64>,
) -> Result<()> {
    let position_of = |e: &Event| {
        placed
            .get(&e.id.as_uuid().db())
            .copied()
            .ok_or_else(|| inconsistent(format!("event {} was not inserted", e.id)))
    };
    // Events of a shared payload, by audience (in order of first
    // appearance), and the rows of per-recipient payloads.
    let mut by_audience: Vec<(&Audience, Vec<(DbId, i64)>)> = Vec::new();
    let mut rows: Vec<(DbId, i64, DbId, Option<&str>)> = Vec::new();
    for (e, p) in events.iter().zip(payloads) {
        let (id, position) = (e.id.as_uuid().db(), position_of(e)?);
        let mut shared = || match by_audience.iter_mut().find(|(a, _)| *a == &e.audience) {
            Some((_, list)) => list.push((id, position)),
            None => by_audience.push((&e.audience, vec![(id, position)])),
        };
        match p {
            Payload::Shared(_) => shared(),
            Payload::SharedAnd { own, .. } => {
                shared();
                rows.push((own.0, position, id, Some(own.1.as_str())));
            }
            Payload::Each { actor, each } => {
                for (contact, own) in each {
                    // The actor's view is the event's own payload.
                    let own = (own != actor).then_some(own.as_str());
                    rows.push((*contact, position, id, own));
                }
            }
        }
    }

    let mut arms: Vec<String> = Vec::new();
    let mut group_arms: Vec<String> = Vec::new();
    let mut sql = Sql::default();
    let mut group_sql = Sql::default();
    for (audience, list) in by_audience {
        let mut positions: Vec<i64> = list.iter().map(|(_, p)| *p).collect();
        positions.sort_unstable();
        let (lo, hi) = (positions[0], positions[positions.len() - 1]);
        // Consecutive positions (a write's events usually are): a
        // range, whatever their number. Positions are unique, so the
        // range holds these events and no other.
        let contiguous = hi - lo + 1 == positions.len() as i64;
        let which = |sql: &mut Sql| {
            if contiguous {
                let (lo, hi) = (sql.bind(Bind::Int(lo)), sql.bind(Bind::Int(hi)));
                format!("e.position BETWEEN {lo} AND {hi}")
            } else {
                let ids: Vec<String> = list.iter().map(|(id, _)| sql.id(*id)).collect();
                format!("e.id IN ({})", ids.join(", "))
            }
        };
        if let Some(m) = contacts_of(&mut sql, audience) {
            let which = which(&mut sql);
            arms.push(format!(
                "SELECT m.contact_id, e.position, e.id, CAST(NULL AS TEXT) \
                 FROM events e CROSS JOIN ({m}) m WHERE {which}"
            ));
        }
        if let Some(g) = groups_of(&mut group_sql, audience) {
            let which = which(&mut group_sql);
            group_arms.push(format!(
                "SELECT g.group_id, e.position, e.id FROM events e CROSS JOIN ({g}) g WHERE {which}"
            ));
        }
        if group_sql.binds() > MAX_BINDS {
            run_groups::<B>(conn, std::mem::take(&mut group_sql), &mut group_arms)?;
        }
        if sql.binds() > MAX_BINDS {
            run_recipients::<B>(conn, std::mem::take(&mut sql), "", &mut arms, &[])?;
        }
    }
    // On PostgreSQL the group rows ride on the recipients' statement
    // (a data-modifying `WITH`) when there is one and it is small: a
    // write's audience costs one statement, as it did before groups
    // were read by group.
    let mut prefix = String::new();
    if B::DATA_MODIFYING_WITH
        && !group_arms.is_empty()
        && !arms.is_empty()
        && rows.is_empty()
        && sql.binds() + group_sql.binds() <= MAX_BINDS
    {
        group_sql.push(&groups_insert(&std::mem::take(&mut group_arms)));
        let groups = sql.absorb(std::mem::take(&mut group_sql));
        prefix = format!("WITH grp AS ({groups} RETURNING 1) ");
    }
    let mut start = 0;
    while start < rows.len() || !arms.is_empty() {
        // Four binds a row.
        let room = MAX_BINDS.saturating_sub(sql.binds()) / 4;
        let end = rows.len().min(start + room.max(1));
        let sql = std::mem::take(&mut sql);
        run_recipients::<B>(
            conn,
            sql,
            &std::mem::take(&mut prefix),
            &mut arms,
            &rows[start..end],
        )?;
        start = end;
    }
    run_groups::<B>(conn, group_sql, &mut group_arms)
}

/// The `INSERT INTO event_groups` of `arms`.
fn groups_insert(arms: &[String]) -> String {
    format!(
        "INSERT INTO event_groups (group_id, position, event_id) {}",
        arms.join(" UNION ALL ")
    )
}

/// One `INSERT INTO event_groups` of `arms` (taken).
fn run_groups<B: SqlBackend>(
    conn: &mut B::Conn,
    mut sql: Sql,
    arms: &mut Vec<String>,
) -> Result<()> {
    let parts = std::mem::take(arms);
    if parts.is_empty() {
        return Ok(());
    }
    sql.push(&groups_insert(&parts));
    conn.exec(sql.query::<B::Db>())?;
    Ok(())
}

/// One `INSERT INTO event_recipients` of `arms` (taken) and `rows`,
/// after `prefix` (a `WITH` of the statement's own, or nothing).
fn run_recipients<B: SqlBackend>(
    conn: &mut B::Conn,
    mut sql: Sql,
    prefix: &str,
    arms: &mut Vec<String>,
    rows: &[(DbId, i64, DbId, Option<&str>)],
) -> Result<()> {
    let mut parts = std::mem::take(arms);
    if !rows.is_empty() {
        let values: Vec<String> = rows
            .iter()
            .map(|(contact, position, event, payload)| {
                let c = sql.id(*contact);
                let p = sql.bind(Bind::Int(*position));
                let e = sql.id(*event);
                let payload = match payload {
                    Some(own) => sql.bind(Bind::Text((*own).to_owned())),
                    None => "CAST(NULL AS TEXT)".to_owned(),
                };
                format!("({c}, {p}, {e}, {payload})")
            })
            .collect();
        parts.push(format!("VALUES {}", values.join(", ")));
    }
    if parts.is_empty() {
        return Ok(());
    }
    let text = format!(
        "{prefix}INSERT INTO event_recipients (contact_id, position, event_id, payload) {}",
        parts.join(" UNION ALL ")
    );
    sql.push(&text);
    conn.exec(sql.query::<B::Db>())?;
    Ok(())
}

/// Writes `events` with their payloads rendered by `render` from
/// `written`, and their recipients.
pub fn write_events<B: SqlBackend>(
    conn: &mut B::Conn,
    events: &[Event],
    render: &dyn PayloadRenderer,
    written: &Written<'_>,
) -> Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    let payloads = events
        .iter()
        .map(|e| payload(render, e, written))
        .collect::<Result<Vec<_>>>()?;
    let rows: Vec<(&Event, &str, About)> = events
        .iter()
        .zip(&payloads)
        .map(|(e, p)| (e, p.actor(), about(e, written)))
        .collect();
    let placed = insert_events::<B>(conn, &rows)?;
    insert_recipients::<B>(conn, events, &payloads, &placed)
}

/// Writes the outbox (see [`write_events`]).
pub fn write<B: SqlBackend>(
    conn: &mut B::Conn,
    outbox: &Outbox,
    written: &Written<'_>,
) -> Result<()> {
    write_events::<B>(conn, &outbox.events, &*outbox.render, written)
}

/// Whose earlier events a deletion [`scrub`]s.
#[derive(Clone, Copy)]
pub enum Deleted {
    /// A message, of this conversation.
    Message { conversation: DbId, message: DbId },
    /// A conversation: its own events, its messages' and their
    /// attachments'.
    Conversation(DbId),
    /// Every conversation of a group (before they cascade away
    /// with it).
    GroupConversations(DbId),
}

impl Deleted {
    /// The condition on `events` that finds its events (a range of
    /// the index on `(conversation_id, message_id)`), with its
    /// binds in `sql`.
    fn events(self, sql: &mut Sql) -> String {
        match self {
            Self::Message {
                conversation,
                message,
            } => {
                let (c, m) = (sql.id(conversation), sql.id(message));
                format!("conversation_id = {c} AND message_id = {m}")
            }
            Self::Conversation(c) => {
                let c = sql.id(c);
                format!("conversation_id = {c}")
            }
            Self::GroupConversations(g) => {
                let g = sql.id(g);
                format!(
                    "conversation_id IN \
                     (SELECT id FROM conversations WHERE group_id = {g})"
                )
            }
        }
    }
}

/// Deleted means gone (docs/api.md "Deleted means gone"): every kept event of the
/// deleted object gets the payload `{"id":"<its subject>",
/// "deleted":true}` and loses its `conversation_id` and
/// `message_id` (it carries nothing of them any more), and its
/// recipients' own payloads go. Found by the index on
/// `(conversation_id, message_id)`: the cost follows the object's
/// events, never the table. Called in the deletion's transaction;
/// its own `*.deleted` event names no content (`payload::About`), so it
/// keeps its `{"id"}`.
///
/// Own payloads exist only for a conversation's own events (each
/// member's view of it, `Payload::Each`), so only a conversation's
/// deletion looks for them, among its events without a message,
/// and first: they are found through the events' columns, which the
/// scrub clears. A message's deletion is one statement.
pub fn scrub<B: SqlBackend>(conn: &mut B::Conn, deleted: Deleted) -> Result<()> {
    if !matches!(deleted, Deleted::Message { .. }) {
        let mut sql = Sql::default();
        let which = deleted.events(&mut sql);
        sql.push(&format!(
            "UPDATE event_recipients SET payload = NULL \
             WHERE payload IS NOT NULL AND position IN ( \
                 SELECT position FROM events WHERE {which} AND message_id IS NULL)"
        ));
        conn.exec(sql.query::<B::Db>())?;
    }
    let mut sql = Sql::default();
    let which = deleted.events(&mut sql);
    sql.push(&format!(
        "UPDATE events SET payload = {SCRUBBED}, conversation_id = NULL, message_id = NULL \
         WHERE {which}"
    ));
    conn.exec(sql.query::<B::Db>())?;
    Ok(())
}

/// A scrubbed event's payload, from its row: `{"id":"<subject
/// id>","deleted":true}` (an id's text needs no JSON escaping).
pub const SCRUBBED: &str = r#"'{"id":"' || CAST(subject_id AS TEXT) || '","deleted":true}'"#;

/// Every statement of the outbox that needs more of a connection than
/// its backend's raw statements ([`crate::run`]): the events' insert,
/// which returns their positions.
pub trait OutboxStatements<Db: Backend>: Run<RawQuery<Db>, Placed> {}

impl<Db: Backend, C> OutboxStatements<Db> for C where C: Run<RawQuery<Db>, Placed> {}
