//! What is SQLite's own; everything else is shared with the PostgreSQL store
//! (`crates/store-sql-shared/`).

use std::sync::{MutexGuard, PoisonError};

use diesel::connection::SimpleConnection as _;
use diesel::deserialize::{self, FromSql, FromSqlRow};
use diesel::expression::AsExpression;
use diesel::prelude::*;
use diesel::r2d2::{ConnectionManager, CustomizeConnection, PooledConnection};
use diesel::serialize::{self, IsNull, Output, ToSql};
use diesel::sql_types::Text;
use diesel::sqlite::{Sqlite, SqliteConnection, SqliteValue};
use uuid::Uuid;

use crate::rows::{Error, MessageRow};
use crate::schema::{groups, messages};
use crate::SqliteStore;

pub(crate) type Db = Sqlite;
pub(crate) type Conn = SqliteConnection;
/// Ids are TEXT: lowercase hyphenated UUIDs, whose text order is the UUID's
/// byte order (the order PostgreSQL's `uuid` sorts by).
pub(crate) type IdSql = Text;

/// A UUID stored as TEXT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, AsExpression, FromSqlRow)]
#[diesel(sql_type = Text)]
pub(crate) struct DbId(Uuid);

impl ToSql<Text, Sqlite> for DbId {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Sqlite>) -> serialize::Result {
        out.set_value(self.0.hyphenated().to_string());
        Ok(IsNull::No)
    }
}

impl FromSql<Text, Sqlite> for DbId {
    fn from_sql(mut value: SqliteValue<'_, '_, '_>) -> deserialize::Result<Self> {
        Ok(Self(Uuid::parse_str(value.read_text())?))
    }
}

pub(crate) fn db_id(id: Uuid) -> DbId {
    DbId(id)
}

pub(crate) fn uuid_of(id: DbId) -> Uuid {
    id.0
}

/// The message row. Writes run in `BEGIN IMMEDIATE` transactions, which
/// already hold the database's write lock: nothing more to lock.
pub(crate) fn lock_message(conn: &mut Conn, id: DbId) -> QueryResult<Option<MessageRow>> {
    messages::table
        .find(id)
        .select(MessageRow::as_select())
        .first(conn)
        .optional()
}

/// Whether the group exists (the write transaction holds the lock already).
pub(crate) fn lock_group(conn: &mut Conn, id: DbId) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(groups::table.find(id))).get_result(conn)
}

/// "database is locked" after the busy timeout: another process holds the
/// write lock for too long. The request may be retried.
pub(crate) fn is_unavailable(e: &diesel::result::Error) -> bool {
    use diesel::result::Error as E;
    match e {
        E::DatabaseError(_, info) => {
            let m = info.message();
            m.contains("database is locked") || m.contains("database is busy")
        }
        _ => false,
    }
}

/// Per-connection settings. The busy timeout comes first so that the others
/// wait for a lock instead of failing.
pub(crate) fn configure(conn: &mut Conn) -> QueryResult<()> {
    conn.batch_execute(
        "PRAGMA busy_timeout = 10000;
         PRAGMA foreign_keys = ON;
         PRAGMA synchronous = NORMAL;",
    )
}

/// Applies [`configure`] to every connection the pool opens, and counts the
/// statements it sends into the shared counter.
#[derive(Debug)]
pub(crate) struct Pragmas(pub(crate) std::sync::Arc<std::sync::atomic::AtomicU64>);

impl CustomizeConnection<Conn, diesel::r2d2::Error> for Pragmas {
    fn on_acquire(&self, conn: &mut Conn) -> Result<(), diesel::r2d2::Error> {
        crate::ports::count_statements(conn, self.0.clone());
        configure(conn).map_err(diesel::r2d2::Error::QueryError)?;
        // A no-op on a file already in WAL mode; for ":memory:" it stays
        // "memory".
        conn.batch_execute("PRAGMA journal_mode = WAL;")
            .map_err(diesel::r2d2::Error::QueryError)
    }
}

/// Sends the pool's connection errors to the log (r2d2 would use `log`).
#[derive(Debug)]
pub(crate) struct LogErrors;

impl diesel::r2d2::HandleError<diesel::r2d2::Error> for LogErrors {
    fn handle_error(&self, error: diesel::r2d2::Error) {
        tracing::warn!(%error, "SQLite connection error");
    }
}

impl SqliteStore {
    pub(crate) fn checkout(&self) -> Result<PooledConnection<ConnectionManager<Conn>>, Error> {
        self.pool.get().map_err(|e| Error::Pool(e.to_string()))
    }

    /// This process's turn to write. The lock guards no data, so a panic
    /// of a previous holder does not matter.
    pub(crate) fn writer_turn(&self) -> MutexGuard<'_, ()> {
        self.writer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A deferred transaction: in WAL mode its reads see one snapshot.
    pub(crate) fn read_tx<T>(
        &self,
        f: impl FnOnce(&mut Conn) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let mut pooled = self.checkout()?;
        let conn: &mut Conn = &mut pooled;
        conn.transaction(f)
    }

    /// `BEGIN IMMEDIATE`: takes the write lock up front, so a transaction
    /// never fails half-way for a lock (as a deferred one upgrading would);
    /// concurrent writers wait their turn instead.
    pub(crate) fn write_tx<T>(
        &self,
        f: impl FnOnce(&mut Conn) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let _turn = self.writer_turn();
        let mut pooled = self.checkout()?;
        let conn: &mut Conn = &mut pooled;
        conn.immediate_transaction(f)
    }
}
