//! Webhook delivery (docs/api.md "Webhooks"): two loops on the main runtime
//! (never on actix's workers), started by [`spawn_delivery`]. One leases
//! webhooks with events to attempt first and sends those in event order,
//! one webhook per task; the other leases due retries and sends each on
//! its own. What to do with each outcome (the cursor, the backoff, giving
//! up) is the service's; this module sends HTTP requests.
//!
//! Both loops poll the store every [`POLL_EVERY`] when idle: a new event
//! goes out within about that, in every process, without a listener.
//!
//! Requests go through [`reqwest`] with rustls (no system OpenSSL), no
//! proxy, no redirects, a [`DELIVERY_TIMEOUT_SECS`] limit, and a resolver
//! that refuses non-public addresses: the address checked is the one
//! connected to, so a name cannot resolve to a public address for the
//! check and a private one for the connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use confab_domain::{ContactId, ConversationId, EventType};
use confab_service::{
    first_refused, is_public_address, webhook_target, Attempted, Confab, HostResolver, LeasedRetry,
    ParsedUrl, RetrySettled, ServiceError, StoredEvent, UrlHost, Webhook, WebhookError,
    WebhookLease, WebhookTarget, DELIVERY_TIMEOUT_SECS, EVENTS_PER_BATCH,
};
use hmac::{Hmac, Mac};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use sha2::Sha256;
use tokio::sync::Semaphore;

use crate::events::write_event;
use confab_metrics::Metrics;

/// How often idle loops look for new events and due retries.
pub const POLL_EVERY: Duration = Duration::from_millis(250);
/// The pause after a store error, so that a database outage is not hammered.
const ERROR_PAUSE: Duration = Duration::from_secs(1);
/// Webhooks whose first attempts one process sends at once.
const PARALLEL_WEBHOOKS: usize = 8;
/// Retries one process sends at once.
const PARALLEL_RETRIES: usize = 16;
/// Resolving a host name may take this long.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(2);

/// Starts delivering webhooks on the current runtime, for as long as it
/// runs. `allow_private`: `CONFAB_WEBHOOK_ALLOW_PRIVATE`.
pub fn spawn_delivery(service: Confab, allow_private: bool, metrics: Arc<Metrics>) {
    let client = match client(allow_private) {
        Ok(client) => client,
        Err(e) => {
            tracing::error!(error = %e, "cannot build the webhook client: no webhook is delivered");
            return;
        }
    };
    let sender = Arc::new(Sender {
        client,
        allow_private,
        metrics,
    });
    tokio::spawn(first_attempts(service.clone(), sender.clone()));
    tokio::spawn(retries(service, sender));
}

/// `raw` as the HTTP client parses it (WHATWG: `http://2130706433/` is
/// 127.0.0.1), checked by the service's rules.
pub fn parse_url(raw: &str) -> Result<WebhookTarget, WebhookError> {
    let parsed = reqwest::Url::parse(raw.trim())
        .map(|url| ParsedUrl {
            scheme: url.scheme().to_owned(),
            // Written back normalised: an address in its one spelling
            // (IPv6 in brackets), which parses as one.
            host: url.host_str().map(|host| {
                match host.trim_start_matches('[').trim_end_matches(']').parse() {
                    Ok(ip) => UrlHost::Address(ip),
                    Err(_) => UrlHost::Name(host.to_owned()),
                }
            }),
            text: url.into(),
        })
        .map_err(|e| e.to_string());
    webhook_target(raw, parsed)
}

/// Resolves names with the system resolver (for `webhook create`).
pub struct SystemResolver;

#[async_trait]
impl HostResolver for SystemResolver {
    async fn resolve(&self, host: &str) -> Result<Vec<std::net::IpAddr>, String> {
        Ok(lookup(host).await?.into_iter().map(|a| a.ip()).collect())
    }
}

async fn lookup(host: &str) -> Result<Vec<SocketAddr>, String> {
    match tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((host, 0))).await {
        Ok(Ok(found)) => Ok(found.collect()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {RESOLVE_TIMEOUT:?}")),
    }
}

/// reqwest's resolver: the system's, refusing a name with any non-public
/// address unless private addresses are allowed.
struct GuardedResolver {
    allow_private: bool,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_private = self.allow_private;
        Box::pin(async move {
            let host = name.as_str();
            let found = lookup(host).await?;
            if found.is_empty() {
                return Err(format!("{host} resolves to no address").into());
            }
            if !allow_private {
                let ips: Vec<_> = found.iter().map(SocketAddr::ip).collect();
                if let Some(ip) = first_refused(&ips) {
                    return Err(format!(
                        "{host} resolves to {ip}, which is not public (CONFAB_WEBHOOK_ALLOW_PRIVATE)"
                    )
                    .into());
                }
            }
            let addrs: Addrs = Box::new(found.into_iter());
            Ok(addrs)
        })
    }
}

fn client(allow_private: bool) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .use_rustls_tls()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(DELIVERY_TIMEOUT_SECS))
        .dns_resolver(Arc::new(GuardedResolver { allow_private }))
        .user_agent(concat!("confab-webhooks/", env!("CARGO_PKG_VERSION")))
        .build()
}

struct Sender {
    client: reqwest::Client,
    allow_private: bool,
    metrics: Arc<Metrics>,
}

/// The body of a delivery: the event as the event stream shows it, its
/// payload as the acting contact sees it; a `message.created` also names
/// the members to notify (`recipients`, docs/api.md "Server API: from an app's backend"): their ids, or
/// `null` above [`confab_service::PUSH_RECIPIENTS_MAX`] members.
pub fn event_body(event: &StoredEvent, recipients: Option<Option<&[ContactId]>>) -> String {
    let mut body = Vec::with_capacity(event.payload.len() + 160);
    write_event(&mut body, event, &event.payload);
    if let Some(recipients) = recipients {
        body.pop(); // the closing brace
        body.extend_from_slice(br#","recipients":"#);
        match recipients {
            None => body.extend_from_slice(b"null"),
            Some(ids) => {
                body.push(b'[');
                for (i, id) in ids.iter().enumerate() {
                    if i > 0 {
                        body.push(b',');
                    }
                    body.extend_from_slice(format!("\"{id}\"").as_bytes());
                }
                body.push(b']');
            }
        }
        body.push(b'}');
    }
    // Written from text alone (ids, a type name, a number, the payload).
    String::from_utf8(body).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The body to send for `event` ([`event_body`]); for a `message.created`,
/// the members to notify are read now, as they are when it goes out. A
/// message deleted since (its payload no longer says where it was) has no
/// one to notify.
async fn delivery_body(service: &Confab, event: &StoredEvent) -> Result<String, ServiceError> {
    if event.kind != EventType::MessageCreated {
        return Ok(event_body(event, None));
    }
    let Some((conversation, sender)) = message_audience(&event.payload) else {
        return Ok(event_body(event, Some(Some(&[]))));
    };
    let recipients = service.push_recipients(conversation, sender).await?;
    Ok(event_body(event, Some(recipients.as_deref())))
}

/// The conversation and the sender of a message payload.
fn message_audience(payload: &str) -> Option<(ConversationId, ContactId)> {
    #[derive(serde::Deserialize)]
    struct Sender<'a> {
        id: &'a str,
    }
    #[derive(serde::Deserialize)]
    struct Message<'a> {
        conversation_id: &'a str,
        #[serde(borrow)]
        contact: Sender<'a>,
    }
    let m: Message<'_> = serde_json::from_str(payload).ok()?;
    Some((m.conversation_id.parse().ok()?, m.contact.id.parse().ok()?))
}

/// `Confab-Signature`: `t=<unix seconds>,v1=<hex HMAC-SHA256 of
/// "<t>.<body>">`, keyed with the secret's text.
pub fn signature(secret: &str, t: i64, body: &str) -> String {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
        // HMAC takes keys of any length.
        unreachable!("HMAC refused a key");
    };
    mac.update(t.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("t={t},v1={hex}")
}

fn unix_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

impl Sender {
    /// One attempt: the webhook's answer (2xx in time is delivered), or
    /// why there was none.
    async fn attempt(
        &self,
        service: &Confab,
        webhook: &Webhook,
        event: &StoredEvent,
        attempt: u32,
    ) -> Attempted {
        let refused = |error: &str| Attempted {
            status: None,
            error: Some(error.to_owned()),
        };
        let target = match parse_url(&webhook.url) {
            Ok(target) => target,
            Err(_) => {
                // Checked at creation; the message would hold the URL.
                tracing::warn!(webhook = %webhook.id, "stored webhook URL does not parse");
                return refused("the webhook's URL does not parse");
            }
        };
        // A literal address is never resolved: checked here.
        if let UrlHost::Address(ip) = target.host {
            if !self.allow_private && !is_public_address(ip) {
                tracing::warn!(
                    webhook = %webhook.id,
                    %ip,
                    "webhook address is not public (CONFAB_WEBHOOK_ALLOW_PRIVATE)"
                );
                return refused("the address is not public (CONFAB_WEBHOOK_ALLOW_PRIVATE)");
            }
        }
        let body = match delivery_body(service, event).await {
            Ok(body) => body,
            Err(e) => {
                // Not sent: attempted again like a failed delivery.
                tracing::warn!(webhook = %webhook.id, event = %event.id, error = %e, "cannot read whom a message notifies");
                return refused("not sent: the database could not say whom the message notifies");
            }
        };
        let signature = signature(webhook.secret.expose(), unix_secs(), &body);
        let sent = self
            .client
            .post(target.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("Confab-Event-Id", event.id.to_string())
            .header("Confab-Delivery-Attempt", attempt.to_string())
            .header("Confab-Signature", signature)
            .body(body)
            .send()
            .await;
        let attempted = match sent {
            Ok(response) => Attempted {
                status: Some(response.status().as_u16()),
                error: None,
            },
            // The error's chain names the cause (timeout, refused address,
            // connection); not the URL, which may hold credentials.
            Err(e) => refused(&format!("{:#}", anyhow::Error::new(e.without_url()))),
        };
        match (&attempted.status, &attempted.error) {
            _ if attempted.delivered() => {
                tracing::debug!(webhook = %webhook.id, event = %event.id, attempt, "webhook delivered");
            }
            (Some(status), _) => tracing::info!(
                webhook = %webhook.id,
                event = %event.id,
                attempt,
                status,
                "webhook answered without success"
            ),
            (None, error) => tracing::info!(
                webhook = %webhook.id,
                event = %event.id,
                attempt,
                error = error.as_deref().unwrap_or_default(),
                "webhook attempt failed"
            ),
        }
        self.metrics.webhook_attempt(attempted.delivered());
        attempted
    }
}

/// Leases webhooks with events to attempt first, one task each.
async fn first_attempts(service: Confab, sender: Arc<Sender>) {
    let slots = Arc::new(Semaphore::new(PARALLEL_WEBHOOKS));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        match service.lease_webhook().await {
            Ok(Some(lease)) => {
                let service = service.clone();
                let sender = sender.clone();
                tokio::spawn(async move {
                    drain(&service, &sender, &lease).await;
                    drop(slot);
                });
            }
            Ok(None) => {
                drop(slot);
                tokio::time::sleep(POLL_EVERY).await;
            }
            Err(e) => {
                drop(slot);
                tracing::warn!(error = %e, "cannot lease a webhook");
                tokio::time::sleep(ERROR_PAUSE).await;
            }
        }
    }
}

/// Sends a leased webhook's events in order, moving its cursor after each,
/// until none is left (or the lease is lost); then frees it.
async fn drain(service: &Confab, sender: &Sender, lease: &WebhookLease) {
    let mut after = lease.cursor;
    let mut failed = false;
    let held = 'events: loop {
        let batch = match service.next_webhook_events(lease, after).await {
            Ok(batch) => batch,
            Err(e) => {
                tracing::warn!(webhook = %lease.webhook.id, error = %e, "cannot read events");
                failed = true;
                break 'events true;
            }
        };
        let more = batch.events.len() >= usize::try_from(EVENTS_PER_BATCH).unwrap_or(usize::MAX);
        for event in &batch.events {
            let attempted = sender.attempt(service, &lease.webhook, event, 1).await;
            match service.first_attempt_made(lease, event, &attempted).await {
                Ok(true) => after = event.position,
                Ok(false) => break 'events false,
                Err(e) => {
                    // The cursor stays before the event: it is attempted
                    // again (at least once).
                    tracing::warn!(webhook = %lease.webhook.id, event = %event.id, error = %e, "cannot record a webhook attempt");
                    failed = true;
                    break 'events true;
                }
            }
        }
        if batch.through > after {
            match service.skip_webhook_events(lease, batch.through).await {
                Ok(true) => after = batch.through,
                Ok(false) => break 'events false,
                Err(e) => {
                    tracing::warn!(webhook = %lease.webhook.id, error = %e, "cannot move a webhook cursor");
                    failed = true;
                    break 'events true;
                }
            }
        }
        if !more {
            break 'events true;
        }
    };
    if !held {
        tracing::info!(webhook = %lease.webhook.id, "webhook lease lost");
        return;
    }
    if failed {
        // Not straight back to a store that just failed.
        tokio::time::sleep(ERROR_PAUSE).await;
    }
    if let Err(e) = service.release_webhook(lease).await {
        // It runs out by itself.
        tracing::warn!(webhook = %lease.webhook.id, error = %e, "cannot release a webhook lease");
    }
}

/// Leases due retries and sends each on its own task.
async fn retries(service: Confab, sender: Arc<Sender>) {
    let slots = Arc::new(Semaphore::new(PARALLEL_RETRIES));
    loop {
        let free = slots.available_permits();
        if free == 0 {
            // Wait until one attempt ends.
            if slots.acquire().await.is_err() {
                return;
            }
            continue;
        }
        let leased = service
            .lease_retries(u32::try_from(free).unwrap_or(1))
            .await;
        match leased {
            Ok(list) if !list.is_empty() => {
                for retry in list {
                    let Ok(slot) = slots.clone().acquire_owned().await else {
                        return;
                    };
                    let service = service.clone();
                    let sender = sender.clone();
                    tokio::spawn(async move {
                        retry_once(&service, &sender, &retry).await;
                        drop(slot);
                    });
                }
            }
            Ok(_) => tokio::time::sleep(POLL_EVERY).await,
            Err(e) => {
                tracing::warn!(error = %e, "cannot lease webhook retries");
                tokio::time::sleep(ERROR_PAUSE).await;
            }
        }
    }
}

async fn retry_once(service: &Confab, sender: &Sender, retry: &LeasedRetry) {
    let attempted = sender
        .attempt(service, &retry.webhook, &retry.event, retry.attempt)
        .await;
    match service.retry_made(retry, &attempted).await {
        Ok(RetrySettled::GivenUp) => sender.metrics.webhook_given_up(),
        Ok(RetrySettled::Delivered | RetrySettled::RetryLater) => {}
        Ok(RetrySettled::LeaseLost) => {
            tracing::info!(webhook = %retry.webhook.id, event = %retry.event.id, "webhook retry lease lost");
        }
        // The lease runs out and the retry is due again.
        Err(e) => {
            tracing::warn!(webhook = %retry.webhook.id, event = %retry.event.id, error = %e, "cannot record a webhook retry");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_the_timestamp_and_the_raw_body() {
        // Python: hmac.new(b"key", b"1700000000.{}", hashlib.sha256).hexdigest()
        assert_eq!(
            signature("key", 1_700_000_000, "{}"),
            "t=1700000000,v1=9d713ed406bb7076d4123f0dc2c39d2df5c654ed4b0cd56b52c8b4c940bd63ae"
        );
        let sig = signature("key", 1_700_000_000, "{}");
        assert_ne!(sig, signature("other", 1_700_000_000, "{}"));
        assert_ne!(sig, signature("key", 1_700_000_001, "{}"));
        assert_ne!(sig, signature("key", 1_700_000_000, "{ }"));
    }

    #[test]
    fn urls_are_parsed_as_the_client_parses_them() {
        let address = |raw: &str| match parse_url(raw).expect(raw).host {
            UrlHost::Address(ip) => ip.to_string(),
            UrlHost::Name(name) => panic!("{raw}: a name, {name}"),
        };
        assert_eq!(address("http://127.0.0.1:8080/"), "127.0.0.1");
        assert_eq!(address("http://2130706433/"), "127.0.0.1");
        assert_eq!(address("http://0x7f.1/"), "127.0.0.1");
        assert_eq!(address("http://[::ffff:7f00:1]/"), "::ffff:127.0.0.1");
        let named = parse_url(" HTTPS://Example.COM/hook?x=1 ").expect("valid");
        assert_eq!(named.url, "https://example.com/hook?x=1");
        assert_eq!(named.host, UrlHost::Name("example.com".into()));
        for bad in [
            "ftp://example.com/",
            "file:///etc/passwd",
            "example.com/hook",
            "https://",
            "javascript:alert(1)",
            "",
        ] {
            assert!(
                matches!(parse_url(bad), Err(WebhookError::BadUrl { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn known_hmac_vector() {
        // RFC 4231 test case 2.
        let mut mac = Hmac::<Sha256>::new_from_slice(b"Jefe").expect("key");
        mac.update(b"what do ya want for nothing?");
        let hex: String = mac
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
