//! What keeps searches from taking the service from others, over real HTTP
//! on both stores: a query that no index could find (punctuation alone) is
//! a 400 that says what to do, and a contact runs at most two searches at
//! once (one more is 429 `too_many_searches` with `Retry-After`). On
//! PostgreSQL, a search statement that cannot finish is cancelled after
//! 1 s and answered 503, never later than a request may wait.
//! (`tests/hostile/search.sh` measures the victim's latency under attack.)

use std::time::{Duration, Instant};

use confab_tests::db::{execute, Backend};
use confab_tests::http::{Resp, TestApp, User};
use diesel::connection::SimpleConnection as _;
use diesel::{Connection as _, PgConnection};

use crate::support::{id_of, pair};

/// `GET /v1/messages/search?query=<query>`, percent-encoded.
async fn search(app: &TestApp, user: &User, query: &str) -> Resp {
    let url = reqwest::Url::parse_with_params("http://x/v1/messages/search", [("query", query)])
        .expect("url");
    let q = url.query().unwrap_or_default();
    app.get(user, &format!("/v1/messages/search?{q}")).await
}

async fn punctuation_alone_is_a_400_that_says_what_to_do(app: TestApp) {
    let (alice, _bob, conv) = pair(&app).await;
    let r = app
        .post(
            &alice,
            "/v1/messages",
            &[
                ("conversation_id", &conv),
                ("message", "wait... what? v1.2.3 -.-"),
            ],
        )
        .await;
    let id = id_of(r.expect(201));
    for query in ["...", "-.-", "v1.2.3", "?!? ...", "a.b.c e() ___"] {
        let r = search(&app, &alice, query).await;
        r.expect_error(400, "parameter_invalid", Some("query"));
        let message = r.body["message"].as_str().expect("message");
        assert!(
            message.starts_with("query ") && message.contains("3 letters or digits in a row"),
            "{query:?}: {message}"
        );
    }
    // Beside a word, punctuation is text to find like any other.
    for query in ["wait ...", "... what", "-.- wait", "v1.2.3 what?"] {
        let r = search(&app, &alice, query).await;
        let body = r.expect(200);
        assert_eq!(body["data"][0]["id"], id.as_str(), "{query:?}: {}", r.raw);
    }
}

/// `n` messages of `sender` in conversation `conv`, made in SQL from the
/// one just sent (the API's rate limit would take minutes): each has
/// "dolor" and "lorem", none "dolorem", so a search for it makes either
/// store's index hand over every one of them to be checked.
fn seed(app: &TestApp, template: &str, n: u32) {
    let columns = "id, conversation_id, sender_id, body, read_at, created_at, updated_at, \
                   direct_creator_id, direct_peer_id, group_id, seq, reply_to_id, parent_id, \
                   reply_count, last_reply_at, edited_at, mentions, body_folded";
    let body = "'lorem ipsum dolor sit amet ' || n";
    let sql = match app.backend {
        Backend::Postgres => format!(
            "INSERT INTO messages ({columns}) \
             SELECT gen_random_uuid(), t.conversation_id, t.sender_id, {body}, NULL, \
                    t.created_at - n * 1000, NULL, t.direct_creator_id, t.direct_peer_id, \
                    t.group_id, t.seq + n, NULL, NULL, 0, NULL, NULL, NULL, {body} \
             FROM messages t, generate_series(1, {n}) AS n WHERE t.id = '{template}'"
        ),
        Backend::Sqlite => format!(
            "PRAGMA busy_timeout = 10000; \
             WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < {n}), \
             ids AS MATERIALIZED (SELECT n, lower(hex(randomblob(16))) AS h FROM g) \
             INSERT INTO messages ({columns}) \
             SELECT substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-7' || substr(h, 14, 3) \
                    || '-8' || substr(h, 18, 3) || '-' || substr(h, 21, 12), \
                    t.conversation_id, t.sender_id, {body}, NULL, t.created_at - n * 1000, \
                    NULL, t.direct_creator_id, t.direct_peer_id, t.group_id, t.seq + n, \
                    NULL, NULL, 0, NULL, NULL, NULL, {body} \
             FROM messages t, ids WHERE t.id = '{template}'"
        ),
    };
    execute(app.database_url(), app.backend, &sql);
}

/// Twelve searches of one contact at once, each reading 20,000 messages:
/// at most two run, the others are refused at once with the limit and
/// `Retry-After`; another contact's search is not refused meanwhile; one
/// at a time, none is refused.
async fn a_contact_runs_at_most_two_searches_at_once(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let r = app
        .post(
            &alice,
            "/v1/messages",
            &[
                ("conversation_id", &conv),
                ("message", "lorem ipsum dolor sit amet"),
            ],
        )
        .await;
    seed(&app, &id_of(r.expect(201)), 20_000);

    let started = Instant::now();
    let all =
        futures_util::future::join_all((0..12).map(|_| search(&app, &alice, "dolorem"))).await;
    let (mut ran, mut refused) = (0, 0);
    for r in &all {
        match r.status.as_u16() {
            200 => ran += 1,
            429 => {
                r.expect_error(429, "too_many_searches", None);
                assert_eq!(r.header("retry-after"), Some("1"), "{}", r.raw);
                assert!(r.raw.contains("at most 2 searches"), "{}", r.raw);
                refused += 1;
            }
            _ => panic!("unexpected answer: {} {}", r.status, r.raw),
        }
    }
    assert!(
        ran >= 2 && refused >= 1,
        "{ran} ran, {refused} refused in {:?}",
        started.elapsed()
    );
    // Someone else's searches have slots of their own.
    let (theirs, _hers) = tokio::join!(
        search(&app, &bob, "dolorem"),
        futures_util::future::join_all((0..2).map(|_| search(&app, &alice, "dolorem")))
    );
    theirs.expect(200);
    // One at a time, nothing is refused.
    for _ in 0..3 {
        search(&app, &alice, "dolorem").await.expect(200);
    }
}

/// PostgreSQL: while `messages` is locked, searches wait in the database;
/// each statement is cancelled after 1 s (503, well before a request's
/// 2 s), and the contact's two slots are taken meanwhile, so a third
/// search is refused at once. Once the lock goes, searches answer.
/// (SQLite's readers never wait for a lock, WAL: nothing to cancel.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_search_that_cannot_finish_is_cancelled() {
    let app = TestApp::spawn(Backend::Postgres).await;
    let (alice, _bob, conv) = pair(&app).await;
    app.post(
        &alice,
        "/v1/messages",
        &[("conversation_id", &conv), ("message", "something to find")],
    )
    .await
    .expect(201);
    let url = app.database_url().to_owned();
    let (locked, unlock) = (
        tokio::sync::oneshot::channel(),
        tokio::sync::oneshot::channel(),
    );
    let (locked_tx, locked_rx) = locked;
    let (unlock_tx, unlock_rx) = unlock;
    let locker = std::thread::spawn(move || {
        let mut conn = PgConnection::establish(&url).expect("connect");
        conn.batch_execute("BEGIN; LOCK TABLE messages IN ACCESS EXCLUSIVE MODE")
            .expect("lock");
        locked_tx.send(()).expect("tell");
        unlock_rx.blocking_recv().expect("wait");
        conn.batch_execute("COMMIT").expect("unlock");
    });
    locked_rx.await.expect("locked");

    let started = Instant::now();
    let waiting = futures_util::future::join_all((0..2).map(|_| search(&app, &alice, "something")));
    let third = async {
        // Once both are in, a third is refused without waiting.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let asked = Instant::now();
        let r = search(&app, &alice, "something").await;
        (r, asked.elapsed())
    };
    let (waited, (third, third_took)) = tokio::join!(waiting, third);
    third.expect_error(429, "too_many_searches", None);
    assert!(third_took < Duration::from_millis(500), "{third_took:?}");
    for r in &waited {
        r.expect_error(503, "unavailable", None);
    }
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_millis(2500),
        "{took:?}"
    );
    unlock_tx.send(()).expect("unlock");
    locker.join().expect("locker");
    let r = search(&app, &alice, "something").await;
    assert_eq!(r.expect(200)["data"].as_array().map(Vec::len), Some(1));
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    punctuation_alone_is_a_400_that_says_what_to_do,
    a_contact_runs_at_most_two_searches_at_once,
);
