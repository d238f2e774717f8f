//! How typing news reaches every server process (docs/api.md "Typing"): the
//! process where a member says they are typing publishes it, and the event
//! hub of each process (this one's included) receives it and hands it to
//! the streams of the conversation's other members connected there.
//!
//! Nothing here is stored: news that cannot be passed on is dropped, and
//! clients let a start expire on its own.

use async_trait::async_trait;
use confab_domain::Typing;

/// Passes typing news between the server processes of one database.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait TypingRelay: Send + Sync {
    /// Hands `typing` to every process's hub, this process's included.
    /// Returns at once, never waiting on a database; news that cannot be
    /// sent (a full queue, no connection) is dropped.
    fn publish(&self, typing: Typing);

    /// The news published since the previous call resolved, in the order
    /// it arrived, at least one. There is one receiver per process (its
    /// hub); news that arrives while nobody receives waits in a bounded
    /// queue, the oldest dropped first.
    async fn received(&self) -> Vec<Typing>;
}

/// A relay that passes nothing on: for processes without an event hub (the
/// CLI) and tests without streams.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTyping;

#[async_trait]
impl TypingRelay for NoTyping {
    fn publish(&self, _typing: Typing) {}

    async fn received(&self) -> Vec<Typing> {
        std::future::pending::<Vec<Typing>>().await
    }
}
