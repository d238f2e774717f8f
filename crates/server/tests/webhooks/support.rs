//! What the webhook tests share: a fresh database per store, a receiver
//! (a minimal HTTP/1.1 server on 127.0.0.1) and the calls the tests make.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use super::binary::{free_port, Server, BIN};

// ---------------------------------------------------------------- databases

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Store {
    Sqlite,
    Postgres,
}

/// A fresh database: an SQLite file, or a database on the shared
/// PostgreSQL server (`CONFAB_TEST_DATABASE_URL`), dropped afterwards.
pub(crate) struct Db {
    pub(crate) url: String,
    pub(crate) dir: tempfile::TempDir,
    pub(crate) pg_name: Option<String>,
}

pub(crate) const PG_ADMIN: &str = "postgres://postgres@127.0.0.1:5432/postgres";

pub(crate) fn pg_admin() -> String {
    std::env::var("CONFAB_TEST_DATABASE_URL").unwrap_or_else(|_| PG_ADMIN.to_owned())
}

pub(crate) fn psql(sql: &str) {
    let out = Command::new("psql")
        .arg(pg_admin())
        .args(["-v", "ON_ERROR_STOP=1", "-qtAc", sql])
        .output()
        .expect("run psql");
    assert!(out.status.success(), "psql {sql}: {out:?}");
}

impl Db {
    pub(crate) fn new(store: Store) -> Db {
        let dir = tempfile::tempdir().expect("tempdir");
        match store {
            Store::Sqlite => Db {
                url: dir.path().join("hooks.db").display().to_string(),
                dir,
                pg_name: None,
            },
            Store::Postgres => {
                let name = format!("confab_test_{}", uuid::Uuid::now_v7().simple());
                psql(&format!("CREATE DATABASE {name}"));
                let admin = pg_admin();
                let base = admin.rsplit_once('/').map_or(admin.as_str(), |(b, _)| b);
                Db {
                    url: format!("{base}/{name}"),
                    dir,
                    pg_name: Some(name),
                }
            }
        }
    }

    /// An existing database (a private cluster's), left as it is.
    pub(crate) fn at(url: String) -> Db {
        Db {
            url,
            dir: tempfile::tempdir().expect("tempdir"),
            pg_name: None,
        }
    }

    pub(crate) fn confab(&self, args: &[&str], allow_private: bool) -> Output {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .env("DATABASE_URL", &self.url)
            .env_remove("CONFAB_LISTEN")
            .env_remove("CONFAB_WEBHOOK_ALLOW_PRIVATE");
        if allow_private {
            cmd.env("CONFAB_WEBHOOK_ALLOW_PRIVATE", "true");
        }
        cmd.output().expect("run confab")
    }

    pub(crate) fn confab_ok(&self, args: &[&str]) -> String {
        let out = self.confab(args, true);
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8(out.stdout)
            .expect("utf-8")
            .trim()
            .to_owned()
    }

    pub(crate) fn log_path(&self, name: &str) -> PathBuf {
        self.dir.path().join(format!("{name}.log"))
    }

    /// `confab serve` on a free port, its log in the temp dir.
    pub(crate) fn serve(&self, name: &str, allow_private: bool) -> (Server, u16) {
        let port = free_port();
        let log = std::fs::File::create(self.log_path(name)).expect("log file");
        let mut cmd = Command::new(BIN);
        cmd.arg("serve")
            .env("DATABASE_URL", &self.url)
            .env("CONFAB_LISTEN", format!("127.0.0.1:{port}"))
            .env("RUST_LOG", "info")
            .env_remove("CONFAB_WEBHOOK_ALLOW_PRIVATE")
            .stdout(Stdio::null())
            .stderr(log);
        if allow_private {
            cmd.env("CONFAB_WEBHOOK_ALLOW_PRIVATE", "true");
        }
        let server = Server(cmd.spawn().expect("spawn serve"));
        let deadline = Instant::now() + Duration::from_secs(30);
        while !super::binary::accepts(port) {
            assert!(Instant::now() < deadline, "confab serve did not listen");
            sleep(Duration::from_millis(50));
        }
        (server, port)
    }

    pub(crate) fn logs(&self) -> String {
        let mut all = String::new();
        for entry in std::fs::read_dir(self.dir.path()).expect("dir").flatten() {
            if entry.path().extension().is_some_and(|e| e == "log") {
                all.push_str(&std::fs::read_to_string(entry.path()).unwrap_or_default());
            }
        }
        all
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        if let Some(name) = &self.pg_name {
            psql(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
        }
    }
}

// ------------------------------------------------------------ the receiver

/// One request the receiver got.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    pub(crate) event_id: String,
    pub(crate) attempt: u32,
    pub(crate) signature: String,
    pub(crate) content_type: String,
    pub(crate) body: String,
    /// What it answered (0: held the response open, then dropped it).
    pub(crate) answered: u16,
}

pub(crate) enum Reply {
    Status(u16),
    /// Keep the response open this long, then close without answering.
    Hold(Duration),
}

pub(crate) type Policy = dyn Fn(&Delivery, usize) -> Reply + Send + Sync;

/// A webhook receiver on 127.0.0.1: `policy` decides each answer, given
/// the request and how many requests came before it.
pub(crate) struct Receiver {
    pub(crate) port: u16,
    pub(crate) got: Arc<Mutex<Vec<Delivery>>>,
}

impl Receiver {
    pub(crate) fn start(
        policy: impl Fn(&Delivery, usize) -> Reply + Send + Sync + 'static,
    ) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind receiver");
        let port = listener.local_addr().expect("addr").port();
        let got: Arc<Mutex<Vec<Delivery>>> = Arc::default();
        let policy: Arc<Policy> = Arc::new(policy);
        let log = got.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let log = log.clone();
                let policy = policy.clone();
                std::thread::spawn(move || serve_one(stream, &log, &*policy));
            }
        });
        Receiver { port, got }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hook", self.port)
    }

    pub(crate) fn got(&self) -> Vec<Delivery> {
        self.got.lock().expect("lock").clone()
    }

    /// Waits until `done` holds for what was received.
    pub(crate) fn wait(
        &self,
        what: &str,
        timeout: Duration,
        db: &Db,
        done: impl Fn(&[Delivery]) -> bool,
    ) {
        let deadline = Instant::now() + timeout;
        loop {
            if done(&self.got()) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not within {timeout:?}; received {:#?}\nlogs:\n{}",
                self.got(),
                db.logs()
            );
            sleep(Duration::from_millis(50));
        }
    }
}

pub(crate) fn serve_one(stream: TcpStream, log: &Mutex<Vec<Delivery>>, policy: &Policy) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut headers = HashMap::new();
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    let len: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let header = |name: &str| headers.get(name).cloned().unwrap_or_default();
    let mut delivery = Delivery {
        event_id: header("confab-event-id"),
        attempt: header("confab-delivery-attempt").parse().unwrap_or(0),
        signature: header("confab-signature"),
        content_type: header("content-type"),
        body: String::from_utf8(body).expect("utf-8 body"),
        answered: 0,
    };
    let reply = {
        let mut got = log.lock().expect("lock");
        let reply = policy(&delivery, got.len());
        if let Reply::Status(code) = reply {
            delivery.answered = code;
        }
        got.push(delivery);
        reply
    };
    let mut stream = stream;
    match reply {
        Reply::Status(code) => {
            let _ = write!(
                stream,
                "HTTP/1.1 {code} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
        Reply::Hold(d) => sleep(d),
    }
}

// ------------------------------------------------------------------ helpers

/// A request over a plain socket; the status and the JSON body.
pub(crate) fn call(port: u16, method: &str, path: &str, token: &str, body: &Value) -> (u16, Value) {
    let head = format!(
        "{method} {path} HTTP/1.1\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json"
    );
    let (status, _, body) = super::binary::raw_request(port, &head, &body.to_string());
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// Two contacts, a token for the first, a conversation between them.
pub(crate) struct Chat {
    pub(crate) token: String,
    pub(crate) conversation: String,
}

impl Chat {
    pub(crate) fn new(db: &Db, port: u16) -> Chat {
        db.confab_ok(&[
            "contact",
            "create",
            "--username",
            "alice",
            "--phone-number",
            "+15550100",
        ]);
        let bob: Value = serde_json::from_str(&db.confab_ok(&[
            "contact",
            "create",
            "--username",
            "bob",
            "--phone-number",
            "+15550101",
        ]))
        .expect("contact JSON");
        let token = db.confab_ok(&["token", "issue", "--username", "alice"]);
        let (status, conv) = call(
            port,
            "POST",
            "/v1/conversations",
            &token,
            &serde_json::json!({"contact_id": bob["id"]}),
        );
        assert_eq!(status, 201, "{conv}");
        Chat {
            token,
            conversation: conv["id"].as_str().expect("id").to_owned(),
        }
    }

    pub(crate) fn send(&self, port: u16, text: &str) -> String {
        let (status, message) = call(
            port,
            "POST",
            "/v1/messages",
            &self.token,
            &serde_json::json!({"conversation_id": self.conversation, "message": text}),
        );
        assert_eq!(status, 201, "{message}");
        message["id"].as_str().expect("id").to_owned()
    }
}

/// `webhook create` with the variable set; the printed object.
pub(crate) fn create_webhook(db: &Db, url: &str, events: Option<&str>) -> Value {
    let mut args = vec!["webhook", "create", "--url", url];
    if let Some(events) = events {
        args.extend(["--events", events]);
    }
    let printed: Value = serde_json::from_str(&db.confab_ok(&args)).expect("webhook JSON");
    let secret = printed["secret"].as_str().expect("secret");
    assert_eq!(secret.len(), 64, "32 random bytes in hex");
    assert!(secret.bytes().all(|b| b.is_ascii_hexdigit()));
    printed
}

/// Checks the signature, headers and body shape of a delivery; returns the
/// body.
pub(crate) fn verified(d: &Delivery, secret: &str) -> Value {
    assert_eq!(d.content_type, "application/json");
    let (t, v1) = d
        .signature
        .strip_prefix("t=")
        .and_then(|rest| rest.split_once(",v1="))
        .unwrap_or_else(|| panic!("Confab-Signature {:?}", d.signature));
    let t: i64 = t.parse().expect("t is Unix seconds");
    let now = i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock")
            .as_secs(),
    )
    .expect("secs");
    assert!((now - 120..=now + 5).contains(&t), "t={t} now={now}");
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("key");
    mac.update(format!("{t}.{}", d.body).as_bytes());
    let expected: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(v1, expected, "signature of {}", d.body);
    let body: Value = serde_json::from_str(&d.body).expect("JSON body");
    let keys: Vec<&str> = body
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    // A `message.created` also names whom to notify (docs/api.md "Server API: from an app's backend").
    if body["type"] == "message.created" {
        assert_eq!(keys, ["id", "type", "created_at", "payload", "recipients"]);
    } else {
        assert_eq!(keys, ["id", "type", "created_at", "payload"]);
    }
    assert_eq!(
        body["id"],
        d.event_id.as_str(),
        "Confab-Event-Id is the event id"
    );
    assert!(body["created_at"].is_i64());
    assert!(body["payload"].is_object());
    body
}
