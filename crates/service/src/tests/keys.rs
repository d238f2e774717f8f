//! Server keys: made and stored by hash, trusted from the cache for a few
//! seconds, refused at once after a revocation in this process, their use
//! recorded once a minute; acting for a contact that does not exist is
//! `Unauthorized`.
use confab_ports::{NewServerKey, ServerKey};

use crate::ServiceError;

use super::*;

fn key(id: u128) -> ServerKey {
    ServerKey {
        id: Uuid::from_u128(id),
        name: "backend".into(),
        created_at: Timestamp::from_secs(NOW - 100),
        last_used_at: None,
        revoked_at: None,
    }
}

#[tokio::test]
async fn a_key_is_stored_by_hash_and_shown_once() {
    let mut m = Mocks::new();
    let stored = std::sync::Arc::new(std::sync::Mutex::new(None::<NewServerKey>));
    let keep = stored.clone();
    m.tokens
        .expect_insert_server_key()
        .times(1)
        .returning(move |k| {
            *keep.lock().expect("lock") = Some(k);
            Ok(())
        });
    let created = m
        .service()
        .create_server_key("  app backend ")
        .await
        .expect("created");
    let stored = stored.lock().expect("lock").clone().expect("stored");
    assert_eq!(created.key.name, "app backend");
    assert!(created.secret.starts_with("cfb_sk_") && created.secret.len() == 7 + 64);
    assert_eq!(
        stored.hash,
        crate::auth::token_hash_for_tests(&created.secret)
    );
    assert!(!stored.hash.contains(&created.secret[7..]));
}

#[tokio::test]
async fn a_bad_key_name_is_refused_before_anything_is_stored() {
    let svc = Mocks::new().service();
    for name in ["", "   ", &"k".repeat(101), "tab\there"] {
        assert!(
            matches!(
                svc.create_server_key(name).await,
                Err(ServiceError::Invalid {
                    field: confab_domain::Field::KeyName,
                    ..
                })
            ),
            "{name:?}"
        );
    }
}

#[tokio::test]
async fn a_live_key_is_trusted_for_a_few_seconds_and_its_use_recorded_once() {
    let secret = format!("cfb_sk_{}", "ab".repeat(32));
    let hash = crate::auth::token_hash_for_tests(&secret);
    let mut m = Mocks::new();
    m.tokens
        .expect_server_key()
        .with(eq(hash))
        .times(1)
        .returning(|_| Ok(Some(key(7))));
    m.tokens
        .expect_touch_server_key()
        .with(eq(Uuid::from_u128(7)), eq(Timestamp::from_secs(NOW)))
        .times(1)
        .returning(|_, _| Ok(()));
    let svc = m.service();
    for _ in 0..3 {
        assert_eq!(
            svc.authenticate_key(&secret).await.expect("live").id,
            Uuid::from_u128(7)
        );
    }
    // A contact token is not a key, and is not even looked up.
    assert!(matches!(
        svc.authenticate_key("cfb_0123").await,
        Err(ServiceError::Unauthorized)
    ));
}

#[tokio::test]
async fn a_revocation_in_this_process_refuses_the_key_at_once() {
    let secret = format!("cfb_sk_{}", "cd".repeat(32));
    let mut m = Mocks::new();
    let mut lookups = mockall::Sequence::new();
    m.tokens
        .expect_server_key()
        .times(1)
        .in_sequence(&mut lookups)
        .returning(|_| Ok(Some(key(9))));
    m.tokens
        .expect_server_key()
        .times(1)
        .in_sequence(&mut lookups)
        .returning(|_| Ok(None));
    m.tokens.expect_touch_server_key().returning(|_, _| Ok(()));
    m.tokens
        .expect_revoke_server_key()
        .with(eq(Uuid::from_u128(9)), eq(Timestamp::from_secs(NOW)))
        .times(1)
        .returning(|_, at| {
            Ok(Some(ServerKey {
                revoked_at: Some(at),
                ..key(9)
            }))
        });
    let svc = m.service();
    svc.authenticate_key(&secret).await.expect("live");
    let revoked = svc
        .revoke_server_key(&Uuid::from_u128(9).to_string())
        .await
        .expect("revoked");
    assert!(revoked.revoked_at.is_some());
    assert!(matches!(
        svc.authenticate_key(&secret).await,
        Err(ServiceError::Unauthorized)
    ));
    assert!(matches!(
        svc.revoke_server_key("not-an-id").await,
        Err(ServiceError::NotFound { .. })
    ));
}

#[tokio::test]
async fn acting_for_an_unknown_contact_is_unauthorized() {
    let mut m = Mocks::new();
    m.contacts
        .expect_contact()
        .with(eq(alice().id()))
        .times(1)
        .returning(|_| Ok(Some(alice())));
    m.contacts
        .expect_contact()
        .with(eq(bob().id()))
        .returning(|_| Ok(None));
    let svc = m.service();
    // Looked up once, then remembered for a few seconds.
    for _ in 0..2 {
        assert_eq!(
            svc.acting_for(alice().id()).await.expect("alice").id(),
            alice().id()
        );
    }
    assert!(matches!(
        svc.acting_for(bob().id()).await,
        Err(ServiceError::Unauthorized)
    ));
}

#[tokio::test]
async fn minted_tokens_live_60_s_to_a_year() {
    let mut m = Mocks::new();
    m.tokens
        .expect_insert_token()
        .times(2)
        .returning(|_| Ok(()));
    let svc = m.service();
    for bad in [0, 59, 31_536_001, -5] {
        assert!(
            matches!(
                svc.mint_token(alice().id(), Some(bad)).await,
                Err(ServiceError::Invalid {
                    field: confab_domain::Field::TokenLifetime,
                    ..
                })
            ),
            "{bad}"
        );
    }
    let minted = svc.mint_token(alice().id(), Some(60)).await.expect("60 s");
    assert_eq!(minted.expires_at, Some(Timestamp::from_secs(NOW + 60)));
    assert!(minted.token.starts_with("cfb_") && !minted.token.starts_with("cfb_sk_"));
    let forever = svc.mint_token(alice().id(), None).await.expect("no expiry");
    assert_eq!(forever.expires_at, None);
}
