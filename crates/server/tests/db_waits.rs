//! Bounded waits (docs/api.md "Limits"), on the real binary and a private
//! PostgreSQL: a database that stops answering (SIGSTOP: sockets open, the
//! kernel still acknowledging) fails requests with 503 `unavailable` within
//! 2 s and `/readyz` within 1 s, a write that failed is never committed
//! later, and the server recovers without a restart; `serve` started before
//! its database waits for it.

mod binary;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use binary::postgres::PrivatePg;
use binary::{free_port, Server, BIN};
use serde_json::Value;

/// A request failing on a stalled database answers within this (2 s in the
/// contract, plus slack for a loaded test machine's HTTP round trip).
const REQUEST_BOUND: Duration = Duration::from_millis(2500);
/// `/readyz` answers within this (1 s in the contract, plus slack).
const READYZ_BOUND: Duration = Duration::from_millis(1500);

/// `confab ARGS` on `url`, which must succeed; its stdout, trimmed.
fn cli(url: &str, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .env("DATABASE_URL", url)
        .env("CONFAB_DB_WAIT_SECS", "0")
        .output()
        .expect("run confab");
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

/// The server's pool (`CONFAB_DB_POOL_SIZE`).
const POOL_SIZE: usize = 10;

fn spawn_serve(url: &str, port: u16, wait_secs: &str, log: &Path) -> Server {
    let log = std::fs::File::create(log).expect("log file");
    let child = Command::new(BIN)
        .arg("serve")
        .env("DATABASE_URL", url)
        .env("CONFAB_LISTEN", format!("127.0.0.1:{port}"))
        .env("CONFAB_DB_WAIT_SECS", wait_secs)
        // The stall sends more requests than the pool has connections,
        // whatever the machine's default.
        .env("CONFAB_DB_POOL_SIZE", POOL_SIZE.to_string())
        .env("CONFAB_RATE_LIMIT_PER_SECOND", "0")
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("spawn serve");
    Server(child)
}

struct Client {
    http: reqwest::Client,
    base: String,
    token: String,
}

struct Answer {
    status: u16,
    body: Value,
    took: Duration,
}

impl Client {
    fn new(port: u16, token: &str) -> Client {
        Client {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(20))
                .build()
                .expect("client"),
            base: format!("http://127.0.0.1:{port}"),
            token: token.to_owned(),
        }
    }

    async fn send(&self, method: reqwest::Method, path: &str, form: Option<String>) -> Answer {
        let started = Instant::now();
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(form) = form {
            req = req
                .header("content-type", "application/x-www-form-urlencoded")
                .body(form);
        }
        let resp = req.send().await.expect("an answer");
        let status = resp.status().as_u16();
        let body = resp.json().await.unwrap_or(Value::Null);
        Answer {
            status,
            body,
            took: started.elapsed(),
        }
    }

    async fn get(&self, path: &str) -> Answer {
        self.send(reqwest::Method::GET, path, None).await
    }

    async fn post(&self, path: &str, form: String) -> Answer {
        self.send(reqwest::Method::POST, path, Some(form)).await
    }

    /// Polls `path` until it answers 200, for at most `within`.
    async fn until_ok(&self, path: &str, within: Duration) -> Duration {
        let started = Instant::now();
        loop {
            let ok = match self
                .http
                .get(format!("{}{path}", self.base))
                .bearer_auth(&self.token)
                .timeout(Duration::from_secs(3))
                .send()
                .await
            {
                Ok(resp) => resp.status() == 200,
                Err(_) => false,
            };
            if ok {
                return started.elapsed();
            }
            assert!(
                started.elapsed() < within,
                "{path} did not answer 200 within {within:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn assert_unavailable(what: &str, a: &Answer, bound: Duration) {
    assert_eq!(a.status, 503, "{what}: {}", a.body);
    assert_eq!(a.body["code"], "unavailable", "{what}: {}", a.body);
    assert!(a.took < bound, "{what} took {:?} (bound {bound:?})", a.took);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stalled_database_fails_requests_fast_changes_nothing_and_recovers() {
    let Some(pg) = PrivatePg::started() else {
        return;
    };
    let url = pg.url();
    cli(&url, &["migrate"]);
    cli(
        &url,
        &[
            "contact",
            "create",
            "--username",
            "alice",
            "--phone-number",
            "+15550100",
        ],
    );
    let bob: Value = serde_json::from_str(&cli(
        &url,
        &[
            "contact",
            "create",
            "--username",
            "bob",
            "--phone-number",
            "+15550101",
        ],
    ))
    .expect("contact JSON");
    let token = cli(&url, &["token", "issue", "--username", "alice"]);
    let dir = tempfile::tempdir().expect("temp dir");
    let port = free_port();
    let _server = spawn_serve(&url, port, "0", &dir.path().join("serve.log"));
    let client = Client::new(port, &token);
    client.until_ok("/readyz", Duration::from_secs(30)).await;
    let metrics = client
        .http
        .get(format!("{}/metrics", client.base))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics text");
    assert!(
        metrics.contains(&format!("confab_db_pool_max_connections {POOL_SIZE}\n")),
        "CONFAB_DB_POOL_SIZE sizes the pool: {metrics}"
    );

    let conv = client
        .post(
            "/v1/conversations",
            format!("contact_id={}", bob["id"].as_str().expect("id")),
        )
        .await;
    assert_eq!(conv.status, 201, "{}", conv.body);
    let conv_id = conv.body["id"]
        .as_str()
        .expect("conversation id")
        .to_owned();
    let sent = client
        .post(
            "/v1/messages",
            format!("conversation_id={conv_id}&message=before"),
        )
        .await;
    assert_eq!(sent.status, 201, "{}", sent.body);

    pg.stall();
    // Writers first, so that they hold connections inside their
    // transactions; then more readers than the pool has connections,
    // and the probe: each holds or waits for a connection that will not
    // answer.
    let mut tasks = Vec::new();
    let client = std::sync::Arc::new(client);
    for i in 0..4 {
        let c = client.clone();
        let form = format!("conversation_id={conv_id}&message=during-{i}");
        tasks.push(tokio::spawn(async move {
            (format!("send {i}"), c.post("/v1/messages", form).await)
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    for i in 0..POOL_SIZE + 2 {
        let c = client.clone();
        tasks.push(tokio::spawn(async move {
            (format!("list {i}"), c.get("/v1/conversations").await)
        }));
    }
    let readyz = client.get("/readyz").await;
    assert_unavailable("readyz while stalled", &readyz, READYZ_BOUND);
    let mut worst = Duration::ZERO;
    for task in tasks {
        let (what, answer) = task.await.expect("join");
        worst = worst.max(answer.took);
        assert_unavailable(&what, &answer, REQUEST_BOUND);
    }
    // Now every connection is stuck: a later request and the probe still
    // answer in time (they wait on the pool, not on the database).
    let later = client.get("/v1/conversations").await;
    assert_unavailable("list, pool exhausted", &later, REQUEST_BOUND);
    let readyz = client.get("/readyz").await;
    assert_unavailable("readyz, pool exhausted", &readyz, READYZ_BOUND);
    eprintln!(
        "stalled: worst request {worst:?}, later request {:?}, readyz {:?}",
        later.took, readyz.took
    );

    pg.resume();
    let recovered = client
        .until_ok("/v1/conversations", Duration::from_secs(10))
        .await;
    eprintln!("recovered {recovered:?} after SIGCONT, no restart");
    assert_eq!(client.get("/readyz").await.status, 200);

    // The writes answered 503 were rolled back when their threads went on,
    // not committed behind the client's back. Give them time to finish.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let page = client
        .get(&format!("/v1/messages?conversation_id={conv_id}&limit=100"))
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    let texts: Vec<&str> = page.body["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|m| m["message"].as_str().expect("text"))
        .collect();
    assert_eq!(texts, ["before"], "a write answered 503 was committed");
    let after = client
        .post(
            "/v1/messages",
            format!("conversation_id={conv_id}&message=after"),
        )
        .await;
    assert_eq!(after.status, 201, "{}", after.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_started_before_its_database_waits_for_it() {
    let Some(pg) = PrivatePg::init() else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("serve.log");
    let port = free_port();
    let mut server = spawn_serve(&pg.url(), port, "60", &log);
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        server.0.try_wait().expect("try_wait").is_none(),
        "serve exited instead of waiting: {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let started = Instant::now();
    pg.start();
    let client = Client::new(port, "none");
    client.until_ok("/readyz", Duration::from_secs(20)).await;
    eprintln!("ready {:?} after PostgreSQL started", started.elapsed());
    let log = std::fs::read_to_string(&log).expect("log");
    let tries = log.matches("PostgreSQL cannot be reached").count();
    assert!(tries >= 2, "each failed try is logged: {log}");
    assert!(log.contains("PostgreSQL answers"), "{log}");
}

#[test]
fn without_a_wait_serve_fails_at_once_and_with_one_gives_up_in_time() {
    // Nothing listens on this port.
    let url = format!("postgres://postgres@127.0.0.1:{}/postgres", free_port());
    for (wait, within) in [("0", Duration::from_secs(3)), ("3", Duration::from_secs(6))] {
        let started = Instant::now();
        let out = Command::new(BIN)
            .arg("serve")
            .env("DATABASE_URL", &url)
            .env("CONFAB_LISTEN", format!("127.0.0.1:{}", free_port()))
            .env("CONFAB_DB_WAIT_SECS", wait)
            .output()
            .expect("run confab");
        let took = started.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "wait {wait}: {stderr}");
        assert!(took < within, "wait {wait}: took {took:?}");
        assert!(stderr.contains("DATABASE_URL"), "{stderr}");
        if wait == "3" {
            assert!(took >= Duration::from_secs(2), "gave up early: {took:?}");
            assert!(stderr.contains("CONFAB_DB_WAIT_SECS=3"), "{stderr}");
            assert!(stderr.contains("cannot be reached"), "{stderr}");
        }
    }
}

/// Holds SQLite's write lock on `path` from another process (Python's
/// sqlite3) for `secs`; returns once the lock is held. `None` (after saying
/// why) without python3, unless `CONFAB_REQUIRE_TOOLS=1`.
fn lock_sqlite_elsewhere(path: &Path, secs: f64) -> Option<std::process::Child> {
    use std::io::BufRead as _;
    let script = "import sqlite3, sys, time\n\
                  c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)\n\
                  c.execute('BEGIN EXCLUSIVE')\n\
                  print('locked', flush=True)\n\
                  time.sleep(float(sys.argv[2]))\n\
                  c.execute('ROLLBACK')\n";
    let child = Command::new("python3")
        .args(["-c", script])
        .arg(path)
        .arg(secs.to_string())
        .stdout(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        assert!(
            std::env::var("CONFAB_REQUIRE_TOOLS").as_deref() != Ok("1"),
            "python3 not found: CONFAB_REQUIRE_TOOLS=1 forbids skipping"
        );
        eprintln!("SKIPPED: python3 not found");
        return None;
    };
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read");
    assert_eq!(line.trim(), "locked");
    Some(child)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_locked_by_another_process_fails_writes_fast_changes_nothing_and_recovers() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("confab.db");
    let url = db.display().to_string();
    cli(&url, &["migrate"]);
    let mut ids = Vec::new();
    for (name, phone) in [("alice", "+15550100"), ("bob", "+15550101")] {
        let contact: Value = serde_json::from_str(&cli(
            &url,
            &[
                "contact",
                "create",
                "--username",
                name,
                "--phone-number",
                phone,
            ],
        ))
        .expect("contact JSON");
        ids.push(contact["id"].as_str().expect("id").to_owned());
    }
    let token = cli(&url, &["token", "issue", "--username", "alice"]);
    let port = free_port();
    let log = dir.path().join("serve.log");
    let _server = spawn_serve(&url, port, "0", &log);
    let client = std::sync::Arc::new(Client::new(port, &token));
    client.until_ok("/readyz", Duration::from_secs(30)).await;
    let conv = client
        .post("/v1/conversations", format!("contact_id={}", ids[1]))
        .await;
    assert_eq!(conv.status, 201, "{}", conv.body);
    let conv_id = conv.body["id"]
        .as_str()
        .expect("conversation id")
        .to_owned();

    let Some(mut locker) = lock_sqlite_elsewhere(&db, 4.0) else {
        return;
    };
    // Writers queue behind the one waiting on the lock: all answer in time.
    let mut tasks = Vec::new();
    for i in 0..4 {
        let c = client.clone();
        let form = format!("conversation_id={conv_id}&message=during-{i}");
        tasks.push(tokio::spawn(async move {
            (format!("send {i}"), c.post("/v1/messages", form).await)
        }));
    }
    let readyz = client.get("/readyz").await;
    assert!(readyz.took < READYZ_BOUND, "readyz took {:?}", readyz.took);
    for task in tasks {
        let (what, answer) = task.await.expect("join");
        assert_unavailable(&what, &answer, REQUEST_BOUND);
    }
    assert!(locker.wait().expect("wait").success());

    let after = client
        .post(
            "/v1/messages",
            format!("conversation_id={conv_id}&message=after"),
        )
        .await;
    assert_eq!(
        after.status,
        201,
        "{} after {:?}; the server's log:\n{}",
        after.body,
        after.took,
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let page = client
        .get(&format!("/v1/messages?conversation_id={conv_id}"))
        .await;
    let texts: Vec<&str> = page.body["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|m| m["message"].as_str().expect("text"))
        .collect();
    assert_eq!(texts, ["after"], "a write answered 503 was committed");
}

/// A request's store calls share one budget: two writes that would each
/// wait their own 1.8 s deadline on a locked database give up together
/// within the request's budget, the second at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_s_store_calls_share_one_budget() {
    use confab_server::startup::{open_service, Database};
    use confab_service::ServiceError;

    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("confab.db");
    let url = db.display().to_string();
    cli(&url, &["migrate"]);
    let service = {
        let url = url.clone();
        tokio::task::spawn_blocking(move || {
            open_service(&Database::from_env_value(Some(&url)).expect("url")).expect("open")
        })
        .await
        .expect("join")
    };
    let Some(mut locker) = lock_sqlite_elsewhere(&db, 4.0) else {
        return;
    };
    let budget = Duration::from_millis(1000);
    let started = Instant::now();
    let request = service.within(confab_service::DbBudget::new(budget));
    let (first, second) = {
        let first = request.create_contact("one", "+15550100", None).await;
        let first_took = started.elapsed();
        let second = request.create_contact("two", "+15550101", None).await;
        ((first, first_took), second)
    };
    let took = started.elapsed();
    let (first, first_took) = first;
    assert!(
        matches!(first, Err(ServiceError::Unavailable(_))),
        "{first:?}"
    );
    assert!(
        matches!(second, Err(ServiceError::Unavailable(_))),
        "{second:?}"
    );
    // The first call got the budget, not its own 1.8 s; the second nothing.
    assert!(
        first_took >= budget && first_took < budget + Duration::from_millis(400),
        "first call took {first_took:?}"
    );
    assert!(
        took < budget + Duration::from_millis(400),
        "both took {took:?}"
    );
    assert!(locker.wait().expect("wait").success());
    // Outside a request's budget, the database answers again.
    assert!(service
        .create_contact("three", "+15550102", None)
        .await
        .is_ok());
}
