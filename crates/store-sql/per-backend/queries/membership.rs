//! Who sees what: the membership predicate every visible list and lookup is
//! built on, and the existence checks of the write paths.
//!
//! The list macros build boxed queries for the backend `Db` in scope where
//! they are used; they are macros because diesel's expression types are
//! unnameable.

use diesel::dsl::exists;
use diesel::prelude::*;

use super::{Conn, Result};
use confab_store_sql::id::DbId;
use confab_store_sql::schema::{contacts, conversations};
use confab_store_sql::visible_to;

pub(super) fn is_member(conn: &mut Conn, viewer: DbId, conversation: DbId) -> Result<bool> {
    Ok(diesel::select(exists(
        conversations::table
            .filter(conversations::id.eq(conversation))
            .filter(visible_to!(viewer)),
    ))
    .get_result(conn)?)
}

pub(super) fn contact_exists(conn: &mut Conn, id: DbId) -> Result<bool> {
    Ok(diesel::select(exists(contacts::table.find(id))).get_result(conn)?)
}

/// How many of `ids` (distinct) are existing contacts.
pub(super) fn count_known_contacts(conn: &mut Conn, ids: &[DbId]) -> Result<usize> {
    if ids.is_empty() {
        return Ok(0);
    }
    let known: Vec<DbId> = contacts::table
        .filter(contacts::id.eq_any(ids))
        .select(contacts::id)
        .load(conn)?;
    Ok(known.len())
}

/// Whether the viewer `v` (a marker of a `confab_store_sql::raw::Sql`) is a
/// member of the conversation row `conv` (a table or its alias):
/// [`visible_to`] written out (a conversation being deleted is no one's).
pub(crate) fn member_of(conv: &str, v: &str) -> String {
    format!(
        "(NOT {conv}.deleting AND \
         (({conv}.group_id IS NULL AND ({conv}.creator_id = {v} OR {conv}.peer_id = {v})) \
          OR {conv}.group_id IN (SELECT group_id FROM group_members WHERE contact_id = {v})))"
    )
}
