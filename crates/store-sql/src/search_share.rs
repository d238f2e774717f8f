//! Searches' own share of the database ([`crate::door::search`]): at most
//! as many run at once as the share allows, each on a connection of its
//! own, taking turns first come first served. The pool's connections stay
//! for sends and reads, however many searches wait: a search may read
//! everything its caller can see, and enough of them at once took every
//! connection (PostgreSQL) or every core (SQLite) from everyone else.
//!
//! Where a search's work is this process's own (SQLite), it may also run
//! on threads of its own ([`SearchShare::on_own_threads`]), which the
//! store sets up to yield the CPU to every other thread.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};

use confab_ports::StoreError;
use std::time::Duration;

use diesel::r2d2::{CustomizeConnection, HandleError, ManageConnection, Pool, PooledConnection};

use crate::door::{counted_checkout, Gate, LogErrors};
use crate::error::Error;

/// The most searches that may run at once (`CONFAB_SEARCH_CONNECTIONS`
/// from 1 to this): the size of a share's own pool, of which only as many
/// connections open as searches run at once.
pub const MAX_SEARCH_CONNECTIONS: u32 = 1000;

/// How many searches run at once unless the operator says
/// (`CONFAB_SEARCH_CONNECTIONS`): half the CPUs this process may use, at
/// least one, so that the other half always serves everything else.
pub fn default_search_connections() -> u32 {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    u32::try_from(cpus / 2).unwrap_or(u32::MAX).max(1)
}

/// Searches' own share of the database (see the module docs).
pub struct SearchShare<M: ManageConnection> {
    pool: Pool<M>,
    connections: u32,
    gate: Gate,
    /// Runs each search's blocking work when set (else tokio's blocking
    /// pool), with the set-up it was started with.
    threads: Option<(Arc<SearchThreads>, fn())>,
}

impl<M: ManageConnection> Clone for SearchShare<M> {
    fn clone(&self) -> Self {
        Self {
            pool: self.pool.clone(),
            connections: self.connections,
            gate: self.gate.clone(),
            threads: self.threads.clone(),
        }
    }
}

impl<M: ManageConnection> SearchShare<M> {
    /// `connections` searches at once (at least 1), on connections of
    /// `pool`: its own, opened as needed (no more are ever open than run
    /// at once), or, for an in-memory SQLite database, which lives in its
    /// one connection, the store's.
    pub fn new(pool: Pool<M>, connections: u32) -> Self {
        let connections = connections.max(1);
        Self {
            pool,
            connections,
            gate: Gate::new(connections),
            threads: None,
        }
    }

    /// A share with a pool of its own, of `manager`'s connections, each
    /// set up by `setup` when it opens, opened only as searches need them
    /// (at most [`MAX_SEARCH_CONNECTIONS`]); a checkout waits at most
    /// `checkout_timeout`, and tests its connection when `test`; errors go
    /// to the log under `label`. [`default_search_connections`] searches
    /// at once.
    /// # Errors
    /// When the pool cannot be built.
    pub fn open(
        manager: M,
        setup: Box<dyn CustomizeConnection<M::Connection, M::Error>>,
        checkout_timeout: Duration,
        test: bool,
        label: &'static str,
    ) -> Result<Self, diesel::r2d2::PoolError>
    where
        LogErrors: HandleError<M::Error>,
    {
        let pool = Pool::builder()
            .max_size(MAX_SEARCH_CONNECTIONS)
            .min_idle(Some(0))
            .connection_timeout(checkout_timeout)
            .test_on_check_out(test)
            .error_handler(Box::new(LogErrors(label)))
            .connection_customizer(setup)
            .build(manager)?;
        Ok(Self::new(pool, default_search_connections()))
    }

    /// This share with its searches run on threads of its own, one per
    /// search at once, each set up by `setup` when it starts (SQLite: a
    /// lower scheduling priority). If the threads cannot be started, the
    /// searches run on tokio's blocking pool as other calls do.
    #[must_use]
    pub fn on_own_threads(mut self, setup: fn()) -> Self {
        self.threads = match SearchThreads::start(self.connections, setup) {
            Ok(threads) => Some((Arc::new(threads), setup)),
            Err(error) => {
                tracing::warn!(%error, "cannot start the search threads: searches share the blocking pool");
                None
            }
        };
        self
    }

    /// The same connections, `connections` searches at once (on as many
    /// threads of its own, when it has them).
    #[must_use]
    pub fn with_connections(&self, connections: u32) -> Self {
        let share = Self::new(self.pool.clone(), connections);
        match self.threads {
            Some((_, setup)) => share.on_own_threads(setup),
            None => share,
        }
    }

    /// Where searches take turns.
    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// A connection of the share.
    pub fn checkout(&self) -> Result<PooledConnection<M>, Error> {
        counted_checkout(&self.pool, &self.gate).map_err(Error::Pool)
    }

    /// The threads searches run on, when they have their own.
    pub fn threads(&self) -> Option<&Arc<SearchThreads>> {
        self.threads.as_ref().map(|(threads, _)| threads)
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// Threads that run searches' blocking work, one job at a time each; they
/// end when the last handle on them goes.
pub struct SearchThreads {
    jobs: mpsc::Sender<Job>,
}

impl SearchThreads {
    /// `n` threads, each running `setup` first.
    fn start(n: u32, setup: fn()) -> std::io::Result<Self> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        for i in 0..n {
            let queue = queue.clone();
            std::thread::Builder::new()
                .name(format!("confab-search-{i}"))
                .spawn(move || {
                    setup();
                    loop {
                        let next = queue.lock().unwrap_or_else(PoisonError::into_inner).recv();
                        let Ok(job) = next else { return };
                        // A panic fails that search (its answer is
                        // dropped), not the thread.
                        let _ = catch_unwind(AssertUnwindSafe(job));
                    }
                })?;
        }
        Ok(Self { jobs })
    }

    /// Runs `f` on one of the threads (when one is free) and waits for
    /// its value.
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, StoreError> {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = answer.send(f());
        });
        let gone = || StoreError::Other("the search failed on its thread".into());
        self.jobs.send(job).map_err(|_| gone())?;
        answered.await.map_err(|_| gone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn threads_run_jobs_and_survive_a_panic() {
        fn setup() {}
        let threads = SearchThreads::start(2, setup).expect("start");
        assert_eq!(threads.run(|| 40 + 2).await.expect("run"), 42);
        let name = threads
            .run(|| std::thread::current().name().map(str::to_owned))
            .await
            .expect("run");
        assert!(name.is_some_and(|n| n.starts_with("confab-search-")));
        assert!(threads.run(|| panic!("a broken search")).await.is_err());
        // Both threads still there.
        for _ in 0..4 {
            assert_eq!(threads.run(|| 1).await.expect("after"), 1);
        }
    }

    #[test]
    fn at_least_one_search_at_once() {
        assert!(default_search_connections() >= 1);
    }
}
