//! Hostile writes, over HTTP on both stores: a write that changes nothing
//! writes nothing and tells nobody (`noops`); a pin in a group writes the
//! same rows whatever the group's size, and every member's view stays
//! right (`pins`); blocks and removals stop every write that reaches the
//! other side, an attachment's new name included (`blocks`); typing
//! reaches listeners at most once per 2 s whatever the sequence
//! (`typing`); reports are limited per contact (`reports`); a deleted
//! attachment leaves its message's earlier events (`scrub`).

mod blocks;
mod noops;
mod pins;
mod reports;
mod scrub;
mod typing;

use std::time::{Duration, Instant};

use confab_tests::http::{TestApp, User};
use reqwest::Method;
use serde_json::Value;

/// One page of `user`'s catch-up list after event `after` (from the oldest
/// kept without it): its events and whether more follow.
async fn catch_up_page(app: &TestApp, user: &User, after: Option<&str>) -> (Vec<Value>, bool) {
    let path = match after {
        Some(a) => format!("/v1/events?after={a}&limit=100"),
        None => "/v1/events?limit=100".to_owned(),
    };
    let r = app
        .send(
            Method::GET,
            &path,
            Some(&user.token),
            None,
            &[("accept", "application/json")],
        )
        .await;
    let body = r.expect(200);
    let data = body["data"].as_array().expect("data").clone();
    (data, body["has_more"] == true)
}

/// Every event of `user` after `after` (all pages).
async fn events_after(app: &TestApp, user: &User, after: Option<&str>) -> Vec<Value> {
    let mut cursor = after.map(str::to_owned);
    let mut all = Vec::new();
    loop {
        let (page, more) = catch_up_page(app, user, cursor.as_deref()).await;
        if let Some(last) = page.last() {
            cursor = Some(last["id"].as_str().expect("event id").to_owned());
        }
        all.extend(page);
        if !more {
            return all;
        }
    }
}

/// The id of `user`'s latest event so far (`None`: none yet).
async fn latest_event(app: &TestApp, user: &User) -> Option<String> {
    events_after(app, user, None)
        .await
        .last()
        .map(|e| e["id"].as_str().expect("event id").to_owned())
}

/// `user`'s events after `after` once one of them is the marker (`is`),
/// within 10 s (PostgreSQL makes an event readable once no older
/// transaction still runs): everything before the marker has been read.
async fn events_until(
    app: &TestApp,
    user: &User,
    after: Option<&str>,
    is: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let events = events_after(app, user, after).await;
        if events.iter().any(&is) {
            return events;
        }
        assert!(
            Instant::now() < deadline,
            "no marker among {}'s events: {events:?}",
            user.username
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The types of `events`, in order.
fn kinds(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["type"].as_str().expect("type"))
        .collect()
}

/// `from` sends `text` into `conv`: the message's id.
async fn say(app: &TestApp, from: &User, conv: &str, text: &str) -> String {
    crate::support::id_of(&app.send_message(from, conv, text).await)
}

/// Whether `e` is the `message.created` of the message `id`.
fn created(id: &str) -> impl Fn(&Value) -> bool + '_ {
    move |e: &Value| e["type"] == "message.created" && e["payload"]["id"] == id
}

/// Rows of `table` in the app's database.
fn rows(app: &TestApp, table: &str) -> i64 {
    confab_tests::db::count(
        app.database_url(),
        app.backend,
        &format!("SELECT CAST(COUNT(*) AS BIGINT) AS n FROM {table}"),
    )
}
