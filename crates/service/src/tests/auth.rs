//! Authentication: token lookups, the cache of live tokens, revocation and
//! the contact's last activity.
use std::sync::atomic::{AtomicUsize, Ordering};

use confab_ports::{LiveToken, Lookup, StoreError};

use crate::ServiceError;

use super::*;

/// A write that fails (the store unavailable) the first time `attempts`
/// counts it and is made from then on.
fn fails_first(attempts: &AtomicUsize) -> Result<(), StoreError> {
    if attempts.fetch_add(1, Ordering::SeqCst) == 0 {
        Err(StoreError::Unavailable("down".into()))
    } else {
        Ok(())
    }
}

/// What the store answers for a live token that never expires.
fn live(contact: confab_domain::Contact) -> Lookup<LiveToken> {
    Lookup::Live(LiveToken {
        contact,
        expires_at: None,
    })
}

#[tokio::test]
async fn an_expired_token_is_expired_not_unauthorized() {
    let mut m = Mocks::new();
    m.tokens
        .expect_contact_for_token()
        .times(1)
        .returning(|_, _| Ok(Lookup::Expired));
    assert!(matches!(
        m.service().authenticate("cfb_old").await,
        Err(ServiceError::Expired)
    ));
}

/// A token remembered as live is refused from its expiry on, not when
/// the memory of it lapses.
#[tokio::test]
async fn a_token_is_refused_from_its_expiry_even_when_remembered() {
    let mut m = Mocks::new();
    m.tokens
        .expect_contact_for_token()
        .times(1)
        .returning(|_, _| {
            Ok(Lookup::Live(LiveToken {
                contact: alice(),
                expires_at: Some(Timestamp::from_secs(NOW)),
            }))
        });
    let svc = m.service();
    for _ in 0..2 {
        assert!(matches!(
            svc.authenticate("cfb_ends_now").await,
            Err(ServiceError::Expired)
        ));
    }
}

#[tokio::test]
async fn revoked_or_unknown_token_is_unauthorized() {
    let mut m = Mocks::new();
    m.tokens
        .expect_contact_for_token()
        .returning(|_, _| Ok(Lookup::Unknown));
    let svc = m.service();
    assert!(matches!(
        svc.authenticate("cfb_0000").await,
        Err(ServiceError::Unauthorized)
    ));
    // Not even looked up: wrong shape.
    assert!(matches!(
        svc.authenticate("Basic abc").await,
        Err(ServiceError::Unauthorized)
    ));
}

#[tokio::test]
async fn tokens_are_looked_up_by_hash_and_activity_is_recorded_at_most_once_a_minute() {
    let token = "cfb_secret";
    let hash = crate::auth::token_hash_for_tests(token);
    assert_ne!(hash, token);
    let hash = hash.as_str().to_owned();
    assert_eq!(hash.len(), 64);
    let mut m = Mocks::new();
    let stale = last_active(alice(), Timestamp::from_secs(NOW - 61));
    m.tokens
        .expect_contact_for_token()
        .with(eq(hash.clone()), eq(Timestamp::from_secs(NOW)))
        .returning(move |_, _| Ok(live(stale.clone())));
    m.contacts
        .expect_touch_contact()
        .with(eq(alice().id()), eq(Timestamp::from_secs(NOW)))
        .times(1)
        .returning(|_, _| Ok(()));
    m.tokens
        .expect_touch_token()
        .with(eq(hash.clone()), eq(Timestamp::from_secs(NOW)))
        .times(1)
        .returning(|_, _| Ok(()));
    let who = m
        .service()
        .authenticate(token)
        .await
        .expect("authenticated");
    assert_eq!(who.last_active_at(), Timestamp::from_secs(NOW));

    // Fresh activity: no contact write; the token's own use is recorded
    // by this process once a minute.
    let mut m = Mocks::new();
    m.tokens
        .expect_contact_for_token()
        .returning(|_, _| Ok(live(alice())));
    m.tokens
        .expect_touch_token()
        .times(1)
        .returning(|_, _| Ok(()));
    let svc = m.service();
    assert!(svc.authenticate(token).await.is_ok());
    assert!(svc.authenticate(token).await.is_ok());
}

#[tokio::test]
async fn a_live_token_is_trusted_for_a_few_seconds_without_the_store() {
    let token = "cfb_cached";
    let mut m = alice_last_seen_a_minute_ago();
    // The activity recorded by the first request is remembered too.
    m.contacts
        .expect_touch_contact()
        .times(1)
        .returning(|_, _| Ok(()));
    let svc = m.service();
    for _ in 0..3 {
        let who = svc.authenticate(token).await.expect("authenticated");
        assert_eq!(who.id(), alice().id());
        assert_eq!(who.last_active_at(), Timestamp::from_secs(NOW));
    }
}

/// A revocation through this process's service (what the CLI does in its
/// own process, and any revocation a server makes) is not hidden by the
/// cache of live tokens: the next request asks the store, which refuses
/// the token.
#[tokio::test]
async fn a_revocation_in_this_process_drops_its_cached_tokens_at_once() {
    let token = "cfb_revoked";
    let mut m = Mocks::new();
    let mut lookups = mockall::Sequence::new();
    m.tokens
        .expect_contact_for_token()
        .times(1)
        .in_sequence(&mut lookups)
        .returning(|_, _| Ok(live(alice())));
    m.tokens
        .expect_contact_for_token()
        .times(1)
        .in_sequence(&mut lookups)
        .returning(|_, _| Ok(Lookup::Unknown));
    m.contacts
        .expect_contact_by_username()
        .returning(|_| Ok(Some(alice())));
    m.tokens
        .expect_touch_token()
        .times(1)
        .returning(|_, _| Ok(()));
    m.tokens
        .expect_revoke_tokens()
        .with(eq(alice().id()), eq(Timestamp::from_secs(NOW)))
        .times(1)
        .returning(|_, _| Ok(1));
    let svc = m.service();
    // Looked up once, then trusted from the cache.
    for _ in 0..2 {
        assert_eq!(
            svc.authenticate(token).await.expect("live").id(),
            alice().id()
        );
    }
    assert_eq!(svc.revoke_tokens("alice").await.expect("revoked"), 1);
    assert!(matches!(
        svc.authenticate(token).await,
        Err(ServiceError::Unauthorized)
    ));
}

/// Mocks whose token store finds alice once, her activity over a minute
/// old.
fn alice_last_seen_a_minute_ago() -> Mocks {
    let mut m = Mocks::new();
    let stale = last_active(alice(), Timestamp::from_secs(NOW - 61));
    m.tokens
        .expect_contact_for_token()
        .times(1)
        .returning(move |_, _| Ok(live(stale.clone())));
    // The token's `last_used_at`: once, by the first request that gets
    // through.
    m.tokens
        .expect_touch_token()
        .times(1)
        .returning(|_, _| Ok(()));
    m
}

/// Requests of one contact that see its activity stale at once (the first
/// request of a minute and those beside it) write it once: the others go
/// on without writing while the first one's write is claimed. A claim
/// dropped unfinished frees the contact for the next request.
#[tokio::test]
async fn activity_seen_stale_by_requests_at_once_is_written_once() {
    let token = "cfb_herd";
    let mut m = alice_last_seen_a_minute_ago();
    let writes = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = writes.clone();
    m.contacts
        .expect_touch_contact()
        .with(eq(alice().id()), eq(Timestamp::from_secs(NOW)))
        .returning(move |_, _| {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(())
        });
    let written = || writes.load(std::sync::atomic::Ordering::SeqCst);
    let svc = m.service();
    // Another request of hers is writing it.
    let held = svc
        .tokens
        .claim_touch(alice().id(), Timestamp::from_secs(NOW))
        .expect("the first claim of the minute");
    assert!(svc
        .tokens
        .claim_touch(alice().id(), Timestamp::from_secs(NOW))
        .is_none());
    for _ in 0..3 {
        let who = svc.authenticate(token).await.expect("authenticated");
        assert_eq!(who.last_active_at(), Timestamp::from_secs(NOW - 61));
    }
    assert_eq!(written(), 0);
    // Its write failed or was dropped: the next request writes it, once.
    drop(held);
    for _ in 0..3 {
        let who = svc.authenticate(token).await.expect("authenticated");
        assert_eq!(who.last_active_at(), Timestamp::from_secs(NOW));
    }
    assert_eq!(written(), 1);
}

/// A failed activity write fails its request and leaves the write to the
/// next request.
#[tokio::test]
async fn a_failed_activity_write_is_made_by_the_next_request() {
    let token = "cfb_retry";
    let mut m = alice_last_seen_a_minute_ago();
    let attempts = Arc::new(AtomicUsize::new(0));
    let counted = attempts.clone();
    m.contacts
        .expect_touch_contact()
        .returning(move |_, _| fails_first(&counted));
    let svc = m.service();
    assert!(matches!(
        svc.authenticate(token).await,
        Err(ServiceError::Unavailable(_))
    ));
    let who = svc.authenticate(token).await.expect("authenticated");
    assert_eq!(who.last_active_at(), Timestamp::from_secs(NOW));
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
}

/// A failed write of a token's `last_used_at` fails its request and is
/// made by the next one; then not again within the minute.
#[tokio::test]
async fn a_failed_token_use_write_is_made_by_the_next_request() {
    let mut m = Mocks::new();
    m.tokens
        .expect_contact_for_token()
        .returning(|_, _| Ok(live(alice())));
    let attempts = Arc::new(AtomicUsize::new(0));
    let counted = attempts.clone();
    m.tokens
        .expect_touch_token()
        .returning(move |_, _| fails_first(&counted));
    let svc = m.service();
    assert!(matches!(
        svc.authenticate("cfb_device").await,
        Err(ServiceError::Unavailable(_))
    ));
    for _ in 0..3 {
        svc.authenticate("cfb_device").await.expect("authenticated");
    }
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
}
