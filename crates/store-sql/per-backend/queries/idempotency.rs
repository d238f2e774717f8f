//! Idempotency keys (docs/api.md "Retry safely: idempotency keys"): claimed by a request before it runs,
//! completed in the transaction of the write it protects ([`complete`],
//! called by the write queries), released when the request failed.
//!
//! A claim is one statement in the common case (the key is new) on
//! PostgreSQL, one transaction on SQLite. A holder completes its key only
//! while it still holds it: a request whose lease ran out and whose key a
//! retry took over cannot commit its write any more, so one key never
//! produces two writes.
//!
//! # The quota
//!
//! Stored keys are bounded per contact: at most `new_keys_per_day` new keys
//! (not stored, or expired) a UTC day. A counter per contact and day
//! (`idempotency_quota`) is raised with the claim of a new key, in the same
//! unit of work, and refuses past the quota under its row lock, so that
//! concurrent claims never pass it together and no claim counts the
//! contact's keys. A refused claim stores nothing. A key stored before (a
//! retry, a replay, a takeover after the lease) is not new and passes. A
//! key released after a failure (5xx) counts again when it is claimed
//! again.

use confab_domain::Timestamp;
use confab_ports::{ClaimOutcome, ClaimRequest, Completion, KeyClaim, StoreError, StoredResponse};
use diesel::prelude::*;
use diesel::sql_types::Bool;

use super::{Backend, Conn, Db, Result};
use confab_store_sql::error::Error;
use confab_store_sql::id::DbId;
use confab_store_sql::rows::DbKey;
use confab_store_sql::schema::idempotency_keys as keys;
use confab_store_sql::schema::idempotency_quota as quota;
use confab_store_sql::SqlBackend as _;

/// The row of a key as a claim reads it back.
type KeyRow = (String, Option<i32>, Option<String>, Option<String>);

/// What claiming a key as a new one came to.
enum Fresh {
    /// Stored (or an expired one taken over) and counted.
    Claimed,
    /// New, but past the quota: nothing stored (on SQLite: its
    /// transaction rolls back).
    OverQuota,
    /// The key is stored and live: a retry, a replay, or another
    /// request's key.
    Live,
}

pub(crate) fn claim_key(conn: &mut Conn, request: ClaimRequest) -> Result<ClaimOutcome> {
    if Backend::DATA_MODIFYING_WITH {
        return claim(conn, &request, claim_new_in_one_statement);
    }
    // The new key and its count commit together or not at all.
    let claimed = conn.transaction(|c| match claim(c, &request, claim_new_in_steps)? {
        ClaimOutcome::QuotaExceeded => Err(refused()),
        outcome => Ok(outcome),
    });
    match claimed {
        Err(e) if is_refused(&e) => Ok(ClaimOutcome::QuotaExceeded),
        other => other,
    }
}

/// Rolls back the transaction of a claim past the quota.
fn refused() -> Error {
    Error::Db(diesel::result::Error::RollbackTransaction)
}

fn is_refused(e: &Error) -> bool {
    matches!(e, Error::Db(diesel::result::Error::RollbackTransaction))
}

/// Claims the key as a new one with `new`, else settles it as a
/// stored one.
fn claim(
    conn: &mut Conn,
    request: &ClaimRequest,
    new: fn(&mut Conn, &ClaimRequest) -> Result<Fresh>,
) -> Result<ClaimOutcome> {
    // A row may vanish between the statements below (its holder
    // released it); trying again settles it.
    for _ in 0..3 {
        match new(conn, request)? {
            Fresh::Claimed => return Ok(ClaimOutcome::Claimed),
            Fresh::OverQuota => return Ok(ClaimOutcome::QuotaExceeded),
            Fresh::Live => {}
        }
        if let Some(outcome) = claim_stored(conn, request)? {
            return Ok(outcome);
        }
    }
    // Released three times in a row by other requests: as busy as a
    // request in flight.
    Ok(ClaimOutcome::InFlight { same_request: true })
}

/// The most new keys a day, as the counter compares it.
fn quota_max(request: &ClaimRequest) -> i64 {
    request.new_keys_per_day.map_or(i64::MAX, i64::from)
}

/// PostgreSQL: one statement probes for a live key, counts a new
/// one under the quota (the counter's row lock orders concurrent
/// claims of the contact) and only then stores it, or takes over
/// an expired one.
fn claim_new_in_one_statement(conn: &mut Conn, request: &ClaimRequest) -> Result<Fresh> {
    use confab_store_sql::raw::{marker, Bind, Shape};
    static SHAPE: std::sync::OnceLock<Shape> = std::sync::OnceLock::new();
    let shape = SHAPE.get_or_init(|| {
        let [contact, key, expired_before, day, max, fingerprint, holder, now, locked] =
            std::array::from_fn(marker);
        Shape::new(&format!(
            "WITH probe AS ( \
               SELECT NOT EXISTS ( \
                 SELECT 1 FROM idempotency_keys \
                 WHERE contact_id = {contact} AND key = {key} \
                   AND created_at >= {expired_before} \
               ) AS is_new \
             ), counted AS ( \
               INSERT INTO idempotency_quota (day, contact_id, used) \
               SELECT {day}, {contact}, 1 FROM probe WHERE is_new AND {max} > 0 \
               ON CONFLICT (day, contact_id) DO UPDATE \
                 SET used = idempotency_quota.used + 1 \
                 WHERE idempotency_quota.used < {max} \
               RETURNING 1 \
             ), claimed AS ( \
               INSERT INTO idempotency_keys \
                 (contact_id, key, fingerprint, claim, created_at, locked_until) \
               SELECT {contact}, {key}, {fingerprint}, {holder}, {now}, {locked} \
               FROM counted \
               ON CONFLICT (contact_id, key) DO UPDATE \
                 SET fingerprint = excluded.fingerprint, claim = excluded.claim, \
                   created_at = excluded.created_at, \
                   locked_until = excluded.locked_until, \
                   status = NULL, location = NULL, body = NULL \
                 WHERE idempotency_keys.created_at < {expired_before} \
               RETURNING 1 \
             ) \
             SELECT (SELECT is_new FROM probe), \
               EXISTS (SELECT 1 FROM counted), EXISTS (SELECT 1 FROM claimed)"
        ))
    });
    let contact = request.claim.contact_id.db();
    let day = request.quota_day();
    let binds = vec![
        Bind::Id(contact),
        Bind::Text(request.claim.key.clone()),
        Bind::Int(request.expired_before.micros()),
        Bind::Int(day),
        Bind::Int(quota_max(request)),
        Bind::Text(request.fingerprint.clone()),
        Bind::Id(DbId::from(request.claim.holder)),
        Bind::Int(request.now.micros()),
        Bind::Int(request.locked_until.micros()),
    ];
    let (new, counted, claimed): (bool, bool, bool) = shape
        .typed::<Db, (Bool, Bool, Bool)>(binds)
        .get_result(conn)?;
    Ok(match (new, counted, claimed) {
        (true, true, true) => Fresh::Claimed,
        (false, _, _) => Fresh::Live,
        // Refused as new. A concurrent claim may have stored the key
        // since this statement's snapshot: then this is its retry
        // (409 or a replay), not a new key past the quota.
        (true, false, _) => {
            let live = keys::table
                .filter(keys::contact_id.eq(contact))
                .filter(keys::key.eq(&request.claim.key))
                .filter(keys::created_at.ge(request.expired_before.micros()));
            if diesel::select(diesel::dsl::exists(live)).get_result(conn)? {
                Fresh::Live
            } else {
                Fresh::OverQuota
            }
        }
        // Counted, but a concurrent claim stored the key first
        // (after this statement's snapshot): not new after all.
        (true, true, false) => {
            diesel::update(
                quota::table
                    .filter(quota::day.eq(day))
                    .filter(quota::contact_id.eq(contact)),
            )
            .set(quota::used.eq(quota::used - 1))
            .execute(conn)?;
            Fresh::Live
        }
    })
}

/// SQLite, inside the claim's transaction: stores the key (or takes
/// over an expired one), which takes the database's write lock,
/// then counts it; past the quota the transaction rolls back.
fn claim_new_in_steps(conn: &mut Conn, request: &ClaimRequest) -> Result<Fresh> {
    let contact = request.claim.contact_id.db();
    // `DO UPDATE ... WHERE` (diesel's `FilterDsl` on an upsert,
    // which `QueryDsl` does not name).
    use diesel::query_dsl::methods::FilterDsl;
    let insert = diesel::insert_into(keys::table)
        .values((
            keys::contact_id.eq(contact),
            keys::key.eq(&request.claim.key),
            keys::fingerprint.eq(&request.fingerprint),
            keys::claim.eq(DbId::from(request.claim.holder)),
            keys::created_at.eq(request.now.micros()),
            keys::locked_until.eq(request.locked_until.micros()),
        ))
        .on_conflict((keys::contact_id, keys::key))
        .do_update()
        .set((
            keys::fingerprint.eq(&request.fingerprint),
            keys::claim.eq(DbId::from(request.claim.holder)),
            keys::created_at.eq(request.now.micros()),
            keys::locked_until.eq(request.locked_until.micros()),
            keys::status.eq(None::<i32>),
            keys::location.eq(None::<String>),
            keys::body.eq(None::<String>),
        ));
    let stored = FilterDsl::filter(insert, keys::created_at.lt(request.expired_before.micros()))
        .execute(conn)?;
    if stored == 0 {
        return Ok(Fresh::Live);
    }
    let max = quota_max(request);
    if max == 0 {
        return Ok(Fresh::OverQuota);
    }
    let count = diesel::insert_into(quota::table)
        .values((
            quota::day.eq(request.quota_day()),
            quota::contact_id.eq(contact),
            quota::used.eq(1_i64),
        ))
        .on_conflict((quota::day, quota::contact_id))
        .do_update()
        .set(quota::used.eq(quota::used + 1));
    let counted = FilterDsl::filter(count, quota::used.lt(max)).execute(conn)?;
    Ok(if counted == 1 {
        Fresh::Claimed
    } else {
        Fresh::OverQuota
    })
}

/// A stored, live key: taken over when its holder's lease ran out
/// before it answered (the holder died), only for the same request,
/// whose retry this is; else what it holds. `None` when the row
/// went away meanwhile (its holder released it).
fn claim_stored(conn: &mut Conn, request: &ClaimRequest) -> Result<Option<ClaimOutcome>> {
    let contact = request.claim.contact_id.db();
    let this = keys::table
        .filter(keys::contact_id.eq(contact))
        .filter(keys::key.eq(&request.claim.key));
    let abandoned = keys::status
        .is_null()
        .and(keys::locked_until.le(request.now.micros()))
        .and(keys::fingerprint.eq(&request.fingerprint));
    let taken = diesel::update(this.filter(abandoned))
        .set((
            keys::claim.eq(DbId::from(request.claim.holder)),
            keys::created_at.eq(request.now.micros()),
            keys::locked_until.eq(request.locked_until.micros()),
        ))
        .execute(conn)?;
    if taken == 1 {
        return Ok(Some(ClaimOutcome::Claimed));
    }
    let row: Option<KeyRow> = this
        .select((keys::fingerprint, keys::status, keys::location, keys::body))
        .first(conn)
        .optional()?;
    let Some((stored, status, location, body)) = row else {
        return Ok(None);
    };
    let same_request = stored == request.fingerprint;
    Ok(Some(match (status, body) {
        (Some(status), Some(body)) => ClaimOutcome::Completed {
            same_request,
            response: StoredResponse {
                code: u16::try_from(status).unwrap_or(500),
                location,
                body,
            },
        },
        _ => ClaimOutcome::InFlight { same_request },
    }))
}

/// Stores `response` for the key `claim` holds; `false` when the claim
/// is no longer held (taken over, or already answered).
fn store_response(conn: &mut Conn, claim: &KeyClaim, response: &StoredResponse) -> Result<bool> {
    let updated = diesel::update(
        keys::table
            .filter(keys::contact_id.eq(claim.contact_id.db()))
            .filter(keys::key.eq(&claim.key))
            .filter(keys::claim.eq(DbId::from(claim.holder)))
            .filter(keys::status.is_null()),
    )
    .set((
        keys::status.eq(i32::from(response.code)),
        keys::location.eq(&response.location),
        keys::body.eq(&response.body),
    ))
    .execute(conn)?;
    Ok(updated == 1)
}

/// Inside a write's transaction, when the write protects a key:
/// stores the response rendered from what was `written`, or fails
/// with `ClaimLost` so that the transaction rolls back.
pub(crate) fn complete<T: 'static>(
    conn: &mut Conn,
    completion: Option<Completion<T>>,
    written: &T,
) -> Result<()> {
    let Some(completion) = completion else {
        return Ok(());
    };
    let (claim, response) = completion.render(written);
    if store_response(conn, &claim, &response)? {
        Ok(())
    } else {
        Err(Error::Store(StoreError::ClaimLost))
    }
}

pub(crate) fn complete_key(
    conn: &mut Conn,
    claim: KeyClaim,
    response: StoredResponse,
) -> Result<bool> {
    store_response(conn, &claim, &response)
}

pub(crate) fn key_answered(
    conn: &mut Conn,
    contact: confab_domain::ContactId,
    key: &str,
    since: Timestamp,
) -> Result<bool> {
    let found: i64 = keys::table
        .filter(keys::contact_id.eq(contact.db()))
        .filter(keys::key.eq(key))
        .filter(keys::status.is_not_null())
        .filter(keys::created_at.ge(since.micros()))
        .count()
        .get_result(conn)?;
    Ok(found > 0)
}

pub(crate) fn release_key(conn: &mut Conn, claim: KeyClaim) -> Result<()> {
    diesel::delete(
        keys::table
            .filter(keys::contact_id.eq(claim.contact_id.db()))
            .filter(keys::key.eq(&claim.key))
            .filter(keys::claim.eq(DbId::from(claim.holder)))
            .filter(keys::status.is_null()),
    )
    .execute(conn)?;
    Ok(())
}

pub(crate) fn prune_keys(conn: &mut Conn, before: Timestamp) -> Result<u64> {
    let deleted =
        diesel::delete(keys::table.filter(keys::created_at.lt(before.micros()))).execute(conn)?;
    // No claim counts against the days before `before`'s any more.
    let day = before.secs().div_euclid(ClaimRequest::SECS_PER_DAY);
    diesel::delete(quota::table.filter(quota::day.lt(day))).execute(conn)?;
    Ok(u64::try_from(deleted).unwrap_or(u64::MAX))
}
