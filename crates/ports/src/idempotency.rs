//! Idempotency keys (docs/api.md "Retry safely: idempotency keys"): what the service asks the store
//! when a request carries a key, and what a write keeps so that a retry is
//! answered as the first request was.

use async_trait::async_trait;
use confab_domain::{ContactId, Timestamp};
use uuid::Uuid;

use crate::StoreError;

/// What a request answered, kept so that a retry with the same
/// idempotency key gets it again byte for byte. The store keeps it as it
/// is given and reads nothing into it: what the code and the location mean
/// is the caller's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    /// The answer's code (the kind of outcome, in the caller's numbering),
    /// replayed as it was.
    pub code: u16,
    /// Where the answer points, when it named the created resource.
    pub location: Option<String>,
    /// The answer's body, replayed byte for byte.
    pub body: String,
}

/// A request's hold on its caller's idempotency key: only the holder may
/// complete or release it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyClaim {
    /// The caller: keys are kept per contact, so two contacts may use the
    /// same key.
    pub contact_id: ContactId,
    /// The idempotency key as the caller gave it (compared exactly).
    pub key: String,
    /// Names this holder; a takeover after the lease gives a new one.
    pub holder: Uuid,
}

/// A new claim on a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRequest {
    /// The key, its caller, and the holder to claim it for.
    pub claim: KeyClaim,
    /// Of the request (its method, path and body); a key is only ever
    /// replayed for the same request.
    pub fingerprint: String,
    /// When the claim is made: the key's creation time if it is claimed,
    /// the instant a held key's lease is judged against (it has run out
    /// when its `locked_until` is not after `now`), and the quota's day.
    pub now: Timestamp,
    /// The claim may be taken over after this (its holder died).
    pub locked_until: Timestamp,
    /// Keys created before this are expired and may be claimed afresh.
    pub expired_before: Timestamp,
    /// How many new keys (not stored, or stored but expired) the caller
    /// may claim in the UTC day of `now` ([`ClaimRequest::quota_day`]),
    /// all its tokens together (docs/api.md "Limits"); one more is
    /// [`ClaimOutcome::QuotaExceeded`]. `None`: no limit. New keys are
    /// counted either way, so that a limit set later counts the whole day.
    pub new_keys_per_day: Option<u32>,
}

impl ClaimRequest {
    /// Seconds in a day of the quota.
    pub const SECS_PER_DAY: i64 = 24 * 60 * 60;

    /// The UTC day the claim counts against: whole days since the Unix
    /// epoch at `now`.
    ///
    /// ```
    /// use confab_domain::{ContactId, Timestamp};
    /// use confab_ports::{ClaimRequest, KeyClaim};
    /// use uuid::Uuid;
    ///
    /// let now = Timestamp::from_secs(86_400 + 3_600); // 01:00 UTC on day 1
    /// let request = ClaimRequest {
    ///     claim: KeyClaim {
    ///         contact_id: ContactId::from_uuid(Uuid::from_u128(1)),
    ///         key: "send-1".to_owned(),
    ///         holder: Uuid::from_u128(2),
    ///     },
    ///     fingerprint: "digest".to_owned(),
    ///     now,
    ///     locked_until: now.plus_secs(10),
    ///     expired_before: now.plus_secs(-86_400),
    ///     new_keys_per_day: Some(10_000),
    /// };
    /// assert_eq!(request.quota_day(), 1);
    /// // The quota starts over at midnight UTC, 23 hours later.
    /// assert_eq!(request.secs_to_next_quota_day(), 23 * 3_600);
    /// ```
    pub const fn quota_day(&self) -> i64 {
        self.now.secs().div_euclid(Self::SECS_PER_DAY)
    }

    /// Whole seconds from `now` to the next UTC day, when the quota starts
    /// over (1 to 86,400).
    pub const fn secs_to_next_quota_day(&self) -> i64 {
        Self::SECS_PER_DAY - self.now.secs().rem_euclid(Self::SECS_PER_DAY)
    }
}

/// What the store found when claiming a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// The key is the caller's to use (new, expired, or its holder's lease
    /// ran out).
    Claimed,
    /// Another request holds it (`same_request`: with the same fingerprint).
    InFlight {
        /// The holder runs the same request (a retry came too early);
        /// `false`: the key was used for another request.
        same_request: bool,
    },
    /// Already answered (`same_request`: with the same fingerprint).
    Completed {
        /// The answer is for the same request, so it may be replayed;
        /// `false`: the key was used for another request.
        same_request: bool,
        /// The answer kept for the key.
        response: StoredResponse,
    },
    /// A new key, refused: the caller already claimed
    /// [`ClaimRequest::new_keys_per_day`] new keys this day. Nothing of
    /// the claim was stored.
    QuotaExceeded,
}

/// Completes a claimed key in the transaction of the write it protects:
/// the store renders the response from what it wrote and stores it before
/// committing, and refuses to commit when the claim was lost meanwhile.
pub struct Completion<T> {
    /// The claim the response is stored under: it must still be held when
    /// the write commits.
    pub claim: KeyClaim,
    render: Box<dyn FnOnce(&T) -> StoredResponse + Send>,
}

impl<T: 'static> Completion<T> {
    /// Completes `claim` with the response `render` makes of what the
    /// write returns.
    pub fn new(
        claim: KeyClaim,
        render: impl FnOnce(&T) -> StoredResponse + Send + 'static,
    ) -> Self {
        Self {
            claim,
            render: Box::new(render),
        }
    }

    /// The response for `written`, with the claim to store it under.
    pub fn render(self, written: &T) -> (KeyClaim, StoredResponse) {
        let response = (self.render)(written);
        (self.claim, response)
    }

    /// A completion for a write that returns `U`, whose response is
    /// rendered from the `T` that `f` makes of it.
    pub fn adapt<U>(self, f: impl FnOnce(&U) -> T + Send + 'static) -> Completion<U> {
        let render = self.render;
        Completion {
            claim: self.claim,
            render: Box::new(move |u: &U| render(&f(u))),
        }
    }
}

impl<T> std::fmt::Debug for Completion<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Completion")
            .field("claim", &self.claim)
            .finish_non_exhaustive()
    }
}

/// Idempotency keys: claimed before a request runs, completed in the
/// request's own write (see [`Completion`]), or here when the request ended
/// in an answer without a write.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// Claims the key for `request.claim.holder` unless another live
    /// request holds it or it was already answered. A new key counts
    /// against the caller's quota of the day in the same unit of work, and
    /// past the quota nothing of it is stored (`QuotaExceeded`); a key
    /// stored before (a retry, a replay, a takeover after the lease) does
    /// not count.
    async fn claim_key(&self, request: ClaimRequest) -> Result<ClaimOutcome, StoreError>;
    /// Stores `response` for a key its holder still holds; `false` when the
    /// claim was lost.
    async fn complete_key(
        &self,
        claim: KeyClaim,
        response: StoredResponse,
    ) -> Result<bool, StoreError>;
    /// Whether the caller's `key` holds an answer for a request made at or
    /// after `since` (a retry will be replayed or refused, not run).
    async fn key_answered(
        &self,
        contact_id: ContactId,
        key: String,
        since: Timestamp,
    ) -> Result<bool, StoreError>;
    /// Gives up a key still held and not answered, so a retry can run.
    async fn release_key(&self, claim: KeyClaim) -> Result<(), StoreError>;
    /// Forgets keys created before `before`, and the quota counts of the
    /// days before `before`'s; returns how many keys.
    async fn prune_keys(&self, before: Timestamp) -> Result<u64, StoreError>;
}
