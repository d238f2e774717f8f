//! Webhooks: the list, the first-attempt lease and cursor, retries and
//! type filters, as `WebhookStore` documents them. Events are inserted
//! here with plain SQL (as each store's outbox writes them), so that these
//! tests need no write that makes events.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;

use confab_domain::{EventId, EventType};
use confab_ports::{
    CursorMove, DeliveryAttempt, NewRetry, RetryOutcome, StoreError, Webhook, WebhookId,
    WebhookSecret,
};
use confab_store_postgres::PgStore;
use confab_store_sqlite::SqliteStore;
use confab_tests::db::{Backend, TestDb};
use diesel::connection::SimpleConnection as _;
use diesel::prelude::*;

use crate::support::{assert_err, at, new_id, S};

const LEASE: i64 = 20;

/// A store, and a way to write events into its database directly.
pub(crate) struct Ctx {
    s: S,
    db: TestDb,
}

/// The runner: a fresh store of `backend`, with its database.
pub(crate) async fn on_store_with_db<F, Fut>(backend: Backend, test: F)
where
    F: FnOnce(Ctx) -> Fut,
    Fut: Future<Output = ()>,
{
    let (db, s) = tokio::task::spawn_blocking(move || {
        let db = TestDb::new(backend);
        let store: S = match db.backend() {
            Backend::Postgres => Arc::new(PgStore::connect(&db.url).expect("connect")),
            Backend::Sqlite => Arc::new(SqliteStore::open(&db.url).expect("open")),
        };
        (db, store)
    })
    .await
    .expect("join");
    test(Ctx { s, db }).await;
}

/// The SQL that writes one committed event the way each outbox does:
/// PostgreSQL positions from the transaction id, SQLite's from its
/// AUTOINCREMENT key.
fn event_insert(backend: Backend, id: uuid::Uuid, kind: EventType, index: u32) -> String {
    let payload = format!(r#"{{"id":"{id}","n":{index}}}"#);
    match backend {
        Backend::Postgres => format!(
            "INSERT INTO events (id, position, type, actor_id, created_at, payload) VALUES \
             ('{id}', pg_current_xact_id()::text::bigint * 1048576 + {index}, '{}', '{}', {}, '{payload}')",
            kind.name(),
            new_id(),
            at(5).micros()
        ),
        Backend::Sqlite => format!(
            "INSERT INTO events (id, type, actor_id, created_at, payload) VALUES \
             ('{id}', '{}', '{}', {}, '{payload}')",
            kind.name(),
            new_id(),
            at(5).micros()
        ),
    }
}

impl Ctx {
    /// Commits one event per type, in this order (one transaction each);
    /// returns their ids.
    async fn committed(&self, kinds: &[EventType]) -> Vec<EventId> {
        let backend = self.db.backend();
        let url = self.db.url.clone();
        let kinds = kinds.to_vec();
        tokio::task::spawn_blocking(move || {
            let ids: Vec<uuid::Uuid> = kinds.iter().map(|_| new_id()).collect();
            let run = |sql: String| match backend {
                Backend::Postgres => PgConnection::establish(&url)
                    .expect("connect")
                    .batch_execute(&sql)
                    .expect("insert event"),
                Backend::Sqlite => SqliteConnection::establish(&url)
                    .expect("open")
                    .batch_execute(&sql)
                    .expect("insert event"),
            };
            for (i, (id, kind)) in ids.iter().zip(&kinds).enumerate() {
                run(event_insert(
                    backend,
                    *id,
                    *kind,
                    u32::try_from(i).expect("index"),
                ));
            }
            ids.into_iter().map(EventId::from_uuid).collect()
        })
        .await
        .expect("join")
    }

    /// [`Ctx::committed`], then waits until they are readable: on
    /// PostgreSQL any transaction still running in the cluster (other tests)
    /// with a lower id holds them back a moment.
    async fn events(&self, kinds: &[EventType]) -> Vec<EventId> {
        let ids = self.committed(kinds).await;
        self.wait_readable(&ids).await;
        ids
    }

    /// Waits until every one of `ids` is readable.
    async fn wait_readable(&self, ids: &[EventId]) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let readable = self
                .s
                .webhook_events(Vec::new(), 0, 10_000)
                .await
                .expect("events");
            if ids
                .iter()
                .all(|id| readable.events.iter().any(|e| e.id == *id))
            {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "events not readable within 20 s"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    async fn event(&self, kind: EventType) -> EventId {
        self.events(&[kind]).await[0]
    }

    async fn webhook(&self, url: &str, types: &[EventType]) -> Webhook {
        self.s
            .create_webhook(
                WebhookId::from_uuid(new_id()),
                url.to_owned(),
                types.to_vec(),
                WebhookSecret::new(format!("secret-{url}")),
                at(1),
            )
            .await
            .expect("create webhook")
    }
}

fn mv(webhook: &Webhook, holder: uuid::Uuid, to: i64, now: i64) -> CursorMove {
    CursorMove {
        webhook: webhook.id,
        holder,
        to,
        retry: None,
        attempt: None,
        now: at(now),
        renew_until: at(now + LEASE),
    }
}

/// The record of attempt `n` of `event`, answered `status` at `when`.
fn attempt(event: EventId, n: u32, status: Option<u16>, when: i64) -> DeliveryAttempt {
    DeliveryAttempt {
        id: new_id(),
        event,
        attempt: n,
        status,
        error: status.is_none().then(|| "connection refused".to_owned()),
        at: at(when),
    }
}

async fn webhooks_are_created_listed_and_deleted(c: Ctx) {
    let s = &c.s;
    let all = c.webhook("https://a.example/hook", &[]).await;
    let some = c
        .webhook(
            "https://b.example/hook",
            &[EventType::MessageCreated, EventType::GroupDeleted],
        )
        .await;
    let listed = s.list_webhooks().await.expect("list");
    assert_eq!(listed, vec![all.clone(), some.clone()]);
    assert_eq!(
        listed[1].events,
        [EventType::MessageCreated, EventType::GroupDeleted]
    );
    assert_eq!(listed[1].secret.expose(), "secret-https://b.example/hook");
    assert!(
        !format!("{listed:?}").contains("secret-"),
        "no secret in Debug"
    );

    s.delete_webhook(all.id).await.expect("delete");
    assert_err!(s.delete_webhook(all.id).await, StoreError::NotFound);
    assert_eq!(s.list_webhooks().await.expect("list"), vec![some]);
}

async fn a_new_webhook_gets_only_the_events_committed_after_it(c: Ctx) {
    let s = &c.s;
    c.event(EventType::ContactCreated).await;
    let hook = c.webhook("https://a.example/", &[]).await;
    assert!(
        s.lease_webhook(new_id(), at(10), at(10 + LEASE))
            .await
            .expect("lease")
            .is_none(),
        "nothing after its cursor yet"
    );
    let later = c
        .events(&[EventType::MessageCreated, EventType::MessageUpdated])
        .await;
    let lease = s
        .lease_webhook(new_id(), at(10), at(10 + LEASE))
        .await
        .expect("lease")
        .expect("events to send");
    assert_eq!(lease.webhook, hook);
    let batch = s
        .webhook_events(Vec::new(), lease.cursor, 10)
        .await
        .expect("events");
    let ids: Vec<EventId> = batch.events.iter().map(|e| e.id).collect();
    assert_eq!(ids, later, "in commit order");
    assert_eq!(batch.events[0].kind, EventType::MessageCreated);
    assert!(batch.events[0].payload.contains(&later[0].to_string()));
    assert!(batch.events[0].position < batch.events[1].position);
    assert!(batch.through >= batch.events[1].position);
}

async fn leasing_is_exclusive_under_concurrency(c: Ctx) {
    let s = &c.s;
    let mut hooks = HashSet::new();
    for i in 0..6 {
        hooks.insert(c.webhook(&format!("https://h{i}.example/"), &[]).await.id);
    }
    c.event(EventType::MessageCreated).await;
    let tasks: Vec<_> = (0..24)
        .map(|_| {
            let s = s.clone();
            tokio::spawn(async move { s.lease_webhook(new_id(), at(10), at(10 + LEASE)).await })
        })
        .collect();
    let mut leased = Vec::new();
    for task in tasks {
        if let Some(lease) = task.await.expect("join").expect("lease") {
            leased.push(lease.webhook.id);
        }
    }
    let distinct: HashSet<_> = leased.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        leased.len(),
        "a webhook leased twice: {leased:?}"
    );
    assert_eq!(distinct, hooks, "every webhook with events leased once");
    // Held: none left until the leases run out; then all again.
    assert!(s
        .lease_webhook(new_id(), at(10 + LEASE - 1), at(20 + LEASE))
        .await
        .expect("lease")
        .is_none());
    let mut again = HashSet::new();
    while let Some(lease) = s
        .lease_webhook(new_id(), at(10 + LEASE), at(10 + 2 * LEASE))
        .await
        .expect("lease")
    {
        assert!(again.insert(lease.webhook.id), "leased twice");
    }
    assert_eq!(again, hooks);
}

async fn the_cursor_moves_only_while_the_lease_is_held(c: Ctx) {
    let s = &c.s;
    let hook = c.webhook("https://a.example/", &[]).await;
    let events = c
        .events(&[EventType::MessageCreated, EventType::MessageUpdated])
        .await;
    let a = new_id();
    let lease = s
        .lease_webhook(a, at(10), at(10 + LEASE))
        .await
        .expect("lease")
        .expect("work");
    let batch = s
        .webhook_events(Vec::new(), lease.cursor, 10)
        .await
        .expect("events");
    let first = batch.events[0].position;
    // Another holder cannot move it, nor the holder once its lease ran out.
    assert!(!s
        .move_cursor(mv(&hook, new_id(), first, 11))
        .await
        .expect("move"));
    assert!(!s
        .move_cursor(mv(&hook, a, first, 10 + LEASE))
        .await
        .expect("move"));
    // The holder can, and the failed attempt's retry goes with it.
    let mut change = mv(&hook, a, first, 11);
    change.retry = Some(NewRetry {
        event: events[0],
        next_at: at(12),
        first_attempt_at: at(11),
    });
    assert!(s.move_cursor(change).await.expect("move"));
    // Renewed: still held past the first lease's end, by `a` only.
    assert!(s
        .lease_webhook(new_id(), at(10 + LEASE), at(100))
        .await
        .expect("lease")
        .is_none());
    // Once it runs out, another holder takes over from the cursor.
    let b = new_id();
    let taken = s
        .lease_webhook(b, at(11 + LEASE), at(11 + 2 * LEASE))
        .await
        .expect("lease")
        .expect("work left");
    assert_eq!(taken.cursor, first);
    assert!(!s
        .move_cursor(mv(&hook, a, batch.through, 12 + LEASE))
        .await
        .expect("move"));
    let rest = s
        .webhook_events(Vec::new(), taken.cursor, 10)
        .await
        .expect("events");
    assert_eq!(
        rest.events.iter().map(|e| e.id).collect::<Vec<_>>(),
        [events[1]]
    );
    assert!(s
        .move_cursor(mv(&hook, b, rest.through, 12 + LEASE))
        .await
        .expect("move"));
    s.release_webhook(hook.id, b, at(13 + LEASE))
        .await
        .expect("release");
    assert!(
        s.lease_webhook(new_id(), at(13 + LEASE), at(100))
            .await
            .expect("lease")
            .is_none(),
        "nothing after the cursor"
    );
    // The retry recorded with the first move is there, once.
    let retries = s
        .lease_retries(new_id(), at(12), at(12 + LEASE), 10)
        .await
        .expect("retries");
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0].event.id, events[0]);
}

async fn retries_are_due_at_their_time_and_leased_once(c: Ctx) {
    let s = &c.s;
    let hook = c.webhook("https://a.example/", &[]).await;
    let events = c
        .events(&[
            EventType::MessageCreated,
            EventType::MessageUpdated,
            EventType::MessageDeleted,
        ])
        .await;
    let a = new_id();
    let lease = s
        .lease_webhook(a, at(10), at(10 + LEASE))
        .await
        .expect("lease")
        .expect("work");
    let batch = s
        .webhook_events(Vec::new(), lease.cursor, 10)
        .await
        .expect("events");
    for (i, event) in batch.events.iter().enumerate() {
        let mut change = mv(&hook, a, event.position, 11);
        change.retry = Some(NewRetry {
            event: event.id,
            next_at: at(12 + i64::try_from(i).expect("i")),
            first_attempt_at: at(11),
        });
        assert!(s.move_cursor(change).await.expect("move"));
    }
    // Not due yet.
    assert!(s
        .lease_retries(new_id(), at(11), at(11 + LEASE), 10)
        .await
        .expect("retries")
        .is_empty());
    // Due ones, oldest first, each to one of many concurrent callers.
    let tasks: Vec<_> = (0..12)
        .map(|_| {
            let s = s.clone();
            tokio::spawn(async move { s.lease_retries(new_id(), at(13), at(13 + LEASE), 1).await })
        })
        .collect();
    let mut leased = Vec::new();
    for task in tasks {
        leased.extend(task.await.expect("join").expect("lease retries"));
    }
    let mut ids: Vec<EventId> = leased.iter().map(|r| r.event.id).collect();
    ids.sort();
    let mut due = events[..2].to_vec();
    due.sort();
    assert_eq!(ids, due, "each due retry leased once");
    for r in &leased {
        assert_eq!(r.attempt, 2, "the first retry is attempt 2");
        assert_eq!(r.first_attempt_at, at(11));
        assert_eq!(r.webhook, hook);
        assert!(r.event.payload.contains(&r.event.id.to_string()));
    }
    // Held: not due again while leased.
    let third = s
        .lease_retries(new_id(), at(14), at(14 + LEASE), 10)
        .await
        .expect("retries");
    assert_eq!(
        third.iter().map(|r| r.event.id).collect::<Vec<_>>(),
        [events[2]]
    );
    // Settled only by its holder.
    let (r, other) = (&leased[0], &leased[1]);
    assert!(!s
        .settle_retry(
            hook.id,
            r.event.id,
            new_id(),
            RetryOutcome::Done,
            attempt(r.event.id, r.attempt, Some(204), 14)
        )
        .await
        .expect("settle"));
    assert!(s
        .settle_retry(
            hook.id,
            r.event.id,
            r.holder,
            RetryOutcome::RetryAt(at(50)),
            attempt(r.event.id, r.attempt, Some(500), 14)
        )
        .await
        .expect("settle"));
    // A lease that ran out (its process died) is due again, as a new
    // attempt; the old holder can no longer settle it.
    let retaken = s
        .lease_retries(new_id(), at(13 + LEASE), at(13 + 2 * LEASE), 10)
        .await
        .expect("retries");
    assert_eq!(
        retaken.iter().map(|x| x.event.id).collect::<Vec<_>>(),
        [other.event.id]
    );
    assert_eq!(retaken[0].attempt, 3);
    assert!(!s
        .settle_retry(
            hook.id,
            other.event.id,
            other.holder,
            RetryOutcome::Done,
            attempt(other.event.id, other.attempt, Some(204), 14)
        )
        .await
        .expect("settle"));
    assert!(s
        .settle_retry(
            hook.id,
            other.event.id,
            retaken[0].holder,
            RetryOutcome::Done,
            attempt(other.event.id, retaken[0].attempt, None, 15)
        )
        .await
        .expect("settle"));
    // Rescheduled: due at its new time, not before.
    let before = s
        .lease_retries(new_id(), at(49), at(49 + LEASE), 10)
        .await
        .expect("retries");
    assert_eq!(
        before.iter().map(|x| x.event.id).collect::<Vec<_>>(),
        [events[2]],
        "the third's lease ran out; the rescheduled one is not due"
    );
    let again = s
        .lease_retries(new_id(), at(50), at(50 + LEASE), 10)
        .await
        .expect("retries");
    assert_eq!(
        again.iter().map(|x| x.event.id).collect::<Vec<_>>(),
        [r.event.id]
    );
    assert_eq!(again[0].attempt, 3);
    // What retrying owes: one retry due later, one leased, one pending,
    // the oldest event among them the first.
    let backlog = s.webhook_backlog().await.expect("backlog");
    assert_eq!(backlog.retrying, 2);
    assert!(backlog.oldest_pending_at.is_some());
    // The settled attempts are recorded (not the refused settle), newest
    // first.
    let listed = s
        .list_deliveries(hook.id, crate::support::page(10, None))
        .await
        .expect("list")
        .expect("webhook");
    let got: Vec<(u32, Option<u16>)> = listed.items.iter().map(|d| (d.attempt, d.status)).collect();
    assert_eq!(got, [(3, None), (2, Some(500))]);
    assert_eq!(listed.items[0].error.as_deref(), Some("connection refused"));
    assert_eq!(listed.items[0].event, other.event.id);
    // Deleting the webhook takes its retries.
    s.delete_webhook(hook.id).await.expect("delete");
    assert!(s
        .lease_retries(new_id(), at(1000), at(1000 + LEASE), 10)
        .await
        .expect("retries")
        .is_empty());
    assert!(s
        .list_deliveries(hook.id, crate::support::page(10, None))
        .await
        .expect("list")
        .is_none());
}

/// Attempts are recorded with the cursor's move that ends them (not when
/// the lease was lost), listed newest first and paged, and pruned by age.
async fn attempts_are_recorded_listed_and_pruned(c: Ctx) {
    let s = &c.s;
    let hook = c.webhook("https://a.example/", &[]).await;
    let events = c
        .events(&[EventType::MessageCreated, EventType::MessageUpdated])
        .await;
    let holder = new_id();
    let lease = s
        .lease_webhook(holder, at(10), at(10 + LEASE))
        .await
        .expect("lease")
        .expect("work");
    let batch = s
        .webhook_events(Vec::new(), lease.cursor, 10)
        .await
        .expect("events");
    let mut first = mv(&hook, holder, batch.events[0].position, 11);
    first.attempt = Some(attempt(events[0], 1, Some(200), 11));
    assert!(s.move_cursor(first).await.expect("move"));
    // Another holder's move (a lease lost) records nothing.
    let mut stray = mv(&hook, new_id(), batch.events[1].position, 12);
    stray.attempt = Some(attempt(events[1], 1, Some(200), 12));
    assert!(!s.move_cursor(stray).await.expect("move"));
    let mut second = mv(&hook, holder, batch.events[1].position, 13);
    second.attempt = Some(attempt(events[1], 1, None, 13));
    assert!(s.move_cursor(second).await.expect("move"));
    let page = |limit, cursor| crate::support::page(limit, cursor);
    let all = s
        .list_deliveries(hook.id, page(10, None))
        .await
        .expect("list")
        .expect("webhook");
    assert_eq!(
        all.items.iter().map(|d| d.event).collect::<Vec<_>>(),
        [events[1], events[0]]
    );
    let one = s
        .list_deliveries(hook.id, page(1, None))
        .await
        .expect("list")
        .expect("webhook");
    assert!(one.has_more);
    let rest = s
        .list_deliveries(
            hook.id,
            page(1, Some(confab_domain::Cursor::After(one.items[0].id))),
        )
        .await
        .expect("list")
        .expect("webhook");
    assert_eq!(rest.items[0].event, events[0]);
    assert!(!rest.has_more);
    assert_err!(
        s.list_deliveries(
            hook.id,
            page(1, Some(confab_domain::Cursor::After(new_id())))
        )
        .await,
        StoreError::CursorNotFound
    );
    assert!(s
        .list_deliveries(WebhookId::from_uuid(new_id()), page(1, None))
        .await
        .expect("list")
        .is_none());
    // Nothing waits: both events had their first attempt, none failed.
    let backlog = s.webhook_backlog().await.expect("backlog");
    assert_eq!(backlog.retrying, 0);
    // Pruned by age, in batches.
    assert_eq!(s.prune_deliveries(at(12), 10).await.expect("prune"), 1);
    assert_eq!(s.prune_deliveries(at(12), 10).await.expect("prune"), 0);
    let left = s
        .list_deliveries(hook.id, page(10, None))
        .await
        .expect("list")
        .expect("webhook");
    assert_eq!(left.items.len(), 1);
}

async fn events_are_filtered_by_type(c: Ctx) {
    let s = &c.s;
    c.webhook(
        "https://a.example/",
        &[EventType::MessageCreated, EventType::GroupDeleted],
    )
    .await;
    let ids = c
        .events(&[
            EventType::ContactCreated,
            EventType::MessageCreated,
            EventType::GroupCreated,
            EventType::GroupDeleted,
            EventType::MessageUpdated,
        ])
        .await;
    let lease = s
        .lease_webhook(new_id(), at(10), at(10 + LEASE))
        .await
        .expect("lease")
        .expect("work");
    let types = lease.webhook.events.clone();
    let all = s
        .webhook_events(types.clone(), lease.cursor, 10)
        .await
        .expect("events");
    assert_eq!(
        all.events.iter().map(|e| e.id).collect::<Vec<_>>(),
        [ids[1], ids[3]]
    );
    // Everything read, including the skipped events after the last match.
    let unfiltered = s
        .webhook_events(Vec::new(), lease.cursor, 10)
        .await
        .expect("events");
    assert!(all.through >= unfiltered.events[4].position);
    // A page of one: the cursor may move only to that event.
    let one = s
        .webhook_events(types.clone(), lease.cursor, 1)
        .await
        .expect("events");
    assert_eq!(one.events.len(), 1);
    assert_eq!(one.through, one.events[0].position);
    let next = s
        .webhook_events(types, one.through, 1)
        .await
        .expect("events");
    assert_eq!(next.events[0].id, ids[3]);
    // Nothing after the end: the cursor may still move to the end. The end
    // is the readable horizon at the time of the read, which other
    // transactions of the server (other tests', on PostgreSQL) move on
    // meanwhile: at least as far as before, never back.
    let none = s
        .webhook_events(vec![EventType::AttachmentCreated], lease.cursor, 10)
        .await
        .expect("events");
    assert!(none.events.is_empty());
    assert!(
        none.through >= all.through,
        "the cursor moves to the end: {} < {}",
        none.through,
        all.through
    );
}

confab_tests::on_both_stores!(
    crate::webhooks::on_store_with_db;
    webhooks_are_created_listed_and_deleted,
    a_new_webhook_gets_only_the_events_committed_after_it,
    leasing_is_exclusive_under_concurrency,
    the_cursor_moves_only_while_the_lease_is_held,
    retries_are_due_at_their_time_and_leased_once,
    events_are_filtered_by_type,
    attempts_are_recorded_listed_and_pruned,
);
