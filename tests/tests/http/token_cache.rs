//! Tokens are trusted for a few seconds without a store round trip, yet a
//! revocation takes effect within the contract's 5 s, also under load.

use std::sync::Arc;
use std::time::{Duration, Instant};

use confab_tests::http::TestApp;
use reqwest::{Method, StatusCode};
use tokio::sync::watch;

/// Clients hammer the API with one token while the operator revokes it (as
/// the CLI does, through the service, without telling this server's cache):
/// each client gets 401 within 5 s of the revocation, and 401 from then on.
async fn revocation_under_load_takes_effect_within_5_s(app: TestApp) {
    let app = Arc::new(app);
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let conv = app.direct(&alice, &bob).await;
    app.send_message(&alice, &conv, "hello").await;

    let (revoked_tx, revoked_rx) = watch::channel(None::<Instant>);
    let mut clients = Vec::new();
    for n in 0..4 {
        let (app, token, mut revoked) = (app.clone(), alice.token.clone(), revoked_rx.clone());
        let path = if n % 2 == 0 {
            "/v1/contacts/me".to_owned()
        } else {
            format!("/v1/messages?conversation_id={conv}")
        };
        clients.push(tokio::spawn(async move {
            let mut accepted = 0_u32;
            loop {
                let started = Instant::now();
                let r = app.send(Method::GET, &path, Some(&token), None, &[]).await;
                let revoked_at = *revoked.borrow_and_update();
                match r.status {
                    StatusCode::OK => {
                        accepted += 1;
                        if let Some(at) = revoked_at {
                            assert!(
                                started.duration_since(at) < Duration::from_secs(5),
                                "{path}: accepted {:?} after the revocation",
                                started.duration_since(at)
                            );
                        }
                    }
                    StatusCode::UNAUTHORIZED => {
                        let at = revoked_at.expect("refused before the revocation");
                        return (accepted, at.elapsed());
                    }
                    // The per-token rate limit shapes the load; a
                    // well-behaved client waits and goes on.
                    StatusCode::TOO_MANY_REQUESTS => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    other => panic!("{path}: unexpected {other}: {}", r.raw),
                }
            }
        }));
    }
    // Under load for a while, so that the token sits in the cache.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    app.service
        .revoke_tokens("alice")
        .await
        .expect("revoke tokens");
    revoked_tx
        .send(Some(Instant::now()))
        .expect("clients listen");
    for client in clients {
        let (accepted, after) = client.await.expect("client");
        assert!(accepted > 0, "the token worked before the revocation");
        assert!(
            after < Duration::from_secs(5),
            "401 only {after:?} after the revocation"
        );
    }
    // And it stays refused.
    for _ in 0..5 {
        app.send(
            Method::GET,
            "/v1/contacts/me",
            Some(&alice.token),
            None,
            &[],
        )
        .await
        .expect_error(401, "unauthorized", None);
    }
    // Bob, whose token is untouched, is still served.
    app.get(&bob, "/v1/contacts/me").await.expect(200);
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    revocation_under_load_takes_effect_within_5_s,
);
