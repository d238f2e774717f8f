//! Idempotency keys: claims, the daily quota, replays and completions.
use confab_domain::{DomainError, Field};
use confab_ports::{ClaimOutcome, KeyClaim, StoreError};

use crate::{
    Completion, ConversationTarget, IdempotencyKey, Idempotent, ServiceError, StoredResponse,
};

use super::*;

fn key(s: &str) -> IdempotencyKey {
    IdempotencyKey::parse(s).expect("valid key")
}

fn stored(code: u16, body: &str) -> StoredResponse {
    StoredResponse {
        code,
        location: None,
        body: body.to_owned(),
    }
}

#[test]
fn an_idempotency_key_is_1_to_255_visible_ascii_characters() {
    for bad in ["", "caf\u{e9}", "tab\there", "new\nline", &"k".repeat(256)] {
        assert!(
            matches!(
                IdempotencyKey::parse(bad),
                Err(DomainError::Invalid {
                    field: Field::IdempotencyKey,
                    ..
                })
            ),
            "{bad:?}"
        );
    }
    for good in ["k", "order 42", "6f1c-9a", &"k".repeat(255)] {
        assert_eq!(key(good).as_str(), good);
    }
}

#[tokio::test]
async fn a_new_key_is_claimed_for_the_caller_with_a_lease_and_a_24_hour_life() {
    let mut m = Mocks::new();
    m.idempotency
        .expect_claim_key()
        .withf(|r| {
            r.claim.contact_id == bob().id()
                && r.claim.key == "k1"
                && r.claim.holder == Uuid::from_u128(0xABCD)
                && r.fingerprint == "digest"
                && r.now == Timestamp::from_secs(NOW)
                && r.locked_until == Timestamp::from_secs(NOW + crate::LEASE_SECS)
                && r.expired_before == Timestamp::from_secs(NOW - 24 * 60 * 60)
                && r.new_keys_per_day == Some(crate::DEFAULT_KEYS_PER_DAY)
        })
        .times(1)
        .returning(|_| Ok(ClaimOutcome::Claimed));
    let begun = m
        .service()
        .begin_idempotent(&bob(), key("k1"), "digest".into())
        .await;
    match begun {
        Ok(Idempotent::Run(claim)) => {
            assert_eq!(claim.contact_id, bob().id());
            assert_eq!(claim.key, "k1");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_new_key_past_the_quota_is_refused_until_the_next_utc_day() {
    let mut m = Mocks::new();
    m.idempotency
        .expect_claim_key()
        .withf(|r| r.new_keys_per_day == Some(3))
        .times(1)
        .returning(|_| Ok(ClaimOutcome::QuotaExceeded));
    let got = m
        .service()
        .with_idempotency_quota(3)
        .begin_idempotent(&bob(), key("k1"), "digest".into())
        .await;
    // NOW is 22:13:20 UTC: the day ends 6,400 s later.
    assert!(
        matches!(
            got,
            Err(ServiceError::IdempotencyQuota {
                max: 3,
                retry_after_secs: 6_400
            })
        ),
        "{got:?}"
    );
}

#[tokio::test]
async fn a_quota_of_0_is_no_limit() {
    let mut m = Mocks::new();
    m.idempotency
        .expect_claim_key()
        .withf(|r| r.new_keys_per_day.is_none())
        .times(1)
        .returning(|_| Ok(ClaimOutcome::Claimed));
    let got = m
        .service()
        .with_idempotency_quota(0)
        .begin_idempotent(&bob(), key("k1"), "digest".into())
        .await;
    assert!(matches!(got, Ok(Idempotent::Run(_))), "{got:?}");
}

#[tokio::test]
async fn a_key_answered_before_replays_for_the_same_request_only() {
    let cases: [(ClaimOutcome, &str); 4] = [
        (
            ClaimOutcome::Completed {
                same_request: true,
                response: stored(201, "{}"),
            },
            "replay",
        ),
        (
            ClaimOutcome::Completed {
                same_request: false,
                response: stored(201, "{}"),
            },
            "reused",
        ),
        (ClaimOutcome::InFlight { same_request: true }, "in flight"),
        (
            ClaimOutcome::InFlight {
                same_request: false,
            },
            "reused",
        ),
    ];
    for (outcome, want) in cases {
        let mut m = Mocks::new();
        let found = outcome.clone();
        m.idempotency
            .expect_claim_key()
            .times(1)
            .returning(move |_| Ok(found.clone()));
        let got = m
            .service()
            .begin_idempotent(&bob(), key("k1"), "digest".into())
            .await;
        let ok = match (want, &got) {
            ("replay", Ok(Idempotent::Replay(r))) => *r == stored(201, "{}"),
            ("reused", Err(ServiceError::IdempotencyKeyReused))
            | ("in flight", Err(ServiceError::IdempotencyInFlight)) => true,
            _ => false,
        };
        assert!(ok, "{outcome:?}: {got:?}");
    }
}

fn claim() -> KeyClaim {
    KeyClaim {
        contact_id: bob().id(),
        key: "k1".into(),
        holder: Uuid::from_u128(7),
    }
}

#[tokio::test]
async fn a_send_hands_its_completion_to_the_write_and_a_lost_claim_is_in_flight() {
    let mut m = Mocks::new();
    let mut calls = 0;
    m.messages
        .expect_append_message()
        .times(2)
        .returning(move |_, _, completion| {
            calls += 1;
            let message = message_from(bob());
            let (claim, response) = completion.expect("a completion").render(&message);
            assert_eq!(claim.key, "k1");
            assert_eq!(response.body, message.id().to_string());
            if calls == 1 {
                Ok(message)
            } else {
                Err(StoreError::ClaimLost)
            }
        });
    let svc = m.service();
    let send = hi;
    let completion = || {
        Some(Completion::new(claim(), |m: &Message| {
            stored(201, &m.id().to_string())
        }))
    };
    assert!(svc.send_message(&bob(), send(), completion()).await.is_ok());
    assert!(matches!(
        svc.send_message(&bob(), send(), completion()).await,
        Err(ServiceError::IdempotencyInFlight)
    ));
}

#[tokio::test]
async fn a_new_conversation_is_completed_with_the_view_the_caller_gets() {
    let mut m = Mocks::new();
    m.contacts.expect_contact().returning(|_| Ok(Some(bob())));
    m.conversations
        .expect_create_conversation()
        .times(1)
        .returning(|conversation, _, completion| {
            let (_, response) = completion.expect("a completion").render(&());
            assert_eq!(response.body, conversation.id().to_string());
            Ok(())
        });
    let completion = Completion::new(claim(), |v: &ConversationView| {
        stored(201, &v.conversation.id().to_string())
    });
    let view = m
        .service()
        .create_conversation(
            &alice(),
            ConversationTarget::Contact(bob().id()),
            Some(completion),
        )
        .await
        .expect("created");
    assert_eq!(view.viewer, alice().id());
}

#[tokio::test]
async fn a_run_that_wrote_nothing_keeps_its_answer_or_frees_its_key() {
    let mut m = Mocks::new();
    m.idempotency
        .expect_complete_key()
        .withf(|c, r| *c == claim() && r.code == 404)
        .times(1)
        .returning(|_, _| Ok(true));
    m.idempotency
        .expect_release_key()
        .withf(|c| *c == claim())
        .times(1)
        .returning(|_| Ok(()));
    let svc = m.service();
    svc.end_idempotent(claim(), Some(stored(404, "{}"))).await;
    svc.end_idempotent(claim(), None).await;
}
