//! `Idempotency-Key` (docs/api.md "Retry safely: idempotency keys"), Stripe's semantics: the first
//! answer to a POST is kept for 24 hours per caller and key; a retry of the
//! same request gets that answer again, another request with the key is
//! refused (422), and a retry while the first is still running is refused
//! too (409).
//!
//! How it holds under crashes: a request first *claims* its key (one
//! statement); the write it protects stores its answer in the same
//! transaction ([`Completion`]), so a committed write always has its answer
//! kept and a rolled-back one never has. A claim whose holder died (killed
//! mid-request) is taken over by a retry of the same request once its lease
//! ([`LEASE_SECS`]) has run out; the old holder, should it still be running,
//! can then no longer complete the key, so its write rolls back. One key
//! never makes two writes.
//!
//! Stored keys are bounded per contact (docs/api.md "Hostile load"):
//! at most [`DEFAULT_KEYS_PER_DAY`] new keys a UTC day unless configured
//! otherwise, counted by the store with each new key's claim; past it a new
//! key is refused until the next UTC day, while keys claimed before still
//! replay.

use confab_domain::{Contact, DomainError, Field};
use confab_ports::{ClaimOutcome, ClaimRequest};

pub use confab_ports::{Completion, KeyClaim, StoredResponse};

use crate::{Confab, ServiceError};

/// How long an answer is kept.
pub const KEY_TTL_SECS: i64 = 24 * 60 * 60;

/// How long a claim holds before a retry may take it over. Every request
/// ends (or gives up on the database) well within it.
pub const LEASE_SECS: i64 = 10;

/// Longest key accepted, in characters.
pub const MAX_KEY_CHARS: usize = 255;

/// New keys a contact may claim a UTC day unless configured otherwise
/// ([`Confab::with_idempotency_quota`]; docs/api.md "Retry safely: idempotency keys").
pub const DEFAULT_KEYS_PER_DAY: u32 = 10_000;

/// A client's idempotency key: 1 to 255 visible ASCII characters (what an
/// HTTP header carries without encoding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// # Errors
    /// `Invalid` on an empty or longer key, or one with other characters.
    pub fn parse(raw: &str) -> Result<Self, DomainError> {
        if raw.is_empty()
            || raw.len() > MAX_KEY_CHARS
            || !raw.bytes().all(|b| b.is_ascii_graphic() || b == b' ')
        {
            return Err(DomainError::invalid(
                Field::IdempotencyKey,
                "must be 1 to 255 visible ASCII characters",
            ));
        }
        Ok(Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What to do with a request that carries a key.
#[derive(Debug)]
pub enum Idempotent {
    /// Run it, completing this claim with its answer.
    Run(KeyClaim),
    /// It was answered before: answer this again.
    Replay(StoredResponse),
}

impl Confab {
    /// Claims `key` for one run of the request whose fingerprint is
    /// `fingerprint` (a digest of its method, path and body).
    ///
    /// # Errors
    /// - `IdempotencyInFlight` while another run of the same request holds it;
    /// - `IdempotencyKeyReused` when the key was used for another request;
    /// - `IdempotencyQuota` for a new key when the caller already claimed
    ///   its new keys of the day (a key claimed before still replays).
    pub async fn begin_idempotent(
        &self,
        caller: &Contact,
        key: IdempotencyKey,
        fingerprint: String,
    ) -> Result<Idempotent, ServiceError> {
        let now = self.now();
        let claim = KeyClaim {
            contact_id: caller.id(),
            key: key.0,
            holder: self.new_uuid(),
        };
        let request = ClaimRequest {
            claim: claim.clone(),
            fingerprint,
            now,
            locked_until: now.plus_secs(LEASE_SECS),
            expired_before: now.plus_secs(-KEY_TTL_SECS),
            new_keys_per_day: self.keys_per_day,
        };
        let retry_after_secs = request.secs_to_next_quota_day().unsigned_abs();
        let outcome = self.ports.idempotency.claim_key(request).await?;
        match outcome {
            ClaimOutcome::Claimed => Ok(Idempotent::Run(claim)),
            ClaimOutcome::Completed {
                same_request: true,
                response,
            } => Ok(Idempotent::Replay(response)),
            ClaimOutcome::InFlight { same_request: true } => Err(ServiceError::IdempotencyInFlight),
            ClaimOutcome::InFlight {
                same_request: false,
            }
            | ClaimOutcome::Completed {
                same_request: false,
                ..
            } => Err(ServiceError::IdempotencyKeyReused),
            ClaimOutcome::QuotaExceeded => Err(ServiceError::IdempotencyQuota {
                max: self.keys_per_day.unwrap_or(0),
                retry_after_secs,
            }),
        }
    }

    /// Whether the caller's `key` already holds an answer (a request with
    /// it will be replayed or refused, not run): lets an upload's retry
    /// in before its bytes, and so its fingerprint, are read.
    pub async fn key_answered(
        &self,
        caller: &Contact,
        key: &IdempotencyKey,
    ) -> Result<bool, ServiceError> {
        let since = self.now().plus_secs(-KEY_TTL_SECS);
        Ok(self
            .ports
            .idempotency
            .key_answered(caller.id(), key.0.clone(), since)
            .await?)
    }

    /// Ends a run that did not complete its key in a write: keeps
    /// `response` (an answer the operation decided, such as a 404) for
    /// retries, or, with `None` (the request failed and changed nothing,
    /// e.g. the database was unreachable), releases the key so a retry runs
    /// again. Best effort: a key that cannot be released is freed by its
    /// lease.
    pub async fn end_idempotent(&self, claim: KeyClaim, response: Option<StoredResponse>) {
        let result = match response {
            Some(response) => self
                .ports
                .idempotency
                .complete_key(claim, response)
                .await
                .map(drop),
            None => self.ports.idempotency.release_key(claim).await,
        };
        if let Err(error) = result {
            tracing::warn!(%error, "could not end an idempotency key's run; its lease will");
        }
    }

    /// Forgets answers older than [`KEY_TTL_SECS`]; returns how many.
    pub async fn prune_idempotency_keys(&self) -> Result<u64, ServiceError> {
        let before = self.now().plus_secs(-KEY_TTL_SECS);
        Ok(self.ports.idempotency.prune_keys(before).await?)
    }
}
