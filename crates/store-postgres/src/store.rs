//! The PostgreSQL store: its pool, migrations (`migrations/postgres`) and
//! what is PostgreSQL's own ([`SqlBackend`]: native `uuid` ids, `FOR UPDATE`
//! row locks, a feed merged from index ranges). The queries are the shared ones.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use diesel::connection::{CacheSize, SimpleConnection as _};

use diesel::pg::{Pg, PgConnection};
use diesel::prelude::*;
use diesel::r2d2::{ConnectionManager, CustomizeConnection, ManageConnection, Pool};

use diesel_migrations::{embed_migrations, EmbeddedMigrations};

use confab_store_sql::door::{count_statements, unless_abandoned, Abandoned, LogErrors};
use confab_store_sql::error::Error;
use confab_store_sql::id::DbId;
use confab_store_sql::rows::{MessageRow, WholeRow};
use confab_store_sql::schema::{conversations, groups, messages};
use confab_store_sql::search_share::SearchShare;
use confab_store_sql::visible_to;
use confab_store_sql::{Pooled, SqlBackend};

const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");

/// Serializes `migrate` across processes (e.g. several servers starting at
/// once against one database).
const MIGRATION_LOCK_KEY: i64 = 0x636f_6e66_6162_0001;

/// How long a call waits for a pooled connection: well under the call's
/// deadline (`door::DEFAULT_DEADLINE`), so that a dead or saturated
/// database fails the request (503) instead of hanging it.
const CHECKOUT_TIMEOUT: Duration = Duration::from_millis(1000);
/// libpq's limits, added to the URL unless it sets them (see
/// [`with_client_timeouts`]): establishing a connection (seconds; libpq
/// treats less than 2 as 2), TCP keepalive on idle connections, and how long
/// sent data may stay unacknowledged (milliseconds) before the connection is
/// dropped (a lost network, a vanished host).
const CLIENT_TIMEOUTS: [(&str, &str); 6] = [
    ("connect_timeout", "2"),
    ("keepalives", "1"),
    ("keepalives_idle", "2"),
    ("keepalives_interval", "1"),
    ("keepalives_count", "2"),
    ("tcp_user_timeout", "2000"),
];
/// Set on each new connection: the server cancels a statement running
/// longer, and ends a session left idle inside a transaction (its client
/// gone astray), freeing their locks. A stalled server enforces neither:
/// the door's deadline covers that.
///
/// And every prepared statement runs its generic plan, planned once per
/// connection. The statements are written so that their plan does not
/// depend on the values (a page's conversation is a scalar subquery, a
/// cursor is found by primary key), so re-planning with the values buys
/// nothing; but PostgreSQL's own choice kept re-planning a first page on
/// every execution (a generic plan that does not know the `LIMIT` looked
/// dearer than a custom one), which halved its throughput
/// (`docs/performance.md`).
///
/// And no JIT compilation: a generic plan is costed for values it does
/// not know, and for a member of many groups (the inbox's range per
/// group) the estimate passed `jit_above_cost`, so every execution
/// compiled it first: 370 ms of JIT for a 10 ms statement, the inbox of a
/// member of 200 groups at 7 requests a second (`bench/groups.sh`).
/// Statements here read index ranges a request's size, never what JIT
/// pays off on.
const SESSION_SETTINGS: &str = "SET statement_timeout = '1500ms'; \
     SET idle_in_transaction_session_timeout = '2s'; \
     SET plan_cache_mode = force_generic_plan; \
     SET jit = off";
const MIN_IDLE: u32 = 2;
/// How long after a lost connection every checkout tests its connection.
const SUSPECT_FOR: Duration = Duration::from_secs(30);

/// The PostgreSQL store. Cloning is cheap: clones share one pool.
#[derive(Clone)]
pub struct PgStore {
    pool: Pool<Manager>,
    /// Until when (Unix milliseconds) checkouts test their connection: set
    /// when a statement lost its connection.
    suspect_until: Arc<AtomicU64>,
    /// SQL statements sent over all pooled connections (see
    /// [`PgStore::statements_run`]).
    statements: Arc<AtomicU64>,
    /// Where calls take turns, one per pooled connection (`door`).
    gate: confab_store_sql::door::Gate,
    /// How long a port call may take (see [`PgStore::with_deadline`]).
    deadline: Duration,
    /// The budget of the request this handle serves, if it was given one
    /// (`confab_ports::WithBudget`).
    budget: Option<confab_ports::DbBudget>,
    /// The hot calls' own connections, awaited on the HTTP workers
    /// (`pg_async`).
    conns: Arc<crate::pg_async::AsyncConns>,
    /// Searches' own connections (see [`PgStore::with_search_connections`]).
    search: SearchShare<Manager>,
}

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
    /// Checkouts are not tested (no `SELECT 1` per request). When a
    /// statement finds its connection gone (a PostgreSQL restart kills them
    /// all), that request fails (503) and, for a while, every checkout tests
    /// its connection and the pool replaces the dead ones: the next request
    /// succeeds, without a process restart.
    pub fn connect(database_url: &str) -> anyhow::Result<Self> {
        Self::connect_with(database_url, Self::default_pool_size())
    }

    /// The default size of the pool: twice the CPUs this process may use,
    /// plus one (the PostgreSQL wiki's starting point for a server's
    /// active connections). Each connection in use is a busy backend and
    /// a blocking thread of this process: on a machine shared with
    /// PostgreSQL, many more than its cores take turns at the CPU, and
    /// the turns show as latency (2 CPUs: p99 6.9 ms with 5 connections
    /// against 70 ms with 10, at 94 % of the throughput reading and more
    /// of it sending; `docs/performance.md`). Set it
    /// (`CONFAB_DB_POOL_SIZE`) for a database on a host of its own.
    pub fn default_pool_size() -> u32 {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        u32::try_from(cpus.saturating_mul(2).saturating_add(1)).unwrap_or(u32::MAX)
    }

    /// [`PgStore::connect`] with `pool_size` connections (at least 1):
    /// at most that many calls reach PostgreSQL at once, the others wait
    /// their turn at the gate (`door`).
    pub fn connect_with(database_url: &str, pool_size: u32) -> anyhow::Result<Self> {
        Self::open(database_url, pool_size, false)
    }

    /// [`PgStore::connect_with`] through a pooler in transaction mode
    /// (PgBouncer's `pool_mode = transaction`), which hands each
    /// transaction, or each statement outside one, to whichever server
    /// connection is free:
    /// - no named prepared statements: diesel's statement cache is off, so
    ///   each statement is sent with its parameters in one message
    ///   (libpq's `PQsendQueryParams`, the unnamed statement), and the
    ///   asynchronous connections of `pg_async` (whose statements are
    ///   named) are not used: every call takes the door;
    /// - no session settings: a `SET` would stay on a server connection
    ///   that the pooler then lends to other clients, and would not follow
    ///   this process's next statement. The operator sets them on the role
    ///   instead (`docs/deployment.md`, "Behind PgBouncer");
    /// - migrations run in one transaction under a transaction-scoped lock
    ///   ([`PgStore::migrate`], as without a pooler); LISTEN is not here
    ///   at all (`PgWakeups`, given a direct connection).
    pub fn connect_pooled(database_url: &str, pool_size: u32) -> anyhow::Result<Self> {
        Self::open(database_url, pool_size, true)
    }

    fn open(database_url: &str, pool_size: u32, pooled: bool) -> anyhow::Result<Self> {
        let pool_size = pool_size.max(1);
        let suspect_until = Arc::new(AtomicU64::new(0));
        let manager = Manager::new(database_url, suspect_until.clone());
        let statements = Arc::new(AtomicU64::new(0));
        let pool = Pool::builder()
            .max_size(pool_size)
            .min_idle(Some(MIN_IDLE.min(pool_size)))
            .connection_timeout(CHECKOUT_TIMEOUT)
            .test_on_check_out(true)
            .error_handler(Box::new(LogErrors("PostgreSQL")))
            .connection_customizer(Box::new(Setup {
                statements: statements.clone(),
                pooled,
                search: false,
            }))
            .build(manager)
            .context("cannot connect to PostgreSQL")?;
        let search = SearchShare::open(
            Manager::new(database_url, suspect_until.clone()),
            Box::new(Setup {
                statements: statements.clone(),
                pooled,
                search: true,
            }),
            CHECKOUT_TIMEOUT,
            true,
            "PostgreSQL",
        )
        .context("cannot set up PostgreSQL's connections for searches")?;
        let mut conns = crate::pg_async::AsyncConns::new(
            database_url,
            async_per_thread(pool_size),
            statements.clone(),
            SESSION_SETTINGS,
        );
        if pooled {
            conns = conns.off();
        }
        Ok(Self {
            pool,
            suspect_until,
            statements,
            gate: confab_store_sql::door::Gate::new(pool_size),
            deadline: confab_store_sql::door::DEFAULT_DEADLINE,
            budget: None,
            conns: Arc::new(conns),
            search,
        })
    }

    /// This store with `connections` searches at once (default: half the
    /// CPUs, at least 1), each on a connection of its own beside the pool,
    /// its statements cancelled after 1 s (`search::SEARCH_SESSION_SETTINGS`).
    #[must_use]
    pub fn with_search_connections(mut self, connections: u32) -> Self {
        self.search = self.search.with_connections(connections);
        self
    }

    /// This store with another deadline for each port call (default 1.8 s):
    /// past it the call answers `StoreError::Unavailable`, whatever the
    /// database does, and a write still running rolls back instead of
    /// committing.
    #[must_use]
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// How many SQL statements this store has sent since it was opened,
    /// pool health checks (only after a lost connection) included. Tests use
    /// it to show that a page costs a fixed number of queries however many
    /// items it holds.
    pub fn statements_run(&self) -> u64 {
        self.statements.load(Ordering::Relaxed)
    }

    /// The pool right now, for metrics.
    pub fn pool_state(&self) -> confab_ports::PoolState {
        confab_store_sql::door::pool_state(&self.pool, &self.gate)
    }
}

/// How many of the hot calls' connections each thread may use at once
/// (`pg_async`): the pool's size shared among the HTTP workers (actix runs
/// one per CPU), at least one. So the hot calls open about as many
/// connections as the diesel pool, and the store at most about twice its
/// size (`docs/deployment.md`).
fn async_per_thread(pool_size: u32) -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    (pool_size as usize).div_ceil(cpus).max(1)
}

impl PgStore {
    /// A message for its viewer (port `message_for`), on an asynchronous
    /// connection (`pg_async`).
    pub(crate) async fn read_message_for(
        &self,
        viewer: confab_domain::ContactId,
        id: confab_domain::MessageId,
    ) -> Result<Option<confab_domain::Message>, confab_ports::StoreError> {
        if !self.conns.enabled() {
            return self.door_message_for(viewer, id).await;
        }
        self.conns
            .run(self, |mut conn| async move {
                let query = crate::queries::message_for_query(viewer, id);
                let row = diesel_async::RunQueryDsl::get_result::<WholeRow>(query, &mut conn)
                    .await
                    .optional();
                (
                    Some(conn),
                    row.map_err(Error::from)
                        .and_then(crate::queries::message_of),
                )
            })
            .await
    }

    /// A send (port `append_message`). The usual one, a message with its
    /// lone `message.created` event, is one statement
    /// (`append_statement`) in a transaction of its own, on an
    /// asynchronous connection (`pg_async`): one round trip, no `BEGIN`
    /// or `COMMIT`. The statement itself decides, after all its writes,
    /// whether it commits (`confab_settle_send`): not once the time its
    /// caller waits for it is nearly up (on the server's clock,
    /// `AsyncConns::server_deadline`), so that a send that reached a
    /// stalled server, or waited on a row lock, past its deadline rolls
    /// back instead of committing after its caller was answered 503; and
    /// not if an idempotency key's claim went to another holder. Anything
    /// else (other events, no events) is the door's write.
    pub(crate) async fn write_append_message(
        &self,
        message: confab_ports::NewMessage,
        outbox: confab_ports::Outbox,
        completion: Option<confab_ports::Completion<confab_domain::Message>>,
    ) -> Result<confab_domain::Message, confab_ports::StoreError> {
        let event = crate::queries::lone_message_created(&outbox, &message)
            .filter(|_| self.conns.enabled());
        let Some(event) = event else {
            return self.door_append_message(message, outbox, completion).await;
        };
        let render = &*outbox.render;
        self.conns
            .run_until(self, |mut conn, until| async move {
                let deadline = self.conns.server_deadline(until);
                let statement = crate::queries::append_statement(
                    message,
                    (event, render),
                    completion,
                    deadline,
                );
                let (query, written, with_completion) = match statement {
                    Ok(statement) => statement,
                    Err(e) => return (Some(conn), Err(e)),
                };
                // All its rows, not the first (`get_result`): PostgreSQL
                // commits the statement's own transaction at the `Sync`
                // after it, once its row and `CommandComplete` are already
                // in its output buffer, so only `ReadyForQuery` says the
                // commit happened. A commit that fails sends an error
                // instead; a server killed in it (`pg_ctl -m immediate`,
                // a crash) flushes the row and hangs up. Either way the
                // send is not written.
                let sent =
                    diesel_async::RunQueryDsl::load::<crate::queries::Sent>(query, &mut conn)
                        .await
                        .and_then(|rows| {
                            rows.into_iter()
                                .next()
                                .ok_or(diesel::result::Error::NotFound)
                        })
                        .map_err(crate::queries::settle_error);
                if matches!(
                    sent,
                    Err(Error::Store(confab_ports::StoreError::Unavailable(_)))
                ) && self.conns.refused_early(until)
                {
                    // Refused for its deadline while its caller still had
                    // time: PostgreSQL's clock moved against ours since it
                    // was read. Read again for the next send.
                    tracing::warn!("PostgreSQL's clock moved: reading it again");
                    if self.conns.read_clock(&mut conn).await.is_err() {
                        return (None, sent.map(|_| written));
                    }
                }
                let outcome =
                    sent.and_then(|sent| crate::queries::append_outcome(sent, with_completion));
                (Some(conn), outcome.map(|()| written))
            })
            .await
    }

    /// A page of messages (port `list_messages`), a conversation's or the
    /// feed's, on an asynchronous connection (`pg_async`).
    pub(crate) async fn read_list_messages(
        &self,
        viewer: confab_domain::ContactId,
        list: confab_ports::MessageList,
        page: confab_domain::Page<confab_domain::MessageId>,
    ) -> Result<confab_domain::Paged<confab_domain::Message>, confab_ports::StoreError> {
        use confab_store_sql::rows::DbKey as _;
        if !self.conns.enabled() {
            return self.door_list_messages(viewer, list, page).await;
        }
        let (limit, fetch, cursor) = crate::queries::page_seek(&page);
        let backwards = matches!(cursor, Some((true, _)));
        let v = viewer.db();
        let rows = self
            .conns
            .run(self, |mut conn| async move {
                let rows = match crate::queries::list_page_query(v, list, cursor, fetch) {
                    Some(query) => {
                        diesel_async::RunQueryDsl::load::<WholeRow>(query, &mut conn).await
                    }
                    None => {
                        let query = crate::feed::feed_page_query(v, cursor, fetch);
                        diesel_async::RunQueryDsl::load::<WholeRow>(query, &mut conn).await
                    }
                };
                (Some(conn), rows.map_err(Error::from))
            })
            .await?;
        if rows.is_empty() {
            // Why it is empty: an invisible conversation, a cursor not in
            // the list, or nothing there.
            let cursor = cursor.map(|(_, id)| id);
            if let Some(query) = crate::queries::empty_page_query(v, list, cursor) {
                self.conns
                    .run(self, |mut conn| async move {
                        let answer =
                            diesel_async::RunQueryDsl::get_result::<(bool, bool)>(query, &mut conn)
                                .await
                                .map_err(Error::from)
                                .and_then(|answer| {
                                    crate::queries::explain_empty_page(list, answer)
                                });
                        (Some(conn), answer)
                    })
                    .await?;
            }
        }
        crate::queries::page_of(rows, limit, backwards).map_err(Error::into_store::<Self>)
    }
}

/// A handle on the same pool and connections whose calls share a
/// request's budget.
impl confab_ports::WithBudget for PgStore {
    fn with_budget(&self, budget: confab_ports::DbBudget) -> Self {
        Self {
            budget: Some(budget),
            ..self.clone()
        }
    }
}

impl SqlBackend for PgStore {
    type Db = Pg;
    type Conn = PgConnection;
    type Manager = Manager;

    const DATA_MODIFYING_WITH: bool = true;
    const LATERAL: bool = true;
    const EVENT_HORIZON_SQL: &'static str =
        "(pg_snapshot_xmin(pg_current_snapshot())::text::bigint * 1048576)";
    const EVENT_START_SQL: &'static str =
        "(pg_snapshot_xmin(pg_current_snapshot())::text::bigint * 1048576 - 1)";
    const TXN_FIRST_POSITION_SQL: &'static str = "(pg_current_xact_id()::text::bigint * 1048576)";
    const TXN_END_POSITION_SQL: &'static str =
        "((pg_current_xact_id()::text::bigint + 1) * 1048576)";

    /// `SELECT ... FOR UPDATE`.
    fn lock_message(
        conn: &mut PgConnection,
        id: DbId,
        viewer: DbId,
    ) -> QueryResult<Option<MessageRow>> {
        messages::table
            .find(id)
            .filter(
                messages::conversation_id.eq_any(
                    conversations::table
                        .filter(visible_to!(viewer))
                        .select(conversations::id),
                ),
            )
            .select(MessageRow::as_select())
            .for_update()
            .first(conn)
            .optional()
    }

    /// A merge of a few ordered index ranges on the messages' audience
    /// (the `message_audience` migration): the viewer's direct messages as
    /// creator, as peer, and, `LATERAL` per group the viewer belongs to now
    /// (live membership), that group's messages; each at most `fetch` rows
    /// past the cursor, then the first `fetch` of them in the order of
    /// travel. The cost follows the page and the viewer's groups, never
    /// the number of the viewer's conversations or their share of all
    /// messages.
    ///
    /// The cursor is resolved once, by primary key, NULL (no rows) unless
    /// the viewer sees it; each range starts at it as a row comparison
    /// with the index's `(created_at, id)`.
    fn feed_page(
        conn: &mut PgConnection,
        viewer: DbId,
        cursor: Option<(bool, DbId)>,
        fetch: i64,
    ) -> QueryResult<Vec<WholeRow>> {
        crate::feed::feed_page_query(viewer, cursor, fetch).load(conn)
    }

    /// `json_agg` of `json_build_array`s (both since 9.4), as text.
    fn json_rows(
        values: &str,
        (table, alias): (&str, &str),
        filter: &str,
        (order, _index): (&str, &str),
    ) -> String {
        format!(
            "(SELECT CAST(json_agg(json_build_array({values}) ORDER BY {order}) AS TEXT) \
             FROM {table} {alias} WHERE {filter})"
        )
    }

    fn json_set_key(doc: &str, key: &str, value: &str) -> String {
        format!(
            "CAST(jsonb_set(CAST({doc} AS jsonb), '{{{key}}}', CAST({value} AS jsonb)) AS TEXT)"
        )
    }

    fn json_ids(array: &str) -> String {
        format!("(SELECT CAST(value AS uuid) AS id FROM json_array_elements_text(CAST({array} AS json)))")
    }

    fn json_mark_deleted(doc: &str, key: &str, id: &str) -> String {
        format!(
            "CAST(jsonb_set(CAST({doc} AS jsonb), '{{{key}}}', COALESCE(( \
                 SELECT jsonb_agg(CASE WHEN x.e ->> 'id' = {id} \
                     THEN jsonb_build_object('id', x.e -> 'id', 'deleted', true) \
                     ELSE x.e END ORDER BY x.n) \
                 FROM jsonb_array_elements(CAST({doc} AS jsonb) -> '{key}') \
                     WITH ORDINALITY AS x(e, n)), '[]'::jsonb)) AS TEXT)"
        )
    }

    /// The function of migration `quote_function`, whose plan PostgreSQL
    /// keeps for the session, instead of a join in every page's plan, set
    /// up on every execution (and planned on every execution behind a
    /// pooler, where statements go unnamed).
    fn quoted_message(id: &str) -> String {
        format!("confab_quoted_message({id})")
    }

    fn search_recent(
        conn: &mut PgConnection,
        scope: &confab_store_sql::search::SearchScope,
    ) -> QueryResult<Vec<confab_store_sql::search::RecentRow>> {
        crate::search::recent(conn, scope)
    }

    fn search_indexed(
        conn: &mut PgConnection,
        scope: &confab_store_sql::search::SearchScope,
    ) -> QueryResult<Vec<confab_store_sql::search::Found>> {
        crate::search::indexed(conn, scope)
    }

    /// The transaction id, then the event's index in the transaction: the
    /// order in which transactions started, which readers turn into commit
    /// order by reading only below the oldest one still running (see the
    /// events migration). 2^20 events per transaction at most. The index
    /// counts on from the events this transaction already placed (one
    /// probe of the position index), so that a transaction may write
    /// events more than once (an erase: its deletions', then each group's).
    fn event_position(index: usize) -> Option<String> {
        Some(format!(
            "(SELECT COALESCE(MAX(placed.position) + 1, pg_current_xact_id()::text::bigint * 1048576) \
              FROM events placed \
              WHERE placed.position >= pg_current_xact_id()::text::bigint * 1048576 \
                AND placed.position < (pg_current_xact_id()::text::bigint + 1) * 1048576) + {index}"
        ))
    }

    fn lock_group(conn: &mut PgConnection, id: DbId) -> QueryResult<bool> {
        groups::table
            .find(id)
            .select(groups::id)
            .for_update()
            .first::<DbId>(conn)
            .optional()
            .map(|row| row.is_some())
    }

    fn is_unavailable(e: &diesel::result::Error) -> bool {
        use diesel::result::{DatabaseErrorKind, Error as E};
        match e {
            E::DatabaseError(DatabaseErrorKind::Unknown, info) => {
                let m = info.message();
                // The server is shutting down or restarting (SQLSTATE 57P01..3),
                // or a statement outran `statement_timeout` (57014): either
                // way it did not answer in time, and nothing was changed.
                m.contains("terminating connection")
                    || m.contains("the database system is")
                    || m.contains("server closed the connection")
                    || m.contains("canceling statement due to statement timeout")
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

    const GATED: bool = true;

    /// A one-statement write commits by itself (no `BEGIN`/`COMMIT` around
    /// it); concurrent writers wait on row locks, not on one queue.
    const QUEUED_WRITES: bool = false;

    fn gate(&self) -> &confab_store_sql::door::Gate {
        &self.gate
    }

    fn checkout(&self) -> Result<Pooled<Self>, Error> {
        confab_store_sql::door::counted_checkout(&self.pool, &self.gate).map_err(Error::Pool)
    }

    fn search_share(&self) -> &SearchShare<Manager> {
        &self.search
    }

    fn connection_lost(&self) {
        let until = unix_millis().saturating_add(SUSPECT_FOR.as_millis() as u64);
        self.suspect_until.fetch_max(until, Ordering::Relaxed);
        // The hot calls' connections were most likely lost with it.
        self.conns.drop_idle();
    }

    /// A read-committed transaction; the queries take the row locks they need.
    fn write_tx<T: Send + 'static>(
        &self,
        abandoned: &Abandoned,
        f: impl FnOnce(&mut PgConnection) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error> {
        let mut pooled = self.checkout()?;
        abandoned.check()?;
        let conn: &mut PgConnection = &mut pooled;
        conn.transaction(unless_abandoned(abandoned, f))
    }
}

/// diesel's connection manager, testing a connection on checkout only while
/// connections are suspect (see [`PgStore::connect`]); a failed test makes
/// the pool drop it and hand out another.
#[derive(Debug)]
pub struct Manager {
    inner: ConnectionManager<PgConnection>,
    suspect_until: Arc<AtomicU64>,
}

impl Manager {
    fn new(url: &str, suspect_until: Arc<AtomicU64>) -> Self {
        let inner = ConnectionManager::new(with_client_timeouts(url));
        Self {
            inner,
            suspect_until,
        }
    }
}

impl ManageConnection for Manager {
    type Connection = PgConnection;
    type Error = diesel::r2d2::Error;

    fn connect(&self) -> Result<PgConnection, Self::Error> {
        self.inner.connect()
    }

    fn is_valid(&self, conn: &mut PgConnection) -> Result<(), Self::Error> {
        if unix_millis() < self.suspect_until.load(Ordering::Relaxed) {
            self.inner.is_valid(conn)
        } else {
            Ok(())
        }
    }

    fn has_broken(&self, conn: &mut PgConnection) -> bool {
        self.inner.has_broken(conn)
    }
}

fn unix_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Sets up every pooled connection: the server-side limits
/// ([`SESSION_SETTINGS`], not counted), then the statement counter.
#[derive(Debug)]
struct Setup {
    statements: Arc<AtomicU64>,
    /// Behind a pooler in transaction mode ([`PgStore::connect_pooled`]).
    pooled: bool,
    /// Searches' own: their shorter statement timeout too.
    search: bool,
}

impl CustomizeConnection<PgConnection, diesel::r2d2::Error> for Setup {
    fn on_acquire(&self, conn: &mut PgConnection) -> Result<(), diesel::r2d2::Error> {
        if self.pooled {
            conn.set_prepared_statement_cache_size(CacheSize::Disabled);
        } else {
            conn.batch_execute(SESSION_SETTINGS)
                .map_err(diesel::r2d2::Error::QueryError)?;
            if self.search {
                conn.batch_execute(crate::search::SEARCH_SESSION_SETTINGS)
                    .map_err(diesel::r2d2::Error::QueryError)?;
            }
        }
        count_statements(conn, self.statements.clone());
        Ok(())
    }
}

/// Adds each of libpq's [`CLIENT_TIMEOUTS`] that the URL does not set, so
/// that an unreachable or vanished host cannot stall a connection for long.
fn with_client_timeouts(url: &str) -> String {
    let is_url = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let given: Vec<&str> = if is_url {
        url.split_once('?')
            .map(|(_, query)| query.split('&').collect())
            .unwrap_or_default()
    } else {
        url.split_whitespace().collect()
    };
    let is_set = |key: &str| {
        given
            .iter()
            .any(|param| param.split('=').next().map(str::trim) == Some(key))
    };
    let mut out = url.to_owned();
    for (key, value) in CLIENT_TIMEOUTS {
        if is_set(key) {
            continue;
        }
        if is_url {
            out.push(if out.contains('?') { '&' } else { '?' });
        } else {
            out.push(' ');
        }
        out.push_str(key);
        out.push('=');
        out.push_str(value);
    }
    out
}

mod migrate;

#[cfg(test)]
mod tests;
