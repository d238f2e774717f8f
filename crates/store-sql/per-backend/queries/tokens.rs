//! Credentials, stored by hash: contacts' access tokens and server keys.

use confab_domain::{Contact, ContactId, Page, Paged, Timestamp};
use confab_ports::{
    LiveToken, Lookup, NewServerKey, NewTicket, NewToken, ServerKey, StoreError, TicketHolder,
    TokenInfo,
};
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use uuid::Uuid;

use super::membership::contact_exists;
use super::{Conn, Db, Result};
use confab_store_sql::id::DbId;
use confab_store_sql::keyset;
use confab_store_sql::queries::not_found;
use confab_store_sql::queries::paging::{fetch_size, finish_page, seek};
use confab_store_sql::rows::{
    contact_id, ContactRow, DbKey, NewServerKeyRow, ServerKeyRow, TokenInfoRow, TokenRow,
};
use confab_store_sql::schema::{contacts, event_tickets, server_keys, tokens};

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
            last_used_at: None,
        })
        .execute(conn)?;
    Ok(())
}

/// One indexed lookup by hash whatever the answer: an expired token is
/// told from an unknown or revoked one by its row, not by a second query.
pub(crate) fn contact_for_token(
    conn: &mut Conn,
    hash: &str,
    now: Timestamp,
) -> Result<Lookup<LiveToken>> {
    let found: Option<(ContactRow, Option<i64>)> = tokens::table
        .inner_join(contacts::table)
        .filter(tokens::token_hash.eq(hash))
        .filter(tokens::revoked_at.is_null())
        .select((ContactRow::as_select(), tokens::expires_at))
        .first(conn)
        .optional()?;
    let Some((row, expires_at)) = found else {
        return Ok(Lookup::Unknown);
    };
    if expires_at.is_some_and(|at| at <= now.micros()) {
        return Ok(Lookup::Expired);
    }
    Ok(Lookup::Live(LiveToken {
        contact: Contact::try_from(row)?,
        expires_at: expires_at.map(Timestamp::from_micros),
    }))
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

pub(crate) fn revoke_token(conn: &mut Conn, id: Uuid, at: Timestamp) -> Result<Option<ContactId>> {
    let owner: Option<DbId> = diesel::update(
        tokens::table
            .filter(tokens::id.eq(id.db()))
            .filter(tokens::revoked_at.is_null())
            .filter(
                tokens::expires_at
                    .is_null()
                    .or(tokens::expires_at.gt(at.micros())),
            ),
    )
    .set(tokens::revoked_at.eq(Some(at.micros())))
    .returning(tokens::contact_id)
    .get_result(conn)
    .optional()?;
    Ok(owner.map(contact_id))
}

/// The tokens of `owner` live at `now` (neither revoked nor expired).
fn live_tokens_of(owner: DbId, now: i64) -> tokens::BoxedQuery<'static, Db> {
    tokens::table
        .filter(tokens::contact_id.eq(owner))
        .filter(tokens::revoked_at.is_null())
        .filter(tokens::expires_at.is_null().or(tokens::expires_at.gt(now)))
        .into_boxed()
}

pub(crate) fn list_tokens(
    conn: &mut Conn,
    owner: ContactId,
    now: Timestamp,
    page: Page<Uuid>,
) -> Result<Paged<TokenInfo>> {
    let (o, now) = (owner.db(), now.micros());
    if !contact_exists(conn, o)? {
        return Err(not_found());
    }
    let (limit, fetch) = fetch_size(&page);
    let seek = seek(page.cursor, |id: Uuid| {
        Ok(live_tokens_of(o, now)
            .filter(tokens::id.eq(id.db()))
            .select((tokens::created_at, tokens::id))
            .first::<(i64, DbId)>(conn)
            .optional()?)
    })?;
    let backwards = seek.backwards();
    let rows: Vec<TokenInfoRow> =
        keyset!(live_tokens_of(o, now), tokens::created_at, tokens::id, seek)
            .select(TokenInfoRow::as_select())
            .limit(fetch)
            .load(conn)?;
    let (rows, has_more) = finish_page(rows, limit, backwards);
    Ok(Paged {
        items: rows.into_iter().map(TokenInfo::from).collect(),
        has_more,
    })
}

pub(crate) fn touch_token(conn: &mut Conn, hash: &str, at: Timestamp) -> Result<()> {
    // Only forward: a late request must not move it back in time.
    diesel::update(
        tokens::table.filter(tokens::token_hash.eq(hash)).filter(
            tokens::last_used_at
                .is_null()
                .or(tokens::last_used_at.lt(at.micros())),
        ),
    )
    .set(tokens::last_used_at.eq(Some(at.micros())))
    .execute(conn)?;
    Ok(())
}

/// The live tokens (neither revoked nor expired at `now`).
fn live_at(now: i64) -> tokens::BoxedQuery<'static, Db> {
    tokens::table
        .filter(tokens::revoked_at.is_null())
        .filter(tokens::expires_at.is_null().or(tokens::expires_at.gt(now)))
        .into_boxed()
}

pub(crate) fn insert_ticket(conn: &mut Conn, ticket: NewTicket) -> Result<()> {
    let token: Option<(DbId, DbId)> = live_at(ticket.created_at.micros())
        .filter(tokens::token_hash.eq(&ticket.token_hash))
        .select((tokens::id, tokens::contact_id))
        .first(conn)
        .optional()?;
    let Some((token_id, owner)) = token else {
        return Err(not_found());
    };
    diesel::insert_into(event_tickets::table)
        .values((
            event_tickets::ticket_hash.eq(ticket.hash),
            event_tickets::token_id.eq(token_id),
            event_tickets::contact_id.eq(owner),
            event_tickets::created_at.eq(ticket.created_at.micros()),
            event_tickets::expires_at.eq(ticket.expires_at.micros()),
        ))
        .execute(conn)?;
    Ok(())
}

/// As [`contact_for_token`]: one lookup, and an expired ticket (or one
/// whose token expired) is told from an unknown one or one whose token was
/// revoked.
pub(crate) fn ticket_holder(
    conn: &mut Conn,
    hash: &str,
    now: Timestamp,
) -> Result<Lookup<TicketHolder>> {
    let now = now.micros();
    let found: Option<(ContactRow, String, i64, Option<i64>)> = event_tickets::table
        .inner_join(tokens::table.inner_join(contacts::table))
        .filter(event_tickets::ticket_hash.eq(hash))
        .filter(tokens::revoked_at.is_null())
        .select((
            ContactRow::as_select(),
            tokens::token_hash,
            event_tickets::expires_at,
            tokens::expires_at,
        ))
        .first(conn)
        .optional()?;
    let Some((row, token_hash, ticket_expires, token_expires)) = found else {
        return Ok(Lookup::Unknown);
    };
    if ticket_expires <= now || token_expires.is_some_and(|at| at <= now) {
        return Ok(Lookup::Expired);
    }
    Ok(Lookup::Live(TicketHolder {
        contact: Contact::try_from(row)?,
        token_hash,
    }))
}

pub(crate) fn prune_tickets(conn: &mut Conn, before: Timestamp, batch: u32) -> Result<u64> {
    let old: Vec<String> = event_tickets::table
        .filter(event_tickets::expires_at.lt(before.micros()))
        .order(event_tickets::expires_at.asc())
        .select(event_tickets::ticket_hash)
        .limit(i64::from(batch))
        .load(conn)?;
    if old.is_empty() {
        return Ok(0);
    }
    let n = diesel::delete(event_tickets::table.filter(event_tickets::ticket_hash.eq_any(old)))
        .execute(conn)?;
    Ok(n as u64)
}

pub(crate) fn insert_server_key(conn: &mut Conn, key: NewServerKey) -> Result<()> {
    let inserted = diesel::insert_into(server_keys::table)
        .values(&NewServerKeyRow {
            id: key.id.db(),
            name: key.name,
            key_hash: key.hash,
            created_at: key.created_at.micros(),
            last_used_at: None,
            revoked_at: None,
        })
        .execute(conn);
    match inserted {
        Ok(_) => Ok(()),
        Err(DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _)) => {
            Err(StoreError::Conflict("the key is already stored".to_owned()).into())
        }
        Err(e) => Err(e.into()),
    }
}

pub(crate) fn server_key(conn: &mut Conn, hash: &str) -> Result<Option<ServerKey>> {
    Ok(server_keys::table
        .filter(server_keys::key_hash.eq(hash))
        .filter(server_keys::revoked_at.is_null())
        .select(ServerKeyRow::as_select())
        .first(conn)
        .optional()?
        .map(ServerKey::from))
}

pub(crate) fn list_server_keys(conn: &mut Conn) -> Result<Vec<ServerKey>> {
    Ok(server_keys::table
        .order((server_keys::created_at.asc(), server_keys::id.asc()))
        .select(ServerKeyRow::as_select())
        .load(conn)?
        .into_iter()
        .map(ServerKey::from)
        .collect())
}

pub(crate) fn revoke_server_key(
    conn: &mut Conn,
    id: Uuid,
    at: Timestamp,
) -> Result<Option<ServerKey>> {
    diesel::update(
        server_keys::table
            .filter(server_keys::id.eq(id.db()))
            .filter(server_keys::revoked_at.is_null()),
    )
    .set(server_keys::revoked_at.eq(Some(at.micros())))
    .execute(conn)?;
    Ok(server_keys::table
        .find(id.db())
        .select(ServerKeyRow::as_select())
        .first(conn)
        .optional()?
        .map(ServerKey::from))
}

pub(crate) fn touch_server_key(conn: &mut Conn, id: Uuid, at: Timestamp) -> Result<()> {
    diesel::update(
        server_keys::table
            .filter(server_keys::id.eq(id.db()))
            .filter(
                server_keys::last_used_at
                    .is_null()
                    .or(server_keys::last_used_at.lt(at.micros())),
            ),
    )
    .set(server_keys::last_used_at.eq(Some(at.micros())))
    .execute(conn)?;
    Ok(())
}
