//! Attachments on their own (docs/api.md "Files and attachments"): uploads not attached yet,
//! their lists, renames and deletions, attaching uploads to a message, and
//! the stored files' scheduled deletions (`file_deletions`, migration
//! `files`; the port's docs, `confab_ports::AttachmentStore`, tell the
//! whole life of a stored file), and what each contact's stored files
//! take (`upload_usage`, migration `upload_usage`).

use confab_domain::{
    Attachment, AttachmentId, ContactId, Cursor, DomainError, Field, Filename, MessageId, Page,
    Paged, Rule, Timestamp,
};
use confab_ports::{AttachmentFilter, Completion, Outbox, StorageUse, StoreError, Uploaded};
use diesel::prelude::*;

use super::idempotency::complete;
use super::membership::is_member;
use super::outbox::{self, Written, SCRUBBED};
use super::Backend;
use super::{Conn, Db, Result};
use confab_store_sql::error::Error;
use confab_store_sql::id::DbId;
use confab_store_sql::queries::not_found;
use confab_store_sql::queries::paging::{fetch_size, finish_page};
use confab_store_sql::raw::{Bind, Sql};
use confab_store_sql::rows::{AttachmentRow, DbKey};
use confab_store_sql::schema::{attachments, file_deletions, messages, server_secrets};
use confab_store_sql::SqlBackend as _;

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

/// Writes an upload (not attached) with its events, and adds its size to
/// its uploader's use when that stays within `quota` (else writes
/// nothing). The use's row is added to first, by one conditional upsert
/// (which on PostgreSQL locks the row until commit): concurrent uploads
/// of one contact are counted one after the other. Its release is the
/// trigger `attachments_upload_released`, whenever the row goes.
pub(crate) fn insert_upload(
    conn: &mut Conn,
    upload: Attachment,
    quota: Option<u64>,
    outbox: &Outbox,
    completion: Option<Completion<Attachment>>,
) -> Result<Uploaded> {
    let size = upload.file_size.map_or(0, |s| s.bytes()).max(0);
    let limit = quota.map_or(i64::MAX, |q| i64::try_from(q).unwrap_or(i64::MAX));
    let uploader = upload.uploader.db();
    if size > limit {
        return Ok(Uploaded::OverQuota {
            used: storage_use(conn, upload.uploader)?.bytes,
        });
    }
    let mut sql = Sql::default();
    let (c, n, max) = (
        sql.id(uploader),
        sql.bind(Bind::Int(size)),
        sql.bind(Bind::Int(limit)),
    );
    sql.push(&format!(
        "INSERT INTO upload_usage (contact_id, bytes, files) VALUES ({c}, {n}, 1) \
         ON CONFLICT (contact_id) DO UPDATE \
         SET bytes = upload_usage.bytes + excluded.bytes, files = upload_usage.files + 1 \
         WHERE upload_usage.bytes + excluded.bytes <= {max} \
         RETURNING bytes"
    ));
    let counted: Vec<Counted> = sql.query::<Db>().load(conn)?;
    if counted.is_empty() {
        return Ok(Uploaded::OverQuota {
            used: storage_use(conn, upload.uploader)?.bytes,
        });
    }
    diesel::insert_into(attachments::table)
        .values(AttachmentRow::of(&upload, 0))
        .execute(conn)?;
    write_events(conn, outbox, &upload)?;
    complete(conn, completion, &upload)?;
    Ok(Uploaded::Stored(upload))
}

/// The use an upload was counted in (only whether there is one is read).
#[derive(QueryableByName)]
struct Counted {
    #[diesel(sql_type = diesel::sql_types::BigInt, column_name = bytes)]
    _bytes: i64,
}

/// A contact's (or everyone's) use, as a raw statement returns it.
#[derive(QueryableByName)]
struct Use {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    bytes: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    files: i64,
}

impl From<Use> for StorageUse {
    fn from(u: Use) -> Self {
        Self {
            bytes: u64::try_from(u.bytes).unwrap_or(0),
            files: u64::try_from(u.files).unwrap_or(0),
        }
    }
}

/// What `contact`'s stored files take: one row by its key.
pub(crate) fn storage_use(conn: &mut Conn, contact: ContactId) -> Result<StorageUse> {
    let mut sql = Sql::default();
    let c = sql.id(contact.db());
    sql.push(&format!(
        "SELECT bytes, files FROM upload_usage WHERE contact_id = {c}"
    ));
    let row: Option<Use> = sql.query::<Db>().get_result(conn).optional()?;
    Ok(row.map(StorageUse::from).unwrap_or_default())
}

/// What every contact's stored files take together.
pub(crate) fn storage_total(conn: &mut Conn) -> Result<StorageUse> {
    let mut sql = Sql::default();
    // PostgreSQL's SUM of a BIGINT is a NUMERIC.
    sql.push(
        "SELECT CAST(COALESCE(SUM(bytes), 0) AS BIGINT) AS bytes, \
                CAST(COALESCE(SUM(files), 0) AS BIGINT) AS files \
         FROM upload_usage",
    );
    let row: Use = sql.query::<Db>().get_result(conn)?;
    Ok(row.into())
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
    let (limit, fetch) = fetch_size(&page);
    let backwards = matches!(page.cursor, Some(Cursor::Before(_)));
    let filtered = in_conversation.is_some() || of_message.is_some();
    // The filtered list: one index range (`attachments_conversation_idx`,
    // or the message's own), its visibility checked above.
    let list = || {
        let mut q = attachments::table
            .select(AttachmentRow::as_select())
            .into_boxed::<Db>();
        if let Some(c) = in_conversation {
            q = q.filter(attachments::conversation_id.eq(c));
        }
        if let Some(m) = of_message {
            q = q.filter(attachments::message_id.eq(m));
        }
        q
    };
    if let Some(cursor) = page.cursor {
        let (Cursor::After(at) | Cursor::Before(at)) = cursor;
        let there = match filtered {
            true => {
                list()
                    .filter(attachments::id.eq(at.db()))
                    .count()
                    .get_result::<i64>(conn)?
                    > 0
            }
            false => attachment_for(conn, viewer, at)?.is_some(),
        };
        if !there {
            return Err(Error::Store(StoreError::CursorNotFound));
        }
    }
    let rows: Vec<AttachmentRow> = if filtered {
        let q = match page.cursor {
            None => list().order(attachments::id.desc()),
            Some(Cursor::After(at)) => list()
                .filter(attachments::id.lt(at.db()))
                .order(attachments::id.desc()),
            Some(Cursor::Before(at)) => list()
                .filter(attachments::id.gt(at.db()))
                .order(attachments::id.asc()),
        };
        q.limit(fetch).load(conn)?
    } else {
        let ids = visible_ids(conn, v, page.cursor, fetch)?;
        let mut rows: Vec<AttachmentRow> = attachments::table
            .filter(attachments::id.eq_any(&ids))
            .select(AttachmentRow::as_select())
            .load(conn)?;
        // In the order of travel, as the ids came.
        rows.sort_by_key(|r| ids.iter().position(|id| *id == r.id));
        rows
    };
    let (rows, has_more) = finish_page(rows, limit, backwards);
    Ok(Paged {
        items: rows
            .into_iter()
            .map(Attachment::try_from)
            .collect::<std::result::Result<_, _>>()?,
        has_more,
    })
}

/// An id, as a raw statement returns it.
#[derive(QueryableByName)]
struct IdRow {
    #[diesel(sql_type = confab_store_sql::id::IdSql)]
    id: DbId,
}

/// The ids of a page of everything `v` may see, in the order of travel:
/// their own uploads (`attachments_uploader_idx`) and, for each of their
/// conversations (found by the conversations' own indexes: created,
/// joined as the peer, through a group), that conversation's newest
/// (`attachments_conversation_idx`). On PostgreSQL each range stops at
/// the page (`LATERAL ... LIMIT`): a page reads at most a page per
/// conversation of the viewer's, whatever the table holds; on SQLite the
/// visible attachments are sorted. Never a walk of the whole table's id
/// order filtered by visibility, whose cost grows with what the viewer
/// cannot see (1M rows of others: 49,333 rows read for a first page).
fn visible_ids(
    conn: &mut Conn,
    v: DbId,
    cursor: Option<Cursor<AttachmentId>>,
    fetch: i64,
) -> Result<Vec<DbId>> {
    let mut sql = Sql::default();
    let viewer = sql.id(v);
    let (seek, order) = match cursor {
        None => (String::new(), "DESC"),
        Some(Cursor::After(at)) => (format!(" AND id < {}", sql.id(at.db())), "DESC"),
        Some(Cursor::Before(at)) => (format!(" AND id > {}", sql.id(at.db())), "ASC"),
    };
    let n = sql.bind(Bind::Int(fetch));
    let mine = format!(
        "SELECT id FROM conversations WHERE creator_id = {viewer} AND group_id IS NULL \
         UNION ALL SELECT id FROM conversations WHERE peer_id = {viewer} \
         UNION ALL SELECT c.id FROM group_members gm \
             JOIN conversations c ON c.group_id = gm.group_id WHERE gm.contact_id = {viewer}"
    );
    let text = if Backend::LATERAL {
        format!(
            "SELECT id FROM ( \
                 (SELECT id FROM attachments WHERE uploader_id = {viewer}{seek} \
                  ORDER BY id {order} LIMIT {n}) \
                 UNION \
                 (SELECT a.id FROM ({mine}) m CROSS JOIN LATERAL ( \
                     SELECT id FROM attachments WHERE conversation_id = m.id{seek} \
                     ORDER BY id {order} LIMIT {n}) a) \
             ) u ORDER BY id {order} LIMIT {n}"
        )
    } else {
        format!(
            "SELECT id FROM attachments WHERE uploader_id = {viewer}{seek} \
             UNION \
             SELECT id FROM attachments WHERE conversation_id IN ({mine}){seek} \
             ORDER BY id {order} LIMIT {n}"
        )
    };
    sql.push(&text);
    let ids: Vec<IdRow> = sql.query::<Db>().load(conn)?;
    Ok(ids.into_iter().map(|r| r.id).collect())
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
    // The new name reaches the conversation's members: only from a
    // member now (the service said why before; one removed since is
    // refused here, in the write).
    if let Some(c) = current.conversation_id {
        if !is_member(conn, by.db(), c)? {
            return Err(not_found());
        }
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
/// renames): "Deleted means gone", docs/api.md "Deleted means gone".
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

/// Scrubs attachment `id` out of the earlier payloads of message `m`
/// of conversation `c` that carry it (its `message.created` and
/// `message.updated` events): in their `attachments`, it becomes
/// `{"id", "deleted": true}`, its name and link gone, the message's
/// other attachments left as they were. Found by the events' index on
/// `(conversation_id, message_id)`: the cost follows the message's
/// events, never the table.
fn scrub_from_message_events(conn: &mut Conn, c: DbId, m: DbId, id: DbId) -> Result<()> {
    let mut sql = Sql::default();
    let (cm, mm, a, a2) = (sql.id(c), sql.id(m), sql.id(id), sql.id(id));
    let marked =
        Backend::json_mark_deleted("payload", "attachments", &format!("CAST({a} AS TEXT)"));
    sql.push(&format!(
        "UPDATE events SET payload = {marked} \
         WHERE conversation_id = {cm} AND message_id = {mm} \
             AND type IN ('message.created', 'message.updated') \
             AND payload LIKE '%' || CAST({a2} AS TEXT) || '%'"
    ));
    sql.query::<Db>().execute(conn)?;
    Ok(())
}

/// Deletes `by`'s attachment `id`, its events resolved first; the
/// trigger `attachments_file_deleted` schedules its file's deletion.
/// Deleted means gone: its own earlier events, and its entry in the
/// earlier events of its message, keep nothing of it.
pub(crate) fn delete_attachment(
    conn: &mut Conn,
    id: AttachmentId,
    by: ContactId,
    outbox: &Outbox,
) -> Result<()> {
    let current = Attachment::try_from(own_row(conn, id, by)?)?;
    write_events(conn, outbox, &current)?;
    scrub_attachment_events(conn, id.db())?;
    if let (Some(c), Some(m)) = (current.conversation_id, current.message_id) {
        scrub_from_message_events(conn, c.db(), m.db(), id.db())?;
    }
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
