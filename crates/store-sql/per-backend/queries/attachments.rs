//! Attachments on their own (API.md section 15): uploads not attached yet,
//! their lists, renames and deletions, attaching uploads to a message, and
//! the stored files' scheduled deletions (`file_deletions`, migration
//! `files`; the port's docs, `confab_ports::AttachmentStore`, tell the
//! whole life of a stored file).

use confab_domain::{
    Attachment, AttachmentId, ContactId, Cursor, DomainError, Field, Filename, MessageId, Page,
    Paged, Rule, Timestamp,
};
use confab_ports::{AttachmentFilter, Outbox, StoreError};
use diesel::prelude::*;

use super::membership::is_member;
use super::outbox::{self, Written, SCRUBBED};
use super::{Conn, Db, Result};
use confab_store_sql::error::Error;
use confab_store_sql::id::DbId;
use confab_store_sql::queries::not_found;
use confab_store_sql::queries::paging::{fetch_size, finish_page};
use confab_store_sql::raw::Sql;
use confab_store_sql::rows::{AttachmentRow, DbKey};
use confab_store_sql::schema::{
    attachments, conversations, file_deletions, messages, server_secrets,
};
use confab_store_sql::visible_to;

/// Schedules the deletion of `id`'s file at `due` (kept if one is
/// scheduled already).
pub(crate) fn expect_file(conn: &mut Conn, id: AttachmentId, due: Timestamp) -> Result<()> {
    diesel::insert_into(file_deletions::table)
        .values((
            file_deletions::attachment_id.eq(id.db()),
            file_deletions::due_at.eq(due.micros()),
        ))
        .on_conflict_do_nothing()
        .execute(conn)?;
    Ok(())
}

/// Writes an upload (not attached) with its events.
pub(crate) fn insert_upload(
    conn: &mut Conn,
    upload: Attachment,
    outbox: &Outbox,
) -> Result<Attachment> {
    diesel::insert_into(attachments::table)
        .values(AttachmentRow::of(&upload, 0))
        .execute(conn)?;
    write_events(conn, outbox, &upload)?;
    Ok(upload)
}

/// The `outbox`'s events of a write of attachment `a` alone.
fn write_events(conn: &mut Conn, outbox: &Outbox, a: &Attachment) -> Result<()> {
    outbox::write(
        conn,
        outbox,
        &Written {
            attachments: std::slice::from_ref(a),
            ..Written::default()
        },
    )
}

fn row(conn: &mut Conn, id: DbId) -> Result<Option<AttachmentRow>> {
    Ok(attachments::table
        .find(id)
        .select(AttachmentRow::as_select())
        .first(conn)
        .optional()?)
}

/// Whether `viewer` may see the attachment of `row`: their own, or of a
/// conversation they are a member of.
fn sees(conn: &mut Conn, viewer: DbId, row: &AttachmentRow) -> Result<bool> {
    if row.uploader_id == viewer {
        return Ok(true);
    }
    match row.conversation_id {
        Some(c) => is_member(conn, viewer, c),
        None => Ok(false),
    }
}

/// The attachment, when `viewer` may see it.
pub(crate) fn attachment_for(
    conn: &mut Conn,
    viewer: ContactId,
    id: AttachmentId,
) -> Result<Option<Attachment>> {
    let Some(row) = row(conn, id.db())? else {
        return Ok(None);
    };
    if !sees(conn, viewer.db(), &row)? {
        return Ok(None);
    }
    Ok(Some(Attachment::try_from(row)?))
}

/// The attachment, whoever asks.
pub(crate) fn attachment(conn: &mut Conn, id: AttachmentId) -> Result<Option<Attachment>> {
    row(conn, id.db())?.map(Attachment::try_from).transpose()
}

/// The viewer's list: one index range when filtered by conversation or
/// message (membership checked first); else their own uploads and the
/// attachments of their conversations, newest first.
pub(crate) fn list_attachments(
    conn: &mut Conn,
    viewer: ContactId,
    filter: AttachmentFilter,
    page: Page<AttachmentId>,
) -> Result<Paged<Attachment>> {
    let v = viewer.db();
    let mut in_conversation = None;
    if let Some(c) = filter.conversation {
        if !is_member(conn, v, c.db())? {
            return Err(Error::Store(StoreError::NotFound));
        }
        in_conversation = Some(c.db());
    }
    let mut of_message = None;
    if let Some(m) = filter.message {
        let conversation: Option<DbId> = messages::table
            .find(m.db())
            .select(messages::conversation_id)
            .first(conn)
            .optional()?;
        match conversation {
            Some(c) if is_member(conn, v, c)? => of_message = Some(m.db()),
            _ => return Err(message_not_found()),
        }
    }
    let list = || {
        let mut q = attachments::table
            .select(AttachmentRow::as_select())
            .into_boxed::<Db>();
        q = match (in_conversation, of_message) {
            (None, None) => q.filter(
                attachments::uploader_id
                    .eq(v)
                    .or(attachments::conversation_id.eq_any(
                        conversations::table
                            .filter(visible_to!(v))
                            .select(conversations::id.nullable()),
                    )),
            ),
            (c, m) => {
                if let Some(c) = c {
                    q = q.filter(attachments::conversation_id.eq(c));
                }
                if let Some(m) = m {
                    q = q.filter(attachments::message_id.eq(m));
                }
                q
            }
        };
        q
    };
    let (limit, fetch) = fetch_size(&page);
    let (q, backwards) = match page.cursor {
        None => (list().order(attachments::id.desc()), false),
        Some(cursor) => {
            let (Cursor::After(at) | Cursor::Before(at)) = cursor;
            let there: i64 = list()
                .filter(attachments::id.eq(at.db()))
                .count()
                .get_result(conn)?;
            if there == 0 {
                return Err(Error::Store(StoreError::CursorNotFound));
            }
            match cursor {
                Cursor::After(at) => (
                    list()
                        .filter(attachments::id.lt(at.db()))
                        .order(attachments::id.desc()),
                    false,
                ),
                Cursor::Before(at) => (
                    list()
                        .filter(attachments::id.gt(at.db()))
                        .order(attachments::id.asc()),
                    true,
                ),
            }
        }
    };
    let rows: Vec<AttachmentRow> = q.limit(fetch).load(conn)?;
    let (rows, has_more) = finish_page(rows, limit, backwards);
    Ok(Paged {
        items: rows
            .into_iter()
            .map(Attachment::try_from)
            .collect::<std::result::Result<_, _>>()?,
        has_more,
    })
}

fn message_not_found() -> Error {
    Error::Store(StoreError::NotFound)
}

/// The row of attachment `id` when `by` added it.
fn own_row(conn: &mut Conn, id: AttachmentId, by: ContactId) -> Result<AttachmentRow> {
    attachments::table
        .find(id.db())
        .filter(attachments::uploader_id.eq(by.db()))
        .select(AttachmentRow::as_select())
        .first(conn)
        .optional()?
        .ok_or_else(not_found)
}

/// Renames `by`'s attachment `id`; its event only when the name changed.
pub(crate) fn rename_attachment(
    conn: &mut Conn,
    id: AttachmentId,
    by: ContactId,
    filename: Filename,
    outbox: &Outbox,
) -> Result<Attachment> {
    let current = own_row(conn, id, by)?;
    if current.filename == filename.as_str() {
        return Attachment::try_from(current);
    }
    diesel::update(attachments::table.find(id.db()))
        .set(attachments::filename.eq(filename.as_str()))
        .execute(conn)?;
    let renamed = Attachment::try_from(AttachmentRow {
        filename: filename.into_inner(),
        ..current
    })?;
    write_events(conn, outbox, &renamed)?;
    Ok(renamed)
}

/// Scrubs the earlier events of attachment `id` (its creation and
/// renames): "Deleted means gone", API.md section 9.
fn scrub_attachment_events(conn: &mut Conn, id: DbId) -> Result<()> {
    let mut sql = Sql::default();
    let a = sql.id(id);
    sql.push(&format!(
        "UPDATE events SET payload = {SCRUBBED}, conversation_id = NULL, message_id = NULL \
         WHERE subject_id = {a} AND type IN ('attachment.created', 'attachment.updated')"
    ));
    sql.query::<Db>().execute(conn)?;
    Ok(())
}

/// Deletes `by`'s attachment `id`, its events resolved first; the
/// trigger `attachments_file_deleted` schedules its file's deletion.
pub(crate) fn delete_attachment(
    conn: &mut Conn,
    id: AttachmentId,
    by: ContactId,
    outbox: &Outbox,
) -> Result<()> {
    let current = Attachment::try_from(own_row(conn, id, by)?)?;
    write_events(conn, outbox, &current)?;
    scrub_attachment_events(conn, id.db())?;
    diesel::delete(attachments::table.find(id.db())).execute(conn)?;
    Ok(())
}

/// Up to `limit` due deletions, earliest first.
pub(crate) fn due_file_deletions(
    conn: &mut Conn,
    now: Timestamp,
    limit: u32,
) -> Result<Vec<AttachmentId>> {
    let ids: Vec<DbId> = file_deletions::table
        .filter(file_deletions::due_at.le(now.micros()))
        .order(file_deletions::due_at.asc())
        .select(file_deletions::attachment_id)
        .limit(i64::from(limit))
        .load(conn)?;
    Ok(ids
        .into_iter()
        .map(|id| AttachmentId::from_uuid(id.uuid()))
        .collect())
}

/// Takes away attachment `id` if it is an upload still not attached
/// (with its events); whether its file is still to be deleted. The
/// attachment's row is deleted before the deletion is looked at, in the
/// same order as an attach takes them (row, then deletion), so the two
/// cannot deadlock, and whichever commits first wins.
pub(crate) fn release_file(conn: &mut Conn, id: AttachmentId, outbox: &Outbox) -> Result<bool> {
    if let Some(row) = row(conn, id.db())?.filter(|r| r.message_id.is_none()) {
        let upload = Attachment::try_from(row)?;
        // Only while still not attached: an attach that committed
        // since the read above keeps its row.
        let released = diesel::delete(
            attachments::table
                .find(id.db())
                .filter(attachments::message_id.is_null()),
        )
        .execute(conn)?;
        if released == 1 {
            // Its audience is its uploader alone: resolved the same
            // after the delete.
            write_events(conn, outbox, &upload)?;
            scrub_attachment_events(conn, id.db())?;
        }
    }
    let due: Option<DbId> = file_deletions::table
        .find(id.db())
        .select(file_deletions::attachment_id)
        .first(conn)
        .optional()?;
    Ok(due.is_some())
}

/// Forgets `id`'s deletion once its file is gone.
pub(crate) fn forget_file_deletion(conn: &mut Conn, id: AttachmentId) -> Result<()> {
    diesel::delete(file_deletions::table.find(id.db())).execute(conn)?;
    Ok(())
}

/// The shared secret `name`: the stored one, or `fresh`, stored now.
pub(crate) fn shared_secret(conn: &mut Conn, name: &str, fresh: String) -> Result<String> {
    diesel::insert_into(server_secrets::table)
        .values((
            server_secrets::name.eq(name),
            server_secrets::value.eq(fresh),
        ))
        .on_conflict_do_nothing()
        .execute(conn)?;
    Ok(server_secrets::table
        .find(name)
        .select(server_secrets::value)
        .first(conn)?)
}

/// Attaches the sender's `uploads` to message `m` of conversation `c`:
/// each `(place among the message's new attachments, id, seq)`. An
/// upload that is not `owner`'s, or is attached already, refuses the
/// whole write (`Rule` on `Field::Upload(place)`). Cancels each file's
/// scheduled deletion, and moves its earlier events under the message
/// and conversation, where their deletion finds them. Returns the
/// attachments as now stored, in the order given.
pub(super) fn attach_uploads(
    conn: &mut Conn,
    (m, c): (MessageId, confab_domain::ConversationId),
    owner: ContactId,
    uploads: &[(usize, AttachmentId, i32)],
) -> Result<Vec<Attachment>> {
    let mut out = Vec::with_capacity(uploads.len());
    for &(place, id, seq) in uploads {
        let attached = diesel::update(
            attachments::table
                .find(id.db())
                .filter(attachments::uploader_id.eq(owner.db()))
                .filter(attachments::message_id.is_null())
                .filter(attachments::content_sha256.is_not_null()),
        )
        .set((
            attachments::message_id.eq(Some(m.db())),
            attachments::conversation_id.eq(Some(c.db())),
            attachments::seq.eq(seq),
        ))
        .execute(conn)?;
        if attached == 0 {
            return Err(Error::Store(StoreError::Rule(DomainError::breaks(
                Field::Upload(place),
                Rule::NotAttachable,
            ))));
        }
        diesel::delete(file_deletions::table.find(id.db())).execute(conn)?;
        let mut sql = Sql::default();
        let (a, mm, cm) = (sql.id(id.db()), sql.id(m.db()), sql.id(c.db()));
        sql.push(&format!(
            "UPDATE events SET message_id = {mm}, conversation_id = {cm} \
             WHERE subject_id = {a} AND type IN ('attachment.created', 'attachment.updated')"
        ));
        sql.query::<Db>().execute(conn)?;
        let stored = row(conn, id.db())?.ok_or_else(not_found)?;
        out.push(Attachment::try_from(stored)?);
    }
    Ok(out)
}
