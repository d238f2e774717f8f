//! Erasing a contact with a big history (docs/api.md, "Jobs"): the request
//! locks the contact out at once and answers 202 with a job; the job
//! finishes in the background in short batches, with the events the erase
//! promises, while others are served; a job whose server stopped resumes.

use std::time::{Duration, Instant};

use confab_tests::db::Backend;
use confab_tests::http::{TestApp, User};
use reqwest::Method;
use serde_json::{json, Value};

use super::{admin, call, mint, server_key};
use crate::events::Sse;

/// Messages copied into each of the contact's conversations.
const BULK: i64 = 3000;

/// `n` copies of message `template` (its conversation and sender),
/// numbered after it: the fast way to give a contact a big history.
fn bulk_copies(app: &TestApp, template: &str, n: i64) {
    let columns = "id, conversation_id, sender_id, body, created_at, direct_creator_id, \
                   direct_peer_id, group_id, seq, reply_count, body_folded";
    let copied = "conversation_id, sender_id, body || ' copy', created_at + i, \
                  direct_creator_id, direct_peer_id, group_id, seq + i, 0, body_folded";
    let sql = match app.backend {
        Backend::Postgres => format!(
            "INSERT INTO messages ({columns}) SELECT gen_random_uuid(), {copied} \
             FROM messages, generate_series(1, {n}) i WHERE id = '{template}'"
        ),
        Backend::Sqlite => format!(
            "WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < {n}), \
             r(i, h) AS (SELECT i, lower(hex(randomblob(16))) FROM g) \
             INSERT INTO messages ({columns}) SELECT \
             substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-' || substr(h, 13, 4) || '-' || \
             substr(h, 17, 4) || '-' || substr(h, 21, 12), {copied} \
             FROM messages, r WHERE id = '{template}'"
        ),
    };
    execute(app, &sql);
    execute(
        app,
        &format!(
            "UPDATE conversations SET message_seq = message_seq + {n} \
             WHERE id = (SELECT conversation_id FROM messages WHERE id = '{template}')"
        ),
    );
}

/// Runs `sql` on the app's database beside the server (on SQLite, waiting
/// for the server's writes).
fn execute(app: &TestApp, sql: &str) {
    let sql = match app.backend {
        Backend::Postgres => sql.to_owned(),
        Backend::Sqlite => format!("PRAGMA busy_timeout = 20000; {sql}"),
    };
    confab_tests::db::execute(app.database_url(), app.backend, &sql);
}

/// Alice (made over the server API, with a token), bob and carol; a
/// direct conversation of alice and bob and a group of the three, each
/// with [`BULK`] more of alice's messages; bob's message in the group
/// mentions her. Returns alice, bob, carol, the direct conversation, the
/// group and bob's message.
async fn big_history(app: &TestApp, key: &str) -> (User, User, User, String, String, String) {
    let created = admin(
        app,
        Method::POST,
        "/v1/admin/contacts",
        key,
        Some(json!({"username": "bigalice", "phone_number": "+15550001111"})),
    )
    .await;
    let alice_id = created.expect(201)["id"].as_str().expect("id").to_owned();
    let minted = mint(app, key, &alice_id, json!({})).await;
    let alice = User {
        id: alice_id,
        username: "bigalice".into(),
        token: minted.expect(201)["token"]
            .as_str()
            .expect("token")
            .to_owned(),
    };
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let direct = app.direct(&alice, &bob).await;
    let first = app.send_message(&alice, &direct, "bulk-direct-text").await;
    bulk_copies(app, first["id"].as_str().expect("id"), BULK);
    let group = app
        .json(
            Method::POST,
            &alice,
            "/v1/groups",
            &json!({"name": "big", "contact_ids": [bob.id, carol.id]}),
        )
        .await;
    let group = group.expect(201)["id"].as_str().expect("id").to_owned();
    let talk = app
        .json(
            Method::POST,
            &alice,
            "/v1/conversations",
            &json!({"group_id": group}),
        )
        .await;
    let talk = talk.expect(201)["id"].as_str().expect("id").to_owned();
    let first = app.send_message(&alice, &talk, "bulk-group-text").await;
    bulk_copies(app, first["id"].as_str().expect("id"), BULK);
    let mentioning = app
        .json(
            Method::POST,
            &bob,
            "/v1/messages",
            &json!({"conversation_id": talk, "message": "hi alice", "mentions": [alice.id]}),
        )
        .await;
    let mentioning = mentioning.expect(201)["id"]
        .as_str()
        .expect("id")
        .to_owned();
    event_copies(app, &mentioning, EVENT_COPIES);
    (alice, bob, carol, direct, talk, mentioning)
}

/// Copies of a message's events kept in the log: more than one batch of
/// the erase's last pass.
const EVENT_COPIES: i64 = 5000;

/// `n` copies of the `message.created` event of message `message` (which
/// shows whom it mentions), created after it: a log the erase's last pass
/// must read in several batches.
fn event_copies(app: &TestApp, message: &str, n: i64) {
    let copied = "type, actor_id, created_at + i, payload, subject_id, conversation_id, message_id";
    let of = format!("WHERE message_id = '{message}' AND type = 'message.created'");
    let sql = match app.backend {
        Backend::Postgres => format!(
            "INSERT INTO events (id, position, type, actor_id, created_at, payload, subject_id, \
             conversation_id, message_id) \
             SELECT gen_random_uuid(), (SELECT max(position) FROM events) + i, {copied} \
             FROM events, generate_series(1, {n}) i {of}"
        ),
        Backend::Sqlite => format!(
            "WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < {n}), \
             r(i, h) AS (SELECT i, lower(hex(randomblob(16))) FROM g) \
             INSERT INTO events (id, type, actor_id, created_at, payload, subject_id, \
             conversation_id, message_id) SELECT \
             substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-' || substr(h, 13, 4) || '-' || \
             substr(h, 17, 4) || '-' || substr(h, 21, 12), {copied} \
             FROM events, r {of}"
        ),
    };
    execute(app, &sql);
}

/// Polls the job at `location` until it succeeded; returns it.
async fn finished(app: &TestApp, key: &str, location: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let job = admin(app, Method::GET, location, key, None).await;
        let job = job.expect(200).clone();
        if job["state"] == "succeeded" {
            assert!(job["finished_at"].is_i64(), "{job}");
            return job;
        }
        assert_eq!(job["state"], "running", "{job}");
        assert!(
            Instant::now() < deadline,
            "the job did not finish in time: {job}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Nothing in any table names alice or holds what she wrote.
fn nothing_left_of(app: &TestApp, alice: &User) {
    let left = confab_tests::db::mentions(
        app.database_url(),
        app.backend,
        &[
            &alice.id,
            "bigalice",
            "+15550001111",
            "bulk-direct-text",
            "bulk-group-text",
        ],
    );
    assert!(left.is_empty(), "left behind: {left:#?}");
}

async fn a_big_erase_answers_202_and_finishes_in_the_background(app: TestApp) {
    let key = server_key(&app).await;
    let (alice, bob, carol, direct, talk, mentioning) = big_history(&app, &key).await;
    let mut bob_stream = Sse::open(&app.base_url, &bob.token, "/v1/events", &[]).await;
    let mut her_stream = Sse::open(&app.base_url, &alice.token, "/v1/events", &[]).await;

    let path = format!("/v1/admin/contacts/{}", alice.id);
    let asked = Instant::now();
    let erased = admin(&app, Method::DELETE, &path, &key, None).await;
    let job = erased.expect(202).clone();
    assert!(
        asked.elapsed() < Duration::from_secs(3),
        "{:?}",
        asked.elapsed()
    );
    let location = erased.header("location").expect("Location").to_owned();
    assert_eq!(
        location,
        format!("/v1/admin/jobs/{}", job["id"].as_str().expect("id"))
    );
    assert_eq!(job["kind"], "contact.erase", "{job}");
    assert_eq!(job["subject_id"], alice.id.as_str(), "{job}");
    assert!(job["created_at"].is_i64(), "{job}");

    // Locked out at once: her token, acting as her, finding her.
    app.get(&alice, "/v1/contacts/me")
        .await
        .expect_error(401, "unauthorized", None);
    call(
        &app,
        Method::GET,
        "/v1/contacts/me",
        &key,
        None,
        &[("confab-contact", alice.id.as_str())],
    )
    .await
    .expect_error(401, "unauthorized", None);
    admin(&app, Method::GET, &path, &key, None)
        .await
        .expect_error(404, "not_found", None);
    // Erasing again runs the same job's next batches: 202 with the same
    // job, 204 when they finished it, 404 once it had finished.
    let again = admin(&app, Method::DELETE, &path, &key, None).await;
    match again.status.as_u16() {
        202 => assert_eq!(again.expect(202)["id"], job["id"]),
        204 => {
            let done = admin(&app, Method::GET, &location, &key, None).await;
            assert_eq!(done.expect(200)["state"], "succeeded", "{location}");
        }
        _ => {
            again.expect_error(404, "not_found", None);
        }
    }
    // Others are served meanwhile.
    let other = app.direct(&bob, &carol).await;
    let sent = Instant::now();
    app.send_message(&bob, &other, "still served").await;
    assert!(
        sent.elapsed() < Duration::from_secs(2),
        "{:?}",
        sent.elapsed()
    );
    // Her stream ends within 5 s.
    while her_stream.frame(Duration::from_secs(6)).await.is_some() {}
    assert!(her_stream.ended && asked.elapsed() < Duration::from_secs(5));

    let done = finished(&app, &key, &location, Duration::from_secs(120)).await;
    assert!(
        done["batches_done"].as_i64().expect("batches") > 1,
        "{done}"
    );
    // Bob heard what went.
    for kind in ["conversation.deleted", "message.deleted", "group.updated"] {
        bob_stream
            .event_of(kind, Duration::from_secs(30))
            .await
            .unwrap_or_else(|| panic!("bob did not hear {kind}"));
    }
    app.get(&bob, &format!("/v1/conversations/{direct}"))
        .await
        .expect_error(404, "not_found", None);
    // Bob's message mentions no one now; the group has only his.
    let his = app.get(&bob, &format!("/v1/messages/{mentioning}")).await;
    let his = his.expect(200).clone();
    assert_eq!(his["mentions"], json!([]), "{his}");
    let page = app
        .get(&carol, &format!("/v1/messages?conversation_id={talk}"))
        .await;
    let page = page.expect(200).clone();
    assert_eq!(page["data"].as_array().expect("data").len(), 1, "{page}");
    nothing_left_of(&app, &alice);
}

/// A job whose server stopped mid-way (its lease still held, as a killed
/// server leaves it) is taken on by a running server once the lease runs
/// out, and finishes.
async fn a_job_whose_server_stopped_resumes(app: TestApp) {
    let key = server_key(&app).await;
    let (alice, _bob, _carol, _direct, _talk, _mentioning) = big_history(&app, &key).await;
    let path = format!("/v1/admin/contacts/{}", alice.id);
    let erased = admin(&app, Method::DELETE, &path, &key, None).await;
    let job = erased.expect(202).clone();
    let location = erased.header("location").expect("Location").to_owned();
    // Another server holds it for 2 s more, and then is gone.
    let held_until = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("time")
        + Duration::from_secs(2))
    .as_micros();
    execute(
        &app,
        &format!(
            "UPDATE jobs SET lease_owner = '00000000-0000-4000-8000-000000000001', \
             lease_until = {held_until} WHERE id = '{}'",
            job["id"].as_str().expect("id")
        ),
    );
    let before = admin(&app, Method::GET, &location, &key, None).await;
    let before = before.expect(200).clone();
    if before["state"] == "running" {
        // Nothing runs it while the lease holds.
        tokio::time::sleep(Duration::from_millis(1200)).await;
        let held = admin(&app, Method::GET, &location, &key, None).await;
        assert_eq!(held.expect(200)["state"], "running");
    }
    finished(&app, &key, &location, Duration::from_secs(120)).await;
    nothing_left_of(&app, &alice);
    app.get(&alice, "/v1/contacts/me")
        .await
        .expect_error(401, "unauthorized", None);
}

/// A conversation of 60,000 messages: 202 with a job, then its messages
/// go in batches and it goes for both members with its
/// `conversation.deleted`; others are served meanwhile.
async fn a_big_conversation_is_deleted_in_the_background(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let direct = app.direct(&alice, &bob).await;
    let first = app
        .send_message(&alice, &direct, "big-conversation-text")
        .await;
    bulk_copies(&app, first["id"].as_str().expect("id"), 60_000);
    let mut bob_stream = Sse::open(&app.base_url, &bob.token, "/v1/events", &[]).await;
    let asked = Instant::now();
    let deleted = app
        .delete(&alice, &format!("/v1/conversations/{direct}"))
        .await;
    let job = deleted.expect(202).clone();
    assert!(
        asked.elapsed() < Duration::from_secs(3),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(job["kind"], "conversation.delete", "{job}");
    assert_eq!(job["state"], "running", "{job}");
    // Gone for its members at once: told, not found, not listed, closed
    // to sends, while its messages go in the background.
    bob_stream
        .event_of("conversation.deleted", Duration::from_secs(5))
        .await
        .expect("bob hears the conversation go at once");
    for who in [&alice, &bob] {
        app.get(who, &format!("/v1/conversations/{direct}"))
            .await
            .expect_error(404, "not_found", None);
        let listed = app.get(who, "/v1/conversations").await;
        let listed = listed.expect(200).clone();
        assert!(
            !listed.to_string().contains(&direct),
            "still listed: {listed}"
        );
        app.get(who, &format!("/v1/messages?conversation_id={direct}"))
            .await
            .expect_error(404, "not_found", Some("conversation_id"));
    }
    app.json(
        Method::POST,
        &bob,
        "/v1/messages",
        &json!({"conversation_id": direct, "message": "too late"}),
    )
    .await
    .expect_error(404, "not_found", Some("conversation_id"));
    app.delete(&alice, &format!("/v1/conversations/{direct}"))
        .await
        .expect_error(404, "not_found", None);
    let other = app.direct(&bob, &carol).await;
    let sent = Instant::now();
    app.send_message(&bob, &other, "still served").await;
    assert!(
        sent.elapsed() < Duration::from_secs(2),
        "{:?}",
        sent.elapsed()
    );
    let key = server_key(&app).await;
    let location = format!("/v1/admin/jobs/{}", job["id"].as_str().expect("id"));
    finished(&app, &key, &location, Duration::from_secs(120)).await;
    let left =
        confab_tests::db::mentions(app.database_url(), app.backend, &["big-conversation-text"]);
    assert!(left.is_empty(), "left behind: {left:#?}");
}

/// The job of an unknown id is 404; a contact token is refused.
async fn jobs_are_for_server_keys(app: TestApp) {
    let key = server_key(&app).await;
    admin(
        &app,
        Method::GET,
        "/v1/admin/jobs/00000000-0000-4000-8000-000000000009",
        &key,
        None,
    )
    .await
    .expect_error(404, "not_found", None);
    admin(&app, Method::GET, "/v1/admin/jobs/not-an-id", &key, None)
        .await
        .expect_error(404, "not_found", None);
    let bob = app.user("bob").await;
    app.get(&bob, "/v1/admin/jobs/00000000-0000-4000-8000-000000000009")
        .await
        .expect_error(403, "forbidden", None);
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    a_big_erase_answers_202_and_finishes_in_the_background,
    a_job_whose_server_stopped_resumes,
    a_big_conversation_is_deleted_in_the_background,
    jobs_are_for_server_keys,
);
