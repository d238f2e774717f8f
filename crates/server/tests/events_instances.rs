//! Event streams across processes (docs/api.md "Listen for events"): two `confab serve`
//! processes on one database deliver every event to every stream, whichever
//! process made the change. PostgreSQL wakes the other process with
//! `NOTIFY`; SQLite's other process finds the write by polling.

mod binary;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use binary::{free_port, Server, BIN};
use futures_util::StreamExt;
use serde_json::Value;

/// The shared PostgreSQL server (never stopped by tests).
const PG_ADMIN: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// A database of its own on the shared server, dropped at the end.
struct PgDb {
    name: String,
}

impl PgDb {
    fn create() -> PgDb {
        let name = format!("confab_instances_{}", uuid::Uuid::now_v7().simple());
        let ok = Command::new("psql")
            .args([PG_ADMIN, "-qc", &format!("CREATE DATABASE {name}")])
            .status()
            .expect("psql");
        assert!(ok.success(), "CREATE DATABASE {name}");
        PgDb { name }
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:5432/{}", self.name)
    }
}

impl PgDb {
    fn admin(sql: &str) -> String {
        let out = Command::new("psql")
            .args([PG_ADMIN, "-Atqc", sql])
            .output()
            .expect("psql");
        assert!(out.status.success(), "{sql}: {out:?}");
        String::from_utf8(out.stdout).expect("utf-8")
    }

    /// The backends of this database listening for events.
    fn listeners(&self) -> Vec<String> {
        Self::admin(&format!(
            "SELECT pid FROM pg_stat_activity WHERE datname = '{}' \
             AND application_name = 'confab events' ORDER BY pid",
            self.name
        ))
        .lines()
        .map(str::to_owned)
        .collect()
    }

    /// Kills the listening connections (what a restart or a lost network
    /// does to them).
    fn terminate_listeners(&self) {
        Self::admin(&format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = '{}' AND application_name = 'confab events'",
            self.name
        ));
    }
}

impl Drop for PgDb {
    fn drop(&mut self) {
        let _ = Command::new("psql")
            .args([
                PG_ADMIN,
                "-qc",
                &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
            ])
            .status();
    }
}

fn serve(url: &str, port: u16) -> Server {
    let child = Command::new(BIN)
        .arg("serve")
        .env("DATABASE_URL", url)
        .env("CONFAB_LISTEN", format!("127.0.0.1:{port}"))
        .env("CONFAB_DB_WAIT_SECS", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn serve");
    let server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !binary::accepts(port) {
        assert!(Instant::now() < deadline, "confab serve did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

struct User {
    id: String,
    token: String,
}

fn user(url: &str, name: &str) -> User {
    let contact: Value = serde_json::from_str(&binary::confab_ok(
        url,
        &[
            "contact",
            "create",
            "--username",
            name,
            "--phone-number",
            "+15550100",
        ],
    ))
    .expect("contact json");
    User {
        id: contact["id"].as_str().expect("id").to_owned(),
        token: binary::confab_ok(url, &["token", "issue", "--username", name]),
    }
}

/// Reads `message.created` frames of one stream.
struct Stream {
    body: std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<Vec<u8>>> + Send>>,
    buf: Vec<u8>,
}

impl Stream {
    async fn open(port: u16, token: &str) -> Stream {
        let resp = reqwest::Client::new()
            .get(format!("http://127.0.0.1:{port}/v1/events"))
            .bearer_auth(token)
            .send()
            .await
            .expect("stream");
        assert_eq!(resp.status().as_u16(), 200);
        let mut s = Stream {
            body: Box::pin(resp.bytes_stream().map(|c| c.map(|b| b.to_vec()))),
            buf: Vec::new(),
        };
        let first = s.block(Duration::from_secs(5)).await.expect("opening");
        assert!(first.contains(": connected"), "{first}");
        s
    }

    async fn block(&mut self, within: Duration) -> Option<String> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.buf.drain(..end + 2).collect();
                return Some(String::from_utf8(block).expect("utf-8"));
            }
            match tokio::time::timeout_at(deadline, self.body.next()).await {
                Ok(Some(Ok(bytes))) => self.buf.extend_from_slice(&bytes),
                _ => return None,
            }
        }
    }

    /// The payload of the next `message.created` within `within`.
    async fn message(&mut self, within: Duration) -> Option<Value> {
        let deadline = Instant::now() + within;
        loop {
            let block = self
                .block(deadline.saturating_duration_since(Instant::now()))
                .await?;
            if block.contains("event: message.created\n") {
                let data = block
                    .lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .expect("data");
                let v: Value = serde_json::from_str(data).expect("json");
                return Some(v["payload"].clone());
            }
        }
    }
}

/// A message sent through `port_a` reaches Bob's stream on `port_b` within
/// 1 s, five times over. With `pg`, the listening connections are then
/// killed, and once they are back (reconnected by themselves) messages
/// arrive as fast as before, which only a notification (not the 1 s poll)
/// can do.
async fn reaches_the_other_process(url: &str, pg: Option<&PgDb>) {
    let port_a = free_port();
    let _a = serve(url, port_a);
    let port_b = free_port();
    let _b = serve(url, port_b);
    let alice = user(url, "alice");
    let bob = user(url, "bob");
    let client = reqwest::Client::new();
    let r = client
        .post(format!("http://127.0.0.1:{port_a}/v1/conversations"))
        .bearer_auth(&alice.token)
        .form(&[("contact_id", bob.id.as_str())])
        .send()
        .await
        .expect("create conversation");
    assert_eq!(r.status().as_u16(), 201);
    let c: Value = r.json().await.expect("json");
    let c = c["id"].as_str().expect("id").to_owned();
    let mut stream = Stream::open(port_b, &bob.token).await;
    let send = |i: usize, bound: Duration| {
        let (client, alice, c, port_a) = (&client, &alice, &c, port_a);
        async move {
            let r = client
                .post(format!("http://127.0.0.1:{port_a}/v1/messages"))
                .bearer_auth(&alice.token)
                .form(&[
                    ("conversation_id", c.as_str()),
                    ("message", &format!("hop {i}")),
                ])
                .send()
                .await
                .expect("send");
            assert_eq!(r.status().as_u16(), 201);
            (
                Instant::now(),
                r.json::<Value>().await.expect("json"),
                bound,
            )
        }
    };
    for i in 0..5 {
        let (sent, m, bound) = send(i, Duration::from_secs(1)).await;
        let got = stream
            .message(Duration::from_secs(3))
            .await
            .unwrap_or_else(|| panic!("message {i} never reached the other process"));
        let took = sent.elapsed();
        assert_eq!(got["id"], m["id"]);
        assert!(took < bound, "message {i} took {took:?}");
    }
    let Some(pg) = pg else {
        return;
    };
    let before = pg.listeners();
    assert_eq!(
        before.len(),
        2,
        "one LISTEN connection per server: {before:?}"
    );
    pg.terminate_listeners();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = pg.listeners();
        if now.len() == 2 && now.iter().all(|p| !before.contains(p)) {
            break;
        }
        assert!(Instant::now() < deadline, "LISTEN not back: {now:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for i in 5..10 {
        let (sent, m, bound) = send(i, Duration::from_millis(500)).await;
        let got = stream
            .message(Duration::from_secs(3))
            .await
            .unwrap_or_else(|| panic!("message {i} never reached the other process"));
        let took = sent.elapsed();
        assert_eq!(got["id"], m["id"]);
        assert!(
            took < bound,
            "message {i} took {took:?} after LISTEN reconnected"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_two_servers_one_database() {
    let db = PgDb::create();
    reaches_the_other_process(&db.url(), Some(&db)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_two_servers_one_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("shared.db");
    let url = path.to_str().expect("utf-8 path").to_owned();
    // Migrated once before both start, so that they do not race for it.
    binary::confab_ok(&url, &["migrate"]);
    reaches_the_other_process(&url, None).await;
}

/// SIGTERM ends the open streams (each with a last comment), so that the
/// graceful shutdown finishes at once instead of waiting for its timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_open_streams() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("shutdown.db");
    let url = path.to_str().expect("utf-8 path").to_owned();
    binary::confab_ok(&url, &["migrate"]);
    let port = free_port();
    let mut server = serve(&url, port);
    let alice = user(&url, "alice");
    let mut stream = Stream::open(port, &alice.token).await;
    let pid = server.0.id().to_string();
    let stopped = Instant::now();
    let ok = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(ok.success());
    let last = stream
        .block(Duration::from_secs(5))
        .await
        .expect("a last comment");
    assert!(last.contains("shutting down"), "{last}");
    assert!(
        stream.block(Duration::from_secs(5)).await.is_none(),
        "ended"
    );
    loop {
        if let Some(status) = server.0.try_wait().expect("wait") {
            assert!(status.success(), "exit status {status:?}");
            break;
        }
        assert!(
            stopped.elapsed() < Duration::from_secs(5),
            "confab serve still runs {:?} after SIGTERM with a stream open",
            stopped.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
