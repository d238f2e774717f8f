//! PostgreSQL's hot calls (getting a message, a page of messages, the usual
//! send), awaited on the HTTP worker that makes them instead of handed to a
//! blocking thread.
//!
//! Every other call goes through the door (`door`): a blocking thread of
//! tokio's pool takes a pooled diesel connection, runs the statements and
//! hands the result back. For a call of one statement that is two
//! hand-offs between threads around one round trip to PostgreSQL, and on a
//! machine whose cores PostgreSQL shares, the hand-offs cost as much CPU as
//! the HTTP work of the request (`docs/performance.md`). Here the same
//! diesel statement, built by the same query function, is sent over an
//! asynchronous connection (diesel-async over tokio-postgres) and awaited
//! where the request runs: the worker sends it, serves other requests
//! meanwhile, and reads the answer when the socket has it. A send is one
//! statement in a transaction of its own, which settles itself
//! (`PgStore::write_append_message`). PostgreSQL commits such a
//! transaction at the `Sync` after the statement's row, so a write here
//! reads its answer to `ReadyForQuery` (`load`), never just its first row
//! (`get_result`, fine for a read): a row that comes before the commit
//! says nothing about it (docs/reliability.md).
//!
//! # Connections per thread
//!
//! An asynchronous connection's socket is polled by a task on the runtime
//! that opened it. So that a worker never waits on another thread's task,
//! each thread keeps its own connections ([`Slot`]): at most
//! [`AsyncConns::per_thread`] in use at once (callers beyond wait their turn,
//! first come first served), opened on first need and kept idle between
//! uses. actix's workers each run their own single-threaded runtime, so a
//! request's task stays on its worker and meets only that worker's
//! connections.
//!
//! # Bounded waits, lost connections
//!
//! A call has the deadline of every store call and shares its request's
//! budget (`door::budgeted`): past it the caller is answered
//! `Unavailable` and the call is dropped with its connection, which is
//! closed: a read leaves nothing behind, and a send's statement, told its
//! deadline on the server's clock ([`AsyncConns::server_deadline`]), rolls
//! itself back once past it instead of committing. A statement that finds its
//! connection gone (a PostgreSQL restart ends them all) fails its request
//! (503), and so does one on the diesel pool's connections: either closes
//! every idle connection here, of every thread, and marks the diesel pool
//! suspect (`PgStore::connection_lost`), so that the next request opens a
//! fresh one. Connections are never tested before use (no `SELECT 1`).

use std::future::Future;
use std::str::FromStr as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use confab_ports::StoreError;
use diesel::connection::InstrumentationEvent;
use diesel_async::{AsyncConnection as _, AsyncPgConnection, SimpleAsyncConnection as _};
use thread_local::ThreadLocal;
use tokio::sync::Semaphore;
use tokio_postgres::{Config, NoTls};

use confab_store_sql::door::{budgeted, charge, TimedOut};
use confab_store_sql::error::Error;
use confab_store_sql::SqlBackend;

/// The asynchronous connections of one store, per thread.
pub(crate) struct AsyncConns {
    /// Where to connect; `None` when tokio-postgres does not read the
    /// store's URL (a libpq-only option): then every call takes the door.
    config: Option<Config>,
    slots: ThreadLocal<Slot>,
    per_thread: usize,
    /// The store's statement counter (`PgStore::statements_run`).
    statements: Arc<AtomicU64>,
    /// Statements run on connect, as on the diesel pool's connections.
    session_settings: &'static str,
    /// PostgreSQL's clock, as read on connect ([`AsyncConns::read_clock`]):
    /// microseconds since the Unix epoch there when `anchor` was now here.
    /// A send tells the server its deadline on the server's clock
    /// ([`AsyncConns::server_deadline`]); the two machines' wall clocks
    /// need not agree.
    server_clock_at_anchor: AtomicI64,
    anchor: Instant,
}

/// How much before its caller gives up a send's statement must be done
/// writing to commit (`confab_settle_send`): room for its commit and
/// answer, so that a send that commits is one its caller waited for. At
/// most a quarter of the time the call has.
const SETTLE_MARGIN: Duration = Duration::from_millis(250);

/// One thread's connections.
struct Slot {
    turns: Semaphore,
    idle: Mutex<Vec<AsyncPgConnection>>,
}

impl std::fmt::Debug for AsyncConns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncConns")
            .field("enabled", &self.config.is_some())
            .field("per_thread", &self.per_thread)
            .finish_non_exhaustive()
    }
}

/// How long opening a connection may take (as the LISTEN connection's).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

impl AsyncConns {
    /// Connections to `database_url`, at most `per_thread` in use per
    /// thread, counting their statements into `statements`.
    pub(crate) fn new(
        database_url: &str,
        per_thread: usize,
        statements: Arc<AtomicU64>,
        session_settings: &'static str,
    ) -> Self {
        let config = match Config::from_str(database_url) {
            Ok(mut config) => {
                // As the diesel pool's (`CLIENT_TIMEOUTS`), unless the URL
                // says otherwise: an unreachable or vanished host cannot
                // stall a connection for long.
                if config.get_connect_timeout().is_none() {
                    config.connect_timeout(CONNECT_TIMEOUT);
                }
                if config.get_tcp_user_timeout().is_none() {
                    config.tcp_user_timeout(Duration::from_secs(2));
                }
                config
                    .keepalives(true)
                    .keepalives_idle(Duration::from_secs(2))
                    .keepalives_interval(Duration::from_secs(1))
                    .keepalives_retries(2);
                Some(config)
            }
            Err(error) => {
                tracing::warn!(
                    %error,
                    "every PostgreSQL call takes a blocking thread: tokio-postgres does not read the URL"
                );
                None
            }
        };
        Self {
            config,
            slots: ThreadLocal::new(),
            per_thread: per_thread.max(1),
            statements,
            session_settings,
            server_clock_at_anchor: AtomicI64::new(i64::MIN),
            anchor: Instant::now(),
        }
    }

    /// None of these: every call takes the door (behind a pooler in
    /// transaction mode, whose server connections cannot keep the named
    /// statements that diesel-async prepares).
    pub(crate) fn off(mut self) -> Self {
        self.config = None;
        self
    }

    /// The time on PostgreSQL's clock (microseconds since the Unix epoch)
    /// by which a send's statement given up on at `until` here must be done
    /// to commit: [`SETTLE_MARGIN`] before it. Without a reading of the
    /// server's clock yet (none taken: no connection was opened), none.
    pub(crate) fn server_deadline(&self, until: Instant) -> i64 {
        let at_anchor = self.server_clock_at_anchor.load(Ordering::Relaxed);
        if at_anchor == i64::MIN {
            return i64::MAX;
        }
        let left = until.saturating_duration_since(Instant::now());
        let by = until
            .checked_sub(SETTLE_MARGIN.min(left / 4))
            .unwrap_or(until);
        at_anchor.saturating_add(micros(by.saturating_duration_since(self.anchor)))
    }

    /// Whether a send refused for its deadline (`confab_settle_send`) was
    /// refused early by this machine's reckoning (its caller had time
    /// left): the server's clock moved against ours since it was read.
    pub(crate) fn refused_early(&self, until: Instant) -> bool {
        until.saturating_duration_since(Instant::now()) > SETTLE_MARGIN / 2
    }

    /// Reads PostgreSQL's clock on `conn` (one round trip), anchored at
    /// the middle of the round trip here.
    pub(crate) async fn read_clock(
        &self,
        conn: &mut AsyncPgConnection,
    ) -> Result<(), diesel::result::Error> {
        let query = diesel::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(
            "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)",
        ));
        let asked = Instant::now();
        let server = diesel_async::RunQueryDsl::get_result::<i64>(query, conn).await?;
        let answered = Instant::now();
        let middle = asked + (answered - asked) / 2;
        let at_anchor =
            server.saturating_sub(micros(middle.saturating_duration_since(self.anchor)));
        self.server_clock_at_anchor
            .store(at_anchor, Ordering::Relaxed);
        Ok(())
    }

    /// Whether calls run here (else through the door).
    pub(crate) fn enabled(&self) -> bool {
        self.config.is_some()
    }

    /// Runs `read` (a read or a send) on one of this thread's connections, within the call's
    /// deadline. `read` hands the connection back with its outcome, or
    /// `None` to have it closed (its state unknown: a transaction that
    /// neither committed nor rolled back).
    pub(crate) async fn run<S, T, F, Fut>(&self, store: &S, read: F) -> Result<T, StoreError>
    where
        S: SqlBackend,
        F: FnOnce(AsyncPgConnection) -> Fut,
        Fut: Future<Output = (Option<AsyncPgConnection>, Result<T, Error>)>,
    {
        self.run_until(store, |conn, _| read(conn)).await
    }

    /// As [`AsyncConns::run`], telling `call` when its caller gives up.
    pub(crate) async fn run_until<S, T, F, Fut>(&self, store: &S, call: F) -> Result<T, StoreError>
    where
        S: SqlBackend,
        F: FnOnce(AsyncPgConnection, Instant) -> Fut,
        Fut: Future<Output = (Option<AsyncPgConnection>, Result<T, Error>)>,
    {
        let deadline = budgeted(store, store.deadline());
        if deadline.is_zero() {
            return Err(StoreError::Unavailable(Box::new(TimedOut::after(deadline))));
        }
        let started = Instant::now();
        let until = started + deadline;
        let outcome =
            tokio::time::timeout(deadline, self.run_now(store, |conn| call(conn, until))).await;
        charge(store, started.elapsed());
        match outcome {
            Ok(result) => result,
            Err(_) => {
                tracing::warn!(?deadline, "the database did not answer in time");
                Err(StoreError::Unavailable(Box::new(TimedOut::after(deadline))))
            }
        }
    }

    async fn run_now<S, T, F, Fut>(&self, store: &S, read: F) -> Result<T, StoreError>
    where
        S: SqlBackend,
        F: FnOnce(AsyncPgConnection) -> Fut,
        Fut: Future<Output = (Option<AsyncPgConnection>, Result<T, Error>)>,
    {
        let slot = self.slots.get_or(|| Slot {
            turns: Semaphore::new(self.per_thread),
            idle: Mutex::new(Vec::new()),
        });
        let _turn = slot
            .turns
            .acquire()
            .await
            .map_err(|e| StoreError::Other(Box::new(e)))?;
        let idle = slot.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = match idle {
            Some(conn) => conn,
            None => self.connect().await?,
        };
        let (conn, result) = read(conn).await;
        match (&result, conn) {
            (Err(e), _) if e.is_connection_lost::<S>() => {
                // Marks the diesel pool suspect and closes the idle
                // connections here (`PgStore::connection_lost`).
                store.connection_lost();
            }
            (_, Some(conn)) => slot
                .idle
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(conn),
            (_, None) => {}
        }
        result.map_err(Error::into_store::<S>)
    }

    /// A new connection, set up as the diesel pool's are.
    async fn connect(&self) -> Result<AsyncPgConnection, StoreError> {
        let Some(config) = &self.config else {
            return Err(StoreError::Other("asynchronous connections are off".into()));
        };
        let unavailable = |e: Box<dyn std::error::Error + Send + Sync>| {
            tracing::warn!(error = %e, "PostgreSQL connection error");
            StoreError::Unavailable(e)
        };
        let (client, connection) = config
            .connect(NoTls)
            .await
            .map_err(|e| unavailable(Box::new(e)))?;
        let mut conn = AsyncPgConnection::try_from_client_and_connection(client, connection)
            .await
            .map_err(|e| unavailable(Box::new(e)))?;
        conn.batch_execute(self.session_settings)
            .await
            .map_err(|e| unavailable(Box::new(e)))?;
        self.read_clock(&mut conn)
            .await
            .map_err(|e| unavailable(Box::new(e)))?;
        let counter = self.statements.clone();
        conn.set_instrumentation(move |event: InstrumentationEvent<'_>| {
            if matches!(event, InstrumentationEvent::StartQuery { .. }) {
                counter.fetch_add(1, Ordering::Relaxed);
            }
        });
        Ok(conn)
    }

    /// Closes every idle connection of every thread: after one was found
    /// lost, the others most likely are too.
    pub(crate) fn drop_idle(&self) {
        for slot in self.slots.iter() {
            slot.idle.lock().unwrap_or_else(|p| p.into_inner()).clear();
        }
    }
}

/// `d` in whole microseconds, saturating.
fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conns() -> AsyncConns {
        AsyncConns::new(
            "postgres://nobody@127.0.0.1:1/none",
            1,
            Arc::new(AtomicU64::new(0)),
            "",
        )
    }

    #[test]
    fn without_a_reading_of_the_servers_clock_a_send_has_no_deadline_there() {
        let conns = conns();
        let until = Instant::now() + Duration::from_secs(1);
        assert_eq!(conns.server_deadline(until), i64::MAX);
    }

    #[test]
    fn a_sends_deadline_on_the_servers_clock_is_its_callers_less_the_margin() {
        let conns = conns();
        // The server's clock reads 5 s (in microseconds) at the anchor:
        // whatever ours says, the deadline is counted from there.
        let server_at_anchor = 5_000_000;
        conns
            .server_clock_at_anchor
            .store(server_at_anchor, Ordering::Relaxed);
        let until = conns.anchor + Duration::from_secs(3);
        // Plenty of time left: the whole margin.
        let expected = server_at_anchor + micros(Duration::from_secs(3) - SETTLE_MARGIN);
        let got = conns.server_deadline(until);
        assert_eq!(got, expected);

        // Little time left: a quarter of it.
        let until = Instant::now() + Duration::from_millis(100);
        let got = conns.server_deadline(until);
        let to_until = server_at_anchor + micros(until - conns.anchor);
        let margin = to_until - got;
        assert!(
            (24_000..=25_000).contains(&margin),
            "a quarter of the 100 ms left, not {margin} us"
        );

        // Past its time: the caller's own moment, never later.
        let until = conns.anchor;
        assert_eq!(conns.server_deadline(until), server_at_anchor);
    }

    #[test]
    fn a_refusal_with_time_left_means_the_servers_clock_moved() {
        let conns = conns();
        assert!(conns.refused_early(Instant::now() + Duration::from_secs(1)));
        assert!(!conns.refused_early(Instant::now() + Duration::from_millis(50)));
        assert!(!conns.refused_early(Instant::now()));
    }
}
