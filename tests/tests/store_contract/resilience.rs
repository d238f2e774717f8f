//! Adapter-specific: PostgreSQL down and back, two SQLite stores on one
//! file.

use std::sync::Arc;
use std::time::{Duration, Instant};

use confab_domain::Cursor;
use confab_ports::StoreError;
use confab_store_postgres::PgStore;
use confab_store_sqlite::SqliteStore;
use confab_tests::db::{postgres_admin_url, Backend};
use diesel::connection::SimpleConnection as _;
use diesel::{Connection as _, PgConnection};

use crate::support::no_events;
use crate::support::{assert_err, at, at_us, contact, direct, msg_ids, new_message, open, page, S};

/// A database that cannot be reached fails fast instead of hanging requests.
#[test]
fn postgres_connect_fails_fast_when_the_database_is_down() {
    let started = Instant::now();
    let result = PgStore::connect("postgres://postgres@127.0.0.1:1/confab");
    assert!(result.is_err());
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
}

/// Runs one statement as the PostgreSQL superuser.
async fn pg_admin(sql: String) {
    tokio::task::spawn_blocking(move || {
        let mut admin = PgConnection::establish(&postgres_admin_url()).expect("admin connection");
        admin
            .batch_execute(&sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    })
    .await
    .expect("join");
}

/// While the database refuses connections (its server connections killed,
/// as in a restart), calls fail fast with `Unavailable`; once it is back,
/// the same store works again without being rebuilt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_fails_fast_while_down_and_recovers() {
    let (db, s) = open(Backend::Postgres).await;
    let name = db
        .postgres_name()
        .expect("a PostgreSQL database")
        .to_owned();
    let alice = contact(&s, "alice").await;

    pg_admin(format!("ALTER DATABASE {name} ALLOW_CONNECTIONS false")).await;
    pg_admin(format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"
    ))
    .await;
    let started = Instant::now();
    assert_err!(s.ping().await, StoreError::Unavailable(_));
    assert_err!(s.contact(alice.id()).await, StoreError::Unavailable(_));
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "took {:?}",
        started.elapsed()
    );

    pg_admin(format!("ALTER DATABASE {name} ALLOW_CONNECTIONS true")).await;
    s.ping().await.expect("recovered");
    assert_eq!(s.contact(alice.id()).await.expect("get"), Some(alice));
    contact(&s, "bob").await;
    drop(s);
    drop(db);
}

/// A restart kills every pooled connection, and checkouts do not test
/// theirs (no `SELECT 1` per request): the first call on a dead connection
/// may fail with `Unavailable`, but it makes the store replace the others,
/// so the next call succeeds, reads and writes alike. That holds for both
/// kinds of connection PostgreSQL's store keeps: the diesel pool's, and the
/// ones a message or a conversation's page is read on (awaited on the
/// caller's thread), whichever of them meets the restart first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_after_a_restart_at_most_one_call_fails() {
    for first_read_on_async_connection in [true, false] {
        restart_then_one_call_at_most_fails(first_read_on_async_connection).await;
    }
}

async fn restart_then_one_call_at_most_fails(first_read_on_async_connection: bool) {
    let (db, s) = open(Backend::Postgres).await;
    let name = db
        .postgres_name()
        .expect("a PostgreSQL database")
        .to_owned();
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let m = s
        .append_message(new_message(&c, &alice, "hello", at(2)), no_events(), None)
        .await
        .expect("send");
    // Several connections of both kinds, all idle: the reads' are this
    // thread's own (they run concurrently in this task, not spawned).
    let read = || async {
        s.contact_by_username("alice").await.expect("lookup");
        s.message_for(alice.id(), m.id()).await.expect("read");
        s.list_messages(alice.id(), Some(c.id()).into(), page(10, None))
            .await
            .expect("page");
    };
    tokio::join!(read(), read(), read(), read());

    pg_admin(format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"
    ))
    .await;
    // Every call from here on either succeeds or, once at most, fails
    // with `Unavailable`.
    let mut failed = 0;
    let mut check = |outcome: Result<bool, StoreError>, what: &str| match outcome {
        Ok(found) => assert!(found, "{what}"),
        Err(e) => {
            assert!(matches!(e, StoreError::Unavailable(_)), "{what}: {e:?}");
            failed += 1;
        }
    };
    let first = if first_read_on_async_connection {
        s.message_for(alice.id(), m.id())
            .await
            .map(|found| found.is_some())
    } else {
        s.contact(alice.id()).await.map(|found| found.is_some())
    };
    check(first, "the first call");
    for _ in 0..5 {
        check(
            s.contact(alice.id())
                .await
                .map(|found| found == Some(alice.clone())),
            "a contact",
        );
        check(
            s.message_for(alice.id(), m.id())
                .await
                .map(|found| found.as_ref() == Some(&m)),
            "a message",
        );
        check(
            s.list_messages(alice.id(), Some(c.id()).into(), page(10, None))
                .await
                .map(|listed| msg_ids(&listed) == vec![m.id()]),
            "a page",
        );
    }
    assert!(failed <= 1, "{failed} calls failed after the restart");
    contact(&s, "carol").await;
    drop(s);
    drop(db);
}

/// Two stores on one SQLite file (as the server and the CLI would be) do not
/// share the in-process writer queue: their writers meet at SQLite's lock,
/// and `BEGIN IMMEDIATE` with the busy timeout still lets every one through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_writers_of_two_stores_on_one_file_all_succeed() {
    let (db, first) = open(Backend::Sqlite).await;
    let url = db.url.clone();
    let second: S = tokio::task::spawn_blocking(move || {
        Arc::new(SqliteStore::open(&url).expect("open again")) as S
    })
    .await
    .expect("join");
    let alice = contact(&first, "alice").await;
    let bob = contact(&second, "bob").await;
    let c = direct(&first, &alice, &bob, at(1)).await;

    let mut tasks = Vec::new();
    for w in 0..8_i64 {
        for (store, sender) in [(&first, &alice), (&second, &bob)] {
            let (s, c, sender) = (store.clone(), c.clone(), sender.clone());
            tasks.push(tokio::spawn(async move {
                for i in 0..10 {
                    s.append_message(
                        new_message(&c, &sender, "x", at_us(2, w * 100 + i)),
                        no_events(),
                        None,
                    )
                    .await
                    .unwrap_or_else(|e| panic!("writer {w}: {e}"));
                }
            }));
        }
    }
    for t in tasks {
        t.await.expect("writer");
    }
    let first_page = second
        .list_messages(alice.id(), Some(c.id()).into(), page(100, None))
        .await
        .expect("list");
    assert!(first_page.has_more);
    let last = first_page.items.last().map(|m| m.id()).expect("messages");
    let rest = first
        .list_messages(
            bob.id(),
            Some(c.id()).into(),
            page(100, Some(Cursor::After(last))),
        )
        .await
        .expect("list");
    assert!(!rest.has_more);
    let mut ids = msg_ids(&first_page);
    ids.extend(msg_ids(&rest));
    assert_eq!(ids.len(), 160);
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 160, "each message once");
    drop((first, second));
    drop(db);
}

/// Each of `sends` (its outcome, and when it came) was answered
/// `Unavailable` well before the lock that held it went.
async fn answered_unavailable_in_time(
    sends: Vec<tokio::task::JoinHandle<(Result<(), StoreError>, Duration)>>,
) {
    for t in sends {
        let (r, took) = t.await.expect("join");
        assert_err!(r, StoreError::Unavailable(_));
        assert!(
            took < Duration::from_millis(1200),
            "answered after {took:?}"
        );
    }
}

/// Another session takes conversation `c`'s row lock and holds it for
/// `hold`; returns once it is taken.
fn lock_conversation(
    url: &str,
    c: &confab_domain::Conversation,
    hold: Duration,
) -> std::thread::JoinHandle<()> {
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let conv_id = c.id().as_uuid().to_string();
    let url = url.to_owned();
    let locker = std::thread::spawn(move || {
        let mut conn = PgConnection::establish(&url).expect("locker connection");
        conn.batch_execute(&format!(
            "BEGIN; SELECT 1 FROM conversations WHERE id = '{conv_id}' FOR UPDATE"
        ))
        .expect("lock the conversation");
        locked_tx.send(()).expect("locked");
        std::thread::sleep(hold);
        conn.batch_execute("COMMIT").expect("release the lock");
    });
    locked_rx.recv().expect("locked");
    locker
}

/// Alice, Bob and their direct conversation.
async fn alice_and_bob(
    store: &S,
) -> (
    confab_domain::Contact,
    confab_domain::Contact,
    confab_domain::Conversation,
) {
    let alice = contact(store, "alice").await;
    let bob = contact(store, "bob").await;
    let c = direct(store, &alice, &bob, at(1)).await;
    (alice, bob, c)
}

/// A send's outbox with its lone `message.created` event: the send that
/// takes PostgreSQL's one-statement path.
fn with_event(m: &confab_ports::NewMessage) -> confab_ports::Outbox {
    let change = confab_domain::Change::new(m.sender.id(), m.created_at);
    let id = || confab_domain::EventId::from_uuid(uuid::Uuid::now_v7());
    let events = confab_domain::message_sent(change, id, m.id, m.conversation_id);
    confab_ports::Outbox::new(
        events,
        Arc::new(confab_server::payloads::WirePayloads::default()),
    )
}

/// The viewer's events once at least one is readable (an event becomes
/// readable once no older transaction is still open), within 2 s.
async fn events_once_readable(
    store: &S,
    viewer: confab_domain::ContactId,
) -> Vec<confab_ports::StoredEvent> {
    let mut events = Vec::new();
    for _ in 0..100 {
        events = store.events_for(viewer, 0, 1000).await.expect("events");
        if !events.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    events
}

/// The usual send (a message with its `message.created` event: on
/// PostgreSQL one statement in a transaction of its own, on an
/// asynchronous connection) that waits on a row lock past its deadline is
/// answered `Unavailable` in time, and its transaction never commits, also
/// once the lock goes: neither its message nor its event is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_send_past_its_deadline_never_commits() {
    let (db, plain) = open(Backend::Postgres).await;
    let url = db.url.clone();
    let pg = tokio::task::spawn_blocking(move || {
        PgStore::connect(&url)
            .expect("connect")
            .with_deadline(Duration::from_millis(700))
    })
    .await
    .expect("join");
    let s: S = Arc::new(pg);
    let (alice, bob, c) = alice_and_bob(&plain).await;

    // Held past the sends' deadline (0.7 s) but not past the server's
    // statement timeout (1.5 s): once it goes, a send that was not rolled
    // back would complete and commit.
    let locker = lock_conversation(&db.url, &c, Duration::from_millis(1000));
    let started = Instant::now();
    let sends: Vec<_> = (0..4)
        .map(|i| {
            let (s, m) = (s.clone(), new_message(&c, &alice, "x", at_us(2, i)));
            let outbox = with_event(&m);
            tokio::spawn(async move {
                let r = s.append_message(m, outbox, None).await;
                (r.map(|_| ()), started.elapsed())
            })
        })
        .collect();
    answered_unavailable_in_time(sends).await;

    locker.join().expect("locker");
    let m = new_message(&c, &bob, "after", at(3));
    let outbox = with_event(&m);
    let mut sent = None;
    for _ in 0..100 {
        if let Ok(m) = s.append_message(m.clone(), outbox.clone(), None).await {
            sent = Some(m);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let sent = sent.expect("a send goes through once the lock is gone");
    let all = plain
        .list_messages(alice.id(), Some(c.id()).into(), page(100, None))
        .await
        .expect("list");
    assert_eq!(
        msg_ids(&all),
        vec![sent.id()],
        "only the send after the lock"
    );
    // The sends answered 503 left no event either (the one after the lock
    // did: the events are readable).
    let after = events_once_readable(&plain, alice.id()).await;
    assert_eq!(after.len(), 1, "{after:?}");
    drop((s, plain));
    drop(db);
}

/// The usual send on PostgreSQL is one statement in a transaction of its
/// own, which PostgreSQL commits only when it reaches the `Sync` after it:
/// after the statement's row and its `CommandComplete`, before
/// `ReadyForQuery`. A send is written only once that commit is: when the
/// commit fails (here a deferred constraint trigger raising at commit; a
/// server killed during its commit sends the row and then hangs up) the
/// send is an error and nothing of it is kept. Taking the statement's
/// first row as the answer reported such a send as written (the chaos
/// test lost an acknowledged message to it: `pg_ctl -m immediate` makes
/// each backend flush what it holds, the row included, before it exits).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_send_is_written_only_once_its_commit_is() {
    let (db, plain) = open(Backend::Postgres).await;
    let url = db.url.clone();
    let pg = tokio::task::spawn_blocking(move || PgStore::connect(&url).expect("connect"))
        .await
        .expect("join");
    let s: S = Arc::new(pg);
    let (alice, _, c) = alice_and_bob(&plain).await;
    let mut admin = PgConnection::establish(&db.url).expect("admin connection");
    admin
        .batch_execute(
            "CREATE FUNCTION refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$ \
             BEGIN IF NEW.body = 'refused at commit' THEN \
             RAISE EXCEPTION 'refused at commit'; END IF; RETURN NULL; END $$; \
             CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT ON messages \
             DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_at_commit();",
        )
        .expect("install the trigger");
    let send = |text: &str, second: i64| {
        let m = new_message(&c, &alice, text, at(second));
        let outbox = with_event(&m);
        let s = s.clone();
        async move { s.append_message(m, outbox, None).await }
    };

    let refused = send("refused at commit", 2).await;
    assert!(
        refused.is_err(),
        "a send whose commit failed was reported written: {refused:?}"
    );
    let kept = send("kept", 3).await.expect("a send that commits");
    let all = plain
        .list_messages(alice.id(), Some(c.id()).into(), page(100, None))
        .await
        .expect("list");
    assert_eq!(
        msg_ids(&all),
        vec![kept.id()],
        "only the send that committed"
    );
    let events = events_once_readable(&plain, alice.id()).await;
    assert_eq!(
        events.len(),
        1,
        "only the committed send's event: {events:?}"
    );
    drop((s, plain, admin));
    drop(db);
}

/// More calls than the pool has connections wait their turn at the store's
/// gate, counted as waiting; a call whose deadline passes while it waits
/// (or while its write is blocked) is answered `Unavailable` in time and
/// changes nothing; once the database moves again, every later call goes
/// through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_calls_beyond_the_pool_wait_their_turn_within_their_deadline() {
    const POOL: usize = 10;
    const QUEUED: usize = 6;
    let (db, plain) = open(Backend::Postgres).await;
    let url = db.url.clone();
    let pg = tokio::task::spawn_blocking(move || {
        PgStore::connect_with(&url, POOL as u32)
            .expect("connect")
            .with_deadline(Duration::from_millis(700))
    })
    .await
    .expect("join");
    let s: S = Arc::new(pg.clone());
    let alice = contact(&plain, "alice").await;
    let bob = contact(&plain, "bob").await;
    let c = direct(&plain, &alice, &bob, at(1)).await;

    // Another session holds the conversation's row for 1.5 s: every send
    // blocks on it inside PostgreSQL, holding its pooled connection.
    let locker = lock_conversation(&db.url, &c, Duration::from_millis(1500));

    let started = Instant::now();
    let sends: Vec<_> = (0..POOL + QUEUED)
        .map(|i| {
            let (s, c, alice) = (s.clone(), c.clone(), alice.clone());
            tokio::spawn(async move {
                let r = s
                    .append_message(
                        new_message(&c, &alice, "x", at_us(2, i as i64)),
                        no_events(),
                        None,
                    )
                    .await;
                (r.map(|_| ()), started.elapsed())
            })
        })
        .collect();
    // The pool's connections are all blocked; the rest wait at the gate.
    let mut waiting = 0;
    for _ in 0..50 {
        waiting = pg.pool_state().waiting;
        if waiting as usize == QUEUED {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(waiting as usize, QUEUED, "{:?}", pg.pool_state());
    assert!(pg.pool_state().connections as usize <= POOL);
    answered_unavailable_in_time(sends).await;
    assert_eq!(pg.pool_state().waiting, 0);

    // The blocked writes run once the lock goes, and roll back: their
    // callers were answered 503. The queued ones never ran.
    locker.join().expect("locker");
    let mut ok = false;
    for _ in 0..100 {
        if s.append_message(new_message(&c, &bob, "after", at(3)), no_events(), None)
            .await
            .is_ok()
        {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(ok, "a send goes through once the lock is gone");
    let all = plain
        .list_messages(alice.id(), Some(c.id()).into(), page(100, None))
        .await
        .expect("list");
    assert_eq!(
        all.items.len(),
        1,
        "only the send after the lock: {:?}",
        msg_ids(&all)
    );
    drop((s, pg, plain));
    drop(db);
}
