//! Groups and their members (in the order they joined).

use std::collections::HashMap;

use confab_domain::Audience;
use confab_domain::{
    AvatarUrl, Contact, ContactId, DomainError, Field, Group, GroupDescription, GroupId,
    GroupMember, GroupName, GroupParts, GroupRole, MemberState, Page, Paged, Rule, Timestamp,
};
use confab_ports::{Completion, GroupChange, NewGroup, Outbox};
use diesel::dsl::max;
use diesel::prelude::*;

use super::idempotency::complete;
use super::membership::count_known_contacts;
use super::outbox::{self, write_events, Deleted, Written};
use super::{Backend, Conn, Db, Result};
use confab_store_sql::error::{broken, corrupt, inconsistent};
use confab_store_sql::group_list;
use confab_store_sql::id::DbId;
use confab_store_sql::queries::paging::{fetch_size, finish_page, keyset, seek};
use confab_store_sql::queries::{distinct_except, not_found};
use confab_store_sql::rows::{
    contact_id, group_id, ts, ContactRow, DbKey, GroupChangeset, GroupMemberRow, GroupRow, StateRow,
};
use confab_store_sql::schema::{
    contacts, conversation_states, conversations, group_members, groups, messages,
};
use confab_store_sql::SqlBackend as _;

/// Loads the members of all `rows` with one query and assembles the groups.
fn with_members(conn: &mut Conn, rows: Vec<GroupRow>) -> Result<Vec<Group>> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<DbId> = rows.iter().map(|r| r.id).collect();
    let member_rows: Vec<(DbId, String, ContactRow)> = group_members::table
        .inner_join(contacts::table)
        .filter(group_members::group_id.eq_any(&ids))
        .order((
            group_members::group_id.asc(),
            group_members::seq.asc(),
            group_members::contact_id.asc(),
        ))
        .select((
            group_members::group_id,
            group_members::role,
            ContactRow::as_select(),
        ))
        .load(conn)?;
    let mut members_of: HashMap<DbId, Vec<GroupMember>> = HashMap::new();
    for (group, role, contact) in member_rows {
        let role = GroupRole::parse(&role)
            .ok_or_else(|| inconsistent(format!("stored group role {role:?} is invalid")))?;
        members_of.entry(group).or_default().push(GroupMember {
            contact: Contact::try_from(contact)?,
            role,
        });
    }
    rows.into_iter()
        .map(|r| {
            let id = group_id(r.id);
            Group::new(GroupParts {
                id,
                name: GroupName::new(r.name).map_err(|e| corrupt("group name", e))?,
                description: GroupDescription::new(r.description)
                    .map_err(|e| corrupt("group description", e))?,
                avatar_url: AvatarUrl::new(r.avatar_url)
                    .map_err(|e| corrupt("group avatar_url", e))?,
                created_by: contact_id(r.created_by),
                created_at: ts(r.created_at),
                members: members_of.remove(&r.id).unwrap_or_default(),
            })
            .map_err(|e| broken(format!("group {id}"), e))
        })
        .collect()
}

fn load_group(conn: &mut Conn, id: DbId) -> Result<Option<Group>> {
    let rows: Vec<GroupRow> = groups::table
        .find(id)
        .select(GroupRow::as_select())
        .load(conn)?;
    Ok(with_members(conn, rows)?.pop())
}

fn next_member_seq(conn: &mut Conn, group: DbId) -> Result<i64> {
    let last: Option<i64> = group_members::table
        .filter(group_members::group_id.eq(group))
        .select(max(group_members::seq))
        .first(conn)?;
    Ok(last.map_or(1, |s| s + 1))
}

pub(crate) fn create_group(
    conn: &mut Conn,
    group: NewGroup,
    at: Timestamp,
    outbox: &Outbox,
    completion: Option<Completion<Group>>,
) -> Result<Group> {
    let creator = group.created_by;
    let members: Vec<DbId> = distinct_except(&group.member_ids, Some(creator))
        .iter()
        .map(DbKey::db)
        .collect();
    if count_known_contacts(conn, &members)? != members.len() {
        return Err(DomainError::breaks(Field::Members, Rule::UnknownContacts).into());
    }
    let g = group.id.db();
    diesel::insert_into(groups::table)
        .values(&GroupRow {
            id: g,
            name: group.name.into_inner(),
            description: group.description.into_inner(),
            avatar_url: group.avatar_url.into_inner(),
            created_by: creator.db(),
            created_at: group.created_at.micros(),
        })
        .execute(conn)?;
    let owner = GroupMemberRow {
        group_id: g,
        contact_id: creator.db(),
        role: GroupRole::Owner.as_str(),
        seq: 1,
        joined_at: at.micros(),
    };
    let rows: Vec<GroupMemberRow> = std::iter::once(owner)
        .chain(members.into_iter().zip(2..).map(|(m, seq)| GroupMemberRow {
            group_id: g,
            contact_id: m,
            role: GroupRole::Member.as_str(),
            seq,
            joined_at: at.micros(),
        }))
        .collect();
    diesel::insert_into(group_members::table)
        .values(&rows)
        .execute(conn)?;
    let created = load_group(conn, g)?.ok_or_else(not_found)?;
    outbox::write(
        conn,
        outbox,
        &Written {
            group: Some(&created),
            ..Written::default()
        },
    )?;
    complete(conn, completion, &created)?;
    Ok(created)
}

pub(crate) fn group_for(conn: &mut Conn, viewer: ContactId, id: GroupId) -> Result<Option<Group>> {
    let rows: Vec<GroupRow> = group_list!(viewer.db())
        .filter(groups::id.eq(id.db()))
        .select(GroupRow::as_select())
        .load(conn)?;
    Ok(with_members(conn, rows)?.pop())
}

pub(crate) fn list_groups(
    conn: &mut Conn,
    viewer: ContactId,
    page: Page<GroupId>,
) -> Result<Paged<Group>> {
    let v = viewer.db();
    let (limit, fetch) = fetch_size(&page);
    let seek = seek(page.cursor, |id: GroupId| {
        Ok(group_list!(v)
            .filter(groups::id.eq(id.db()))
            .select((groups::created_at, groups::id))
            .first::<(i64, DbId)>(conn)
            .optional()?)
    })?;
    let backwards = seek.backwards();
    let rows: Vec<GroupRow> = keyset!(group_list!(v), groups::created_at, groups::id, seek)
        .select(GroupRow::as_select())
        .limit(fetch)
        .load(conn)?;
    let (rows, has_more) = finish_page(rows, limit, backwards);
    Ok(Paged {
        items: with_members(conn, rows)?,
        has_more,
    })
}

pub(crate) fn update_group(
    conn: &mut Conn,
    id: GroupId,
    change: GroupChange,
    at: Timestamp,
    outbox: &Outbox,
) -> Result<Group> {
    let g = id.db();
    // The row lock serializes membership changes (and their join order).
    if !Backend::lock_group(conn, g)? {
        return Err(not_found());
    }
    let mut changed =
        change.name.is_some() || change.description.is_some() || change.avatar_url.is_some();
    if changed {
        diesel::update(groups::table.find(g))
            .set(&GroupChangeset {
                name: change.name.map(GroupName::into_inner),
                description: change.description.map(GroupDescription::into_inner),
                avatar_url: change.avatar_url.map(AvatarUrl::into_inner),
            })
            .execute(conn)?;
    }

    let adds: Vec<DbId> = distinct_except(&change.add, None)
        .iter()
        .map(DbKey::db)
        .collect();
    if !adds.is_empty() {
        if count_known_contacts(conn, &adds)? != adds.len() {
            return Err(DomainError::breaks(Field::AddedMembers, Rule::UnknownContacts).into());
        }
        let already: Vec<DbId> = group_members::table
            .filter(group_members::group_id.eq(g))
            .filter(group_members::contact_id.eq_any(&adds))
            .select(group_members::contact_id)
            .load(conn)?;
        let next = next_member_seq(conn, g)?;
        let rows: Vec<GroupMemberRow> = adds
            .into_iter()
            .filter(|c| !already.contains(c))
            .zip(next..)
            .map(|(c, seq)| GroupMemberRow {
                group_id: g,
                contact_id: c,
                role: GroupRole::Member.as_str(),
                seq,
                joined_at: at.micros(),
            })
            .collect();
        if !rows.is_empty() {
            diesel::insert_into(group_members::table)
                .values(&rows)
                .execute(conn)?;
            let joined: Vec<DbId> = rows.iter().map(|r| r.contact_id).collect();
            give_states(conn, g, &joined)?;
            changed = true;
        }
    }

    let removes: Vec<DbId> = change.remove.iter().map(DbKey::db).collect();
    let mut removed: Vec<DbId> = Vec::new();
    if !removes.is_empty() {
        removed = diesel::delete(
            group_members::table
                .filter(group_members::group_id.eq(g))
                .filter(group_members::contact_id.eq_any(&removes)),
        )
        .returning(group_members::contact_id)
        .get_results(conn)?;
        changed |= !removed.is_empty();
    }
    let group = load_group(conn, g)?.ok_or_else(not_found)?;
    if changed {
        // Of those asked to be removed, only who really was a member
        // hears of it: never a stranger.
        let events: Vec<_> = outbox
            .events
            .iter()
            .cloned()
            .map(|mut e| {
                if let Audience::GroupMembers { also, .. } = &mut e.audience {
                    also.retain(|c| removed.contains(&c.db()));
                }
                e
            })
            .collect();
        write_events(
            conn,
            &events,
            &*outbox.render,
            &Written {
                group: Some(&group),
                ..Written::default()
            },
        )?;
    }
    Ok(group)
}

/// Members who joined get a state row in each of the group's
/// conversations, with their unread count: every message from others
/// after they last opened it (all, if never; a member who left and
/// came back keeps the state it had).
fn give_states(conn: &mut Conn, g: DbId, joined: &[DbId]) -> Result<()> {
    let conversation_ids: Vec<DbId> = conversations::table
        .filter(conversations::group_id.eq(g))
        .select(conversations::id)
        .load(conn)?;
    if conversation_ids.is_empty() {
        return Ok(());
    }
    let rows: Vec<StateRow> = conversation_ids
        .iter()
        .flat_map(|c| {
            joined
                .iter()
                .map(|m| StateRow::new(*c, *m, MemberState::default()))
        })
        .collect();
    diesel::insert_into(conversation_states::table)
        .values(&rows)
        .on_conflict_do_nothing()
        .execute(conn)?;
    let unread = messages::table
        .filter(messages::conversation_id.eq(conversation_states::conversation_id))
        .filter(messages::sender_id.ne(conversation_states::contact_id))
        .filter(
            conversation_states::last_opened_at
                .is_null()
                .or(messages::created_at
                    .nullable()
                    .gt(conversation_states::last_opened_at)),
        )
        .count()
        .single_value()
        .assume_not_null();
    diesel::update(
        conversation_states::table
            .filter(conversation_states::contact_id.eq_any(joined))
            .filter(conversation_states::conversation_id.eq_any(&conversation_ids)),
    )
    .set(conversation_states::unread_count.eq(unread))
    .execute(conn)?;
    Ok(())
}

pub(crate) fn delete_group(conn: &mut Conn, id: GroupId, outbox: &Outbox) -> Result<()> {
    // To the members it has before it goes (rolled back with it when
    // there is no such group).
    outbox::write(conn, outbox, &Written::default())?;
    // The earlier events of its conversations and their messages
    // keep nothing of them (API.md section 9): while the
    // conversations still say which are the group's.
    outbox::scrub(conn, Deleted::GroupConversations(id.db()))?;
    // Its conversations (and their messages) and memberships cascade.
    let n = diesel::delete(groups::table.find(id.db())).execute(conn)?;
    if n == 0 {
        return Err(not_found());
    }
    Ok(())
}
