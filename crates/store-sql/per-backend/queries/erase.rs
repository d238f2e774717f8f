//! Erasing a contact (docs/api.md "Server API: from an app's backend", the right to be forgotten): its
//! direct conversations, its messages in groups, its memberships,
//! reactions, states, credentials and stored answers go in one
//! transaction; the events and stored answers of others that showed it
//! keep nothing of it. What others wrote stays.
//!
//! The plan ([`erase_plan`]) is read first so that the service can make
//! the erase's events; the erase then deletes by the contact's id, so that
//! anything it wrote after the plan was read goes too.

use confab_domain::{ContactId, GroupId, GroupRole};
use confab_ports::{ErasePlan, Erasure, GroupChange, JobKind};
use confab_store_sql::raw::Bind;
use diesel::prelude::*;
use uuid::Uuid;

use super::groups::{delete_group, update_group};
use super::outbox::{self, Deleted, Written};
use super::{Conn, Db, Result};
use confab_store_sql::id::DbId;
use confab_store_sql::queries::not_found;
use confab_store_sql::raw::Sql;
use confab_store_sql::rows::{conversation_id, group_id, message_id, DbKey};
use confab_store_sql::schema::{
    contacts, conversations, group_member_spans, group_members, groups, jobs, messages,
};

/// Who stands for an erased contact where a row must name someone (the
/// actor of a kept event, the sender of a deleted message's gap): no one.
pub(crate) const NO_ONE: Uuid = Uuid::nil();

pub(crate) fn erase_plan(conn: &mut Conn, id: ContactId) -> Result<Option<ErasePlan>> {
    let x = id.db();
    let exists: i64 = contacts::table.find(x).count().get_result(conn)?;
    if exists == 0 {
        return Ok(None);
    }
    let direct_conversations = conversations::table
        .filter(conversations::group_id.is_null())
        .filter(
            conversations::creator_id
                .eq(x)
                .or(conversations::peer_id.eq(x)),
        )
        .order(conversations::id.asc())
        .select(conversations::id)
        .load::<DbId>(conn)?
        .into_iter()
        .map(conversation_id)
        .collect();
    let group_messages = messages::table
        .inner_join(conversations::table)
        .filter(messages::sender_id.eq(x))
        .filter(conversations::group_id.is_not_null())
        .order(messages::id.asc())
        .select((messages::id, messages::conversation_id))
        .load::<(DbId, DbId)>(conn)?
        .into_iter()
        .map(|(m, c)| (message_id(m), conversation_id(c)))
        .collect();
    let mut plan = ErasePlan {
        direct_conversations,
        group_messages,
        ..ErasePlan::default()
    };
    let memberships: Vec<(DbId, i64)> = group_members::table
        .inner_join(groups::table)
        .filter(group_members::contact_id.eq(x))
        .order(group_members::group_id.asc())
        .select((group_members::group_id, groups::member_count))
        .load(conn)?;
    for (g, members) in memberships {
        if members <= 1 {
            plan.groups_deleted.push(group_id(g));
        } else {
            plan.groups_left.push(group_id(g));
        }
    }
    Ok(Some(plan))
}

pub(crate) fn erase_contact(conn: &mut Conn, erasure: Erasure) -> Result<()> {
    let x = erasure.contact.db();
    let username: String = contacts::table
        .find(x)
        .select(contacts::username)
        .first(conn)
        .optional()?
        .ok_or_else(not_found)?;
    // To the members they have before anything goes.
    outbox::write(conn, &erasure.outbox, &Written::default())?;
    erase_group_messages(conn, x)?;
    // Its direct conversations, also one opened since the plan (messages,
    // reactions, attachments and states cascade).
    for c in direct_conversations_of(conn, x)? {
        outbox::scrub(conn, Deleted::Conversation(c))?;
        diesel::delete(conversations::table.find(c)).execute(conn)?;
    }
    unmention(conn, x)?;
    for (g, outbox) in &erasure.groups {
        if erasure.plan.groups_deleted.contains(g) {
            delete_group(conn, *g, outbox)?;
        } else {
            leave_group(conn, *g, erasure.contact, outbox, erasure.at)?;
        }
    }
    // A group joined since the plan: left without an event.
    let joined: Vec<DbId> = group_members::table
        .filter(group_members::contact_id.eq(x))
        .select(group_members::group_id)
        .load(conn)?;
    let silent = confab_ports::Outbox::new(Vec::new(), erasure.outbox.render.clone());
    for g in joined {
        leave_group(conn, group_id(g), erasure.contact, &silent, erasure.at)?;
    }
    forget(conn, x, &username)?;
    let deleted = diesel::delete(contacts::table.find(x)).execute(conn)?;
    if deleted == 0 {
        return Err(not_found());
    }
    Ok(())
}

/// Its messages in group conversations, as deletions each: their earlier
/// events scrubbed, a gap each in their conversation's numbers (no one's:
/// every member left is another), then the rows (reactions and
/// attachments cascade; a pin of one goes, `ON DELETE SET NULL`). A few
/// statements, whatever their number.
fn erase_group_messages(conn: &mut Conn, x: DbId) -> Result<()> {
    let theirs = |sql: &mut Sql| {
        let x = sql.id(x);
        format!(
            "SELECT m.conversation_id, m.id FROM messages m \
             JOIN conversations c ON c.id = m.conversation_id \
             WHERE m.sender_id = {x} AND c.group_id IS NOT NULL"
        )
    };
    let mut sql = Sql::default();
    let of = theirs(&mut sql);
    sql.push(&format!(
        "UPDATE events SET payload = {}, conversation_id = NULL, message_id = NULL \
         WHERE (conversation_id, message_id) IN ({of})",
        outbox::SCRUBBED
    ));
    sql.query::<Db>().execute(conn)?;
    let mut sql = Sql::default();
    let (x1, x2) = (sql.id(x), sql.id(x));
    sql.push(&format!(
        "UPDATE conversations SET deleted_count = deleted_count + ( \
             SELECT COUNT(*) FROM messages m \
             WHERE m.conversation_id = conversations.id AND m.sender_id = {x1}) \
         WHERE group_id IS NOT NULL AND id IN ( \
             SELECT conversation_id FROM messages WHERE sender_id = {x2})"
    ));
    sql.query::<Db>().execute(conn)?;
    let mut sql = Sql::default();
    let (none, x3) = (sql.id(NO_ONE.db()), sql.id(x));
    sql.push(&format!(
        "INSERT INTO message_gaps (conversation_id, seq, sender_id) \
         SELECT m.conversation_id, m.seq, {none} FROM messages m \
         JOIN conversations c ON c.id = m.conversation_id \
         WHERE m.sender_id = {x3} AND c.group_id IS NOT NULL"
    ));
    sql.query::<Db>().execute(conn)?;
    super::depth::before_contact_messages_erased(conn, x)?;
    let mut sql = Sql::default();
    let x4 = sql.id(x);
    sql.push(&format!(
        "DELETE FROM messages WHERE sender_id = {x4} AND conversation_id IN ( \
             SELECT id FROM conversations WHERE group_id IS NOT NULL)"
    ));
    sql.query::<Db>().execute(conn)?;
    Ok(())
}

/// Others' messages that mention the contact mention it no more: found
/// among the conversations of the groups it is or was a member of (a
/// message mentions members only), by index.
fn unmention(conn: &mut Conn, x: DbId) -> Result<()> {
    let groups: Vec<DbId> = group_members::table
        .filter(group_members::contact_id.eq(x))
        .select(group_members::group_id)
        .union(
            group_member_spans::table
                .filter(group_member_spans::contact_id.eq(x))
                .select(group_member_spans::group_id),
        )
        .load(conn)?;
    if groups.is_empty() {
        return Ok(());
    }
    let pattern = format!("%{}%", x.uuid());
    let mentioning: Vec<(DbId, Option<String>)> = messages::table
        .inner_join(conversations::table)
        .filter(conversations::group_id.eq_any(groups.iter().map(|g| Some(*g))))
        .filter(messages::mentions.like(pattern))
        .select((messages::id, messages::mentions))
        .load(conn)?;
    for (m, json) in mentioning {
        let mentioned = confab_store_sql::rows::mentions_of(json.as_deref())?;
        // Ids need no JSON escaping.
        let kept: Vec<String> = mentioned
            .contacts()
            .iter()
            .filter(|c| c.db() != x)
            .map(|c| format!("\"{}\"", c.as_uuid()))
            .collect();
        let kept = (!kept.is_empty()).then(|| format!("[{}]", kept.join(",")));
        diesel::update(messages::table.find(m))
            .set(messages::mentions.eq(kept))
            .execute(conn)?;
    }
    Ok(())
}

fn direct_conversations_of(conn: &mut Conn, x: DbId) -> Result<Vec<DbId>> {
    Ok(conversations::table
        .filter(conversations::group_id.is_null())
        .filter(
            conversations::creator_id
                .eq(x)
                .or(conversations::peer_id.eq(x)),
        )
        .select(conversations::id)
        .load(conn)?)
}

/// Leaves group `g`: when the contact is its last owner, its oldest
/// admin (else its oldest member) becomes owner first; then the contact is
/// removed as a member removing themself is (`group.updated` to the
/// members and to them, their membership's span closed).
fn leave_group(
    conn: &mut Conn,
    g: GroupId,
    who: ContactId,
    outbox: &confab_ports::Outbox,
    at: confab_domain::Timestamp,
) -> Result<()> {
    let (gid, x) = (g.db(), who.db());
    let owner = GroupRole::Owner.as_str();
    let other_owners: i64 = group_members::table
        .filter(group_members::group_id.eq(gid))
        .filter(group_members::role.eq(owner))
        .filter(group_members::contact_id.ne(x))
        .count()
        .get_result(conn)?;
    if other_owners == 0 {
        // Its oldest admin, else its oldest member.
        let mut heir: Option<DbId> = None;
        for role in [GroupRole::Admin, GroupRole::Member] {
            if heir.is_none() {
                heir = group_members::table
                    .filter(group_members::group_id.eq(gid))
                    .filter(group_members::role.eq(role.as_str()))
                    .order(group_members::seq.asc())
                    .select(group_members::contact_id)
                    .first(conn)
                    .optional()?;
            }
        }
        match heir {
            Some(heir) => {
                diesel::update(group_members::table.find((gid, heir)))
                    .set(group_members::role.eq(owner))
                    .execute(conn)?;
            }
            // Its only member: the group goes.
            None => return delete_group(conn, g, outbox),
        }
    }
    let change = GroupChange {
        remove: vec![who],
        max_members: u64::MAX,
        ..GroupChange::default()
    };
    update_group(conn, g, change, at, outbox)?;
    // The rows that named the contact as the group's or its
    // conversations' creator name its (first) owner now.
    let first_owner = |sql: &mut Sql, group: &str| {
        let role = sql.bind(Bind::Text(owner.to_owned()));
        format!(
            "(SELECT gm.contact_id FROM group_members gm \
              WHERE gm.group_id = {group} AND gm.role = {role} ORDER BY gm.seq LIMIT 1)"
        )
    };
    let mut sql = Sql::default();
    let (g1, x1) = (sql.id(gid), sql.id(x));
    let new = first_owner(&mut sql, "groups.id");
    sql.push(&format!(
        "UPDATE groups SET created_by = {new} WHERE id = {g1} AND created_by = {x1}"
    ));
    sql.query::<Db>().execute(conn)?;
    let mut sql = Sql::default();
    let (g2, x2) = (sql.id(gid), sql.id(x));
    let new = first_owner(&mut sql, "conversations.group_id");
    sql.push(&format!(
        "UPDATE conversations SET creator_id = {new} WHERE group_id = {g2} AND creator_id = {x2}"
    ));
    sql.query::<Db>().execute(conn)?;
    Ok(())
}

/// Every other row that names the contact: its reactions, states, spans,
/// event rows, credentials and stored answers go; events about it go;
/// kept events and others' stored answers that show it keep nothing of it
/// (`{"id":"<subject>","redacted":true}`); the actor of kept events is no
/// one. Of the kept events and stored answers, it reads only those written
/// since its job's batches passed ([`erase_redact_batch`]).
fn forget(conn: &mut Conn, x: DbId, username: &str) -> Result<()> {
    let by_contact = [
        "reactions",
        "conversation_states",
        "group_member_spans",
        "event_recipients",
        "idempotency_keys",
        "idempotency_quota",
        "event_tickets",
        "tokens",
    ];
    for table in by_contact {
        let mut sql = Sql::default();
        let id = sql.id(x);
        sql.push(&format!("DELETE FROM {table} WHERE contact_id = {id}"));
        sql.query::<Db>().execute(conn)?;
    }
    let mut sql = Sql::default();
    let (none, x1) = (sql.id(NO_ONE.db()), sql.id(x));
    sql.push(&format!(
        "UPDATE message_gaps SET sender_id = {none} WHERE sender_id = {x1}"
    ));
    sql.query::<Db>().execute(conn)?;
    // Events about the contact itself (`contact.created|updated`).
    for table in ["event_recipients", "event_groups"] {
        let mut sql = Sql::default();
        let id = sql.id(x);
        sql.push(&format!(
            "DELETE FROM {table} WHERE event_id IN (SELECT id FROM events WHERE subject_id = {id})"
        ));
        sql.query::<Db>().execute(conn)?;
    }
    let mut sql = Sql::default();
    let id = sql.id(x);
    sql.push(&format!("DELETE FROM events WHERE subject_id = {id}"));
    sql.query::<Db>().execute(conn)?;
    // What others' kept events and answers showed of it, written since
    // the job's batches passed (or since the contact was created, when
    // none did): found by creation time, by index.
    let (events_from, answers_from) = redacted_to(conn, x)?;
    redact(
        conn,
        x,
        username,
        Pass::Events,
        events_from - IN_FLIGHT_US,
        None,
    )?;
    redact(
        conn,
        x,
        username,
        Pass::Answers,
        answers_from - IN_FLIGHT_US,
        None,
    )?;
    let mut sql = Sql::default();
    let (none, id) = (sql.id(NO_ONE.db()), sql.id(x));
    sql.push(&format!(
        "UPDATE events SET actor_id = {none} WHERE actor_id = {id}"
    ));
    sql.query::<Db>().execute(conn)?;
    Ok(())
}

/// How far before a pass's mark the erase's last transaction reads again:
/// a write in flight while a batch ran (its `created_at` taken before it
/// committed) is found then. No transaction lasts this long: every
/// statement has a deadline of a few seconds.
const IN_FLIGHT_US: i64 = 60_000_000;

/// The two passes over what others were shown.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// Kept events, and their per-recipient copies.
    Events,
    /// Stored answers (idempotency keys, 24 h).
    Answers,
}

impl Pass {
    fn table(self) -> &'static str {
        match self {
            Self::Events => "events",
            Self::Answers => "idempotency_keys",
        }
    }
}

/// Where each pass of contact `x`'s running erase has got to (`created_at`
/// in microseconds); from the contact's creation when a pass has not
/// begun (nothing before it can show it).
fn redacted_to(conn: &mut Conn, x: DbId) -> Result<(i64, i64)> {
    let created: i64 = contacts::table
        .find(x)
        .select(contacts::created_at)
        .first(conn)
        .optional()?
        .ok_or_else(not_found)?;
    let marks: Option<(Option<i64>, Option<i64>)> = jobs::table
        .filter(jobs::subject_id.eq(x))
        .filter(jobs::kind.eq(JobKind::ContactErase.as_str()))
        .filter(jobs::finished_at.is_null())
        .select((jobs::events_done_to, jobs::answers_done_to))
        .first(conn)
        .optional()?;
    let (events, answers) = marks.unwrap_or((None, None));
    Ok((
        events.unwrap_or(created).max(created),
        answers.unwrap_or(created).max(created),
    ))
}

/// One batch of the last pass of contact `contact`'s erase (its job
/// `job`): the kept events (first) or stored answers (then) of the next
/// `limit` created after the pass's mark keep nothing of it; the mark
/// moves on. Each batch reads at most about `limit` rows, by index on
/// `created_at`, so that no writer waits long on it. `false` once both
/// passes have reached the newest row (or the contact or job is gone).
pub(crate) fn erase_redact_batch(
    conn: &mut Conn,
    contact: ContactId,
    job: Uuid,
    limit: u32,
) -> Result<bool> {
    let x = contact.db();
    let found: Option<(String, i64)> = contacts::table
        .find(x)
        .select((contacts::username, contacts::created_at))
        .first(conn)
        .optional()?;
    let Some((username, created)) = found else {
        return Ok(false);
    };
    let marks: Option<(Option<i64>, Option<i64>)> = jobs::table
        .find(DbId::from(job))
        .select((jobs::events_done_to, jobs::answers_done_to))
        .first(conn)
        .optional()?;
    let Some((events_to, answers_to)) = marks else {
        return Ok(false);
    };
    // Nothing created before the contact can show it.
    let answers_from = answers_to.unwrap_or(created).max(created);
    let (pass, from) = match answers_to {
        None => (Pass::Events, events_to.unwrap_or(created).max(created)),
        Some(_) => (Pass::Answers, answers_from),
    };
    // The `created_at` of the batch's last row, when there are more.
    let mut sql = Sql::default();
    let (f, offset) = (
        sql.bind(Bind::Int(from)),
        sql.bind(Bind::Int(i64::from(limit.max(1)) - 1)),
    );
    sql.push(&format!(
        "SELECT created_at AS value FROM {} WHERE created_at > {f} \
         ORDER BY created_at LIMIT 1 OFFSET {offset}",
        pass.table()
    ));
    let to: Option<i64> = sql
        .query::<Db>()
        .get_result::<Int64Value>(conn)
        .optional()?
        .map(|v| v.value);
    redact(conn, x, &username, pass, from, to)?;
    let mark = match to {
        Some(to) => to,
        // The pass is through: its mark is the newest row's.
        None => newest(conn, pass)?.unwrap_or(from).max(from),
    };
    let target = diesel::update(jobs::table.find(DbId::from(job)));
    match (pass, to) {
        (Pass::Events, Some(_)) => target
            .set(jobs::events_done_to.eq(Some(mark)))
            .execute(conn)?,
        (Pass::Events, None) => target
            .set((
                jobs::events_done_to.eq(Some(mark)),
                jobs::answers_done_to.eq(Some(answers_from)),
            ))
            .execute(conn)?,
        (Pass::Answers, _) => target
            .set(jobs::answers_done_to.eq(Some(mark)))
            .execute(conn)?,
    };
    Ok(pass == Pass::Events || to.is_some())
}

#[derive(QueryableByName)]
struct Int64Value {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    value: i64,
}

/// The newest `created_at` of a pass's table (by index).
fn newest(conn: &mut Conn, pass: Pass) -> Result<Option<i64>> {
    let mut sql = Sql::default();
    sql.push(&format!(
        "SELECT created_at AS value FROM {} ORDER BY created_at DESC LIMIT 1",
        pass.table()
    ));
    Ok(sql
        .query::<Db>()
        .get_result::<Int64Value>(conn)
        .optional()?
        .map(|v| v.value))
}

/// The rows of `pass` created in `(from, to]` (`to`: none, to the newest)
/// that show contact `x`, by its id (in its contact object) or its
/// username alone (a reaction lists its reactors by username), as a JSON
/// string, keep nothing of it: kept events are redacted (and their
/// per-recipient copies dropped), stored answers deleted (a retry of such
/// a request within the key's 24 h runs again).
fn redact(
    conn: &mut Conn,
    x: DbId,
    username: &str,
    pass: Pass,
    from: i64,
    to: Option<i64>,
) -> Result<()> {
    let patterns = [
        format!("%{}%", x.uuid()),
        format!("%\"{}\"%", like_escaped(username)),
    ];
    let range = |sql: &mut Sql| {
        let f = sql.bind(Bind::Int(from));
        match to {
            Some(to) => {
                let t = sql.bind(Bind::Int(to));
                format!("created_at > {f} AND created_at <= {t}")
            }
            None => format!("created_at > {f}"),
        }
    };
    for pattern in &patterns {
        let shows = |sql: &mut Sql, column: &str| {
            let p = sql.bind(Bind::Text(pattern.clone()));
            format!("{column} LIKE {p} ESCAPE '\\'")
        };
        match pass {
            Pass::Events => {
                let mut sql = Sql::default();
                let within = range(&mut sql);
                let cond = shows(&mut sql, "payload");
                sql.push(&format!(
                    "UPDATE event_recipients SET payload = NULL \
                     WHERE event_id IN (SELECT id FROM events WHERE {within}) AND {cond}"
                ));
                sql.query::<Db>().execute(conn)?;
                let mut sql = Sql::default();
                let within = range(&mut sql);
                let cond = shows(&mut sql, "payload");
                sql.push(&format!(
                    "UPDATE events SET payload = {REDACTED} WHERE {within} AND {cond}"
                ));
                sql.query::<Db>().execute(conn)?;
            }
            Pass::Answers => {
                let mut sql = Sql::default();
                let within = range(&mut sql);
                let cond = shows(&mut sql, "body");
                sql.push(&format!(
                    "DELETE FROM idempotency_keys WHERE {within} AND {cond}"
                ));
                sql.query::<Db>().execute(conn)?;
            }
        }
    }
    Ok(())
}

/// A kept event's payload once it showed an erased contact.
const REDACTED: &str = r#"CASE WHEN subject_id IS NULL THEN '{"redacted":true}' ELSE '{"id":"' || CAST(subject_id AS TEXT) || '","redacted":true}' END"#;

/// `text` with the `LIKE` wildcards (`%`, `_`) and the escape (`\`)
/// escaped by `\`.
fn like_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
