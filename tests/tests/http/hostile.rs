//! Hostile load (docs/api.md "Hostile load"): no client, with or without a token,
//! takes the service from others. Over real HTTP on both stores; raw
//! sockets where a well-behaved client library would hide what is tested
//! (a trickled body, a body sent after a refusal, idle connections).

use std::time::{Duration, Instant};

use confab_server::startup::{HubOptions, Quota, RateLimits, ServerOptions, TrustedProxies};
use confab_tests::db::Backend;
use confab_tests::http::TestApp;
use reqwest::Method;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A server with these options on `backend`.
async fn app(backend: Backend, options: ServerOptions) -> TestApp {
    TestApp::spawn_with_options(backend, options).await
}

fn no_limits() -> RateLimits {
    RateLimits::OFF
}

/// `host:port` of the app.
pub(crate) fn addr(app: &TestApp) -> String {
    app.base_url.trim_start_matches("http://").to_owned()
}

/// Reads from `conn` until the response head and a body of its
/// `Content-Length` have arrived, or the peer closes, or `within` passes.
/// Returns (status, head, body, whether the peer closed after it).
pub(crate) async fn read_response(
    conn: &mut TcpStream,
    within: Duration,
) -> (u16, String, String, bool) {
    read_response_then(conn, within, true).await
}

/// [`read_response`]; with `watch_close`, then waits up to 2 s for the
/// peer to close.
async fn read_response_then(
    conn: &mut TcpStream,
    within: Duration,
    watch_close: bool,
) -> (u16, String, String, bool) {
    let deadline = Instant::now() + within;
    let mut buf = Vec::new();
    let mut closed = false;
    loop {
        if let Some(end) = find(&buf, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let length = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if buf.len() >= end + 4 + length {
                let status = head
                    .split_whitespace()
                    .nth(1)
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                let body = String::from_utf8_lossy(&buf[end + 4..end + 4 + length]).to_string();
                if !closed && watch_close {
                    // Did the server close after the answer?
                    let mut rest = [0u8; 64];
                    let left = deadline.saturating_duration_since(Instant::now());
                    closed = matches!(
                        tokio::time::timeout(
                            left.min(Duration::from_secs(2)),
                            conn.read(&mut rest)
                        )
                        .await,
                        Ok(Ok(0) | Err(_))
                    );
                }
                return (status, head, body, closed);
            }
        }
        if closed {
            return (
                0,
                String::from_utf8_lossy(&buf).to_string(),
                String::new(),
                true,
            );
        }
        let mut chunk = [0u8; 4096];
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, conn.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => closed = true,
            Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
            Err(_) => panic!(
                "no complete response within {within:?}; got {:?}",
                String::from_utf8_lossy(&buf)
            ),
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[track_caller]
pub(crate) fn assert_error_body(body: &str, code: &str) {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|_| panic!("not JSON: {body:?}"));
    assert_eq!(v["code"], code, "{body}");
    assert!(v["type"].is_string() && v["message"].is_string(), "{body}");
    assert!(v.get("param").is_some(), "{body}");
}

/// Opens a stream and returns its response (kept open while held).
async fn open_stream(app: &TestApp, token: &str) -> reqwest::Response {
    reqwest::Client::new()
        .get(format!("{}/v1/events", app.base_url))
        .bearer_auth(token)
        .send()
        .await
        .expect("stream request")
}

async fn a_contact_holds_at_most_its_streams(backend: Backend) {
    let app = app(
        backend,
        ServerOptions {
            rate_limits: no_limits(),
            max_streams_per_contact: Some(3),
            events: HubOptions {
                // A closed client is noticed at the next write.
                heartbeat: Duration::from_millis(200),
                ..HubOptions::default()
            },
            ..ServerOptions::default()
        },
    )
    .await;
    let alice = app.user("alice").await;
    let second = app
        .service
        .issue_token("alice", None)
        .await
        .expect("second token");
    let bob = app.user("bob").await;
    let mut open = Vec::new();
    for token in [&alice.token, &alice.token, &second] {
        let resp = open_stream(&app, token).await;
        assert_eq!(resp.status().as_u16(), 200);
        open.push(resp);
    }
    // A fourth, whichever token: all of alice's tokens share her slots.
    for token in [&alice.token, &second] {
        let resp = open_stream(&app, token).await;
        assert_eq!(resp.status().as_u16(), 429);
        assert_eq!(resp.headers()["content-type"], "application/json");
        assert_error_body(&resp.text().await.expect("body"), "too_many_streams");
    }
    // Others are unaffected, and the rest of the API works for alice.
    assert_eq!(open_stream(&app, &bob.token).await.status().as_u16(), 200);
    app.send(
        Method::GET,
        "/v1/contacts/me",
        Some(&alice.token),
        None,
        &[],
    )
    .await
    .expect(200);
    // A stream that closes gives its slot back.
    drop(open.pop());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let resp = open_stream(&app, &second).await;
        if resp.status().as_u16() == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the closed stream's slot never came back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn a_valid_token_is_never_refused_for_its_address(backend: Backend) {
    let app = app(
        backend,
        ServerOptions {
            rate_limits: RateLimits {
                per_contact: Quota::new(1, 3),
                anonymous: Quota::new(1, 2),
                per_key: None,
            },
            ..ServerOptions::default()
        },
    )
    .await;
    let alice = app.user("alice").await;
    let bad = format!("cfb_{}", "0".repeat(64));
    // The address spends its allowance on bad tokens...
    let mut statuses = Vec::new();
    for _ in 0..5 {
        let r = app
            .send(Method::GET, "/v1/contacts/me", Some(&bad), None, &[])
            .await;
        statuses.push(r.status.as_u16());
    }
    assert_eq!(statuses, [401, 401, 429, 429, 429]);
    // ...and a valid token from it still gets through.
    app.send(
        Method::GET,
        "/v1/contacts/me",
        Some(&alice.token),
        None,
        &[],
    )
    .await
    .expect(200);
    // All of a contact's tokens share one budget: a second token buys no
    // more requests.
    let second = app
        .service
        .issue_token("alice", None)
        .await
        .expect("second token");
    let r = app
        .send(Method::GET, "/v1/contacts/me", Some(&second), None, &[])
        .await;
    r.expect(200);
    assert_eq!(r.header("ratelimit-remaining"), Some("1"));
    app.send(
        Method::GET,
        "/v1/contacts/me",
        Some(&alice.token),
        None,
        &[],
    )
    .await
    .expect(200);
    let r = app
        .send(Method::GET, "/v1/contacts/me", Some(&second), None, &[])
        .await;
    r.expect_error(429, "rate_limited", None);
    assert!(r.header("retry-after").is_some());
    // Another contact has a budget of its own.
    let bob = app.user("bob").await;
    app.send(Method::GET, "/v1/contacts/me", Some(&bob.token), None, &[])
        .await
        .expect(200);
}

async fn behind_a_trusted_proxy_each_client_has_its_own_allowance(backend: Backend) {
    let limits = RateLimits {
        per_contact: None,
        anonymous: Quota::new(1, 2),
        per_key: None,
    };
    let proxied = app(
        backend,
        ServerOptions {
            rate_limits: limits,
            trusted_proxies: "127.0.0.0/8".parse::<TrustedProxies>().expect("cidr"),
            ..ServerOptions::default()
        },
    )
    .await;
    let unauthenticated = |app: &TestApp, client: &'static str| {
        let request = app
            .client
            .get(format!("{}/v1/contacts/me", app.base_url))
            .header("x-forwarded-for", format!("203.0.113.50, {client}"));
        async move { request.send().await.expect("request").status().as_u16() }
    };
    let mut first = Vec::new();
    for _ in 0..3 {
        first.push(unauthenticated(&proxied, "198.51.100.1").await);
    }
    assert_eq!(first, [401, 401, 429]);
    // Another client behind the same proxy is not limited, and the entry
    // the client wrote itself (203.0.113.50) is not who it is.
    assert_eq!(unauthenticated(&proxied, "198.51.100.2").await, 401);
    // IPv6 clients are counted per /64.
    assert_eq!(unauthenticated(&proxied, "2001:db8:0:7::1").await, 401);
    assert_eq!(unauthenticated(&proxied, "2001:db8:0:7::2").await, 401);
    assert_eq!(unauthenticated(&proxied, "2001:db8:0:7:ffff::3").await, 429);
    // Without trusted proxies the header is ignored: every request is the
    // peer's.
    let direct = app(
        backend,
        ServerOptions {
            rate_limits: limits,
            ..ServerOptions::default()
        },
    )
    .await;
    let statuses = [
        unauthenticated(&direct, "198.51.100.1").await,
        unauthenticated(&direct, "198.51.100.2").await,
        unauthenticated(&direct, "198.51.100.3").await,
    ];
    assert_eq!(statuses, [401, 401, 429]);
}

async fn metrics_can_be_kept_private_and_are_limited_in_public(backend: Backend) {
    // Public: a scrape costs the address's anonymous allowance.
    let public = app(
        backend,
        ServerOptions {
            rate_limits: RateLimits {
                per_contact: None,
                anonymous: Quota::new(1, 2),
                per_key: None,
            },
            ..ServerOptions::default()
        },
    )
    .await;
    let mut statuses = Vec::new();
    for _ in 0..3 {
        statuses.push(public.send(Method::GET, "/metrics", None, None, &[]).await);
    }
    assert_eq!(statuses[0].status.as_u16(), 200);
    assert_eq!(statuses[1].status.as_u16(), 200);
    statuses[2].expect_error(429, "rate_limited", None);
    // Private: only on its own listener, 404 on the main one.
    let (private, port) = TestApp::spawn_full(
        backend,
        ServerOptions {
            rate_limits: no_limits(),
            metrics_listen: Some(vec!["127.0.0.1:0".parse().expect("addr")]),
            ..ServerOptions::default()
        },
    )
    .await;
    let port = port.expect("a metrics port");
    private
        .send(Method::GET, "/metrics", None, None, &[])
        .await
        .expect_error(404, "not_found", None);
    let scrape = reqwest::get(format!("http://127.0.0.1:{port}/metrics"))
        .await
        .expect("scrape");
    assert_eq!(scrape.status().as_u16(), 200);
    assert!(scrape
        .text()
        .await
        .expect("text")
        .contains("confab_http_requests_total"));
    let other = reqwest::get(format!("http://127.0.0.1:{port}/v1/contacts/me"))
        .await
        .expect("other");
    assert_eq!(other.status().as_u16(), 404);
    assert_error_body(&other.text().await.expect("body"), "not_found");
}

async fn a_body_that_does_not_arrive_in_10_s_is_408(backend: Backend) {
    let app = app(
        backend,
        ServerOptions {
            rate_limits: no_limits(),
            ..ServerOptions::default()
        },
    )
    .await;
    let alice = app.user("alice").await;
    let mut conn = TcpStream::connect(addr(&app)).await.expect("connect");
    let head = format!(
        "POST /v1/conversations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ncontact_id=",
        alice.token
    );
    conn.write_all(head.as_bytes()).await.expect("write");
    let started = Instant::now();
    // Trickle a byte a second: never the whole body.
    let trickle = async {
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if conn.write_all(b"a").await.is_err() {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_millis(9_500), trickle).await;
    let (status, head, body, closed) = read_response(&mut conn, Duration::from_secs(5)).await;
    let waited = started.elapsed();
    assert_eq!(status, 408, "{head}\n{body}");
    assert_error_body(&body, "request_timeout");
    assert!(closed, "the connection stays open after the 408");
    assert!(
        waited >= Duration::from_secs(9) && waited < Duration::from_secs(13),
        "answered after {waited:?}"
    );
}

/// A refusal closes the connection without reading the rest of the body:
/// the client keeps sending, and the connection still ends at once.
async fn after_a_refusal_the_rest_of_the_body_is_not_read(backend: Backend) {
    let app = app(
        backend,
        ServerOptions {
            rate_limits: no_limits(),
            ..ServerOptions::default()
        },
    )
    .await;
    let alice = app.user("alice").await;
    let cases = [
        // No token, an endless chunked body: 401.
        (
            String::new(),
            "Content-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n",
            401,
            "unauthorized",
        ),
        // A body declared over the limit: 413.
        (
            format!("Authorization: Bearer {}\r\n", alice.token),
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 300000000\r\n",
            413,
            "payload_too_large",
        ),
        // A body of a type we do not take: 415 before it is read.
        (
            format!("Authorization: Bearer {}\r\n", alice.token),
            "Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n",
            415,
            "unsupported_media_type",
        ),
    ];
    for (auth, framing, want, code) in cases {
        let mut conn = TcpStream::connect(addr(&app)).await.expect("connect");
        let head = format!("POST /v1/messages HTTP/1.1\r\nHost: x\r\n{auth}{framing}\r\n");
        conn.write_all(head.as_bytes()).await.expect("write head");
        let chunk = format!("1000\r\n{}\r\n", "a".repeat(0x1000));
        let started = Instant::now();
        let (mut reader, mut writer) = conn.into_split();
        // Keep sending for up to 5 s, as an attacker would, until the
        // server hangs up.
        let sender = tokio::spawn(async move {
            while started.elapsed() < Duration::from_secs(5) {
                if writer.write_all(chunk.as_bytes()).await.is_err() {
                    return Some(started.elapsed());
                }
            }
            None
        });
        let mut buf = Vec::new();
        let mut tmp = [0u8; 4096];
        let closed_at = loop {
            match tokio::time::timeout(Duration::from_secs(6), reader.read(&mut tmp)).await {
                Ok(Ok(0)) | Ok(Err(_)) => break started.elapsed(),
                Ok(Ok(n)) => buf.extend_from_slice(&tmp[..n]),
                Err(_) => panic!("the connection stayed open for 6 s after a {want}"),
            }
        };
        let text = String::from_utf8_lossy(&buf).to_string();
        let status: u16 = text
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        assert_eq!(status, want, "{text}");
        let body = text.split("\r\n\r\n").nth(1).unwrap_or("");
        assert_error_body(body, code);
        assert!(
            closed_at < Duration::from_secs(2),
            "a {want} closed only after {closed_at:?}"
        );
        // The server stops reading: the sender's writes fail soon after
        // the answer (what it still read meanwhile was a lingering close
        // of at most 0.5 s, discarded), not after 5 s of sending.
        let hung_up = sender.await.expect("sender");
        assert!(
            hung_up.is_some_and(|at| at < Duration::from_secs(3)),
            "the server read on after a {want}: {hung_up:?}"
        );
    }
}

async fn past_the_connection_budget_new_connections_get_a_fast_503(backend: Backend) {
    let app = app(
        backend,
        ServerOptions {
            rate_limits: no_limits(),
            max_connections: Some(4),
            ..ServerOptions::default()
        },
    )
    .await;
    let alice = app.user("alice").await;
    let request = |path: &str| {
        format!(
            "GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\r\n",
            alice.token
        )
    };
    // Fill the budget with kept-alive connections, each used once.
    let mut open = Vec::new();
    let mut refused = None;
    for _ in 0..8 {
        let mut conn = TcpStream::connect(addr(&app)).await.expect("connect");
        conn.write_all(request("/v1/contacts/me").as_bytes())
            .await
            .expect("write");
        let started = Instant::now();
        let (status, head, body, _) =
            read_response_then(&mut conn, Duration::from_secs(3), false).await;
        match status {
            200 => open.push(conn),
            503 => {
                assert!(started.elapsed() < Duration::from_secs(1), "a slow refusal");
                assert_error_body(&body, "unavailable");
                assert!(
                    head.to_ascii_lowercase().contains("connection: close"),
                    "{head}"
                );
                refused = Some(conn);
                break;
            }
            other => panic!("unexpected {other}: {head} {body}"),
        }
    }
    assert!(refused.is_some(), "no connection was ever refused");
    assert!(
        (1..=4).contains(&open.len()),
        "{} connections served",
        open.len()
    );
    // Health checks still answer on a new connection.
    for path in ["/healthz", "/readyz"] {
        let mut conn = TcpStream::connect(addr(&app)).await.expect("connect");
        conn.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await
            .expect("write");
        let (status, head, _, _) =
            read_response_then(&mut conn, Duration::from_secs(3), false).await;
        assert_eq!(status, 200, "{path}: {head}");
    }
    // Authenticated requests on the open connections keep working.
    for conn in &mut open {
        conn.write_all(request("/v1/contacts/me").as_bytes())
            .await
            .expect("write");
        let (status, head, _, _) = read_response_then(conn, Duration::from_secs(3), false).await;
        assert_eq!(status, 200, "{head}");
    }
    // Once they close, new connections are served again.
    drop(open);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut conn = TcpStream::connect(addr(&app)).await.expect("connect");
        conn.write_all(request("/v1/contacts/me").as_bytes())
            .await
            .expect("write");
        let (status, _, _, _) = read_response_then(&mut conn, Duration::from_secs(3), false).await;
        if status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "the budget never came back");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A connection to the app from `source` (any 127.x.y.z on loopback), so
/// that tests can play clients of other addresses.
async fn connect_from(app: &TestApp, source: &str) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind(format!("{source}:0").parse().expect("source"))
        .expect("bind the source address");
    socket
        .connect(addr(app).parse().expect("addr"))
        .await
        .expect("connect")
}

/// A request head cut short: what a client trickling its head has sent.
const PARTIAL_HEAD: &[u8] = b"GET /v1/contacts/me HTTP/1.1\r\nHost: x\r\nX-Slow: ";

fn authorized_get(path: &str, token: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n")
}

/// One address holding connections never finishing their heads cannot
/// take more than its share; another address is served all along.
async fn one_address_cannot_take_the_connections(backend: Backend) {
    let app = app(
        backend,
        ServerOptions {
            rate_limits: no_limits(),
            max_connections_per_address: Some(6),
            max_pending_per_address: Some(3),
            ..ServerOptions::default()
        },
    )
    .await;
    let alice = app.user("alice").await;
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut conn = connect_from(&app, "127.0.0.2").await;
        conn.write_all(PARTIAL_HEAD).await.expect("write");
        held.push(conn);
    }
    // The server takes connections in on two workers, in any order.
    tokio::time::sleep(Duration::from_millis(300)).await;
    // A fourth connection still sending its head: refused as accepted,
    // with the contract's error, and closed.
    for _ in 0..3 {
        let mut conn = connect_from(&app, "127.0.0.2").await;
        let started = Instant::now();
        let (status, head, body, closed) = read_response(&mut conn, Duration::from_secs(3)).await;
        assert_eq!(status, 429, "{head}\n{body}");
        assert_error_body(&body, "too_many_connections");
        assert!(closed, "the refused connection stays open");
        assert!(started.elapsed() < Duration::from_secs(1), "a slow refusal");
    }
    // Another address is served, on new connections each time.
    for _ in 0..5 {
        let mut conn = TcpStream::connect(addr(&app)).await.expect("connect");
        conn.write_all(authorized_get("/v1/contacts/me", &alice.token).as_bytes())
            .await
            .expect("write");
        let (status, head, _, _) =
            read_response_then(&mut conn, Duration::from_secs(3), false).await;
        assert_eq!(status, 200, "{head}");
    }
    // A head that arrives frees its place.
    held[0]
        .write_all(b"1\r\n\r\n")
        .await
        .expect("finish the head");
    let (status, _, _, closed) = read_response(&mut held[0], Duration::from_secs(3)).await;
    assert_eq!((status, closed), (401, true));
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let mut conn = connect_from(&app, "127.0.0.2").await;
        conn.write_all(authorized_get("/healthz", "x").as_bytes())
            .await
            .expect("write");
        let (status, ..) = read_response_then(&mut conn, Duration::from_secs(3), false).await;
        if status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "the place never came back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// actix times out a connection's first head only: a kept-alive
/// connection trickling its next head is shut by the gate.
async fn a_next_head_that_never_ends_is_cut(backend: Backend) {
    let app = app(
        backend,
        ServerOptions {
            rate_limits: no_limits(),
            ..ServerOptions::default()
        },
    )
    .await;
    let mut conn = TcpStream::connect(addr(&app)).await.expect("connect");
    conn.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("write");
    let (status, ..) = read_response_then(&mut conn, Duration::from_secs(3), false).await;
    assert_eq!(status, 200);
    let started = Instant::now();
    conn.write_all(PARTIAL_HEAD).await.expect("write");
    // A byte a second, for as long as the server keeps the connection.
    let mut buf = [0u8; 256];
    let closed_after = loop {
        tokio::select! {
            read = conn.read(&mut buf) => match read {
                Ok(0) | Err(_) => break started.elapsed(),
                Ok(_) => {}
            },
            () = tokio::time::sleep(Duration::from_secs(1)) => {
                assert!(
                    started.elapsed() < Duration::from_secs(16),
                    "a trickled head held its connection for 16 s"
                );
                if conn.write_all(b"a").await.is_err() {
                    break started.elapsed();
                }
            }
        }
    };
    assert!(
        closed_after >= Duration::from_secs(9) && closed_after < Duration::from_secs(13),
        "closed after {closed_after:?}"
    );
}

/// Clients holding every connection of the budget with heads that never
/// end: a caller with a token is still served (the longest waiting
/// connection makes room), a request without one on the reserve is a
/// fast 503, and health checks answer.
async fn the_last_connections_are_kept_for_callers_with_a_token(backend: Backend) {
    let app = app(
        backend,
        ServerOptions {
            rate_limits: no_limits(),
            max_connections: Some(8),
            ..ServerOptions::default()
        },
    )
    .await;
    let alice = app.user("alice").await;
    let mut held = Vec::new();
    for i in 0..8 {
        let mut conn = connect_from(&app, &format!("127.0.0.{}", 10 + i)).await;
        conn.write_all(PARTIAL_HEAD).await.expect("write");
        held.push(conn);
    }
    // The grace (1 s) counts from when the server accepted each one,
    // which a loaded machine may do a moment after the connect.
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    let mut served = Vec::new();
    for _ in 0..3 {
        let mut conn = TcpStream::connect(addr(&app)).await.expect("connect");
        conn.write_all(authorized_get("/v1/contacts/me", &alice.token).as_bytes())
            .await
            .expect("write");
        let (status, head, body, _) =
            read_response_then(&mut conn, Duration::from_secs(3), false).await;
        assert_eq!(status, 200, "{head}\n{body}");
        // Kept open: the budget stays full. The attackers' longest waits
        // made room, one each time.
        served.push(conn);
    }
    let mut anonymous = TcpStream::connect(addr(&app)).await.expect("connect");
    anonymous
        .write_all(b"GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("write");
    let (status, head, body, _) =
        read_response_then(&mut anonymous, Duration::from_secs(3), false).await;
    assert_eq!(status, 503, "{head}");
    assert_error_body(&body, "unavailable");
    let mut health = TcpStream::connect(addr(&app)).await.expect("connect");
    health
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("write");
    let (status, ..) = read_response_then(&mut health, Duration::from_secs(3), false).await;
    assert_eq!(status, 200);
}

/// Helper runner: the app is built inside each test.
async fn run<F, Fut>(backend: Backend, test: F)
where
    F: FnOnce(Backend) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    test(backend).await;
}

confab_tests::on_both_stores!(crate::hostile::run;
    a_contact_holds_at_most_its_streams,
    a_valid_token_is_never_refused_for_its_address,
    behind_a_trusted_proxy_each_client_has_its_own_allowance,
    metrics_can_be_kept_private_and_are_limited_in_public,
    a_body_that_does_not_arrive_in_10_s_is_408,
    after_a_refusal_the_rest_of_the_body_is_not_read,
    past_the_connection_budget_new_connections_get_a_fast_503,
    one_address_cannot_take_the_connections,
    a_next_head_that_never_ends_is_cut,
    the_last_connections_are_kept_for_callers_with_a_token,
);
