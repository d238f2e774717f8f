//! Webhooks (docs/api.md "Webhooks"): the operator creates, lists and deletes
//! them; the delivery worker (in the server) asks here what to do next and
//! reports what happened. Every rule lives here: which URLs and addresses
//! are allowed, how long leases hold, when a failed event is tried again
//! and when it is given up. The worker only sends HTTP requests.
//!
//! Delivery, at least once:
//! - first attempts follow each webhook's cursor, in event order, by the
//!   one holder of its lease ([`WEBHOOK_LEASE_SECS`], renewed with each
//!   event); the cursor moves past an event only after its attempt, in the
//!   transaction that records a retry when it failed;
//! - a failed event becomes a retry, due after [`retry_delay_secs`], leased
//!   one attempt at a time, so it never holds back the events after it;
//! - retries stop once [`GIVE_UP_AFTER_SECS`] have passed since the first
//!   attempt (a log line says so);
//! - a process that dies mid-attempt leaves a lease that runs out: another
//!   process (or this one restarted) makes the attempt again.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use confab_domain::{EventId, EventType, Page, Paged, Timestamp};
use confab_ports::{CursorMove, NewRetry};
pub use confab_ports::{
    DeliveryAttempt, EventBatch, HostResolver, LeasedRetry, RetryOutcome, StoredEvent, Webhook,
    WebhookBacklog, WebhookId, WebhookLease, WebhookSecret,
};
use uuid::Uuid;

use crate::{Confab, ServiceError};

/// How long a lease holds: one attempt (at most [`DELIVERY_TIMEOUT_SECS`],
/// plus resolving the host and the store calls around it) fits well within
/// it. A process that died mid-attempt is replaced after at most this.
pub const WEBHOOK_LEASE_SECS: i64 = 20;
/// An attempt not answered with a 2xx within this failed.
pub const DELIVERY_TIMEOUT_SECS: u64 = 10;
/// Retries stop after this long since the first attempt (24 h).
pub const GIVE_UP_AFTER_SECS: i64 = 24 * 60 * 60;
/// The longest pause between two attempts (1 h).
pub const MAX_RETRY_DELAY_SECS: i64 = 60 * 60;
/// Events read per batch of first attempts.
pub const EVENTS_PER_BATCH: u32 = 32;
/// The longest URL accepted.
pub const MAX_URL_CHARS: usize = 2048;

/// The pause after the `attempts`-th failed attempt: 1 s, doubling, at most
/// [`MAX_RETRY_DELAY_SECS`].
pub fn retry_delay_secs(attempts: u32) -> i64 {
    let doublings = attempts.saturating_sub(1).min(31);
    (1_i64 << doublings).min(MAX_RETRY_DELAY_SECS)
}

/// What to do after a failed attempt number `attempts` (1: the first)
/// whose first attempt was at `first_attempt_at`: try again after the
/// backoff, or give up once [`GIVE_UP_AFTER_SECS`] have passed.
pub fn after_failure(attempts: u32, first_attempt_at: Timestamp, now: Timestamp) -> RetryOutcome {
    if now.micros() - first_attempt_at.micros() >= GIVE_UP_AFTER_SECS * 1_000_000 {
        RetryOutcome::Done
    } else {
        RetryOutcome::RetryAt(now.plus_secs(retry_delay_secs(attempts)))
    }
}

/// Whether a webhook may be sent to `ip` without
/// `CONFAB_WEBHOOK_ALLOW_PRIVATE`: not private, loopback, link-local,
/// unique-local, unspecified, multicast, broadcast, shared (CGNAT),
/// reserved or documentation space, nor an IPv6 form that embeds an IPv4
/// address (mapped, compatible, NAT64, 6to4), which could reach any of
/// those.
pub fn is_public_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let refused = a == 0 // "this network", unspecified
        || a == 10 // private
        || a == 127 // loopback
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 169 && b == 254) // link-local
        || (a == 172 && (16..32).contains(&b)) // private
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2) // documentation
        || (a == 192 && b == 88 && c == 99) // 6to4 relay anycast
        || (a == 192 && b == 168) // private
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || (a == 198 && b == 51 && c == 100) // documentation
        || (a == 203 && b == 0 && c == 113) // documentation
        || a >= 224; // multicast, reserved, broadcast
    !refused
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    let refused = ip.is_unspecified()
        || ip.is_loopback()
        || (s[0..5] == [0, 0, 0, 0, 0] && (s[5] == 0xffff || s[5] == 0)) // v4-mapped, v4-compatible
        || (s[0] == 0x64 && s[1] == 0xff9b) // NAT64
        || (s[0] == 0x100 && s[1..4] == [0, 0, 0]) // discard-only
        || (s[0] == 0x2001 && s[1] < 0x200) // IETF protocol assignments (Teredo, ...)
        || (s[0] == 0x2001 && s[1] == 0xdb8) // documentation
        || s[0] == 0x2002 // 6to4
        || (s[0] & 0xfe00) == 0xfc00 // unique local
        || (s[0] & 0xffc0) == 0xfe80 // link-local
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
        || (s[0] & 0xff00) == 0xff00; // multicast
    !refused
}

/// Why a webhook URL or filter was refused.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("the URL {url:?} is not an absolute http:// or https:// URL: {why}")]
    BadUrl { url: String, why: String },
    #[error(
        "the URL's host {host} is or resolves to {address}, which is not a public address (private, loopback, link-local or otherwise reserved); set CONFAB_WEBHOOK_ALLOW_PRIVATE=true to allow it"
    )]
    PrivateAddress { host: String, address: IpAddr },
    #[error(
        "the URL's host {host} cannot be resolved ({why}); set CONFAB_WEBHOOK_ALLOW_PRIVATE=true to skip the address check"
    )]
    Unresolvable { host: String, why: String },
    #[error("unknown event types: {}", .0.join(", "))]
    UnknownEventTypes(Vec<String>),
    #[error("there is no webhook with id {0:?}")]
    NotFound(String),
    #[error(transparent)]
    Service(#[from] ServiceError),
}

/// Which addresses webhooks may go to, and how names are resolved to check.
#[derive(Clone)]
pub struct AddressPolicy {
    /// `CONFAB_WEBHOOK_ALLOW_PRIVATE`: any address.
    pub allow_private: bool,
    pub resolver: Arc<dyn HostResolver>,
}

/// A URL as the HTTP client parses it: the server parses (it owns the
/// client), the rules are here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedUrl {
    /// The URL as the client writes it back (normalised): what is stored
    /// and requested.
    pub text: String,
    pub scheme: String,
    pub host: Option<UrlHost>,
}

/// A URL's host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlHost {
    Name(String),
    /// A literal address, in whatever spelling the URL gave it.
    Address(IpAddr),
}

/// A webhook URL that passed the checks of its form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookTarget {
    /// The URL as parsed (normalised), what is stored and requested.
    pub url: String,
    pub host: UrlHost,
}

/// Checks the form of a webhook URL: `raw` as given, `parsed` as the
/// client parsed it (or why it could not): an absolute `http://` or
/// `https://` URL with a host, at most [`MAX_URL_CHARS`] characters.
pub fn webhook_target(
    raw: &str,
    parsed: Result<ParsedUrl, String>,
) -> Result<WebhookTarget, WebhookError> {
    let bad = |why: &str| WebhookError::BadUrl {
        url: raw.to_owned(),
        why: why.to_owned(),
    };
    if raw.chars().count() > MAX_URL_CHARS {
        return Err(bad("it is longer than 2048 characters"));
    }
    let parsed = parsed.map_err(|why| bad(&why))?;
    if !matches!(parsed.scheme.as_str(), "http" | "https") {
        return Err(bad("only http and https are allowed"));
    }
    match parsed.host {
        None => Err(bad("it has no host")),
        Some(UrlHost::Name(name)) if name.is_empty() => Err(bad("it has no host")),
        Some(host) => Ok(WebhookTarget {
            url: parsed.text,
            host,
        }),
    }
}

/// The first of `addresses` a webhook may not go to, when there is one.
pub fn first_refused(addresses: &[IpAddr]) -> Option<IpAddr> {
    addresses.iter().copied().find(|ip| !is_public_address(*ip))
}

impl AddressPolicy {
    /// Checks where `target` leads: a literal address directly, a name by
    /// resolving it and checking every address (unless private addresses
    /// are allowed).
    pub async fn check(&self, target: &WebhookTarget) -> Result<(), WebhookError> {
        if self.allow_private {
            return Ok(());
        }
        let (host, addresses) = match &target.host {
            UrlHost::Address(ip) => (ip.to_string(), vec![*ip]),
            UrlHost::Name(host) => {
                let found = self.resolver.resolve(host).await.map_err(|why| {
                    WebhookError::Unresolvable {
                        host: host.clone(),
                        why,
                    }
                })?;
                if found.is_empty() {
                    return Err(WebhookError::Unresolvable {
                        host: host.clone(),
                        why: "no address".to_owned(),
                    });
                }
                (host.clone(), found)
            }
        };
        match first_refused(&addresses) {
            Some(address) => Err(WebhookError::PrivateAddress { host, address }),
            None => Ok(()),
        }
    }
}

/// Parses a filter: event type names, comma-separated (spaces around
/// names ignored; empty: every type); duplicates kept once.
pub fn parse_event_types(raw: &str) -> Result<Vec<EventType>, WebhookError> {
    let mut types = Vec::new();
    let mut unknown = Vec::new();
    for name in raw.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match name.parse::<EventType>() {
            Ok(t) if !types.contains(&t) => types.push(t),
            Ok(_) => {}
            Err(_) => unknown.push(name.to_owned()),
        }
    }
    if unknown.is_empty() {
        Ok(types)
    } else {
        Err(WebhookError::UnknownEventTypes(unknown))
    }
}

fn random_secret() -> Result<WebhookSecret, ServiceError> {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).map_err(|e| ServiceError::Internal {
        what: "no randomness for a webhook secret",
        source: e.to_string().into(),
    })?;
    Ok(WebhookSecret::new(
        bytes.iter().map(|b| format!("{b:02x}")).collect(),
    ))
}

impl Confab {
    /// Creates a webhook (operator action) for `url`, receiving the events
    /// of `events` (all when empty) committed from now on. The returned
    /// webhook holds its secret: the one time it is shown.
    pub async fn create_webhook(
        &self,
        target: WebhookTarget,
        events: Vec<EventType>,
        policy: &AddressPolicy,
    ) -> Result<Webhook, WebhookError> {
        policy.check(&target).await?;
        let secret = random_secret()?;
        let webhook = self
            .ports
            .webhooks
            .create_webhook(
                WebhookId::from_uuid(self.new_uuid()),
                target.url,
                events,
                secret,
                self.now(),
            )
            .await
            .map_err(ServiceError::from)?;
        tracing::info!(webhook = %webhook.id, "webhook created");
        Ok(webhook)
    }

    /// Every webhook, oldest first (with their secrets: callers show none).
    pub async fn list_webhooks(&self) -> Result<Vec<Webhook>, ServiceError> {
        Ok(self.ports.webhooks.list_webhooks().await?)
    }

    /// Deletes the webhook with id `id` (as printed by `webhook create`).
    pub async fn delete_webhook(&self, id: &str) -> Result<(), WebhookError> {
        let not_found = || WebhookError::NotFound(id.to_owned());
        // Only the canonical form, as printed.
        if id.len() != 36 || id.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(not_found());
        }
        let uuid = uuid::Uuid::parse_str(id).map_err(|_| not_found())?;
        let webhook = WebhookId::from_uuid(uuid);
        match self.ports.webhooks.delete_webhook(webhook).await {
            Ok(()) => {
                tracing::info!(%webhook, "webhook deleted");
                Ok(())
            }
            Err(confab_ports::StoreError::NotFound) => Err(not_found()),
            Err(e) => Err(ServiceError::from(e).into()),
        }
    }

    /// Takes a webhook with events to attempt first, if any is free.
    pub async fn lease_webhook(&self) -> Result<Option<WebhookLease>, ServiceError> {
        let now = self.now();
        Ok(self
            .ports
            .webhooks
            .lease_webhook(self.new_uuid(), now, now.plus_secs(WEBHOOK_LEASE_SECS))
            .await?)
    }

    /// The leased webhook's next events after `after`.
    pub async fn next_webhook_events(
        &self,
        lease: &WebhookLease,
        after: i64,
    ) -> Result<EventBatch, ServiceError> {
        Ok(self
            .ports
            .webhooks
            .webhook_events(lease.webhook.events.clone(), after, EVENTS_PER_BATCH)
            .await?)
    }

    /// Records the first attempt of `event`: moves the cursor past it and,
    /// when it failed, schedules its retry, renewing the lease. `false`
    /// when the lease was lost (stop: another holder goes on from the
    /// cursor).
    pub async fn first_attempt_made(
        &self,
        lease: &WebhookLease,
        event: &StoredEvent,
        attempted: &Attempted,
    ) -> Result<bool, ServiceError> {
        let delivered = attempted.delivered();
        let now = self.now();
        // The attempt ended a few seconds at most before now: near enough
        // for a 24 h limit.
        let retry = (!delivered).then(|| NewRetry {
            event: event.id,
            next_at: now.plus_secs(retry_delay_secs(1)),
            first_attempt_at: now,
        });
        if !delivered {
            tracing::info!(
                webhook = %lease.webhook.id,
                event = %event.id,
                delay_secs = retry_delay_secs(1),
                "webhook attempt 1 failed; retrying"
            );
        }
        let attempt = self.attempt_record(event.id, 1, attempted, now);
        self.move_cursor(lease, event.position, retry, Some(attempt), now)
            .await
    }

    fn attempt_record(
        &self,
        event: EventId,
        attempt: u32,
        attempted: &Attempted,
        at: Timestamp,
    ) -> DeliveryAttempt {
        DeliveryAttempt {
            id: self.new_uuid(),
            event,
            attempt,
            status: attempted.status,
            error: attempted.error.clone(),
            at,
        }
    }

    /// Moves the cursor to `through` (events the filter skipped); `false`
    /// when the lease was lost.
    pub async fn skip_webhook_events(
        &self,
        lease: &WebhookLease,
        through: i64,
    ) -> Result<bool, ServiceError> {
        self.move_cursor(lease, through, None, None, self.now())
            .await
    }

    async fn move_cursor(
        &self,
        lease: &WebhookLease,
        to: i64,
        retry: Option<NewRetry>,
        attempt: Option<DeliveryAttempt>,
        now: Timestamp,
    ) -> Result<bool, ServiceError> {
        Ok(self
            .ports
            .webhooks
            .move_cursor(CursorMove {
                webhook: lease.webhook.id,
                holder: lease.holder,
                to,
                retry,
                attempt,
                now,
                renew_until: now.plus_secs(WEBHOOK_LEASE_SECS),
            })
            .await?)
    }

    /// Gives the lease up, so that the webhook's next events go out at once.
    pub async fn release_webhook(&self, lease: &WebhookLease) -> Result<(), ServiceError> {
        Ok(self
            .ports
            .webhooks
            .release_webhook(lease.webhook.id, lease.holder, self.now())
            .await?)
    }

    /// Takes at most `limit` due retries, each for one attempt.
    pub async fn lease_retries(&self, limit: u32) -> Result<Vec<LeasedRetry>, ServiceError> {
        let now = self.now();
        Ok(self
            .ports
            .webhooks
            .lease_retries(
                self.new_uuid(),
                now,
                now.plus_secs(WEBHOOK_LEASE_SECS),
                limit,
            )
            .await?)
    }

    /// Records a retry's attempt: forgotten when delivered; else due again
    /// after the backoff, or given up (with a log line) 24 h after the
    /// first attempt.
    pub async fn retry_made(
        &self,
        retry: &LeasedRetry,
        attempted: &Attempted,
    ) -> Result<RetrySettled, ServiceError> {
        let now = self.now();
        let (outcome, settled) = if attempted.delivered() {
            (RetryOutcome::Done, RetrySettled::Delivered)
        } else {
            let outcome = after_failure(retry.attempt, retry.first_attempt_at, now);
            match outcome {
                RetryOutcome::Done => tracing::warn!(
                    webhook = %retry.webhook.id,
                    event = %retry.event.id,
                    attempts = retry.attempt,
                    "webhook delivery given up: no success within 24 h of the first attempt"
                ),
                RetryOutcome::RetryAt(_) => tracing::info!(
                    webhook = %retry.webhook.id,
                    event = %retry.event.id,
                    attempt = retry.attempt,
                    delay_secs = retry_delay_secs(retry.attempt),
                    "webhook attempt failed; retrying"
                ),
            }
            let settled = match outcome {
                RetryOutcome::Done => RetrySettled::GivenUp,
                RetryOutcome::RetryAt(_) => RetrySettled::RetryLater,
            };
            (outcome, settled)
        };
        let attempt = self.attempt_record(retry.event.id, retry.attempt, attempted, now);
        let held = self
            .ports
            .webhooks
            .settle_retry(
                retry.webhook.id,
                retry.event.id,
                retry.holder,
                outcome,
                attempt,
            )
            .await?;
        Ok(if held {
            settled
        } else {
            RetrySettled::LeaseLost
        })
    }

    /// A page of a webhook's attempts, newest first (server API).
    /// `NotFound` when there is no such webhook.
    pub async fn list_deliveries(
        &self,
        webhook: WebhookId,
        page: Page<Uuid>,
    ) -> Result<Paged<DeliveryAttempt>, ServiceError> {
        self.ports
            .webhooks
            .list_deliveries(webhook, page)
            .await
            .map_err(|e| crate::error::page_error(&page, e))?
            .ok_or(ServiceError::not_found())
    }

    /// What the deliveries owe now, for the metrics.
    pub async fn webhook_backlog(&self) -> Result<WebhookBacklog, ServiceError> {
        Ok(self.ports.webhooks.webhook_backlog().await?)
    }
}

/// How one attempt went, as the sender saw it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attempted {
    /// The receiver's answer, when there was one.
    pub status: Option<u16>,
    /// Why there was none.
    pub error: Option<String>,
}

impl Attempted {
    /// The receiver answered 2xx.
    pub fn delivered(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }
}

/// What became of a retry's attempt once recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetrySettled {
    /// Delivered: the retry is forgotten.
    Delivered,
    /// Failed: due again after the backoff.
    RetryLater,
    /// Failed for the last time (24 h after the first attempt).
    GivenUp,
    /// The lease ran out meanwhile: another holder makes the attempt.
    LeaseLost,
}

#[cfg(test)]
mod tests;
