use super::*;
use confab_domain::{
    Attachment, Contact, Conversation, ConversationView, EventId, EventType, Group, GroupName,
    Message, MessageText, Report, Timestamp,
};
use confab_ports::PayloadRenderer;
use confab_service::{
    ConversationTarget, GroupUpdate, NewGroupRequest, Ports, SendMessage, StoredEvent,
};
use confab_store_sqlite::{LocalTyping, LocalWakeups, SqliteStore};
use uuid::Uuid;

/// Payloads that name their object's id: what the hub's tests look for
/// (the wire's own payloads are the HTTP API's, above this crate).
struct IdPayloads;

impl PayloadRenderer for IdPayloads {
    fn contact(&self, contact: &Contact) -> String {
        with_id(contact.id())
    }
    fn conversation(&self, conversation: &ConversationView) -> String {
        self.conversation_shared(&conversation.conversation)
    }
    fn conversation_shared(&self, conversation: &Conversation) -> String {
        with_id(conversation.id())
    }
    fn message(&self, message: &Message) -> String {
        with_id(message.id())
    }
    fn group(&self, group: &Group) -> String {
        with_id(group.id())
    }
    fn attachment(&self, attachment: &Attachment) -> String {
        with_id(attachment.id)
    }
    fn deleted(&self, id: Uuid) -> String {
        with_id(id)
    }
    fn report(&self, report: &Report) -> String {
        with_id(report.id)
    }
}

fn with_id(id: impl std::fmt::Display) -> String {
    format!(r#"{{"id":"{id}"}}"#)
}

/// The service on a fresh, migrated SQLite file (kept while the directory
/// lives), wired as the server wires it: its own commits wake the hub.
async fn sqlite() -> (tempfile::TempDir, Confab) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("hub.db").display().to_string();
    let service = tokio::task::spawn_blocking(move || {
        let store = SqliteStore::open(&path).expect("open");
        store.migrate().expect("migrate");
        let wakeups = Arc::new(LocalWakeups::sqlite());
        let mut ports = Ports::from_store(store.clone(), Arc::new(IdPayloads), wakeups.clone());
        ports.wakeups = wakeups;
        ports.typing = Arc::new(LocalTyping::new());
        Confab::new(ports).with_request_budgets(store)
    })
    .await
    .expect("join");
    (dir, service)
}

/// A hub whose reader is not running: the tests fan batches out
/// themselves.
async fn idle_hub() -> (tempfile::TempDir, Hub) {
    let (dir, service) = sqlite().await;
    let inner = Inner::new(service, HubOptions::default(), Metrics::new());
    (
        dir,
        Hub {
            inner: Arc::new(inner),
        },
    )
}

fn contact(n: u128) -> ContactId {
    ContactId::from_uuid(Uuid::from_u128(n))
}

fn token() -> StreamToken {
    Confab::stream_token("cfb_test")
}

fn event(position: i64) -> StoredEvent {
    StoredEvent {
        id: EventId::from_uuid(Uuid::from_u128(position.unsigned_abs().into())),
        kind: EventType::GroupUpdated,
        created_at: Timestamp::from_secs(1_700_000_000),
        position,
        payload: format!(r#"{{"shared":{position}}}"#),
    }
}

/// Recipients with their own payloads (`None`: the shared one).
type To = Vec<(ContactId, Option<String>)>;

fn batch(events: Vec<(i64, To)>) -> FanOutBatch {
    FanOutBatch {
        events: events
            .into_iter()
            .map(|(position, recipients)| FanOutEvent {
                event: event(position),
                recipients,
            })
            .collect(),
        more: false,
    }
}

async fn next(sub: &mut Subscription) -> Live {
    tokio::time::timeout(Duration::from_secs(5), sub.recv())
        .await
        .expect("in time")
        .expect("a live event")
}

/// Waits for the hub to end `sub`; returns why.
async fn ended(sub: &mut Subscription) -> Ended {
    let last = tokio::time::timeout(Duration::from_secs(5), sub.recv())
        .await
        .expect("ended in time");
    assert!(last.is_none(), "an event instead of the end: {last:?}");
    sub.ended()
}

#[test]
fn a_failed_read_halves_the_batch_and_a_stuck_event_is_passed_on_the_third_failure() {
    let limits = FanOutLimits {
        events: 8,
        bytes: 1000,
        recipient_rows: 50,
    };
    let mut r = Reading::new(limits);
    assert_eq!(r.limits(), limits);
    for events in [4, 2, 1] {
        assert_eq!(r.failed(), AfterFailure::Fewer);
        assert_eq!(r.limits().events, events);
    }
    assert_eq!(r.failed(), AfterFailure::Later);
    assert_eq!(r.failed(), AfterFailure::Later);
    assert_eq!(r.failed(), AfterFailure::Skip);
    // Until the hub could move on, every failure asks again.
    assert_eq!(r.failed(), AfterFailure::Skip);
    r.skipped();
    assert_eq!(r.failed(), AfterFailure::Later);
    // Success grows it back, to the limit; a success resets the count.
    for events in [2, 4, 8, 8] {
        r.succeeded();
        assert_eq!(r.limits().events, events);
    }
    assert_eq!(r.limits(), limits, "bytes and rows stay as configured");
    for _ in 0..3 {
        r.failed();
    }
    r.succeeded();
    r.failed();
    assert_eq!(r.failed(), AfterFailure::Later, "the count started over");
}

#[tokio::test]
async fn each_event_has_one_shared_frame_and_own_frames_for_own_payloads() {
    let (_dir, hub) = idle_hub().await;
    let (a, b, c) = (contact(1), contact(2), contact(3));
    let mut subs = [a, b, c].map(|who| hub.subscribe(who, token()));
    let to = hub.inner.connected();
    let own = r#"{"own":true}"#.to_owned();
    let batch = batch(vec![(7, vec![(a, None), (b, None), (c, Some(own))])]);
    fan_out(&hub.inner, &batch, &to);
    let [sa, sb, sc] = &mut subs;
    let (fa, fb, fc) = (next(sa).await, next(sb).await, next(sc).await);
    assert_eq!(
        (fa.position, fb.position, fc.position),
        (Some(7), Some(7), Some(7))
    );
    assert_eq!(
        fa.frame.as_ptr(),
        fb.frame.as_ptr(),
        "the shared frame is built once"
    );
    assert_eq!(fa.frame, super::sse_frame(&event(7)));
    let text = std::str::from_utf8(&fc.frame).expect("utf-8");
    assert!(text.contains(r#""payload":{"own":true}"#), "{text}");
    assert_eq!(hub.recipients_read(), 3);
}

#[tokio::test]
async fn a_stream_subscribed_during_a_read_without_its_contact_replays_from_the_table() {
    let (_dir, hub) = idle_hub().await;
    let (a, b) = (contact(1), contact(2));
    let mut a_old = hub.subscribe(a, token());
    // The hub's snapshot: a alone. Then a second stream of a and a
    // first of b subscribe while the batch is read.
    let to = hub.inner.connected();
    let mut a_new = hub.subscribe(a, token());
    let mut b_new = hub.subscribe(b, token());
    // An empty batch cannot lack anything: nobody is sent back.
    fan_out(&hub.inner, &FanOutBatch::default(), &to);
    assert_eq!(hub.subscriptions(), 3);
    // A batch read for a alone might hold an event of b's: b's stream
    // goes back to the table (which has it); a's streams both get it.
    fan_out(&hub.inner, &batch(vec![(9, vec![(a, None)])]), &to);
    assert_eq!(ended(&mut b_new).await, Ended::Lagged);
    assert_eq!(next(&mut a_old).await.position, Some(9));
    assert_eq!(next(&mut a_new).await.position, Some(9));
    assert_eq!(a_new.ended(), Ended::Open);
    assert_eq!(hub.subscriptions(), 2);
    // The next snapshot names b even before its stream subscribes
    // again (it does at once, but maybe just after the snapshot): that
    // stream is not sent back again, and gets b's events.
    let to = hub.inner.connected();
    assert!(to.contains(&b));
    let mut b_again = hub.subscribe(b, token());
    fan_out(&hub.inner, &batch(vec![(10, vec![(b, None)])]), &to);
    assert_eq!(next(&mut b_again).await.position, Some(10));
    assert_eq!(b_again.ended(), Ended::Open);
    // Subscribed, b is in every snapshot by its streams; once they go,
    // it leaves the snapshots.
    assert!(hub.inner.connected().contains(&b));
    drop(b_again);
    assert!(!hub.inner.connected().contains(&b));
}

#[tokio::test]
async fn moving_past_an_unreadable_event_sends_every_stream_to_the_table() {
    let (_dir, hub) = idle_hub().await;
    let mut subs = [contact(1), contact(2), contact(2)].map(|who| hub.subscribe(who, token()));
    let mut cursor = i64::MIN;
    assert!(skip(&hub.inner, &mut cursor).await);
    for sub in &mut subs {
        assert_eq!(ended(sub).await, Ended::Lagged);
    }
    assert_eq!(hub.subscriptions(), 0);
    let now = hub.service().events_start(None).await.expect("now");
    assert_eq!(cursor, now, "the cursor moved to now");
}

/// A rename of a 150-member group costs the hub nothing for a stream of
/// someone else: the store hands it no recipient but that stream's
/// contact (the old read handed it all 151 per event), and that stream
/// still gets its own event, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audience_without_streams_here_costs_the_hub_nothing() {
    let (_dir, service) = sqlite().await;
    let new = |name: String| {
        let service = service.clone();
        async move {
            service
                .create_contact(&name, "+15550100", None)
                .await
                .expect("contact")
        }
    };
    let owner = new("owner".into()).await;
    let mut members = Vec::new();
    for i in 0..150 {
        members.push(new(format!("m{i}")).await.id());
    }
    let outsider = new("outsider".into()).await;
    let peer = new("peer".into()).await;
    let group = service
        .create_group(
            &owner,
            NewGroupRequest {
                name: GroupName::new("big".into()).expect("name"),
                description: None,
                avatar_url: None,
                contact_ids: members,
            },
            None,
        )
        .await
        .expect("group");
    let conversation = service
        .create_conversation(&peer, ConversationTarget::Contact(outsider.id()), None)
        .await
        .expect("direct")
        .conversation
        .id();
    let send = |text: &str| {
        let (service, peer) = (service.clone(), peer.clone());
        let text = MessageText::new(text.to_owned()).expect("text");
        async move {
            let send = SendMessage {
                conversation_id: conversation,
                text,
                attachments: Vec::new(),
                reply_to_id: None,
                parent_id: None,
                mentions: Vec::new(),
            };
            service.send_message(&peer, send, None).await.expect("send")
        }
    };

    let hub = Hub::start(service.clone(), HubOptions::default(), Metrics::new());
    // A live token: the hub checks the open streams' tokens.
    let bearer = service.issue_token("outsider", None).await.expect("token");
    let mut sub = hub.subscribe(outsider.id(), Confab::stream_token(&bearer));
    // Messages until one comes through the hub (it reads its start
    // position when it starts, maybe after the first): its cursor then
    // lies before what follows. The events of any later ones come
    // within a moment.
    let mut received = 0;
    for i in 0..10 {
        send(&format!("probe {i}")).await;
        let wait = Duration::from_secs(1);
        if let Ok(Some(_)) = tokio::time::timeout(wait, sub.recv()).await {
            received += 1;
            break;
        }
    }
    assert_eq!(received, 1, "no message came through the hub");
    let wait = Duration::from_millis(500);
    while let Ok(Some(_)) = tokio::time::timeout(wait, sub.recv()).await {
        received += 1;
    }
    let before = hub.recipients_read();
    assert_eq!(before, received, "the outsider alone");

    for i in 0..3 {
        let update = GroupUpdate {
            name: Some(GroupName::new(format!("renamed {i}")).expect("name")),
            ..GroupUpdate::default()
        };
        service
            .update_group(&owner, group.id(), update)
            .await
            .expect("rename");
    }
    let after = send("after the renames").await;
    let live = next(&mut sub).await;
    let text = std::str::from_utf8(&live.frame).expect("utf-8");
    assert!(text.contains(&after.id().to_string()), "{text}");
    assert!(text.starts_with("id: "), "{text}");
    assert!(live.position.is_some_and(|p| p > 0));
    assert_eq!(
        hub.recipients_read() - before,
        1,
        "three renames for 151 members and a message for two: only the outsider's"
    );
    // Nothing else for the outsider.
    assert!(
        tokio::time::timeout(Duration::from_millis(300), sub.recv())
            .await
            .is_err(),
        "no other event"
    );
    hub.close();
}

/// Typing news goes to the other members' streams only, without a
/// position; a full queue drops the frame and keeps the stream.
#[tokio::test]
async fn typing_reaches_the_other_members_streams_and_a_full_queue_drops_only_the_frame() {
    let (_dir, service) = sqlite().await;
    let mut contacts = Vec::new();
    for name in ["peer", "other", "outsider"] {
        contacts.push(
            service
                .create_contact(name, "+15550100", None)
                .await
                .expect("contact"),
        );
    }
    let (peer, other, outsider) = (&contacts[0], &contacts[1], &contacts[2]);
    let conversation = service
        .create_conversation(peer, ConversationTarget::Contact(other.id()), None)
        .await
        .expect("direct")
        .conversation
        .id();
    let options = HubOptions {
        queue: 1,
        ..HubOptions::default()
    };
    let inner = Arc::new(Inner::new(service.clone(), options, Metrics::new()));
    let hub = Hub {
        inner: inner.clone(),
    };
    let mut to_peer = hub.subscribe(peer.id(), token());
    let mut to_other = hub.subscribe(other.id(), token());
    let mut to_outsider = hub.subscribe(outsider.id(), token());

    let at = Timestamp::from_secs(1_700_000_000);
    let start = Typing::start(conversation, peer.id(), at);
    deliver_typing(&inner, vec![start]).await;
    // The queue holds one: the second frame is dropped.
    deliver_typing(&inner, vec![Typing::stop(conversation, peer.id(), at)]).await;

    let live = next(&mut to_other).await;
    assert_eq!(live.position, None);
    assert_eq!(live.frame, typing_frame(&start));
    assert!(
        tokio::time::timeout(Duration::from_millis(100), to_other.recv())
            .await
            .is_err(),
        "the dropped frame never comes"
    );
    assert_eq!(to_other.ended(), Ended::Open, "the stream stays");
    for (who, sub) in [
        ("the typist", &mut to_peer),
        ("a non-member", &mut to_outsider),
    ] {
        assert!(
            tokio::time::timeout(Duration::from_millis(100), sub.recv())
                .await
                .is_err(),
            "{who} hears nothing"
        );
    }
    // With room again, the next news comes through.
    let again = Typing::start(conversation, peer.id(), at.plus_secs(3));
    deliver_typing(&inner, vec![again]).await;
    assert_eq!(next(&mut to_other).await.frame, typing_frame(&again));
}
