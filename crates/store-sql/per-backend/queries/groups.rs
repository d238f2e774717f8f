//! Groups and their members (in the order they joined).

use std::collections::HashSet;

use confab_domain::{
    AvatarUrl, Contact, ContactId, DomainError, Field, Group, GroupDescription, GroupId,
    GroupMember, GroupName, GroupParts, GroupRole, Page, Paged, Rule, Timestamp, FIRST_MEMBERS,
};
use confab_ports::{Completion, GroupChange, NewGroup, Outbox};
use diesel::dsl::{max, sql};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool};

use super::idempotency::complete;
use super::membership::count_known_contacts;
use super::outbox::{self, write_events, Deleted, Written};
use super::{Backend, Conn, Db, Result};
use confab_store_sql::error::{broken, corrupt, inconsistent};
use confab_store_sql::group_list;
use confab_store_sql::id::DbId;
use confab_store_sql::queries::paging::{fetch_size, finish_page, keyset, seek, Seek};
use confab_store_sql::queries::{distinct_except, not_found};
use confab_store_sql::rows::{
    contact_id, group_id, ts, ContactRow, DbKey, GroupChangeset, GroupMemberRow, GroupRow,
};
use confab_store_sql::schema::{contacts, group_members, groups};
use confab_store_sql::SqlBackend;

/// Contact ids per statement that lists them (well under every
/// database's limit on binds).
const MEMBERS_PER_STATEMENT: usize = 1_000;

/// A group's first [`FIRST_MEMBERS`] members, in the order they joined
/// (an index range, whatever the group's size).
fn first_members(conn: &mut Conn, g: DbId) -> Result<Vec<GroupMember>> {
    member_rows(
        group_members::table
            .inner_join(contacts::table)
            .filter(group_members::group_id.eq(g))
            .order((group_members::seq.asc(), group_members::contact_id.asc()))
            .limit(FIRST_MEMBERS as i64)
            .select((
                group_members::role,
                group_members::joined_at,
                ContactRow::as_select(),
            ))
            .load(conn)?,
    )
}

fn member_rows(rows: Vec<(String, i64, ContactRow)>) -> Result<Vec<GroupMember>> {
    rows.into_iter()
        .map(|(role, joined_at, contact)| {
            let role = GroupRole::parse(&role)
                .ok_or_else(|| inconsistent(format!("stored group role {role:?} is invalid")))?;
            Ok(GroupMember {
                contact: Contact::try_from(contact)?,
                role,
                joined_at: ts(joined_at),
            })
        })
        .collect()
}

/// A group's owners (a partial index: never its other members).
fn owners(conn: &mut Conn, g: DbId) -> Result<Vec<ContactId>> {
    Ok(group_members::table
        .filter(group_members::group_id.eq(g))
        .filter(group_members::role.eq(GroupRole::Owner.as_str()))
        .select(group_members::contact_id)
        .load::<DbId>(conn)?
        .into_iter()
        .map(contact_id)
        .collect())
}

/// Assembles the groups of `rows`, each with its first members and
/// owners (two index ranges per group: what a page of groups reads
/// does not grow with their sizes).
fn with_members(conn: &mut Conn, rows: Vec<GroupRow>) -> Result<Vec<Group>> {
    rows.into_iter()
        .map(|r| {
            let id = group_id(r.id);
            let first = first_members(conn, r.id)?;
            let owners = owners(conn, r.id)?;
            Group::new(GroupParts {
                id,
                name: GroupName::new(r.name).map_err(|e| corrupt("group name", e))?,
                description: GroupDescription::new(r.description)
                    .map_err(|e| corrupt("group description", e))?,
                avatar_url: AvatarUrl::new(r.avatar_url)
                    .map_err(|e| corrupt("group avatar_url", e))?,
                created_by: contact_id(r.created_by),
                created_at: ts(r.created_at),
                first_members: first,
                member_count: u64::try_from(r.member_count).unwrap_or(0),
                owners,
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

/// The position this transaction's events start at (members who join
/// in it see the group's events from there).
fn first_position(conn: &mut Conn) -> Result<i64> {
    Ok(diesel::select(sql::<BigInt>(
        <Backend as SqlBackend>::TXN_FIRST_POSITION_SQL,
    ))
    .get_result(conn)?)
}

/// Memberships of group `g` that end in this transaction (`ended`:
/// each member and the position their view began at) keep the
/// group's events up to and including this transaction's as a span.
/// Called after the transaction's events are written.
fn end_memberships(conn: &mut Conn, g: DbId, ended: &[(DbId, i64)]) -> Result<()> {
    use confab_store_sql::raw::{Bind, Sql};

    for chunk in ended.chunks(5_000) {
        let mut sql = Sql::default();
        let gm = sql.id(g);
        let rows: Vec<String> = chunk
            .iter()
            .map(|(c, from)| {
                let c = sql.id(*c);
                let from = sql.bind(Bind::Int(*from));
                format!(
                    "({c}, {gm}, {from}, {})",
                    <Backend as SqlBackend>::TXN_END_POSITION_SQL
                )
            })
            .collect();
        // A member who left and came back within one transaction's
        // position ends one span per stay: never the same key twice.
        sql.push(&format!(
            "INSERT INTO group_member_spans (contact_id, group_id, from_position, until_position) \
             VALUES {} ON CONFLICT DO NOTHING",
            rows.join(", ")
        ));
        sql.query::<Db>().execute(conn)?;
    }
    Ok(())
}

/// A page of group `id`'s members, oldest first, when `viewer` is one.
pub(crate) fn group_members_page(
    conn: &mut Conn,
    viewer: ContactId,
    id: GroupId,
    page: Page<ContactId>,
) -> Result<Option<Paged<GroupMember>>> {
    let g = id.db();
    let visible = diesel::select(diesel::dsl::exists(
        group_members::table.find((g, viewer.db())),
    ))
    .get_result::<bool>(conn)?;
    if !visible {
        return Ok(None);
    }
    members_page(conn, g, page).map(Some)
}

/// A page of group `g`'s members, in the order they joined (the group
/// members list's, and the server API's conversation members').
pub(super) fn members_page(
    conn: &mut Conn,
    g: DbId,
    page: Page<ContactId>,
) -> Result<Paged<GroupMember>> {
    let (limit, fetch) = fetch_size(&page);
    let seek = seek(page.cursor, |c: ContactId| {
        Ok(group_members::table
            .find((g, c.db()))
            .select((group_members::seq, group_members::contact_id))
            .first::<(i64, DbId)>(conn)
            .optional()?)
    })?;
    let backwards = seek.backwards();
    let q = group_members::table
        .inner_join(contacts::table)
        .filter(group_members::group_id.eq(g))
        .select((
            group_members::role,
            group_members::joined_at,
            ContactRow::as_select(),
        ))
        .limit(fetch)
        .into_boxed::<Db>();
    // Oldest first: the list's order is (seq, contact_id) ascending.
    let (seq, who) = (group_members::seq, group_members::contact_id);
    let q = match seek {
        Seek::First => q.order((seq.asc(), who.asc())),
        Seek::After((s, c)) => q
            .filter(seq.ge(s))
            .filter(seq.gt(s).or(seq.eq(s).and(who.gt(c))))
            .order((seq.asc(), who.asc())),
        Seek::Before((s, c)) => q
            .filter(seq.le(s))
            .filter(seq.lt(s).or(seq.eq(s).and(who.lt(c))))
            .order((seq.desc(), who.desc())),
    };
    let rows = q.load(conn)?;
    let (rows, has_more) = finish_page(rows, limit, backwards);
    Ok(Paged {
        items: member_rows(rows)?,
        has_more,
    })
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
    // The creator and the others: refused before anything is read
    // when there are too many.
    Group::check_size(Field::Members, members.len() as u64 + 1, group.max_members)?;
    if count_known_contacts(conn, &members)? != members.len() {
        return Err(DomainError::breaks(Field::Members, Rule::UnknownContacts).into());
    }
    let g = group.id.db();
    let from = first_position(conn)?;
    diesel::insert_into(groups::table)
        .values(&GroupRow {
            id: g,
            name: group.name.into_inner(),
            description: group.description.into_inner(),
            avatar_url: group.avatar_url.into_inner(),
            created_by: creator.db(),
            created_at: group.created_at.micros(),
            member_count: members.len() as i64 + 1,
        })
        .execute(conn)?;
    let owner = GroupMemberRow {
        group_id: g,
        contact_id: creator.db(),
        role: GroupRole::Owner.as_str(),
        seq: 1,
        joined_at: at.micros(),
        from_position: from,
    };
    let rows: Vec<GroupMemberRow> = std::iter::once(owner)
        .chain(members.into_iter().zip(2..).map(|(m, seq)| GroupMemberRow {
            group_id: g,
            contact_id: m,
            role: GroupRole::Member.as_str(),
            seq,
            joined_at: at.micros(),
            from_position: from,
        }))
        .collect();
    insert_members(conn, &rows)?;
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
    let details = GroupChangeset {
        name: change.name.map(GroupName::into_inner),
        description: change.description.map(GroupDescription::into_inner),
        avatar_url: change.avatar_url.map(AvatarUrl::into_inner),
    };
    let mut changed = false;
    if details.name.is_some() || details.description.is_some() || details.avatar_url.is_some() {
        // Written only where a detail differs (the service left out what
        // it saw unchanged; this holds under a race too): a change that
        // writes nothing has no event.
        let mut differs: Box<dyn BoxableExpression<groups::table, Db, SqlType = Bool>> =
            Box::new(sql::<Bool>("1 = 0"));
        if let Some(name) = &details.name {
            differs = Box::new(differs.or(groups::name.ne(name.clone())));
        }
        if let Some(description) = &details.description {
            differs = Box::new(differs.or(groups::description.ne(description.clone())));
        }
        if let Some(avatar) = &details.avatar_url {
            differs = Box::new(differs.or(groups::avatar_url.ne(avatar.clone())));
        }
        changed = diesel::update(groups::table.find(g).filter(differs))
            .set(&details)
            .execute(conn)?
            > 0;
    }

    // Each contact once (the service refuses lists that repeat one;
    // here a repeat is skipped like a member already in).
    let adds: Vec<DbId> = distinct_except(&change.add, None)
        .iter()
        .map(DbKey::db)
        .collect();
    let mut count_change: i64 = 0;
    if !adds.is_empty() {
        if count_known_contacts(conn, &adds)? != adds.len() {
            return Err(DomainError::breaks(Field::AddedMembers, Rule::UnknownContacts).into());
        }
        let mut already: Vec<DbId> = Vec::new();
        for chunk in adds.chunks(MEMBERS_PER_STATEMENT) {
            already.extend(
                group_members::table
                    .filter(group_members::group_id.eq(g))
                    .filter(group_members::contact_id.eq_any(chunk))
                    .select(group_members::contact_id)
                    .load::<DbId>(conn)?,
            );
        }
        let already: HashSet<DbId> = already.into_iter().collect();
        let next = next_member_seq(conn, g)?;
        let from = first_position(conn)?;
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
                from_position: from,
            })
            .collect();
        if !rows.is_empty() {
            insert_members(conn, &rows)?;
            count_change += rows.len() as i64;
            changed = true;
        }
    }

    let removes: Vec<DbId> = change.remove.iter().map(DbKey::db).collect();
    let mut removed: Vec<(DbId, i64)> = Vec::new();
    for chunk in removes.chunks(MEMBERS_PER_STATEMENT) {
        removed.extend(
            diesel::delete(
                group_members::table
                    .filter(group_members::group_id.eq(g))
                    .filter(group_members::contact_id.eq_any(chunk)),
            )
            .returning((group_members::contact_id, group_members::from_position))
            .get_results::<(DbId, i64)>(conn)?,
        );
    }
    if !removed.is_empty() {
        count_change -= removed.len() as i64;
        changed = true;
    }
    // Admins made and unmade: only members of the role before (the owner,
    // and those already of the role, are left as they are).
    for (list, from, to) in [
        (&change.add_admins, GroupRole::Member, GroupRole::Admin),
        (&change.remove_admins, GroupRole::Admin, GroupRole::Member),
    ] {
        let ids: Vec<DbId> = list.iter().map(DbKey::db).collect();
        for chunk in ids.chunks(MEMBERS_PER_STATEMENT) {
            let n = diesel::update(
                group_members::table
                    .filter(group_members::group_id.eq(g))
                    .filter(group_members::contact_id.eq_any(chunk))
                    .filter(group_members::role.eq(from.as_str())),
            )
            .set(group_members::role.eq(to.as_str()))
            .execute(conn)?;
            changed |= n > 0;
        }
    }
    if count_change != 0 {
        let count: i64 = diesel::update(groups::table.find(g))
            .set(groups::member_count.eq(groups::member_count + count_change))
            .returning(groups::member_count)
            .get_result(conn)?;
        // Only a change that adds can take a group past the limit (one
        // already past a lowered limit may still shrink).
        if count_change > 0 {
            Group::check_size(
                Field::AddedMembers,
                u64::try_from(count).unwrap_or(0),
                change.max_members,
            )?;
        }
    }
    let group = load_group(conn, g)?.ok_or_else(not_found)?;
    if changed {
        write_events(
            conn,
            &outbox.events,
            &*outbox.render,
            &Written {
                group: Some(&group),
                ..Written::default()
            },
        )?;
        // Those removed keep the group's events up to this change's
        // (they hear that they are out), never after.
        end_memberships(conn, g, &removed)?;
    }
    Ok(group)
}

/// The roles in group `id` of those of `contacts` who are members.
pub(crate) fn member_roles(
    conn: &mut Conn,
    id: GroupId,
    contacts: &[ContactId],
) -> Result<Vec<(ContactId, GroupRole)>> {
    let ids: Vec<DbId> = contacts.iter().map(DbKey::db).collect();
    let mut out = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(MEMBERS_PER_STATEMENT) {
        let rows: Vec<(DbId, String)> = group_members::table
            .filter(group_members::group_id.eq(id.db()))
            .filter(group_members::contact_id.eq_any(chunk))
            .select((group_members::contact_id, group_members::role))
            .load(conn)?;
        for (c, role) in rows {
            let role = GroupRole::parse(&role)
                .ok_or_else(|| inconsistent(format!("stored group role {role:?} is invalid")))?;
            out.push((contact_id(c), role));
        }
    }
    Ok(out)
}

/// Inserts member rows, in statements of a bounded number of binds.
fn insert_members(conn: &mut Conn, rows: &[GroupMemberRow]) -> Result<()> {
    for chunk in rows.chunks(MEMBERS_PER_STATEMENT) {
        diesel::insert_into(group_members::table)
            .values(chunk)
            .execute(conn)?;
    }
    Ok(())
}

pub(crate) fn delete_group(conn: &mut Conn, id: GroupId, outbox: &Outbox) -> Result<()> {
    // To the members it has before it goes (rolled back with it when
    // there is no such group); their memberships end with this
    // transaction's events, which they keep (one statement, whatever
    // the group's size).
    outbox::write(conn, outbox, &Written::default())?;
    let mut sql = confab_store_sql::raw::Sql::default();
    let g = sql.id(id.db());
    sql.push(&format!(
        "INSERT INTO group_member_spans (contact_id, group_id, from_position, until_position) \
         SELECT contact_id, group_id, from_position, {} FROM group_members WHERE group_id = {g} \
         ON CONFLICT DO NOTHING",
        <Backend as SqlBackend>::TXN_END_POSITION_SQL
    ));
    sql.query::<Db>().execute(conn)?;
    // The earlier events of its conversations and their messages
    // keep nothing of them (docs/api.md "Limits"): while the
    // conversations still say which are the group's.
    outbox::scrub(conn, Deleted::GroupConversations(id.db()))?;
    // Its conversations (and their messages) and memberships cascade.
    let n = diesel::delete(groups::table.find(id.db())).execute(conn)?;
    if n == 0 {
        return Err(not_found());
    }
    Ok(())
}
