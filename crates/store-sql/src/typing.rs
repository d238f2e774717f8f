//! Typing news within one process: what the hub receives when the database
//! passes nothing between processes (SQLite, or PostgreSQL without a
//! connection to LISTEN on), and the local half of PostgreSQL's relay.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use confab_domain::Typing;
use confab_ports::TypingRelay;
use tokio::sync::Notify;

/// News that waits for the hub at most: beyond it the oldest is dropped
/// (a hub that cannot keep up has news older than anyone cares for).
pub const TYPING_QUEUE: usize = 4096;

/// A bounded queue from the publishers to the one receiver.
#[derive(Debug, Clone, Default)]
pub struct LocalTyping {
    queue: Arc<Mutex<VecDeque<Typing>>>,
    notify: Arc<Notify>,
}

impl LocalTyping {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues `typing` for this process's hub.
    pub fn push(&self, typing: Typing) {
        {
            let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            if queue.len() >= TYPING_QUEUE {
                queue.pop_front();
            }
            queue.push_back(typing);
        }
        // A stored permit when the hub is busy: the next wait returns.
        self.notify.notify_one();
    }
}

#[async_trait]
impl TypingRelay for LocalTyping {
    fn publish(&self, typing: Typing) {
        self.push(typing);
    }

    async fn received(&self) -> Vec<Typing> {
        loop {
            {
                let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
                if !queue.is_empty() {
                    return queue.drain(..).collect();
                }
            }
            self.notify.notified().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use confab_domain::{ContactId, ConversationId, Timestamp};
    use std::time::Duration;
    use uuid::Uuid;

    fn start(n: u128) -> Typing {
        Typing::start(
            ConversationId::from_uuid(Uuid::from_u128(1)),
            ContactId::from_uuid(Uuid::from_u128(n)),
            Timestamp::from_secs(100),
        )
    }

    #[tokio::test]
    async fn news_published_before_the_wait_is_received_in_order() {
        let relay = LocalTyping::new();
        relay.publish(start(1));
        relay.publish(start(2));
        let got = tokio::time::timeout(Duration::from_millis(100), relay.received())
            .await
            .expect("received");
        assert_eq!(got, vec![start(1), start(2)]);
        assert!(
            tokio::time::timeout(Duration::from_millis(50), relay.received())
                .await
                .is_err(),
            "nothing more"
        );
    }

    #[tokio::test]
    async fn a_full_queue_drops_the_oldest() {
        let relay = LocalTyping::new();
        for n in 0..(TYPING_QUEUE as u128 + 3) {
            relay.publish(start(n + 10));
        }
        let got = relay.received().await;
        assert_eq!(got.len(), TYPING_QUEUE);
        assert_eq!(got[0], start(13));
    }
}
