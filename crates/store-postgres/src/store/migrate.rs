//! Applying the embedded migrations (`migrations/postgres`) under a lock
//! that several servers starting at once against one database share, and
//! telling which of them are pending without changing anything.
//!
//! The lock is transaction-scoped (`pg_advisory_xact_lock`), taken in the
//! transaction the migrations run in, pooler or not: it ends with that
//! transaction whatever happens to the session. A session-level lock taken
//! through a pooler in transaction mode stays on the server connection the
//! pooler lent for that statement, and the unlock may reach another: every
//! later migrator then waits for a lock no client holds.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use diesel::connection::SimpleConnection as _;
use diesel::pg::{Pg, PgConnection};
use diesel::sql_types::{Bool, Integer, Text};
use diesel::{Connection as _, QueryableByName, RunQueryDsl as _};
use diesel_migrations::MigrationHarness as _;

use super::{PgStore, MIGRATIONS, MIGRATION_LOCK_KEY};

/// How long [`PgStore::migrate`] waits for another session's migration
/// lock before it gives up.
pub const MIGRATION_LOCK_WAIT: Duration = Duration::from_secs(30);
/// The pause between two tries of the lock.
const POLL_EVERY: Duration = Duration::from_millis(200);
/// A wait shorter than this is another server migrating at the same
/// moment: not worth a warning.
const FIRST_WARNING_AFTER: Duration = Duration::from_secs(1);
/// Then a warning naming the holder this often.
const WARN_EVERY: Duration = Duration::from_secs(5);

impl PgStore {
    /// Applies the embedded migrations that have not run yet; returns the
    /// versions applied, oldest first (none when it was up to date). Waits
    /// at most [`MIGRATION_LOCK_WAIT`] for another migrator's lock.
    pub fn migrate(&self) -> anyhow::Result<Vec<String>> {
        self.migrate_waiting(MIGRATION_LOCK_WAIT)
    }

    /// [`PgStore::migrate`], waiting at most `wait` for the lock.
    ///
    /// Every migration runs in one transaction, under the lock, so that
    /// it holds behind a pooler in transaction mode as well as directly.
    /// While the lock is held elsewhere, logs (WARN) who holds it every
    /// few seconds; past `wait`, fails naming the holder, having changed
    /// nothing.
    pub fn migrate_waiting(&self, wait: Duration) -> anyhow::Result<Vec<String>> {
        let mut conn = self
            .pool
            .get()
            .context("cannot connect to PostgreSQL to migrate")?;
        let conn: &mut PgConnection = &mut conn;
        let applied = conn.transaction(|conn| -> anyhow::Result<Vec<String>> {
            // Migrations may take longer than a request's statement: no
            // server-side limits in this transaction (the session's own
            // settings come back at its end).
            conn.batch_execute(
                "SET LOCAL statement_timeout = 0; \
                 SET LOCAL idle_in_transaction_session_timeout = 0",
            )
            .context("cannot lift the statement timeout to migrate")?;
            take_lock(conn, wait)?;
            conn.run_pending_migrations(MIGRATIONS)
                .map(|done| done.iter().map(ToString::to_string).collect())
                .map_err(|e| anyhow::anyhow!("migration failed: {e}"))
        })?;
        if !applied.is_empty() {
            tracing::info!(applied = applied.len(), "applied PostgreSQL migrations");
        }
        fold_unfolded(conn)?;
        Ok(applied)
    }

    /// The names of the embedded migrations this database has not run,
    /// oldest first (all of them on an empty database). Reads only: no
    /// lock, no table made.
    pub fn pending_migrations(&self) -> anyhow::Result<Vec<String>> {
        let mut conn = self.pool.get().context("cannot connect to PostgreSQL")?;
        let conn: &mut PgConnection = &mut conn;
        #[derive(QueryableByName)]
        struct Exists {
            #[diesel(sql_type = Bool)]
            exists: bool,
        }
        let exists = diesel::sql_query(
            "SELECT to_regclass('__diesel_schema_migrations') IS NOT NULL AS exists",
        )
        .get_result::<Exists>(conn)
        .context("cannot read which migrations ran")?
        .exists;
        let applied = if exists {
            diesel::sql_query("SELECT version FROM __diesel_schema_migrations")
                .load::<Version>(conn)
                .context("cannot read which migrations ran")?
        } else {
            Vec::new()
        };
        pending(&applied)
    }
}

/// A row of diesel's table of the migrations run.
#[derive(QueryableByName)]
struct Version {
    #[diesel(sql_type = Text)]
    version: String,
}

/// The embedded migrations whose version is not among `applied`, by name,
/// oldest first.
fn pending(applied: &[Version]) -> anyhow::Result<Vec<String>> {
    let all = diesel::migration::MigrationSource::<Pg>::migrations(&MIGRATIONS)
        .map_err(|e| anyhow::anyhow!("cannot list the embedded migrations: {e}"))?;
    let mut pending: Vec<String> = all
        .iter()
        .filter(|m| {
            let version = m.name().version().to_string();
            !applied.iter().any(|a| a.version == version)
        })
        .map(|m| m.name().to_string())
        .collect();
    pending.sort();
    Ok(pending)
}

/// Takes the transaction-scoped migration lock, trying every
/// [`POLL_EVERY`] for up to `wait` and saying meanwhile who holds it.
fn take_lock(conn: &mut PgConnection, wait: Duration) -> anyhow::Result<()> {
    #[derive(QueryableByName)]
    struct Taken {
        #[diesel(sql_type = Bool)]
        taken: bool,
    }
    let started = Instant::now();
    let mut warn_at = started + FIRST_WARNING_AFTER;
    loop {
        let taken = diesel::sql_query(format!(
            "SELECT pg_try_advisory_xact_lock({MIGRATION_LOCK_KEY}) AS taken"
        ))
        .get_result::<Taken>(conn)
        .context("cannot take the migration lock")?
        .taken;
        let waited = started.elapsed();
        if taken {
            if waited >= FIRST_WARNING_AFTER {
                tracing::info!(waited_secs = waited.as_secs(), "took the migration lock");
            }
            return Ok(());
        }
        if waited >= wait {
            let held_by = match lock_holder(conn)? {
                Some(h) => format!(
                    "{h} and was not released within {} s: nothing was migrated. If that \
                     session is stuck, end it (SELECT pg_terminate_backend({})) and run \
                     `confab migrate` again",
                    wait.as_secs(),
                    h.pid
                ),
                None => format!(
                    "another session (gone by now) and was not released within {} s: \
                     nothing was migrated; run `confab migrate` again",
                    wait.as_secs()
                ),
            };
            anyhow::bail!("the migration lock is held by {held_by}");
        }
        if Instant::now() >= warn_at {
            match lock_holder(conn)? {
                Some(h) => tracing::warn!(
                    holder_pid = h.pid,
                    holder_application_name = %h.application_name,
                    holder_client_addr = %h.client_addr,
                    holder_state = %h.state,
                    holder_query_start = %h.query_start,
                    waited_secs = waited.as_secs(),
                    wait_secs = wait.as_secs(),
                    "waiting for the migration lock, held by {h}"
                ),
                None => tracing::warn!(
                    waited_secs = waited.as_secs(),
                    wait_secs = wait.as_secs(),
                    "waiting for the migration lock"
                ),
            }
            warn_at = Instant::now() + WARN_EVERY;
        }
        std::thread::sleep(
            POLL_EVERY
                .min(wait.saturating_sub(waited))
                .max(Duration::from_millis(10)),
        );
    }
}

/// The session holding the migration lock, as `pg_stat_activity` shows it.
#[derive(Debug, QueryableByName)]
struct Holder {
    #[diesel(sql_type = Integer)]
    pid: i32,
    #[diesel(sql_type = Text)]
    application_name: String,
    #[diesel(sql_type = Text)]
    client_addr: String,
    #[diesel(sql_type = Text)]
    state: String,
    #[diesel(sql_type = Text)]
    query_start: String,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "pid {} (application_name {:?}, client_addr {}, state {:?}, query started {})",
            self.pid, self.application_name, self.client_addr, self.state, self.query_start
        )
    }
}

/// Who holds the migration lock in this database, if anyone still does.
/// A 64-bit advisory key shows in `pg_locks` as its high half (`classid`)
/// and low half (`objid`), with `objsubid` 1.
fn lock_holder(conn: &mut PgConnection) -> anyhow::Result<Option<Holder>> {
    let key = MIGRATION_LOCK_KEY as u64;
    let (high, low) = (key >> 32, key & 0xffff_ffff);
    let mut holders = diesel::sql_query(format!(
        "SELECT a.pid, \
                COALESCE(NULLIF(a.application_name, ''), '(none)') AS application_name, \
                COALESCE(host(a.client_addr), 'local socket') AS client_addr, \
                COALESCE(a.state, 'unknown') AS state, \
                COALESCE(to_char(a.query_start AT TIME ZONE 'UTC', \
                    'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') || ' (' || \
                    floor(extract(epoch FROM clock_timestamp() - a.query_start))::int \
                    || ' s ago)', 'unknown') AS query_start \
         FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
         WHERE l.locktype = 'advisory' AND l.granted \
           AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
           AND l.classid = {high}::oid AND l.objid = {low}::oid AND l.objsubid = 1 \
           AND l.pid <> pg_backend_pid()"
    ))
    .load::<Holder>(conn)
    .context("cannot read who holds the migration lock")?;
    Ok(holders.pop())
}

/// Folds the text of the messages that migration `search` could not
/// (`queries::fold_unfolded`), once, after the migrations.
fn fold_unfolded(conn: &mut PgConnection) -> anyhow::Result<()> {
    let folded = crate::queries::fold_unfolded(conn).map_err(|e| {
        anyhow::anyhow!(
            "cannot fold messages for search: {}",
            e.into_store::<PgStore>()
        )
    })?;
    if folded > 0 {
        tracing::info!(folded, "folded the text of earlier messages for search");
    }
    Ok(())
}
