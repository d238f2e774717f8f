//! Contacts: the users of the service.

use confab_domain::{Contact, ContactId, ContactProfilePatch, Page, Paged, Timestamp};
use confab_ports::{Outbox, StoreError};
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel::sql_types::Bool;

use super::outbox::{self, Written};
use super::{Conn, Db, Result};
use confab_store_sql::id::DbId;
use confab_store_sql::keyset;
use confab_store_sql::queries::not_found;
use confab_store_sql::queries::paging::{fetch_size, finish_page, seek};
use confab_store_sql::rows::{ContactChangeset, ContactRow, DbKey};
use confab_store_sql::schema::contacts;

pub(crate) fn create_contact(
    conn: &mut Conn,
    contact: Contact,
    outbox: &Outbox,
) -> Result<Contact> {
    let inserted = diesel::insert_into(contacts::table)
        .values(&ContactRow::from(&contact))
        .execute(conn);
    match inserted {
        Ok(_) => {
            outbox::write(
                conn,
                outbox,
                &Written {
                    contact: Some(&contact),
                    ..Written::default()
                },
            )?;
            Ok(contact)
        }
        Err(DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, info))
            if info.message().contains("username_folded") =>
        {
            Err(StoreError::Conflict(format!("username {} is taken", contact.username())).into())
        }
        Err(e) => Err(e.into()),
    }
}

/// The contact, unless it is being erased (docs/api.md, "Jobs"): from
/// the erase's first transaction on, nothing finds it or acts as it.
pub(crate) fn contact(conn: &mut Conn, id: ContactId) -> Result<Option<Contact>> {
    contacts::table
        .find(id.db())
        .filter(contacts::erasing.eq(false))
        .select(ContactRow::as_select())
        .first(conn)
        .optional()?
        .map(Contact::try_from)
        .transpose()
}

pub(crate) fn contact_by_username(conn: &mut Conn, username: &str) -> Result<Option<Contact>> {
    // Folded exactly like `Username::folded`, which filled the column.
    contacts::table
        .filter(contacts::username_folded.eq(username.to_ascii_lowercase()))
        .filter(contacts::erasing.eq(false))
        .select(ContactRow::as_select())
        .first(conn)
        .optional()?
        .map(Contact::try_from)
        .transpose()
}

pub(crate) fn update_contact(
    conn: &mut Conn,
    id: ContactId,
    patch: ContactProfilePatch,
    outbox: &Outbox,
) -> Result<Contact> {
    let mut changed = false;
    if !patch.is_empty() {
        let changes = ContactChangeset {
            phone_number: patch.phone_number.map(|p| p.into_inner()),
            avatar_url: patch.avatar_url.map(|a| a.into_inner()),
        };
        // Written only where a submitted value differs from the stored
        // one: the same number or avatar again changes nothing, and has
        // no event.
        let mut differs: Box<dyn BoxableExpression<contacts::table, Db, SqlType = Bool>> =
            Box::new(diesel::dsl::sql::<Bool>("1 = 0"));
        if let Some(phone) = &changes.phone_number {
            differs = Box::new(differs.or(contacts::phone_number.ne(phone.clone())));
        }
        if let Some(avatar) = &changes.avatar_url {
            differs = Box::new(differs.or(contacts::avatar_url.ne(avatar.clone())));
        }
        changed = diesel::update(
            contacts::table
                .find(id.db())
                .filter(contacts::erasing.eq(false))
                .filter(differs),
        )
        .set(&changes)
        .execute(conn)?
            > 0;
    }
    let updated = contact(conn, id)?.ok_or_else(not_found)?;
    if changed {
        outbox::write(
            conn,
            outbox,
            &Written {
                contact: Some(&updated),
                ..Written::default()
            },
        )?;
    }
    Ok(updated)
}

pub(crate) fn touch_contact(conn: &mut Conn, id: ContactId, at: Timestamp) -> Result<()> {
    // Only forward: a late request must not move activity back in time.
    diesel::update(
        contacts::table
            .filter(contacts::id.eq(id.db()))
            .filter(contacts::last_active_at.lt(at.micros())),
    )
    .set(contacts::last_active_at.eq(at.micros()))
    .execute(conn)?;
    Ok(())
}

pub(crate) fn list_contacts(
    conn: &mut Conn,
    username: Option<String>,
    page: Page<ContactId>,
) -> Result<Paged<Contact>> {
    // Folded exactly like `Username::folded`, which filled the column.
    let folded = username.map(|u| u.to_ascii_lowercase());
    let (limit, fetch) = fetch_size(&page);
    let seek = seek(page.cursor, |id: ContactId| {
        Ok(contacts::table
            .find(id.db())
            .select((contacts::created_at, contacts::id))
            .first::<(i64, DbId)>(conn)
            .optional()?)
    })?;
    let backwards = seek.backwards();
    let mut q = contacts::table
        .filter(contacts::erasing.eq(false))
        .into_boxed::<Db>();
    if let Some(folded) = folded {
        q = q.filter(contacts::username_folded.eq(folded));
    }
    let rows: Vec<ContactRow> = keyset!(q, contacts::created_at, contacts::id, seek)
        .select(ContactRow::as_select())
        .limit(fetch)
        .load(conn)?;
    let (rows, has_more) = finish_page(rows, limit, backwards);
    Ok(Paged {
        items: rows
            .into_iter()
            .map(Contact::try_from)
            .collect::<Result<_>>()?,
        has_more,
    })
}
