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
use diesel::sql_types::Bool;
use diesel::{Connection, OptionalExtension};

use crate::error::Error;
use crate::id::DbId;
use crate::queries::Result;
use crate::rows::DbKey;
use crate::run::{Exec, Run};
use crate::SqlBackend;

pub mod statements;

use statements::{self as s, Claimed, KeyRow, NewKey};

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

/// Claims the request's key (see the module docs).
pub fn claim_key<B: SqlBackend>(conn: &mut B::Conn, request: ClaimRequest) -> Result<ClaimOutcome> {
    if B::DATA_MODIFYING_WITH {
        return claim::<B>(conn, &request, claim_new_in_one_statement::<B>);
    }
    // The new key and its count commit together or not at all.
    let claimed = conn.transaction(
        |c| match claim::<B>(c, &request, claim_new_in_steps::<B>)? {
            ClaimOutcome::QuotaExceeded => Err(refused()),
            outcome => Ok(outcome),
        },
    );
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

/// A way of claiming a key as a new one.
type ClaimNew<C> = fn(&mut C, &ClaimRequest) -> Result<Fresh>;

/// Claims the key as a new one with `new`, else settles it as a
/// stored one.
fn claim<B: SqlBackend>(
    conn: &mut B::Conn,
    request: &ClaimRequest,
    new: ClaimNew<B::Conn>,
) -> Result<ClaimOutcome> {
    // A row may vanish between the statements below (its holder
    // released it); trying again settles it.
    for _ in 0..3 {
        match new(conn, request)? {
            Fresh::Claimed => return Ok(ClaimOutcome::Claimed),
            Fresh::OverQuota => return Ok(ClaimOutcome::QuotaExceeded),
            Fresh::Live => {}
        }
        if let Some(outcome) = claim_stored::<B>(conn, request)? {
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
fn claim_new_in_one_statement<B: SqlBackend>(
    conn: &mut B::Conn,
    request: &ClaimRequest,
) -> Result<Fresh> {
    use crate::raw::{marker, Bind, Shape};
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
    let (new, counted, claimed): Claimed =
        conn.get_row(shape.typed::<B::Db, (Bool, Bool, Bool)>(binds))?;
    Ok(match (new, counted, claimed) {
        (true, true, true) => Fresh::Claimed,
        (false, _, _) => Fresh::Live,
        // Refused as new. A concurrent claim may have stored the key
        // since this statement's snapshot: then this is its retry
        // (409 or a replay), not a new key past the quota.
        (true, false, _) => {
            let live = s::key_is_live(
                contact,
                request.claim.key.clone(),
                request.expired_before.micros(),
            );
            if conn.get_row(live)? {
                Fresh::Live
            } else {
                Fresh::OverQuota
            }
        }
        // Counted, but a concurrent claim stored the key first
        // (after this statement's snapshot): not new after all.
        (true, true, false) => {
            conn.exec(s::uncount_key(day, contact))?;
            Fresh::Live
        }
    })
}

/// SQLite, inside the claim's transaction: stores the key (or takes
/// over an expired one), which takes the database's write lock,
/// then counts it; past the quota the transaction rolls back.
fn claim_new_in_steps<B: SqlBackend>(conn: &mut B::Conn, request: &ClaimRequest) -> Result<Fresh> {
    let contact = request.claim.contact_id.db();
    let stored = conn.exec(s::insert_key::<B::Db>(NewKey {
        contact,
        key: request.claim.key.clone(),
        fingerprint: request.fingerprint.clone(),
        holder: DbId::from(request.claim.holder),
        now: request.now.micros(),
        locked_until: request.locked_until.micros(),
        expired_before: request.expired_before.micros(),
    })?)?;
    if stored == 0 {
        return Ok(Fresh::Live);
    }
    let max = quota_max(request);
    if max == 0 {
        return Ok(Fresh::OverQuota);
    }
    let counted = conn.exec(s::count_key::<B::Db>(request.quota_day(), contact, max)?)?;
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
fn claim_stored<B: SqlBackend>(
    conn: &mut B::Conn,
    request: &ClaimRequest,
) -> Result<Option<ClaimOutcome>> {
    let contact = request.claim.contact_id.db();
    let taken = conn.exec(s::take_over_key(
        contact,
        request.claim.key.clone(),
        request.now.micros(),
        request.fingerprint.clone(),
        DbId::from(request.claim.holder),
        request.locked_until.micros(),
    ))?;
    if taken == 1 {
        return Ok(Some(ClaimOutcome::Claimed));
    }
    let row: Option<KeyRow> = conn
        .get_row(s::key_state(contact, request.claim.key.clone()))
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
fn store_response<B: SqlBackend>(
    conn: &mut B::Conn,
    claim: &KeyClaim,
    response: &StoredResponse,
) -> Result<bool> {
    let updated = conn.exec(s::answer_key(
        claim.contact_id.db(),
        claim.key.clone(),
        DbId::from(claim.holder),
        i32::from(response.code),
        response.location.clone(),
        response.body.clone(),
    ))?;
    Ok(updated == 1)
}

/// Inside a write's transaction, when the write protects a key:
/// stores the response rendered from what was `written`, or fails
/// with `ClaimLost` so that the transaction rolls back.
pub fn complete<B: SqlBackend, T: 'static>(
    conn: &mut B::Conn,
    completion: Option<Completion<T>>,
    written: &T,
) -> Result<()> {
    let Some(completion) = completion else {
        return Ok(());
    };
    let (claim, response) = completion.render(written);
    if store_response::<B>(conn, &claim, &response)? {
        Ok(())
    } else {
        Err(Error::Store(StoreError::ClaimLost))
    }
}

/// Stores the response for the key `claim` holds; `false` when it is no
/// longer held.
pub fn complete_key<B: SqlBackend>(
    conn: &mut B::Conn,
    claim: KeyClaim,
    response: StoredResponse,
) -> Result<bool> {
    store_response::<B>(conn, &claim, &response)
}

/// Whether `contact` has an answered key `key` made at `since` or later.
pub fn key_answered<B: SqlBackend>(
    conn: &mut B::Conn,
    contact: confab_domain::ContactId,
    key: &str,
    since: Timestamp,
) -> Result<bool> {
    let found: i64 = conn.get_row(s::answered_keys(
        contact.db(),
        key.to_owned(),
        since.micros(),
    ))?;
    Ok(found > 0)
}

/// Deletes the key `claim` holds, not yet answered (its request failed).
pub fn release_key<B: SqlBackend>(conn: &mut B::Conn, claim: KeyClaim) -> Result<()> {
    conn.exec(s::delete_held_key(
        claim.contact_id.db(),
        claim.key,
        DbId::from(claim.holder),
    ))?;
    Ok(())
}

/// Deletes the keys made before `before`, and the quota counters of the
/// days before its day; how many keys it deleted.
pub fn prune_keys<B: SqlBackend>(conn: &mut B::Conn, before: Timestamp) -> Result<u64> {
    let deleted = conn.exec(s::delete_keys_before(before.micros()))?;
    // No claim counts against the days before `before`'s any more.
    let day = before.secs().div_euclid(ClaimRequest::SECS_PER_DAY);
    conn.exec(s::delete_quota_before(day))?;
    Ok(u64::try_from(deleted).unwrap_or(u64::MAX))
}
