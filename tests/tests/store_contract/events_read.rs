//! Reading events (docs/api.md "Listen for events"): the recipient's range, the fan-out
//! batch (only the asked-for recipients, shared payloads held once, bounded
//! in events, bytes and recipient rows: docs/api.md "Limits"), positions,
//! pruning, and the horizon that keeps a reader from skipping an event
//! that commits after a later one.
//!
//! The events are inserted here with plain SQL, the way the outbox writes
//! them (see the events migration), so that the reads are tested apart from
//! the writes.

use std::collections::HashSet;
use std::sync::Arc;

use confab_domain::{ContactId, EventId, EventType, Timestamp};
use confab_ports::{FanOutBatch, FanOutLimits};
use confab_tests::db::Backend;
use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection, SqliteConnection};
use uuid::Uuid;

use crate::support::{open, S};

fn sql_id(id: Uuid) -> String {
    format!("'{id}'")
}

/// SQL inserting one event with its recipients (`None`: the shared
/// payload) at the backend's next position.
fn insert_event(
    backend: Backend,
    id: Uuid,
    index: u32,
    created_at: i64,
    to: &[(Uuid, Option<&str>)],
) -> String {
    insert_event_with(backend, id, index, created_at, SHARED, to)
}

/// The shared payload of [`insert_event`]'s events.
const SHARED: &str = "{\"shared\":true}";

/// [`insert_event`] with this shared payload.
fn insert_event_with(
    backend: Backend,
    id: Uuid,
    index: u32,
    created_at: i64,
    payload: &str,
    to: &[(Uuid, Option<&str>)],
) -> String {
    let position = match backend {
        Backend::Postgres => format!("pg_current_xact_id()::text::bigint * 1048576 + {index}"),
        Backend::Sqlite => "NULL".to_owned(),
    };
    let mut sql = format!(
        "INSERT INTO events (id, position, type, actor_id, created_at, payload) \
         VALUES ({}, {position}, 'message.created', {}, {created_at}, '{payload}');",
        sql_id(id),
        sql_id(Uuid::now_v7()),
    );
    for (who, own) in to {
        let own = own.map_or("NULL".to_owned(), |p| format!("'{p}'"));
        sql.push_str(&format!(
            "INSERT INTO event_recipients (contact_id, position, event_id, payload) \
             SELECT {}, position, id, {own} FROM events WHERE id = {};",
            sql_id(*who),
            sql_id(id)
        ));
    }
    sql
}

enum Raw {
    Pg(PgConnection),
    Lite(SqliteConnection),
}

impl Raw {
    fn connect(backend: Backend, url: &str) -> Self {
        match backend {
            Backend::Postgres => Raw::Pg(PgConnection::establish(url).expect("pg")),
            Backend::Sqlite => {
                let mut c = SqliteConnection::establish(url).expect("sqlite");
                c.batch_execute("PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON;")
                    .expect("pragmas");
                Raw::Lite(c)
            }
        }
    }

    fn run(&mut self, sql: &str) {
        match self {
            Raw::Pg(c) => c.batch_execute(sql),
            Raw::Lite(c) => c.batch_execute(sql),
        }
        .expect("sql");
    }

    /// The one number `sql` (a `SELECT` of one bigint) answers.
    fn number(&mut self, sql: &str) -> i64 {
        use diesel::RunQueryDsl as _;
        let query = diesel::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(sql));
        match self {
            Raw::Pg(c) => query.get_result(c),
            Raw::Lite(c) => query.get_result(c),
        }
        .expect("number")
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("join")
}

/// Waits until every event up to `id` is readable. On PostgreSQL an event
/// is readable once every transaction that began before its own has ended,
/// in the whole cluster: other tests' transactions on the shared server
/// may hold it back a moment.
async fn readable(s: &S, id: Uuid) {
    let position = s
        .event_position(EventId::from_uuid(id))
        .await
        .expect("position")
        .expect("kept");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while s.event_start().await.expect("start") < position {
        assert!(
            std::time::Instant::now() < deadline,
            "event {id} not readable within 10 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

fn ids(events: &[confab_ports::StoredEvent]) -> Vec<Uuid> {
    events.iter().map(|e| *e.id.as_uuid()).collect()
}

/// The contacts a fan-out read asks for.
fn asking(contacts: &[Uuid]) -> Arc<HashSet<ContactId>> {
    Arc::new(contacts.iter().map(|c| ContactId::from_uuid(*c)).collect())
}

/// An event of a fan-out batch: its id, its shared payload, and its
/// recipients (sorted) with their own payloads (`None`: the shared one).
type Fanned = (Uuid, String, Vec<(Uuid, Option<String>)>);

fn fanned(batch: &FanOutBatch) -> Vec<Fanned> {
    batch
        .events
        .iter()
        .map(|f| {
            let mut to: Vec<(Uuid, Option<String>)> = f
                .recipients
                .iter()
                .map(|(c, own)| (*c.as_uuid(), own.clone()))
                .collect();
            to.sort();
            (*f.event.id.as_uuid(), f.event.payload.clone(), to)
        })
        .collect()
}

/// The ids of a fan-out batch's events.
fn batch_ids(batch: &FanOutBatch) -> Vec<Uuid> {
    batch.events.iter().map(|f| *f.event.id.as_uuid()).collect()
}

async fn reads_in_commit_order_with_each_recipients_payload(backend: Backend) {
    let (db, s): (_, S) = open(backend).await;
    let url = db.url.clone();
    let (alice, bob, carol) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    let start = s.event_start().await.expect("start");
    let (e1, e2, e3) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    blocking(move || {
        let mut raw = Raw::connect(backend, &url);
        raw.run(&format!(
            "BEGIN; {} {} COMMIT;",
            insert_event(
                backend,
                e1,
                0,
                10,
                &[(alice, None), (bob, Some("{\"own\":1}"))]
            ),
            insert_event(backend, e2, 1, 10, &[(alice, None)]),
        ));
        raw.run(&format!(
            "BEGIN; {} COMMIT;",
            insert_event(backend, e3, 0, 20, &[(bob, None)])
        ));
    })
    .await;
    readable(&s, e3).await;

    let a = s
        .events_for(ContactId::from_uuid(alice), start, 10)
        .await
        .expect("alice");
    assert_eq!(ids(&a), vec![e1, e2]);
    assert!(a.iter().all(|e| e.payload == "{\"shared\":true}"));
    assert_eq!(a[0].kind, EventType::MessageCreated);
    assert_eq!(a[0].created_at, Timestamp::from_micros(10));
    assert!(start < a[0].position && a[0].position < a[1].position);

    let b = s
        .events_for(ContactId::from_uuid(bob), start, 10)
        .await
        .expect("bob");
    assert_eq!(ids(&b), vec![e1, e3]);
    assert_eq!(b[0].payload, "{\"own\":1}");
    // Paging by position: after the first, only the second; a limit holds.
    let rest = s
        .events_for(ContactId::from_uuid(bob), b[0].position, 10)
        .await
        .expect("rest");
    assert_eq!(ids(&rest), vec![e3]);
    assert_eq!(
        ids(&s
            .events_for(ContactId::from_uuid(bob), start, 1)
            .await
            .expect("one")),
        vec![e1]
    );
    // An outsider reads nothing.
    assert!(s
        .events_for(ContactId::from_uuid(carol), start, 10)
        .await
        .expect("carol")
        .is_empty());

    // The fan-out batch: every event once, with the asked-for recipients.
    // Whoever sees the shared payload gets `None`: the event's one copy.
    let all = s
        .recent_events(start, FanOutLimits::events(10), asking(&[alice, bob]))
        .await
        .expect("recent");
    assert!(!all.more, "nothing cut");
    let shared = SHARED.to_owned();
    let mut e1_to = vec![(alice, None), (bob, Some("{\"own\":1}".to_owned()))];
    e1_to.sort();
    assert_eq!(
        fanned(&all),
        vec![
            (e1, shared.clone(), e1_to),
            (e2, shared.clone(), vec![(alice, None)]),
            (e3, shared.clone(), vec![(bob, None)]),
        ]
    );
    // Only the recipients asked for: every event still comes (the reader's
    // cursor moves past it), without the others.
    let bob_only = s
        .recent_events(start, FanOutLimits::events(10), asking(&[bob, carol]))
        .await
        .expect("bob");
    assert_eq!(
        fanned(&bob_only),
        vec![
            (
                e1,
                shared.clone(),
                vec![(bob, Some("{\"own\":1}".to_owned()))]
            ),
            (e2, shared.clone(), vec![]),
            (e3, shared.clone(), vec![(bob, None)]),
        ]
    );
    let nobody = s
        .recent_events(start, FanOutLimits::events(10), asking(&[carol]))
        .await
        .expect("nobody");
    assert_eq!(batch_ids(&nobody), vec![e1, e2, e3]);
    assert!(nobody.events.iter().all(|f| f.recipients.is_empty()));
    // A batch cut by its limit says so, and resumes after its last event.
    let first_two = s
        .recent_events(start, FanOutLimits::events(2), asking(&[alice, bob]))
        .await
        .expect("two");
    assert_eq!(batch_ids(&first_two), vec![e1, e2]);
    assert!(first_two.more);
    let tail = s
        .recent_events(
            first_two.events[1].event.position,
            FanOutLimits::events(10),
            asking(&[alice, bob]),
        )
        .await
        .expect("tail");
    assert_eq!(batch_ids(&tail), vec![e3]);
    assert!(!tail.more);

    // Positions by id; unknown ids have none.
    assert_eq!(
        s.event_position(EventId::from_uuid(e2)).await.expect("pos"),
        Some(a[1].position)
    );
    assert_eq!(
        s.event_position(EventId::from_uuid(Uuid::now_v7()))
            .await
            .expect("pos"),
        None
    );
    // A stream starting now starts after everything committed.
    let now = s.event_start().await.expect("start");
    assert!(now >= a[1].position);

    // Pruning: older events go with their recipients, in bounded batches.
    assert_eq!(
        s.prune_events(Timestamp::from_micros(15), 1)
            .await
            .expect("prune"),
        1
    );
    assert_eq!(
        s.prune_events(Timestamp::from_micros(15), 100)
            .await
            .expect("prune"),
        1
    );
    assert_eq!(
        s.prune_events(Timestamp::from_micros(15), 100)
            .await
            .expect("prune"),
        0
    );
    assert_eq!(
        ids(&s
            .events_for(ContactId::from_uuid(bob), start, 10)
            .await
            .expect("bob")),
        vec![e3]
    );
    assert_eq!(
        s.event_position(EventId::from_uuid(e1)).await.expect("pos"),
        None
    );
    // The pruned events' recipient rows went with them: only e3's is left.
    let url = db.url.clone();
    let left = blocking(move || {
        let mut raw = Raw::connect(backend, &url);
        raw.number("(SELECT COUNT(*) FROM event_recipients)")
    })
    .await;
    assert_eq!(left, 1);
    drop(db);
}

/// On PostgreSQL two transactions can commit in the other order than their
/// events' positions. A reader must not see the later one's event while the
/// earlier one may still commit below it.
#[tokio::test]
async fn postgres_holds_back_events_behind_a_running_transaction() {
    let backend = Backend::Postgres;
    let (db, s): (_, S) = open(backend).await;
    let url = db.url.clone();
    let alice = Uuid::now_v7();
    let start = s.event_start().await.expect("start");
    let (early, late) = (Uuid::now_v7(), Uuid::now_v7());

    let (url1, url2) = (url.clone(), url.clone());
    let holder = blocking(move || {
        let mut raw = Raw::connect(backend, &url1);
        // Takes its transaction id (and so a lower position) first...
        raw.run(&format!(
            "BEGIN; {}",
            insert_event(backend, early, 0, 1, &[(alice, None)])
        ));
        raw
    })
    .await;
    blocking(move || {
        // ...but the other transaction commits first.
        Raw::connect(backend, &url2).run(&format!(
            "BEGIN; {} COMMIT;",
            insert_event(backend, late, 0, 2, &[(alice, None)])
        ));
    })
    .await;

    let who = ContactId::from_uuid(alice);
    assert!(
        s.events_for(who, start, 10).await.expect("read").is_empty(),
        "the later event is held back while an earlier position may still commit"
    );
    let recent = s
        .recent_events(start, FanOutLimits::events(10), asking(&[alice]))
        .await
        .expect("recent");
    assert!(recent.events.is_empty() && !recent.more);
    let mid = s.event_start().await.expect("start");
    assert!(
        mid < s
            .event_position(EventId::from_uuid(late))
            .await
            .expect("pos")
            .expect("kept")
    );

    blocking(move || {
        let mut holder = holder;
        holder.run("COMMIT;");
    })
    .await;
    readable(&s, late).await;
    assert_eq!(
        ids(&s.events_for(who, start, 10).await.expect("read")),
        vec![early, late]
    );
    // A stream that started while the early one ran still gets both.
    assert_eq!(
        ids(&s.events_for(who, mid, 10).await.expect("read")),
        vec![early, late]
    );
    drop(db);
}

#[tokio::test]
async fn postgres_reads_in_commit_order_with_each_recipients_payload() {
    reads_in_commit_order_with_each_recipients_payload(Backend::Postgres).await;
}

#[tokio::test]
async fn sqlite_reads_in_commit_order_with_each_recipients_payload() {
    reads_in_commit_order_with_each_recipients_payload(Backend::Sqlite).await;
}

/// A payload of exactly `bytes` bytes.
fn payload_of(bytes: usize) -> String {
    format!("{{\"p\":\"{}\"}}", "x".repeat(bytes - 8))
}

/// Reads the fan-out batches after `start` for `to` within `limits` until
/// one says nothing more follows; returns each batch's event ids.
async fn read_all(
    s: &S,
    start: i64,
    limits: FanOutLimits,
    to: &Arc<HashSet<ContactId>>,
) -> Vec<Vec<Uuid>> {
    let (mut after, mut batches) = (start, Vec::new());
    loop {
        let batch = s
            .recent_events(after, limits, to.clone())
            .await
            .expect("batch");
        batches.push(batch_ids(&batch));
        if let Some(last) = batch.events.last() {
            after = last.event.position;
        }
        if !batch.more {
            return batches;
        }
        assert!(batches.len() < 20, "no end: {batches:?}");
    }
}

/// A fan-out read holds what its limits allow, and at least one whole
/// event: the shared payloads and the asked-for recipients' own payloads
/// count against its bytes; an audience larger than its recipient rows is
/// read whole, alone. Read after read, every event comes once, in order.
async fn fan_out_batches_are_bounded_in_bytes_and_recipient_rows(backend: Backend) {
    let (db, s): (_, S) = open(backend).await;
    let url = db.url.clone();
    let watcher = Uuid::now_v7();
    let audience: Vec<Uuid> = (0..50).map(|_| Uuid::now_v7()).collect();
    let start = s.event_start().await.expect("start");
    let (e1, e2, e3, e4) = (
        Uuid::now_v7(),
        Uuid::now_v7(),
        Uuid::now_v7(),
        Uuid::now_v7(),
    );
    let (p100, own300) = (payload_of(100), payload_of(300));
    let big: Vec<(Uuid, Option<&str>)> = audience
        .iter()
        .map(|c| (*c, None))
        .chain([(watcher, None)])
        .collect();
    let sql = format!(
        "BEGIN; {} {} {} {} COMMIT;",
        // A large audience, the watcher among them; 100 bytes.
        insert_event_with(backend, e1, 0, 1, &p100, &big),
        // The watcher's own 300 bytes beside a shared 100.
        insert_event_with(
            backend,
            e2,
            1,
            1,
            &p100,
            &[(watcher, Some(&own300)), (audience[0], None)]
        ),
        insert_event_with(backend, e3, 2, 1, &p100, &[(watcher, None)]),
        // Not the watcher's.
        insert_event_with(backend, e4, 3, 1, &p100, &[(audience[1], None)]),
    );
    blocking(move || Raw::connect(backend, &url).run(&sql)).await;
    readable(&s, e4).await;
    let to = asking(&[watcher]);

    // Everything in one read: the watcher alone among e1's 51 recipients,
    // with the shared payload (no copy of it per recipient).
    let whole = s
        .recent_events(start, FanOutLimits::default(), to.clone())
        .await
        .expect("whole");
    assert!(!whole.more);
    assert_eq!(
        fanned(&whole),
        vec![
            (e1, p100.clone(), vec![(watcher, None)]),
            (e2, p100.clone(), vec![(watcher, Some(own300.clone()))]),
            (e3, p100.clone(), vec![(watcher, None)]),
            (e4, p100.clone(), vec![]),
        ],
        "{backend:?}"
    );

    // Bytes: 150 fit e1 alone (e2 is 100 + 300), e2 alone past them, then
    // e3 (e3 and e4 together are 200), then e4.
    let bytes = FanOutLimits {
        bytes: 150,
        ..FanOutLimits::default()
    };
    assert_eq!(
        read_all(&s, start, bytes, &to).await,
        vec![vec![e1], vec![e2], vec![e3], vec![e4]],
        "{backend:?}"
    );
    // Own payloads of recipients not asked for cost nothing: for others,
    // e2 is 100 bytes, and e1 and e2 fit 250.
    let others = asking(&[audience[0]]);
    let roomy = FanOutLimits {
        bytes: 250,
        ..FanOutLimits::default()
    };
    assert_eq!(
        read_all(&s, start, roomy, &others).await,
        vec![vec![e1, e2], vec![e3, e4]],
        "{backend:?}"
    );

    // Recipient rows: e1's 51 exceed 10, so it is read alone and whole
    // (the watcher is found wherever its row lies); then e2 to e4 (4
    // rows) at once.
    let rows = FanOutLimits {
        recipient_rows: 10,
        ..FanOutLimits::default()
    };
    let first = s
        .recent_events(start, rows, to.clone())
        .await
        .expect("rows");
    assert!(first.more);
    assert_eq!(
        fanned(&first),
        vec![(e1, p100.clone(), vec![(watcher, None)])],
        "{backend:?}"
    );
    assert_eq!(
        read_all(&s, start, rows, &to).await,
        vec![vec![e1], vec![e2, e3, e4]],
        "{backend:?}"
    );
    // Three rows: e2's two and e3's one reach the limit, so e3's may be
    // cut: e2 alone, then e3 and e4 (two rows).
    let three = FanOutLimits {
        recipient_rows: 3,
        ..FanOutLimits::default()
    };
    let after_e1 = first.events[0].event.position;
    assert_eq!(
        read_all(&s, after_e1, three, &to).await,
        vec![vec![e2], vec![e3, e4]],
        "{backend:?}"
    );

    // Events: two at a time.
    assert_eq!(
        read_all(&s, start, FanOutLimits::events(2), &to).await,
        vec![vec![e1, e2], vec![e3, e4], vec![]],
        "{backend:?}"
    );
    drop(db);
}

#[tokio::test]
async fn postgres_fan_out_batches_are_bounded_in_bytes_and_recipient_rows() {
    fan_out_batches_are_bounded_in_bytes_and_recipient_rows(Backend::Postgres).await;
}

#[tokio::test]
async fn sqlite_fan_out_batches_are_bounded_in_bytes_and_recipient_rows() {
    fan_out_batches_are_bounded_in_bytes_and_recipient_rows(Backend::Sqlite).await;
}

/// Pruning takes, of the oldest events by position, those created before
/// the limit: a young event committed first does not shield an old one
/// committed after it, and stays with its recipient.
#[tokio::test]
async fn pruning_takes_the_old_among_the_first_positions() {
    for backend in [Backend::Postgres, Backend::Sqlite] {
        let (db, s): (_, S) = open(backend).await;
        let url = db.url.clone();
        let who = Uuid::now_v7();
        let (young, old) = (Uuid::now_v7(), Uuid::now_v7());
        let left = blocking(move || {
            let mut raw = Raw::connect(backend, &url);
            raw.run(&format!(
                "BEGIN; {} COMMIT;",
                insert_event(backend, young, 0, 50, &[(who, None)])
            ));
            raw.run(&format!(
                "BEGIN; {} COMMIT;",
                insert_event(backend, old, 0, 10, &[(who, None)])
            ));
            raw
        })
        .await;
        assert_eq!(
            s.prune_events(Timestamp::from_micros(15), 100)
                .await
                .expect("prune"),
            1,
            "{backend:?}"
        );
        assert!(s
            .event_position(EventId::from_uuid(young))
            .await
            .expect("pos")
            .is_some());
        assert_eq!(
            s.event_position(EventId::from_uuid(old))
                .await
                .expect("pos"),
            None
        );
        let rows = blocking(move || {
            let mut raw = left;
            raw.number("(SELECT COUNT(*) FROM event_recipients)")
        })
        .await;
        assert_eq!(rows, 1, "{backend:?}: the young event's recipient is kept");
        drop(db);
    }
}

#[tokio::test]
async fn live_token_hashes_are_those_neither_revoked_nor_expired() {
    for backend in [Backend::Postgres, Backend::Sqlite] {
        let (db, s): (_, S) = open(backend).await;
        let alice = crate::support::contact(&s, "alice").await;
        let token = |hash: &str, expires: Option<i64>| confab_ports::NewToken {
            id: Uuid::now_v7(),
            contact_id: alice.id(),
            hash: hash.to_owned(),
            created_at: Timestamp::from_secs(1),
            expires_at: expires.map(Timestamp::from_secs),
        };
        s.insert_token(token("live", None)).await.expect("live");
        s.insert_token(token("expired", Some(5)))
            .await
            .expect("exp");
        let now = Timestamp::from_secs(10);
        let mut live = s
            .live_token_hashes(vec!["live".into(), "expired".into(), "unknown".into()], now)
            .await
            .expect("live");
        live.sort();
        assert_eq!(live, vec!["live".to_owned()]);
        s.revoke_tokens(alice.id(), now).await.expect("revoke");
        assert!(s
            .live_token_hashes(vec!["live".into()], now)
            .await
            .expect("live")
            .is_empty());
        assert!(s
            .live_token_hashes(Vec::new(), now)
            .await
            .expect("none")
            .is_empty());
        drop(db);
    }
}
