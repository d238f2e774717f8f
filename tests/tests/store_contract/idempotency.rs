//! Idempotency keys: claiming, completing inside the write, replaying,
//! leases and expiry, as `IdempotencyStore` documents them.

use confab_domain::{Contact, Message, Timestamp};
use confab_ports::{ClaimOutcome, ClaimRequest, Completion, KeyClaim, StoreError, StoredResponse};

use crate::support::no_events;
use crate::support::{all_messages, assert_err, at, contact, direct, new_id, new_message, S};

const LEASE: i64 = 10;
const DAY: i64 = 24 * 60 * 60;

fn claim_of(who: &Contact, key: &str) -> KeyClaim {
    KeyClaim {
        contact_id: who.id,
        key: key.to_owned(),
        holder: new_id(),
    }
}

fn request(claim: &KeyClaim, fingerprint: &str, now: Timestamp) -> ClaimRequest {
    ClaimRequest {
        claim: claim.clone(),
        fingerprint: fingerprint.to_owned(),
        now,
        locked_until: Timestamp::from_secs(now.secs() + LEASE),
        expired_before: Timestamp::from_secs(now.secs() - DAY),
    }
}

fn answer(status: u16, body: &str) -> StoredResponse {
    StoredResponse {
        status,
        location: Some(format!("/v1/things/{body}")),
        body: body.to_owned(),
    }
}

/// Renders a message as its id, so the stored body says which was written.
fn completion(claim: &KeyClaim) -> Completion<Message> {
    Completion::new(claim.clone(), |m: &Message| answer(201, &m.id.to_string()))
}

async fn claim(s: &S, claim: &KeyClaim, fingerprint: &str, now: i64) -> ClaimOutcome {
    s.claim_key(request(claim, fingerprint, at(now)))
        .await
        .expect("claim")
}

async fn idempotency_a_write_keeps_its_answer_and_a_retry_replays_it(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let first = claim_of(&alice, "k1");
    assert_eq!(claim(&s, &first, "f1", 100).await, ClaimOutcome::Claimed);

    // While it runs: the same request is in flight, another one reuses it.
    let retry = claim_of(&alice, "k1");
    assert_eq!(
        claim(&s, &retry, "f1", 101).await,
        ClaimOutcome::InFlight { same_request: true }
    );
    assert_eq!(
        claim(&s, &retry, "other", 101).await,
        ClaimOutcome::InFlight {
            same_request: false
        }
    );

    let m = s
        .append_message(
            new_message(&c, &alice, "once", at(100)),
            no_events(),
            Some(completion(&first)),
        )
        .await
        .expect("append");
    let replay = ClaimOutcome::Completed {
        same_request: true,
        response: answer(201, &m.id.to_string()),
    };
    assert_eq!(claim(&s, &retry, "f1", 102).await, replay);
    assert_eq!(
        claim(&s, &retry, "other", 102).await,
        ClaimOutcome::Completed {
            same_request: false,
            response: answer(201, &m.id.to_string()),
        }
    );
    // Long after the lease, still the same answer: only expiry ends it.
    assert_eq!(claim(&s, &retry, "f1", 100 + DAY - 1).await, replay);

    // Keys are per caller: bob's "k1" is his own.
    assert_eq!(
        claim(&s, &claim_of(&bob, "k1"), "f1", 103).await,
        ClaimOutcome::Claimed
    );
    assert_eq!(all_messages(&s, &alice, Some(c.id)).await, vec![m.id]);
}

async fn idempotency_a_failed_write_keeps_nothing(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let held = claim_of(&carol, "k1");
    assert_eq!(claim(&s, &held, "f1", 100).await, ClaimOutcome::Claimed);
    // carol is not a member: the write is refused and keeps no answer.
    assert_err!(
        s.append_message(
            new_message(&c, &carol, "no", at(100)),
            no_events(),
            Some(completion(&held))
        )
        .await,
        StoreError::NotFound
    );
    assert_eq!(
        claim(&s, &claim_of(&carol, "k1"), "f1", 101).await,
        ClaimOutcome::InFlight { same_request: true }
    );
    // Released, a retry runs again.
    s.release_key(held.clone()).await.expect("release");
    let again = claim_of(&carol, "k1");
    assert_eq!(claim(&s, &again, "f1", 102).await, ClaimOutcome::Claimed);
    // An answer decided without a write is kept by complete_key.
    assert!(s
        .complete_key(again.clone(), answer(404, "gone"))
        .await
        .expect("complete"));
    assert_eq!(
        claim(&s, &claim_of(&carol, "k1"), "f1", 103).await,
        ClaimOutcome::Completed {
            same_request: true,
            response: answer(404, "gone"),
        }
    );
    // Only the holder completes, and only once.
    assert!(!s
        .complete_key(again, answer(201, "late"))
        .await
        .expect("complete"));
    assert!(!s
        .complete_key(held, answer(201, "stale"))
        .await
        .expect("complete"));
    assert!(all_messages(&s, &alice, Some(c.id)).await.is_empty());
}

async fn idempotency_a_dead_holder_is_taken_over_and_cannot_write_after(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let dead = claim_of(&alice, "k1");
    assert_eq!(claim(&s, &dead, "f1", 100).await, ClaimOutcome::Claimed);
    // Within the lease: in flight. After it, only the same request takes
    // it over.
    let retry = claim_of(&alice, "k1");
    assert_eq!(
        claim(&s, &retry, "f1", 100 + LEASE - 1).await,
        ClaimOutcome::InFlight { same_request: true }
    );
    assert_eq!(
        claim(&s, &retry, "other", 100 + LEASE + 1).await,
        ClaimOutcome::InFlight {
            same_request: false
        }
    );
    assert_eq!(
        claim(&s, &retry, "f1", 100 + LEASE + 1).await,
        ClaimOutcome::Claimed
    );
    // The old holder wakes up: its write is refused whole.
    assert_err!(
        s.append_message(
            new_message(&c, &alice, "late", at(111)),
            no_events(),
            Some(completion(&dead))
        )
        .await,
        StoreError::ClaimLost
    );
    assert!(all_messages(&s, &alice, Some(c.id)).await.is_empty());
    let m = s
        .append_message(
            new_message(&c, &alice, "retried", at(112)),
            no_events(),
            Some(completion(&retry)),
        )
        .await
        .expect("append");
    assert_eq!(all_messages(&s, &alice, Some(c.id)).await, vec![m.id]);
    // A completed key is never taken over before it expires...
    assert!(matches!(
        claim(&s, &claim_of(&alice, "k1"), "f1", 100 + LEASE * 100).await,
        ClaimOutcome::Completed { .. }
    ));
    // ... and after 24 h it is free for any request.
    assert_eq!(
        claim(&s, &claim_of(&alice, "k1"), "new", 112 + DAY + 1).await,
        ClaimOutcome::Claimed
    );
}

async fn idempotency_pruning_forgets_only_expired_keys(s: S) {
    let alice = contact(&s, "alice").await;
    for (key, now) in [("old1", 10), ("old2", 20), ("new", 30)] {
        assert_eq!(
            claim(&s, &claim_of(&alice, key), "f", now).await,
            ClaimOutcome::Claimed
        );
    }
    assert_eq!(s.prune_keys(at(30)).await.expect("prune"), 2);
    assert_eq!(
        claim(&s, &claim_of(&alice, "new"), "f", 31).await,
        ClaimOutcome::InFlight { same_request: true }
    );
    assert_eq!(
        claim(&s, &claim_of(&alice, "old1"), "other", 31).await,
        ClaimOutcome::Claimed
    );
}

async fn idempotency_concurrent_claims_let_one_through(s: S) {
    let alice = contact(&s, "alice").await;
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let s = s.clone();
            let c = claim_of(&alice, "race");
            tokio::spawn(async move { claim(&s, &c, "f", 100).await })
        })
        .collect();
    let mut claimed = 0;
    for t in tasks {
        match t.await.expect("join") {
            ClaimOutcome::Claimed => claimed += 1,
            ClaimOutcome::InFlight { same_request: true } => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(claimed, 1);
}

confab_tests::on_both_stores!(
    crate::support::on_store;
    idempotency_a_write_keeps_its_answer_and_a_retry_replays_it,
    idempotency_a_failed_write_keeps_nothing,
    idempotency_a_dead_holder_is_taken_over_and_cannot_write_after,
    idempotency_pruning_forgets_only_expired_keys,
    idempotency_concurrent_claims_let_one_through,
);
