//! Migrations on both stores: which are pending is read without writing
//! anything; on PostgreSQL the lock is transaction-scoped (never left on a
//! session), waited for at most as long as asked while its holder is
//! named, then refused; on SQLite two processes migrating one new file at
//! once both succeed, and a file busy with another writer is waited for.

use std::time::{Duration, Instant};

use confab_store_postgres::PgStore;
use confab_store_sqlite::SqliteStore;
use confab_tests::db::postgres_admin_url;
use diesel::connection::SimpleConnection as _;
use diesel::prelude::*;
use diesel::sql_types::BigInt;

/// The key `migrate` locks (`confab_store_postgres`'s migrations).
const MIGRATION_LOCK_KEY: i64 = 0x636f_6e66_6162_0001;

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

fn count(conn: &mut PgConnection, sql: &str) -> i64 {
    diesel::sql_query(sql)
        .get_result::<Count>(conn)
        .expect(sql)
        .n
}

/// An empty PostgreSQL database (no template, nothing migrated), dropped
/// with it.
struct EmptyPg {
    admin: String,
    name: String,
    url: String,
}

impl EmptyPg {
    fn new() -> Self {
        let admin = postgres_admin_url();
        let name = format!("confab_test_empty_{}", uuid::Uuid::now_v7().simple());
        PgConnection::establish(&admin)
            .expect("admin connection")
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .expect("create database");
        let (base, query) = admin.split_once('?').unwrap_or((&admin, ""));
        let root = &base[..base.rfind('/').expect("a database in the URL")];
        let url = if query.is_empty() {
            format!("{root}/{name}")
        } else {
            format!("{root}/{name}?{query}")
        };
        Self { admin, name, url }
    }

    fn connect(&self) -> PgConnection {
        PgConnection::establish(&self.url).expect("connect")
    }
}

impl Drop for EmptyPg {
    fn drop(&mut self) {
        if let Ok(mut admin) = PgConnection::establish(&self.admin) {
            let _ = admin.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// Holds the migration lock in a transaction of its own, named `name`,
/// until `hold` has passed, then commits.
fn hold_lock(url: &str, name: &str, hold: Duration) -> std::thread::JoinHandle<()> {
    let url = format!("{url}?application_name={name}");
    let (taken, wait_taken) = std::sync::mpsc::channel();
    let holder = std::thread::spawn(move || {
        let mut conn = PgConnection::establish(&url).expect("holder connects");
        conn.batch_execute(&format!(
            "BEGIN; SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})"
        ))
        .expect("take the lock");
        taken.send(()).expect("say so");
        std::thread::sleep(hold);
        conn.batch_execute("COMMIT").expect("release");
    });
    wait_taken
        .recv_timeout(Duration::from_secs(10))
        .expect("the holder took the lock");
    holder
}

#[test]
fn postgres_pending_migrations_are_read_without_writing() {
    let db = EmptyPg::new();
    let store = PgStore::connect_with(&db.url, 2).expect("connect");
    let all = store.pending_migrations().expect("pending");
    assert!(all.len() >= 20, "{all:?}");
    assert!(all[0].ends_with("_init"), "{all:?}");
    // Nothing made: not even diesel's table of migrations.
    let mut conn = db.connect();
    let tables = "SELECT count(*) AS n FROM pg_tables WHERE schemaname = 'public'";
    assert_eq!(count(&mut conn, tables), 0);
    let applied = store.migrate().expect("migrate");
    assert_eq!(applied.len(), all.len());
    assert!(store.pending_migrations().expect("pending").is_empty());
    conn.batch_execute(
        "DELETE FROM __diesel_schema_migrations \
         WHERE version = (SELECT max(version) FROM __diesel_schema_migrations)",
    )
    .expect("forget the last");
    assert_eq!(
        store.pending_migrations().expect("pending"),
        vec![all.last().expect("one").clone()]
    );
}

/// No session keeps the lock once `migrate` returns, directly or as
/// through a pooler: it was a transaction's.
#[test]
fn postgres_migration_lock_never_outlives_its_transaction() {
    let db = EmptyPg::new();
    let held = format!(
        "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' \
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
         AND classid = {}::oid AND objid = {}::oid AND objsubid = 1",
        (MIGRATION_LOCK_KEY as u64) >> 32,
        (MIGRATION_LOCK_KEY as u64) & 0xffff_ffff
    );
    let mut conn = db.connect();
    let direct = PgStore::connect_with(&db.url, 2).expect("connect");
    assert!(!direct.migrate().expect("migrate").is_empty());
    assert_eq!(count(&mut conn, &held), 0, "a session kept the lock");
    let pooled = PgStore::connect_pooled(&db.url, 2).expect("connect");
    assert!(pooled.migrate().expect("migrate").is_empty());
    assert_eq!(count(&mut conn, &held), 0, "a session kept the lock");
    // And anyone may take it at once.
    assert!(direct
        .migrate_waiting(Duration::from_millis(100))
        .expect("migrate")
        .is_empty());
}

#[test]
fn postgres_migrate_names_the_holder_and_gives_up_when_told() {
    let db = EmptyPg::new();
    let store = PgStore::connect_with(&db.url, 2).expect("connect");
    let holder = hold_lock(&db.url, "lock-holder-test", Duration::from_secs(4));
    let started = Instant::now();
    let refused = store
        .migrate_waiting(Duration::from_secs(2))
        .expect_err("the lock is held");
    let waited = started.elapsed();
    let said = format!("{refused:#}");
    assert!(
        said.contains("lock-holder-test") && said.contains("pid ") && said.contains("within 2 s"),
        "{said}"
    );
    assert!(
        waited >= Duration::from_secs(2) && waited < Duration::from_secs(4),
        "{waited:?}"
    );
    // Nothing migrated meanwhile.
    assert!(store.pending_migrations().expect("pending").len() >= 20);
    holder.join().expect("holder");
}

#[test]
fn postgres_migrate_goes_on_once_the_holder_lets_go() {
    let db = EmptyPg::new();
    let store = PgStore::connect_with(&db.url, 2).expect("connect");
    let holder = hold_lock(&db.url, "brief-holder", Duration::from_millis(1500));
    let applied = store
        .migrate_waiting(Duration::from_secs(20))
        .expect("migrated once the lock was free");
    assert!(applied.len() >= 20);
    holder.join().expect("holder");
}

#[test]
fn sqlite_pending_migrations_are_read_without_writing() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("fresh.db");
    let path = path.to_str().expect("utf-8").to_owned();
    let store = SqliteStore::open(&path).expect("open");
    let all = store.pending_migrations().expect("pending");
    assert!(all.len() >= 20, "{all:?}");
    let mut conn = SqliteConnection::establish(&path).expect("connect");
    let tables = diesel::sql_query("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'")
        .get_result::<Count>(&mut conn)
        .expect("tables")
        .n;
    assert_eq!(tables, 0, "reading what is pending made a table");
    assert_eq!(store.migrate().expect("migrate").len(), all.len());
    assert!(store.pending_migrations().expect("pending").is_empty());
    conn.batch_execute(
        "DELETE FROM __diesel_schema_migrations \
         WHERE version = (SELECT max(version) FROM __diesel_schema_migrations)",
    )
    .expect("forget the last");
    assert_eq!(
        store.pending_migrations().expect("pending"),
        vec![all.last().expect("one").clone()]
    );
}

/// Two stores (as two processes) migrating one new file at the same
/// moment: both succeed, each migration applied once.
#[test]
fn sqlite_two_migrators_at_once_both_succeed() {
    for _ in 0..3 {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("race.db");
        let path = path.to_str().expect("utf-8").to_owned();
        let a = SqliteStore::open(&path).expect("open");
        let b = SqliteStore::open(&path).expect("open");
        let all = a.pending_migrations().expect("pending").len();
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
        let run = |store: SqliteStore| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                store.migrate()
            })
        };
        let (ta, tb) = (run(a), run(b));
        let applied_a = ta.join().expect("a").expect("a migrates");
        let applied_b = tb.join().expect("b").expect("b migrates");
        assert_eq!(applied_a.len() + applied_b.len(), all);
    }
}

/// Another connection holding the file's write lock: `migrate` tries again
/// until it is free, within its bound; past the bound it says so.
#[test]
fn sqlite_migrate_waits_for_a_busy_file() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("busy.db");
    let path = path.to_str().expect("utf-8").to_owned();
    let store = SqliteStore::open(&path).expect("open");
    let hold = |for_how_long: Duration| {
        let path = path.clone();
        let (taken, wait_taken) = std::sync::mpsc::channel();
        let writer = std::thread::spawn(move || {
            let mut conn = SqliteConnection::establish(&path).expect("connect");
            conn.batch_execute("BEGIN IMMEDIATE").expect("write lock");
            taken.send(()).expect("say so");
            std::thread::sleep(for_how_long);
            conn.batch_execute("COMMIT").expect("commit");
        });
        wait_taken
            .recv_timeout(Duration::from_secs(10))
            .expect("the writer took the lock");
        writer
    };
    let writer = hold(Duration::from_secs(6));
    let refused = store
        .migrate_waiting(Duration::from_secs(2))
        .expect_err("the file is busy");
    assert!(format!("{refused:#}").contains("busy"), "{refused:#}");
    writer.join().expect("writer");
    assert!(store.pending_migrations().expect("pending").len() >= 20);
    let writer = hold(Duration::from_secs(3));
    let applied = store
        .migrate_waiting(Duration::from_secs(20))
        .expect("migrated once the file was free");
    assert!(applied.len() >= 20);
    writer.join().expect("writer");
}
