//! The statements of the contact queries ([`super`]), each named
//! (`#[auto_type]`) so that [`ContactStatements`] lists them once as what a
//! backend's connection must run ([`crate::run`]).

use diesel::backend::Backend;
use diesel::dsl::{auto_type, AsSelect};
use diesel::expression::SqlLiteral;
use diesel::prelude::*;
use diesel::sql_types::Bool;

use crate::id::DbId;
use crate::rows::{ContactChangeset, ContactRow};
use crate::run::{Exec, Run};
use crate::schema::contacts;

/// Stores a new contact.
#[auto_type]
pub fn insert_contact(row: ContactRow) -> _ {
    diesel::dsl::insert_into(contacts::table).values(row)
}

/// The contacts not being erased.
#[auto_type]
pub fn not_erasing() -> _ {
    let no: bool = false;
    contacts::erasing.eq(no)
}

/// The contacts not being erased whose folded username is `folded`.
#[auto_type]
pub fn not_erasing_named(folded: String) -> _ {
    let not_erasing: not_erasing = not_erasing();
    not_erasing.and(contacts::username_folded.eq(folded))
}

/// The contact `id`, unless it is being erased.
#[auto_type]
pub fn contact_by_id<Db: Backend>(id: DbId) -> _ {
    let not_erasing: not_erasing = not_erasing();
    let row: AsSelect<ContactRow, Db> = ContactRow::as_select();
    let one: i64 = 1;
    contacts::table
        .find(id)
        .filter(not_erasing)
        .select(row)
        .limit(one)
}

/// The contact whose folded username is `folded`, unless it is being
/// erased.
#[auto_type]
pub fn contact_by_folded_name<Db: Backend>(folded: String) -> _ {
    let not_erasing: not_erasing = not_erasing();
    let row: AsSelect<ContactRow, Db> = ContactRow::as_select();
    let one: i64 = 1;
    contacts::table
        .filter(contacts::username_folded.eq(folded))
        .filter(not_erasing)
        .select(row)
        .limit(one)
}

/// No change (the start of [`phone_differs`] and the others).
#[auto_type]
fn nothing_differs() -> _ {
    let never: SqlLiteral<Bool> = diesel::dsl::sql::<Bool>("1 = 0");
    never
}

/// The stored phone number is not `phone`.
#[auto_type]
pub fn phone_differs(phone: String) -> _ {
    let nothing: nothing_differs = nothing_differs();
    nothing.or(contacts::phone_number.ne(phone))
}

/// The stored avatar is not `avatar`.
#[auto_type]
pub fn avatar_differs(avatar: String) -> _ {
    let nothing: nothing_differs = nothing_differs();
    nothing.or(contacts::avatar_url.ne(avatar))
}

/// The stored phone number is not `phone`, or the avatar not `avatar`.
#[auto_type]
pub fn phone_or_avatar_differs(phone: String, avatar: String) -> _ {
    let phone: phone_differs = phone_differs(phone);
    phone.or(contacts::avatar_url.ne(avatar))
}

/// Changes the contact `id`, unless it is being erased, where its phone
/// number is not `phone`.
#[auto_type]
pub fn change_phone(id: DbId, phone: String, changes: ContactChangeset) -> _ {
    let not_erasing: not_erasing = not_erasing();
    let differs: phone_differs = phone_differs(phone);
    diesel::dsl::update(contacts::table.find(id).filter(not_erasing).filter(differs)).set(changes)
}

/// Changes the contact `id`, unless it is being erased, where its avatar
/// is not `avatar`.
#[auto_type]
pub fn change_avatar(id: DbId, avatar: String, changes: ContactChangeset) -> _ {
    let not_erasing: not_erasing = not_erasing();
    let differs: avatar_differs = avatar_differs(avatar);
    diesel::dsl::update(contacts::table.find(id).filter(not_erasing).filter(differs)).set(changes)
}

/// Changes the contact `id`, unless it is being erased, where its phone
/// number is not `phone` or its avatar not `avatar`.
#[auto_type]
pub fn change_phone_or_avatar(
    id: DbId,
    phone: String,
    avatar: String,
    changes: ContactChangeset,
) -> _ {
    let not_erasing: not_erasing = not_erasing();
    let differs: phone_or_avatar_differs = phone_or_avatar_differs(phone, avatar);
    diesel::dsl::update(contacts::table.find(id).filter(not_erasing).filter(differs)).set(changes)
}

/// Moves the contact's last activity forward to `at`.
#[auto_type]
pub fn touch_contact(id: DbId, at: i64) -> _ {
    diesel::dsl::update(
        contacts::table
            .filter(contacts::id.eq(id))
            .filter(contacts::last_active_at.lt(at)),
    )
    .set(contacts::last_active_at.eq(at))
}

/// The sort key of the contact `id`.
#[auto_type]
pub fn contact_key(id: DbId) -> _ {
    let one: i64 = 1;
    contacts::table
        .find(id)
        .select((contacts::created_at, contacts::id))
        .limit(one)
}

/// The newest `fetch` contacts not being erased, newest first (the keyset order of
/// `crate::keyset!`).
#[auto_type]
pub fn contacts_from_newest<Db: Backend>(fetch: i64) -> _ {
    let listed: not_erasing = not_erasing();
    let row: AsSelect<ContactRow, Db> = ContactRow::as_select();
    contacts::table
        .filter(listed)
        .order((contacts::created_at.desc(), contacts::id.desc()))
        .select(row)
        .limit(fetch)
}

/// The `fetch` contacts not being erased after the key (`at`, `id`), newest first
/// (`crate::keyset!`).
#[auto_type]
pub fn contacts_after<Db: Backend>(at: i64, id: DbId, fetch: i64) -> _ {
    let listed: not_erasing = not_erasing();
    let row: AsSelect<ContactRow, Db> = ContactRow::as_select();
    contacts::table
        .filter(listed)
        .filter(contacts::created_at.le(at))
        .filter(
            contacts::created_at
                .lt(at)
                .or(contacts::created_at.eq(at).and(contacts::id.lt(id))),
        )
        .order((contacts::created_at.desc(), contacts::id.desc()))
        .select(row)
        .limit(fetch)
}

/// The `fetch` contacts not being erased before the key (`at`, `id`), oldest first
/// (`crate::keyset!`).
#[auto_type]
pub fn contacts_before<Db: Backend>(at: i64, id: DbId, fetch: i64) -> _ {
    let listed: not_erasing = not_erasing();
    let row: AsSelect<ContactRow, Db> = ContactRow::as_select();
    contacts::table
        .filter(listed)
        .filter(contacts::created_at.ge(at))
        .filter(
            contacts::created_at
                .gt(at)
                .or(contacts::created_at.eq(at).and(contacts::id.gt(id))),
        )
        .order((contacts::created_at.asc(), contacts::id.asc()))
        .select(row)
        .limit(fetch)
}

/// The newest `fetch` contacts not being erased named `folded`, newest first (the keyset order of
/// `crate::keyset!`).
#[auto_type]
pub fn named_contacts_from_newest<Db: Backend>(folded: String, fetch: i64) -> _ {
    let listed: not_erasing_named = not_erasing_named(folded);
    let row: AsSelect<ContactRow, Db> = ContactRow::as_select();
    contacts::table
        .filter(listed)
        .order((contacts::created_at.desc(), contacts::id.desc()))
        .select(row)
        .limit(fetch)
}

/// The `fetch` contacts not being erased named `folded` after the key (`at`, `id`), newest first
/// (`crate::keyset!`).
#[auto_type]
pub fn named_contacts_after<Db: Backend>(folded: String, at: i64, id: DbId, fetch: i64) -> _ {
    let listed: not_erasing_named = not_erasing_named(folded);
    let row: AsSelect<ContactRow, Db> = ContactRow::as_select();
    contacts::table
        .filter(listed)
        .filter(contacts::created_at.le(at))
        .filter(
            contacts::created_at
                .lt(at)
                .or(contacts::created_at.eq(at).and(contacts::id.lt(id))),
        )
        .order((contacts::created_at.desc(), contacts::id.desc()))
        .select(row)
        .limit(fetch)
}

/// The `fetch` contacts not being erased named `folded` before the key (`at`, `id`), oldest first
/// (`crate::keyset!`).
#[auto_type]
pub fn named_contacts_before<Db: Backend>(folded: String, at: i64, id: DbId, fetch: i64) -> _ {
    let listed: not_erasing_named = not_erasing_named(folded);
    let row: AsSelect<ContactRow, Db> = ContactRow::as_select();
    contacts::table
        .filter(listed)
        .filter(contacts::created_at.ge(at))
        .filter(
            contacts::created_at
                .gt(at)
                .or(contacts::created_at.eq(at).and(contacts::id.gt(id))),
        )
        .order((contacts::created_at.asc(), contacts::id.asc()))
        .select(row)
        .limit(fetch)
}

/// Every statement the contact queries run, as capabilities of a
/// connection whose backend is `Db` (see [`crate::run`]).
pub trait ContactStatements<Db: Backend>:
    Exec<insert_contact>
    + Run<contact_by_id<Db>, ContactRow>
    + Run<contact_by_folded_name<Db>, ContactRow>
    + Exec<change_phone>
    + Exec<change_avatar>
    + Exec<change_phone_or_avatar>
    + Exec<touch_contact>
    + Run<contact_key, (i64, DbId)>
    + Run<contacts_from_newest<Db>, ContactRow>
    + Run<contacts_after<Db>, ContactRow>
    + Run<contacts_before<Db>, ContactRow>
    + Run<named_contacts_from_newest<Db>, ContactRow>
    + Run<named_contacts_after<Db>, ContactRow>
    + Run<named_contacts_before<Db>, ContactRow>
{
}

impl<Db: Backend, C> ContactStatements<Db> for C where
    C: Exec<insert_contact>
        + Run<contact_by_id<Db>, ContactRow>
        + Run<contact_by_folded_name<Db>, ContactRow>
        + Exec<change_phone>
        + Exec<change_avatar>
        + Exec<change_phone_or_avatar>
        + Exec<touch_contact>
        + Run<contact_key, (i64, DbId)>
        + Run<contacts_from_newest<Db>, ContactRow>
        + Run<contacts_after<Db>, ContactRow>
        + Run<contacts_before<Db>, ContactRow>
        + Run<named_contacts_from_newest<Db>, ContactRow>
        + Run<named_contacts_after<Db>, ContactRow>
        + Run<named_contacts_before<Db>, ContactRow>
{
}

#[cfg(all(test, feature = "postgres", feature = "sqlite"))]
mod tests {
    use diesel::debug_query;
    use diesel::pg::Pg;
    use diesel::prelude::*;
    use diesel::sqlite::Sqlite;

    use crate::id::DbId;
    use crate::queries::paging::Seek;
    use crate::rows::ContactRow;
    use crate::schema::contacts;

    const AT: i64 = 5;
    const FETCH: i64 = 11;

    fn id() -> DbId {
        DbId::from(uuid::Uuid::max())
    }

    /// The seeks of a page, by number: from the newest, after, before.
    fn seek(n: usize) -> Seek<(i64, DbId)> {
        match n {
            0 => Seek::First,
            1 => Seek::After((AT, id())),
            _ => Seek::Before((AT, id())),
        }
    }

    /// The list as it was built at run time (a boxed query, `keyset!`),
    /// as PostgreSQL's text and binds.
    fn boxed_pg(name: Option<&str>, n: usize) -> String {
        let mut q = contacts::table
            .filter(contacts::erasing.eq(false))
            .into_boxed::<Pg>();
        if let Some(name) = name {
            q = q.filter(contacts::username_folded.eq(name.to_owned()));
        }
        let q = crate::keyset!(q, contacts::created_at, contacts::id, seek(n))
            .select(ContactRow::as_select())
            .limit(FETCH);
        debug_query::<Pg, _>(&q).to_string()
    }

    /// As [`boxed_pg`], as SQLite's.
    fn boxed_sqlite(name: Option<&str>, n: usize) -> String {
        let mut q = contacts::table
            .filter(contacts::erasing.eq(false))
            .into_boxed::<Sqlite>();
        if let Some(name) = name {
            q = q.filter(contacts::username_folded.eq(name.to_owned()));
        }
        let q = crate::keyset!(q, contacts::created_at, contacts::id, seek(n))
            .select(ContactRow::as_select())
            .limit(FETCH);
        debug_query::<Sqlite, _>(&q).to_string()
    }

    /// The list's pages written out are the statements the boxed list
    /// made, text and binds, on both databases.
    #[test]
    fn the_pages_are_the_boxed_lists_own() {
        let name = || "ann".to_owned();
        assert_eq!(
            debug_query::<Pg, _>(&super::contacts_from_newest::<Pg>(FETCH)).to_string(),
            boxed_pg(None, 0)
        );
        assert_eq!(
            debug_query::<Pg, _>(&super::contacts_after::<Pg>(AT, id(), FETCH)).to_string(),
            boxed_pg(None, 1)
        );
        assert_eq!(
            debug_query::<Pg, _>(&super::contacts_before::<Pg>(AT, id(), FETCH)).to_string(),
            boxed_pg(None, 2)
        );
        assert_eq!(
            debug_query::<Pg, _>(&super::named_contacts_from_newest::<Pg>(name(), FETCH))
                .to_string(),
            boxed_pg(Some("ann"), 0)
        );
        assert_eq!(
            debug_query::<Pg, _>(&super::named_contacts_after::<Pg>(name(), AT, id(), FETCH))
                .to_string(),
            boxed_pg(Some("ann"), 1)
        );
        assert_eq!(
            debug_query::<Pg, _>(&super::named_contacts_before::<Pg>(name(), AT, id(), FETCH))
                .to_string(),
            boxed_pg(Some("ann"), 2)
        );
        assert_eq!(
            debug_query::<Sqlite, _>(&super::contacts_from_newest::<Sqlite>(FETCH)).to_string(),
            boxed_sqlite(None, 0)
        );
        assert_eq!(
            debug_query::<Sqlite, _>(&super::contacts_after::<Sqlite>(AT, id(), FETCH)).to_string(),
            boxed_sqlite(None, 1)
        );
        assert_eq!(
            debug_query::<Sqlite, _>(&super::contacts_before::<Sqlite>(AT, id(), FETCH))
                .to_string(),
            boxed_sqlite(None, 2)
        );
        assert_eq!(
            debug_query::<Sqlite, _>(&super::named_contacts_from_newest::<Sqlite>(name(), FETCH))
                .to_string(),
            boxed_sqlite(Some("ann"), 0)
        );
        assert_eq!(
            debug_query::<Sqlite, _>(&super::named_contacts_after::<Sqlite>(
                name(),
                AT,
                id(),
                FETCH
            ))
            .to_string(),
            boxed_sqlite(Some("ann"), 1)
        );
        assert_eq!(
            debug_query::<Sqlite, _>(&super::named_contacts_before::<Sqlite>(
                name(),
                AT,
                id(),
                FETCH
            ))
            .to_string(),
            boxed_sqlite(Some("ann"), 2)
        );
    }
}
