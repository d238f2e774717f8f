//! Idempotency keys (API.md section 9): claimed by a request before it runs,
//! completed in the transaction of the write it protects ([`complete`],
//! called by the write queries), released when the request failed.
//!
//! A claim is one statement in the common case (the key is new). A holder
//! completes its key only while it still holds it: a request whose lease ran
//! out and whose key a retry took over cannot commit its write any more, so
//! one key never produces two writes.

/// Expands the functions of this file in a backend's `queries` module (see
/// [`super::instantiate`]).
macro_rules! expand {
    () => {
        use confab_domain::Timestamp;
        use confab_ports::{
            ClaimOutcome, ClaimRequest, Completion, KeyClaim, StoreError, StoredResponse,
        };
        use diesel::prelude::*;

        use super::{Conn, Result};
        use crate::error::Error;
        use crate::id::DbId;
        use crate::rows::DbKey;
        use crate::schema::idempotency_keys as keys;

        /// The row of a key as a claim reads it back.
        type KeyRow = (String, Option<i32>, Option<String>, Option<String>);

        pub(crate) fn claim_key(conn: &mut Conn, request: ClaimRequest) -> Result<ClaimOutcome> {
            let ClaimRequest {
                claim,
                fingerprint,
                now,
                locked_until,
                expired_before,
            } = request;
            let contact = claim.contact_id.db();
            let holder = DbId::from(claim.holder);
            // A row may vanish between the statements below (its holder
            // released it); trying again settles it.
            for _ in 0..3 {
                let inserted = diesel::insert_into(keys::table)
                    .values((
                        keys::contact_id.eq(contact),
                        keys::key.eq(&claim.key),
                        keys::fingerprint.eq(&fingerprint),
                        keys::claim.eq(holder),
                        keys::created_at.eq(now.micros()),
                        keys::locked_until.eq(locked_until.micros()),
                    ))
                    .on_conflict_do_nothing()
                    .execute(conn)?;
                if inserted == 1 {
                    return Ok(ClaimOutcome::Claimed);
                }
                // Taken over when it expired, or when its holder's lease ran
                // out before it answered (the holder died): only for the same
                // request, whose retry this is.
                let this = keys::table
                    .filter(keys::contact_id.eq(contact))
                    .filter(keys::key.eq(&claim.key));
                let expired = keys::created_at.lt(expired_before.micros());
                let abandoned = keys::status
                    .is_null()
                    .and(keys::locked_until.le(now.micros()))
                    .and(keys::fingerprint.eq(&fingerprint));
                let taken = diesel::update(this.filter(expired.or(abandoned)))
                    .set((
                        keys::fingerprint.eq(&fingerprint),
                        keys::claim.eq(holder),
                        keys::created_at.eq(now.micros()),
                        keys::locked_until.eq(locked_until.micros()),
                        keys::status.eq(None::<i32>),
                        keys::location.eq(None::<String>),
                        keys::body.eq(None::<String>),
                    ))
                    .execute(conn)?;
                if taken == 1 {
                    return Ok(ClaimOutcome::Claimed);
                }
                let row: Option<KeyRow> = keys::table
                    .filter(keys::contact_id.eq(contact))
                    .filter(keys::key.eq(&claim.key))
                    .select((keys::fingerprint, keys::status, keys::location, keys::body))
                    .first(conn)
                    .optional()?;
                let Some((stored, status, location, body)) = row else {
                    continue;
                };
                let same_request = stored == fingerprint;
                return Ok(match (status, body) {
                    (Some(status), Some(body)) => ClaimOutcome::Completed {
                        same_request,
                        response: StoredResponse {
                            status: u16::try_from(status).unwrap_or(500),
                            location,
                            body,
                        },
                    },
                    _ => ClaimOutcome::InFlight { same_request },
                });
            }
            // Released three times in a row by other requests: as busy as a
            // request in flight.
            Ok(ClaimOutcome::InFlight { same_request: true })
        }

        /// Stores `response` for the key `claim` holds; `false` when the claim
        /// is no longer held (taken over, or already answered).
        fn store_response(
            conn: &mut Conn,
            claim: &KeyClaim,
            response: &StoredResponse,
        ) -> Result<bool> {
            let updated = diesel::update(
                keys::table
                    .filter(keys::contact_id.eq(claim.contact_id.db()))
                    .filter(keys::key.eq(&claim.key))
                    .filter(keys::claim.eq(DbId::from(claim.holder)))
                    .filter(keys::status.is_null()),
            )
            .set((
                keys::status.eq(i32::from(response.status)),
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
            let deleted = diesel::delete(keys::table.filter(keys::created_at.lt(before.micros())))
                .execute(conn)?;
            Ok(u64::try_from(deleted).unwrap_or(u64::MAX))
        }
    };
}
pub(crate) use expand;
