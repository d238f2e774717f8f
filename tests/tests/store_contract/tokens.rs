//! Access tokens: live, expired, revoked and unknown.

use confab_domain::{Contact, ContactId, Timestamp};
use confab_ports::{NewToken, StoreError};

use crate::support::{assert_err, at, at_us, contact, new_id, S};

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
                .map(|c| c.id())
        }
    };
    assert_eq!(who("aa01", at(50)).await, Some(alice.id()));
    assert_eq!(who("aa02", at(50)).await, Some(alice.id()));
    assert_eq!(who("bb01", at(50)).await, Some(bob.id()));
    assert_eq!(who("ffff", at(50)).await, None, "unknown");
    assert_eq!(who("cc01", at(50)).await, None, "never stored");
    // Expired at `expires_at`.
    assert_eq!(who("aa02", at_us(99, 999_999)).await, Some(alice.id()));
    assert_eq!(who("aa02", at(100)).await, None);
    assert_eq!(who("aa03", at(50)).await, None);

    // Revokes the live ones only (aa03 has expired by then).
    assert_eq!(
        s.revoke_tokens(alice.id(), at(50)).await.expect("revoke"),
        2
    );
    assert_eq!(who("aa01", at(51)).await, None);
    assert_eq!(who("aa02", at(51)).await, None);
    assert_eq!(
        who("bb01", at(51)).await,
        Some(bob.id()),
        "other contacts keep theirs"
    );
    assert_eq!(
        s.revoke_tokens(alice.id(), at(60)).await.expect("revoke"),
        0
    );
}

confab_tests::on_both_stores!(
    crate::support::on_store;
    tokens_live_expired_revoked_unknown,
);
