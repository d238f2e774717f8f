//! A fresh, migrated database for each test, on either store.
//!
//! - PostgreSQL: the server at `CONFAB_TEST_DATABASE_URL` (default
//!   `postgres://postgres@127.0.0.1:5432/postgres`, a superuser). A template
//!   database named after a hash of `migrations/postgres` is migrated once
//!   (under an advisory lock, since test binaries and threads race for it);
//!   each test then gets `CREATE DATABASE confab_test_<random> TEMPLATE ...`
//!   (a file copy, about 0.1 s), dropped `WITH (FORCE)` when the [`TestDb`]
//!   is dropped.
//! - SQLite: a file in a temporary directory, migrated, removed with the
//!   [`TestDb`].
//!
//! The constructors are synchronous and quick; they panic when the database
//! cannot be prepared (this is test support). Keep the [`TestDb`] alive for
//! as long as the store or server using its `url` runs.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use confab_server::startup::{Database, DatabaseConfig, Pooler};
use confab_store_postgres::PgStore;
use confab_store_sqlite::SqliteStore;
use diesel::connection::SimpleConnection as _;
use diesel::prelude::*;
use diesel::sql_types::Text;

/// Which store a test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Postgres,
    Sqlite,
}

/// A database made for one test; dropping it removes the database.
#[derive(Debug)]
pub struct TestDb {
    /// What to hand to the store: a `postgres://` URL (give it to
    /// `PgStore::connect` or as `DATABASE_URL`), or for SQLite a plain file
    /// path (`SqliteStore::open`).
    pub url: String,
    backend: Backend,
    cleanup: Cleanup,
}

#[derive(Debug)]
enum Cleanup {
    /// Drop this database, connecting through the admin URL.
    Postgres { admin_url: String, name: String },
    /// Deleted with the directory.
    Sqlite { _dir: tempfile::TempDir },
}

const DEFAULT_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";
/// Serializes the creation of the template database across processes.
const TEMPLATE_LOCK_KEY: i64 = 0x636f_6e66_6162_7470;

impl TestDb {
    /// A fresh database on `backend`.
    pub fn new(backend: Backend) -> Self {
        match backend {
            Backend::Postgres => Self::postgres(),
            Backend::Sqlite => Self::sqlite(),
        }
    }

    /// A fresh, migrated PostgreSQL database.
    pub fn postgres() -> Self {
        let admin_url = postgres_admin_url();
        let template = ensure_template(&admin_url);
        let name = format!("confab_test_{}", uuid::Uuid::now_v7().simple());
        let mut admin = PgConnection::establish(&admin_url)
            .unwrap_or_else(|e| panic!("cannot connect to {admin_url}: {e}"));
        admin
            .batch_execute(&format!("CREATE DATABASE {name} TEMPLATE {template}"))
            .unwrap_or_else(|e| panic!("cannot create test database {name}: {e}"));
        Self {
            url: with_database(&admin_url, &name),
            backend: Backend::Postgres,
            cleanup: Cleanup::Postgres { admin_url, name },
        }
    }

    /// A fresh, migrated SQLite database file in a temporary directory.
    pub fn sqlite() -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("confab.db");
        let url = path_str(&path);
        let store = SqliteStore::open(&url).expect("open SQLite test database");
        store.migrate().expect("migrate SQLite test database");
        drop(store);
        Self {
            url,
            backend: Backend::Sqlite,
            cleanup: Cleanup::Sqlite { _dir: dir },
        }
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The PostgreSQL database's name (`None` for SQLite).
    pub fn postgres_name(&self) -> Option<&str> {
        match &self.cleanup {
            Cleanup::Postgres { name, .. } => Some(name),
            Cleanup::Sqlite { .. } => None,
        }
    }
}

/// How the application reaches the test's database: directly, or, with
/// `CONFAB_TEST_POOLER_URL` set (e.g. `postgres://postgres@127.0.0.1:6432`,
/// a PgBouncer in transaction mode in front of the test server, as
/// `tests/pgbouncer/start.sh` starts it), a PostgreSQL database through
/// that pooler, with the direct URL for LISTEN (docs/api.md "Requests and answers").
pub fn app_database(db: &TestDb) -> DatabaseConfig {
    match (db.backend, std::env::var("CONFAB_TEST_POOLER_URL")) {
        (Backend::Postgres, Ok(pooler)) if !pooler.is_empty() => DatabaseConfig {
            database: Database::Postgres(with_database(
                &pooler,
                db.postgres_name().expect("a PostgreSQL database"),
            )),
            pooler: Pooler::Transaction,
            listen_url: Some(db.url.clone()),
            search_connections: None,
        },
        _ => DatabaseConfig::direct(Database::from_env_value(Some(&db.url)).expect("database url")),
    }
}

/// The PostgreSQL server the tests use, as a superuser connection URL:
/// `CONFAB_TEST_DATABASE_URL`, by default
/// `postgres://postgres@127.0.0.1:5432/postgres`.
pub fn postgres_admin_url() -> String {
    std::env::var("CONFAB_TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_ADMIN_URL.to_owned())
}

/// Behind the test pooler, the database's pool is disabled and its
/// connections closed on PgBouncer's console before the database goes:
/// otherwise a statement the test's server still has in flight (a poll of
/// the event hub) waits in the pooler for a server connection to a
/// database that no longer exists, up to its `query_wait_timeout`, and the
/// test's runtime waits for that statement's thread.
fn close_pooled(name: &str) {
    let Ok(pooler) = std::env::var("CONFAB_TEST_POOLER_URL") else {
        return;
    };
    if pooler.is_empty() {
        return;
    }
    // The console speaks only the simple query protocol, which diesel's
    // connection does not use to set itself up: psql does.
    let closed = std::process::Command::new("psql")
        .arg(with_database(&pooler, "pgbouncer"))
        .args(["-qX", "-v", "ON_ERROR_STOP=1"])
        .args([
            "-c",
            &format!("DISABLE {name}"),
            "-c",
            &format!("KILL {name}"),
        ])
        .output()
        .map_err(|e| e.to_string())
        .and_then(|out| {
            if out.status.success() {
                Ok(())
            } else {
                Err(String::from_utf8_lossy(&out.stderr).into_owned())
            }
        });
    if let Err(e) = closed {
        eprintln!("warning: cannot close the pooler's connections to {name}: {e}");
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Cleanup::Postgres { admin_url, name } = &self.cleanup {
            close_pooled(name);
            let dropped = PgConnection::establish(admin_url)
                .map_err(|e| e.to_string())
                .and_then(|mut admin| {
                    admin
                        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .map_err(|e| e.to_string())
                });
            if let Err(e) = dropped {
                eprintln!("warning: cannot drop test database {name}: {e}");
            }
        }
    }
}

fn path_str(path: &Path) -> String {
    path.to_str()
        .expect("temporary paths are UTF-8 here")
        .to_owned()
}

/// `url` with its database name replaced by `database`.
fn with_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let path_start = base[authority_start..]
        .find('/')
        .map_or(base.len(), |i| authority_start + i);
    let mut out = format!("{}/{}", &base[..path_start], database);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

#[derive(QueryableByName)]
struct Found {
    #[diesel(sql_type = Text)]
    datname: String,
}

/// A test database or template, with its comment (a template's last use).
#[derive(QueryableByName)]
struct Leftover {
    #[diesel(sql_type = Text)]
    datname: String,
    #[diesel(sql_type = diesel::sql_types::Nullable<Text>)]
    note: Option<String>,
}

/// How a template's comment starts; Unix milliseconds follow.
const USED_AT: &str = "confab test template, last used at ";

fn now_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// The migrated template for the current migrations (made if missing, once
/// per process).
fn ensure_template(admin_url: &str) -> String {
    static TEMPLATE: OnceLock<String> = OnceLock::new();
    TEMPLATE.get_or_init(|| prepare_template(admin_url)).clone()
}

fn prepare_template(admin_url: &str) -> String {
    let template = format!("confab_tpl_{:016x}", migrations_hash());
    let mut admin = PgConnection::establish(admin_url).unwrap_or_else(|e| {
        panic!("cannot connect to PostgreSQL at {admin_url} (set CONFAB_TEST_DATABASE_URL): {e}")
    });
    admin
        .batch_execute(&format!("SELECT pg_advisory_lock({TEMPLATE_LOCK_KEY})"))
        .expect("template lock");
    let exists = diesel::sql_query("SELECT datname FROM pg_database WHERE datname = $1")
        .bind::<Text, _>(&template)
        .load::<Found>(&mut admin)
        .expect("look up template")
        .iter()
        .any(|db| db.datname == template);
    if !exists {
        // Built under another name and renamed when complete, so that a run
        // killed half-way never leaves a half-migrated template behind.
        let building = format!("{template}_building");
        // One statement per call: neither may run in a transaction block.
        admin
            .batch_execute(&format!("DROP DATABASE IF EXISTS {building} WITH (FORCE)"))
            .expect("drop a half-built template database");
        admin
            .batch_execute(&format!("CREATE DATABASE {building}"))
            .expect("create template database");
        {
            let store = PgStore::connect(&with_database(admin_url, &building))
                .expect("connect to template database");
            store.migrate().expect("migrate template database");
        }
        admin
            .batch_execute(&format!("ALTER DATABASE {building} RENAME TO {template}"))
            .expect("rename template database");
    }
    // When it was last used: templates of other migrations (other branches
    // checked out beside this one) stay while they are in use.
    admin
        .batch_execute(&format!(
            "COMMENT ON DATABASE {template} IS '{USED_AT}{}'",
            now_ms()
        ))
        .expect("mark the template as used");
    drop_leftovers(&mut admin, &template);
    admin
        .batch_execute(&format!("SELECT pg_advisory_unlock({TEMPLATE_LOCK_KEY})"))
        .expect("template unlock");
    template
}

/// Drops what earlier runs left behind: templates of other migrations not
/// used for two hours, and test databases of runs killed before their
/// cleanup (older than two hours, read from the UUIDv7 timestamp in their
/// names).
fn drop_leftovers(admin: &mut PgConnection, current_template: &str) {
    let found: Vec<Leftover> = diesel::sql_query(
        "SELECT datname, shobj_description(oid, 'pg_database') AS note FROM pg_database \
         WHERE datname LIKE 'confab\\_tpl\\_%' OR datname LIKE 'confab\\_test\\_%'",
    )
    .load::<Leftover>(admin)
    .unwrap_or_default();
    let now_ms = now_ms();
    let old = |made: u128| now_ms.saturating_sub(made) > 2 * 3600 * 1000;
    for Leftover {
        datname: name,
        note,
    } in found
    {
        let stale = if let Some(hex) = name.strip_prefix("confab_test_") {
            // The first 48 bits of a UUIDv7 are its Unix time in milliseconds.
            hex.get(..12)
                .and_then(|ms| u128::from_str_radix(ms, 16).ok())
                .is_some_and(old)
        } else {
            let used_at = note
                .as_deref()
                .and_then(|n| n.strip_prefix(USED_AT))
                .and_then(|ms| ms.parse::<u128>().ok());
            name != current_template && !name.ends_with("_building") && used_at.is_none_or(old)
        };
        if stale {
            if let Err(e) =
                admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            {
                eprintln!("warning: cannot drop leftover database {name}: {e}");
            }
        }
    }
}

/// FNV-1a over the PostgreSQL migrations (paths and contents, in order):
/// stable across runs and toolchains, different after any schema change.
fn migrations_hash() -> u64 {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../migrations/postgres");
    let mut files = Vec::new();
    collect_files(&root, &mut files);
    files.sort();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for file in files {
        let rel = file.strip_prefix(&root).unwrap_or(&file);
        let contents = std::fs::read(&file).expect("read migration");
        for byte in path_str(rel).bytes().chain([0]).chain(contents) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            collect_files(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// Every `table.column` of the database at `url` holding a value whose
/// text contains one of `needles`, with how many rows: a scan of every
/// column of every table (the migrations' own bookkeeping aside). For
/// showing that something is gone from the database, not only from the
/// API.
pub fn mentions(url: &str, backend: Backend, needles: &[&str]) -> Vec<String> {
    #[derive(QueryableByName)]
    struct Column {
        #[diesel(sql_type = Text)]
        table_name: String,
        #[diesel(sql_type = Text)]
        column_name: String,
    }
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut found = Vec::new();
    match backend {
        Backend::Postgres => {
            let mut conn = PgConnection::establish(url).expect("connect");
            let columns: Vec<Column> = diesel::sql_query(
                "SELECT table_name::text AS table_name, column_name::text AS column_name \
                 FROM information_schema.columns \
                 WHERE table_schema = 'public' AND table_name <> '__diesel_schema_migrations' \
                 ORDER BY table_name, ordinal_position",
            )
            .load(&mut conn)
            .expect("columns");
            for c in columns {
                for needle in needles {
                    let n: Count = diesel::sql_query(format!(
                        "SELECT COUNT(*) AS n FROM \"{}\" WHERE \"{}\"::text LIKE $1",
                        c.table_name, c.column_name
                    ))
                    .bind::<Text, _>(format!("%{needle}%"))
                    .get_result(&mut conn)
                    .expect("count");
                    if n.n > 0 {
                        found.push(format!(
                            "{}.{} ({} rows: {needle})",
                            c.table_name, c.column_name, n.n
                        ));
                    }
                }
            }
        }
        Backend::Sqlite => {
            let mut conn = SqliteConnection::establish(url).expect("open");
            #[derive(QueryableByName)]
            struct Table {
                #[diesel(sql_type = Text)]
                name: String,
            }
            let tables: Vec<Table> = diesel::sql_query(
                "SELECT name FROM sqlite_master WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite_%' AND name <> '__diesel_schema_migrations' \
                 ORDER BY name",
            )
            .load(&mut conn)
            .expect("tables");
            for t in tables {
                #[derive(QueryableByName)]
                struct Info {
                    #[diesel(sql_type = Text)]
                    name: String,
                }
                let columns: Vec<Info> =
                    diesel::sql_query(format!("SELECT name FROM pragma_table_info('{}')", t.name))
                        .load(&mut conn)
                        .expect("columns");
                for c in columns {
                    for needle in needles {
                        let n: Count = diesel::sql_query(format!(
                            "SELECT COUNT(*) AS n FROM \"{}\" WHERE CAST(\"{}\" AS TEXT) LIKE ?",
                            t.name, c.name
                        ))
                        .bind::<Text, _>(format!("%{needle}%"))
                        .get_result(&mut conn)
                        .expect("count");
                        if n.n > 0 {
                            found.push(format!("{}.{} ({} rows: {needle})", t.name, c.name, n.n));
                        }
                    }
                }
            }
        }
    }
    found
}

/// The one number `sql` (a query of one row with a BIGINT column `n`)
/// answers on the database at `url`: for a test that counts the rows a
/// request wrote, which the API does not show.
pub fn count(url: &str, backend: Backend, sql: &str) -> i64 {
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let row: Count = match backend {
        Backend::Postgres => diesel::sql_query(sql)
            .get_result(&mut PgConnection::establish(url).expect("connect"))
            .expect("count"),
        Backend::Sqlite => diesel::sql_query(sql)
            .get_result(&mut SqliteConnection::establish(url).expect("open"))
            .expect("count"),
    };
    row.n
}

/// Runs `sql` (statements without results) on the database at `url`: for a
/// test that moves the clock of stored rows (a deadline passed), which the
/// API cannot.
pub fn execute(url: &str, backend: Backend, sql: &str) {
    match backend {
        Backend::Postgres => PgConnection::establish(url)
            .expect("connect")
            .batch_execute(sql)
            .expect("execute"),
        Backend::Sqlite => SqliteConnection::establish(url)
            .expect("open")
            .batch_execute(sql)
            .expect("execute"),
    }
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn replaces_the_database_name() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5432/postgres", "x"),
            "postgres://postgres@127.0.0.1:5432/x"
        );
        assert_eq!(
            with_database("postgres://u:p@h/db?sslmode=disable", "x"),
            "postgres://u:p@h/x?sslmode=disable"
        );
        assert_eq!(with_database("postgres://h", "x"), "postgres://h/x");
    }
}
