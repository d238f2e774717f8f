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
//! meanwhile, and reads the answer when the socket has it. A send's
//! `BEGIN` goes in the same round trip as its statement (pipelined), its
//! `COMMIT` once the answer is in (`PgStore::write_append_message`).
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
//! budget (`door::within_db_budget`): past it the caller is answered
//! `Unavailable` and the call is dropped with its connection, which is
//! closed: a read leaves nothing behind, and a send's transaction, whose
//! `COMMIT` was not sent yet, rolls back. A statement that finds its
//! connection gone (a PostgreSQL restart ends them all) fails its request
//! (503), and so does one on the diesel pool's connections: either closes
//! every idle connection here, of every thread, and marks the diesel pool
//! suspect (`PgStore::connection_lost`), so that the next request opens a
//! fresh one. Connections are never tested before use (no `SELECT 1`).

use std::future::Future;
use std::str::FromStr as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use confab_ports::StoreError;
use diesel::connection::InstrumentationEvent;
use diesel_async::{AsyncConnection as _, AsyncPgConnection, SimpleAsyncConnection as _};
use thread_local::ThreadLocal;
use tokio::sync::Semaphore;
use tokio_postgres::{Config, NoTls};

use crate::door::{budgeted, charge, TimedOut};
use crate::error::Error;
use crate::SqlBackend;

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
}

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
        }
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
        let deadline = budgeted(store.deadline());
        if deadline.is_zero() {
            return Err(StoreError::Unavailable(Box::new(TimedOut::after(deadline))));
        }
        let started = Instant::now();
        let outcome = tokio::time::timeout(deadline, self.run_now(store, read)).await;
        charge(started.elapsed());
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
