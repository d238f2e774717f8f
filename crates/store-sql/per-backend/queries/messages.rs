//! Messages: reading them (with their senders, reactions and attachments
//! in the same statement) and deleting them. Sending is `message_send`.

use confab_domain::{ContactId, ConversationId, Cursor, Message, MessageId, Page, Paged};
use confab_ports::{Outbox, StoreError};
use diesel::dsl::exists;
use diesel::prelude::*;

use super::outbox::{self, Deleted, Written};
use super::{Backend, Conn, Db, Result};
use confab_store_sql::error::Error;
use confab_store_sql::id::DbId;
use confab_store_sql::queries::not_found;
use confab_store_sql::queries::paging::{fetch_size, finish_page, travel_order, travel_shape};
use confab_store_sql::rows::{
    message_with, relation_columns, ContactRow, DbKey, JsonColumn, MessageRow,
};
use confab_store_sql::schema::{contacts, conversations, message_gaps, messages};
use confab_store_sql::visible_to;
use confab_store_sql::SqlBackend as _;

/// A message read whole in one statement: its row, its sender's and
/// its reactions and attachments ([`with_relations`]).
type Whole = confab_store_sql::rows::WholeRow;

/// The select list of [`Whole`] rows of `messages` joined to their
/// senders.
type WholeSelection = (
    diesel::helper_types::AsSelect<MessageRow, Db>,
    diesel::helper_types::AsSelect<ContactRow, Db>,
    (JsonColumn, JsonColumn),
);

fn with_relations() -> WholeSelection {
    (
        MessageRow::as_select(),
        ContactRow::as_select(),
        relation_columns::<Backend>("\"messages\".\"id\""),
    )
}

/// Messages with their senders (a join: the sender comes in the same
/// statement as the message).
macro_rules! with_senders {
    () => {
        messages::table.inner_join(contacts::table.on(contacts::id.eq(messages::sender_id)))
    };
}

/// The SQL types of a [`Whole`] row ([`with_relations`]'s).
pub(crate) type WholeSql = <WholeSelection as diesel::Expression>::SqlType;
/// A statement of [`Whole`] rows written out ([`whole_columns`]):
/// the reads of every page and of one message, which diesel's query
/// builder would render again on each execution.
pub(crate) type WholeQuery = confab_store_sql::raw::TypedQuery<Db, WholeSql>;
/// [`empty_page_query`]'s statement.
pub(crate) type EmptyPageQuery = diesel::query_builder::BoxedSelectStatement<
    'static,
    (diesel::sql_types::Bool, diesel::sql_types::Bool),
    diesel::query_builder::NoFromClause,
    Db,
>;
/// The select list of [`Whole`] rows written out, for messages
/// (`m`, a table or its alias) joined to their senders (`s`, rows
/// of `contacts`): the columns of `MessageRow` and `ContactRow` in
/// the order of their fields (rows are read by position), then the
/// relations ([`relation_columns`]). A test holds it to what
/// diesel renders for [`with_relations`].
pub(crate) fn whole_columns(m: &str, s: &str) -> String {
    let (reactions, attachments) = relation_columns::<Backend>(&format!("{m}.id"));
    format!(
        "{m}.id, {m}.conversation_id, {m}.sender_id, {m}.body, {m}.read_at, \
         {m}.created_at, {m}.updated_at, {s}.id, {s}.username, {s}.username_folded, \
         {s}.phone_number, {s}.avatar_url, {s}.last_active_at, {s}.created_at, {}, {}",
        reactions.sql(),
        attachments.sql()
    )
}

/// Whether the viewer `v` (a marker of a `confab_store_sql::raw::Sql`) is a
/// member of the conversation row `conv` (a table or its alias):
/// [`visible_to`] written out.
pub(super) fn member_of(conv: &str, v: &str) -> String {
    format!(
        "(({conv}.group_id IS NULL AND ({conv}.creator_id = {v} OR {conv}.peer_id = {v})) \
         OR {conv}.group_id IN (SELECT group_id FROM group_members WHERE contact_id = {v}))"
    )
}

/// The message with this id, whole, in one statement.
pub(super) fn load_message(conn: &mut Conn, id: DbId) -> Result<Option<Message>> {
    let row: Option<Whole> = with_senders!()
        .filter(messages::id.eq(id))
        .select(with_relations())
        .first(conn)
        .optional()?;
    message_of(row)
}

/// The message of a whole row, if any.
pub(crate) fn message_of(row: Option<Whole>) -> Result<Option<Message>> {
    row.map(|(r, sender, relations)| message_with(r, sender, relations))
        .transpose()
}

/// The messages with these ids, whole, in no particular order: one
/// statement per 5000.
pub(super) fn load_messages(conn: &mut Conn, ids: &[DbId]) -> Result<Vec<Message>> {
    let mut out = Vec::with_capacity(ids.len());
    // In slices: SQLite binds each id of an `IN` list.
    for chunk in ids.chunks(5000) {
        let rows: Vec<Whole> = with_senders!()
            .filter(messages::id.eq_any(chunk))
            .select(with_relations())
            .load(conn)?;
        for (r, sender, relations) in rows {
            out.push(message_with(r, sender, relations)?);
        }
    }
    Ok(out)
}

pub(crate) fn message_for(
    conn: &mut Conn,
    viewer: ContactId,
    id: MessageId,
) -> Result<Option<Message>> {
    message_of(message_for_query(viewer, id).get_result(conn).optional()?)
}

/// [`message_for`]'s statement, for a loader of rows of its own.
///
/// Joined to its one conversation, whose membership is then
/// checked on that row: primary-key lookups only. (As `IN (the
/// viewer's conversations)`, SQLite listed every direct
/// conversation of everyone to find the viewer's.) Whole: one
/// statement, its relations included.
pub(crate) fn message_for_query(viewer: ContactId, id: MessageId) -> WholeQuery {
    use confab_store_sql::raw::{marker, Bind, Shape};
    static SHAPE: std::sync::OnceLock<Shape> = std::sync::OnceLock::new();
    let shape = SHAPE.get_or_init(|| {
        let (m, v) = (marker(0), marker(1));
        Shape::new(&format!(
            "SELECT {} FROM messages \
             INNER JOIN contacts ON contacts.id = messages.sender_id \
             INNER JOIN conversations ON conversations.id = messages.conversation_id \
             WHERE messages.id = {m} AND {} LIMIT 1",
            whole_columns("messages", "contacts"),
            member_of("conversations", &v)
        ))
    });
    shape.typed(vec![Bind::Id(id.db()), Bind::Id(viewer.db())])
}

/// The ids of the viewer's conversations (optionally only `$only`), as a
/// subquery: the list a message must be in to be paged.
macro_rules! listed_conversations {
    ($v:expr, $only:expr) => {{
        let mut q = conversations::table
            .filter(visible_to!($v))
            .select(conversations::id)
            .into_boxed::<Db>();
        if let Some(c) = $only {
            q = q.filter(conversations::id.eq(c));
        }
        q
    }};
}

/// One page: a statement for the messages with their senders,
/// reactions and attachments, with the membership and the cursor's
/// position resolved inside it (a conversation's page and the
/// all-conversations feed alike). Only an empty page costs a
/// second statement instead, to tell "nothing there" from an
/// invisible conversation or a cursor that is not in the list.
pub(crate) fn list_messages(
    conn: &mut Conn,
    viewer: ContactId,
    conversation: Option<ConversationId>,
    page: Page<MessageId>,
) -> Result<Paged<Message>> {
    let v = viewer.db();
    let only = conversation.map(|c| c.db());
    let (limit, fetch, cursor) = page_seek(&page);
    let backwards = matches!(cursor, Some((true, _)));
    if let Some(c) = only {
        let rows = conversation_page(conn, v, c, cursor, fetch)?;
        return finish_list(conn, v, only, cursor, rows, limit, backwards);
    }
    let rows = Backend::feed_page(conn, v, cursor, fetch)?;
    finish_list(conn, v, only, cursor, rows, limit, backwards)
}

/// A page's size, the rows to fetch (one more, to learn `has_more`)
/// and its cursor as `(before, message id)`.
pub(crate) fn page_seek(page: &Page<MessageId>) -> (usize, i64, Option<(bool, DbId)>) {
    let (limit, fetch) = fetch_size(page);
    let cursor = page.cursor.map(|c| match c {
        Cursor::After(id) => (false, id.db()),
        Cursor::Before(id) => (true, id.db()),
    });
    (limit, fetch, cursor)
}

/// A page of one conversation, in the order of travel: one range of
/// its index on `(conversation_id, created_at, id)`, the same at any
/// depth and for any size of conversation.
///
/// The conversation is a scalar subquery, NULL unless the viewer sees
/// it (membership in the same statement): its value is unknown when
/// the statement is planned, so every conversation is planned alike.
/// With the id as a constant, PostgreSQL knew that a large one holds
/// a fifth of all messages and walked the global order index instead,
/// through every newer message of every other conversation.
///
/// The cursor is resolved once, by primary key alone, NULL unless it
/// is in this conversation. Its conversation is compared in the
/// select list, not the `WHERE`: with both as conditions, a generic
/// plan read it through the conversation's index, all of it.
///
/// Rows come whole: each message's relations are subqueries of the
/// select list, run for the rows of the page only.
fn conversation_page(
    conn: &mut Conn,
    v: DbId,
    c: DbId,
    cursor: Option<(bool, DbId)>,
    fetch: i64,
) -> Result<Vec<Whole>> {
    Ok(conversation_page_query(v, c, cursor, fetch).load(conn)?)
}

/// [`conversation_page`]'s statement, for a loader of rows of its
/// own.
pub(crate) fn conversation_page_query(
    v: DbId,
    c: DbId,
    cursor: Option<(bool, DbId)>,
    fetch: i64,
) -> WholeQuery {
    use confab_store_sql::raw::{marker, Bind, Shape};
    // Built once for each way of travel: from the newest, after a
    // cursor, before one.
    static SHAPES: [std::sync::OnceLock<Shape>; 3] = [const { std::sync::OnceLock::new() }; 3];
    let travel = cursor.map(|(backwards, _)| backwards);
    let shape = SHAPES[travel_shape(cursor)].get_or_init(|| {
        let (c, v, limit, k) = (marker(0), marker(1), marker(2), marker(3));
        // The cursor's position, NULL unless it is in this
        // conversation (then no rows); then strictly past it in
        // the order of travel, run in reverse before it and turned
        // back by `finish_page`. One row-value comparison, which
        // both databases take whole as the range of the index on
        // `(conversation_id, created_at DESC, id DESC)` starting at
        // the key: no redundant bound on `created_at` alone, so the
        // cursor's subquery is written, and run, once.
        let (keyset, order) = match travel {
            None => (String::new(), "DESC"),
            Some(backwards) => {
                let (order, past) = travel_order(backwards);
                (
                    format!(
                        " AND (messages.created_at, messages.id) {past} (( \
                             SELECT CASE WHEN cursor_message.conversation_id = {c} \
                                 THEN cursor_message.created_at END \
                             FROM messages AS cursor_message \
                             WHERE cursor_message.id = {k} LIMIT 1), {k})"
                    ),
                    order,
                )
            }
        };
        Shape::new(&format!(
            "SELECT {} FROM messages \
             INNER JOIN contacts ON contacts.id = messages.sender_id \
             WHERE messages.conversation_id = ( \
                 SELECT conversations.id FROM conversations \
                 WHERE conversations.id = {c} AND {} LIMIT 1){keyset} \
             ORDER BY messages.created_at {order}, messages.id {order} LIMIT {limit}",
            whole_columns("messages", "contacts"),
            member_of("conversations", &v)
        ))
    });
    let mut binds = vec![Bind::Id(c), Bind::Id(v), Bind::Int(fetch)];
    binds.extend(cursor.map(|(_, k)| Bind::Id(k)));
    shape.typed(binds)
}

/// The page from its whole rows (in the order of travel), or why it
/// is empty.
fn finish_list(
    conn: &mut Conn,
    v: DbId,
    only: Option<DbId>,
    cursor: Option<(bool, DbId)>,
    rows: Vec<Whole>,
    limit: usize,
    backwards: bool,
) -> Result<Paged<Message>> {
    if rows.is_empty() {
        if let Some(q) = empty_page_query(v, only, cursor.map(|(_, id)| id)) {
            explain_empty_page(only, q.get_result(conn)?)?;
        }
    }
    page_of(rows, limit, backwards)
}

/// The page from its whole rows, fetched `limit + 1` in the order of
/// travel.
pub(crate) fn page_of(rows: Vec<Whole>, limit: usize, backwards: bool) -> Result<Paged<Message>> {
    let (rows, has_more) = finish_page(rows, limit, backwards);
    Ok(Paged {
        items: rows
            .into_iter()
            .map(|(r, sender, relations)| message_with(r, sender, relations))
            .collect::<Result<_>>()?,
        has_more,
    })
}

/// The statement that tells why a page came back empty
/// ([`explain_empty_page`]): whether the conversation is visible,
/// and whether the cursor is in the list. None when an empty page
/// needs no explaining (the feed without a cursor).
pub(crate) fn empty_page_query(
    v: DbId,
    only: Option<DbId>,
    cursor: Option<DbId>,
) -> Option<EmptyPageQuery> {
    use diesel::sql_types::Bool;
    Some(match (only, cursor) {
        (None, None) => return None,
        (Some(_), None) => diesel::select((
            exists(listed_conversations!(v, only)),
            true.into_sql::<Bool>(),
        ))
        .into_boxed(),
        (_, Some(id)) => diesel::select((
            exists(listed_conversations!(v, only)),
            exists(
                messages::table
                    .filter(messages::id.eq(id))
                    .filter(messages::conversation_id.eq_any(listed_conversations!(v, only))),
            ),
        ))
        .into_boxed(),
    })
}

/// Why a page came back empty, from [`empty_page_query`]'s answer:
/// an invisible conversation is `NotFound` (before any cursor
/// error), a cursor not in the list `CursorNotFound`; else the list
/// is simply empty there.
pub(crate) fn explain_empty_page(
    only: Option<DbId>,
    (visible, cursor_listed): (bool, bool),
) -> Result<()> {
    if only.is_some() && !visible {
        return Err(not_found());
    }
    if !cursor_listed {
        return Err(Error::Store(StoreError::CursorNotFound));
    }
    Ok(())
}

pub(crate) fn delete_message(
    conn: &mut Conn,
    id: MessageId,
    by: ContactId,
    outbox: &Outbox,
) -> Result<()> {
    // Locked, with the deleter's membership checked in the same
    // statement; its sender and time say whose unread count it was in.
    let m = Backend::lock_message(conn, id.db(), by.db())?.ok_or_else(not_found)?;
    // Its earlier events keep nothing of it (API.md section 9).
    outbox::scrub(
        conn,
        Deleted::Message {
            conversation: m.conversation_id,
            message: m.id,
        },
    )?;
    // To the members it had: before it goes.
    outbox::write(conn, outbox, &Written::default())?;
    // Reactions and attachments cascade; a conversation that pinned it gets
    // NULL (ON DELETE SET NULL).
    let seq: i64 = diesel::delete(messages::table.find(m.id))
        .returning(messages::seq)
        .get_result(conn)?;
    // It leaves a gap in its conversation's numbers: the members who
    // had not read it count one unread message less (migration
    // `big_groups`), with two rows written whatever their number.
    diesel::insert_into(message_gaps::table)
        .values((
            message_gaps::conversation_id.eq(m.conversation_id),
            message_gaps::seq.eq(seq),
            message_gaps::sender_id.eq(m.sender_id),
        ))
        .execute(conn)?;
    diesel::update(conversations::table.find(m.conversation_id))
        .set(conversations::deleted_count.eq(conversations::deleted_count + 1))
        .execute(conn)?;
    Ok(())
}

#[cfg(test)]
mod written_out {
    use super::*;

    /// The written-out select list reads the columns diesel's
    /// builder selects for [`with_relations`], in its order (its
    /// quotes aside: `"` on PostgreSQL, backticks on SQLite): rows
    /// are decoded by position, so a field added to `MessageRow` or
    /// `ContactRow` fails here, not in a page read wrongly.
    #[test]
    fn whole_columns_are_those_of_with_relations() {
        let rendered = diesel::debug_query::<Db, _>(&with_senders!().select(with_relations()))
            .to_string()
            .replace(['"', '`'], "");
        let written = format!("SELECT {} FROM ", whole_columns("messages", "contacts"));
        assert!(
            rendered.starts_with(&written),
            "diesel selects:\n{rendered}\nwritten out:\n{written}"
        );
    }
}
