//! Jobs (docs/api.md, "Jobs"): the rows that record work too big for one
//! request, their leases, and the bounded batches of a contact's erase.
//! Each function here is one short transaction of its caller: a batch
//! touches at most its limit of the contact's rows, found by index
//! (`messages_sender_idx`, migration `jobs`), so that no writer waits long
//! on it and its cost follows the contact's rows, never the database.

use confab_domain::{ContactId, ConversationId, MessageId, Timestamp};
use confab_ports::{Job, JobKind, JobState, Outbox};
use diesel::prelude::*;
use uuid::Uuid;

use super::outbox::{self, Deleted, Written};
use super::{Conn, Db, Result};
use confab_store_sql::id::DbId;
use confab_store_sql::raw::Sql;
use confab_store_sql::rows::{conversation_id, message_id, DbKey, MessageRow};
use confab_store_sql::schema::{contacts, conversations, jobs, message_gaps, messages, tokens};
use confab_store_sql::visible_to;

type JobRow = (
    DbId,
    String,
    DbId,
    Option<DbId>,
    String,
    i64,
    Option<i64>,
    i64,
);

fn job_of(row: JobRow) -> Result<Job> {
    let (id, kind, subject, actor, state, created_at, finished_at, progress) = row;
    let kind = JobKind::parse(&kind).ok_or_else(|| {
        confab_store_sql::error::inconsistent(format!(
            "job {} is of an unknown kind {kind}",
            id.uuid()
        ))
    })?;
    Ok(Job {
        id: id.uuid(),
        kind,
        subject: Some(subject.uuid()).filter(|s| !s.is_nil()),
        actor: actor.map(DbId::uuid),
        state: if state == JobState::Succeeded.as_str() {
            JobState::Succeeded
        } else {
            JobState::Running
        },
        created_at: Timestamp::from_micros(created_at),
        finished_at: finished_at.map(Timestamp::from_micros),
        progress,
    })
}

macro_rules! job_columns {
    () => {
        (
            jobs::id,
            jobs::kind,
            jobs::subject_id,
            jobs::actor_id,
            jobs::state,
            jobs::created_at,
            jobs::finished_at,
            jobs::progress,
        )
    };
}

pub(crate) fn job(conn: &mut Conn, id: Uuid) -> Result<Option<Job>> {
    jobs::table
        .find(DbId::from(id))
        .select(job_columns!())
        .first::<JobRow>(conn)
        .optional()?
        .map(job_of)
        .transpose()
}

/// The contact's tokens go and it is marked as being erased, with its job
/// recorded; the job already erasing it when it is marked.
pub(crate) fn start_erase(
    conn: &mut Conn,
    contact: ContactId,
    id: Uuid,
    at: Timestamp,
) -> Result<Option<Job>> {
    let x = contact.db();
    let erasing: Option<bool> = contacts::table
        .find(x)
        .select(contacts::erasing)
        .first(conn)
        .optional()?;
    match erasing {
        None => return Ok(None),
        Some(true) => {
            let running = jobs::table
                .filter(jobs::subject_id.eq(x))
                .filter(jobs::kind.eq(JobKind::ContactErase.as_str()))
                .filter(jobs::finished_at.is_null())
                .select(job_columns!())
                .first::<JobRow>(conn)
                .optional()?;
            if let Some(row) = running {
                return job_of(row).map(Some);
            }
        }
        Some(false) => {}
    }
    diesel::update(contacts::table.find(x))
        .set(contacts::erasing.eq(true))
        .execute(conn)?;
    diesel::delete(tokens::table.filter(tokens::contact_id.eq(x))).execute(conn)?;
    diesel::insert_into(jobs::table)
        .values((
            jobs::id.eq(DbId::from(id)),
            jobs::kind.eq(JobKind::ContactErase.as_str()),
            jobs::subject_id.eq(x),
            jobs::state.eq(JobState::Running.as_str()),
            jobs::created_at.eq(at.micros()),
            jobs::progress.eq(0_i64),
        ))
        .execute(conn)?;
    job(conn, id)
}

/// Conversation `conversation` is told deleted to its members
/// (`outbox`), marked as being deleted (no one sees it any more) and its
/// deletion by `by` recorded as job `id`. `NotFound` when `by` no longer
/// sees it.
pub(crate) fn start_conversation_delete(
    conn: &mut Conn,
    id: Uuid,
    conversation: ConversationId,
    by: ContactId,
    outbox: &Outbox,
    at: Timestamp,
) -> Result<Job> {
    // To its members before it is marked (rolled back if `by` may not).
    outbox::write(conn, outbox, &Written::default())?;
    let by = by.db();
    let marked = diesel::update(
        conversations::table
            .filter(conversations::id.eq(conversation.db()))
            .filter(visible_to!(by)),
    )
    .set(conversations::deleting.eq(true))
    .execute(conn)?;
    if marked == 0 {
        return Err(confab_store_sql::queries::not_found());
    }
    diesel::insert_into(jobs::table)
        .values((
            jobs::id.eq(DbId::from(id)),
            jobs::kind.eq(JobKind::ConversationDelete.as_str()),
            jobs::subject_id.eq(conversation.db()),
            jobs::actor_id.eq(Some(by)),
            jobs::state.eq(JobState::Running.as_str()),
            jobs::created_at.eq(at.micros()),
            jobs::progress.eq(0_i64),
        ))
        .execute(conn)?;
    job(conn, id)?
        .ok_or_else(|| confab_store_sql::error::inconsistent(format!("job {id} is not there")))
}

/// The conversation goes if it is marked as being deleted, its earlier
/// events scrubbed; its messages left (none, once its job emptied it)
/// cascade.
pub(crate) fn finish_conversation_delete(
    conn: &mut Conn,
    conversation: ConversationId,
) -> Result<bool> {
    let c = conversation.db();
    let gone = diesel::delete(
        conversations::table
            .filter(conversations::id.eq(c))
            .filter(conversations::deleting.eq(true)),
    )
    .execute(conn)?;
    if gone == 0 {
        return Ok(false);
    }
    outbox::scrub(conn, Deleted::Conversation(c))?;
    Ok(true)
}

pub(crate) fn lease_job(
    conn: &mut Conn,
    id: Uuid,
    owner: Uuid,
    now: Timestamp,
    until: Timestamp,
) -> Result<bool> {
    let owner = DbId::from(owner);
    let n = diesel::update(
        jobs::table
            .find(DbId::from(id))
            .filter(jobs::finished_at.is_null())
            .filter(
                jobs::lease_until
                    .is_null()
                    .or(jobs::lease_until.lt(now.micros()))
                    .or(jobs::lease_owner.eq(owner)),
            ),
    )
    .set((
        jobs::lease_owner.eq(Some(owner)),
        jobs::lease_until.eq(Some(until.micros())),
    ))
    .execute(conn)?;
    Ok(n == 1)
}

pub(crate) fn release_job(conn: &mut Conn, id: Uuid, owner: Uuid, batches: i64) -> Result<()> {
    diesel::update(
        jobs::table
            .find(DbId::from(id))
            .filter(jobs::lease_owner.eq(DbId::from(owner))),
    )
    .set((
        jobs::lease_owner.eq(None::<DbId>),
        jobs::lease_until.eq(None::<i64>),
        jobs::progress.eq(jobs::progress + batches),
    ))
    .execute(conn)?;
    Ok(())
}

/// Done: the erased contact's id is not kept (its job names no one).
pub(crate) fn finish_job(conn: &mut Conn, id: Uuid, at: Timestamp, batches: i64) -> Result<()> {
    diesel::update(jobs::table.find(DbId::from(id)))
        .set((
            jobs::subject_id.eq(super::erase::NO_ONE.db()),
            jobs::state.eq(JobState::Succeeded.as_str()),
            jobs::finished_at.eq(Some(at.micros())),
            jobs::lease_owner.eq(None::<DbId>),
            jobs::lease_until.eq(None::<i64>),
            jobs::progress.eq(jobs::progress + batches),
        ))
        .execute(conn)?;
    Ok(())
}

/// At most `batch` jobs finished before `before` go (by index): how many.
pub(crate) fn prune_jobs(conn: &mut Conn, before: Timestamp, batch: u32) -> Result<u64> {
    let old: Vec<DbId> = jobs::table
        .filter(jobs::finished_at.lt(before.micros()))
        .order(jobs::finished_at.asc())
        .limit(i64::from(batch))
        .select(jobs::id)
        .load(conn)?;
    if old.is_empty() {
        return Ok(0);
    }
    let gone = diesel::delete(jobs::table.filter(jobs::id.eq_any(&old))).execute(conn)?;
    Ok(gone as u64)
}

pub(crate) fn due_jobs(conn: &mut Conn, now: Timestamp, limit: u32) -> Result<Vec<Job>> {
    jobs::table
        .filter(jobs::finished_at.is_null())
        .filter(
            jobs::lease_until
                .is_null()
                .or(jobs::lease_until.lt(now.micros())),
        )
        .order(jobs::created_at.asc())
        .limit(i64::from(limit))
        .select(job_columns!())
        .load::<JobRow>(conn)?
        .into_iter()
        .map(job_of)
        .collect()
}

pub(crate) fn erase_next_group_messages(
    conn: &mut Conn,
    contact: ContactId,
    limit: u32,
) -> Result<Vec<(MessageId, ConversationId)>> {
    Ok(messages::table
        .inner_join(conversations::table)
        .filter(messages::sender_id.eq(contact.db()))
        .filter(conversations::group_id.is_not_null())
        .order(messages::id.asc())
        .limit(i64::from(limit))
        .select((messages::id, messages::conversation_id))
        .load::<(DbId, DbId)>(conn)?
        .into_iter()
        .map(|(m, c)| (message_id(m), conversation_id(c)))
        .collect())
}

/// Each message as its deletion by its sender: its earlier events
/// scrubbed, its own event written, its row gone (reactions and
/// attachments cascade), its thread and mentions counted back, a gap in
/// its conversation's numbers that is no one's.
pub(crate) fn erase_group_messages(
    conn: &mut Conn,
    contact: ContactId,
    batch: Vec<(MessageId, Outbox)>,
) -> Result<()> {
    let x = contact.db();
    for (id, outbox) in batch {
        let row = messages::table
            .filter(messages::id.eq(id.db()))
            .filter(messages::sender_id.eq(x))
            .select(MessageRow::as_select())
            .first(conn)
            .optional()?;
        let Some(row) = row else { continue };
        outbox::scrub(
            conn,
            Deleted::Message {
                conversation: row.conversation_id,
                message: row.id,
            },
        )?;
        outbox::write(conn, &outbox, &Written::default())?;
        let seq: i64 = diesel::delete(messages::table.find(row.id))
            .returning(messages::seq)
            .get_result(conn)?;
        super::depth::after_message_deleted(conn, &row, seq)?;
        diesel::insert_into(message_gaps::table)
            .values((
                message_gaps::conversation_id.eq(row.conversation_id),
                message_gaps::seq.eq(seq),
                message_gaps::sender_id.eq(super::erase::NO_ONE.db()),
            ))
            .execute(conn)?;
        diesel::update(conversations::table.find(row.conversation_id))
            .set(conversations::deleted_count.eq(conversations::deleted_count + 1))
            .execute(conn)?;
    }
    Ok(())
}

/// At most `limit` messages of the contact's first direct conversation
/// that still has any: their events scrubbed, their rows gone (reactions
/// and attachments cascade). The conversation itself, then empty, goes at
/// the erase's end with its `conversation.deleted`.
pub(crate) fn erase_direct_batch(
    conn: &mut Conn,
    contact: ContactId,
    limit: u32,
) -> Result<Option<(ConversationId, u64)>> {
    let x = contact.db();
    let direct: Option<DbId> = conversations::table
        .filter(conversations::group_id.is_null())
        .filter(
            conversations::creator_id
                .eq(x)
                .or(conversations::peer_id.eq(x)),
        )
        .order(conversations::id.asc())
        .select(conversations::id)
        .first(conn)
        .optional()?;
    if let Some(c) = direct {
        let gone = purge(conn, c, limit)?;
        return Ok(Some((conversation_id(c), gone)));
    }
    Ok(None)
}

pub(crate) fn purge_conversation_batch(
    conn: &mut Conn,
    conversation: ConversationId,
    limit: u32,
) -> Result<u64> {
    purge(conn, conversation.db(), limit)
}

/// At most `limit` of conversation `c`'s oldest messages go, their events
/// scrubbed first; how many went.
fn purge(conn: &mut Conn, c: DbId, limit: u32) -> Result<u64> {
    let ids: Vec<DbId> = messages::table
        .filter(messages::conversation_id.eq(c))
        .order(messages::id.asc())
        .limit(i64::from(limit))
        .select(messages::id)
        .load(conn)?;
    if ids.is_empty() {
        return Ok(0);
    }
    let mut sql = Sql::default();
    let conv = sql.id(c);
    let list: Vec<String> = ids.iter().map(|m| sql.id(*m)).collect();
    let list = list.join(", ");
    sql.push(&format!(
        "UPDATE events SET payload = {}, conversation_id = NULL, message_id = NULL \
         WHERE conversation_id = {conv} AND message_id IN ({list})",
        outbox::SCRUBBED
    ));
    sql.unprepared().query::<Db>().execute(conn)?;
    // A pin of one goes (`ON DELETE SET NULL`); reactions and attachments
    // cascade (their files' deletions are scheduled by trigger).
    let gone = diesel::delete(messages::table.filter(messages::id.eq_any(&ids))).execute(conn)?;
    Ok(gone as u64)
}
