//! Messages: reading them (with their senders, reactions and attachments
//! in the same statement) and deleting them. Sending is `message_send`.

use confab_domain::{
    ContactId, Cursor, EditId, Message, MessageEdit, MessageId, MessageText, Page, Paged,
};
use confab_ports::{MessageList, Outbox, StoreError};
use diesel::dsl::exists;
use diesel::prelude::*;

use super::membership::member_of;
use super::outbox::{self, Deleted, Written};
use super::{Backend, Conn, Db, Result};
use confab_store_sql::error::Error;
use confab_store_sql::id::DbId;
use confab_store_sql::queries::not_found;
use confab_store_sql::queries::paging::{fetch_size, finish_page, travel_order, travel_shape};
use confab_store_sql::rows::{
    message_with, relation_columns, ContactRow, DbKey, JsonColumn, MessageRow,
};
use confab_store_sql::schema::{contacts, conversations, message_edits, message_gaps, messages};
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
    (JsonColumn, JsonColumn, JsonColumn),
);

fn with_relations() -> WholeSelection {
    (
        MessageRow::as_select(),
        ContactRow::as_select(),
        relation_columns::<Backend>("\"messages\""),
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
    let (reactions, attachments, quoted) = relation_columns::<Backend>(m);
    format!(
        "{m}.id, {m}.conversation_id, {m}.sender_id, {m}.body, {m}.read_at, \
         {m}.created_at, {m}.updated_at, {m}.reply_to_id, {m}.parent_id, {m}.reply_count, \
         {m}.last_reply_at, {m}.edited_at, {m}.mentions, {s}.id, {s}.username, \
         {s}.username_folded, {s}.phone_number, {s}.avatar_url, {s}.last_active_at, \
         {s}.created_at, {}, {}, {}",
        reactions.sql(),
        attachments.sql(),
        quoted.sql()
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
/// position resolved inside it (a conversation's page, a thread's and
/// the all-conversations feed alike). Only an empty page costs a
/// second statement instead, to tell "nothing there" from an
/// invisible conversation or a cursor that is not in the list.
pub(crate) fn list_messages(
    conn: &mut Conn,
    viewer: ContactId,
    list: MessageList,
    page: Page<MessageId>,
) -> Result<Paged<Message>> {
    let v = viewer.db();
    let (limit, fetch, cursor) = page_seek(&page);
    let backwards = matches!(cursor, Some((true, _)));
    let rows = match list_page_query(v, list, cursor, fetch) {
        Some(query) => query.load(conn)?,
        None => Backend::feed_page(conn, v, cursor, fetch)?,
    };
    if rows.is_empty() {
        if let Some(q) = empty_page_query(v, list, cursor.map(|(_, id)| id)) {
            explain_empty_page(list, q.get_result(conn)?)?;
        }
    }
    page_of(rows, limit, backwards)
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

/// A page of one conversation, or of one thread, in the order of
/// travel: one range of an index on `(conversation_id, created_at, id)`
/// (all of its messages, or without thread replies: the partial index
/// of the top-level ones), or on `(parent_id, created_at, id)` for a
/// thread; the same at any depth and for any size of conversation.
/// `None` for the feed (`SqlBackend::feed_page`).
///
/// The conversation (the thread's first message) is a scalar subquery,
/// NULL unless the viewer sees it (membership in the same statement):
/// its value is unknown when the statement is planned, so every
/// conversation is planned alike. With the id as a constant,
/// PostgreSQL knew that a large one holds a fifth of all messages and
/// walked the global order index instead, through every newer message
/// of every other conversation.
///
/// The cursor is resolved once, by primary key alone, NULL unless it
/// is in this list. Its list is compared in the select list, not the
/// `WHERE`: with both as conditions, a generic plan read it through
/// the conversation's index, all of it.
///
/// Rows come whole: each message's relations are subqueries of the
/// select list, run for the rows of the page only.
pub(crate) fn list_page_query(
    v: DbId,
    list: MessageList,
    cursor: Option<(bool, DbId)>,
    fetch: i64,
) -> Option<WholeQuery> {
    use confab_store_sql::raw::{marker, Bind, Shape};
    use std::sync::OnceLock;
    // Built once for each list and way of travel: from the newest,
    // after a cursor, before one.
    static SHAPES: [[OnceLock<Shape>; 3]; 3] = [const { [const { OnceLock::new() }; 3] }; 3];
    let (kind, key) = match list {
        MessageList::Feed => return None,
        MessageList::Conversation {
            id,
            include_replies: true,
        } => (0, id.db()),
        MessageList::Conversation {
            id,
            include_replies: false,
        } => (1, id.db()),
        MessageList::Thread(parent) => (2, parent.db()),
    };
    let travel = cursor.map(|(backwards, _)| backwards);
    let shape = SHAPES[kind][travel_shape(cursor)].get_or_init(|| {
        let (c, v, limit, k) = (marker(0), marker(1), marker(2), marker(3));
        // Which messages are listed, and whether the cursor's message is
        // one of them.
        let (listed, cursor_listed) = match kind {
            0 => (
                format!(
                    "messages.conversation_id = ( \
                     SELECT conversations.id FROM conversations \
                     WHERE conversations.id = {c} AND {} LIMIT 1)",
                    member_of("conversations", &v)
                ),
                format!("cursor_message.conversation_id = {c}"),
            ),
            1 => (
                format!(
                    "messages.conversation_id = ( \
                     SELECT conversations.id FROM conversations \
                     WHERE conversations.id = {c} AND {} LIMIT 1) \
                     AND messages.parent_id IS NULL",
                    member_of("conversations", &v)
                ),
                format!(
                    "cursor_message.conversation_id = {c} AND cursor_message.parent_id IS NULL"
                ),
            ),
            _ => (
                format!(
                    "messages.parent_id = ( \
                     SELECT thread.id FROM messages thread \
                     INNER JOIN conversations ON conversations.id = thread.conversation_id \
                     WHERE thread.id = {c} AND {} LIMIT 1) \
                     AND messages.parent_id IS NOT NULL",
                    member_of("conversations", &v)
                ),
                format!("cursor_message.parent_id = {c}"),
            ),
        };
        // The cursor's position, NULL unless it is in this list (then no
        // rows); then strictly past it in the order of travel, run in
        // reverse before it and turned back by `finish_page`. One
        // row-value comparison, which both databases take whole as the
        // range of the index starting at the key: no redundant bound on
        // `created_at` alone, so the cursor's subquery is written, and
        // run, once.
        let (keyset, order) = match travel {
            None => (String::new(), "DESC"),
            Some(backwards) => {
                let (order, past) = travel_order(backwards);
                (
                    format!(
                        " AND (messages.created_at, messages.id) {past} (( \
                             SELECT CASE WHEN {cursor_listed} \
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
             WHERE {listed}{keyset} \
             ORDER BY messages.created_at {order}, messages.id {order} LIMIT {limit}",
            whole_columns("messages", "contacts"),
        ))
    });
    let mut binds = vec![Bind::Id(key), Bind::Id(v), Bind::Int(fetch)];
    binds.extend(cursor.map(|(_, k)| Bind::Id(k)));
    Some(shape.typed(binds))
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
/// ([`explain_empty_page`]): whether the conversation (or the thread's
/// first message) is visible, and whether the cursor is in the list.
/// None when an empty page needs no explaining (the feed without a
/// cursor).
pub(crate) fn empty_page_query(
    v: DbId,
    list: MessageList,
    cursor: Option<DbId>,
) -> Option<EmptyPageQuery> {
    use diesel::sql_types::Bool;
    let only = match list {
        MessageList::Conversation { id, .. } => Some(id.db()),
        MessageList::Feed | MessageList::Thread(_) => None,
    };
    if let MessageList::Thread(parent) = list {
        let p = parent.db();
        let visible = exists(
            messages::table
                .filter(messages::id.eq(p))
                .filter(messages::conversation_id.eq_any(listed_conversations!(v, None::<DbId>))),
        );
        let in_thread = messages::table
            .filter(messages::parent_id.eq(p))
            .into_boxed::<Db>();
        let in_thread = match cursor {
            Some(id) => in_thread.filter(messages::id.eq(id)),
            None => return Some(diesel::select((visible, true.into_sql::<Bool>())).into_boxed()),
        };
        return Some(diesel::select((visible, exists(in_thread))).into_boxed());
    }
    Some(match (only, cursor) {
        (None, None) => return None,
        (Some(_), None) => diesel::select((
            exists(listed_conversations!(v, only)),
            true.into_sql::<Bool>(),
        ))
        .into_boxed(),
        (_, Some(id)) => {
            let mut listed = messages::table
                .filter(messages::id.eq(id))
                .filter(messages::conversation_id.eq_any(listed_conversations!(v, only)))
                .into_boxed::<Db>();
            if matches!(
                list,
                MessageList::Conversation {
                    include_replies: false,
                    ..
                }
            ) {
                listed = listed.filter(messages::parent_id.is_null());
            }
            diesel::select((exists(listed_conversations!(v, only)), exists(listed))).into_boxed()
        }
    })
}

/// Why a page came back empty, from [`empty_page_query`]'s answer:
/// an invisible conversation (or thread) is `NotFound` (before any
/// cursor error), a cursor not in the list `CursorNotFound`; else the
/// list is simply empty there.
pub(crate) fn explain_empty_page(
    list: MessageList,
    (visible, cursor_listed): (bool, bool),
) -> Result<()> {
    if list != MessageList::Feed && !visible {
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
    // Its earlier events keep nothing of it (docs/api.md "Limits").
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
    // Its thread, the mentions it counted, the replies quoting it.
    super::depth::after_message_deleted(conn, &m, seq)?;
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

/// A page of message `m`'s earlier texts, newest first, when `viewer`
/// is a member of its conversation.
pub(crate) fn message_edits(
    conn: &mut Conn,
    viewer: ContactId,
    m: MessageId,
    page: Page<EditId>,
) -> Result<Paged<MessageEdit>> {
    if message_for(conn, viewer, m)?.is_none() {
        return Err(not_found());
    }
    let (limit, fetch) = fetch_size(&page);
    let mut q = message_edits::table
        .filter(message_edits::message_id.eq(m.db()))
        .select((
            message_edits::id,
            message_edits::body,
            message_edits::edited_at,
        ))
        .into_boxed::<Db>();
    let backwards = matches!(page.cursor, Some(Cursor::Before(_)));
    if let Some(cursor) = page.cursor {
        let key = match cursor {
            Cursor::After(id) | Cursor::Before(id) => id.db(),
        };
        let at: Option<i64> = message_edits::table
            .filter(message_edits::id.eq(key))
            .filter(message_edits::message_id.eq(m.db()))
            .select(message_edits::edited_at)
            .first(conn)
            .optional()?;
        let Some(at) = at else {
            return Err(Error::Store(StoreError::CursorNotFound));
        };
        q = if backwards {
            q.filter(
                message_edits::edited_at.gt(at).or(message_edits::edited_at
                    .eq(at)
                    .and(message_edits::id.gt(key))),
            )
            .order((message_edits::edited_at.asc(), message_edits::id.asc()))
        } else {
            q.filter(
                message_edits::edited_at.lt(at).or(message_edits::edited_at
                    .eq(at)
                    .and(message_edits::id.lt(key))),
            )
            .order((message_edits::edited_at.desc(), message_edits::id.desc()))
        };
    } else {
        q = q.order((message_edits::edited_at.desc(), message_edits::id.desc()));
    }
    let rows: Vec<(DbId, String, i64)> = q.limit(fetch).load(conn)?;
    let (rows, has_more) = finish_page(rows, limit, backwards);
    let items = rows
        .into_iter()
        .map(|(id, body, at)| {
            Ok(MessageEdit {
                id: EditId::from_uuid(id.uuid()),
                message_id: m,
                text: if body.is_empty() {
                    MessageText::none()
                } else {
                    MessageText::new(body)
                        .map_err(|e| confab_store_sql::error::corrupt("message text", e))?
                },
                edited_at: confab_store_sql::rows::ts(at),
            })
        })
        .collect::<Result<_>>()?;
    Ok(Paged { items, has_more })
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
