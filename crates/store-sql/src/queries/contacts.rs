//! Contacts: the users of the service.

use confab_domain::{Contact, ContactId, ContactProfilePatch, Page, Paged, Timestamp};
use confab_ports::{Outbox, StoreError};
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel::OptionalExtension;

use super::outbox::{self, Written};
use crate::id::DbId;
use crate::queries::paging::{fetch_size, finish_page, seek, Seek};
use crate::queries::{not_found, Result};
use crate::rows::{ContactChangeset, ContactRow, DbKey};
use crate::run::{Exec, Run};
use crate::SqlBackend;

pub mod statements;

use statements as s;

/// Stores a new contact, with its events; a taken username is a conflict.
pub fn create_contact<B: SqlBackend>(
    conn: &mut B::Conn,
    contact: Contact,
    outbox: &Outbox,
) -> Result<Contact> {
    let inserted = conn.exec(s::insert_contact(ContactRow::from(&contact)));
    match inserted {
        Ok(_) => {
            outbox::write::<B>(
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
pub fn contact<B: SqlBackend>(conn: &mut B::Conn, id: ContactId) -> Result<Option<Contact>> {
    let row: Option<ContactRow> = conn
        .get_row(s::contact_by_id::<B::Db>(id.db()))
        .optional()?;
    row.map(Contact::try_from).transpose()
}

/// The contact of this username (as typed: folded here), unless it is
/// being erased.
pub fn contact_by_username<B: SqlBackend>(
    conn: &mut B::Conn,
    username: &str,
) -> Result<Option<Contact>> {
    // Folded exactly like `Username::folded`, which filled the column.
    let row: Option<ContactRow> = conn
        .get_row(s::contact_by_folded_name::<B::Db>(
            username.to_ascii_lowercase(),
        ))
        .optional()?;
    row.map(Contact::try_from).transpose()
}

/// Changes the contact's profile, with an event when anything changed.
pub fn update_contact<B: SqlBackend>(
    conn: &mut B::Conn,
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
        let id = id.db();
        let updated = match (changes.phone_number.clone(), changes.avatar_url.clone()) {
            (Some(phone), Some(avatar)) => {
                conn.exec(s::change_phone_or_avatar(id, phone, avatar, changes))?
            }
            (Some(phone), None) => conn.exec(s::change_phone(id, phone, changes))?,
            (None, Some(avatar)) => conn.exec(s::change_avatar(id, avatar, changes))?,
            // Not empty, so not reached: nothing to write.
            (None, None) => 0,
        };
        changed = updated > 0;
    }
    let updated = contact::<B>(conn, id)?.ok_or_else(not_found)?;
    if changed {
        outbox::write::<B>(
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

/// Moves the contact's last activity forward to `at`.
pub fn touch_contact<B: SqlBackend>(
    conn: &mut B::Conn,
    id: ContactId,
    at: Timestamp,
) -> Result<()> {
    // Only forward: a late request must not move activity back in time.
    conn.exec(s::touch_contact(id.db(), at.micros()))?;
    Ok(())
}

/// A page of the contacts (of this username only, when given), newest
/// first.
pub fn list_contacts<B: SqlBackend>(
    conn: &mut B::Conn,
    username: Option<String>,
    page: Page<ContactId>,
) -> Result<Paged<Contact>> {
    // Folded exactly like `Username::folded`, which filled the column.
    let folded = username.map(|u| u.to_ascii_lowercase());
    let (limit, fetch) = fetch_size(&page);
    let seek = seek(page.cursor, |id: ContactId| {
        let key: Option<(i64, DbId)> = conn.get_row(s::contact_key(id.db())).optional()?;
        Ok(key)
    })?;
    let backwards = seek.backwards();
    let rows: Vec<ContactRow> = match (folded, seek) {
        (None, Seek::First) => conn.load_rows(s::contacts_from_newest::<B::Db>(fetch))?,
        (None, Seek::After((at, id))) => {
            conn.load_rows(s::contacts_after::<B::Db>(at, id, fetch))?
        }
        (None, Seek::Before((at, id))) => {
            conn.load_rows(s::contacts_before::<B::Db>(at, id, fetch))?
        }
        (Some(name), Seek::First) => {
            conn.load_rows(s::named_contacts_from_newest::<B::Db>(name, fetch))?
        }
        (Some(name), Seek::After((at, id))) => {
            conn.load_rows(s::named_contacts_after::<B::Db>(name, at, id, fetch))?
        }
        (Some(name), Seek::Before((at, id))) => {
            conn.load_rows(s::named_contacts_before::<B::Db>(name, at, id, fetch))?
        }
    };
    let (rows, has_more) = finish_page(rows, limit, backwards);
    Ok(Paged {
        items: rows
            .into_iter()
            .map(Contact::try_from)
            .collect::<Result<_>>()?,
        has_more,
    })
}
