//! File links name no host a request wrote (docs/api.md, "Files"): a
//! sender's `Host`, `X-Forwarded-Host` and `Forwarded` reach nobody's
//! links, neither its own answer nor its recipients' stream and catch-up
//! nor the webhooks, on both stores. Without `CONFAB_PUBLIC_URL` a link
//! names the address the connection reached; a trusted proxy's forwarded
//! host and scheme are honoured; `CONFAB_PUBLIC_URL` wins over both.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use confab_server::startup::{RateLimits, ServerOptions, TrustedProxies};
use confab_tests::db::Backend;
use confab_tests::http::{multipart, Resp, TestApp, User};
use reqwest::Method;
use serde_json::{json, Value};

use crate::events::Sse;
use crate::support::{id_of, pair};

/// What a hostile sender writes about the host it asked for.
const EVIL: [(&str, &str); 4] = [
    ("host", "evil.example"),
    ("x-forwarded-host", "evil.example"),
    ("x-forwarded-proto", "https"),
    ("forwarded", "host=evil.example;proto=https"),
];

fn options() -> ServerOptions {
    ServerOptions {
        // The webhook receiver is on this machine.
        webhook_allow_private: true,
        rate_limits: RateLimits {
            anonymous: None,
            ..RateLimits::default()
        },
        ..ServerOptions::default()
    }
}

/// An upload by `user` with `headers`.
async fn upload(app: &TestApp, user: &User, headers: &[(&str, &str)]) -> Resp {
    let (content_type, body) = multipart(&[(
        "file",
        Some("photo.png"),
        Some("image/png"),
        b"\x89PNG\r\n\x1a\n not really a picture",
    )]);
    app.send(
        Method::POST,
        "/v1/attachments",
        Some(&user.token),
        Some((&content_type, body)),
        headers,
    )
    .await
}

/// A tiny HTTP server on 127.0.0.1 that answers 200 and keeps each body.
fn webhook_receiver() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let bodies: Arc<Mutex<Vec<String>>> = Arc::default();
    let kept = bodies.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let (mut buf, mut chunk) = (Vec::new(), [0u8; 8192]);
            while let Ok(n) = stream.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
                let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                    continue;
                };
                let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if buf.len() >= end + 4 + length {
                    let body = String::from_utf8_lossy(&buf[end + 4..end + 4 + length]);
                    kept.lock().expect("bodies").push(body.into_owned());
                    break;
                }
            }
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    (format!("http://127.0.0.1:{port}/hook"), bodies)
}

/// The first webhook body holding `needle`, waiting up to 15 s.
async fn delivered(bodies: &Arc<Mutex<Vec<String>>>, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let all = bodies.lock().expect("bodies").clone();
        if let Some(body) = all.into_iter().find(|b| b.contains(needle)) {
            return body;
        }
        assert!(Instant::now() < deadline, "no webhook holds {needle}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every `file_url` in `text` (JSON), in order.
fn file_urls(text: &str) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    match (k.as_str(), v) {
                        ("file_url", Value::String(url)) => out.push(url.clone()),
                        _ => walk(v, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(&serde_json::from_str(text).expect("json"), &mut out);
    out
}

/// `text` names no evil host, and each of its links (at least one) starts
/// with `base`.
#[track_caller]
fn links_on(text: &str, base: &str, what: &str) {
    assert!(!text.contains("evil"), "{what}: {text}");
    let urls = file_urls(text);
    assert!(!urls.is_empty(), "{what} has no link: {text}");
    for url in urls {
        assert!(
            url.starts_with(&format!("{base}/v1/attachments/")),
            "{what}: {url}"
        );
    }
}

async fn no_link_names_a_host_the_sender_wrote(backend: Backend) {
    let app = TestApp::spawn_with_options(backend, options()).await;
    let (url, hooks) = webhook_receiver();
    let key = app
        .service
        .create_server_key("links")
        .await
        .expect("key")
        .secret;
    let body = json!({"url": url, "events": ["message.created", "attachment.created"]});
    app.send(
        Method::POST,
        "/v1/admin/webhooks",
        Some(&key),
        Some(("application/json", body.to_string().into_bytes())),
        &[],
    )
    .await
    .expect(201);
    let (alice, bob, conv) = pair(&app).await;
    let mut stream = Sse::open(&app.base_url, &bob.token, "/v1/events", &[]).await;
    let base = app.base_url.as_str();

    // The sender's own answers.
    let up = upload(&app, &alice, &EVIL).await;
    let file = id_of(up.expect(201));
    links_on(&up.raw, base, "the upload's answer");
    let form = format!("conversation_id={conv}&message=look&attachments%5B0%5D%5Bid%5D={file}");
    let sent = app
        .send(
            Method::POST,
            "/v1/messages",
            Some(&alice.token),
            Some(("application/x-www-form-urlencoded", form.into_bytes())),
            &EVIL,
        )
        .await;
    let message = id_of(sent.expect(201));
    links_on(&sent.raw, base, "the send's answer");

    // The recipient's stream and catch-up.
    let event = stream
        .event_of("message.created", Duration::from_secs(10))
        .await
        .expect("the message on bob's stream");
    assert_eq!(event.data["payload"]["id"], message.as_str());
    links_on(&event.data.to_string(), base, "bob's stream");
    let caught = app
        .send(
            Method::GET,
            "/v1/events?limit=100",
            Some(&bob.token),
            None,
            &[("accept", "application/json")],
        )
        .await;
    caught.expect(200);
    links_on(&caught.raw, base, "bob's catch-up");
    let own = app
        .send(
            Method::GET,
            "/v1/events?limit=100",
            Some(&alice.token),
            None,
            &[("accept", "application/json")],
        )
        .await;
    links_on(&own.raw, base, "alice's catch-up");

    // Webhooks.
    let hook = delivered(&hooks, &message).await;
    links_on(&hook, base, "the message.created webhook");
    let hook = delivered(&hooks, "attachment.created").await;
    links_on(&hook, base, "the attachment.created webhook");

    // A read with the same headers is no different, and the link works.
    let read = app
        .send(
            Method::GET,
            &format!("/v1/messages/{message}"),
            Some(&bob.token),
            None,
            &EVIL,
        )
        .await;
    links_on(&read.raw, base, "bob's read");
    let link = file_urls(&read.raw).remove(0);
    let got = reqwest::get(&link).await.expect("fetch the link");
    assert_eq!(got.status().as_u16(), 200, "{link}");
}

async fn trusted_proxies_and_the_public_url_name_the_host(backend: Backend) {
    // 127.0.0.1, where the test's requests come from, is the proxy.
    let trusted: TrustedProxies = "127.0.0.1".parse().expect("proxies");
    let app = TestApp::spawn_with_options(
        backend,
        ServerOptions {
            trusted_proxies: trusted.clone(),
            ..options()
        },
    )
    .await;
    let alice = app.user("alice").await;
    let forwarded = [
        ("host", "evil.example"),
        ("x-forwarded-host", "chat.example.com"),
        ("x-forwarded-proto", "https"),
    ];
    let up = upload(&app, &alice, &forwarded).await;
    up.expect(201);
    let urls = file_urls(&up.raw);
    assert!(
        urls[0].starts_with("https://chat.example.com/v1/attachments/"),
        "{}",
        up.raw
    );
    // A proxy that forwards no host: the address the connection reached,
    // never `Host`.
    let up = upload(&app, &alice, &[("host", "evil.example")]).await;
    links_on(&up.raw, &app.base_url, "no forwarded host");
    // A forwarded host that is not one (a path, a user) is not believed.
    let up = upload(&app, &alice, &[("x-forwarded-host", "evil.example/x@y")]).await;
    links_on(&up.raw, &app.base_url, "a malformed forwarded host");

    // CONFAB_PUBLIC_URL wins over everything.
    let app = TestApp::spawn_with_options(
        backend,
        ServerOptions {
            trusted_proxies: trusted,
            public_url: Some("https://public.example".to_owned()),
            ..options()
        },
    )
    .await;
    let alice = app.user("alice").await;
    let up = upload(&app, &alice, &forwarded).await;
    links_on(&up.raw, "https://public.example", "with CONFAB_PUBLIC_URL");
}

confab_tests::on_both_stores!(
    crate::support::on_backend;
    no_link_names_a_host_the_sender_wrote,
    trusted_proxies_and_the_public_url_name_the_host,
);
