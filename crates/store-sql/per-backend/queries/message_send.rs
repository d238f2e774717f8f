//! Sending a message: the message and its attachments written, the
//! conversation's number and activity moved and the sender's own count, its
//! event and (with a key) its kept answer, in one transaction; on
//! PostgreSQL one data-modifying statement.

use confab_domain::{AddAttachment, Attachment, FileSource, Message, MessageParts};
use confab_ports::{Completion, NewMessage, Outbox, StoreError};
use diesel::dsl::case_when;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text};

use super::attachments::attach_uploads;
use super::idempotency::complete;
use super::membership::member_of;
use super::message_updates::{insert_attachment_rows, insert_attachments};
use super::moderation::blocked_direct;
use super::outbox::{self, Written};
use super::{Backend, Conn, Db, Result};
use confab_store_sql::error::{inconsistent, Error};
use confab_store_sql::id::DbId;
use confab_store_sql::queries::not_found;
use confab_store_sql::rows::{mentions_json, DbKey};
use confab_store_sql::schema::{conversations, messages};
use confab_store_sql::SqlBackend as _;

/// The message as a reader would load it after `message` was
/// appended, built through the domain's constructor before anything is
/// written: a message that breaks a rule of messages (more than
/// `MAX_ATTACHMENTS` attachments) is refused here, as `Rule`. Its
/// attachments are `attachments` when given (uploads among them, as the
/// store attached them), else the new ones by URL.
fn as_written(message: NewMessage, attachments: Option<Vec<Attachment>>) -> Result<Message> {
    let NewMessage {
        id,
        conversation_id,
        sender,
        text,
        attachments: added,
        created_at,
        reply_to,
        parent_id,
        mentions,
    } = message;
    let attachments = match attachments {
        Some(list) => list,
        None => added
            .into_iter()
            .map(|a| match a {
                AddAttachment::Link(attachment, a) => {
                    Ok(a.attach(attachment, (id, conversation_id), sender.id(), created_at))
                }
                AddAttachment::Upload(_) => Err(inconsistent(
                    "an upload to attach reached a send that writes none".into(),
                )),
            })
            .collect::<Result<_>>()?,
    };
    Ok(Message::new(MessageParts {
        id,
        conversation_id,
        sender,
        text,
        reactions: Vec::new(),
        attachments,
        read_at: None,
        created_at,
        updated_at: None,
        reply_to,
        parent_id,
        reply_count: 0,
        last_reply_at: None,
        mentions,
        edited_at: None,
    })?)
}

/// A written message's quote, thread and mentions, as its row holds
/// them.
fn depth_of(written: &Message) -> (Option<DbId>, Option<DbId>, Option<String>) {
    (
        written.reply_to().map(|q| q.id().db()),
        written.parent_id().map(|p| p.db()),
        mentions_json(written.mentions()),
    )
}

/// Whether a send attaches uploads (written by [`append_message`]'s
/// statements, never by the single statement).
fn has_uploads(message: &NewMessage) -> bool {
    message
        .attachments
        .iter()
        .any(|a| matches!(a, AddAttachment::Upload(_)))
}

/// The outbox's one event when it is what a send normally makes: a
/// lone `message.created` of this message for its conversation's
/// members.
pub(crate) fn lone_message_created<'o>(
    outbox: &'o Outbox,
    message: &NewMessage,
) -> Option<&'o confab_domain::Event> {
    if has_uploads(message) {
        return None;
    }
    match outbox.events.as_slice() {
        [e] if e.kind == confab_domain::EventType::MessageCreated
            && e.subject == confab_domain::Subject::Message(message.id)
            && e.audience
                == confab_domain::Audience::ConversationMembers(message.conversation_id) =>
        {
            Some(e)
        }
        _ => None,
    }
}

/// A send's first write, as raw SQL (kept prepared, `confab_store_sql::raw`):
/// the conversation numbers one more message (`message_seq`: the new
/// message's number, migration `big_groups`) and its activity moves
/// forward to `at` (of two racing sends, the later message wins), only
/// where the sender `s` is a
/// member (membership as `visible_to!` states it), so that a member
/// removed a moment before cannot post. First, so that senders to
/// one conversation queue on its row lock. `c`, `s`, `at` are
/// markers of `sql`.
fn advance_conversation(c: &str, s: &str, at: &str) -> String {
    let forward = format!("(last_active_at IS NULL OR last_active_at < {at})");
    format!(
        "UPDATE conversations SET \
             message_seq = message_seq + 1, \
             last_active_at = CASE WHEN {forward} THEN {at} ELSE last_active_at END, \
             activity_at = CASE WHEN {forward} THEN {at} ELSE activity_at END \
         WHERE id = {c} AND {} AND NOT {}",
        member_of("conversations", s),
        blocked_direct("conversations")
    )
}

/// The sender's own state row counts one more message of theirs after
/// where they read up to (`own_after`), created when absent: every
/// other member's unread count grows by the conversation's number
/// alone, so a send writes this one state row whatever the number of
/// members (migration `big_groups`). `c`, `s` are markers of a
/// `confab_store_sql::raw::Sql`; `from` the rows to insert from.
fn count_own(c: &str, s: &str, from: &str) -> String {
    format!(
        "INSERT INTO conversation_states \
             (conversation_id, contact_id, is_pinned, is_muted, read_seq, own_after) \
         SELECT {c}, {s}, FALSE, FALSE, 0, 1 {from} \
         ON CONFLICT (conversation_id, contact_id) \
         DO UPDATE SET own_after = conversation_states.own_after + 1"
    )
}

/// The first bind of [`append_text`]'s attachments (after the
/// conversation, sender, time, id, text, quote, thread and mentions).
const FIRST_ATTACHMENT: usize = 9;

/// A thread reply sent at `at` counts one more in its thread `p` (a
/// message of conversation `c`) and moves its latest reply's time
/// forward, `when` the send wrote its message. Markers of a
/// `confab_store_sql::raw::Sql`; `p` NULL changes nothing.
pub(crate) fn count_reply(p: &str, c: &str, at: &str, when: &str) -> String {
    format!(
        "UPDATE messages SET reply_count = reply_count + 1, \
             last_reply_at = CASE WHEN last_reply_at IS NULL OR last_reply_at < {at} \
                 THEN {at} ELSE last_reply_at END \
         WHERE id = {p} AND conversation_id = {c} AND {when}"
    )
}

/// Each contact of `ids` (a subquery of their ids, column `id`:
/// `SqlBackend::json_ids`), other than
/// the sender `s`, who is a member of conversation `c` counts one more
/// unread mention there; a member without a state row gets one (read
/// nothing, sent nothing). `from` the rows to insert from (the send's
/// message). Markers of a `confab_store_sql::raw::Sql`.
pub(crate) fn count_mentions(c: &str, s: &str, ids: &str, from: &str) -> String {
    format!(
        "INSERT INTO conversation_states \
             (conversation_id, contact_id, is_pinned, is_muted, read_seq, own_after, mention_unread) \
         SELECT conv_m.id, mentioned.id, FALSE, FALSE, 0, 0, 1 \
         {from} CROSS JOIN conversations conv_m CROSS JOIN {ids} mentioned \
         WHERE conv_m.id = {c} AND mentioned.id <> {s} AND {} \
         ON CONFLICT (conversation_id, contact_id) \
         DO UPDATE SET mention_unread = conversation_states.mention_unread + 1",
        member_of("conv_m", "mentioned.id"),
    )
}

/// What a send's single statement reports, in its order.
#[derive(Queryable)]
pub(crate) struct Sent {
    sent: i64,
    completed: i64,
}

/// A send as one data-modifying `WITH` statement (PostgreSQL): the
/// same writes as [`append_message`]'s statements, in the same
/// transaction, in one round trip instead of five or more. Every
/// part after the conversation's update reads the rows that update
/// returned, so a sender who is not a member writes nothing.
fn append_in_one_statement(
    conn: &mut Conn,
    message: NewMessage,
    event: (&confab_domain::Event, &dyn confab_ports::PayloadRenderer),
    completion: Option<Completion<Message>>,
) -> Result<Message> {
    // Inside the door's transaction, which rolls back by itself if
    // its caller stops waiting: no deadline of the statement's own.
    let (query, written, with_completion) = append_statement(message, event, completion, i64::MAX)?;
    let sent = query.get_result(conn).map_err(settle_error)?;
    append_outcome(sent, with_completion)?;
    Ok(written)
}

/// [`append_in_one_statement`]'s statement, for a loader of rows of
/// its own, with the message as written and whether the statement
/// completes an idempotency key. Its text is built once per shape
/// ([`append_text`]: per number of attachments, with or without a
/// key, with or without a thread or mentions to count), its binds per
/// send, in the order that text numbers them.
pub(crate) fn append_statement(
    message: NewMessage,
    (event, render): (&confab_domain::Event, &dyn confab_ports::PayloadRenderer),
    completion: Option<Completion<Message>>,
    deadline_us: i64,
) -> Result<(SendQuery, Message, bool)> {
    use confab_store_sql::raw::{Bind, Shape};
    use std::sync::OnceLock;

    static SHAPES: [[[OnceLock<Shape>; 2]; 2]; confab_domain::MAX_ATTACHMENTS + 1] =
        [const { [const { [const { OnceLock::new() }; 2] }; 2] };
            confab_domain::MAX_ATTACHMENTS + 1];
    // First: nothing is sent for a message the domain refuses.
    let written = as_written(message, None)?;
    // At most `MAX_ATTACHMENTS` (a rule of `Message`): a shape for each
    // count.
    let attachments = written.attachments().len();
    let with_completion = completion.is_some();
    // A thread reply or a message with mentions writes more rows; a plain
    // message's statement leaves those parts out, which PostgreSQL would
    // otherwise set up and run (finding nothing) on every send.
    let depth = written.parent_id().is_some() || !written.mentions().is_empty();
    let shape = SHAPES[attachments][usize::from(with_completion)][usize::from(depth)]
        .get_or_init(|| Shape::new(&append_text(attachments, with_completion, depth)));

    let mut binds = vec![
        Bind::Id(written.conversation_id().db()),
        Bind::Id(written.sender().id().db()),
        Bind::Int(written.created_at().micros()),
        Bind::Id(written.id().db()),
        Bind::Text(written.text().as_str().to_owned()),
        Bind::MaybeId(written.reply_to().map(|q| q.id().db())),
        Bind::MaybeId(written.parent_id().map(|p| p.db())),
        Bind::MaybeText(mentions_json(written.mentions())),
        Bind::Text(confab_domain::fold(written.text().as_str())),
    ];
    for (seq, a) in (0_i64..).zip(written.attachments()) {
        binds.extend([
            Bind::Id(a.id.db()),
            Bind::Int(seq),
            Bind::Text(a.filename.as_str().to_owned()),
            Bind::MaybeText(match &a.source {
                FileSource::Link(url) => Some(url.as_str().to_owned()),
                FileSource::Stored(_) => None,
            }),
            Bind::Text(a.file_type.as_str().to_owned()),
            Bind::MaybeInt(a.file_size.map(confab_domain::FileSize::bytes)),
        ]);
    }
    binds.extend([
        Bind::Id(event.id.as_uuid().db()),
        Bind::Text(event.kind.name().to_owned()),
        Bind::Id(event.actor.db()),
        Bind::Text(render.message(&written)),
    ]);
    // The idempotency key's answer, only while its holder holds it.
    if let Some(completion) = completion {
        let (claim, response) = completion.render(&written);
        binds.extend([
            Bind::Id(claim.contact_id.db()),
            Bind::Text(claim.key),
            Bind::Id(DbId::from(claim.holder)),
            Bind::Int(i64::from(response.code)),
            Bind::MaybeText(response.location),
            Bind::Text(response.body),
        ]);
    }
    binds.push(Bind::Int(deadline_us));
    Ok((shape.typed(binds), written, with_completion))
}

/// A send's statement ([`append_statement`]).
pub(crate) type SendQuery = confab_store_sql::raw::TypedQuery<Db, (BigInt, BigInt)>;

/// [`append_statement`]'s text for a message with `attachments`
/// attachments, completing an idempotency key or not, counting a thread
/// reply and mentions (`depth`) or not. Its binds, in
/// order: the conversation, the sender, the time, the message's id
/// and text, the message it quotes, its thread's first message, its
/// mentions (a JSON array of ids, or NULL), its text folded for
/// search (`confab_domain::fold`); six per attachment (id, place, file name, URL, type,
/// size); the event's id, type, actor and payload; with a key, its
/// owner, the key, its holder, and the answer's status, location and
/// body; last, the deadline (microseconds since the Unix epoch on the
/// database's clock) past which it rolls back instead of committing.
fn append_text(attachments: usize, completion: bool, depth: bool) -> String {
    use confab_store_sql::raw::marker;

    let (c, s, at, m, body) = (marker(0), marker(1), marker(2), marker(3), marker(4));
    let (quoted, parent, mentions) = (marker(5), marker(6), marker(7));
    let folded = marker(8);
    let mut text = format!(
        "WITH conv AS ({} RETURNING id, creator_id, peer_id, group_id, message_seq)",
        advance_conversation(&c, &s, &at)
    );
    // The message's audience (the feed's index ranges) from the
    // conversation row the update returned: no second lookup.
    text.push_str(&format!(
        ", msg AS ( \
             INSERT INTO messages (id, conversation_id, sender_id, body, read_at, created_at, updated_at, \
                 direct_creator_id, direct_peer_id, group_id, seq, reply_to_id, parent_id, mentions, \
                 body_folded) \
             SELECT {m}, id, {s}, {body}, NULL, {at}, NULL, \
                 CASE WHEN group_id IS NULL THEN creator_id END, peer_id, group_id, message_seq, \
                 {quoted}, {parent}, {mentions}, {folded} \
             FROM conv RETURNING id, seq \
         )"
    ));
    if depth {
        // A thread reply: its thread counts one more (nothing without one).
        text.push_str(&format!(
            ", thread AS ({} RETURNING 1)",
            count_reply(&parent, &c, &at, "EXISTS (SELECT 1 FROM msg)")
        ));
        // Each mentioned member counts one more unread mention (no one
        // without mentions: the sender's own count is `own`'s row).
        text.push_str(&format!(
            ", mentioned AS ({} RETURNING 1)",
            count_mentions(&c, &s, &Backend::json_ids(&mentions), "FROM msg")
        ));
    }
    if attachments > 0 {
        let rows: Vec<String> = (0..attachments)
            .map(|i| {
                let b = FIRST_ATTACHMENT + 6 * i;
                let [aid, seq, name, url, kind, size] =
                    [b, b + 1, b + 2, b + 3, b + 4, b + 5].map(marker);
                format!("({aid}, {seq}, {name}, {url}, {kind}, {size})")
            })
            .collect();
        text.push_str(&format!(
            ", att AS ( \
                 INSERT INTO attachments (id, message_id, seq, filename, file_url, file_type, file_size, created_at, \
                     uploader_id, conversation_id) \
                 SELECT v.id, msg.id, v.seq, v.filename, v.file_url, v.file_type, v.file_size, {at}, {s}, {c} \
                 FROM msg CROSS JOIN (VALUES {}) AS v (id, seq, filename, file_url, file_type, file_size) \
                 RETURNING 1 \
             )",
            rows.join(", ")
        ));
    }
    // One more message of the sender's own (the others' unread counts
    // follow from the conversation's number).
    text.push_str(&format!(
        ", own AS ({} RETURNING 1)",
        count_own(&c, &s, "FROM msg")
    ));
    // The event and its audience (the outbox's rows, `outbox.rs`),
    // from the row the update returned: a direct conversation's two
    // members get a recipient row each, a group conversation's group
    // one `event_groups` row (its members read it by group).
    // The event is about the message, of the conversation (what a
    // deletion finds it by: `outbox::scrub`).
    let position = Backend::event_position(0).unwrap_or_default();
    let e0 = FIRST_ATTACHMENT + 6 * attachments;
    let [e, kind, actor, payload] = [e0, e0 + 1, e0 + 2, e0 + 3].map(marker);
    text.push_str(&format!(
        ", ev AS ( \
             INSERT INTO events (id, position, type, actor_id, created_at, payload, \
                 subject_id, conversation_id, message_id) \
             SELECT {e}, {position}, {kind}, {actor}, {at}, {payload}, {m}, {c}, {m} \
             FROM msg \
             RETURNING id, position \
         ), rcp AS ( \
             INSERT INTO event_recipients (contact_id, position, event_id, payload) \
             SELECT m.contact_id, ev.position, ev.id, CAST(NULL AS TEXT) \
             FROM ev CROSS JOIN ( \
                 SELECT creator_id AS contact_id FROM conv WHERE group_id IS NULL \
                 UNION SELECT peer_id FROM conv WHERE group_id IS NULL AND peer_id IS NOT NULL \
             ) m \
             RETURNING 1 \
         ), grp AS ( \
             INSERT INTO event_groups (group_id, position, event_id) \
             SELECT conv.group_id, ev.position, ev.id \
             FROM ev CROSS JOIN conv WHERE conv.group_id IS NOT NULL \
             RETURNING 1 \
         )"
    ));
    let (completed, deadline) = if completion {
        let k0 = e0 + 4;
        let [owner, key, holder, status, location, body] =
            [k0, k0 + 1, k0 + 2, k0 + 3, k0 + 4, k0 + 5].map(marker);
        text.push_str(&format!(
            ", done AS ( \
                 UPDATE idempotency_keys SET status = {status}, location = {location}, body = {body} \
                 WHERE contact_id = {owner} AND key = {key} AND claim = {holder} \
                     AND status IS NULL AND EXISTS (SELECT 1 FROM msg) \
                 RETURNING 1 \
             )"
        ));
        ("(SELECT COUNT(*) FROM done)", marker(k0 + 6))
    } else {
        ("CAST(NULL AS BIGINT)", marker(e0 + 4))
    };
    // Last, once every write is done (its rows counted, so its
    // row locks waited for): whether the statement may commit
    // (`confab_settle_send`, migration `send_settles_itself`).
    let mut written = String::from(
        "(SELECT COUNT(*) FROM own) + (SELECT COUNT(*) FROM rcp) + (SELECT COUNT(*) FROM grp)",
    );
    if depth {
        written.push_str(" + (SELECT COUNT(*) FROM thread) + (SELECT COUNT(*) FROM mentioned)");
    }
    if attachments > 0 {
        written.push_str(" + (SELECT COUNT(*) FROM att)");
    }
    text.push_str(&format!(
        " SELECT confab_settle_send({deadline}, (SELECT COUNT(*) FROM msg), {completed}, {written}) AS sent, \
             COALESCE({completed}, 0) AS completed"
    ));
    text
}

/// [`append_statement`]'s error: its statement refused to commit
/// (`confab_settle_send`) because the idempotency key's claim went
/// to another holder (`ClaimLost`) or its deadline passed
/// (`Unavailable`, as any call past its deadline); any other is
/// diesel's.
pub(crate) fn settle_error(e: diesel::result::Error) -> Error {
    use diesel::result::{DatabaseErrorKind, Error as E};
    match &e {
        E::DatabaseError(DatabaseErrorKind::Unknown, info)
            if info
                .message()
                .starts_with("confab: the idempotency key's claim was lost") =>
        {
            Error::Store(StoreError::ClaimLost)
        }
        E::DatabaseError(DatabaseErrorKind::Unknown, info)
            if info
                .message()
                .starts_with("confab: the send's deadline passed") =>
        {
            Error::Store(StoreError::Unavailable(info.message().to_owned().into()))
        }
        _ => Error::Db(e),
    }
}

/// What [`append_statement`]'s answer means: nothing written
/// (`NotFound`: not a member, or no such conversation). A key lost
/// to another holder never answers: the statement raises and rolls
/// itself back first (`confab_settle_send`, [`settle_error`]); an
/// answer saying otherwise is still refused here.
pub(crate) fn append_outcome(outcome: Sent, with_completion: bool) -> Result<()> {
    if outcome.sent == 0 {
        return Err(not_found());
    }
    if with_completion && outcome.completed == 0 {
        return Err(Error::Store(StoreError::ClaimLost));
    }
    Ok(())
}

/// Inserts a message into conversation `c` as `INSERT ... SELECT`
/// from the conversation's row, which gives it its audience: the
/// direct conversation's creator and peer, or the group conversation's
/// group (the columns the feed reads its ranges from).
fn insert_from_conversation(
    conn: &mut Conn,
    id: DbId,
    c: DbId,
    sender: DbId,
    body: &str,
    at: i64,
    (quoted, parent, mentions): (Option<DbId>, Option<DbId>, Option<String>),
) -> Result<()> {
    use confab_store_sql::id::IdSql;

    let source = conversations::table
        .filter(conversations::id.eq(c))
        .select((
            id.into_sql::<IdSql>(),
            conversations::id,
            sender.into_sql::<IdSql>(),
            body.into_sql::<Text>(),
            None::<i64>.into_sql::<Nullable<BigInt>>(),
            at.into_sql::<BigInt>(),
            None::<i64>.into_sql::<Nullable<BigInt>>(),
            case_when::<_, _, IdSql>(conversations::group_id.is_null(), conversations::creator_id),
            conversations::peer_id,
            conversations::group_id,
            conversations::message_seq,
            quoted.into_sql::<Nullable<IdSql>>(),
            parent.into_sql::<Nullable<IdSql>>(),
            mentions.into_sql::<Nullable<Text>>(),
            confab_domain::fold(body).into_sql::<Nullable<Text>>(),
        ));
    diesel::insert_into(messages::table)
        .values(source)
        .into_columns((
            messages::id,
            messages::conversation_id,
            messages::sender_id,
            messages::body,
            messages::read_at,
            messages::created_at,
            messages::updated_at,
            messages::direct_creator_id,
            messages::direct_peer_id,
            messages::group_id,
            messages::seq,
            messages::reply_to_id,
            messages::parent_id,
            messages::mentions,
            messages::body_folded,
        ))
        .execute(conn)?;
    Ok(())
}

pub(crate) fn append_message(
    conn: &mut Conn,
    message: NewMessage,
    outbox: &Outbox,
    completion: Option<Completion<Message>>,
) -> Result<Message> {
    if Backend::DATA_MODIFYING_WITH {
        if let Some(event) = lone_message_created(outbox, &message) {
            return append_in_one_statement(conn, message, (event, &*outbox.render), completion);
        }
    }
    if has_uploads(&message) {
        return append_with_uploads(conn, message, outbox, completion);
    }
    // What is written is what a reader would load (no read back), built
    // first: the domain refuses a message that breaks its rules before
    // anything is written.
    let written = as_written(message, None)?;
    let c = written.conversation_id().db();
    let sender = written.sender().id().db();
    let at = written.created_at().micros();
    advance(conn, c, sender, at)?;
    // With its audience copied from the conversation (the feed's
    // index ranges), in the same statement.
    let id = written.id().db();
    insert_from_conversation(
        conn,
        id,
        c,
        sender,
        written.text().as_str(),
        at,
        depth_of(&written),
    )?;
    insert_attachments(conn, written.attachments())?;
    finish_append(conn, written, outbox, completion)
}

/// The conversation's activity, where the sender is a member (see
/// `advance_conversation`); raw SQL, since diesel prepares no `UPDATE`
/// once for all. `NotFound` when the sender is not a member.
fn advance(conn: &mut Conn, c: DbId, sender: DbId, at: i64) -> Result<()> {
    let mut sql = confab_store_sql::raw::Sql::default();
    let (cm, sm) = (sql.id(c), sql.id(sender));
    let atm = sql.bind(confab_store_sql::raw::Bind::Int(at));
    sql.push(&advance_conversation(&cm, &sm, &atm));
    let moved = sql.query::<Db>().execute(conn)?;
    if moved == 0 {
        return Err(not_found());
    }
    Ok(())
}

/// A send that attaches uploads: the message's row first (the uploads'
/// rows then point at it), then each attachment in its place, the
/// uploads as the store attached them (`attach_uploads`), and the
/// message built from what was written.
fn append_with_uploads(
    conn: &mut Conn,
    message: NewMessage,
    outbox: &Outbox,
    completion: Option<Completion<Message>>,
) -> Result<Message> {
    confab_domain::check_attachment_count(message.attachments.len())?;
    let (m, conversation) = (message.id, message.conversation_id);
    let sender = message.sender.id();
    let at = message.created_at;
    advance(conn, conversation.db(), sender.db(), at.micros())?;
    insert_from_conversation(
        conn,
        m.db(),
        conversation.db(),
        sender.db(),
        message.text.as_str(),
        at.micros(),
        (
            message.reply_to.as_ref().map(|q| q.id().db()),
            message.parent_id.map(|p| p.db()),
            mentions_json(&message.mentions),
        ),
    )?;
    let mut links = Vec::new();
    let mut uploads = Vec::new();
    for (place, a) in message.attachments.iter().enumerate() {
        let seq = i32::try_from(place).unwrap_or(i32::MAX);
        match a {
            AddAttachment::Link(id, a) => {
                links.push((place, a.clone().attach(*id, (m, conversation), sender, at)))
            }
            AddAttachment::Upload(id) => uploads.push((place, *id, seq)),
        }
    }
    let attached = attach_uploads(conn, (m, conversation), sender, &uploads)?;
    let mut all: Vec<(usize, Attachment)> = links;
    all.extend(uploads.iter().map(|u| u.0).zip(attached));
    all.sort_by_key(|(place, _)| *place);
    let attachments: Vec<Attachment> = all.into_iter().map(|(_, a)| a).collect();
    let links: Vec<(Attachment, i32)> = attachments
        .iter()
        .zip(0..)
        .filter(|(a, _)| !a.is_stored())
        .map(|(a, seq)| (a.clone(), seq))
        .collect();
    insert_attachment_rows(conn, &links)?;
    let written = as_written(message, Some(attachments))?;
    finish_append(conn, written, outbox, completion)
}

/// What every send path does last: one more message of the sender's
/// own, the events, the kept answer.
fn finish_append(
    conn: &mut Conn,
    written: Message,
    outbox: &Outbox,
    completion: Option<Completion<Message>>,
) -> Result<Message> {
    let c = written.conversation_id().db();
    let sender = written.sender().id().db();
    // One more message of the sender's own.
    let mut sql = confab_store_sql::raw::Sql::default();
    let (cm, sm) = (sql.id(c), sql.id(sender));
    sql.push(&count_own(&cm, &sm, "WHERE TRUE"));
    sql.query::<Db>().execute(conn)?;
    // Its thread counts one more reply.
    if let Some(parent) = written.parent_id() {
        let mut sql = confab_store_sql::raw::Sql::default();
        let (pm, cm) = (sql.id(parent.db()), sql.id(c));
        let atm = sql.bind(confab_store_sql::raw::Bind::Int(
            written.created_at().micros(),
        ));
        sql.push(&count_reply(&pm, &cm, &atm, "TRUE"));
        sql.query::<Db>().execute(conn)?;
    }
    // Each member it mentions counts one more unread mention.
    if let Some(json) = mentions_json(written.mentions()) {
        let mut sql = confab_store_sql::raw::Sql::default();
        let (cm, sm) = (sql.id(c), sql.id(sender));
        let ids = sql.bind(confab_store_sql::raw::Bind::Text(json));
        sql.push(&count_mentions(
            &cm,
            &sm,
            &Backend::json_ids(&ids),
            "FROM (SELECT 1) one",
        ));
        sql.query::<Db>().execute(conn)?;
    }
    outbox::write(
        conn,
        outbox,
        &Written {
            messages: std::slice::from_ref(&written),
            ..Written::default()
        },
    )?;
    complete(conn, completion, &written)?;
    Ok(written)
}
