//! Webhooks (API.md section 11): the operator creates, lists and deletes
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

use confab_domain::{EventType, Timestamp};
use confab_ports::{CursorMove, NewRetry};
pub use confab_ports::{
    EventBatch, HostResolver, LeasedRetry, RetryOutcome, StoredEvent, Webhook, WebhookId,
    WebhookLease, WebhookSecret,
};

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
        delivered: bool,
    ) -> Result<bool, ServiceError> {
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
        self.move_cursor(lease, event.position, retry, now).await
    }

    /// Moves the cursor to `through` (events the filter skipped); `false`
    /// when the lease was lost.
    pub async fn skip_webhook_events(
        &self,
        lease: &WebhookLease,
        through: i64,
    ) -> Result<bool, ServiceError> {
        self.move_cursor(lease, through, None, self.now()).await
    }

    async fn move_cursor(
        &self,
        lease: &WebhookLease,
        to: i64,
        retry: Option<NewRetry>,
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
    /// first attempt. `false` when the lease was lost meanwhile.
    pub async fn retry_made(
        &self,
        retry: &LeasedRetry,
        delivered: bool,
    ) -> Result<bool, ServiceError> {
        let outcome = if delivered {
            RetryOutcome::Done
        } else {
            let outcome = after_failure(retry.attempt, retry.first_attempt_at, self.now());
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
            outcome
        };
        Ok(self
            .ports
            .webhooks
            .settle_retry(retry.webhook.id, retry.event.id, retry.holder, outcome)
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use confab_ports::{MockHostResolver, MockIdGenerator, MockWebhookStore};
    use uuid::Uuid;

    use super::*;
    use crate::Ports;

    const NOW: i64 = 1_700_000_000;

    /// The service with `webhooks` and no other port expected to be used.
    fn service(webhooks: MockWebhookStore) -> Confab {
        let mut ids = MockIdGenerator::new();
        ids.expect_new_id().returning(|| Uuid::from_u128(7));
        Confab::new(Ports {
            webhooks: Arc::new(webhooks),
            ids: Arc::new(ids),
            ..crate::tests::mocked_ports(NOW)
        })
    }

    fn stored_event() -> StoredEvent {
        StoredEvent {
            id: confab_domain::EventId::from_uuid(Uuid::from_u128(9)),
            kind: EventType::MessageCreated,
            created_at: Timestamp::from_secs(NOW - 1),
            position: 42,
            payload: "{}".to_owned(),
        }
    }

    fn webhook() -> Webhook {
        Webhook {
            id: WebhookId::from_uuid(Uuid::from_u128(3)),
            url: "https://hooks.example/".to_owned(),
            events: Vec::new(),
            secret: WebhookSecret::new("s3cret".to_owned()),
            created_at: Timestamp::from_secs(NOW - 100),
        }
    }

    #[tokio::test]
    async fn a_refused_url_never_reaches_the_store() {
        // No expectation on the store: a call would fail the test.
        let confab = service(MockWebhookStore::new());
        let policy = policy(false, MockHostResolver::new());
        let refused = confab
            .create_webhook(target("192.168.0.10"), Vec::new(), &policy)
            .await;
        assert!(matches!(refused, Err(WebhookError::PrivateAddress { .. })));
    }

    #[tokio::test]
    async fn a_created_webhook_gets_a_fresh_secret_and_its_filter() {
        let mut store = MockWebhookStore::new();
        store
            .expect_create_webhook()
            .times(1)
            .withf(|_, url, events, secret, at| {
                url == "https://x/"
                    && events == &[EventType::MessageCreated]
                    && secret.expose().len() == 64
                    && secret.expose().bytes().all(|b| b.is_ascii_hexdigit())
                    && *at == Timestamp::from_secs(NOW)
            })
            .returning(|id, url, events, secret, created_at| {
                Ok(Webhook {
                    id,
                    url,
                    events,
                    secret,
                    created_at,
                })
            });
        let confab = service(store);
        let made = confab
            .create_webhook(
                target("93.184.215.14"),
                vec![EventType::MessageCreated],
                &policy(false, MockHostResolver::new()),
            )
            .await
            .expect("created");
        assert!(!format!("{made:?}").contains(made.secret.expose()));
    }

    #[tokio::test]
    async fn a_failed_first_attempt_moves_the_cursor_with_a_retry_in_one_second() {
        let mut store = MockWebhookStore::new();
        store
            .expect_move_cursor()
            .times(1)
            .withf(|m| {
                m.to == 42
                    && m.now == Timestamp::from_secs(NOW)
                    && m.renew_until == Timestamp::from_secs(NOW + WEBHOOK_LEASE_SECS)
                    && m.retry
                        == Some(NewRetry {
                            event: confab_domain::EventId::from_uuid(Uuid::from_u128(9)),
                            next_at: Timestamp::from_secs(NOW + 1),
                            first_attempt_at: Timestamp::from_secs(NOW),
                        })
            })
            .returning(|_| Ok(true));
        store
            .expect_move_cursor()
            .times(1)
            .withf(|m| m.to == 42 && m.retry.is_none())
            .returning(|_| Ok(false));
        let confab = service(store);
        let lease = WebhookLease {
            webhook: webhook(),
            holder: Uuid::from_u128(5),
            cursor: 41,
            until: Timestamp::from_secs(NOW + WEBHOOK_LEASE_SECS),
        };
        assert!(confab
            .first_attempt_made(&lease, &stored_event(), false)
            .await
            .expect("recorded"));
        // Delivered: no retry; the lost lease is reported.
        assert!(!confab
            .first_attempt_made(&lease, &stored_event(), true)
            .await
            .expect("recorded"));
    }

    #[tokio::test]
    async fn a_retry_is_rescheduled_with_backoff_dropped_after_24_hours_or_done() {
        let retry = |attempt: u32, first: i64| LeasedRetry {
            webhook: webhook(),
            event: stored_event(),
            attempt,
            first_attempt_at: Timestamp::from_secs(first),
            holder: Uuid::from_u128(6),
        };
        let mut store = MockWebhookStore::new();
        let expect = |store: &mut MockWebhookStore, outcome: RetryOutcome| {
            store
                .expect_settle_retry()
                .times(1)
                .withf(move |_, _, holder, o| *holder == Uuid::from_u128(6) && *o == outcome)
                .returning(|_, _, _, _| Ok(true));
        };
        expect(
            &mut store,
            RetryOutcome::RetryAt(Timestamp::from_secs(NOW + 8)),
        );
        expect(&mut store, RetryOutcome::Done);
        let confab = service(store);
        // The fourth attempt failed: the fifth in 8 s.
        assert!(confab
            .retry_made(&retry(4, NOW - 20), false)
            .await
            .expect("settled"));
        // A failure 24 h after the first attempt: given up (Done).
        assert!(confab
            .retry_made(&retry(30, NOW - GIVE_UP_AFTER_SECS), false)
            .await
            .expect("settled"));
        let mut store = MockWebhookStore::new();
        expect(&mut store, RetryOutcome::Done);
        let confab = service(store);
        assert!(confab
            .retry_made(&retry(2, NOW - 5), true)
            .await
            .expect("settled"));
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("address")
    }

    #[test]
    fn private_and_special_addresses_are_refused() {
        for refused in [
            "0.0.0.0",
            "10.1.2.3",
            "127.0.0.1",
            "127.255.255.254",
            "100.64.0.1",
            "100.127.255.255",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "192.0.0.8",
            "198.18.0.1",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:8.8.8.8",
            "::ffff:127.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "2002:a00:1::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
        ] {
            assert!(!is_public_address(ip(refused)), "{refused} must be refused");
        }
        for allowed in [
            "8.8.8.8",
            "1.1.1.1",
            "100.63.255.255",
            "100.128.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.169.0.1",
            "223.255.255.255",
            "2606:4700:4700::1111",
            "2a00:1450:4001::1",
        ] {
            assert!(is_public_address(ip(allowed)), "{allowed} must be allowed");
        }
    }

    fn parsed(scheme: &str, host: Option<UrlHost>) -> Result<ParsedUrl, String> {
        Ok(ParsedUrl {
            text: format!("{scheme}://x/"),
            scheme: scheme.to_owned(),
            host,
        })
    }

    fn name(host: &str) -> Option<UrlHost> {
        Some(UrlHost::Name(host.to_owned()))
    }

    #[test]
    fn only_http_and_https_urls_with_a_host() {
        for (scheme, host) in [
            ("ftp", name("example.com")),
            ("file", None),
            ("javascript", None),
            ("https", None),
            ("https", name("")),
        ] {
            assert!(
                matches!(
                    webhook_target("raw", parsed(scheme, host.clone())),
                    Err(WebhookError::BadUrl { .. })
                ),
                "{scheme} {host:?}"
            );
        }
        assert!(matches!(
            webhook_target("raw", Err("relative URL without a base".into())),
            Err(WebhookError::BadUrl { .. })
        ));
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_CHARS));
        assert!(webhook_target(&long, parsed("https", name("example.com"))).is_err());
        for scheme in ["http", "https"] {
            let ok = webhook_target("raw", parsed(scheme, name("example.com"))).expect(scheme);
            assert_eq!(ok.url, format!("{scheme}://x/"));
            assert_eq!(ok.host, UrlHost::Name("example.com".into()));
        }
    }

    fn policy(allow_private: bool, resolver: MockHostResolver) -> AddressPolicy {
        AddressPolicy {
            allow_private,
            resolver: Arc::new(resolver),
        }
    }

    fn target(host: &str) -> WebhookTarget {
        let host = match host.trim_matches(['[', ']']).parse::<IpAddr>() {
            Ok(ip) => UrlHost::Address(ip),
            Err(_) => UrlHost::Name(host.to_owned()),
        };
        WebhookTarget {
            url: "https://x/".to_owned(),
            host,
        }
    }

    #[tokio::test]
    async fn a_literal_address_is_checked_without_resolving() {
        // No expectation: resolving would fail the test.
        let p = policy(false, MockHostResolver::new());
        assert!(matches!(
            p.check(&target("10.0.0.1")).await,
            Err(WebhookError::PrivateAddress { .. })
        ));
        assert!(matches!(
            p.check(&target("[fe80::1]")).await,
            Err(WebhookError::PrivateAddress { .. })
        ));
        p.check(&target("93.184.215.14"))
            .await
            .expect("a public address");
    }

    #[tokio::test]
    async fn a_name_is_refused_when_any_of_its_addresses_is_private() {
        let mut resolver = MockHostResolver::new();
        resolver
            .expect_resolve()
            .withf(|host| host == "mixed.example")
            .returning(|_| Ok(vec![ip("93.184.215.14"), ip("10.0.0.7")]));
        resolver
            .expect_resolve()
            .withf(|host| host == "public.example")
            .returning(|_| Ok(vec![ip("93.184.215.14"), ip("2606:2800:21f:cb07::1")]));
        resolver
            .expect_resolve()
            .withf(|host| host == "nowhere.example")
            .returning(|_| Err("no such host".to_owned()));
        resolver
            .expect_resolve()
            .withf(|host| host == "empty.example")
            .returning(|_| Ok(Vec::new()));
        let p = policy(false, resolver);
        match p.check(&target("mixed.example")).await {
            Err(e @ WebhookError::PrivateAddress { .. }) => {
                assert!(
                    e.to_string().contains("CONFAB_WEBHOOK_ALLOW_PRIVATE"),
                    "{e}"
                );
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        p.check(&target("public.example")).await.expect("public");
        assert!(matches!(
            p.check(&target("nowhere.example")).await,
            Err(WebhookError::Unresolvable { .. })
        ));
        assert!(matches!(
            p.check(&target("empty.example")).await,
            Err(WebhookError::Unresolvable { .. })
        ));
    }

    #[tokio::test]
    async fn allow_private_allows_any_address_without_resolving() {
        let p = policy(true, MockHostResolver::new());
        p.check(&target("127.0.0.1")).await.expect("allowed");
        p.check(&target("localhost")).await.expect("allowed");
    }

    #[test]
    fn event_type_filters() {
        assert_eq!(parse_event_types("").expect("empty"), Vec::new());
        assert_eq!(
            parse_event_types("message.created, group.deleted,message.created").expect("valid"),
            vec![EventType::MessageCreated, EventType::GroupDeleted]
        );
        match parse_event_types("message.created,message.exploded,bogus") {
            Err(WebhookError::UnknownEventTypes(names)) => {
                assert_eq!(names, ["message.exploded", "bogus"]);
            }
            other => panic!("expected unknown types, got {other:?}"),
        }
    }

    #[test]
    fn backoff_doubles_from_one_second_up_to_an_hour() {
        let delays: Vec<i64> = (1..=14).map(retry_delay_secs).collect();
        assert_eq!(
            delays,
            [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 3600, 3600]
        );
        assert_eq!(retry_delay_secs(u32::MAX), MAX_RETRY_DELAY_SECS);
        assert_eq!(retry_delay_secs(0), 1);
    }

    #[test]
    fn retries_go_on_for_24_hours_then_stop() {
        let first = Timestamp::from_secs(1_000_000);
        assert_eq!(
            after_failure(1, first, first),
            RetryOutcome::RetryAt(first.plus_secs(1))
        );
        let later = first.plus_secs(GIVE_UP_AFTER_SECS - 1);
        assert_eq!(
            after_failure(30, later, later),
            RetryOutcome::RetryAt(later.plus_secs(3600))
        );
        assert_eq!(
            after_failure(30, first, later),
            RetryOutcome::RetryAt(later.plus_secs(3600))
        );
        assert_eq!(
            after_failure(31, first, first.plus_secs(GIVE_UP_AFTER_SECS)),
            RetryOutcome::Done
        );
        // Attempts made over 24 h with this schedule: about 35.
        let mut at = 0;
        let mut attempts = 1;
        while at < GIVE_UP_AFTER_SECS {
            at += retry_delay_secs(attempts);
            attempts += 1;
        }
        assert!((30..=40).contains(&attempts), "{attempts}");
    }
}
