//! Event tickets: made for a live token only, stored by hash, expiring
//! after 10 minutes, authenticating the token's contact.
use confab_ports::{Lookup, StoreError, TicketHolder};

use crate::ServiceError;

use super::*;

#[tokio::test]
async fn a_ticket_is_stored_by_hash_for_its_token_and_expires_in_10_minutes() {
    let token = "cfb_secret";
    let token_hash = crate::auth::token_hash_for_tests(token);
    let mut m = Mocks::new();
    let stored = std::sync::Arc::new(std::sync::Mutex::new(None));
    let keep = stored.clone();
    m.tokens
        .expect_insert_ticket()
        .times(1)
        .returning(move |t| {
            *keep.lock().expect("lock") = Some(t);
            Ok(())
        });
    let ticket = m.service().issue_ticket(token).await.expect("ticket");
    assert!(ticket.ticket.starts_with("cft_") && ticket.ticket.len() == 68);
    assert_eq!(ticket.expires_at, Timestamp::from_secs(NOW + 600));
    let stored = stored.lock().expect("lock").clone().expect("stored");
    assert_eq!(stored.token_hash, token_hash);
    assert_eq!(
        stored.hash,
        crate::auth::token_hash_for_tests(&ticket.ticket)
    );
    assert_ne!(stored.hash, ticket.ticket, "never the secret itself");
    assert_eq!(stored.created_at, Timestamp::from_secs(NOW));
    assert_eq!(stored.expires_at, ticket.expires_at);
}

#[tokio::test]
async fn a_token_no_longer_live_makes_no_ticket() {
    let mut m = Mocks::new();
    m.tokens
        .expect_insert_ticket()
        .returning(|_| Err(StoreError::NotFound));
    let svc = m.service();
    assert!(matches!(
        svc.issue_ticket("cfb_revoked").await,
        Err(ServiceError::Unauthorized)
    ));
    // A server key, or anything not a token, is not even tried (a fresh
    // mock has no expectation: a store call would panic).
    for not_a_token in ["cfb_sk_0123", "nope", ""] {
        assert!(matches!(
            Mocks::new().service().issue_ticket(not_a_token).await,
            Err(ServiceError::Unauthorized)
        ));
    }
}

#[tokio::test]
async fn a_live_ticket_authenticates_its_token_s_contact() {
    let ticket = "cft_abc";
    let hash = crate::auth::token_hash_for_tests(ticket);
    let mut m = Mocks::new();
    let holder = TicketHolder {
        contact: last_active(alice(), Timestamp::from_secs(NOW)),
        token_hash: crate::auth::token_hash_for_tests("cfb_maker"),
    };
    m.tokens
        .expect_ticket_holder()
        .with(eq(hash), eq(Timestamp::from_secs(NOW)))
        .returning(move |_, _| Ok(Lookup::Live(holder.clone())));
    m.tokens.expect_touch_token().returning(|_, _| Ok(()));
    let svc = m.service();
    let caller = svc.authenticate_ticket(ticket).await.expect("holder");
    assert_eq!(caller.contact.id(), alice().id());
    assert_eq!(caller.token, crate::Confab::stream_token("cfb_maker"));
}

#[tokio::test]
async fn unknown_or_misshapen_tickets_are_unauthorized() {
    let mut m = Mocks::new();
    m.tokens
        .expect_ticket_holder()
        .returning(|_, _| Ok(Lookup::Unknown));
    let svc = m.service();
    assert!(matches!(
        svc.authenticate_ticket("cft_unknown").await,
        Err(ServiceError::Unauthorized)
    ));
    // Not looked up: a token's shape, or anything else (no expectation is
    // set on a fresh mock, so a lookup would panic).
    let svc = Mocks::new().service();
    for bad in ["cfb_token", "", "x", &format!("cft_{}", "a".repeat(300))] {
        assert!(matches!(
            svc.authenticate_ticket(bad).await,
            Err(ServiceError::Unauthorized)
        ));
    }
}

#[tokio::test]
async fn an_expired_ticket_is_expired_not_unauthorized() {
    let mut m = Mocks::new();
    m.tokens
        .expect_ticket_holder()
        .returning(|_, _| Ok(Lookup::Expired));
    assert!(matches!(
        m.service().authenticate_ticket("cft_old").await,
        Err(ServiceError::Expired)
    ));
}

#[tokio::test]
async fn expired_tickets_are_kept_a_day_before_they_are_pruned() {
    let mut m = Mocks::new();
    m.tokens
        .expect_prune_tickets()
        .with(eq(Timestamp::from_secs(NOW - 86_400)), eq(50))
        .times(1)
        .returning(|_, _| Ok(3));
    assert_eq!(m.service().prune_tickets(50).await.expect("prune"), 3);
}
