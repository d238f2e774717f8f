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
        contact_id: who.id(),
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
        new_keys_per_day: None,
    }
}

fn answer(code: u16, body: &str) -> StoredResponse {
    StoredResponse {
        code,
        location: Some(format!("/v1/things/{body}")),
        body: body.to_owned(),
    }
}

/// Renders a message as its id, so the stored body says which was written.
fn completion(claim: &KeyClaim) -> Completion<Message> {
    Completion::new(claim.clone(), |m: &Message| {
        answer(201, &m.id().to_string())
    })
}

async fn claim(s: &S, claim: &KeyClaim, fingerprint: &str, now: i64) -> ClaimOutcome {
    s.claim_key(request(claim, fingerprint, at(now)))
        .await
        .expect("claim")
}

/// A claim at `now` under a quota of `max` new keys a day.
async fn claim_within(
    s: &S,
    claim: &KeyClaim,
    fingerprint: &str,
    now: i64,
    max: u32,
) -> ClaimOutcome {
    let mut r = request(claim, fingerprint, at(now));
    r.new_keys_per_day = Some(max);
    s.claim_key(r).await.expect("claim")
}

/// The suite's epoch (`at(0)`) is 22:13:20 UTC: the next UTC day starts
/// this many seconds after it.
const NEXT_DAY: i64 = 6_400;

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
        response: answer(201, &m.id().to_string()),
    };
    assert_eq!(claim(&s, &retry, "f1", 102).await, replay);
    assert_eq!(
        claim(&s, &retry, "other", 102).await,
        ClaimOutcome::Completed {
            same_request: false,
            response: answer(201, &m.id().to_string()),
        }
    );
    // Long after the lease, still the same answer: only expiry ends it.
    assert_eq!(claim(&s, &retry, "f1", 100 + DAY - 1).await, replay);

    // Keys are per caller: bob's "k1" is his own.
    assert_eq!(
        claim(&s, &claim_of(&bob, "k1"), "f1", 103).await,
        ClaimOutcome::Claimed
    );
    assert_eq!(all_messages(&s, &alice, Some(c.id())).await, vec![m.id()]);
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
    assert!(all_messages(&s, &alice, Some(c.id())).await.is_empty());
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
    assert!(all_messages(&s, &alice, Some(c.id())).await.is_empty());
    let m = s
        .append_message(
            new_message(&c, &alice, "retried", at(112)),
            no_events(),
            Some(completion(&retry)),
        )
        .await
        .expect("append");
    assert_eq!(all_messages(&s, &alice, Some(c.id())).await, vec![m.id()]);
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

async fn idempotency_the_quota_refuses_new_keys_past_it_and_stores_nothing(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let quota = 3;
    let (k1, k2, k3) = (
        claim_of(&alice, "k1"),
        claim_of(&alice, "k2"),
        claim_of(&alice, "k3"),
    );
    for held in [&k1, &k2, &k3] {
        assert_eq!(
            claim_within(&s, held, "f", 100, quota).await,
            ClaimOutcome::Claimed,
            "{}",
            held.key
        );
    }
    // The fourth new key of the day is refused, also when sent again.
    for now in [101, 102] {
        assert_eq!(
            claim_within(&s, &claim_of(&alice, "k4"), "f", now, quota).await,
            ClaimOutcome::QuotaExceeded
        );
    }

    // Keys claimed before are no new keys: retries, replays, reuse and a
    // takeover after the lease all go on past the quota.
    assert_eq!(
        claim_within(&s, &claim_of(&alice, "k2"), "f", 103, quota).await,
        ClaimOutcome::InFlight { same_request: true }
    );
    assert!(s
        .complete_key(k1, answer(201, "one"))
        .await
        .expect("complete"));
    let replay = ClaimOutcome::Completed {
        same_request: true,
        response: answer(201, "one"),
    };
    assert_eq!(
        claim_within(&s, &claim_of(&alice, "k1"), "f", 104, quota).await,
        replay
    );
    assert_eq!(
        claim_within(&s, &claim_of(&alice, "k1"), "other", 104, quota).await,
        ClaimOutcome::Completed {
            same_request: false,
            response: answer(201, "one"),
        }
    );
    assert_eq!(
        claim_within(&s, &claim_of(&alice, "k3"), "f", 100 + LEASE + 1, quota).await,
        ClaimOutcome::Claimed,
        "the retry of a request whose holder died"
    );

    // Another contact has a quota of its own.
    for key in ["k1", "k2", "k3"] {
        assert_eq!(
            claim_within(&s, &claim_of(&bob, key), "f", 105, quota).await,
            ClaimOutcome::Claimed,
            "bob's {key}"
        );
    }
    assert_eq!(
        claim_within(&s, &claim_of(&bob, "k4"), "f", 105, quota).await,
        ClaimOutcome::QuotaExceeded
    );

    // The refused k4 left no row: without a quota it is new (a row would
    // make it in flight).
    assert_eq!(
        claim(&s, &claim_of(&alice, "k4"), "f", 106).await,
        ClaimOutcome::Claimed
    );

    // The next UTC day counts afresh.
    for key in ["d2-1", "d2-2", "d2-3"] {
        assert_eq!(
            claim_within(&s, &claim_of(&alice, key), "f", NEXT_DAY, quota).await,
            ClaimOutcome::Claimed,
            "{key}"
        );
    }
    assert_eq!(
        claim_within(&s, &claim_of(&alice, "d2-4"), "f", NEXT_DAY, quota).await,
        ClaimOutcome::QuotaExceeded
    );
}

async fn idempotency_an_expired_key_claimed_again_is_a_new_key(s: S) {
    let alice = contact(&s, "alice").await;
    let old = claim_of(&alice, "old");
    assert_eq!(
        claim_within(&s, &old, "f", 100, 1).await,
        ClaimOutcome::Claimed
    );
    assert!(s
        .complete_key(old, answer(201, "old"))
        .await
        .expect("complete"));
    // A day later (and the next UTC day): its one new key is spent on
    // another key, so the expired one cannot be claimed again...
    let later = 100 + DAY + 1;
    assert_eq!(
        claim_within(&s, &claim_of(&alice, "other"), "f", later, 1).await,
        ClaimOutcome::Claimed
    );
    assert_eq!(
        claim_within(&s, &claim_of(&alice, "old"), "f", later, 1).await,
        ClaimOutcome::QuotaExceeded
    );
    // ... and it stays as it was (refused: nothing of that claim stored).
    assert_eq!(
        claim(&s, &claim_of(&alice, "old"), "f", 100 + DAY - 1).await,
        ClaimOutcome::Completed {
            same_request: true,
            response: answer(201, "old"),
        }
    );
    // With room, an expired key is claimed afresh, for any request.
    assert_eq!(
        claim_within(&s, &claim_of(&alice, "old"), "new", later, 2).await,
        ClaimOutcome::Claimed
    );
}

async fn idempotency_concurrent_new_keys_never_pass_the_quota(s: S) {
    let alice = contact(&s, "alice").await;
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let s = s.clone();
            let c = claim_of(&alice, &format!("k{i}"));
            tokio::spawn(async move { claim_within(&s, &c, "f", 100, 5).await })
        })
        .collect();
    let (mut claimed, mut refused) = (0, 0);
    for t in tasks {
        match t.await.expect("join") {
            ClaimOutcome::Claimed => claimed += 1,
            ClaimOutcome::QuotaExceeded => refused += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((claimed, refused), (5, 11));

    // Sixteen claims of one key at once count it once: two more new keys
    // fit under a quota of three.
    let bob = contact(&s, "bob").await;
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let s = s.clone();
            let c = claim_of(&bob, "race");
            tokio::spawn(async move { claim_within(&s, &c, "f", 100, 3).await })
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
    for key in ["second", "third"] {
        assert_eq!(
            claim_within(&s, &claim_of(&bob, key), "f", 101, 3).await,
            ClaimOutcome::Claimed,
            "{key}"
        );
    }
    assert_eq!(
        claim_within(&s, &claim_of(&bob, "fourth"), "f", 101, 3).await,
        ClaimOutcome::QuotaExceeded
    );
}

/// Sixteen writers sending with keys as fast as they can: every claim and
/// every send goes through (on SQLite a claim queues with the sends instead
/// of waiting for the database's lock in the busy handler, where a busy
/// queue made it fail with "database is locked": 8 of 15,000
/// sends over HTTP).
async fn idempotency_keyed_sends_from_16_writers_all_go_through(s: S) {
    const WRITERS: usize = 16;
    const EACH: usize = 150;
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let tasks: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (s, c, alice) = (s.clone(), c.clone(), alice.clone());
            tokio::spawn(async move {
                let mut sent = Vec::new();
                for i in 0..EACH {
                    let key = claim_of(&alice, &format!("w{w}-{i}"));
                    let outcome = s
                        .claim_key(request(&key, "f", at(100)))
                        .await
                        .unwrap_or_else(|e| panic!("writer {w}, claim {i}: {e}"));
                    assert_eq!(outcome, ClaimOutcome::Claimed);
                    let m = s
                        .append_message(
                            new_message(&c, &alice, &format!("w{w}-{i}"), at(100)),
                            no_events(),
                            Some(completion(&key)),
                        )
                        .await
                        .unwrap_or_else(|e| panic!("writer {w}, send {i}: {e}"));
                    sent.push(m.id());
                }
                sent
            })
        })
        .collect();
    let mut sent = std::collections::HashSet::new();
    for t in tasks {
        sent.extend(t.await.expect("writer"));
    }
    assert_eq!(sent.len(), WRITERS * EACH);
}

async fn idempotency_pruning_forgets_the_counts_of_past_days(s: S) {
    let alice = contact(&s, "alice").await;
    for key in ["a", "b"] {
        assert_eq!(
            claim_within(&s, &claim_of(&alice, key), "f", 100, 2).await,
            ClaimOutcome::Claimed
        );
    }
    // Pruning at the end of the day keeps the day's count...
    s.prune_keys(at(NEXT_DAY - 1)).await.expect("prune");
    assert_eq!(
        claim_within(&s, &claim_of(&alice, "c"), "f", 101, 2).await,
        ClaimOutcome::QuotaExceeded
    );
    // ... and forgets it once the keys of that day expire.
    s.prune_keys(at(NEXT_DAY + DAY)).await.expect("prune");
    assert_eq!(
        claim_within(&s, &claim_of(&alice, "c"), "f", 101, 2).await,
        ClaimOutcome::Claimed,
        "the pruned day counts from zero"
    );
}

confab_tests::on_both_stores!(
    crate::support::on_store;
    idempotency_a_write_keeps_its_answer_and_a_retry_replays_it,
    idempotency_a_failed_write_keeps_nothing,
    idempotency_a_dead_holder_is_taken_over_and_cannot_write_after,
    idempotency_pruning_forgets_only_expired_keys,
    idempotency_concurrent_claims_let_one_through,
    idempotency_the_quota_refuses_new_keys_past_it_and_stores_nothing,
    idempotency_an_expired_key_claimed_again_is_a_new_key,
    idempotency_concurrent_new_keys_never_pass_the_quota,
    idempotency_pruning_forgets_the_counts_of_past_days,
    idempotency_keyed_sends_from_16_writers_all_go_through,
);
