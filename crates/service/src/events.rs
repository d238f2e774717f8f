//! Reading events (docs/api.md "Listen for events"): the caller's catch-up list, where a
//! stream starts, its replay, and what one process's hub reads to feed all
//! its streams. Writing them is each write's own business (the outbox).

use std::collections::HashSet;
use std::sync::Arc;

use confab_domain::{Contact, ContactId, EventId, Field, PageLimit, Paged, Rule};
use confab_ports::StoredEvent;
pub use confab_ports::{EventWithRecipients, FanOutBatch, FanOutLimits};

use crate::{Confab, ServiceError};

/// The position before every kept event: a list without `after` starts at
/// the oldest event kept.
const BEFORE_ALL: i64 = i64::MIN;

/// The token a stream was opened with, as the store keeps it (its SHA-256),
/// so that the stream can be ended when the token is revoked or expires.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StreamToken(String);

impl StreamToken {
    /// The stream token of the token with this hash.
    pub(crate) fn from_hash(hash: String) -> Self {
        StreamToken(hash)
    }
}

/// One event read for this process's streams, with those of its
/// recipients who have a stream here, each with their own payload when it
/// differs from the event's shared one.
pub type FanOutEvent = EventWithRecipients;

impl Confab {
    /// The position just after event `after`, or (without it) the position
    /// every event committed from now on lies after.
    ///
    /// # Errors
    /// `Invalid` on `after` when the event is unknown or pruned: the client
    /// missed events and must resync.
    pub async fn events_start(&self, after: Option<EventId>) -> Result<i64, ServiceError> {
        match after {
            Some(id) => self.event_position(id).await,
            None => Ok(self.ports.events.event_start().await?),
        }
    }

    async fn event_position(&self, id: EventId) -> Result<i64, ServiceError> {
        self.ports
            .events
            .event_position(id)
            .await?
            .ok_or(ServiceError::invalid(
                Field::EventsAfter,
                Rule::EventNotKept,
            ))
    }

    /// The caller's events after `after` (from the oldest kept without
    /// it), oldest first: the catch-up and polling list.
    pub async fn list_events(
        &self,
        caller: &Contact,
        after: Option<EventId>,
        limit: PageLimit,
    ) -> Result<Paged<StoredEvent>, ServiceError> {
        let position = match after {
            Some(id) => self.event_position(id).await?,
            None => BEFORE_ALL,
        };
        let want = usize::from(limit.get());
        let mut items = self
            .ports
            .events
            .events_for(caller.id(), position, u32::from(limit.get()) + 1)
            .await?;
        let has_more = items.len() > want;
        items.truncate(want);
        Ok(Paged { items, has_more })
    }

    /// A stream's replay: the recipient's events after `position`, oldest
    /// first, at most `limit`.
    pub async fn events_for(
        &self,
        recipient: ContactId,
        position: i64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>, ServiceError> {
        Ok(self
            .ports
            .events
            .events_for(recipient, position, limit)
            .await?)
    }

    /// The events after `position`, oldest first, within `limits`, each
    /// with those of its recipients who are in `to`: what the hub fans out
    /// to the process's streams (`to`: the contacts it has streams for).
    pub async fn recent_events(
        &self,
        position: i64,
        limits: FanOutLimits,
        to: Arc<HashSet<ContactId>>,
    ) -> Result<FanOutBatch, ServiceError> {
        Ok(self
            .ports
            .events
            .recent_events(position, limits, to)
            .await?)
    }

    /// The stream token of a bearer token already authenticated.
    pub fn stream_token(token: &str) -> StreamToken {
        StreamToken(crate::auth::hash_token(token))
    }

    /// Which of `tokens` are still live (neither revoked nor expired), in
    /// one store call for every open stream.
    pub async fn live_stream_tokens(
        &self,
        tokens: Vec<StreamToken>,
    ) -> Result<HashSet<StreamToken>, ServiceError> {
        if tokens.is_empty() {
            return Ok(HashSet::new());
        }
        let hashes = tokens.into_iter().map(|t| t.0).collect();
        let live = self
            .ports
            .events
            .live_token_hashes(hashes, self.now())
            .await?;
        Ok(live.into_iter().map(StreamToken).collect())
    }
}

impl Confab {
    /// Resolves when events may have been committed by anyone (this
    /// process's writes, another process's, the CLI's); may also resolve
    /// for nothing. The hub reads after it.
    pub async fn events_changed(&self) {
        self.ports.wakeups.changed().await;
    }

    /// How long the hub may go without reading the events table.
    pub fn events_poll_every(&self) -> std::time::Duration {
        self.ports.wakeups.poll_every()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::Arc;

    use confab_domain::{
        AvatarUrl, Contact, ContactId, ContactParts, EventId, EventType, Field, PageLimit,
        PhoneNumber, Rule, Timestamp, Username,
    };
    use confab_ports::{MockEventStore, MockEventWakeups, StoreError, StoredEvent};
    use mockall::predicate::eq;
    use uuid::Uuid;

    use super::{EventWithRecipients, FanOutBatch, FanOutLimits, StreamToken};
    use crate::{Confab, Ports, ServiceError};

    const NOW: i64 = 1_700_000_000;

    /// The service over `events` (and `wakeups`), every other port a mock
    /// that fails the test if called.
    fn service_with(events: MockEventStore, wakeups: MockEventWakeups) -> Confab {
        Confab::new(Ports {
            events: Arc::new(events),
            jobs: Arc::new(confab_ports::MockJobStore::new()),
            wakeups: Arc::new(wakeups),
            signal: Arc::new(confab_ports::NoSignal),
            ..crate::tests::mocked_ports(NOW)
        })
    }

    fn service(events: MockEventStore) -> Confab {
        service_with(events, MockEventWakeups::new())
    }

    fn alice() -> Contact {
        Contact::new(ContactParts {
            id: ContactId::from_uuid(Uuid::from_u128(1)),
            username: Username::new("alice".into()).expect("valid"),
            phone_number: PhoneNumber::new("+15550100".into()).expect("valid"),
            avatar_url: AvatarUrl::none(),
            last_active_at: Timestamp::from_secs(NOW),
            created_at: Timestamp::from_secs(NOW - 100),
        })
        .expect("valid")
    }

    fn event_id(n: u128) -> EventId {
        EventId::from_uuid(Uuid::from_u128(n))
    }

    fn event(n: i64) -> StoredEvent {
        StoredEvent {
            id: event_id(n.unsigned_abs().into()),
            kind: EventType::MessageCreated,
            created_at: Timestamp::from_secs(NOW),
            position: n,
            payload: "{}".into(),
        }
    }

    fn limit(n: i64) -> PageLimit {
        PageLimit::new(n).expect("limit")
    }

    #[tokio::test]
    async fn the_list_starts_after_the_given_event_and_says_if_more_follow() {
        let mut events = MockEventStore::new();
        events
            .expect_event_position()
            .with(eq(event_id(5)))
            .return_once(|_| Ok(Some(50)));
        // One more than the page, to learn whether more follow.
        events
            .expect_events_for()
            .with(eq(alice().id()), eq(50), eq(3))
            .return_once(|_, _, _| Ok(vec![event(51), event(52), event(53)]));
        let page = service(events)
            .list_events(&alice(), Some(event_id(5)), limit(2))
            .await
            .expect("page");
        assert!(page.has_more);
        assert_eq!(
            page.items.iter().map(|e| e.position).collect::<Vec<_>>(),
            [51, 52]
        );
    }

    #[tokio::test]
    async fn without_after_the_list_starts_at_the_oldest_event_kept() {
        let mut events = MockEventStore::new();
        events
            .expect_events_for()
            .with(eq(alice().id()), eq(i64::MIN), eq(11))
            .return_once(|_, _, _| Ok(vec![event(1)]));
        let page = service(events)
            .list_events(&alice(), None, PageLimit::default())
            .await
            .expect("page");
        assert!(!page.has_more);
        assert_eq!(page.items.len(), 1);
    }

    #[tokio::test]
    async fn an_unknown_or_pruned_after_is_invalid_and_reads_nothing() {
        let mut events = MockEventStore::new();
        events.expect_event_position().returning(|_| Ok(None));
        let service = service(events);
        let e = service
            .list_events(&alice(), Some(event_id(9)), limit(10))
            .await
            .expect_err("unknown");
        assert!(
            matches!(
                e,
                ServiceError::Invalid {
                    field: Field::EventsAfter,
                    rule: Rule::EventNotKept
                }
            ),
            "{e:?}"
        );
        let e = service
            .events_start(Some(event_id(9)))
            .await
            .expect_err("unknown");
        assert!(matches!(
            e,
            ServiceError::Invalid {
                field: Field::EventsAfter,
                ..
            }
        ));
    }

    #[tokio::test]
    async fn a_stream_starts_after_the_given_event_or_at_now() {
        let mut events = MockEventStore::new();
        events.expect_event_position().return_once(|_| Ok(Some(70)));
        events.expect_event_start().return_once(|| Ok(99));
        let service = service(events);
        assert_eq!(
            service
                .events_start(Some(event_id(7)))
                .await
                .expect("after"),
            70
        );
        assert_eq!(service.events_start(None).await.expect("now"), 99);
    }

    #[tokio::test]
    async fn an_unreachable_store_is_unavailable() {
        let mut events = MockEventStore::new();
        events
            .expect_event_start()
            .return_once(|| Err(StoreError::Unavailable("down".into())));
        let e = service(events).events_start(None).await.expect_err("down");
        assert!(matches!(e, ServiceError::Unavailable(_)), "{e:?}");
    }

    #[tokio::test]
    async fn live_tokens_are_checked_in_one_call_by_hash() {
        let a = Confab::stream_token("cfb_a");
        let b = Confab::stream_token("cfb_b");
        assert_ne!(a, b);
        assert_eq!(a, StreamToken(crate::auth::hash_token("cfb_a")));
        let mut events = MockEventStore::new();
        let live = a.0.clone();
        events
            .expect_live_token_hashes()
            .times(1)
            .withf(|hashes, now| hashes.len() == 2 && *now == Timestamp::from_secs(NOW))
            .return_once(move |_, _| Ok(vec![live]));
        let service = service(events);
        let got = service
            .live_stream_tokens(vec![a.clone(), b.clone()])
            .await
            .expect("live");
        assert!(got.contains(&a) && !got.contains(&b));
        // Nothing to check: no store call.
        assert!(service
            .live_stream_tokens(Vec::new())
            .await
            .expect("none")
            .is_empty());
    }

    #[tokio::test]
    async fn the_fan_out_asks_the_store_for_the_given_recipients_within_the_limits() {
        let to: Arc<HashSet<ContactId>> = Arc::new([alice().id()].into_iter().collect());
        let limits = FanOutLimits {
            events: 8,
            bytes: 1024,
            recipient_rows: 100,
        };
        let mut events = MockEventStore::new();
        let want = to.clone();
        events
            .expect_recent_events()
            .times(1)
            .withf(move |after, l, asked| *after == 41 && *l == limits && **asked == *want)
            .return_once(|_, _, _| {
                Ok(FanOutBatch {
                    events: vec![EventWithRecipients {
                        event: event(42),
                        recipients: vec![(alice().id(), None)],
                    }],
                    more: true,
                })
            });
        let batch = service(events)
            .recent_events(41, limits, to)
            .await
            .expect("batch");
        assert!(batch.more);
        assert_eq!(batch.events.len(), 1);
        assert_eq!(batch.events[0].recipients, vec![(alice().id(), None)]);
    }

    #[tokio::test]
    async fn wakeups_come_from_the_port() {
        let mut wakeups = MockEventWakeups::new();
        wakeups.expect_changed().times(1).return_const(());
        wakeups
            .expect_poll_every()
            .return_const(std::time::Duration::from_millis(250));
        let service = service_with(MockEventStore::new(), wakeups);
        service.events_changed().await;
        assert_eq!(
            service.events_poll_every(),
            std::time::Duration::from_millis(250)
        );
    }
}
