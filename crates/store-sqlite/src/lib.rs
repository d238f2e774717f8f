//! confab's embedded default store: the storage ports of `confab-ports`
//! implemented on a SQLite file through diesel and an r2d2 pool, with its
//! embedded migrations (`migrations/sqlite`).
//!
//! The queries themselves live in `crates/store-sql-shared/` and are compiled
//! into this crate and into `confab-store-postgres` alike, so that both stores
//! behave identically; this crate supplies only what is SQLite's own
//! (`backend.rs`: connection setup, id type, transactions, errors).
//!
//! Depends on the domain and the ports only: never on `confab-service` or
//! `confab-server`, which name this crate only in their startup code.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use diesel::connection::SimpleConnection as _;
use diesel::r2d2::{ConnectionManager, Pool};
use diesel::sqlite::SqliteConnection;
use diesel::Connection as _;
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness as _};

mod backend;
#[path = "../../store-sql-shared/ports.rs"]
mod ports;
#[path = "../../store-sql-shared/queries.rs"]
mod queries;
#[path = "../../store-sql-shared/rows.rs"]
mod rows;
#[path = "../../store-sql-shared/schema.rs"]
mod schema;

const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");

/// Readers run in parallel (WAL); writers take turns (see `write_tx`).
const POOL_SIZE: u32 = 8;
/// How long a request waits for a pooled connection.
const CHECKOUT_TIMEOUT: Duration = Duration::from_secs(5);

/// The SQLite store. Cloning is cheap: clones share one pool.
#[derive(Clone)]
pub struct SqliteStore {
    pool: Pool<ConnectionManager<SqliteConnection>>,
    /// Writers of this process queue here, in order, before `BEGIN
    /// IMMEDIATE`, instead of polling SQLite's lock in its busy handler.
    /// Other processes (the CLI) still meet them at the busy timeout.
    writer: Arc<Mutex<()>>,
    /// SQL statements sent over all pooled connections (see
    /// [`SqliteStore::statements_run`]).
    statements: Arc<AtomicU64>,
}

/// The name the shared code (`crates/store-sql-shared/`) knows this store by.
type SqlStore = SqliteStore;

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("pool", &self.pool.state())
            .finish()
    }
}

impl SqliteStore {
    /// Opens (creating it if missing) the database file at `path`.
    ///
    /// `":memory:"` gives a private in-memory database held by a single
    /// connection (for experiments; every other path is a shared file).
    pub fn open(path: &str) -> anyhow::Result<Self> {
        let in_memory = path == ":memory:";
        if !in_memory {
            // WAL is a property of the file: switch it once, before a pool
            // of connections races to do it.
            let mut conn = SqliteConnection::establish(path)
                .with_context(|| format!("cannot open SQLite database {path}"))?;
            backend::configure(&mut conn).context("cannot configure SQLite")?;
            conn.batch_execute("PRAGMA journal_mode = WAL;")
                .context("cannot switch SQLite to WAL")?;
        }
        let statements = Arc::new(AtomicU64::new(0));
        let builder = Pool::builder()
            .connection_timeout(CHECKOUT_TIMEOUT)
            .test_on_check_out(false)
            .connection_customizer(Box::new(backend::Pragmas(statements.clone())))
            .error_handler(Box::new(backend::LogErrors));
        let builder = if in_memory {
            // One connection that never closes: the database lives in it.
            builder
                .max_size(1)
                .min_idle(Some(1))
                .idle_timeout(None)
                .max_lifetime(None)
        } else {
            builder.max_size(POOL_SIZE).min_idle(Some(1))
        };
        let pool = builder
            .build(ConnectionManager::new(path))
            .with_context(|| format!("cannot open SQLite database {path}"))?;
        Ok(Self {
            pool,
            writer: Arc::new(Mutex::new(())),
            statements,
        })
    }

    /// How many SQL statements this store has sent since it was opened,
    /// connection setup included. Tests use it to show that a page costs a
    /// fixed number of queries however many items it holds.
    pub fn statements_run(&self) -> u64 {
        self.statements.load(Ordering::Relaxed)
    }

    /// Applies the embedded migrations that have not run yet.
    pub fn migrate(&self) -> anyhow::Result<()> {
        let _turn = self.writer_turn();
        let mut conn = self
            .pool
            .get()
            .context("cannot open SQLite database to migrate")?;
        let conn: &mut SqliteConnection = &mut conn;
        let applied = conn
            .run_pending_migrations(MIGRATIONS)
            .map_err(|e| anyhow::anyhow!("migration failed: {e}"))?
            .len();
        if applied > 0 {
            tracing::info!(applied, "applied SQLite migrations");
        }
        Ok(())
    }
}
