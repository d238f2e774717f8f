//! confab's PostgreSQL store: the storage ports of `confab-ports` implemented
//! with diesel over an r2d2 connection pool, with its embedded migrations
//! (`migrations/postgres`).
//!
//! The queries themselves live in `crates/store-sql-shared/` and are compiled
//! into this crate and into `confab-store-sqlite` alike, so that both stores
//! behave identically; this crate supplies only what is PostgreSQL's own
//! (`backend.rs`: connection, id type, row locks, transactions, errors).
//!
//! Depends on the domain and the ports only: never on `confab-service` or
//! `confab-server`, which name this crate only in their startup code.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use diesel::connection::SimpleConnection as _;
use diesel::pg::PgConnection;
use diesel::r2d2::{ConnectionManager, Pool};
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

const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");

/// Serializes `migrate` across processes (e.g. several servers starting at
/// once against one database).
const MIGRATION_LOCK_KEY: i64 = 0x636f_6e66_6162_0001;

/// How long a request waits for a pooled connection. A dead database must
/// fail requests fast (503), not hang them.
const CHECKOUT_TIMEOUT: Duration = Duration::from_secs(2);
/// libpq's own limit on establishing a connection, in seconds.
const CONNECT_TIMEOUT_SECS: u32 = 2;
const POOL_SIZE: u32 = 10;
const MIN_IDLE: u32 = 2;

/// The PostgreSQL store. Cloning is cheap: clones share one pool.
#[derive(Clone)]
pub struct PgStore {
    pool: Pool<ConnectionManager<PgConnection>>,
    /// SQL statements sent over all pooled connections (see
    /// [`PgStore::statements_run`]).
    statements: Arc<AtomicU64>,
}

/// The name the shared code (`crates/store-sql-shared/`) knows this store by.
type SqlStore = PgStore;

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold a password: never print it.
        f.debug_struct("PgStore")
            .field("pool", &self.pool.state())
            .finish()
    }
}

impl PgStore {
    /// Builds the connection pool and checks that the database answers,
    /// failing within a few seconds when it does not.
    ///
    /// Every checkout tests its connection (`SELECT 1`), so connections that
    /// died with a PostgreSQL restart are replaced on the fly: the store
    /// recovers without a process restart.
    pub fn connect(database_url: &str) -> anyhow::Result<Self> {
        let manager = ConnectionManager::<PgConnection>::new(with_connect_timeout(database_url));
        let statements = Arc::new(AtomicU64::new(0));
        let pool = Pool::builder()
            .max_size(POOL_SIZE)
            .min_idle(Some(MIN_IDLE))
            .connection_timeout(CHECKOUT_TIMEOUT)
            .test_on_check_out(true)
            .error_handler(Box::new(backend::LogErrors))
            .connection_customizer(Box::new(backend::CountStatements(statements.clone())))
            .build(manager)
            .context("cannot connect to PostgreSQL")?;
        Ok(Self { pool, statements })
    }

    /// How many SQL statements this store has sent since it was opened,
    /// pool health checks included. Tests use it to show that a page costs
    /// a fixed number of queries however many items it holds.
    pub fn statements_run(&self) -> u64 {
        self.statements.load(Ordering::Relaxed)
    }

    /// Applies the embedded migrations that have not run yet.
    pub fn migrate(&self) -> anyhow::Result<()> {
        let mut conn = self
            .pool
            .get()
            .context("cannot connect to PostgreSQL to migrate")?;
        let conn: &mut PgConnection = &mut conn;
        conn.batch_execute(&format!("SELECT pg_advisory_lock({MIGRATION_LOCK_KEY})"))
            .context("cannot take the migration lock")?;
        let applied = conn
            .run_pending_migrations(MIGRATIONS)
            .map(|done| done.len())
            .map_err(|e| anyhow::anyhow!("migration failed: {e}"));
        let unlocked = conn
            .batch_execute(&format!("SELECT pg_advisory_unlock({MIGRATION_LOCK_KEY})"))
            .context("cannot release the migration lock");
        let applied = applied?;
        unlocked?;
        if applied > 0 {
            tracing::info!(applied, "applied PostgreSQL migrations");
        }
        Ok(())
    }
}

/// Adds libpq's `connect_timeout` unless the URL sets one, so that an
/// unreachable host cannot stall connection attempts.
fn with_connect_timeout(url: &str) -> String {
    if url.contains("connect_timeout") {
        return url.to_owned();
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let sep = if url.contains('?') { '&' } else { '?' };
        format!("{url}{sep}connect_timeout={CONNECT_TIMEOUT_SECS}")
    } else {
        // A `key=value` connection string.
        format!("{url} connect_timeout={CONNECT_TIMEOUT_SECS}")
    }
}

#[cfg(test)]
mod tests {
    use super::with_connect_timeout;

    #[test]
    fn connect_timeout_is_added_once() {
        assert_eq!(
            with_connect_timeout("postgres://u@h/db"),
            "postgres://u@h/db?connect_timeout=2"
        );
        assert_eq!(
            with_connect_timeout("postgres://u@h/db?sslmode=disable"),
            "postgres://u@h/db?sslmode=disable&connect_timeout=2"
        );
        assert_eq!(
            with_connect_timeout("postgres://u@h/db?connect_timeout=9"),
            "postgres://u@h/db?connect_timeout=9"
        );
        assert_eq!(
            with_connect_timeout("host=h dbname=db"),
            "host=h dbname=db connect_timeout=2"
        );
    }
}
