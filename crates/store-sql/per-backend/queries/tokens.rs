//! Access tokens, stored by hash.

use confab_domain::{Contact, ContactId, Timestamp};
use confab_ports::NewToken;
use diesel::prelude::*;

use super::membership::contact_exists;
use super::{Conn, Result};
use confab_store_sql::queries::not_found;
use confab_store_sql::rows::{ContactRow, DbKey, TokenRow};
use confab_store_sql::schema::{contacts, tokens};

pub(crate) fn insert_token(conn: &mut Conn, token: NewToken) -> Result<()> {
    let owner = token.contact_id.db();
    if !contact_exists(conn, owner)? {
        return Err(not_found());
    }
    diesel::insert_into(tokens::table)
        .values(&TokenRow {
            id: token.id.db(),
            contact_id: owner,
            token_hash: token.hash,
            created_at: token.created_at.micros(),
            expires_at: token.expires_at.map(Timestamp::micros),
            revoked_at: None,
        })
        .execute(conn)?;
    Ok(())
}

pub(crate) fn contact_for_token(
    conn: &mut Conn,
    hash: &str,
    now: Timestamp,
) -> Result<Option<Contact>> {
    tokens::table
        .inner_join(contacts::table)
        .filter(tokens::token_hash.eq(hash))
        .filter(tokens::revoked_at.is_null())
        .filter(
            tokens::expires_at
                .is_null()
                .or(tokens::expires_at.gt(now.micros())),
        )
        .select(ContactRow::as_select())
        .first(conn)
        .optional()?
        .map(Contact::try_from)
        .transpose()
}

pub(crate) fn revoke_tokens(conn: &mut Conn, owner: ContactId, at: Timestamp) -> Result<u64> {
    let n = diesel::update(
        tokens::table
            .filter(tokens::contact_id.eq(owner.db()))
            .filter(tokens::revoked_at.is_null())
            .filter(
                tokens::expires_at
                    .is_null()
                    .or(tokens::expires_at.gt(at.micros())),
            ),
    )
    .set(tokens::revoked_at.eq(Some(at.micros())))
    .execute(conn)?;
    Ok(n as u64)
}
