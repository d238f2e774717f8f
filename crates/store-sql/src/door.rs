//! The one door to the database, generic over the backend: every port method
//! runs one query function through [`query`] or [`write`], on
//! tokio's blocking pool, in the caller's tracing span. The closure checks out
//! its pooled connection itself, so a connection never lives across an
//! `.await`. (PostgreSQL's hot calls, getting a message, a page and the
//! usual send, run the same statements on connections of the HTTP workers
//! instead, with the same deadline and budget: `pg_async`.)
//!
//! # Bounded waits
//!
//! Every call has a deadline ([`SqlBackend::deadline`], 1.8 s by default;
//! [`ping`] a shorter one). When it passes, the caller gets
//! `StoreError::Unavailable` (503) at once, whatever the database does: a
//! stalled server (stopped, swapping, behind a lost network) keeps its
//! sockets open and the kernel still acknowledges, so neither a server-side
//! `statement_timeout` nor TCP keepalive ends such a wait. The blocking
//! thread cannot be interrupted; it is left to finish on its own, and the
//! call is marked [`Abandoned`]: a call that has not started yet does
//! nothing, and a write checks the mark just before `COMMIT` and rolls back
//! instead, so that a request answered 503 changed nothing. The one
//! exception is a stall that begins while `COMMIT` itself is in flight
//! (`docs/reliability.md`).
//!
//! # The gate
//!
//! A call waits for its turn on the store's [`Gate`] (a fair, first-come
//! first-served semaphore with one permit per pooled connection) before it
//! takes a blocking thread, and holds the permit until that thread is done.
//! So no more calls reach the pool than it has connections: they never
//! queue inside r2d2's checkout, whose waiters wake in no particular order
//! (a long tail under load), and at most one blocking thread per connection
//! runs instead of one per request in flight. The wait for a permit counts
//! against the call's deadline like any other wait. The readiness probe
//! ([`ping`]) skips the gate: it must not queue behind a backlog of
//! requests to tell whether the database answers.
//!
//! Searches take their turns at a gate of their own, on connections of
//! their own ([`search`], `search_share`), on both stores: however many
//! searches run or wait, the pool and its gate stay for everything else.
//!
//! Only PostgreSQL's other calls take turns ([`SqlBackend::GATED`]). SQLite's
//! are short work in this process, for which the hand-off through the gate
//! (a wake of the async worker, then of a blocking thread, between one
//! call and the next on a connection) cost more than the order gained:
//! getting a message served 8,214 requests/s gated against 11,638 without
//! (`docs/performance.md`); its writers queue in order anyway (group commit).
//!
//! A request may make several calls (a token lookup, an idempotency claim,
//! the write). Made through a store handle that carries the request's
//! budget (`confab_ports::WithBudget`, [`SqlBackend::budget`]), they share
//! it: each call's deadline is the smaller of its own and what the request
//! has left, so the request as a whole never waits on the database longer
//! than the budget.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use confab_ports::{PoolState, StoreError};
use diesel::connection::{Connection, InstrumentationEvent};
use diesel::r2d2::{ManageConnection, Pool, PooledConnection};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::Error;
use crate::SqlBackend;

/// How long a port call may take in all (checkout, statements, commit)
/// before its caller is answered `Unavailable`, unless the store was given
/// another ([`SqlBackend::deadline`]). Under the contract's 2 s, with room
/// for the HTTP work around it.
pub const DEFAULT_DEADLINE: Duration = Duration::from_millis(1800);

/// The readiness probe's deadline: `/readyz` answers within 1 s.
pub const PING_DEADLINE: Duration = Duration::from_millis(800);

/// Set when the caller of a store call stopped waiting for it (its deadline
/// passed, or its request was dropped): what the blocking thread still does
/// must then change nothing.
#[derive(Debug, Clone, Default)]
pub struct Abandoned(Arc<AtomicBool>);

impl Abandoned {
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// Marks the caller gone, as its deadline would (the stores' tests).
    pub fn set(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// `Err` once the caller is gone: returned inside a transaction, it
    /// rolls the transaction back.
    pub fn check(&self) -> Result<(), Error> {
        if self.is_set() {
            Err(Error::Abandoned)
        } else {
            Ok(())
        }
    }
}

/// Marks the call abandoned when the waiting future ends, however it ends
/// (answered, timed out, or dropped with its request). After an answer the
/// mark is never read.
struct AbandonOnDrop(Abandoned);

impl Drop for AbandonOnDrop {
    fn drop(&mut self) {
        self.0 .0.store(true, Ordering::SeqCst);
    }
}

/// The deadline of a call of `store` that would take at most `own`: no
/// more than what its request has left, when the store handle carries the
/// request's budget ([`SqlBackend::budget`]).
pub fn budgeted<S: SqlBackend>(store: &S, own: Duration) -> Duration {
    store.budget().map_or(own, |budget| budget.limit(own))
}

/// Charges `spent` to the budget of the request `store` serves, if any.
pub fn charge<S: SqlBackend>(store: &S, spent: Duration) {
    if let Some(budget) = store.budget() {
        budget.charge(spent);
    }
}

/// Calls take turns here, first come first served, one per pooled
/// connection (see the module docs). Cloning shares it.
#[derive(Debug, Clone)]
pub struct Gate {
    permits: Arc<Semaphore>,
    /// Callers waiting for a permit or inside a pool checkout (the pool's
    /// waiters, for metrics).
    waiting: Arc<AtomicU32>,
}

impl Gate {
    /// A gate for a pool of `connections`.
    pub fn new(connections: u32) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(connections as usize)),
            waiting: Arc::default(),
        }
    }

    /// Waits for a turn, counted in `waiting` meanwhile (also when the
    /// wait is cancelled at the deadline).
    async fn turn(&self) -> Result<OwnedSemaphorePermit, StoreError> {
        let _waiting = Waiting::enter(&self.waiting);
        self.permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| StoreError::Other(Box::new(e)))
    }
}

/// Counts its holder in a waiting counter for as long as it lives.
struct Waiting<'a>(&'a AtomicU32);

impl<'a> Waiting<'a> {
    fn enter(counter: &'a AtomicU32) -> Self {
        counter.fetch_add(1, Ordering::Relaxed);
        Self(counter)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The deadline passed: the database did not answer in time.
#[derive(Debug, thiserror::Error)]
#[error("the database did not answer within {0:?}")]
pub struct TimedOut(Duration);

impl TimedOut {
    /// The deadline `deadline` passed (PostgreSQL's asynchronous calls).
    #[cfg(feature = "postgres")]
    pub fn after(deadline: Duration) -> Self {
        Self(deadline)
    }
}

/// Whether a call takes its turn at the store's [`Gate`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Turn {
    Gated,
    /// The readiness probe, and every call of a backend without a gate:
    /// straight to the pool.
    Ungated,
    /// A search: at the gate of searches' own share ([`search`]).
    Search,
}

impl Turn {
    /// A request's call to backend `S`.
    fn of<S: SqlBackend>() -> Self {
        if S::GATED {
            Turn::Gated
        } else {
            Turn::Ungated
        }
    }
}

async fn call<S, T, F>(store: &S, deadline: Duration, turn: Turn, f: F) -> Result<T, StoreError>
where
    S: SqlBackend,
    T: Send + 'static,
    F: FnOnce(&S, &Abandoned) -> Result<T, Error> + Send + 'static,
{
    let deadline = budgeted(store, deadline);
    if deadline.is_zero() {
        // The request already spent its budget on earlier calls.
        return Err(StoreError::Unavailable(Box::new(TimedOut(deadline))));
    }
    let started = Instant::now();
    let store_for_charge = store.clone();
    let store = store.clone();
    let span = tracing::Span::current();
    let abandoned = Abandoned::default();
    let _mark = AbandonOnDrop(abandoned.clone());
    let (gate, threads) = match turn {
        Turn::Search => {
            let share = store.search_share();
            (share.gate().clone(), share.threads().cloned())
        }
        Turn::Gated | Turn::Ungated => (store.gate().clone(), None),
    };
    let task = async move {
        let permit = match turn {
            Turn::Gated | Turn::Search => Some(gate.turn().await?),
            Turn::Ungated => None,
        };
        let work = move || {
            // Held until this thread is done with its connection, also when
            // the caller stopped waiting before.
            let _permit = permit;
            span.in_scope(|| {
                // The caller may have given up while this waited for a thread.
                abandoned.check()?;
                let result = f(&store, &abandoned);
                if let Err(e) = &result {
                    if e.is_connection_lost::<S>() {
                        store.connection_lost();
                    }
                }
                result
            })
        };
        match threads {
            // A search on its share's own threads (SQLite).
            Some(threads) => threads.run(work).await,
            None => tokio::task::spawn_blocking(work)
                .await
                .map_err(|e| StoreError::Other(Box::new(e))),
        }
    };
    let outcome = tokio::time::timeout(deadline, task).await;
    charge(&store_for_charge, started.elapsed());
    match outcome {
        Ok(joined) => joined?.map_err(Error::into_store::<S>),
        Err(_) => {
            tracing::warn!(?deadline, "the database did not answer in time");
            Err(StoreError::Unavailable(Box::new(TimedOut(deadline))))
        }
    }
}

/// A single statement, no transaction.
pub async fn query<S, T, F>(store: &S, f: F) -> Result<T, StoreError>
where
    S: SqlBackend,
    T: Send + 'static,
    F: FnOnce(&mut S::Conn) -> Result<T, Error> + Send + 'static,
{
    query_within(store, store.deadline(), Turn::of::<S>(), f).await
}

/// The readiness probe: [`query`] with the probe's own, shorter deadline.
pub async fn ping<S, T, F>(store: &S, f: F) -> Result<T, StoreError>
where
    S: SqlBackend,
    T: Send + 'static,
    F: FnOnce(&mut S::Conn) -> Result<T, Error> + Send + 'static,
{
    query_within(store, PING_DEADLINE.min(store.deadline()), Turn::Ungated, f).await
}

async fn query_within<S, T, F>(
    store: &S,
    deadline: Duration,
    turn: Turn,
    f: F,
) -> Result<T, StoreError>
where
    S: SqlBackend,
    T: Send + 'static,
    F: FnOnce(&mut S::Conn) -> Result<T, Error> + Send + 'static,
{
    call(store, deadline, turn, move |store, abandoned| {
        let mut conn = store.checkout()?;
        // The checkout may have taken the caller's whole deadline.
        abandoned.check()?;
        f(&mut conn)
    })
    .await
}

/// A search: [`query`] within searches' own share of the database
/// ([`SqlBackend::search_share`]), on backends with and without a gate
/// alike. It waits for its turn there, counted against its deadline like
/// any other wait, and runs on a connection of the share: however many
/// searches run or wait, the pool and its gate stay for everything else.
pub async fn search<S, T, F>(store: &S, f: F) -> Result<T, StoreError>
where
    S: SqlBackend,
    T: Send + 'static,
    F: FnOnce(&mut S::Conn) -> Result<T, Error> + Send + 'static,
{
    call(
        store,
        store.deadline(),
        Turn::Search,
        move |store, abandoned| {
            let mut conn = store.search_share().checkout()?;
            abandoned.check()?;
            f(&mut conn)
        },
    )
    .await
}

/// A unit of work that writes: it commits entirely or not at all, and not
/// at all once its caller stopped waiting (see the module docs).
pub async fn write<S, T, F>(store: &S, f: F) -> Result<T, StoreError>
where
    S: SqlBackend,
    T: Send + 'static,
    F: FnOnce(&mut S::Conn) -> Result<T, Error> + Send + 'static,
{
    call(
        store,
        store.deadline(),
        Turn::of::<S>(),
        move |store, abandoned| store.write_tx(abandoned, f),
    )
    .await
}

/// A write that is whole on its own (one statement, or a transaction `f`
/// opens itself): on PostgreSQL it runs as [`query`] does (no transaction
/// around it), on SQLite it queues with the other writers as [`write`]
/// does, so that it never waits for the database's lock in the busy
/// handler (see [`SqlBackend::QUEUED_WRITES`]).
pub async fn write_alone<S, T, F>(store: &S, f: F) -> Result<T, StoreError>
where
    S: SqlBackend,
    T: Send + 'static,
    F: FnOnce(&mut S::Conn) -> Result<T, Error> + Send + 'static,
{
    if S::QUEUED_WRITES {
        write(store, f).await
    } else {
        query(store, f).await
    }
}

/// Makes `conn` count every statement it sends into `counter` (the store's
/// `statements_run`). Called once per pooled connection.
pub fn count_statements(conn: &mut impl Connection, counter: Arc<AtomicU64>) {
    conn.set_instrumentation(move |event: InstrumentationEvent<'_>| {
        if matches!(event, InstrumentationEvent::StartQuery { .. }) {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    });
}

/// Sends the pool's connection errors to the log (r2d2 would use `log`).
#[derive(Debug)]
pub struct LogErrors(pub &'static str);

impl diesel::r2d2::HandleError<diesel::r2d2::Error> for LogErrors {
    fn handle_error(&self, error: diesel::r2d2::Error) {
        tracing::warn!(%error, "{} connection error", self.0);
    }
}

/// A pooled connection, counting the caller in the gate's waiters meanwhile
/// (for metrics).
pub fn counted_checkout<M: ManageConnection>(
    pool: &Pool<M>,
    gate: &Gate,
) -> Result<PooledConnection<M>, diesel::r2d2::PoolError> {
    let _waiting = Waiting::enter(&gate.waiting);
    pool.get()
}

/// The pool right now, for metrics. `waiting` counts the callers waiting
/// for their turn at the gate or inside a checkout (waiting for a
/// connection or just taking one).
pub fn pool_state<M: ManageConnection>(pool: &Pool<M>, gate: &Gate) -> PoolState {
    let waiting = &gate.waiting;
    let state = pool.state();
    PoolState {
        max_size: pool.max_size(),
        connections: state.connections,
        idle: state.idle_connections,
        waiting: waiting.load(Ordering::Relaxed),
    }
}

/// `f`, then a last look at `abandoned`, for a write transaction's body: an
/// `Err` makes the transaction roll back instead of committing a change
/// whose request was already answered.
pub fn unless_abandoned<'a, C, T>(
    abandoned: &'a Abandoned,
    f: impl FnOnce(&mut C) -> Result<T, Error> + 'a,
) -> impl FnOnce(&mut C) -> Result<T, Error> + 'a {
    move |conn| {
        let value = f(conn)?;
        abandoned.check()?;
        Ok(value)
    }
}
