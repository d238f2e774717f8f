//! Credentials: access tokens (live, expired, revoked, unknown; listed,
//! revoked one by one, their use recorded), event tickets and server keys.

use confab_domain::{Contact, ContactId, Cursor, Timestamp};
use confab_ports::{Lookup, NewServerKey, NewTicket, NewToken, StoreError};
use uuid::Uuid;

use crate::support::{assert_err, at, at_us, contact, new_id, page, S};

fn token(owner: &Contact, hash: &str, expires: Option<Timestamp>) -> NewToken {
    NewToken {
        id: new_id(),
        contact_id: owner.id(),
        hash: hash.into(),
        created_at: at(0),
        expires_at: expires,
    }
}

async fn tokens_live_expired_revoked_unknown(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    s.insert_token(token(&alice, "aa01", None))
        .await
        .expect("insert");
    s.insert_token(token(&alice, "aa02", Some(at(100))))
        .await
        .expect("insert");
    s.insert_token(token(&alice, "aa03", Some(at(10))))
        .await
        .expect("insert");
    s.insert_token(token(&bob, "bb01", None))
        .await
        .expect("insert");
    assert_err!(
        s.insert_token(NewToken {
            contact_id: ContactId::from_uuid(new_id()),
            ..token(&alice, "cc01", None)
        })
        .await,
        StoreError::NotFound
    );

    let who = |hash: &'static str, now: Timestamp| {
        let s = s.clone();
        async move {
            s.contact_for_token(hash, now)
                .await
                .expect("lookup")
                .map(|t| t.contact.id())
        }
    };
    let live = |id: ContactId| Lookup::Live(id);
    assert_eq!(who("aa01", at(50)).await, live(alice.id()));
    assert_eq!(who("aa02", at(50)).await, live(alice.id()));
    assert_eq!(who("bb01", at(50)).await, live(bob.id()));
    assert_eq!(who("ffff", at(50)).await, Lookup::Unknown, "unknown");
    assert_eq!(who("cc01", at(50)).await, Lookup::Unknown, "never stored");
    // Expired at `expires_at`, and told apart from unknown.
    assert_eq!(who("aa02", at_us(99, 999_999)).await, live(alice.id()));
    assert_eq!(who("aa02", at(100)).await, Lookup::Expired);
    assert_eq!(who("aa03", at(50)).await, Lookup::Expired);
    // A live token's expiry comes with it.
    assert_eq!(
        s.contact_for_token("aa02", at(50))
            .await
            .expect("lookup")
            .live()
            .map(|t| t.expires_at),
        Some(Some(at(100)))
    );

    // Revokes the live ones only (aa03 has expired by then).
    assert_eq!(
        s.revoke_tokens(alice.id(), at(50)).await.expect("revoke"),
        2
    );
    assert_eq!(who("aa01", at(51)).await, Lookup::Unknown);
    assert_eq!(who("aa02", at(51)).await, Lookup::Unknown);
    // Revoked stays unknown past its expiry: never told as expired.
    assert_eq!(who("aa02", at(200)).await, Lookup::Unknown);
    // Expired before the revocation (which left it alone): expired.
    assert_eq!(who("aa03", at(51)).await, Lookup::Expired);
    assert_eq!(
        who("bb01", at(51)).await,
        live(bob.id()),
        "other contacts keep theirs"
    );
    assert_eq!(
        s.revoke_tokens(alice.id(), at(60)).await.expect("revoke"),
        0
    );
}

async fn tokens_are_listed_revoked_one_by_one_and_their_use_recorded(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let ids: Vec<Uuid> = (0..3).map(|_| new_id()).collect();
    for (n, id) in ids.iter().enumerate() {
        s.insert_token(NewToken {
            id: *id,
            created_at: at(n as i64),
            ..token(&alice, &format!("a{n}"), None)
        })
        .await
        .expect("insert");
    }
    s.insert_token(NewToken {
        created_at: at(1),
        ..token(&alice, "expired", Some(at(20)))
    })
    .await
    .expect("insert");
    s.insert_token(token(&bob, "b0", None))
        .await
        .expect("insert");
    let listed = |cursor: Option<Cursor<Uuid>>, limit: i64| {
        let s = s.clone();
        let alice = alice.id();
        async move {
            s.list_tokens(alice, at(50), page(limit, cursor))
                .await
                .expect("list")
        }
    };
    // Live ones only, newest first, paged.
    let first = listed(None, 2).await;
    let got: Vec<Uuid> = first.items.iter().map(|t| t.id).collect();
    assert_eq!(got, [ids[2], ids[1]]);
    assert!(first.has_more);
    let rest = listed(Some(Cursor::After(ids[1])), 2).await;
    assert_eq!(
        rest.items.iter().map(|t| t.id).collect::<Vec<_>>(),
        [ids[0]]
    );
    assert!(!rest.has_more);
    let back = listed(Some(Cursor::Before(ids[0])), 1).await;
    assert_eq!(
        back.items.iter().map(|t| t.id).collect::<Vec<_>>(),
        [ids[1]]
    );
    assert!(back.items.iter().all(|t| t.contact_id == alice.id()));
    assert_err!(
        s.list_tokens(alice.id(), at(50), page(2, Some(Cursor::After(new_id()))))
            .await,
        StoreError::CursorNotFound
    );
    assert_err!(
        s.list_tokens(ContactId::from_uuid(new_id()), at(50), page(2, None))
            .await,
        StoreError::NotFound
    );
    // Use: recorded forward only.
    assert_eq!(first.items[0].last_used_at, None);
    s.touch_token("a2", at(40)).await.expect("touch");
    s.touch_token("a2", at(30)).await.expect("touch");
    let used = listed(None, 1).await;
    assert_eq!(used.items[0].last_used_at, Some(at(40)));
    // One revoked: its contact answered; again, or unknown: none.
    assert_eq!(
        s.revoke_token(ids[1], at(50)).await.expect("revoke"),
        Some(alice.id())
    );
    assert_eq!(s.revoke_token(ids[1], at(51)).await.expect("again"), None);
    assert_eq!(
        s.revoke_token(new_id(), at(51)).await.expect("unknown"),
        None
    );
    assert_eq!(
        s.contact_for_token("a1", at(52)).await.expect("lookup"),
        Lookup::Unknown
    );
    assert!(s
        .contact_for_token("a0", at(52))
        .await
        .expect("lookup")
        .live()
        .is_some());
    let left = listed(None, 10).await;
    assert_eq!(
        left.items.iter().map(|t| t.id).collect::<Vec<_>>(),
        [ids[2], ids[0]]
    );
}

async fn server_keys_are_stored_by_hash_listed_and_revoked(s: S) {
    let first = NewServerKey {
        id: new_id(),
        name: "backend".into(),
        hash: "k1".into(),
        created_at: at(1),
    };
    let second = NewServerKey {
        id: new_id(),
        name: "bots".into(),
        hash: "k2".into(),
        created_at: at(2),
    };
    s.insert_server_key(first.clone()).await.expect("insert");
    s.insert_server_key(second.clone()).await.expect("insert");
    assert_err!(
        s.insert_server_key(NewServerKey {
            id: new_id(),
            ..first.clone()
        })
        .await,
        StoreError::Conflict(_)
    );
    let found = s.server_key("k1").await.expect("lookup").expect("live");
    assert_eq!((found.id, found.name.as_str()), (first.id, "backend"));
    assert_eq!(found.last_used_at, None);
    assert_eq!(s.server_key("nope").await.expect("lookup"), None);
    s.touch_server_key(first.id, at(10)).await.expect("touch");
    s.touch_server_key(first.id, at(5)).await.expect("touch");
    let listed = s.list_server_keys().await.expect("list");
    assert_eq!(
        listed.iter().map(|k| k.id).collect::<Vec<_>>(),
        [first.id, second.id]
    );
    assert_eq!(listed[0].last_used_at, Some(at(10)));
    let revoked = s
        .revoke_server_key(first.id, at(20))
        .await
        .expect("revoke")
        .expect("known");
    assert_eq!(revoked.revoked_at, Some(at(20)));
    // Revoked again: as it was.
    let again = s
        .revoke_server_key(first.id, at(30))
        .await
        .expect("revoke")
        .expect("known");
    assert_eq!(again.revoked_at, Some(at(20)));
    assert_eq!(
        s.revoke_server_key(new_id(), at(30)).await.expect("revoke"),
        None
    );
    assert_eq!(s.server_key("k1").await.expect("lookup"), None);
    assert!(s.server_key("k2").await.expect("lookup").is_some());
    // An open stream of a key lives while the key does.
    let live = s
        .live_token_hashes(vec!["k1".into(), "k2".into()], at(40))
        .await
        .expect("live");
    assert_eq!(live, ["k2"]);
}

fn ticket(hash: &str, token_hash: &str, made: i64, expires: i64) -> NewTicket {
    NewTicket {
        hash: hash.into(),
        token_hash: token_hash.into(),
        created_at: at(made),
        expires_at: at(expires),
    }
}

/// A ticket authenticates its token's contact until it expires, and no
/// longer than its token lives; expired tickets are pruned, live ones kept.
async fn tickets_live_no_longer_than_their_token(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    s.insert_token(token(&alice, "aa01", None))
        .await
        .expect("insert");
    s.insert_token(token(&alice, "aa02", Some(at(100))))
        .await
        .expect("insert");
    s.insert_token(token(&bob, "bb01", None))
        .await
        .expect("insert");
    s.insert_ticket(ticket("t1", "aa01", 10, 610))
        .await
        .expect("ticket");
    s.insert_ticket(ticket("t2", "aa02", 10, 610))
        .await
        .expect("ticket");
    s.insert_ticket(ticket("t3", "bb01", 10, 20))
        .await
        .expect("ticket");
    // Only a live token makes one.
    assert_err!(
        s.insert_ticket(ticket("t4", "ffff", 10, 610)).await,
        StoreError::NotFound
    );
    assert_err!(
        s.insert_ticket(ticket("t5", "aa02", 100, 700)).await,
        StoreError::NotFound
    );
    let holder = |hash: &'static str, now: i64| {
        let s = s.clone();
        async move {
            s.ticket_holder(hash, at(now))
                .await
                .expect("lookup")
                .map(|h| (h.contact.id(), h.token_hash))
        }
    };
    let live = |id: ContactId, token: &str| Lookup::Live((id, token.to_owned()));
    assert_eq!(holder("t1", 50).await, live(alice.id(), "aa01"));
    assert_eq!(holder("t3", 15).await, live(bob.id(), "bb01"));
    assert_eq!(holder("t4", 50).await, Lookup::Unknown, "never made");
    assert_eq!(
        holder("aa01", 50).await,
        Lookup::Unknown,
        "a token is not a ticket"
    );
    // Expired at `expires_at`, and told apart from unknown.
    assert_eq!(holder("t3", 20).await, Lookup::Expired);
    // Its token expired: expired although the ticket has not.
    assert_eq!(holder("t2", 99).await, live(alice.id(), "aa02"));
    assert_eq!(holder("t2", 100).await, Lookup::Expired);
    // Its token revoked: refused as unknown, expired or not.
    s.revoke_tokens(alice.id(), at(60)).await.expect("revoke");
    assert_eq!(holder("t1", 61).await, Lookup::Unknown);
    assert_eq!(holder("t1", 700).await, Lookup::Unknown);
    // Pruning takes the expired ones only, in batches.
    s.insert_ticket(ticket("t6", "bb01", 30, 630))
        .await
        .expect("ticket");
    assert_eq!(s.prune_tickets(at(700), 1).await.expect("prune"), 1);
    assert_eq!(s.prune_tickets(at(620), 10).await.expect("prune"), 2);
    assert_eq!(s.prune_tickets(at(620), 10).await.expect("prune"), 0);
    assert_eq!(holder("t6", 40).await, live(bob.id(), "bb01"));
}

confab_tests::on_both_stores!(
    crate::support::on_store;
    tokens_live_expired_revoked_unknown,
    tokens_are_listed_revoked_one_by_one_and_their_use_recorded,
    server_keys_are_stored_by_hash_listed_and_revoked,
    tickets_live_no_longer_than_their_token,
);
