//! Searches run on their own share of the database (`door::search`), never
//! on the pool's connections: on PostgreSQL, with a pool of one connection
//! and one search at a time, searches held by a lock on `messages` leave
//! the pool to everything else, and each of their statements is cancelled
//! after 1 s; the search waiting for its turn is answered within the
//! call's 1.8 s. (SQLite's readers never wait for a lock; its searches'
//! own threads are checked in `confab-store-sqlite`, and both stores
//! under load by `tests/hostile/search.sh`.)

use std::sync::Arc;
use std::time::{Duration, Instant};

use confab_domain::{Page, PageLimit, SearchQuery};
use confab_ports::{SearchFilter, StoreError};
use confab_store_postgres::PgStore;
use confab_tests::db::{Backend, TestDb};
use diesel::connection::SimpleConnection as _;
use diesel::{Connection as _, PgConnection};

use crate::support::{at, contact, direct, send, S};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_searches_never_take_the_pools_connections() {
    let (db, s) = tokio::task::spawn_blocking(|| {
        let db = TestDb::new(Backend::Postgres);
        let store = PgStore::connect_with(&db.url, 1)
            .expect("connect")
            .with_search_connections(1);
        let s: S = Arc::new(store);
        (db, s)
    })
    .await
    .expect("join");
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let conv = direct(&s, &alice, &bob, at(10)).await;
    send(&s, &conv, &alice, "something to find", at(11)).await;

    let url = db.url.clone();
    let (locked_tx, locked_rx) = tokio::sync::oneshot::channel();
    let (unlock_tx, unlock_rx) = tokio::sync::oneshot::channel::<()>();
    let locker = std::thread::spawn(move || {
        let mut conn = PgConnection::establish(&url).expect("connect");
        conn.batch_execute("BEGIN; LOCK TABLE messages IN ACCESS EXCLUSIVE MODE")
            .expect("lock");
        locked_tx.send(()).expect("tell");
        unlock_rx.blocking_recv().expect("wait");
        conn.batch_execute("COMMIT").expect("unlock");
    });
    locked_rx.await.expect("locked");

    let viewer = alice.id();
    let search = move |s: S| async move {
        let started = Instant::now();
        let page = Page {
            limit: PageLimit::default(),
            cursor: None,
        };
        let found = s
            .search_messages(
                viewer,
                SearchQuery::parse("something").expect("query"),
                SearchFilter::default(),
                page,
            )
            .await;
        (found, started.elapsed())
    };
    let held = [
        tokio::spawn(search(s.clone())),
        tokio::spawn(search(s.clone())),
    ];
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The pool's one connection is free for everything else meanwhile.
    for _ in 0..5 {
        let asked = Instant::now();
        let found = s.contact(bob.id()).await.expect("a read");
        assert_eq!(found.map(|c| c.id()), Some(bob.id()));
        assert!(
            asked.elapsed() < Duration::from_millis(500),
            "{:?}",
            asked.elapsed()
        );
    }
    let mut took = Vec::new();
    for search in held {
        let (found, elapsed) = search.await.expect("join");
        assert!(
            matches!(found, Err(StoreError::Unavailable(_))),
            "{found:?}"
        );
        took.push(elapsed);
    }
    took.sort();
    // The first is cancelled by PostgreSQL after 1 s; the other waited for
    // its turn, then for the lock, until its call's deadline.
    assert!(
        took[0] >= Duration::from_millis(900) && took[0] < Duration::from_millis(1700),
        "{took:?}"
    );
    assert!(took[1] < Duration::from_millis(2500), "{took:?}");
    unlock_tx.send(()).expect("unlock");
    locker.join().expect("locker");
    // Once the lock is gone, searches answer again.
    let (found, _) = search(s.clone()).await;
    assert_eq!(found.expect("found").items.len(), 1);
    drop(s);
    drop(db);
}
