//! Replies, threads, mentions and edits (docs/api.md "Reply, quote, start a thread") beyond the
//! send: who may be mentioned, a message's earlier texts, and what an
//! edit or a deletion changes in the counts and payloads they leave.

use confab_domain::{mention_changes, ContactId, ConversationId, EditId, Mentions};
use diesel::prelude::*;

use super::membership::member_of;
use super::{Backend, Conn, Db, Result};
use confab_store_sql::id::DbId;
use confab_store_sql::raw::{Bind, Sql};
use confab_store_sql::rows::{contact_id, mentions_json, mentions_of, DbKey};
use confab_store_sql::schema::{conversations, message_edits, messages};
use confab_store_sql::SqlBackend as _;

/// Those of `contacts` who are members of conversation `c` now: one
/// statement, primary-key lookups per listed contact.
pub(crate) fn members_among(
    conn: &mut Conn,
    c: ConversationId,
    contacts: &[ContactId],
) -> Result<Vec<ContactId>> {
    if contacts.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<String> = contacts.iter().map(|c| format!("\"{c}\"")).collect();
    let mut sql = Sql::default();
    let cm = sql.id(c.db());
    let list = sql.bind(Bind::Text(format!("[{}]", ids.join(","))));
    sql.push(&format!(
        "SELECT listed.id AS id FROM conversations conv CROSS JOIN {} listed \
         WHERE conv.id = {cm} AND {}",
        Backend::json_ids(&list),
        member_of("conv", "listed.id")
    ));
    let rows: Vec<IdRow> = sql.query::<Db>().load(conn)?;
    Ok(rows.into_iter().map(|r| contact_id(r.id)).collect())
}

#[derive(QueryableByName)]
struct IdRow {
    #[diesel(sql_type = confab_store_sql::id::IdSql)]
    id: DbId,
}

/// The contacts of `who`, members of conversation `c` other than the
/// message's sender `sender`, for whom message number `seq` is unread,
/// count `by` (1 or -1) more unread mentions; with 1, a member without a
/// state row gets one. At most [`confab_domain::MAX_MENTIONS`] rows.
pub(crate) fn count_unread_mentions(
    conn: &mut Conn,
    (c, sender, seq): (DbId, DbId, i64),
    who: &[ContactId],
    by: i64,
) -> Result<()> {
    let Some(json) = Mentions::new(who.to_vec())
        .ok()
        .and_then(|m| mentions_json(&m))
    else {
        return Ok(());
    };
    let mut sql = Sql::default();
    let (cm, sm, seqm) = (sql.id(c), sql.id(sender), sql.bind(Bind::Int(seq)));
    let ids = sql.bind(Bind::Text(json));
    if by > 0 {
        sql.push(&format!(
            "INSERT INTO conversation_states \
                 (conversation_id, contact_id, is_pinned, is_muted, read_seq, own_after, mention_unread) \
             SELECT conv_m.id, mentioned.id, FALSE, FALSE, 0, 0, 1 \
             FROM conversations conv_m CROSS JOIN {} mentioned \
             WHERE conv_m.id = {cm} AND mentioned.id <> {sm} AND {} \
             ON CONFLICT (conversation_id, contact_id) \
             DO UPDATE SET mention_unread = conversation_states.mention_unread + 1 \
             WHERE conversation_states.read_seq < {seqm}",
            Backend::json_ids(&ids),
            member_of("conv_m", "mentioned.id"),
        ));
    } else {
        sql.push(&format!(
            "UPDATE conversation_states SET mention_unread = mention_unread - 1 \
             WHERE conversation_id = {cm} AND contact_id IN (SELECT listed.id FROM {} listed) \
                 AND contact_id <> {sm} AND read_seq < {seqm} AND mention_unread > 0",
            Backend::json_ids(&ids),
        ));
    }
    sql.query::<Db>().execute(conn)?;
    Ok(())
}

/// An edit of message `m` (number `seq` of conversation `c`, sent by
/// `sender`) from the mentions `before` to `after`: the newly mentioned
/// for whom it is unread count one more unread mention, the dropped one
/// fewer.
pub(crate) fn remention(
    conn: &mut Conn,
    (c, sender, seq): (DbId, DbId, i64),
    before: &Mentions,
    after: &Mentions,
) -> Result<()> {
    let (gained, lost) = mention_changes(contact_id(sender), before, after);
    count_unread_mentions(conn, (c, sender, seq), &gained, 1)?;
    count_unread_mentions(conn, (c, sender, seq), &lost, -1)
}

/// Keeps the text an edit replaces, as an edit of message `m` at `at`.
pub(crate) fn keep_edit(conn: &mut Conn, id: EditId, m: DbId, body: &str, at: i64) -> Result<()> {
    diesel::insert_into(message_edits::table)
        .values((
            message_edits::id.eq(id.db()),
            message_edits::message_id.eq(m),
            message_edits::body.eq(body),
            message_edits::edited_at.eq(at),
        ))
        .execute(conn)?;
    Ok(())
}

/// What a message's deletion changes beyond its row, once it is gone
/// (`row` as it was, `seq` its number): a thread reply's thread counts
/// one fewer (its latest reply's time read again, one probe of the
/// thread's index); the members it mentioned who had not read it one
/// fewer unread mention; and the replies quoting it keep nothing of it
/// in their events' payloads ([`scrub_quotes`]). Only the last is a
/// statement for every deletion.
pub(crate) fn after_message_deleted(
    conn: &mut Conn,
    row: &confab_store_sql::rows::MessageRow,
    seq: i64,
) -> Result<()> {
    if let Some(parent) = row.parent_id {
        let mut sql = Sql::default();
        let (p, p2) = (sql.id(parent), sql.id(parent));
        sql.push(&format!(
            "UPDATE messages SET reply_count = CASE WHEN reply_count > 0 THEN reply_count - 1 ELSE 0 END, \
                 last_reply_at = (SELECT MAX(r.created_at) FROM messages r WHERE r.parent_id = {p2}) \
             WHERE id = {p}"
        ));
        sql.query::<Db>().execute(conn)?;
    }
    let mentioned = mentions_of(row.mentions.as_deref())?;
    count_unread_mentions(
        conn,
        (row.conversation_id, row.sender_id, seq),
        mentioned.contacts(),
        -1,
    )?;
    scrub_quotes(conn, row.conversation_id, row.id)
}

/// Deleted means gone (docs/api.md "Deleted means gone"), for the replies quoting
/// message `quoted` of conversation `c`: their `message.created` and
/// `message.updated` payloads get `"reply_to": {"id", "deleted": true}`
/// in place of the quote. Found by the replies' index on `reply_to_id`
/// and the events' on `(conversation_id, message_id)`: the cost follows
/// the replies to it, never the table.
pub(crate) fn scrub_quotes(conn: &mut Conn, c: DbId, quoted: DbId) -> Result<()> {
    let mut sql = Sql::default();
    let (cm, q, q2) = (sql.id(c), sql.id(quoted), sql.id(quoted));
    let gone = format!("'{{\"id\":\"' || CAST({q2} AS TEXT) || '\",\"deleted\":true}}'");
    sql.push(&format!(
        "UPDATE events SET payload = {} \
         WHERE conversation_id = {cm} AND type IN ('message.created', 'message.updated') \
             AND message_id IN (SELECT id FROM messages WHERE reply_to_id = {q})",
        Backend::json_set_key("payload", "reply_to", &gone)
    ));
    sql.query::<Db>().execute(conn)?;
    Ok(())
}

/// What the erasure of contact `x`'s group messages changes beyond their
/// rows, before they go (as [`before_message_deleted`] for each, in a
/// few statements): the replies quoting them keep nothing of them in
/// their events' payloads, the threads they replied in count them no
/// more, and the unread mentions they counted are taken back.
pub(crate) fn before_contact_messages_erased(conn: &mut Conn, x: DbId) -> Result<()> {
    let mut sql = Sql::default();
    let (x1, x2) = (sql.id(x), sql.id(x));
    let gone = "'{\"id\":\"' || (SELECT CAST(r2.reply_to_id AS TEXT) FROM messages r2 \
                WHERE r2.id = events.message_id) || '\",\"deleted\":true}'";
    sql.push(&format!(
        "UPDATE events SET payload = {} \
         WHERE type IN ('message.created', 'message.updated') \
             AND (conversation_id, message_id) IN ( \
                 SELECT r.conversation_id, r.id FROM messages r \
                 INNER JOIN messages q ON q.id = r.reply_to_id \
                 INNER JOIN conversations c ON c.id = q.conversation_id \
                 WHERE q.sender_id = {x1} AND r.sender_id <> {x2} AND c.group_id IS NOT NULL)",
        Backend::json_set_key("payload", "reply_to", gone)
    ));
    sql.query::<Db>().execute(conn)?;
    let mut sql = Sql::default();
    let (x1, x2, x3, x4) = (sql.id(x), sql.id(x), sql.id(x), sql.id(x));
    sql.push(&format!(
        "UPDATE messages SET \
             reply_count = (SELECT COUNT(*) FROM messages r \
                 WHERE r.parent_id = messages.id AND r.sender_id <> {x1}), \
             last_reply_at = (SELECT MAX(r.created_at) FROM messages r \
                 WHERE r.parent_id = messages.id AND r.sender_id <> {x2}) \
         WHERE sender_id <> {x3} AND id IN ( \
             SELECT parent_id FROM messages WHERE sender_id = {x4} AND parent_id IS NOT NULL)"
    ));
    sql.query::<Db>().execute(conn)?;
    // Their mentions, each message's at most `MAX_MENTIONS` rows.
    let mentioning: Vec<(DbId, i64, Option<String>)> = messages::table
        .inner_join(conversations::table)
        .filter(messages::sender_id.eq(x))
        .filter(messages::mentions.is_not_null())
        .filter(conversations::group_id.is_not_null())
        .select((messages::conversation_id, messages::seq, messages::mentions))
        .load(conn)?;
    for (c, seq, json) in mentioning {
        let mentioned = mentions_of(json.as_deref())?;
        count_unread_mentions(conn, (c, x, seq), mentioned.contacts(), -1)?;
    }
    Ok(())
}
