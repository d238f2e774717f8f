//! Conversations, seen by a viewer with the viewer's own state (pinned,
//! muted, archived, last opened).

use confab_domain::{
    ContactId, Conversation, ConversationId, ConversationView, DomainError, Field, MemberState,
    MemberStatePatch, Page, Paged, PinnedMessageChange, Rule, Timestamp,
};
use confab_ports::{Completion, ConversationFilter, Outbox};
use diesel::dsl::{exists, sql};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool};
use diesel::upsert::excluded;

use super::idempotency::complete;
use super::membership::{contact_exists, is_member};
use super::messages::load_messages;
use super::outbox::{self, expand_marked_read, write_events, Deleted, Written};
use super::{Backend, Conn, Db, Result};
use confab_store_sql::id::DbId;
use confab_store_sql::queries::membership::{conversation_list, visible_to};
use confab_store_sql::queries::paging::{fetch_size, finish_page, seek, Seek};
use confab_store_sql::queries::{distinct_except, not_found};
use confab_store_sql::rows::{
    member_state, unread_sql, ConversationRow, DbKey, StateChangeset, StateRow,
};
use confab_store_sql::schema::{
    contacts, conversation_states, conversations, groups, message_gaps, messages,
};
use confab_store_sql::SqlBackend as _;

fn to_view(
    viewer: ContactId,
    row: ConversationRow,
    state: Option<StateRow>,
    unread: i64,
) -> Result<ConversationView> {
    Ok(ConversationView {
        conversation: Conversation::try_from(row)?,
        viewer,
        state: member_state(state, unread),
    })
}

/// The unread count ([`unread_sql`]) in a diesel query over
/// `conversations` left-joined with a member's `conversation_states`.
fn unread() -> diesel::expression::SqlLiteral<BigInt> {
    sql::<BigInt>(&unread_sql("conversations", "conversation_states"))
}

pub(crate) fn create_conversation(
    conn: &mut Conn,
    conversation: Conversation,
    outbox: &Outbox,
    completion: Option<Completion<()>>,
) -> Result<()> {
    let row = ConversationRow::from(&conversation);
    let target_exists = match (row.peer_id, row.group_id) {
        (Some(peer), _) => contact_exists(conn, peer)?,
        (None, Some(group)) => {
            diesel::select(exists(groups::table.find(group))).get_result::<bool>(conn)?
        }
        (None, None) => false,
    };
    if !target_exists {
        return Err(not_found());
    }
    diesel::insert_into(conversations::table)
        .values(&row)
        .execute(conn)?;
    // A direct conversation's two members get their state rows now; a
    // group conversation's members get theirs on their first open, send
    // or change (an absent row is the default state, unread counts
    // included: migration `big_groups`), so creating one costs the same
    // whatever the group's size.
    if let Some(members) = conversation.direct_members() {
        let states: Vec<StateRow> = distinct_except(&members, None)
            .into_iter()
            .map(|m| StateRow::new(row.id, m.db(), MemberState::default()))
            .collect();
        diesel::insert_into(conversation_states::table)
            .values(&states)
            .execute(conn)?;
    }
    // Every member's view is the new conversation with a fresh state;
    // only a direct one's differ (each sees the other as contact_id).
    let view_of = |viewer: ContactId| ConversationView {
        conversation: conversation.clone(),
        viewer,
        state: MemberState::default(),
    };
    let actor = view_of(conversation.creator_id());
    let each: Option<Vec<ConversationView>> = conversation
        .direct_members()
        .map(|members| members.into_iter().map(view_of).collect());
    outbox::write(
        conn,
        outbox,
        &Written {
            view: Some(&actor),
            member_views: each.as_deref(),
            ..Written::default()
        },
    )?;
    complete(conn, completion, &())?;
    Ok(())
}

/// Both members' own views of direct `conversation`, in one statement
/// (a member without a state row has the default one); none for a
/// group's (its events carry the shared attributes alone).
fn member_views(conn: &mut Conn, conversation: &Conversation) -> Result<Vec<ConversationView>> {
    let c = conversation.id().db();
    let Some(members) = conversation.direct_members() else {
        return Ok(Vec::new());
    };
    let q = contacts::table
        .left_join(
            conversation_states::table.on(conversation_states::contact_id
                .eq(contacts::id)
                .and(conversation_states::conversation_id.eq(c))),
        )
        .select((contacts::id, Option::<StateRow>::as_select()))
        .filter(contacts::id.eq_any(members.iter().map(DbKey::db).collect::<Vec<_>>()));
    let rows: Vec<(DbId, Option<StateRow>)> = q.load(conn)?;
    // Each member's unread count (as `unread_sql` works it out), from
    // the conversation's numbers and its gaps, read once.
    let (last, deleted): (i64, i64) = conversations::table
        .find(c)
        .select((conversations::message_seq, conversations::deleted_count))
        .first(conn)?;
    let gaps: Vec<(i64, DbId)> = if deleted == 0 {
        Vec::new()
    } else {
        message_gaps::table
            .filter(message_gaps::conversation_id.eq(c))
            .select((message_gaps::seq, message_gaps::sender_id))
            .load(conn)?
    };
    Ok(rows
        .into_iter()
        .map(|(member, state)| {
            let (read, own) = state.as_ref().map_or((0, 0), |s| (s.read_seq, s.own_after));
            let others_gone = gaps
                .iter()
                .filter(|(seq, sender)| *seq > read && *sender != member)
                .count() as i64;
            ConversationView {
                conversation: conversation.clone(),
                viewer: confab_store_sql::rows::contact_id(member),
                state: member_state(state, last - read - own - others_gone),
            }
        })
        .collect())
}

pub(crate) fn conversation_for(
    conn: &mut Conn,
    viewer: ContactId,
    id: ConversationId,
) -> Result<Option<ConversationView>> {
    let row: Option<(ConversationRow, Option<StateRow>, i64)> =
        conversation_list!(viewer.db(), &ConversationFilter::default())
            .filter(conversations::id.eq(id.db()))
            .select((
                ConversationRow::as_select(),
                Option::<StateRow>::as_select(),
                unread(),
            ))
            .first(conn)
            .optional()?;
    row.map(|(c, s, unread)| to_view(viewer, c, s, unread))
        .transpose()
}

pub(crate) fn list_conversations(
    conn: &mut Conn,
    viewer: ContactId,
    filter: ConversationFilter,
    page: Page<ConversationId>,
) -> Result<Paged<ConversationView>> {
    let v = viewer.db();
    let (limit, fetch) = fetch_size(&page);
    let seek = seek(page.cursor, |id: ConversationId| {
        Ok(conversation_list!(v, &filter)
            .filter(conversations::id.eq(id.db()))
            .select((conversations::activity_at, conversations::id))
            .first::<(i64, DbId)>(conn)
            .optional()?)
    })?;
    let backwards = seek.backwards();
    let rows = inbox_page(conn, v, &filter, seek, fetch)?;
    let (rows, has_more) = finish_page(rows, limit, backwards);
    let items = rows
        .into_iter()
        .map(|(c, s, unread)| to_view(viewer, c, s, unread))
        .collect::<Result<Vec<_>>>()?;
    Ok(Paged { items, has_more })
}

/// The rows of one inbox page, in the order of travel: a few ordered
/// index ranges (migration 2026-11-27-100000), each cut to the page
/// before they are merged: the viewer's direct conversations as
/// creator, as peer, and the conversations of the groups the viewer
/// belongs to now (one range per group where the database has
/// `LATERAL`). What a page reads does not grow with the number of
/// conversations, the viewer's or everyone's. Filters on the
/// viewer's state apply inside each range; an absent state row reads
/// as the default state (not muted, not pinned, not archived), as in
/// `conversation_list!`, which resolves the cursor in the same
/// filtered list (`list_conversations`): the two change together.
fn inbox_page(
    conn: &mut Conn,
    v: DbId,
    filter: &ConversationFilter,
    seek: Seek<(i64, DbId)>,
    fetch: i64,
) -> Result<Vec<(ConversationRow, Option<StateRow>, i64)>> {
    use confab_store_sql::raw::{Bind, Sql};
    use confab_store_sql::rows::InboxRow;

    // Kept prepared: one shape per filter combination and direction.
    let mut sql = Sql::default();
    let vm = sql.id(v);
    let limit = sql.bind(Bind::Int(fetch));
    let mut cond = String::new();
    let (order, keyset) = match seek {
        Seek::First => ("DESC", String::new()),
        Seek::After((at, id)) => {
            let (a, b) = (sql.bind(Bind::Int(at)), sql.id(id));
            (
                "DESC",
                format!(
                    " AND c.activity_at <= {a} \
                     AND (c.activity_at < {a} OR (c.activity_at = {a} AND c.id < {b}))"
                ),
            )
        }
        Seek::Before((at, id)) => {
            let (a, b) = (sql.bind(Bind::Int(at)), sql.id(id));
            (
                "ASC",
                format!(
                    " AND c.activity_at >= {a} \
                     AND (c.activity_at > {a} OR (c.activity_at = {a} AND c.id > {b}))"
                ),
            )
        }
    };
    let flag = |column: &str, on: bool| {
        if on {
            format!(" AND s.{column}")
        } else {
            format!(" AND (s.{column} IS NULL OR NOT s.{column})")
        }
    };
    if let Some(muted) = filter.muted {
        cond.push_str(&flag("is_muted", muted));
    }
    if let Some(pinned) = filter.pinned {
        cond.push_str(&flag("is_pinned", pinned));
    }
    match filter.archived {
        Some(true) => cond.push_str(" AND s.archived_at IS NOT NULL"),
        Some(false) => cond.push_str(" AND s.archived_at IS NULL"),
        None => {}
    }
    if let Some(group) = filter.group_id {
        let g = sql.id(group.db());
        cond.push_str(&format!(" AND c.group_id = {g}"));
    }
    let columns = InboxRow::columns();
    // The viewer's state row, looked up by its key for each
    // conversation read. PostgreSQL's generic plan would rather
    // read all of the viewer's state rows and filter them for each
    // conversation; a lateral subquery with a LIMIT is never
    // flattened into such a join.
    let state = if Backend::LATERAL {
        format!(
            "LEFT JOIN LATERAL (SELECT * FROM conversation_states \
                 WHERE conversation_id = c.id AND contact_id = {vm} LIMIT 1) s ON TRUE"
        )
    } else {
        format!(
            "LEFT JOIN conversation_states s \
                 ON s.conversation_id = c.id AND s.contact_id = {vm}"
        )
    };
    let range = |from: &str, audience: &str| {
        format!(
            "SELECT {columns} FROM {from} {state} \
             WHERE {audience} AND NOT c.deleting{cond}{keyset} \
             ORDER BY c.activity_at {order}, c.id {order} LIMIT {limit}"
        )
    };
    let in_groups = if Backend::LATERAL {
        format!(
            "SELECT r.* FROM group_members g CROSS JOIN LATERAL ({}) r \
             WHERE g.contact_id = {vm}",
            range("conversations c", "c.group_id = g.group_id")
        )
    } else {
        // CROSS JOIN: SQLite's planner keeps this order (the
        // viewer's memberships first), where it otherwise walked
        // every conversation's group index entry and probed
        // group_members for each (557 against 47 us for the inbox
        // of 500 conversations on the benchmark's SQLite file).
        range(
            "group_members g CROSS JOIN conversations c ON c.group_id = g.group_id",
            &format!("g.contact_id = {vm}"),
        )
    };
    let mut ranges = vec![in_groups];
    if filter.group_id.is_none() {
        ranges.push(range(
            "conversations c",
            &format!("c.creator_id = {vm} AND c.group_id IS NULL"),
        ));
        // Never twice: a direct conversation's members are two.
        ranges.push(range(
            "conversations c",
            &format!("c.peer_id = {vm} AND c.creator_id <> {vm}"),
        ));
    }
    let union = ranges
        .iter()
        .map(|r| format!("SELECT * FROM ({r}) AS r"))
        .collect::<Vec<_>>()
        .join(" UNION ALL ");
    sql.push(&format!(
        "SELECT * FROM ({union}) AS u \
         ORDER BY activity_at {order}, id {order} LIMIT {limit}"
    ));
    sql.query::<Db>()
        .load::<InboxRow>(conn)?
        .into_iter()
        .map(InboxRow::split)
        .collect()
}

pub(crate) fn open_conversation(
    conn: &mut Conn,
    viewer: ContactId,
    id: ConversationId,
    at: Timestamp,
    outbox: &Outbox,
) -> Result<ConversationView> {
    let (v, c) = (viewer.db(), id.db());
    if !is_member(conn, v, c)? {
        return Err(not_found());
    }
    let opened = MemberState {
        last_opened_at: Some(at),
        ..MemberState::default()
    };
    // Read up to the conversation's last message: its number now.
    let read_seq: i64 = conversations::table
        .find(c)
        .select(conversations::message_seq)
        .first(conn)?;
    diesel::insert_into(conversation_states::table)
        .values(&StateRow {
            read_seq,
            ..StateRow::new(c, v, opened)
        })
        .on_conflict((
            conversation_states::conversation_id,
            conversation_states::contact_id,
        ))
        .do_update()
        .set((
            conversation_states::last_opened_at.eq(Some(at.micros())),
            conversation_states::read_seq.eq(excluded(conversation_states::read_seq)),
            conversation_states::own_after.eq(0),
            conversation_states::mention_unread.eq(0),
        ))
        .execute(conn)?;
    let marked: Vec<DbId> = diesel::update(
        messages::table
            .filter(messages::conversation_id.eq(c))
            .filter(messages::sender_id.ne(v))
            .filter(messages::read_at.is_null()),
    )
    .set(messages::read_at.eq(Some(at.micros())))
    .returning(messages::id)
    .get_results(conn)?;
    let view = conversation_for(conn, viewer, id)?.ok_or_else(not_found)?;
    // A `message.updated` for each message marked read, with its
    // `read_at`: loaded only when there is one.
    let mut read = if marked.is_empty() {
        Vec::new()
    } else {
        load_messages(conn, &marked)?
    };
    read.sort_by_key(|m| (m.created_at(), m.id()));
    let read_ids: Vec<_> = read.iter().map(|m| m.id()).collect();
    let events = expand_marked_read(outbox.events.clone(), &read_ids);
    write_events(
        conn,
        &events,
        &*outbox.render,
        &Written {
            messages: &read,
            view: Some(&view),
            ..Written::default()
        },
    )?;
    Ok(view)
}

/// Pins (or unpins) the conversation's shared message, when that
/// changes it: whether it did. A message to pin is locked so that it
/// cannot be deleted before this commits.
fn change_pinned(conn: &mut Conn, v: DbId, c: DbId, change: PinnedMessageChange) -> Result<bool> {
    let of_it = conversations::table.find(c);
    let n = match change {
        PinnedMessageChange::Pin(m) => {
            let message = Backend::lock_message(conn, m.db(), v)?;
            if message.map(|r| r.conversation_id) != Some(c) {
                return Err(
                    DomainError::breaks(Field::PinnedMessage, Rule::OutsideConversation).into(),
                );
            }
            let m = m.db();
            diesel::update(
                of_it.filter(
                    conversations::pinned_message_id
                        .is_null()
                        .or(conversations::pinned_message_id.ne(m)),
                ),
            )
            .set(conversations::pinned_message_id.eq(Some(m)))
            .execute(conn)?
        }
        PinnedMessageChange::Unpin => {
            diesel::update(of_it.filter(conversations::pinned_message_id.is_not_null()))
                .set(conversations::pinned_message_id.eq(None::<DbId>))
                .execute(conn)?
        }
    };
    Ok(n > 0)
}

/// Whether a submitted attribute of `patch` differs from the state
/// row's: the condition under which an existing row is written.
fn state_differs(
    patch: &MemberStatePatch,
) -> Box<dyn BoxableExpression<conversation_states::table, Db, SqlType = Bool>> {
    let mut any: Box<dyn BoxableExpression<conversation_states::table, Db, SqlType = Bool>> =
        Box::new(diesel::dsl::sql::<Bool>("1 = 0"));
    if let Some(p) = patch.is_pinned {
        any = Box::new(any.or(conversation_states::is_pinned.ne(p)));
    }
    if let Some(m) = patch.is_muted {
        any = Box::new(any.or(conversation_states::is_muted.ne(m)));
    }
    match patch.archived_at {
        None => {}
        Some(None) => any = Box::new(any.or(conversation_states::archived_at.is_not_null())),
        Some(Some(at)) => {
            let at = at.micros();
            any = Box::new(
                any.or(conversation_states::archived_at
                    .is_null()
                    .or(conversation_states::archived_at.ne(at).assume_not_null())),
            );
        }
    }
    any
}

/// Changes the shared pinned message and the viewer's own state, each
/// only where it differs from what is stored (the service left out what
/// it saw unchanged; this holds under a race too). A change that wrote
/// nothing writes no event either.
pub(crate) fn update_conversation(
    conn: &mut Conn,
    viewer: ContactId,
    id: ConversationId,
    pinned: Option<PinnedMessageChange>,
    patch: MemberStatePatch,
    outbox: &Outbox,
) -> Result<ConversationView> {
    let (v, c) = (viewer.db(), id.db());
    if !is_member(conn, v, c)? {
        return Err(not_found());
    }
    let shared_changed = match pinned {
        Some(change) => change_pinned(conn, v, c, change)?,
        None => false,
    };
    let mut own_changed = false;
    if !patch.is_empty() {
        // Only the submitted columns change, also when two requests race.
        let changes = StateChangeset {
            is_pinned: patch.is_pinned,
            is_muted: patch.is_muted,
            archived_at: patch.archived_at.map(|a| a.map(Timestamp::micros)),
        };
        let fresh = StateRow::new(c, v, MemberState::default().patched(&patch));
        let upsert = diesel::insert_into(conversation_states::table)
            .values(&fresh)
            .on_conflict((
                conversation_states::conversation_id,
                conversation_states::contact_id,
            ))
            .do_update()
            .set(&changes);
        // `ON CONFLICT ... DO UPDATE ... WHERE`: a row that already has
        // the submitted values is left unwritten.
        own_changed = diesel::query_dsl::methods::FilterDsl::filter(upsert, state_differs(&patch))
            .execute(conn)?
            > 0;
    }
    let view = conversation_for(conn, viewer, id)?.ok_or_else(not_found)?;
    if !shared_changed && !own_changed {
        return Ok(view);
    }
    // The shared pinned message changed: a direct conversation's two
    // members hear of it with their own views; a group's members read
    // one event by group, its payload the shared attributes alone (the
    // actor's own view beside it, for the actor), so that a pin costs
    // the same rows whatever the group's size (docs/api.md, "Big groups").
    let each = match (shared_changed, view.conversation.group_id()) {
        (true, None) => Some(member_views(conn, &view.conversation)?),
        _ => None,
    };
    let shared = shared_changed && view.conversation.group_id().is_some();
    outbox::write(
        conn,
        outbox,
        &Written {
            view: Some(&view),
            member_views: each.as_deref(),
            shared_only: shared,
            ..Written::default()
        },
    )?;
    Ok(view)
}

pub(crate) fn delete_conversation(
    conn: &mut Conn,
    id: ConversationId,
    by: ContactId,
    outbox: &Outbox,
) -> Result<()> {
    // To the members it has before it goes; all rolled back below
    // when the deleter may not delete it.
    outbox::write(conn, outbox, &Written::default())?;
    // Messages, their reactions and attachments, and the members' states go
    // with it (ON DELETE CASCADE). The deleter must still be a member.
    let by = by.db();
    let n = diesel::delete(
        conversations::table
            .filter(conversations::id.eq(id.db()))
            .filter(visible_to!(by)),
    )
    .execute(conn)?;
    if n == 0 {
        return Err(not_found());
    }
    // Its earlier events keep nothing of it, nor of its messages
    // (docs/api.md "Limits"): found by the events' own columns, which
    // outlive the rows just deleted.
    outbox::scrub(conn, Deleted::Conversation(id.db()))?;
    Ok(())
}
