//! [`SqlBackend`]: what each database supplies to the shared code.

use std::time::Duration;

use diesel::connection::LoadConnection;
use diesel::r2d2::{ManageConnection, PooledConnection, R2D2Connection};
use diesel::QueryResult;

use crate::door::Abandoned;
use crate::error::Error;
use crate::id::{DbId, IdColumn};
use crate::queries::contacts::statements::ContactStatements;
use crate::queries::idempotency::statements::IdempotencyStatements;
use crate::queries::outbox::OutboxStatements;
use crate::queries::webhooks::statements::WebhookStatements;
use crate::queries::webhooks::WebhookSql;
use crate::raw::RawDb;
use crate::rows::{MessageRow, WholeRow};

/// A pooled connection of backend `S`.
pub type Pooled<S> = PooledConnection<<S as SqlBackend>::Manager>;

/// Everything that differs between the SQL databases, implemented by each
/// store type (`PgStore`, `SqliteStore`). The schema, rows, queries and port
/// implementations refer to the database only through this trait.
///
/// A new backend is a crate that implements it on its store type, calls
/// the generic queries ([`crate::queries`]) with it, and compiles the
/// queries and port implementations not yet generic (`per-backend/`) as its
/// own modules, as `confab-store-postgres` and `confab-store-sqlite` do
/// (see the crate docs).
pub trait SqlBackend: Clone + Send + Sync + 'static {
    /// diesel's backend; it also says how ids are stored.
    type Db: IdColumn + RawDb + WebhookSql;
    /// The connection the pool hands out. Its bounds list what the
    /// generic queries ([`crate::queries`]) run on it ([`crate::run`]).
    type Conn: R2D2Connection<Backend = Self::Db>
        + LoadConnection
        + ContactStatements<Self::Db>
        + IdempotencyStatements<Self::Db>
        + OutboxStatements<Self::Db>
        + WebhookStatements<Self::Db>
        + Send
        + 'static;
    /// The pool's connection manager.
    type Manager: ManageConnection<Connection = Self::Conn>;

    /// The message row, locked against concurrent writers until the
    /// transaction ends; `None` when there is none or `viewer` is not (any
    /// more) a member of its conversation, checked in the same statement so
    /// that a member removed a moment before cannot change it.
    fn lock_message(
        conn: &mut Self::Conn,
        id: DbId,
        viewer: DbId,
    ) -> QueryResult<Option<MessageRow>>;

    /// A page of the all-conversations feed (whole messages), by a plan
    /// whose cost does not depend on the number of the viewer's
    /// conversations or their share of all messages: each backend has its
    /// own (PostgreSQL's `LATERAL`, SQLite's rowids). `cursor` is
    /// (backwards, cursor id), the cursor resolved inside the statement (no
    /// rows when it is not in the list); rows come in the order of travel.
    fn feed_page(
        conn: &mut Self::Conn,
        viewer: DbId,
        cursor: Option<(bool, DbId)>,
        fetch: i64,
    ) -> QueryResult<Vec<WholeRow>>;

    /// An SQL expression (a scalar subquery): a JSON array, as text, with
    /// one JSON array of `values` (a list of SQL expressions) per row of
    /// `table` (name, alias) where `filter` holds, in the order of
    /// `order` = (expression, the index that reads the filtered rows in
    /// that order); NULL or `[]` when there is no row. How a message's
    /// reactions and attachments come in the statement that reads the
    /// message (`rows::relation_columns`).
    fn json_rows(values: &str, table: (&str, &str), filter: &str, order: (&str, &str)) -> String;

    /// Step 1 of a search ([`crate::search`]): the recent rows of each of
    /// the searcher's ranges ([`crate::search::Marks::recent_range`]), or
    /// of the scope's one conversation.
    fn search_recent(
        conn: &mut Self::Conn,
        scope: &crate::search::SearchScope,
    ) -> QueryResult<Vec<crate::search::RecentRow>>;

    /// Step 2 of a search ([`crate::search`]): the newest `scope.fetch`
    /// matches among the searcher's messages, by the store's index.
    fn search_indexed(
        conn: &mut Self::Conn,
        scope: &crate::search::SearchScope,
    ) -> QueryResult<Vec<crate::search::Found>>;

    /// An SQL expression: the message whose id is `id` (an SQL expression)
    /// as a JSON array, as text, of its body, its sender's id and its
    /// sender's username; NULL when `id` is NULL or no such message
    /// exists. How a reply reads the message it quotes
    /// (`rows::relation_columns`).
    fn quoted_message(id: &str) -> String;

    /// A subquery (with its alias-free parentheses) of the ids in `array`,
    /// an SQL expression of a JSON array of ids as text (NULL: none), as
    /// column `id` of the id type: how a message's mentions are read in
    /// the statement that counts them.
    fn json_ids(array: &str) -> String;

    /// An SQL expression: the JSON object `doc` (text) with its key `key`
    /// set to `value` (an SQL expression of JSON text), as text.
    fn json_set_key(doc: &str, key: &str, value: &str) -> String;

    /// An SQL expression: the JSON object `doc` (text) with each object of
    /// its array `key` whose `"id"` is `id` (an SQL expression of text)
    /// replaced by `{"id": <id>, "deleted": true}`, the others left as they
    /// are and in their order, as text. How a deleted attachment leaves the
    /// earlier payloads of its message.
    fn json_mark_deleted(doc: &str, key: &str, id: &str) -> String;

    /// Whether the database runs several writes as one data-modifying `WITH`
    /// statement (PostgreSQL), so that a send is one round trip inside its
    /// transaction (`queries/messages.rs`).
    const DATA_MODIFYING_WITH: bool;

    /// Whether the database joins a subquery per row of what precedes it
    /// (`LATERAL`, PostgreSQL). The inbox then reads each of the viewer's
    /// groups as an ordered range of its own, cut to a page, instead of
    /// every conversation of the viewer's groups, sorted; and looks the
    /// viewer's state row up by key for each conversation it reads, where
    /// a plain join let PostgreSQL's generic plan read all of the viewer's
    /// state rows for each.
    const LATERAL: bool;

    /// The SQL expression of the commit-ordered position of the
    /// transaction's `index`th event (from 0); `None` when the database
    /// numbers events itself as they are inserted (the events outbox,
    /// `queries/outbox.rs`).
    fn event_position(index: usize) -> Option<String>;

    /// An SQL expression: events at positions below it are readable, and no
    /// event that commits later can lie below it. PostgreSQL: the oldest
    /// running transaction's first position (positions are transaction id
    /// * 2^20 + index); SQLite, whose writes are serial: every position.
    const EVENT_HORIZON_SQL: &'static str;
    /// An SQL expression: a position that every event committed from now on
    /// lies after (where a new event stream starts).
    const EVENT_START_SQL: &'static str;
    /// An SQL expression, in a write transaction: a position at or below
    /// every event this transaction writes after evaluating it, and above
    /// every event committed before (where a group member's view of the
    /// group's events starts). PostgreSQL: this transaction's first
    /// position; SQLite (one writer): the next position.
    const TXN_FIRST_POSITION_SQL: &'static str;
    /// An SQL expression, in a write transaction: a position above every
    /// event this transaction wrote before evaluating it, and at or below
    /// every event committed after it (where an ended membership's view
    /// stops). PostgreSQL: the next transaction id's first position;
    /// SQLite: the next position.
    const TXN_END_POSITION_SQL: &'static str;

    /// Locks the group row until the transaction ends; false if there is none.
    fn lock_group(conn: &mut Self::Conn, id: DbId) -> QueryResult<bool>;

    /// Errors that mean "the database cannot be reached" beyond those diesel
    /// classifies as a closed connection.
    fn is_unavailable(e: &diesel::result::Error) -> bool;

    /// How long a port call may take in all before its caller is answered
    /// `Unavailable` (see [`crate::door`]).
    fn deadline(&self) -> Duration;

    /// The budget of the request this store handle serves, when it was
    /// given one ([`confab_ports::WithBudget`]): its calls then wait no
    /// longer than what is left of it, and charge what they waited.
    fn budget(&self) -> Option<&confab_ports::DbBudget>;

    /// Where calls take turns for the pool's connections (`door`'s module
    /// docs).
    fn gate(&self) -> &crate::door::Gate;

    /// Whether calls take their turn at [`SqlBackend::gate`] (PostgreSQL:
    /// one permit per pooled connection) or go straight to the pool
    /// (SQLite; see `door`'s module docs).
    const GATED: bool;

    /// A pooled connection, failing fast when the database is down.
    fn checkout(&self) -> Result<Pooled<Self>, Error>;

    /// Searches' own share of the database ([`crate::door::search`]):
    /// where they take turns, and the connections they run on.
    fn search_share(&self) -> &crate::search_share::SearchShare<Self::Manager>;

    /// A statement failed because its connection is gone (e.g. the server
    /// restarted): the pool's other connections may be dead too. Checkouts
    /// are never tested otherwise (no `SELECT 1` per request).
    fn connection_lost(&self) {}

    /// Whether every write must queue with the others (SQLite: one writer
    /// at a time, see `write_tx`) even when it is one statement that could
    /// run on its own. A write that took SQLite's lock outside the queue
    /// waited for it in the busy handler, behind the queue's batches, and a
    /// busy enough queue made it fail ("database is locked", 503).
    const QUEUED_WRITES: bool;

    /// Runs `f` in a transaction that writes: it commits entirely or not at
    /// all, and concurrent writers cannot make it fail half-way for a lock.
    /// Once `abandoned` is set it rolls back instead of committing
    /// (`door::unless_abandoned` around `f`). `f` may run on another
    /// writer's thread (SQLite's group commit), hence `Send + 'static`.
    fn write_tx<T: Send + 'static>(
        &self,
        abandoned: &Abandoned,
        f: impl FnOnce(&mut Self::Conn) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error>;
}
