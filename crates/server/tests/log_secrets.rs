//! Secrets never reach the log: the real `confab` binary, its log going to a
//! file, is sent tokens where they do not belong (the query string, a
//! malformed Authorization header, the path) and message text in bodies and
//! query strings; then the log is searched for all of them.

mod binary;

use binary::confab_ok;
use std::fs::File;
use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::thread::sleep;
use std::time::Duration;

/// Sends one raw request; returns the status and the body.
fn send(port: u16, head: &str, body: &str) -> (u16, String) {
    let (status, _, body) = binary::raw_request(port, head, body);
    (status, body)
}

#[test]
fn tokens_and_message_text_stay_out_of_the_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("c.db");
    confab_ok(&db, &["migrate"]);
    let log_path = dir.path().join("confab.log");
    confab_ok(
        &db,
        &[
            "contact",
            "create",
            "--username",
            "alice",
            "--phone-number",
            "+15550100",
        ],
    );
    let bob = confab_ok(
        &db,
        &[
            "contact",
            "create",
            "--username",
            "bob",
            "--phone-number",
            "+15550101",
        ],
    );
    let bob_id = serde_json::from_str::<serde_json::Value>(&bob).expect("json")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let token = confab_ok(&db, &["token", "issue", "--username", "alice"]);
    let secret = token.trim_start_matches("cfb_").to_owned();
    let unknown = format!("cfb_{}", "5ec7e7".repeat(8));

    let port = TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    // The most talkative level: nothing may leak even there.
    let _server = binary::serve_logging(&db, port, "trace", &log_path);

    let bearer = format!("Authorization: Bearer {token}");
    let form = "Content-Type: application/x-www-form-urlencoded";
    let texts = [
        "first-secret-text-in-a-body",
        "second-secret-text-in-a-query",
        "third-secret-text-in-json",
        "fourth-secret-text-sent-for-real",
        "fifth-secret-text-as-a-name",
    ];
    let statuses: Vec<u16> = [
        // A token in the query string, with and without a header.
        send(
            port,
            &format!("GET /v1/messages?access_token={token} HTTP/1.1"),
            "",
        ),
        send(
            port,
            &format!("GET /v1/messages?access_token={token}&limit=5 HTTP/1.1\r\n{bearer}"),
            "",
        ),
        send(port, &format!("GET /v1/messages?{token} HTTP/1.1"), ""),
        // Malformed or unknown Authorization headers.
        send(
            port,
            &format!("GET /v1/contacts/me HTTP/1.1\r\nAuthorization: Token {token}"),
            "",
        ),
        send(
            port,
            &format!("GET /v1/contacts/me HTTP/1.1\r\nAuthorization: Bearer {token} extra"),
            "",
        ),
        send(
            port,
            &format!("GET /v1/contacts/me HTTP/1.1\r\nAuthorization: {token}"),
            "",
        ),
        send(
            port,
            &format!("GET /v1/contacts/me HTTP/1.1\r\nAuthorization: Bearer {unknown}"),
            "",
        ),
        // A token in the path.
        send(port, &format!("GET /v1/{token} HTTP/1.1\r\n{bearer}"), ""),
        // Message text in a body that fails, a query, JSON, and one that works.
        send(
            port,
            &format!("POST /v1/messages HTTP/1.1\r\n{bearer}\r\n{form}"),
            &format!("conversation_id=nope&message={}", texts[0]),
        ),
        send(
            port,
            &format!("GET /v1/messages?message={} HTTP/1.1\r\n{bearer}", texts[1]),
            "",
        ),
        send(
            port,
            &format!("POST /v1/messages HTTP/1.1\r\n{bearer}\r\nContent-Type: application/json"),
            &format!("{{\"message\": \"{}\", \"conversation_id\": 1}}", texts[2]),
        ),
        send(
            port,
            &format!("POST /v1/messages HTTP/1.1\r\n{bearer}\r\n{form}"),
            &format!("{}[=1", texts[4]),
        ),
    ]
    .iter()
    .map(|(status, _)| *status)
    .collect();
    assert_eq!(
        statuses,
        [401, 400, 401, 401, 401, 401, 401, 404, 404, 400, 400, 400]
    );
    let (status, conversation) = send(
        port,
        &format!("POST /v1/conversations HTTP/1.1\r\n{bearer}\r\n{form}"),
        &format!("contact_id={bob_id}"),
    );
    assert_eq!(status, 201, "{conversation}");
    let conversation: serde_json::Value = serde_json::from_str(&conversation).expect("json");
    let (status, body) = send(
        port,
        &format!("POST /v1/messages HTTP/1.1\r\n{bearer}\r\n{form}"),
        &format!(
            "conversation_id={}&message={}",
            conversation["id"].as_str().expect("id"),
            texts[3]
        ),
    );
    assert_eq!(status, 201, "{body}");

    // An event ticket: made, used to open a stream (which is then closed),
    // refused for the list, sent as a token.
    let (status, made) = send(
        port,
        &format!("POST /v1/events/tickets HTTP/1.1\r\n{bearer}"),
        "",
    );
    assert_eq!(status, 201, "{made}");
    let made: serde_json::Value = serde_json::from_str(&made).expect("json");
    let ticket = made["ticket"].as_str().expect("ticket").to_owned();
    {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        write!(
            stream,
            "GET /v1/events?ticket={ticket} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        )
        .expect("write");
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let mut seen = Vec::new();
        let mut buf = [0u8; 1024];
        while !String::from_utf8_lossy(&seen).contains(": connected") {
            let n = stream.read(&mut buf).expect("stream read");
            assert!(
                n > 0,
                "the stream ended: {}",
                String::from_utf8_lossy(&seen)
            );
            seen.extend_from_slice(&buf[..n]);
        }
        assert!(String::from_utf8_lossy(&seen).starts_with("HTTP/1.1 200"));
    }
    let statuses: Vec<u16> = [
        send(
            port,
            &format!("GET /v1/events?ticket={ticket} HTTP/1.1\r\nAccept: application/json"),
            "",
        ),
        send(
            port,
            &format!("GET /v1/contacts/me HTTP/1.1\r\nAuthorization: Bearer {ticket}"),
            "",
        ),
        send(
            port,
            &format!("GET /v1/contacts/me?ticket={ticket} HTTP/1.1"),
            "",
        ),
    ]
    .iter()
    .map(|(status, _)| *status)
    .collect();
    assert_eq!(statuses, [401, 401, 401]);

    // The server writes the request's log line when the response is sent;
    // give the last one a moment to reach the file.
    sleep(Duration::from_millis(300));
    let mut log = String::new();
    File::open(&log_path)
        .expect("log")
        .read_to_string(&mut log)
        .expect("read log");
    assert!(
        log.contains("access_token=[redacted]"),
        "the requests were not logged at all:\n{log}"
    );
    assert!(
        log.contains("ticket=[redacted]"),
        "the ticket's stream was not logged:\n{log}"
    );
    let ticket_secret = ticket.trim_start_matches("cft_").to_owned();
    for needle in [token.as_str(), &secret, &unknown, &ticket, &ticket_secret]
        .into_iter()
        .chain(texts)
    {
        assert!(!log.contains(needle), "{needle:?} is in the log:\n{log}");
    }
}
