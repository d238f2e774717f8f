//! No orphans and no losses across crashes (docs/api.md "Files and attachments"): the real
//! binary, uploading, attaching and deleting files from several clients,
//! is killed with SIGKILL at random moments, round after round. After each
//! restart:
//! - every upload the server acknowledged (201) and nobody deleted is still
//!   there, whole (same bytes);
//! - every stored attachment row has its file, of its size (no dangling
//!   reference);
//! - every file in the storage folder (also one a killed writer left half
//!   written) has its attachment's row or a scheduled deletion, so nothing
//!   lives forever.
//!
//! Last, every scheduled deletion is made due (as 24 h later) and the
//! server restarted: its sweeper leaves exactly the files of attached
//! uploads.

mod binary;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use binary::{accepts, confab_ok, free_port, Server, BIN};
use diesel::connection::SimpleConnection as _;
use diesel::prelude::*;
use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};

const ROUNDS: usize = 6;
const CLIENTS: usize = 6;

fn serve(db: &Path, files: &Path, port: u16, log: &Path) -> Server {
    let server = Server(
        Command::new(BIN)
            .arg("serve")
            .env("DATABASE_URL", db)
            .env("CONFAB_LISTEN", format!("127.0.0.1:{port}"))
            .env("CONFAB_STORAGE_URL", files)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(log)
                    .expect("log"),
            )
            .spawn()
            .expect("spawn serve"),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while !accepts(port) {
        assert!(Instant::now() < deadline, "confab serve did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// What the clients were told.
#[derive(Default)]
struct Ledger {
    /// Acknowledged uploads: id -> SHA-256 of the bytes sent.
    acknowledged: HashMap<String, [u8; 32]>,
    /// Uploads whose deletion (of themselves or of their message) was
    /// asked, acknowledged or not: their fate is either.
    maybe_gone: BTreeSet<String>,
}

/// A small deterministic generator (no dependency for randomness).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn multipart(name: &str, bytes: &[u8]) -> (String, Vec<u8>) {
    let boundary = "crash-test-boundary";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// One client: uploads, attaches, deletes, until the server dies.
async fn client(
    base: String,
    token: String,
    conversation: String,
    seed: u64,
    ledger: Arc<Mutex<Ledger>>,
) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client");
    let mut rng = Rng(seed | 1);
    loop {
        // Mostly small files; now and then one over a part (5 MiB).
        let size = if rng.below(8) == 0 {
            5 * 1024 * 1024 + rng.below(1024 * 1024) as usize
        } else {
            1 + rng.below(300 * 1024) as usize
        };
        let fill = rng.next() as u8;
        let bytes: Vec<u8> = (0..size).map(|i| fill.wrapping_add(i as u8)).collect();
        let (ct, body) = multipart("f.bin", &bytes);
        let Ok(r) = http
            .post(format!("{base}/v1/attachments"))
            .bearer_auth(&token)
            .header("content-type", ct)
            .body(body)
            .send()
            .await
        else {
            return;
        };
        if r.status() != 201 {
            return;
        }
        let Ok(made) = r.json::<Value>().await else {
            return;
        };
        let id = made["id"].as_str().expect("id").to_owned();
        ledger
            .lock()
            .expect("ledger")
            .acknowledged
            .insert(id.clone(), Sha256::digest(&bytes).into());
        match rng.below(4) {
            // Attach it, and sometimes delete the message again.
            0 | 1 => {
                let Ok(r) = http
                    .post(format!("{base}/v1/messages"))
                    .bearer_auth(&token)
                    .json(&json!({"conversation_id": conversation, "attachments": [{"id": id}]}))
                    .send()
                    .await
                else {
                    return;
                };
                let Ok(m) = r.json::<Value>().await else {
                    return;
                };
                if rng.below(2) == 0 {
                    if let Some(m) = m["id"].as_str() {
                        ledger.lock().expect("ledger").maybe_gone.insert(id.clone());
                        if http
                            .delete(format!("{base}/v1/messages/{m}"))
                            .bearer_auth(&token)
                            .send()
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                }
            }
            // Delete it.
            2 => {
                ledger.lock().expect("ledger").maybe_gone.insert(id.clone());
                if http
                    .delete(format!("{base}/v1/attachments/{id}"))
                    .bearer_auth(&token)
                    .send()
                    .await
                    .is_err()
                {
                    return;
                }
            }
            // Leave it unattached.
            _ => {}
        }
    }
}

#[derive(QueryableByName)]
struct StoredRow {
    #[diesel(sql_type = diesel::sql_types::Text)]
    id: String,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    file_size: i64,
}

#[derive(QueryableByName)]
struct Id {
    #[diesel(sql_type = diesel::sql_types::Text)]
    id: String,
}

/// The stored attachments (id, size) and the scheduled deletions.
fn rows(db: &Path) -> (HashMap<String, i64>, BTreeSet<String>) {
    let mut conn = SqliteConnection::establish(db.to_str().expect("path")).expect("open db");
    let stored: Vec<StoredRow> =
        diesel::sql_query("SELECT id, file_size FROM attachments WHERE content_sha256 IS NOT NULL")
            .load(&mut conn)
            .expect("attachments");
    let due: Vec<Id> = diesel::sql_query("SELECT attachment_id AS id FROM file_deletions")
        .load(&mut conn)
        .expect("file_deletions");
    (
        stored.into_iter().map(|r| (r.id, r.file_size)).collect(),
        due.into_iter().map(|r| r.id).collect(),
    )
}

/// The folder's files: (attachment id it belongs to, name, size).
fn folder(files: &Path) -> Vec<(String, String, u64)> {
    std::fs::read_dir(files)
        .expect("files folder")
        .map(|e| {
            let e = e.expect("entry");
            let name = e.file_name().to_string_lossy().into_owned();
            let id = name.split('#').next().unwrap_or_default().to_owned();
            (id, name, e.metadata().expect("metadata").len())
        })
        .collect()
}

/// The invariants after a restart (see the module's docs).
async fn check(db: &Path, files: &Path, base: &str, token: &str, ledger: &Ledger, round: usize) {
    let (stored, due) = rows(db);
    let on_disk = folder(files);
    for (id, size) in &stored {
        let file = on_disk.iter().find(|(_, name, _)| name == id);
        assert_eq!(
            file.map(|f| f.2),
            Some(u64::try_from(*size).expect("size")),
            "round {round}: attachment {id} has no file of its size"
        );
    }
    for (id, name, _) in &on_disk {
        assert!(
            stored.contains_key(id) || due.contains(id),
            "round {round}: {name} in the folder has neither a row nor a scheduled deletion"
        );
    }
    let http = reqwest::Client::new();
    for (id, digest) in &ledger.acknowledged {
        if ledger.maybe_gone.contains(id) {
            continue;
        }
        let r = http
            .get(format!("{base}/v1/attachments/{id}/content"))
            .bearer_auth(token)
            .send()
            .await
            .expect("get");
        assert_eq!(
            r.status(),
            200,
            "round {round}: acknowledged upload {id} lost"
        );
        let bytes = r.bytes().await.expect("body");
        let got: [u8; 32] = Sha256::digest(&bytes).into();
        assert_eq!(&got, digest, "round {round}: upload {id} changed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_loses_no_upload_and_leaves_no_orphan() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("c.db");
    confab_ok(&db, &["migrate"]);
    let files = dir.path().join("files");
    let log = dir.path().join("confab.log");
    let create = |name: &str, phone: &str| {
        confab_ok(
            &db,
            &[
                "contact",
                "create",
                "--username",
                name,
                "--phone-number",
                phone,
            ],
        )
    };
    create("alice", "+15550100");
    let bob: Value = serde_json::from_str(&create("bob", "+15550101")).expect("json");
    let token = confab_ok(&db, &["token", "issue", "--username", "alice"]);
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut server = serve(&db, &files, port, &log);
    let conversation = reqwest::Client::new()
        .post(format!("{base}/v1/conversations"))
        .bearer_auth(&token)
        .form(&[("contact_id", bob["id"].as_str().expect("id"))])
        .send()
        .await
        .expect("conversation")
        .json::<Value>()
        .await
        .expect("json")["id"]
        .as_str()
        .expect("id")
        .to_owned();

    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let mut rng = Rng(0x5eed_cafe);
    for round in 0..ROUNDS {
        let clients: Vec<_> = (0..CLIENTS)
            .map(|n| {
                tokio::spawn(client(
                    base.clone(),
                    token.clone(),
                    conversation.clone(),
                    rng.next() ^ n as u64,
                    ledger.clone(),
                ))
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(300 + rng.below(900))).await;
        // SIGKILL: no shutdown, no cleanup.
        server.0.kill().expect("kill -9");
        server.0.wait().expect("reaped");
        for c in clients {
            c.await.expect("client");
        }
        server = serve(&db, &files, port, &log);
        let snapshot = std::mem::take(&mut *ledger.lock().expect("ledger"));
        check(&db, &files, &base, &token, &snapshot, round).await;
        *ledger.lock().expect("ledger") = snapshot;
    }
    let acknowledged = ledger.lock().expect("ledger").acknowledged.len();
    assert!(
        acknowledged >= ROUNDS * 2,
        "the rounds uploaded too little to show anything ({acknowledged})"
    );

    // A day later: every scheduled deletion due; the sweeper runs as the
    // server starts.
    drop(server);
    SqliteConnection::establish(db.to_str().expect("path"))
        .expect("open db")
        .batch_execute("UPDATE file_deletions SET due_at = 0")
        .expect("make due");
    let _server = serve(&db, &files, port, &log);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (stored, due) = rows(&db);
        let on_disk: BTreeSet<String> = folder(&files).into_iter().map(|f| f.1).collect();
        let expected: BTreeSet<String> = stored.keys().cloned().collect();
        if due.is_empty() && on_disk == expected {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "after the sweep the folder still holds {:?} beside the stored {:?} ({} deletions due)",
            on_disk.difference(&expected).collect::<Vec<_>>(),
            expected.len(),
            due.len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
