//! Tokens are trusted for a few seconds without a store round trip, yet a
//! revocation takes effect within the contract's 5 s, also under load, and
//! at once when the server's own process revokes.

use std::future::Future;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use confab_server::startup::{open_service, Application, Database, RateLimits};
use confab_service::Confab;
use confab_tests::db::{Backend, TestDb};
use confab_tests::http::{encode_form, Resp};
use reqwest::header::CONTENT_TYPE;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use tokio::sync::watch;

/// A running server and, beside it, the operator's CLI: two services on
/// one fresh database, each with its own cache of live tokens, as two
/// processes have. (The harness's `TestApp` hands out the server's own
/// service, whose revocations the server's cache hears of at once.)
/// `server` is the running server's service.
struct ServerAndCli {
    base_url: String,
    client: reqwest::Client,
    server: Confab,
    cli: Confab,
    _db: TestDb,
}

/// Runs `test` against a [`ServerAndCli`] on `backend`.
async fn on_server_and_cli<F, Fut>(backend: Backend, test: F)
where
    F: FnOnce(ServerAndCli) -> Fut,
    Fut: Future<Output = ()>,
{
    let db = TestDb::new(backend);
    let url = db.url.clone();
    let (server, cli) = tokio::task::spawn_blocking(move || {
        let database = Database::from_env_value(Some(&url)).expect("database url");
        let open = || open_service(&database).expect("open store");
        (open(), open())
    })
    .await
    .expect("join");
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let limits = RateLimits {
        anonymous: None,
        ..RateLimits::default()
    };
    let app = Application::build_with(server.clone(), listener, limits)
        .await
        .expect("build app");
    tokio::spawn(app.run_until_stopped());
    test(ServerAndCli {
        base_url: format!("http://127.0.0.1:{port}"),
        client: reqwest::Client::new(),
        server,
        cli,
        _db: db,
    })
    .await;
}

impl ServerAndCli {
    /// A contact and a token of it, made by the CLI; returns (id, token).
    async fn user(&self, username: &str) -> (String, String) {
        let contact = self
            .cli
            .create_contact(username, "+15550100", None)
            .await
            .expect("create contact");
        let token = self
            .cli
            .issue_token(username, None)
            .await
            .expect("issue token");
        (contact.id().to_string(), token)
    }

    async fn send(&self, method: Method, path: &str, token: &str, form: &[(&str, &str)]) -> Resp {
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.base_url))
            .bearer_auth(token);
        if !form.is_empty() {
            req = req
                .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(encode_form(form));
        }
        let resp = req.send().await.expect("request sent");
        let (status, headers) = (resp.status(), resp.headers().clone());
        let raw = resp.text().await.expect("body read");
        let body = serde_json::from_str(&raw).unwrap_or(Value::Null);
        Resp {
            status,
            headers,
            body,
            raw,
        }
    }

    async fn get(&self, token: &str, path: &str) -> Resp {
        self.send(Method::GET, path, token, &[]).await
    }

    /// Creates an object with a form POST; returns its id.
    async fn create(&self, token: &str, path: &str, form: &[(&str, &str)]) -> String {
        let r = self.send(Method::POST, path, token, form).await;
        r.expect(201)["id"].as_str().expect("id").to_owned()
    }
}

/// Clients hammer the API with one token while the operator revokes it
/// with the CLI, in another process whose revocation this server's cache
/// does not hear of: each client gets 401 within 5 s of the revocation, and
/// 401 from then on.
async fn revocation_by_another_process_under_load_takes_effect_within_5_s(app: ServerAndCli) {
    let app = Arc::new(app);
    let (_, alice) = app.user("alice").await;
    let (bob_id, bob) = app.user("bob").await;
    let conv = app
        .create(&alice, "/v1/conversations", &[("contact_id", &bob_id)])
        .await;
    app.create(
        &alice,
        "/v1/messages",
        &[("conversation_id", &conv), ("message", "hello")],
    )
    .await;

    let (revoked_tx, revoked_rx) = watch::channel(None::<Instant>);
    let mut clients = Vec::new();
    for n in 0..4 {
        let (app, token, mut revoked) = (app.clone(), alice.clone(), revoked_rx.clone());
        let path = if n % 2 == 0 {
            "/v1/contacts/me".to_owned()
        } else {
            format!("/v1/messages?conversation_id={conv}")
        };
        clients.push(tokio::spawn(async move {
            let mut accepted = 0_u32;
            loop {
                let started = Instant::now();
                let r = app.get(&token, &path).await;
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
    app.cli.revoke_tokens("alice").await.expect("revoke tokens");
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
        app.get(&alice, "/v1/contacts/me")
            .await
            .expect_error(401, "unauthorized", None);
    }
    // Bob, whose token is untouched, is still served.
    app.get(&bob, "/v1/contacts/me").await.expect(200);
}

/// A revocation through the server's own service (the same process) is
/// not hidden by its cache of live tokens, not even for the 3 s a token is
/// trusted: the very next request is refused.
async fn revocation_in_the_server_s_process_takes_effect_at_once(app: ServerAndCli) {
    let (_, alice) = app.user("alice").await;
    let (_, bob) = app.user("bob").await;
    for _ in 0..3 {
        app.get(&alice, "/v1/contacts/me").await.expect(200);
    }
    app.server
        .revoke_tokens("alice")
        .await
        .expect("revoke tokens");
    app.get(&alice, "/v1/contacts/me")
        .await
        .expect_error(401, "unauthorized", None);
    app.get(&bob, "/v1/contacts/me").await.expect(200);
}

confab_tests::on_both_stores!(
    crate::token_cache::on_server_and_cli;
    revocation_by_another_process_under_load_takes_effect_within_5_s,
    revocation_in_the_server_s_process_takes_effect_at_once,
);
