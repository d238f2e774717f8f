//! Webhooks end to end, with the real `confab` binary on both stores and a
//! receiver made here (a minimal HTTP/1.1 server on 127.0.0.1): signed
//! deliveries, retries with increasing attempt numbers that never hold
//! back later events, the CLI's refusals, a delivery in flight when `serve`
//! is killed made again after a restart, two `serve` processes on one
//! PostgreSQL making each attempt once, and bodies that never carry a
//! phone number (`privacy`).

#[path = "../binary/mod.rs"]
mod binary;
mod deliveries;
mod privacy;
mod push;
mod support;

use std::collections::HashSet;
use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::sleep;
use std::time::{Duration, Instant};

use binary::postgres::PrivatePg;
use serde_json::Value;
use support::*;

fn deliveries_are_signed_retried_and_in_order(store: Store) {
    let db = Db::new(store);
    db.confab_ok(&["migrate"]);
    // The first message's event fails twice; every other event succeeds
    // at once.
    let first_event: Arc<Mutex<Option<String>>> = Arc::default();
    let first = first_event.clone();
    let receiver = Receiver::start(move |d, _| {
        let mut first = first.lock().expect("lock");
        let is_first = first.get_or_insert_with(|| d.event_id.clone()) == &d.event_id;
        if is_first && d.attempt < 3 {
            Reply::Status(500)
        } else {
            Reply::Status(204)
        }
    });
    let hook = create_webhook(&db, &receiver.url(), Some("message.created"));
    assert_eq!(hook["events"], serde_json::json!(["message.created"]));
    assert_eq!(hook["url"], receiver.url().as_str());
    let secret = hook["secret"].as_str().expect("secret").to_owned();
    let (_server, port) = db.serve("serve", true);
    let chat = Chat::new(&db, port);
    let texts: Vec<String> = (1..=5).map(|i| format!("hook-{i}")).collect();
    let ids: Vec<String> = texts.iter().map(|t| chat.send(port, t)).collect();

    receiver.wait(
        "5 events delivered, one after 2 failures",
        Duration::from_secs(30),
        &db,
        |got| got.iter().filter(|d| d.answered == 204).count() >= 5,
    );
    sleep(Duration::from_millis(800)); // anything extra would show now
    let got = receiver.got();
    let bodies: Vec<Value> = got.iter().map(|d| verified(d, &secret)).collect();
    assert!(
        bodies.iter().all(|b| b["type"] == "message.created"),
        "the filter holds (the conversation's event is not sent): {bodies:#?}"
    );
    // First attempts in event order.
    let firsts: Vec<&Value> = got
        .iter()
        .zip(&bodies)
        .filter(|(d, _)| d.attempt == 1)
        .map(|(_, b)| b)
        .collect();
    let order: Vec<&str> = firsts
        .iter()
        .map(|b| b["payload"]["id"].as_str().expect("message id"))
        .collect();
    assert_eq!(order, ids, "first attempts in event order");
    for (b, text) in firsts.iter().zip(&texts) {
        assert!(b["payload"].to_string().contains(text.as_str()), "{b}");
    }
    // The failing event: attempts 1, 2, 3; the others never waited for it.
    let failing = first_event
        .lock()
        .expect("lock")
        .clone()
        .expect("first event");
    let attempts: Vec<(u32, u16)> = got
        .iter()
        .filter(|d| d.event_id == failing)
        .map(|d| (d.attempt, d.answered))
        .collect();
    assert_eq!(attempts, [(1, 500), (2, 500), (3, 204)]);
    let success_of_failing = got
        .iter()
        .position(|d| d.event_id == failing && d.answered == 204)
        .expect("delivered at last");
    let last_other_first = got
        .iter()
        .rposition(|d| d.event_id != failing && d.attempt == 1)
        .expect("others");
    assert!(
        last_other_first < success_of_failing,
        "later events went out while the first was retried"
    );
    // Each other event once.
    let mut seen = HashSet::new();
    for d in got.iter().filter(|d| d.event_id != failing) {
        assert!(
            seen.insert(d.event_id.clone()),
            "{} delivered twice",
            d.event_id
        );
        assert_eq!(d.attempt, 1);
    }
    assert_eq!(seen.len(), 4);
}

#[test]
fn sqlite_attempts_are_listed_and_counted() {
    deliveries::attempts_are_listed_and_counted(Store::Sqlite);
}

#[test]
fn postgres_attempts_are_listed_and_counted() {
    deliveries::attempts_are_listed_and_counted(Store::Postgres);
}

#[test]
fn sqlite_push_recipients_name_whom_to_notify() {
    push::recipients_name_whom_to_notify(Store::Sqlite);
}

#[test]
fn postgres_push_recipients_name_whom_to_notify() {
    push::recipients_name_whom_to_notify(Store::Postgres);
}

#[test]
fn sqlite_privacy_webhooks_carry_no_phone_number_and_report_created() {
    privacy::webhooks_carry_no_phone_number_and_report_created(Store::Sqlite);
}

#[test]
fn postgres_privacy_webhooks_carry_no_phone_number_and_report_created() {
    privacy::webhooks_carry_no_phone_number_and_report_created(Store::Postgres);
}

#[test]
fn sqlite_deliveries_are_signed_retried_and_in_order() {
    deliveries_are_signed_retried_and_in_order(Store::Sqlite);
}

#[test]
fn postgres_deliveries_are_signed_retried_and_in_order() {
    deliveries_are_signed_retried_and_in_order(Store::Postgres);
}

/// A receiver that takes longer than 10 s to answer: the attempt is given
/// up at 10 s and retried (attempt 2 about 1 s later), not left waiting for
/// the receiver.
fn an_attempt_unanswered_after_10_s_is_retried(store: Store) {
    let db = Db::new(store);
    db.confab_ok(&["migrate"]);
    let receiver = Receiver::start(|d, _| {
        if d.attempt == 1 {
            Reply::Hold(Duration::from_secs(25))
        } else {
            Reply::Status(204)
        }
    });
    let hook = create_webhook(&db, &receiver.url(), Some("message.created"));
    let secret = hook["secret"].as_str().expect("secret").to_owned();
    let (_server, port) = db.serve("serve", true);
    let chat = Chat::new(&db, port);
    let sent = Instant::now();
    chat.send(port, "slow receiver");
    receiver.wait(
        "the retry after the timeout",
        Duration::from_secs(40),
        &db,
        |got| got.iter().any(|d| d.answered == 204),
    );
    let retried_after = sent.elapsed();
    let got = receiver.got();
    let attempts: Vec<(u32, u16)> = got.iter().map(|d| (d.attempt, d.answered)).collect();
    assert_eq!(attempts, [(1, 0), (2, 204)], "{got:#?}");
    assert_eq!(got[0].event_id, got[1].event_id);
    verified(&got[1], &secret);
    // Not before the 10 s timeout; long before the receiver's 25 s hold
    // would have ended the first attempt.
    assert!(
        retried_after >= Duration::from_secs(10) && retried_after < Duration::from_secs(20),
        "attempt 2 after {retried_after:?}"
    );
}

#[test]
fn sqlite_an_attempt_unanswered_after_10_s_is_retried() {
    an_attempt_unanswered_after_10_s_is_retried(Store::Sqlite);
}

#[test]
fn postgres_an_attempt_unanswered_after_10_s_is_retried() {
    an_attempt_unanswered_after_10_s_is_retried(Store::Postgres);
}

fn the_cli_refuses_private_urls_and_unknown_types(store: Store) {
    let db = Db::new(store);
    db.confab_ok(&["migrate"]);
    for url in [
        "http://127.0.0.1:9/hook",
        "http://localhost:9/hook",
        "http://10.0.0.1/hook",
        "http://169.254.169.254/latest",
        "http://[::1]:9/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://100.64.0.1/hook",
        "http://0x7f.1/hook",
    ] {
        let out = db.confab(&["webhook", "create", "--url", url], false);
        assert_eq!(out.status.code(), Some(1), "{url}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("CONFAB_WEBHOOK_ALLOW_PRIVATE"),
            "{url}: {stderr}"
        );
        assert!(out.stdout.is_empty());
    }
    for url in ["ftp://example.com/", "not a url", "file:///etc/passwd"] {
        let out = db.confab(&["webhook", "create", "--url", url], true);
        assert_eq!(out.status.code(), Some(1), "{url}: {out:?}");
    }
    let out = db.confab(
        &[
            "webhook",
            "create",
            "--url",
            "http://127.0.0.1:9/",
            "--events",
            "message.created,message.exploded",
        ],
        true,
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("message.exploded"));
    // Nothing was stored by the refusals.
    assert_eq!(db.confab_ok(&["webhook", "list"]), "[]");

    let made = create_webhook(&db, "http://127.0.0.1:9/", None);
    assert_eq!(made["events"], serde_json::json!([]));
    let listed = db.confab_ok(&["webhook", "list"]);
    let secret = made["secret"].as_str().expect("secret");
    assert!(!listed.contains(secret), "list shows no secret: {listed}");
    let listed: Value = serde_json::from_str(&listed).expect("JSON");
    assert_eq!(listed[0]["id"], made["id"]);
    let id = made["id"].as_str().expect("id");
    let out = db.confab(&["webhook", "delete", "--id", "0199"], false);
    assert_eq!(out.status.code(), Some(1));
    let out = db.confab(
        &[
            "webhook",
            "delete",
            "--id",
            "01990000-0000-7000-8000-000000000000",
        ],
        false,
    );
    assert_eq!(out.status.code(), Some(1));
    db.confab_ok(&["webhook", "delete", "--id", id]);
    assert_eq!(db.confab_ok(&["webhook", "list"]), "[]");
    let out = db.confab(&["webhook", "delete", "--id", id], false);
    assert_eq!(out.status.code(), Some(1), "a second delete: {out:?}");
}

#[test]
fn sqlite_the_cli_refuses_private_urls_and_unknown_types() {
    the_cli_refuses_private_urls_and_unknown_types(Store::Sqlite);
}

#[test]
fn postgres_the_cli_refuses_private_urls_and_unknown_types() {
    the_cli_refuses_private_urls_and_unknown_types(Store::Postgres);
}

/// A server without the variable refuses to deliver to the loopback
/// receiver (each delivery checks the address); one with it delivers the
/// same event, as a retry.
fn each_delivery_checks_the_address(store: Store) {
    let db = Db::new(store);
    db.confab_ok(&["migrate"]);
    let receiver = Receiver::start(|_, _| Reply::Status(200));
    // A literal address (checked before sending) and a name (checked by
    // the resolver of the connection).
    create_webhook(&db, &receiver.url(), Some("message.created"));
    create_webhook(
        &db,
        &format!("http://localhost:{}/hook", receiver.port),
        Some("message.created"),
    );
    let (server, port) = db.serve("strict", false);
    let chat = Chat::new(&db, port);
    chat.send(port, "to a private address");
    // Until the refused attempt is logged (and a while after), nothing
    // reaches the receiver.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut refused_at = None;
    while refused_at.is_none_or(|at: Instant| at.elapsed() < Duration::from_secs(1)) {
        assert!(receiver.got().is_empty(), "delivered to a private address");
        let logs = db.logs();
        let both = logs.contains("webhook address is not public")
            && logs.contains("localhost resolves to");
        if refused_at.is_none() && both {
            refused_at = Some(Instant::now());
        }
        assert!(
            Instant::now() < deadline,
            "no refusal logged:\n{}",
            db.logs()
        );
        sleep(Duration::from_millis(50));
    }
    drop(server);
    let (_server, _) = db.serve("lenient", true);
    receiver.wait("the retries", Duration::from_secs(30), &db, |got| {
        got.len() >= 2
    });
    let got = receiver.got();
    assert!(got.iter().all(|d| d.attempt >= 2), "{got:?}");
    assert_eq!(
        got[0].event_id, got[1].event_id,
        "one event, to each webhook"
    );
}

#[test]
fn sqlite_each_delivery_checks_the_address() {
    each_delivery_checks_the_address(Store::Sqlite);
}

#[test]
fn postgres_each_delivery_checks_the_address() {
    each_delivery_checks_the_address(Store::Postgres);
}

fn a_delivery_in_flight_when_serve_dies_is_made_again(store: Store) {
    let db = Db::new(store);
    db.confab_ok(&["migrate"]);
    // The first request is held open (the process dies meanwhile); later
    // ones succeed.
    let receiver = Receiver::start(|_, before| {
        if before == 0 {
            Reply::Hold(Duration::from_secs(60))
        } else {
            Reply::Status(200)
        }
    });
    let hook = create_webhook(&db, &receiver.url(), Some("message.created"));
    let secret = hook["secret"].as_str().expect("secret").to_owned();
    let (server, port) = db.serve("first", true);
    let chat = Chat::new(&db, port);
    let message = chat.send(port, "in flight");
    receiver.wait("the first attempt", Duration::from_secs(20), &db, |got| {
        !got.is_empty()
    });
    let mut server = server;
    server.0.kill().expect("SIGKILL serve");
    let _ = server.0.wait();
    let (_again, _) = db.serve("restarted", true);
    // After the lease (20 s) runs out.
    receiver.wait(
        "the attempt made again",
        Duration::from_secs(45),
        &db,
        |got| got.iter().any(|d| d.answered == 200),
    );
    let got = receiver.got();
    assert_eq!(got[0].event_id, got[1].event_id, "{got:#?}");
    let body = verified(&got[1], &secret);
    assert_eq!(body["payload"]["id"], message.as_str());
}

#[test]
fn sqlite_a_delivery_in_flight_when_serve_dies_is_made_again() {
    a_delivery_in_flight_when_serve_dies_is_made_again(Store::Sqlite);
}

#[test]
fn postgres_a_delivery_in_flight_when_serve_dies_is_made_again() {
    a_delivery_in_flight_when_serve_dies_is_made_again(Store::Postgres);
}

/// Two `serve` processes on one PostgreSQL: every attempt is made by one
/// of them only; each event is delivered once (the receiver answers 2xx,
/// after one failure for every third event).
#[test]
fn two_servers_on_one_postgres_make_each_attempt_once() {
    let db = Db::new(Store::Postgres);
    db.confab_ok(&["migrate"]);
    let failed_once: Arc<Mutex<HashSet<String>>> = Arc::default();
    let failed = failed_once.clone();
    let receiver = Receiver::start(move |d, before| {
        if before % 3 == 0 && d.attempt == 1 {
            failed.lock().expect("lock").insert(d.event_id.clone());
            Reply::Status(503)
        } else {
            Reply::Status(200)
        }
    });
    let hook = create_webhook(&db, &receiver.url(), None);
    let secret = hook["secret"].as_str().expect("secret").to_owned();
    // A second webhook doubles the work each process may take.
    let other = Receiver::start(|_, _| Reply::Status(200));
    create_webhook(&db, &other.url(), Some("message.created"));
    let (_a, port_a) = db.serve("a", true);
    let (_b, port_b) = db.serve("b", true);
    let chat = Chat::new(&db, port_a);
    let n = 24;
    for i in 0..n {
        let port = if i % 2 == 0 { port_a } else { port_b };
        chat.send(port, &format!("m{i}"));
    }
    receiver.wait(
        "every message delivered",
        Duration::from_secs(60),
        &db,
        |got| {
            got.iter()
                .filter(|d| d.answered == 200 && d.body.contains("\"message.created\""))
                .count()
                >= n
        },
    );
    other.wait(
        "every message delivered",
        Duration::from_secs(60),
        &db,
        |got| got.len() >= n,
    );
    sleep(Duration::from_secs(2)); // a duplicate would arrive now
    let got = receiver.got();
    let mut attempts = HashSet::new();
    let mut delivered = HashSet::new();
    for d in &got {
        verified(d, &secret);
        assert!(
            attempts.insert((d.event_id.clone(), d.attempt)),
            "attempt {} of {} made twice: {got:#?}",
            d.attempt,
            d.event_id
        );
        if d.answered == 200 {
            assert!(
                delivered.insert(d.event_id.clone()),
                "{} delivered twice",
                d.event_id
            );
        }
    }
    for event in failed_once.lock().expect("lock").iter() {
        assert!(delivered.contains(event), "{event} retried to success");
    }
    let other_ids: Vec<String> = other.got().into_iter().map(|d| d.event_id).collect();
    let distinct: HashSet<&String> = other_ids.iter().collect();
    assert_eq!(
        distinct.len(),
        other_ids.len(),
        "no duplicates to the second webhook"
    );
    assert_eq!(other_ids.len(), n);
}

/// An event insert as the outbox writes it on PostgreSQL (position from the
/// transaction id).
fn pg_event_insert(id: &str) -> String {
    format!(
        "INSERT INTO events (id, position, type, actor_id, created_at, payload) VALUES \
         ('{id}', pg_current_xact_id()::text::bigint * 1048576, 'message.created', '{}', 0, \
         '{{\"id\":\"{id}\"}}');",
        uuid::Uuid::now_v7()
    )
}

/// On PostgreSQL an event committed while an older transaction that writes
/// one is still running waits for it, and both go out in commit-position
/// order: the cursor never passes a position that could still fill. A
/// private cluster, since the wait is cluster-wide and would hold back
/// other tests' events.
#[test]
fn postgres_an_event_behind_a_running_transaction_waits_and_keeps_its_place() {
    let Some(pg) = PrivatePg::started() else {
        return;
    };
    let db = Db::at(pg.url());
    db.confab_ok(&["migrate"]);
    let receiver = Receiver::start(|_, _| Reply::Status(200));
    create_webhook(&db, &receiver.url(), None);
    let (_server, _) = db.serve("serve", true);

    let early = uuid::Uuid::now_v7().to_string();
    let late = uuid::Uuid::now_v7().to_string();
    let mut open = Command::new("psql")
        .arg(&db.url)
        .args(["-v", "ON_ERROR_STOP=1", "-qtA"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("psql");
    let mut stdin = open.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(open.stdout.take().expect("stdout"));
    writeln!(
        stdin,
        "BEGIN;\n{}\nSELECT 'inserted';",
        pg_event_insert(&early)
    )
    .expect("write");
    stdin.flush().expect("flush");
    let mut line = String::new();
    stdout.read_line(&mut line).expect("read");
    assert_eq!(line.trim(), "inserted");
    let out = Command::new("psql")
        .arg(&db.url)
        .args(["-v", "ON_ERROR_STOP=1", "-qc", &pg_event_insert(&late)])
        .output()
        .expect("psql");
    assert!(out.status.success(), "{out:?}");
    // Committed, but behind the running transaction: not sent.
    let deadline = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < deadline {
        assert!(receiver.got().is_empty(), "sent past a running transaction");
        sleep(Duration::from_millis(50));
    }
    writeln!(stdin, "COMMIT;").expect("commit");
    drop(stdin);
    assert!(open.wait().expect("psql").success());
    receiver.wait("both events", Duration::from_secs(20), &db, |got| {
        got.len() >= 2
    });
    let order: Vec<String> = receiver.got().into_iter().map(|d| d.event_id).collect();
    assert_eq!(order, [early, late], "commit-position order");
}
