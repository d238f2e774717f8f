//! Applying the embedded migrations (`migrations/sqlite`) as the file's
//! one writer, and telling which of them are pending without changing
//! anything.
//!
//! All pending migrations run in one `BEGIN IMMEDIATE` transaction: it
//! takes the file's write lock before reading which migrations ran, so two
//! processes starting at once apply them once, one after the other (the
//! second finds nothing left to do), instead of both reading "pending"
//! and one failing on tables the other made. A file busy with another
//! process's writes is tried again, with a log line, for up to
//! [`MIGRATION_LOCK_WAIT`].

use std::time::{Duration, Instant};

use anyhow::Context as _;
use diesel::sql_types::{BigInt, Text};
use diesel::sqlite::{Sqlite, SqliteConnection};
use diesel::{QueryableByName, RunQueryDsl as _};
use diesel_migrations::MigrationHarness as _;

use super::{SqliteStore, MIGRATIONS};

/// How long [`SqliteStore::migrate`] tries again while another process
/// holds the file's write lock.
pub const MIGRATION_LOCK_WAIT: Duration = Duration::from_secs(30);
/// The pause between two tries (each also waits SQLite's busy timeout).
const RETRY_EVERY: Duration = Duration::from_millis(100);
/// A log line about the wait at most this often.
const WARN_EVERY: Duration = Duration::from_secs(5);

/// Why the migrations' transaction failed.
enum Failed {
    Sql(diesel::result::Error),
    Migration(String),
}

impl From<diesel::result::Error> for Failed {
    fn from(e: diesel::result::Error) -> Self {
        Self::Sql(e)
    }
}

impl Failed {
    /// Another connection holds the write lock (`SQLITE_BUSY`).
    fn is_busy(&self) -> bool {
        match self {
            Self::Sql(diesel::result::Error::DatabaseError(_, info)) => {
                let message = info.message();
                message.contains("database is locked") || message.contains("database is busy")
            }
            Self::Migration(message) => {
                message.contains("database is locked") || message.contains("database is busy")
            }
            Self::Sql(_) => false,
        }
    }
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Sql(e) => write!(f, "{e}"),
            Self::Migration(e) => write!(f, "migration failed: {e}"),
        }
    }
}

impl SqliteStore {
    /// Applies the embedded migrations that have not run yet; returns the
    /// versions applied, oldest first (none when it was up to date). While
    /// another process writes to the file, tries again for up to
    /// [`MIGRATION_LOCK_WAIT`].
    pub fn migrate(&self) -> anyhow::Result<Vec<String>> {
        self.migrate_waiting(MIGRATION_LOCK_WAIT)
    }

    /// [`SqliteStore::migrate`], trying again for up to `wait`.
    pub fn migrate_waiting(&self, wait: Duration) -> anyhow::Result<Vec<String>> {
        let _turn = self.writer_turn();
        let mut conn = self
            .pool
            .get()
            .context("cannot open SQLite database to migrate")?;
        let conn: &mut SqliteConnection = &mut conn;
        let started = Instant::now();
        let mut warn_at = started;
        let mut tries = 0u32;
        let applied = loop {
            tries += 1;
            let run = conn.immediate_transaction(|conn| -> Result<Vec<String>, Failed> {
                let done = conn
                    .run_pending_migrations(MIGRATIONS)
                    .map_err(|e| Failed::Migration(e.to_string()))?;
                Ok(done.iter().map(ToString::to_string).collect())
            });
            let failed = match run {
                Ok(applied) => break applied,
                Err(failed) => failed,
            };
            let waited = started.elapsed();
            if !failed.is_busy() {
                anyhow::bail!("{failed}");
            }
            if waited >= wait {
                anyhow::bail!(
                    "the SQLite database stayed busy (another process was writing to it) \
                     for {} s after {tries} tries: nothing was migrated; stop the process that \
                     writes to it, or try again",
                    wait.as_secs()
                );
            }
            if Instant::now() >= warn_at {
                tracing::warn!(
                    waited_secs = waited.as_secs(),
                    wait_secs = wait.as_secs(),
                    "the SQLite database is busy (another process is writing to it): \
                     trying the migrations again"
                );
                warn_at = Instant::now() + WARN_EVERY;
            }
            std::thread::sleep(RETRY_EVERY);
        };
        if !applied.is_empty() {
            tracing::info!(applied = applied.len(), "applied SQLite migrations");
        }
        // The text of messages that migration `search` could not fold.
        let folded = crate::queries::fold_unfolded(conn).map_err(|e| {
            anyhow::anyhow!(
                "cannot fold messages for search: {}",
                e.into_store::<SqliteStore>()
            )
        })?;
        if folded > 0 {
            tracing::info!(folded, "folded the text of earlier messages for search");
        }
        Ok(applied)
    }

    /// The names of the embedded migrations this database has not run,
    /// oldest first (all of them on an empty file). Reads only: no write
    /// lock, no table made.
    pub fn pending_migrations(&self) -> anyhow::Result<Vec<String>> {
        #[derive(QueryableByName)]
        struct Count {
            #[diesel(sql_type = BigInt)]
            n: i64,
        }
        #[derive(QueryableByName)]
        struct Version {
            #[diesel(sql_type = Text)]
            version: String,
        }
        let mut conn = self.pool.get().context("cannot open SQLite database")?;
        let conn: &mut SqliteConnection = &mut conn;
        let exists = diesel::sql_query(
            "SELECT count(*) AS n FROM sqlite_master \
             WHERE type = 'table' AND name = '__diesel_schema_migrations'",
        )
        .get_result::<Count>(conn)
        .context("cannot read which migrations ran")?
        .n > 0;
        let applied: Vec<String> = if exists {
            diesel::sql_query("SELECT version FROM __diesel_schema_migrations")
                .load::<Version>(conn)
                .context("cannot read which migrations ran")?
                .into_iter()
                .map(|v| v.version)
                .collect()
        } else {
            Vec::new()
        };
        let all = diesel::migration::MigrationSource::<Sqlite>::migrations(&MIGRATIONS)
            .map_err(|e| anyhow::anyhow!("cannot list the embedded migrations: {e}"))?;
        let mut pending: Vec<String> = all
            .iter()
            .filter(|m| !applied.contains(&m.name().version().to_string()))
            .map(|m| m.name().to_string())
            .collect();
        pending.sort();
        Ok(pending)
    }
}
