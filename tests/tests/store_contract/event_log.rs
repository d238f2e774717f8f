//! Writes with events and reading them back once readable, shared by the
//! events and deleted-events suites. PostgreSQL makes an event readable
//! once no transaction older than its own still runs (other tests'
//! included), so every read first waits for the latest write's events.

use std::sync::Arc;

use confab_domain::{
    message_sent, Change, Contact, Conversation, Event, EventId, EventType, Message, Timestamp,
};
use confab_ports::{Outbox, StoredEvent};
use confab_server::payloads::WirePayloads;
use uuid::Uuid;

use crate::support::{at, new_message, S};

pub(crate) fn ids() -> impl FnMut() -> EventId {
    || EventId::from_uuid(Uuid::now_v7())
}

pub(crate) fn by(who: &Contact, when: Timestamp) -> Change {
    Change::new(who.id(), when)
}

/// Hands events to writes and reads them back once readable. PostgreSQL
/// makes an event readable once no transaction that started before its
/// own is still running (other tests' included), so a read right after a
/// write may not see it yet: each read first waits until the first event of
/// the latest write is readable (a write that failed has none to wait for).
#[derive(Default)]
pub(crate) struct Events {
    last: std::sync::Mutex<Option<EventId>>,
    /// Every write is expected to commit: a latest write without events
    /// stored is a failure, not something to skip.
    all_commit: bool,
}

impl Events {
    /// For a suite whose every write commits ([`Events::default`] lets a
    /// refused write pass).
    pub(crate) fn all_committing() -> Self {
        Self {
            all_commit: true,
            ..Self::default()
        }
    }

    pub(crate) fn out(&self, events: Vec<Event>) -> Outbox {
        // The first: an opening's last stands for the messages it marks read,
        // which get ids of their own.
        if let Some(e) = events.first() {
            *self.last.lock().expect("lock") = Some(e.id);
        }
        Outbox::new(events, Arc::new(WirePayloads::default()))
    }

    /// Waits until the first event of the latest write, if it committed, is
    /// readable (at most 10 s): its transaction's others are then too.
    pub(crate) async fn settle(&self, s: &S) {
        let Some(id) = *self.last.lock().expect("lock") else {
            return;
        };
        let Some(position) = s.event_position(id).await.expect("position") else {
            assert!(!self.all_commit, "the latest write committed no events");
            return;
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while s.event_start().await.expect("start") < position {
            assert!(
                std::time::Instant::now() < deadline,
                "event {id} never became readable"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// Every event `who` has received, oldest first.
    pub(crate) async fn of(&self, s: &S, who: &Contact) -> Vec<StoredEvent> {
        self.settle(s).await;
        s.events_for(who.id(), 0, 1000).await.expect("events")
    }

    pub(crate) async fn kinds(&self, s: &S, who: &Contact) -> Vec<EventType> {
        self.of(s, who).await.iter().map(|e| e.kind).collect()
    }

    /// The events `who` received after `since` (its events before).
    pub(crate) async fn since(
        &self,
        s: &S,
        who: &Contact,
        since: &[StoredEvent],
    ) -> Vec<StoredEvent> {
        self.settle(s).await;
        let after = since.last().map_or(0, |e| e.position);
        s.events_for(who.id(), after, 1000).await.expect("events")
    }

    pub(crate) async fn send(
        &self,
        s: &S,
        c: &Conversation,
        sender: &Contact,
        body: &str,
        t: i64,
    ) -> Message {
        let m = new_message(c, sender, body, at(t));
        let events = message_sent(by(sender, at(t)), ids(), m.id, c.id());
        s.append_message(m, self.out(events), None)
            .await
            .expect("append")
    }
}
