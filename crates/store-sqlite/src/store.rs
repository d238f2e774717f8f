//! The SQLite store, confab's embedded default: its pool, migrations
//! (`migrations/sqlite`) and what is SQLite's own ([`SqlBackend`]: `TEXT`
//! ids, WAL, `BEGIN IMMEDIATE` behind an in-process writer queue). The
//! queries are the shared ones.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use diesel::connection::SimpleConnection as _;

use diesel::prelude::*;
use diesel::r2d2::{ConnectionManager, CustomizeConnection, Pool};

use diesel::sqlite::{Sqlite, SqliteConnection};
use diesel_migrations::{embed_migrations, EmbeddedMigrations};

use confab_store_sql::door::{count_statements, Abandoned, LogErrors};
use confab_store_sql::error::Error;
use confab_store_sql::id::DbId;
use confab_store_sql::rows::{MessageRow, WholeRow};
use confab_store_sql::schema::{conversations, groups, messages};
use confab_store_sql::visible_to;
use confab_store_sql::{Pooled, SqlBackend};

const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");

/// Readers run in parallel (WAL); writers commit together (see `write_tx`).
const POOL_SIZE: u32 = 8;
/// How long a call waits for a pooled connection, and for another
/// process's write lock (SQLite's busy timeout): both under a call's
/// deadline (`door::DEFAULT_DEADLINE`), so that a request fails (503)
/// rather than outlasts it.
const CHECKOUT_TIMEOUT: Duration = Duration::from_millis(1000);
const BUSY_TIMEOUT_MS: u32 = 1500;

/// The page size of a database file this store creates (SQLite's default
/// is 4096 since 3.12; it was 1024 before). A send changes a page in the
/// middle of about a dozen B-trees (the four order indexes of `messages`,
/// each recipient's events, the counters), and writes each whole to the
/// WAL and again to the file at the checkpoint: smaller pages, fewer
/// bytes. On the benchmark's data (`bench/page_size.sh`, the same file
/// rebuilt with each size, alternated), against 4 KB pages: 2 KB pages
/// wrote 35 % fewer bytes a send (45 KB against 69) and sent 12 % more a
/// second, the mixed load and the first page within 1-2 %; 1 KB pages
/// wrote 56 % fewer and sent 26-28 % more, but the mixed load lost 7-9 %
/// and the reads 1-8 % (`docs/performance.md`, "SQLite's page size"). A
/// file made before keeps its own size (it changes only with a `VACUUM`,
/// docs/deployment.md); the checkpoints' thresholds are in bytes, so all
/// behave alike (`checkpoint`).
const NEW_FILE_PAGE_SIZE: u32 = 2048;

/// The SQLite store. Cloning is cheap: clones share one pool.
#[derive(Clone)]
pub struct SqliteStore {
    pool: Pool<ConnectionManager<SqliteConnection>>,
    /// Writers of this process queue here, in order, and commit together
    /// (`group_commit`), instead of polling SQLite's lock in its busy
    /// handler.
    writers: crate::group_commit::Writers,
    /// Held by whoever writes: a batch of `writers`, or the migrations;
    /// and by the checkpoint thread for the last pass that lets the WAL
    /// start over (`checkpoint`), which goes before any writer (`turn`).
    /// Other processes (the CLI) still meet them at the busy timeout.
    writer: Arc<crate::turn::WriterTurn>,
    /// SQL statements sent over all pooled connections (see
    /// [`SqliteStore::statements_run`]).
    statements: Arc<AtomicU64>,
    /// Counts the callers waiting for a connection (`door`); SQLite's calls
    /// take no turns there (`SqlBackend::GATED`).
    gate: confab_store_sql::door::Gate,
    /// How long a port call may take (see [`SqliteStore::with_deadline`]).
    deadline: Duration,
    /// The budget of the request this handle serves, if it was given one
    /// (`confab_ports::WithBudget`).
    budget: Option<confab_ports::DbBudget>,
    /// Keeps the WAL checkpoints running off the writers' path (files
    /// only; `checkpoint`).
    _checkpoints: Option<crate::checkpoint::Checkpointer>,
    /// Keeps search's index fed from its backlog, off the writers' path
    /// (`search_index`).
    _search_index: crate::search_index::Indexer,
    /// Searches' own connections (see [`SqliteStore::with_search_connections`]).
    search: confab_store_sql::search_share::SearchShare<ConnectionManager<SqliteConnection>>,
}

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
        Self::open_with(path, None, Synchronous::default())
    }

    /// [`SqliteStore::open`] with `pool_size` connections (at least 1;
    /// default 8): how many reads run at once. Writers commit together
    /// whatever the size. `synchronous`: whether a commit waits for its
    /// sync ([`Synchronous`]).
    pub fn open_with(
        path: &str,
        pool_size: Option<u32>,
        synchronous: Synchronous,
    ) -> anyhow::Result<Self> {
        let in_memory = path == ":memory:";
        if !in_memory {
            // WAL is a property of the file: switch it once, before a pool
            // of connections races to do it.
            let mut conn = SqliteConnection::establish(path)
                .with_context(|| format!("cannot open SQLite database {path}"))?;
            configure(&mut conn).context("cannot configure SQLite")?;
            // The page size takes on a new, empty file only: switching it
            // to WAL writes its first page. A file with pages keeps its own.
            conn.batch_execute(&format!(
                "PRAGMA page_size = {NEW_FILE_PAGE_SIZE}; PRAGMA journal_mode = WAL;"
            ))
            .context("cannot switch SQLite to WAL")?;
        }
        let writer = Arc::new(crate::turn::WriterTurn::default());
        let checkpoints = if in_memory {
            None
        } else {
            Some(
                crate::checkpoint::Checkpointer::start(path, configure, writer.clone())
                    .context("cannot start SQLite's checkpoints")?,
            )
        };
        let statements = Arc::new(AtomicU64::new(0));
        let connections = if in_memory {
            1
        } else {
            pool_size.unwrap_or(POOL_SIZE).max(1)
        };
        let builder = Pool::builder()
            .connection_timeout(CHECKOUT_TIMEOUT)
            .test_on_check_out(false)
            .connection_customizer(Box::new(Pragmas(statements.clone(), synchronous)))
            .error_handler(Box::new(LogErrors("SQLite")));
        let builder = if in_memory {
            // One connection that never closes: the database lives in it.
            builder
                .max_size(connections)
                .min_idle(Some(1))
                .idle_timeout(None)
                .max_lifetime(None)
        } else {
            builder.max_size(connections).min_idle(Some(1))
        };
        let pool = builder
            .build(ConnectionManager::new(path))
            .with_context(|| format!("cannot open SQLite database {path}"))?;
        let pragmas = Box::new(Pragmas(statements.clone(), synchronous));
        let search = crate::search::share(path, &pool, pragmas, CHECKOUT_TIMEOUT)?;
        let index_source = if in_memory {
            crate::search_index::Source::Pool(pool.clone())
        } else {
            crate::search_index::Source::File {
                path: path.to_owned(),
                configure,
            }
        };
        let search_index = crate::search_index::Indexer::start(index_source, writer.clone())
            .context("cannot start indexing messages for search")?;
        Ok(Self {
            pool,
            writers: crate::group_commit::Writers::default(),
            writer,
            statements,
            gate: confab_store_sql::door::Gate::new(connections),
            deadline: confab_store_sql::door::DEFAULT_DEADLINE,
            budget: None,
            _checkpoints: checkpoints,
            _search_index: search_index,
            search,
        })
    }

    /// This store with `connections` searches at once (at least 1; default
    /// half the CPUs, at least 1), each on a connection of its own: a
    /// search reads in this process, so that is how many cores searches
    /// may take; the others wait their turn, and sends and reads never
    /// wait for them.
    #[must_use]
    pub fn with_search_connections(mut self, connections: u32) -> Self {
        self.search = self.search.with_connections(connections);
        self
    }

    /// This store with another deadline for each port call (default 1.8 s):
    /// past it the call answers `StoreError::Unavailable`, and a write still
    /// waiting or running rolls back instead of committing.
    #[must_use]
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// How many SQL statements this store has sent since it was opened,
    /// connection setup included. Tests use it to show that a page costs a
    /// fixed number of queries however many items it holds.
    pub fn statements_run(&self) -> u64 {
        self.statements.load(Ordering::Relaxed)
    }

    /// The pool right now, for metrics.
    pub fn pool_state(&self) -> confab_ports::PoolState {
        confab_store_sql::door::pool_state(&self.pool, &self.gate)
    }

    /// This process's turn to write.
    fn writer_turn(&self) -> crate::turn::Held<'_> {
        self.writer.take()
    }
}

/// The calls that PostgreSQL runs on its asynchronous connections
/// (getting a message, a page, a send): here they take the door like every
/// other call (`crate::ports`).
impl SqliteStore {
    pub(crate) async fn write_append_message(
        &self,
        message: confab_ports::NewMessage,
        outbox: confab_ports::Outbox,
        completion: Option<confab_ports::Completion<confab_domain::Message>>,
    ) -> Result<confab_domain::Message, confab_ports::StoreError> {
        self.door_append_message(message, outbox, completion).await
    }

    pub(crate) async fn read_message_for(
        &self,
        viewer: confab_domain::ContactId,
        id: confab_domain::MessageId,
    ) -> Result<Option<confab_domain::Message>, confab_ports::StoreError> {
        self.door_message_for(viewer, id).await
    }

    pub(crate) async fn read_list_messages(
        &self,
        viewer: confab_domain::ContactId,
        list: confab_ports::MessageList,
        page: confab_domain::Page<confab_domain::MessageId>,
    ) -> Result<confab_domain::Paged<confab_domain::Message>, confab_ports::StoreError> {
        self.door_list_messages(viewer, list, page).await
    }
}

/// A handle on the same pool and connections whose calls share a
/// request's budget.
impl confab_ports::WithBudget for SqliteStore {
    fn with_budget(&self, budget: confab_ports::DbBudget) -> Self {
        Self {
            budget: Some(budget),
            ..self.clone()
        }
    }
}

/// The position the events table gives its next row (AUTOINCREMENT
/// never gives one twice, even after pruning).
const NEXT_POSITION: &str =
    "(SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0) + 1)";

impl SqlBackend for SqliteStore {
    type Db = Sqlite;
    type Conn = SqliteConnection;
    type Manager = ConnectionManager<SqliteConnection>;

    const DATA_MODIFYING_WITH: bool = false;
    const LATERAL: bool = false;
    const EVENT_HORIZON_SQL: &'static str = "9223372036854775807";
    const EVENT_START_SQL: &'static str = "(SELECT COALESCE(MAX(position), 0) FROM events)";
    const TXN_FIRST_POSITION_SQL: &'static str = NEXT_POSITION;
    const TXN_END_POSITION_SQL: &'static str = NEXT_POSITION;

    /// A plain `SELECT`: writes run in `BEGIN IMMEDIATE` transactions, which
    /// already hold the database's write lock.
    fn lock_message(
        conn: &mut SqliteConnection,
        id: DbId,
        viewer: DbId,
    ) -> QueryResult<Option<MessageRow>> {
        // Joined to its one conversation (primary-key lookups; the write
        // transaction holds SQLite's lock already).
        messages::table
            .inner_join(conversations::table)
            .filter(messages::id.eq(id))
            .filter(visible_to!(viewer))
            .select(MessageRow::as_select())
            .first(conn)
            .optional()
    }

    /// `json_group_array` of `json_array`s (the bundled library's JSON
    /// functions), over the rows as the named index reads them: an
    /// aggregate sees its rows in the order of its loop, and an equality on
    /// the index's first column reads the rest of it in order. Not `ORDER
    /// BY` inside the aggregate (3.44+): that builds a temporary b-tree on
    /// every execution, allocations that made getting one message 2.6x
    /// slower under load (docs/performance.md). The contract suite checks
    /// the order (reactions interleaved by name and reactor).
    fn json_rows(
        values: &str,
        (table, alias): (&str, &str),
        filter: &str,
        (_order, index): (&str, &str),
    ) -> String {
        format!(
            "(SELECT json_group_array(json_array({values})) \
             FROM {table} AS {alias} INDEXED BY {index} WHERE {filter})"
        )
    }

    fn json_set_key(doc: &str, key: &str, value: &str) -> String {
        format!("json_set({doc}, '$.{key}', json({value}))")
    }

    fn json_ids(array: &str) -> String {
        format!("(SELECT value AS id FROM json_each({array}))")
    }

    fn json_mark_deleted(doc: &str, key: &str, id: &str) -> String {
        format!(
            "json_set({doc}, '$.{key}', json((SELECT json_group_array(\
                 CASE WHEN json_extract(x.value, '$.id') = {id} \
                 THEN json_object('id', json_extract(x.value, '$.id'), 'deleted', json('true')) \
                 ELSE json(x.value) END ORDER BY x.key) \
             FROM json_each({doc}, '$.{key}') AS x)))"
        )
    }

    fn search_recent(
        conn: &mut SqliteConnection,
        scope: &confab_store_sql::search::SearchScope,
    ) -> QueryResult<Vec<confab_store_sql::search::RecentRow>> {
        crate::search::recent(conn, scope)
    }

    fn search_indexed(
        conn: &mut SqliteConnection,
        scope: &confab_store_sql::search::SearchScope,
    ) -> QueryResult<Vec<confab_store_sql::search::Found>> {
        crate::search::indexed(conn, scope)
    }

    /// A scalar subquery: SQLite prepares each statement once per
    /// connection (diesel's cache), so the join costs no planning per page.
    fn quoted_message(id: &str) -> String {
        format!(
            "(SELECT json_array(quoted.body, quoted.sender_id, quoted_sender.username) \
             FROM messages quoted INNER JOIN contacts quoted_sender \
             ON quoted_sender.id = quoted.sender_id WHERE quoted.id = {id})"
        )
    }

    /// A few ranges of the messages' audience indexes, merged by rowid
    /// ([`feed_page_text`]).
    fn feed_page(
        conn: &mut SqliteConnection,
        viewer: DbId,
        cursor: Option<(bool, DbId)>,
        fetch: i64,
    ) -> QueryResult<Vec<WholeRow>> {
        feed_page_query(viewer, cursor, fetch).load(conn)
    }

    /// `AUTOINCREMENT`: one writer at a time, so insertion order is commit
    /// order.
    fn event_position(_index: usize) -> Option<String> {
        None
    }

    /// Whether the group exists (the write transaction holds the lock already).
    fn lock_group(conn: &mut SqliteConnection, id: DbId) -> QueryResult<bool> {
        diesel::select(diesel::dsl::exists(groups::table.find(id))).get_result(conn)
    }

    /// "database is locked" after the busy timeout: another process holds the
    /// write lock for too long. The request may be retried.
    fn is_unavailable(e: &diesel::result::Error) -> bool {
        use diesel::result::Error as E;
        match e {
            E::DatabaseError(_, info) => {
                let m = info.message();
                m.contains("database is locked") || m.contains("database is busy")
            }
            _ => false,
        }
    }

    fn deadline(&self) -> Duration {
        self.deadline
    }

    fn budget(&self) -> Option<&confab_ports::DbBudget> {
        self.budget.as_ref()
    }

    const GATED: bool = false;

    const QUEUED_WRITES: bool = true;

    fn gate(&self) -> &confab_store_sql::door::Gate {
        &self.gate
    }

    fn checkout(&self) -> Result<Pooled<Self>, Error> {
        confab_store_sql::door::counted_checkout(&self.pool, &self.gate).map_err(Error::Pool)
    }

    fn search_share(
        &self,
    ) -> &confab_store_sql::search_share::SearchShare<ConnectionManager<SqliteConnection>> {
        &self.search
    }

    /// `BEGIN IMMEDIATE`: takes the write lock up front, so a transaction
    /// never fails half-way for a lock (as a deferred one upgrading would).
    /// Concurrent writers queue and commit together, each in a savepoint of
    /// its own (`group_commit`); a writer whose caller gave up meanwhile
    /// does nothing when its turn comes.
    fn write_tx<T: Send + 'static>(
        &self,
        abandoned: &Abandoned,
        f: impl FnOnce(&mut SqliteConnection) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error> {
        self.writers.write(abandoned, f, |batch| {
            let _turn = self.writer_turn();
            match self.checkout() {
                Ok(mut pooled) => crate::group_commit::run_batch(&mut pooled, batch),
                Err(e) => crate::group_commit::fail_all(batch, &e),
            }
        })
    }
}

/// [`SqliteStore::feed_page`]'s statement, built once for each way of
/// travel (from the newest, after a cursor, before one).
fn feed_page_query(
    viewer: DbId,
    cursor: Option<(bool, DbId)>,
    fetch: i64,
) -> confab_store_sql::raw::TypedQuery<Sqlite, crate::queries::WholeSql> {
    static SHAPES: [std::sync::OnceLock<confab_store_sql::raw::Shape>; 3] =
        [const { std::sync::OnceLock::new() }; 3];
    confab_store_sql::queries::paging::feed_query(&SHAPES, feed_page_text, viewer, cursor, fetch)
}

/// [`feed_page_query`]'s text for a way of travel (none: from the newest;
/// else whether before the cursor), with the viewer, the rows to fetch and
/// the cursor as binds 0, 1 and 2.
///
/// A merge of a few ranges of the messages' audience indexes (the
/// `message_audience` migration), the same whatever the number of the
/// viewer's conversations or their share of all messages: the viewer's
/// direct messages as creator, as peer, and the messages of each group
/// the viewer belongs to now (live membership, a join). Each range is at
/// most `fetch` entries past the cursor, read from its index alone (SQLite
/// has no `LATERAL`: a group's range is the correlated `rowid IN (...
/// LIMIT n)`), and the first `fetch` of these few candidates in the order
/// of travel are the page. The candidates are rowids, which the indexes
/// hold: each is found in the table by its integer key, with no descent
/// of the primary key's index on the text id. The cursor is resolved once,
/// by primary key, NULL (no rows) unless the viewer sees it.
///
/// `EXPLAIN QUERY PLAN`: a covering search of each audience index (the
/// peer's reads the row to leave out the viewer's own conversations), of
/// `group_members` by contact, a rowid search per candidate, and a sort of
/// those few rows.
fn feed_page_text(travel: Option<bool>) -> String {
    use confab_store_sql::raw::marker;

    let (v, limit) = (marker(0), marker(1));
    let key = travel.map(|_| marker(2));
    let (order, keyset) = match travel {
        Some(backwards) => {
            let (order, past) = confab_store_sql::queries::paging::travel_order(backwards);
            (
                order,
                format!("AND (i.created_at, i.id) {past} (SELECT at, id FROM cursor_key)"),
            )
        }
        None => ("DESC", String::new()),
    };
    let sees = confab_store_sql::queries::paging::feed_sees(&v);
    let cursor_key = match &key {
        Some(k) => format!(
            "WITH cursor_key (at, id) AS MATERIALIZED ( \
                 SELECT created_at, id FROM messages WHERE id = {k} AND {sees} \
             ) "
        ),
        None => String::new(),
    };
    let range = |audience: &str| {
        format!(
            "SELECT i.rowid FROM messages i WHERE {audience} {keyset} \
             ORDER BY i.created_at {order}, i.id {order} LIMIT {limit}"
        )
    };
    let [as_creator, as_peer, in_group] =
        confab_store_sql::queries::paging::feed_audiences("i", &v).map(|audience| range(&audience));
    // Whole rows: each message's reactions and attachments in the same
    // statement (`rows::relation_columns`), for the page's rows only.
    let columns = crate::queries::whole_columns("messages", "contacts");
    format!(
        "{cursor_key}SELECT {columns} FROM messages \
         INNER JOIN contacts ON contacts.id = messages.sender_id \
         WHERE messages.rowid IN ( \
             SELECT * FROM ({as_creator}) \
             UNION ALL SELECT * FROM ({as_peer}) \
             UNION ALL SELECT k.rowid FROM group_members g \
                 JOIN messages k ON k.rowid IN ({in_group}) \
                 WHERE g.contact_id = {v}) \
         ORDER BY messages.created_at {order}, messages.id {order} LIMIT {limit}"
    )
}

/// Whether a commit waits for the disk (SQLite's `synchronous` in WAL
/// mode; `CONFAB_SQLITE_SYNCHRONOUS`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Synchronous {
    /// Every commit syncs the WAL before it returns: an acknowledged write
    /// survives an operating-system crash or a power cut (docs/api.md
    /// "Limits": no acknowledged write is ever lost). The default.
    #[default]
    Full,
    /// The WAL is synced at each checkpoint pass (every 50 ms while writes
    /// come in), not at each commit: an acknowledged write survives a
    /// killed or crashed process, but an operating-system crash or a power
    /// cut may roll back the last ones. Sends 6-26 % faster on disks that
    /// sync in 0.05-0.07 ms (docs/performance.md, "SQLite's durability").
    Normal,
}

impl Synchronous {
    fn pragma(self) -> &'static str {
        match self {
            Self::Full => "PRAGMA synchronous = FULL;",
            Self::Normal => "PRAGMA synchronous = NORMAL;",
        }
    }
}

/// Per-connection settings. The busy timeout comes first so that the others
/// wait for a lock instead of failing. A commit checkpoints only past
/// [`crate::checkpoint::BACKSTOP_BYTES`] of WAL: the store's own thread does it
/// meanwhile (`checkpoint`). `synchronous` is set apart, per store
/// ([`Synchronous`]); the checkpoint thread's connection keeps SQLite's
/// default (`FULL`), which syncs at each pass as `NORMAL` does.
/// `secure_delete` zeroes what a deletion frees, so that an erased
/// contact's or a deleted message's bytes do not stay in the file's free
/// pages (docs/reliability.md, "What a deletion leaves in the files").
fn configure(conn: &mut SqliteConnection) -> QueryResult<()> {
    conn.batch_execute(&format!(
        "PRAGMA busy_timeout = {BUSY_TIMEOUT_MS};
         PRAGMA foreign_keys = ON;
         PRAGMA secure_delete = ON;"
    ))?;
    let page_size = crate::checkpoint::page_size(conn)?;
    conn.batch_execute(&format!(
        "PRAGMA wal_autocheckpoint = {};",
        crate::checkpoint::pages(crate::checkpoint::BACKSTOP_BYTES, page_size)
    ))
}

/// Applies [`configure`] and the store's [`Synchronous`] to every
/// connection the pool opens, and counts the statements it sends into the
/// shared counter.
#[derive(Debug)]
struct Pragmas(Arc<AtomicU64>, Synchronous);

impl CustomizeConnection<SqliteConnection, diesel::r2d2::Error> for Pragmas {
    fn on_acquire(&self, conn: &mut SqliteConnection) -> Result<(), diesel::r2d2::Error> {
        count_statements(conn, self.0.clone());
        configure(conn).map_err(diesel::r2d2::Error::QueryError)?;
        conn.batch_execute(self.1.pragma())
            .map_err(diesel::r2d2::Error::QueryError)?;
        // A no-op on a file already in WAL mode; for ":memory:" it stays
        // "memory".
        conn.batch_execute("PRAGMA journal_mode = WAL;")
            .map_err(diesel::r2d2::Error::QueryError)
    }
}

mod migrate;

#[cfg(test)]
mod tests;
