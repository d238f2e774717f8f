//! What an operator sees, on the real `confab` binary: one log line per
//! request (text and JSON), the request id honoured or made and echoed,
//! every setting in `--help` with its variable, bad settings named, and a
//! host name in `CONFAB_LISTEN`.

mod binary;

use binary::{confab_ok, free_port, Server, BIN};
use std::fs::File;
use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// `confab serve` on `listen`, its log in `log`, with extra variables.
fn serve(db: &Path, listen: &str, port: u16, log: &Path, env: &[(&str, &str)]) -> Server {
    let mut cmd = Command::new(BIN);
    cmd.arg("serve")
        .env("DATABASE_URL", db)
        .env("CONFAB_LISTEN", listen)
        .env("RUST_LOG", "info")
        .env_remove("CONFAB_LOG_FORMAT")
        .stdout(Stdio::null())
        .stderr(File::create(log).expect("log file"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let server = Server(cmd.spawn().expect("spawn serve"));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !binary::accepts(port) {
        assert!(Instant::now() < deadline, "confab serve did not listen");
        sleep(Duration::from_millis(50));
    }
    server
}

/// One raw request; the status and the response head.
fn send(port: u16, head: &str) -> (u16, String) {
    let (status, head, _) = binary::raw_request(port, head, "");
    (status, head.to_ascii_lowercase())
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
        .map(str::trim)
}

fn read_log(path: &Path) -> String {
    // The line is written as the response leaves; give it a moment.
    sleep(Duration::from_millis(300));
    let mut log = String::new();
    File::open(path)
        .expect("log")
        .read_to_string(&mut log)
        .expect("read log");
    log
}

fn lines_with<'a>(log: &'a str, needle: &str) -> Vec<&'a str> {
    log.lines().filter(|l| l.contains(needle)).collect()
}

#[test]
fn one_text_line_per_request_with_the_request_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("c.db");
    confab_ok(&db, &["migrate"]);
    let log = dir.path().join("confab.log");
    let alice = confab_ok(
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
    let alice_id = serde_json::from_str::<serde_json::Value>(&alice).expect("json")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let token = confab_ok(&db, &["token", "issue", "--username", "alice"]);
    let port = free_port();
    let _server = serve(&db, &format!("127.0.0.1:{port}"), port, &log, &[]);
    let bearer = format!("Authorization: Bearer {token}");
    let unknown = "0190a5e0-0000-7000-8000-000000000000";

    // Sane ids come back as sent, on successes and errors alike.
    let cases = [
        (
            "GET /healthz HTTP/1.1\r\nX-Request-Id: req-ok.1".to_owned(),
            200,
            "req-ok.1",
        ),
        (
            "GET /v1/contacts/me?limit=5 HTTP/1.1\r\nX-Request-Id: req-401".to_owned(),
            401,
            "req-401",
        ),
        (
            format!("GET /v1/messages/{unknown} HTTP/1.1\r\n{bearer}\r\nX-Request-Id: req-404"),
            404,
            "req-404",
        ),
        (
            format!("GET /v1/contacts/me HTTP/1.1\r\n{bearer}\r\nX-Request-Id: req-me"),
            200,
            "req-me",
        ),
    ];
    for (head, status, id) in &cases {
        let (got, response) = send(port, head);
        assert_eq!(got, *status, "{head}");
        assert_eq!(header(&response, "x-request-id"), Some(*id), "{response}");
    }
    // Insane or absent ids are replaced by a new UUIDv7.
    let mut generated = Vec::new();
    for head in [
        "GET /healthz HTTP/1.1\r\nX-Request-Id: has space".to_owned(),
        format!("GET /healthz HTTP/1.1\r\nX-Request-Id: {}", "a".repeat(65)),
        "GET /healthz HTTP/1.1".to_owned(),
    ] {
        let (status, response) = send(port, &head);
        assert_eq!(status, 200);
        let id = header(&response, "x-request-id").expect("an id").to_owned();
        let uuid = uuid::Uuid::parse_str(&id).expect("a UUID");
        assert_eq!(uuid.get_version_num(), 7, "{id}");
        generated.push(id);
    }
    generated.dedup();
    assert_eq!(generated.len(), 3, "{generated:?}");

    let log = read_log(&log);
    for (_, status, id) in &cases {
        let lines = lines_with(&log, &format!("request_id={id} "));
        assert_eq!(lines.len(), 1, "one line for {id}:\n{log}");
        let line = lines[0];
        assert!(line.contains(&format!("status={status} ")), "{line}");
        assert!(line.contains(" INFO "), "4xx and 2xx at INFO: {line}");
        assert!(line.contains("latency_ms="), "{line}");
        assert!(line.contains("method=GET "), "{line}");
    }
    let line = lines_with(&log, "request_id=req-404 ")[0];
    // The route template, not the raw path; the target with values redacted.
    assert!(line.contains("route=/v1/messages/{id} "), "{line}");
    assert!(line.contains(&format!("caller={alice_id}")), "{line}");
    assert!(line.contains("code=not_found"), "{line}");
    let line = lines_with(&log, "request_id=req-401 ")[0];
    assert!(
        line.contains("uri=/v1/contacts/me?limit=[redacted]"),
        "{line}"
    );
    assert!(!line.contains("caller="), "{line}");
    assert!(line.contains("code=unauthorized"), "{line}");
    for id in &generated {
        assert_eq!(lines_with(&log, id).len(), 1, "{id}:\n{log}");
    }
    // Nothing else per request: the serving line and the seven requests.
    let request_lines = lines_with(&log, "request_id=");
    assert_eq!(request_lines.len(), 7, "{log}");
}

#[test]
fn json_lines_and_a_host_name_to_listen_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("c.db");
    let log = dir.path().join("confab.log");
    let port = free_port();
    let _server = serve(
        &db,
        &format!("localhost:{port}"),
        port,
        &log,
        &[("CONFAB_LOG_FORMAT", "json")],
    );
    let (status, _) = send(
        port,
        "GET /nowhere?x=secret HTTP/1.1\r\nX-Request-Id: json-1",
    );
    assert_eq!(status, 404);
    let log = read_log(&log);
    let lines = lines_with(&log, "json-1");
    assert_eq!(lines.len(), 1, "{log}");
    let v: serde_json::Value = serde_json::from_str(lines[0]).expect("a JSON line");
    assert_eq!(v["level"], "INFO");
    assert_eq!(v["request_id"], "json-1");
    assert_eq!(v["method"], "GET");
    assert_eq!(v["route"], "unmatched");
    assert_eq!(v["status"], 404);
    assert_eq!(v["code"], "not_found");
    assert_eq!(v["uri"], "/nowhere?x=[redacted]");
    assert!(v["latency_ms"].is_f64(), "{v}");
    for line in log.lines() {
        serde_json::from_str::<serde_json::Value>(line).expect("every line is JSON");
    }
}

#[test]
fn help_lists_every_variable_with_its_default() {
    for args in [&["--help"][..], &["serve", "--help"][..]] {
        let out = Command::new(BIN)
            .args(args)
            .env("DATABASE_URL", "postgres://user:hunter2@db/confab")
            .output()
            .expect("run");
        assert!(out.status.success());
        let help = String::from_utf8(out.stdout).expect("utf-8");
        for (var, default) in [
            ("DATABASE_URL", Some("confab.db")),
            ("CONFAB_LISTEN", Some("127.0.0.1:8080")),
            ("RUST_LOG", None),
            ("CONFAB_LOG_FORMAT", Some("text")),
            ("CONFAB_RATE_LIMIT_PER_SECOND", Some("100")),
            ("CONFAB_RATE_LIMIT_BURST", Some("200")),
            ("CONFAB_RATE_LIMIT_ANON_PER_SECOND", Some("20")),
            ("CONFAB_RATE_LIMIT_ANON_BURST", Some("40")),
            ("CONFAB_CORS_ORIGINS", None),
        ] {
            assert!(help.contains(&format!("[env: {var}")), "{var}:\n{help}");
            if let Some(d) = default {
                assert!(help.contains(&format!("[default: {d}]")), "{var}:\n{help}");
            }
        }
        assert!(help.contains("default: info for"), "{help}");
        // The current value of a variable (a password) is never shown.
        assert!(!help.contains("hunter2"), "{help}");
    }
}

#[test]
fn a_bad_setting_stops_startup_naming_the_variable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("c.db");
    for (var, value) in [
        ("CONFAB_LISTEN", "localhost"),
        ("CONFAB_LISTEN", "no-such-host.invalid:8080"),
        ("CONFAB_RATE_LIMIT_PER_SECOND", "many"),
        ("CONFAB_RATE_LIMIT_ANON_BURST", "-1"),
        ("CONFAB_CORS_ORIGINS", "app.example"),
        ("RUST_LOG", "a=b=c"),
        ("DATABASE_URL", "mysql://x"),
    ] {
        let out = Command::new(BIN)
            .arg("serve")
            .env("DATABASE_URL", &db)
            .env(var, value)
            .output()
            .expect("run");
        assert!(!out.status.success(), "{var}={value}");
        let stderr = String::from_utf8(out.stderr).expect("utf-8");
        assert!(stderr.contains(var), "{var}={value}: {stderr}");
    }
    let out = Command::new(BIN)
        .arg("serve")
        .env("DATABASE_URL", &db)
        .env("CONFAB_LOG_FORMAT", "xml")
        .output()
        .expect("run");
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).expect("utf-8");
    assert!(
        stderr.contains("xml") && stderr.contains("json"),
        "{stderr}"
    );
}

/// Without `CONFAB_PUBLIC_URL`, the start log says to set it (file links
/// then name this server's own address); with it, nothing is said.
#[test]
fn the_start_log_asks_for_a_public_url_until_one_is_set() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("c.db");
    for (public_url, warned) in [(None, true), (Some("https://chat.example.com"), false)] {
        let log = dir.path().join(format!("confab-{warned}.log"));
        let port = free_port();
        let env: Vec<(&str, &str)> = public_url
            .map(|u| ("CONFAB_PUBLIC_URL", u))
            .into_iter()
            .collect();
        let _server = serve(&db, &format!("127.0.0.1:{port}"), port, &log, &env);
        let log = read_log(&log);
        let lines = lines_with(&log, "CONFAB_PUBLIC_URL is not set");
        assert_eq!(lines.len(), usize::from(warned), "{log}");
        if warned {
            assert!(lines[0].contains(" WARN "), "{}", lines[0]);
            assert!(
                lines[0].contains(&format!("127.0.0.1:{port}")),
                "{}",
                lines[0]
            );
        }
    }
}
