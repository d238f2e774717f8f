//! What is PostgreSQL's own; everything else is shared with the SQLite store
//! (`crates/store-sql-shared/`).

use diesel::pg::{Pg, PgConnection};
use diesel::prelude::*;
use diesel::r2d2::{ConnectionManager, PooledConnection};
use uuid::Uuid;

use crate::rows::{Error, MessageRow};
use crate::schema::{groups, messages};
use crate::PgStore;

pub(crate) type Db = Pg;
pub(crate) type Conn = PgConnection;
/// Ids are native `uuid` columns.
pub(crate) type IdSql = diesel::sql_types::Uuid;
pub(crate) type DbId = Uuid;

pub(crate) fn db_id(id: Uuid) -> DbId {
    id
}

pub(crate) fn uuid_of(id: DbId) -> Uuid {
    id
}

/// The message row, locked until the transaction ends (`FOR UPDATE`).
pub(crate) fn lock_message(conn: &mut Conn, id: DbId) -> QueryResult<Option<MessageRow>> {
    messages::table
        .find(id)
        .select(MessageRow::as_select())
        .for_update()
        .first(conn)
        .optional()
}

/// Locks the group row until the transaction ends; false if there is none.
pub(crate) fn lock_group(conn: &mut Conn, id: DbId) -> QueryResult<bool> {
    groups::table
        .find(id)
        .select(groups::id)
        .for_update()
        .first::<DbId>(conn)
        .optional()
        .map(|row| row.is_some())
}

/// Errors that mean "the database cannot be reached" beyond those diesel
/// classifies as a closed connection.
pub(crate) fn is_unavailable(e: &diesel::result::Error) -> bool {
    use diesel::result::{DatabaseErrorKind, Error as E};
    match e {
        E::DatabaseError(DatabaseErrorKind::Unknown, info) => {
            let m = info.message();
            // The server is shutting down or restarting (SQLSTATE 57P01..3).
            m.contains("terminating connection")
                || m.contains("the database system is")
                || m.contains("server closed the connection")
        }
        _ => false,
    }
}

impl PgStore {
    pub(crate) fn checkout(&self) -> Result<PooledConnection<ConnectionManager<Conn>>, Error> {
        self.pool.get().map_err(|e| Error::Pool(e.to_string()))
    }

    /// A read-only snapshot: every statement of `f` sees the same data.
    pub(crate) fn read_tx<T>(
        &self,
        f: impl FnOnce(&mut Conn) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let mut conn = self.checkout()?;
        conn.build_transaction()
            .read_only()
            .repeatable_read()
            .run(f)
    }

    /// A read-committed transaction; the queries take the row locks they need.
    pub(crate) fn write_tx<T>(
        &self,
        f: impl FnOnce(&mut Conn) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let mut pooled = self.checkout()?;
        let conn: &mut Conn = &mut pooled;
        conn.transaction(f)
    }
}

/// Sends the pool's connection errors to the log (r2d2 would use `log`).
#[derive(Debug)]
pub(crate) struct LogErrors;

impl diesel::r2d2::HandleError<diesel::r2d2::Error> for LogErrors {
    fn handle_error(&self, error: diesel::r2d2::Error) {
        tracing::warn!(%error, "PostgreSQL connection error");
    }
}

/// Counts the statements every pooled connection sends.
#[derive(Debug)]
pub(crate) struct CountStatements(pub(crate) std::sync::Arc<std::sync::atomic::AtomicU64>);

impl diesel::r2d2::CustomizeConnection<Conn, diesel::r2d2::Error> for CountStatements {
    fn on_acquire(&self, conn: &mut Conn) -> Result<(), diesel::r2d2::Error> {
        crate::ports::count_statements(conn, self.0.clone());
        Ok(())
    }
}
