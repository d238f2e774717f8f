//! What actix-web's HTTP/1 parser answers by itself, before any of confab's
//! code runs (so without the contract's JSON body), as `docs/api.md` lists
//! it, and that the server stays healthy after each.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use confab_server::startup::RateLimits;
use confab_tests::db::Backend;
use confab_tests::http::TestApp;
use reqwest::Method;

/// Sends `raw` on a fresh connection and returns the status line of the
/// answer and how long it took to come.
fn exchange(addr: &str, raw: &[u8]) -> (String, Duration) {
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(15)))
        .expect("read timeout");
    // The server may answer and close before it has read everything.
    let _ = stream.write_all(raw);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    let status = text.lines().next().unwrap_or_default().to_owned();
    (status, started.elapsed())
}

async fn parser_answer(app: &TestApp, raw: Vec<u8>) -> (String, Duration) {
    let addr = app.base_url.trim_start_matches("http://").to_owned();
    tokio::task::spawn_blocking(move || exchange(&addr, &raw))
        .await
        .expect("join")
}

async fn still_healthy(app: &TestApp) {
    let r = app.send(Method::GET, "/healthz", None, None, &[]).await;
    assert_eq!(r.status.as_u16(), 200);
}

async fn malformed_request_line_is_400_and_harmless(backend: Backend) {
    let app = TestApp::spawn_with(backend, RateLimits::default()).await;
    let (status, _) = parser_answer(&app, b"NOT A REQUEST\r\n\r\n".to_vec()).await;
    assert!(status.starts_with("HTTP/1.1 400"), "{status:?}");
    still_healthy(&app).await;
}

async fn oversized_head_is_refused_and_harmless(backend: Backend) {
    let app = TestApp::spawn_with(backend, RateLimits::default()).await;
    // A 100 KB request target: past the parser's head limit.
    let raw = format!(
        "GET /healthz?{} HTTP/1.1\r\nHost: x\r\n\r\n",
        "a".repeat(100 * 1024)
    );
    let (status, _) = parser_answer(&app, raw.into_bytes()).await;
    // actix-web answers an oversized head with 400, not 431 (docs/api.md).
    assert!(status.starts_with("HTTP/1.1 400"), "{status:?}");
    still_healthy(&app).await;
}

async fn unfinished_head_times_out_with_408_and_harmless(backend: Backend) {
    let app = TestApp::spawn_with(backend, RateLimits::default()).await;
    // The head never ends: the client request timeout (5 s) answers.
    let (status, waited) =
        parser_answer(&app, b"GET /healthz HTTP/1.1\r\nHost: x\r\n".to_vec()).await;
    assert!(status.starts_with("HTTP/1.1 408"), "{status:?}");
    assert!(waited < Duration::from_secs(10), "{waited:?}");
    still_healthy(&app).await;
}

confab_tests::on_both_stores!(crate::support::on_backend;
    malformed_request_line_is_400_and_harmless,
    oversized_head_is_refused_and_harmless,
    unfinished_head_times_out_with_408_and_harmless,
);
