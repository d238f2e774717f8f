//! "Events may have been committed": what wakes the event hub of a process
//! for writes it did not make itself (other processes on the same database,
//! the CLI). The events table stays the truth; a wakeup only says when to
//! look, so a lost one delays an event until the next poll, never loses it.

use std::time::Duration;

use async_trait::async_trait;

/// The database's own word that events may have been committed elsewhere.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait EventWakeups: Send + Sync {
    /// Resolves when events may have been committed since the previous call
    /// resolved (spurious wakeups are allowed). May never resolve when the
    /// database cannot notify (then [`EventWakeups::poll_every`] finds them).
    async fn changed(&self);

    /// How long the hub may go without reading the events table: the delay
    /// after which an event no wakeup announced is still delivered.
    fn poll_every(&self) -> Duration;
}

/// Polling alone, every `0` (SQLite: another process's writes are found by
/// reading the newest events; the process's own writes wake the hub at once
/// through [`crate::EventSignal`]).
#[derive(Debug, Clone, Copy)]
pub struct PollOnly(pub Duration);

#[async_trait]
impl EventWakeups for PollOnly {
    async fn changed(&self) {
        std::future::pending::<()>().await;
    }

    fn poll_every(&self) -> Duration {
        self.0
    }
}
