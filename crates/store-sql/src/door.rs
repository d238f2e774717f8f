//! The one door to the database, generic over the backend: every port method
//! runs one query function through [`query`] or [`write`], on
//! tokio's blocking pool, in the caller's tracing span. The closure checks out
//! its pooled connection itself, so a connection never lives across an
//! `.await`.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use confab_ports::{PoolState, StoreError};
use diesel::connection::{Connection, InstrumentationEvent};
use diesel::r2d2::{ManageConnection, Pool, PooledConnection};

use crate::error::Error;
use crate::SqlBackend;

async fn call<S, T, F>(store: &S, f: F) -> Result<T, StoreError>
where
    S: SqlBackend,
    T: Send + 'static,
    F: FnOnce(&S) -> Result<T, Error> + Send + 'static,
{
    let store = store.clone();
    let span = tracing::Span::current();
    tokio::task::spawn_blocking(move || {
        span.in_scope(|| {
            let result = f(&store);
            if let Err(e) = &result {
                if e.is_connection_lost::<S>() {
                    store.connection_lost();
                }
            }
            result
        })
    })
    .await
    .map_err(|e| StoreError::Other(Box::new(e)))?
    .map_err(Error::into_store::<S>)
}

/// A single statement, no transaction.
pub(crate) async fn query<S, T, F>(store: &S, f: F) -> Result<T, StoreError>
where
    S: SqlBackend,
    T: Send + 'static,
    F: FnOnce(&mut S::Conn) -> Result<T, Error> + Send + 'static,
{
    call(store, move |store| {
        let mut conn = store.checkout()?;
        f(&mut conn)
    })
    .await
}

/// A unit of work that writes: it commits entirely or not at all.
pub(crate) async fn write<S, T, F>(store: &S, f: F) -> Result<T, StoreError>
where
    S: SqlBackend,
    T: Send + 'static,
    F: FnOnce(&mut S::Conn) -> Result<T, Error> + Send + 'static,
{
    call(store, move |store| store.write_tx(f)).await
}

/// Makes `conn` count every statement it sends into `counter` (the store's
/// `statements_run`). Called once per pooled connection.
pub(crate) fn count_statements(conn: &mut impl Connection, counter: Arc<AtomicU64>) {
    conn.set_instrumentation(move |event: InstrumentationEvent<'_>| {
        if matches!(event, InstrumentationEvent::StartQuery { .. }) {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    });
}

/// Sends the pool's connection errors to the log (r2d2 would use `log`).
#[derive(Debug)]
pub(crate) struct LogErrors(pub(crate) &'static str);

impl diesel::r2d2::HandleError<diesel::r2d2::Error> for LogErrors {
    fn handle_error(&self, error: diesel::r2d2::Error) {
        tracing::warn!(%error, "{} connection error", self.0);
    }
}

/// A pooled connection, counting the caller in `waiting` meanwhile (the
/// pool's waiters, for metrics).
pub(crate) fn counted_checkout<M: ManageConnection>(
    pool: &Pool<M>,
    waiting: &AtomicU32,
) -> Result<PooledConnection<M>, diesel::r2d2::PoolError> {
    waiting.fetch_add(1, Ordering::Relaxed);
    let pooled = pool.get();
    waiting.fetch_sub(1, Ordering::Relaxed);
    pooled
}

/// The pool right now, for metrics. `waiting` counts the callers inside a
/// checkout (waiting for a connection or just taking one).
pub(crate) fn pool_state<M: ManageConnection>(pool: &Pool<M>, waiting: &AtomicU32) -> PoolState {
    let state = pool.state();
    PoolState {
        max_size: pool.max_size(),
        connections: state.connections,
        idle: state.idle_connections,
        waiting: waiting.load(Ordering::Relaxed),
    }
}
