//! The webhook use cases against mocked ports.

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
                // The attempt is recorded with the move.
                && m.attempt.as_ref().is_some_and(|a| {
                    a.attempt == 1
                        && a.status == Some(503)
                        && a.error.is_none()
                        && a.at == Timestamp::from_secs(NOW)
                })
        })
        .returning(|_| Ok(true));
    store
        .expect_move_cursor()
        .times(1)
        .withf(|m| {
            m.to == 42
                && m.retry.is_none()
                && m.attempt.as_ref().is_some_and(|a| a.status == Some(204))
        })
        .returning(|_| Ok(false));
    let confab = service(store);
    let lease = WebhookLease {
        webhook: webhook(),
        holder: Uuid::from_u128(5),
        cursor: 41,
        until: Timestamp::from_secs(NOW + WEBHOOK_LEASE_SECS),
    };
    assert!(confab
        .first_attempt_made(&lease, &stored_event(), &answered(503))
        .await
        .expect("recorded"));
    // Delivered: no retry; the lost lease is reported.
    assert!(!confab
        .first_attempt_made(&lease, &stored_event(), &answered(204))
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
            .withf(move |_, _, holder, o, a| {
                *holder == Uuid::from_u128(6) && *o == outcome && a.attempt >= 2
            })
            .returning(|_, _, _, _, _| Ok(true));
    };
    expect(
        &mut store,
        RetryOutcome::RetryAt(Timestamp::from_secs(NOW + 8)),
    );
    expect(&mut store, RetryOutcome::Done);
    let confab = service(store);
    let refused = Attempted {
        status: None,
        error: Some("connection refused".into()),
    };
    // The fourth attempt failed: the fifth in 8 s.
    assert_eq!(
        confab
            .retry_made(&retry(4, NOW - 20), &refused)
            .await
            .expect("settled"),
        RetrySettled::RetryLater
    );
    // A failure 24 h after the first attempt: given up (Done).
    assert_eq!(
        confab
            .retry_made(&retry(30, NOW - GIVE_UP_AFTER_SECS), &answered(500))
            .await
            .expect("settled"),
        RetrySettled::GivenUp
    );
    let mut store = MockWebhookStore::new();
    expect(&mut store, RetryOutcome::Done);
    let confab = service(store);
    assert_eq!(
        confab
            .retry_made(&retry(2, NOW - 5), &answered(200))
            .await
            .expect("settled"),
        RetrySettled::Delivered
    );
}

/// An attempt the receiver answered with `status`.
fn answered(status: u16) -> Attempted {
    Attempted {
        status: Some(status),
        error: None,
    }
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
