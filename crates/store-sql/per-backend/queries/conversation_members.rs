//! A conversation's members as the server API lists them (docs/api.md
//! "Server API: from an app's backend"): each with their mute state and unread count, for push
//! notifications. A page reads its members, then their state rows, in a
//! fixed number of statements whatever the conversation's size.

use std::collections::HashMap;

use confab_domain::{Contact, ContactId, ConversationId, Cursor, Page, Paged};
use confab_ports::ConversationMember;
use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::BigInt;

use super::groups::members_page;
use super::{Conn, Result};
use confab_store_sql::id::DbId;
use confab_store_sql::rows::{unread_sql, ContactRow, DbKey};
use confab_store_sql::schema::{contacts, conversation_states, conversations, message_gaps};

pub(crate) fn conversation_members(
    conn: &mut Conn,
    id: ConversationId,
    page: Page<ContactId>,
) -> Result<Option<Paged<ConversationMember>>> {
    let c = id.db();
    type Row = (Option<DbId>, DbId, Option<DbId>, i64, i64);
    let Some((group, creator, peer, seq, deleted)) = conversations::table
        .find(c)
        .select((
            conversations::group_id,
            conversations::creator_id,
            conversations::peer_id,
            conversations::message_seq,
            conversations::deleted_count,
        ))
        .first::<Row>(conn)
        .optional()?
    else {
        return Ok(None);
    };
    let (members, has_more) = match group {
        Some(g) => {
            let members = members_page(conn, g, page)?;
            let contacts = members.items.into_iter().map(|m| m.contact).collect();
            (contacts, members.has_more)
        }
        None => direct_page(conn, [Some(creator), peer].into_iter().flatten(), page)?,
    };
    let ids: Vec<DbId> = members.iter().map(|m| m.id().db()).collect();
    // The members with a state row: their own figures.
    let states: HashMap<DbId, (bool, i64)> = conversation_states::table
        .inner_join(conversations::table)
        .filter(conversation_states::conversation_id.eq(c))
        .filter(conversation_states::contact_id.eq_any(&ids))
        .select((
            conversation_states::contact_id,
            conversation_states::is_muted,
            sql::<BigInt>(&unread_sql("conversations", "conversation_states")),
        ))
        .load::<(DbId, bool, i64)>(conn)?
        .into_iter()
        .map(|(who, muted, unread)| (who, (muted, unread)))
        .collect();
    // The others never changed anything there: not muted, every message
    // unread but the deleted ones (`unread_sql` without a state row).
    let stateless = if states.len() < ids.len() {
        stateless_unread(conn, c, seq, deleted)?
    } else {
        0
    };
    let items = members
        .into_iter()
        .map(|contact| {
            let (is_muted, unread) = states
                .get(&contact.id().db())
                .copied()
                .unwrap_or((false, stateless));
            ConversationMember {
                contact,
                is_muted,
                unread_count: u64::try_from(unread).unwrap_or(0),
            }
        })
        .collect();
    Ok(Some(Paged { items, has_more }))
}

/// The unread count of a member without a state row: every message of
/// the conversation (`seq` numbered, `deleted` of them deleted) but the
/// deleted ones, as [`unread_sql`] counts it.
fn stateless_unread(conn: &mut Conn, c: DbId, seq: i64, deleted: i64) -> Result<i64> {
    if deleted == 0 {
        return Ok(seq);
    }
    let gaps: i64 = message_gaps::table
        .filter(message_gaps::conversation_id.eq(c))
        .count()
        .get_result(conn)?;
    Ok(seq - gaps)
}

/// A page of a direct conversation's two members (creator, then peer).
fn direct_page(
    conn: &mut Conn,
    members: impl Iterator<Item = DbId>,
    page: Page<ContactId>,
) -> Result<(Vec<Contact>, bool)> {
    let members: Vec<DbId> = members.collect();
    let at =
        |who: ContactId| {
            members.iter().position(|m| *m == who.db()).ok_or(
                confab_store_sql::error::Error::Store(confab_ports::StoreError::CursorNotFound),
            )
        };
    let range = match page.cursor {
        None => 0..members.len(),
        Some(Cursor::After(who)) => at(who)? + 1..members.len(),
        Some(Cursor::Before(who)) => 0..at(who)?,
    };
    let limit = usize::from(page.limit.get());
    let (range, has_more) = match page.cursor {
        Some(Cursor::Before(_)) if range.len() > limit => (range.end - limit..range.end, true),
        _ if range.len() > limit => (range.start..range.start + limit, true),
        _ => (range, false),
    };
    let wanted = &members[range];
    let mut rows: Vec<ContactRow> = contacts::table
        .filter(contacts::id.eq_any(wanted))
        .select(ContactRow::as_select())
        .load(conn)?;
    rows.sort_by_key(|r| wanted.iter().position(|m| *m == r.id));
    let contacts = rows
        .into_iter()
        .map(Contact::try_from)
        .collect::<Result<Vec<_>>>()?;
    Ok((contacts, has_more))
}

pub(crate) fn direct_conversation_between(
    conn: &mut Conn,
    a: ContactId,
    b: ContactId,
) -> Result<Option<ConversationId>> {
    let (a, b) = (a.db(), b.db());
    Ok(conversations::table
        .filter(conversations::group_id.is_null())
        .filter(
            conversations::creator_id
                .eq(a)
                .and(conversations::peer_id.eq(b))
                .or(conversations::creator_id
                    .eq(b)
                    .and(conversations::peer_id.eq(a))),
        )
        .order((conversations::created_at.asc(), conversations::id.asc()))
        .select(conversations::id)
        .first::<DbId>(conn)
        .optional()?
        .map(confab_store_sql::rows::conversation_id))
}
