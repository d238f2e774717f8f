//! `search_messages`: both steps of a search (the recent rows of each range,
//! then the store's index) give the answer a plain scan of the viewer's
//! messages gives, page after page, for terms the recent rows are full of,
//! terms only an old message has, terms without three letters or digits in
//! a row, and none; with a filter's conversation the viewer does not see
//! `NotFound`, with a cursor they cannot see `CursorNotFound`. On SQLite,
//! alike from the index and from its backlog.

use confab_domain::{fold, Contact, Cursor, Message, MessageId, SearchQuery};
use confab_ports::{SearchFilter, StoreError};
use confab_tests::db::Backend;
use diesel::connection::SimpleConnection as _;
use diesel::sql_types::BigInt;
use diesel::{Connection as _, QueryableByName, RunQueryDsl as _, SqliteConnection};

use crate::support::{
    assert_err, at, contact, direct, group, group_conversation, msg_ids, page, send, S,
};

/// Every page of `viewer`'s search for `query`, by `limit`, forwards.
async fn every_page(
    s: &S,
    viewer: &Contact,
    query: &str,
    filter: SearchFilter,
    limit: i64,
) -> Vec<MessageId> {
    let query = SearchQuery::parse(query).expect("query");
    let mut all = Vec::new();
    let mut cursor = None;
    loop {
        let p = s
            .search_messages(viewer.id(), query.clone(), filter, page(limit, cursor))
            .await
            .expect("search");
        all.extend(msg_ids(&p));
        match (p.has_more, all.last()) {
            (true, Some(last)) => cursor = Some(Cursor::After(*last)),
            _ => return all,
        }
    }
}

/// What a search must find: of `seen` (the viewer's messages), those whose
/// folded text has every term, newest first.
fn expected(seen: &[Message], query: &str) -> Vec<MessageId> {
    let query = SearchQuery::parse(query).expect("query");
    let mut hits: Vec<&Message> = seen
        .iter()
        .filter(|m| query.matches(&fold(m.text().as_str())))
        .collect();
    hits.sort_by_key(|m| std::cmp::Reverse((m.created_at(), m.id())));
    hits.into_iter().map(|m| m.id()).collect()
}

/// What [`setup`] made: the viewer (alice), bob, mallory (in none of
/// alice's conversations), the big group's conversation, and the messages
/// alice sees.
struct World {
    alice: Contact,
    bob: Contact,
    mallory: Contact,
    conv: confab_domain::Conversation,
    seen: Vec<Message>,
}

/// The viewer in 200 groups, so that step 1 reads 20 rows of each range:
/// one group's conversation holds 130 messages, older ones beyond that.
async fn setup(s: &S) -> World {
    let alice = contact(s, "alice").await;
    let bob = contact(s, "bob").await;
    let mallory = contact(s, "mallory").await;
    let big = group(s, &alice, &[&bob], at(10)).await;
    let conv = group_conversation(s, &alice, big.id(), at(11)).await;
    for _ in 0..199 {
        group(s, &alice, &[&bob], at(12)).await;
    }
    let mut seen = Vec::new();
    for i in 0..130_i64 {
        let text = match i {
            0 => "the rare needle, Common too".to_owned(),
            1 => "version x.y.z is out, common".to_owned(),
            2 => "東京都 common".to_owned(),
            _ => format!("common filler number {i}"),
        };
        let sender = if i % 3 == 0 { &bob } else { &alice };
        seen.push(send(s, &conv, sender, &text, at(100 + i)).await);
    }
    let dm = direct(s, &alice, &bob, at(20)).await;
    seen.push(send(s, &dm, &bob, "a needle in the direct one", at(50)).await);
    // Not alice's: never found by her.
    let theirs = direct(s, &bob, &mallory, at(20)).await;
    send(s, &theirs, &mallory, "needle common x.y.z 東京都", at(400)).await;
    World {
        alice,
        bob,
        mallory,
        conv,
        seen,
    }
}

async fn both_steps_answer_as_a_scan_would(s: S) {
    let world = setup(&s).await;
    every_query_answers_as_a_scan_would(&s, &world).await;
}

/// Each query, filter and page size of the suite against [`expected`].
async fn every_query_answers_as_a_scan_would(s: &S, w: &World) {
    let World {
        alice,
        bob,
        mallory,
        conv,
        seen,
    } = w;
    let none = SearchFilter::default();
    for (query, limit) in [
        ("common", 10),
        ("COMMON", 100),
        ("needle", 3),
        ("rare needle", 10),
        ("x.y.z version", 5),
        ("東京都", 5),
        ("filler 120", 4),
        ("absent", 10),
    ] {
        assert_eq!(
            every_page(s, alice, query, none, limit).await,
            expected(seen, query),
            "{query} by {limit}"
        );
    }
    // By conversation, and by sender.
    let in_conv = SearchFilter {
        conversation: Some(conv.id()),
        ..SearchFilter::default()
    };
    let only_group: Vec<Message> = seen
        .iter()
        .filter(|m| m.conversation_id() == conv.id())
        .cloned()
        .collect();
    for query in ["needle", "common", "out x.y.z"] {
        assert_eq!(
            every_page(s, alice, query, in_conv, 7).await,
            expected(&only_group, query),
            "{query} in the group"
        );
    }
    let by_bob = SearchFilter {
        sender: Some(bob.id()),
        ..SearchFilter::default()
    };
    let bobs: Vec<Message> = seen
        .iter()
        .filter(|m| m.sender().id() == bob.id())
        .cloned()
        .collect();
    for query in ["needle", "common"] {
        assert_eq!(
            every_page(s, alice, query, by_bob, 9).await,
            expected(&bobs, query),
            "{query} by bob"
        );
    }

    // Mallory finds only her own; a filter or cursor she cannot see fails.
    assert_eq!(every_page(s, mallory, "needle", none, 10).await.len(), 1);
    let q = SearchQuery::parse("needle").expect("query");
    assert_err!(
        s.search_messages(mallory.id(), q.clone(), in_conv, page(10, None))
            .await,
        StoreError::NotFound
    );
    assert_err!(
        s.search_messages(
            mallory.id(),
            q,
            none,
            page(10, Some(Cursor::After(seen[0].id())))
        )
        .await,
        StoreError::CursorNotFound
    );
}

confab_tests::on_both_stores!(
    crate::support::on_store;
    both_steps_answer_as_a_scan_would,
);

/// A count read on a connection of the test's own.
fn count(raw: &mut SqliteConnection, table: &str) -> i64 {
    #[derive(QueryableByName)]
    struct N {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let row: N = diesel::sql_query(format!("SELECT count(*) AS n FROM {table}"))
        .get_result(raw)
        .expect("count");
    row.n
}

/// SQLite: the same answers with every message in the backlog of migration
/// `search_backlog` (the index empty) and with every message indexed (the
/// backlog empty), and FTS5 then finds the index whole. The store's own
/// indexer moves the backlog into the index every 100 ms, so the test
/// holds SQLite's write lock on a connection of its own while it searches
/// the backlog (searches only read).
#[tokio::test]
async fn on_sqlite_the_index_and_its_backlog_answer_alike() {
    let (db, s) = crate::support::open(Backend::Sqlite).await;
    let world = setup(&s).await;
    let mut raw = SqliteConnection::establish(&db.url).expect("open");
    raw.batch_execute("PRAGMA busy_timeout = 10000")
        .expect("pragma");
    let messages = count(&mut raw, "messages");
    let mut tries = 0;
    loop {
        raw.batch_execute(
            "BEGIN IMMEDIATE;
             INSERT INTO messages_search (messages_search) VALUES ('delete-all');
             INSERT OR IGNORE INTO messages_search_backlog (message_rowid)
                 SELECT rowid FROM messages;
             COMMIT;
             BEGIN IMMEDIATE;",
        )
        .expect("all in the backlog");
        // The indexer may have taken the lock between the two
        // transactions: then again.
        if count(&mut raw, "messages_search_backlog") == messages {
            break;
        }
        raw.batch_execute("ROLLBACK").expect("release");
        tries += 1;
        assert!(tries < 20, "the indexer always came in between");
    }
    every_query_answers_as_a_scan_would(&s, &world).await;
    raw.batch_execute("ROLLBACK").expect("release");

    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while count(&mut raw, "messages_search_backlog") > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the indexer left the backlog as it was"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    raw.batch_execute(
        "INSERT INTO messages_search (messages_search, rank) VALUES ('integrity-check', 1)",
    )
    .expect("the index matches the messages");
    every_query_answers_as_a_scan_would(&s, &world).await;
    drop(raw);
    drop(s);
    drop(db);
}
