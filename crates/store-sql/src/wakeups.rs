//! Wakeups of the event hub for a store without notifications (SQLite):
//! this process's own writes wake it at once (the service calls
//! [`EventSignal::committed`] after each), and writes by other processes on
//! the same file (the CLI, a second server) are found by polling the events
//! table, a cheap indexed read of nothing new.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use confab_ports::{EventSignal, EventWakeups};
use tokio::sync::Notify;

/// How often SQLite's events table is read for other processes' writes:
/// they reach a stream well within a second.
pub const SQLITE_POLL: Duration = Duration::from_millis(250);

/// The process's own commits, and a poll for the rest.
#[derive(Debug, Clone)]
pub struct LocalWakeups {
    notify: Arc<Notify>,
    poll_every: Duration,
}

impl LocalWakeups {
    pub fn new(poll_every: Duration) -> Self {
        Self {
            notify: Arc::new(Notify::new()),
            poll_every,
        }
    }

    /// SQLite's: polled every 250 ms (`SQLITE_POLL`).
    pub fn sqlite() -> Self {
        Self::new(SQLITE_POLL)
    }

    /// What PostgreSQL's LISTEN connection wakes.
    #[cfg(feature = "postgres")]
    pub fn notify(&self) -> &Arc<Notify> {
        &self.notify
    }
}

impl EventSignal for LocalWakeups {
    fn committed(&self) {
        // Stored as a permit when the hub is busy reading: the next wait
        // returns at once, so no commit goes unread.
        self.notify.notify_one();
    }
}

#[async_trait]
impl EventWakeups for LocalWakeups {
    async fn changed(&self) {
        self.notify.notified().await;
    }

    fn poll_every(&self) -> Duration {
        self.poll_every
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_commit_before_the_wait_is_not_lost() {
        let w = LocalWakeups::sqlite();
        w.committed();
        tokio::time::timeout(Duration::from_millis(100), w.changed())
            .await
            .expect("woken by the earlier commit");
        assert!(
            tokio::time::timeout(Duration::from_millis(50), w.changed())
                .await
                .is_err(),
            "one commit wakes once"
        );
    }
}
