//! Server keys (docs/api.md "Server API: from an app's backend") with the real `confab` binary: `confab
//! key create|list|revoke` and their outputs, a backend's first minutes
//! over HTTP (a contact, a token, a message sent for the contact), the
//! request log naming the key as `actor` and never a secret, and a
//! revocation by the CLI seen by a running server within 5 s.

mod binary;

use binary::{confab_ok, free_port, raw_request, BIN};
use std::fs::File;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant};

fn json(raw: &str) -> serde_json::Value {
    serde_json::from_str(raw).unwrap_or_else(|e| panic!("{e}: {raw}"))
}

#[test]
fn a_backend_provisions_and_acts_with_a_key_made_by_the_cli() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("c.db");
    let log_path = dir.path().join("confab.log");
    confab_ok(&db, &["migrate"]);

    // `key create` prints the key once, as JSON; `key list` never does.
    let created = json(&confab_ok(&db, &["key", "create", "--name", "app backend"]));
    let key = created["key"].as_str().expect("key").to_owned();
    let key_id = created["id"].as_str().expect("id").to_owned();
    assert_eq!(created["name"], "app backend");
    assert!(created["created_at"].is_i64(), "{created}");
    let hex = key.strip_prefix("cfb_sk_").expect("cfb_sk_ prefix");
    assert!(
        hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
        "{key}"
    );
    let listed = confab_ok(&db, &["key", "list"]);
    assert!(!listed.contains(hex), "the list shows a secret: {listed}");
    let listed = json(&listed);
    assert_eq!(listed[0]["id"], key_id.as_str());
    assert_eq!(listed[0]["last_used_at"], serde_json::Value::Null);
    assert_eq!(listed[0]["revoked_at"], serde_json::Value::Null);
    // A bad name or id is a clear error.
    for args in [
        &["key", "create", "--name", " "][..],
        &[
            "key",
            "revoke",
            "--id",
            "0190a5e0-0000-7000-8000-000000000000",
        ][..],
        &["key", "revoke", "--id", "nope"][..],
    ] {
        let out = Command::new(BIN)
            .args(args)
            .env("DATABASE_URL", &db)
            .output()
            .expect("run confab");
        assert!(!out.status.success(), "{args:?} succeeded");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
    }

    let port = free_port();
    let _server = binary::serve_logging(&db, port, "info", &log_path);
    let bearer = format!("Authorization: Bearer {key}");
    let form = "Content-Type: application/x-www-form-urlencoded";

    // A contact and its token, over HTTP.
    let (status, _, alice) = raw_request(
        port,
        &format!("POST /v1/admin/contacts HTTP/1.1\r\n{bearer}\r\n{form}"),
        "username=alice&phone_number=%2B15550100",
    );
    assert_eq!(status, 201, "{alice}");
    let alice = json(&alice)["id"].as_str().expect("id").to_owned();
    let (status, _, bob) = raw_request(
        port,
        &format!("POST /v1/admin/contacts HTTP/1.1\r\n{bearer}\r\n{form}"),
        "username=bob&phone_number=%2B15550101",
    );
    assert_eq!(status, 201, "{bob}");
    let bob = json(&bob)["id"].as_str().expect("id").to_owned();
    let (status, _, minted) = raw_request(
        port,
        &format!("POST /v1/admin/contacts/{alice}/tokens HTTP/1.1\r\n{bearer}\r\n{form}"),
        "expires_in=3600",
    );
    assert_eq!(status, 201, "{minted}");
    let token = json(&minted)["token"].as_str().expect("token").to_owned();
    let (status, _, me) = raw_request(
        port,
        &format!("GET /v1/contacts/me HTTP/1.1\r\nAuthorization: Bearer {token}"),
        "",
    );
    assert_eq!(
        (status, json(&me)["id"].clone()),
        (200, alice.clone().into())
    );

    // The backend sends as alice.
    let as_alice = format!("{bearer}\r\nConfab-Contact: {alice}");
    let (status, _, conversation) = raw_request(
        port,
        &format!("POST /v1/conversations HTTP/1.1\r\n{as_alice}\r\n{form}"),
        &format!("contact_id={bob}"),
    );
    assert_eq!(status, 201, "{conversation}");
    let conversation = json(&conversation)["id"].as_str().expect("id").to_owned();
    let (status, _, sent) = raw_request(
        port,
        &format!("POST /v1/messages HTTP/1.1\r\n{as_alice}\r\n{form}"),
        &format!("conversation_id={conversation}&message=hello-from-the-backend"),
    );
    assert_eq!(status, 201, "{sent}");
    assert_eq!(json(&sent)["contact"]["id"], alice.as_str());

    // An event stream of hers, ended by signing her out: its end is logged
    // with how long it lived, how many events it sent and why it ended.
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(
        stream,
        "GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
         Accept: text/event-stream\r\n\r\n"
    )
    .expect("write");
    stream
        .set_read_timeout(Some(Duration::from_secs(8)))
        .expect("timeout");
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains(": connected") {
        let n = stream.read(&mut buf).expect("read the stream");
        assert!(n > 0, "the stream closed before it opened");
        seen.extend_from_slice(&buf[..n]);
    }
    let (status, _, _) = raw_request(
        port,
        &format!("DELETE /v1/admin/contacts/{alice}/tokens HTTP/1.1\r\n{bearer}"),
        "",
    );
    assert_eq!(status, 204);
    while !String::from_utf8_lossy(&seen).contains("stream ended") {
        let n = stream.read(&mut buf).expect("the stream ends within 5 s");
        assert!(n > 0, "closed without saying why");
        seen.extend_from_slice(&buf[..n]);
    }
    drop(stream);

    // Its use shows in the list.
    let listed = json(&confab_ok(&db, &["key", "list"]));
    assert!(listed[0]["last_used_at"].is_i64(), "{listed}");

    // Revoked by the CLI (another process): refused within 5 s.
    let out = Command::new(BIN)
        .args(["key", "revoke", "--id", &key_id])
        .env("DATABASE_URL", &db)
        .output()
        .expect("run confab");
    assert!(out.status.success(), "{out:?}");
    let revoked = Instant::now();
    loop {
        let (status, _, _) = raw_request(
            port,
            &format!("GET /v1/admin/contacts HTTP/1.1\r\n{bearer}"),
            "",
        );
        if status == 401 {
            break;
        }
        assert_eq!(status, 200);
        assert!(
            revoked.elapsed() < Duration::from_secs(5),
            "a revoked key still accepted after 5 s"
        );
        sleep(Duration::from_millis(100));
    }
    let listed = json(&confab_ok(&db, &["key", "list"]));
    assert!(listed[0]["revoked_at"].is_i64(), "{listed}");

    // The log names the key as the actor of its requests, and never holds
    // its secret, a token or message text.
    sleep(Duration::from_millis(300));
    let mut log = String::new();
    File::open(&log_path)
        .expect("log")
        .read_to_string(&mut log)
        .expect("read log");
    let sends: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("POST") && l.contains("/v1/messages"))
        .collect();
    assert_eq!(sends.len(), 1, "{log}");
    assert!(
        sends[0].contains(&format!("actor={key_id}")) && sends[0].contains(&alice),
        "the send's line names the key and the contact: {}",
        sends[0]
    );
    let closed = log
        .lines()
        .find(|l| l.contains("event stream closed"))
        .unwrap_or_else(|| panic!("no line for the stream's end:\n{log}"));
    assert!(
        closed.contains(&alice)
            && closed.contains("duration_ms=")
            && closed.contains("events=")
            && closed.contains("reason=\"the token was revoked or expired\""),
        "{closed}"
    );
    for needle in [hex, &token[4..], "hello-from-the-backend"] {
        assert!(!log.contains(needle), "{needle:?} is in the log:\n{log}");
    }
}
