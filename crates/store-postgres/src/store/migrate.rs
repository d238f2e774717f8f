//! Applying the embedded migrations (`migrations/postgres`) under a lock
//! that several servers starting at once against one database share.

use anyhow::Context as _;
use diesel::connection::SimpleConnection as _;
use diesel::pg::PgConnection;
use diesel::Connection as _;
use diesel_migrations::MigrationHarness as _;

use super::{PgStore, MIGRATIONS, MIGRATION_LOCK_KEY, SESSION_SETTINGS};

impl PgStore {
    /// Applies the embedded migrations that have not run yet; returns the
    /// versions applied, oldest first (none when it was up to date).
    ///
    /// Behind a pooler in transaction mode every migration runs in one
    /// transaction, under a transaction-scoped lock: the pooler may give
    /// each statement outside a transaction to another server connection,
    /// so a session's lock could be taken on one and released on none.
    pub fn migrate(&self) -> anyhow::Result<Vec<String>> {
        let mut conn = self
            .pool
            .get()
            .context("cannot connect to PostgreSQL to migrate")?;
        let conn: &mut PgConnection = &mut conn;
        if self.pooled {
            let applied = conn.transaction(|conn| -> anyhow::Result<Vec<String>> {
                conn.batch_execute(&format!(
                    "SET LOCAL statement_timeout = 0; \
                     SET LOCAL idle_in_transaction_session_timeout = 0; \
                     SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})"
                ))
                .context("cannot take the migration lock")?;
                conn.run_pending_migrations(MIGRATIONS)
                    .map(|done| done.iter().map(ToString::to_string).collect())
                    .map_err(|e| anyhow::anyhow!("migration failed: {e}"))
            })?;
            if !applied.is_empty() {
                tracing::info!(applied = applied.len(), "applied PostgreSQL migrations");
            }
            fold_unfolded(conn)?;
            return Ok(applied);
        }
        // Migrations and the wait for another migrator may take longer
        // than a request's statement: no server-side limits meanwhile.
        conn.batch_execute(
            "SET statement_timeout = 0; SET idle_in_transaction_session_timeout = 0",
        )
        .context("cannot lift the statement timeout to migrate")?;
        conn.batch_execute(&format!("SELECT pg_advisory_lock({MIGRATION_LOCK_KEY})"))
            .context("cannot take the migration lock")?;
        let applied = conn
            .run_pending_migrations(MIGRATIONS)
            .map(|done| done.iter().map(ToString::to_string).collect::<Vec<_>>())
            .map_err(|e| anyhow::anyhow!("migration failed: {e}"));
        let unlocked = conn
            .batch_execute(&format!("SELECT pg_advisory_unlock({MIGRATION_LOCK_KEY})"))
            .context("cannot release the migration lock");
        let restored = conn
            .batch_execute(SESSION_SETTINGS)
            .context("cannot restore the statement timeout");
        let applied = applied?;
        unlocked?;
        restored?;
        if !applied.is_empty() {
            tracing::info!(applied = applied.len(), "applied PostgreSQL migrations");
        }
        fold_unfolded(conn)?;
        Ok(applied)
    }
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
