//! Typing (docs/api.md "Typing") over real HTTP on both stores: the other
//! members' open streams get a `typing` event without an id; the typist,
//! outsiders and the table get nothing; starts closer than 2 s apart and
//! stops without a start add nothing; a send stops; bad requests are
//! refused; on PostgreSQL the news crosses to another server process.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use confab_server::startup::{open_service, Application, Database, RateLimits};
use confab_tests::db::Backend;
use confab_tests::http::{TestApp, User};
use reqwest::Method;
use serde_json::Value;

use super::{catch_up, send, trio};
use crate::events::{Frame, Sse};
use crate::support::{conversation_created, now_secs, UNKNOWN_ID};

/// Long enough for news to arrive on a loaded machine; what must not
/// arrive is waited for over `QUIET`.
const WAIT: Duration = Duration::from_secs(5);
const QUIET: Duration = Duration::from_millis(700);

async fn stream(app: &TestApp, user: &User) -> Sse {
    Sse::open(&app.base_url, &user.token, "/v1/events", &[]).await
}

/// `who` says `state` (none: the default) in `conv`: 204.
async fn typing(app: &TestApp, who: &User, conv: &str, state: Option<&str>) {
    let pairs: Vec<(&str, &str)> = state.map(|s| ("state", s)).into_iter().collect();
    app.post(who, &format!("/v1/conversations/{conv}/typing"), &pairs)
        .await
        .expect(204);
}

/// The next typing news on `sse`, checked against `who`, `conv`, `state`.
async fn heard(sse: &mut Sse, who: &User, conv: &str, state: &str) -> Value {
    let news = sse
        .typing(WAIT)
        .await
        .unwrap_or_else(|| panic!("no typing {state} of {} arrived", who.username));
    assert_eq!(news["conversation_id"], conv, "{news}");
    assert_eq!(news["contact_id"], who.id.as_str(), "{news}");
    assert_eq!(news["state"], state, "{news}");
    assert!(news["expires_at"].is_i64(), "{news}");
    let keys: Vec<&String> = news.as_object().expect("object").keys().collect();
    assert_eq!(
        keys.len(),
        4,
        "conversation_id, contact_id, state, expires_at: {news}"
    );
    news
}

async fn quiet(sse: &mut Sse, what: &str) {
    if let Some(news) = sse.typing(QUIET).await {
        panic!("{what} heard typing: {news}");
    }
}

async fn the_other_members_streams_hear_it_and_nobody_else(app: TestApp) {
    let (alice, bob, carol, conv) = trio(&app).await;
    let dave = app.user("dave").await;
    let (mut to_alice, mut to_bob, mut to_carol, mut to_dave) = (
        stream(&app, &alice).await,
        stream(&app, &bob).await,
        stream(&app, &carol).await,
        stream(&app, &dave).await,
    );
    let before = now_secs();
    typing(&app, &alice, &conv, None).await;
    for sse in [&mut to_bob, &mut to_carol] {
        let news = heard(sse, &alice, &conv, "start").await;
        let expires = news["expires_at"].as_i64().expect("secs");
        assert!(
            (before + 7..=now_secs() + 8).contains(&expires),
            "a start holds 8 s: {news}"
        );
    }
    quiet(&mut to_alice, "the typist").await;
    quiet(&mut to_dave, "an outsider").await;
    typing(&app, &alice, &conv, Some("stop")).await;
    for sse in [&mut to_bob, &mut to_carol] {
        heard(sse, &alice, &conv, "stop").await;
    }
}

async fn starts_too_soon_and_stops_without_a_start_add_nothing_and_a_send_stops(app: TestApp) {
    let (alice, bob, _carol, conv) = trio(&app).await;
    let mut to_bob = stream(&app, &bob).await;
    typing(&app, &alice, &conv, Some("stop")).await;
    quiet(&mut to_bob, "a stop without a start").await;
    typing(&app, &alice, &conv, Some("start")).await;
    heard(&mut to_bob, &alice, &conv, "start").await;
    let again = Instant::now();
    typing(&app, &alice, &conv, Some("start")).await;
    if again.elapsed() < Duration::from_millis(1500) {
        quiet(&mut to_bob, "a start within 2 s of the last").await;
    }
    // A send counts as a stop: the stop and the message come, in either
    // order (the message's event is read from the table, the stop is not).
    send(&app, &alice, &conv, "done typing", &[]).await;
    let (mut stop, mut message) = (None, None);
    let deadline = Instant::now() + WAIT;
    while stop.is_none() || message.is_none() {
        let left = deadline.saturating_duration_since(Instant::now());
        match to_bob.frame(left).await {
            Some(Frame::Typing(news)) => stop = Some(news),
            Some(Frame::Event(e)) if e.kind == "message.created" => message = Some(e),
            Some(_) => {}
            None => panic!("stop {stop:?}, message {message:?}"),
        }
    }
    let stop = stop.expect("the stop");
    assert_eq!(
        (stop["state"].as_str(), stop["contact_id"].as_str()),
        (Some("stop"), Some(alice.id.as_str())),
        "{stop}"
    );
    let message = message.expect("the message");
    assert_eq!(message.data["payload"]["message"], "done typing");
    // Ended by the send: a new start counts (in its turn, 2 s after the
    // stop), and so does a stop after it; a second send says nothing more.
    typing(&app, &alice, &conv, None).await;
    heard(&mut to_bob, &alice, &conv, "start").await;
    typing(&app, &alice, &conv, Some("stop")).await;
    heard(&mut to_bob, &alice, &conv, "stop").await;
    send(&app, &alice, &conv, "no typing before this one", &[]).await;
    quiet(&mut to_bob, "a send without a start").await;
}

/// A message ends its sender's typing on the others' screens: typing again
/// right after it is heard (in its turn), not taken for a renewal of the
/// start before the message.
async fn typing_again_right_after_a_send_is_heard(app: TestApp) {
    let (alice, bob, _carol, conv) = trio(&app).await;
    let mut to_bob = stream(&app, &bob).await;
    typing(&app, &alice, &conv, None).await;
    heard(&mut to_bob, &alice, &conv, "start").await;
    send(&app, &alice, &conv, "first line", &[]).await;
    typing(&app, &alice, &conv, None).await;
    let deadline = Instant::now() + WAIT;
    let mut news = Vec::new();
    while news.last().and_then(|n: &Value| n["state"].as_str()) != Some("start") {
        let left = deadline.saturating_duration_since(Instant::now());
        match to_bob.frame(left).await {
            Some(Frame::Typing(n)) => news.push(n),
            Some(_) => {}
            None => panic!("no start after the send; typing news heard: {news:?}"),
        }
    }
}

async fn typing_is_never_stored_listed_or_replayed(app: TestApp) {
    let (alice, bob, _carol, conv) = trio(&app).await;
    let since = conversation_created(&app, &bob).await;
    let mut to_bob = stream(&app, &bob).await;
    typing(&app, &alice, &conv, None).await;
    heard(&mut to_bob, &alice, &conv, "start").await;
    let marker = send(&app, &alice, &conv, "after the news", &[]).await;
    let live = to_bob
        .event_of("message.created", WAIT)
        .await
        .expect("the message");
    // The send's stop comes in its turn (2 s after the start): heard live,
    // before the stream below opens.
    heard(&mut to_bob, &alice, &conv, "stop").await;
    // Nothing in the catch-up but the message.
    let (raw, events) = catch_up(&app, &bob.token, &since).await;
    assert!(!raw.contains("typing"), "{raw}");
    assert!(events.iter().all(|e| e["type"] != "typing"), "{raw}");
    assert!(
        events
            .iter()
            .any(|e| e["payload"]["id"] == marker["id"] && e["id"] == live.id.as_str()),
        "{raw}"
    );
    // A stream resumed from before the typing replays the message alone.
    let mut resumed = Sse::open(
        &app.base_url,
        &bob.token,
        "/v1/events",
        &[("last-event-id", since.as_str())],
    )
    .await;
    let replayed = resumed
        .event_of("message.created", WAIT)
        .await
        .expect("replayed");
    assert_eq!(replayed.id, live.id);
    quiet(&mut resumed, "a resumed stream").await;
}

async fn bad_typing_is_refused(app: TestApp) {
    let (alice, bob, _carol, conv) = trio(&app).await;
    let dave = app.user("dave").await;
    let mut to_bob = stream(&app, &bob).await;
    let path = format!("/v1/conversations/{conv}/typing");
    app.post(&dave, &path, &[])
        .await
        .expect_error(404, "not_found", None);
    app.post(&dave, &path, &[("state", "stop")])
        .await
        .expect_error(404, "not_found", None);
    for id in [UNKNOWN_ID, "not-an-id"] {
        app.post(&alice, &format!("/v1/conversations/{id}/typing"), &[])
            .await
            .expect_error(404, "not_found", None);
    }
    for state in ["", "typing", "START", "stop\u{0}"] {
        app.post(&alice, &path, &[("state", state)])
            .await
            .expect_error(400, "parameter_invalid", Some("state"));
    }
    app.post(&alice, &path, &[("status", "start")])
        .await
        .expect_error(400, "parameter_unknown", Some("status"));
    let anonymous = app.send(Method::POST, &path, None, None, &[]).await;
    assert_eq!(anonymous.status.as_u16(), 401, "{}", anonymous.raw);
    quiet(&mut to_bob, "refused typing").await;

    // A direct conversation whose members are in a block: refused like a
    // send, and nothing is heard.
    let direct = app.direct(&alice, &bob).await;
    app.post(&bob, &format!("/v1/contacts/{}/block", alice.id), &[])
        .await
        .expect(201);
    app.post(&alice, &format!("/v1/conversations/{direct}/typing"), &[])
        .await
        .expect_error(403, "contact_blocked", None);
    quiet(&mut to_bob, "typing by a blocked contact").await;
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    the_other_members_streams_hear_it_and_nobody_else,
    starts_too_soon_and_stops_without_a_start_add_nothing_and_a_send_stops,
    typing_again_right_after_a_send_is_heard,
    typing_is_never_stored_listed_or_replayed,
    bad_typing_is_refused,
);

/// Two server processes' worth on one PostgreSQL database (each its own
/// service, relay and LISTEN connection): news said to one reaches the
/// streams of the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_typing_crosses_to_another_server_process() {
    let app = TestApp::spawn(Backend::Postgres).await;
    let (alice, bob, _carol, conv) = trio(&app).await;
    let url = app.database_url().to_owned();
    let other = tokio::task::spawn_blocking(move || {
        let database = Database::from_env_value(Some(&url)).expect("database url");
        open_service(&database).expect("open store")
    })
    .await
    .expect("join");
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let limits = RateLimits {
        anonymous: None,
        ..RateLimits::default()
    };
    let server = Application::build_with(other, listener, limits)
        .await
        .expect("build");
    tokio::spawn(server.run_until_stopped());
    let elsewhere = format!("http://127.0.0.1:{port}");
    let mut to_bob = Sse::open(&elsewhere, &bob.token, "/v1/events", &[]).await;
    // The other process listens once its hub first waits: a start until
    // one crosses (each a new one: a stop in between; each waits its turn,
    // at most 2 s after the last).
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        typing(&app, &alice, &conv, Some("start")).await;
        if let Some(news) = to_bob.typing(Duration::from_millis(2_500)).await {
            assert_eq!(news["contact_id"], alice.id.as_str(), "{news}");
            assert_eq!(news["state"], "start", "{news}");
            break;
        }
        assert!(Instant::now() < deadline, "typing never crossed");
        typing(&app, &alice, &conv, Some("stop")).await;
    }
    // The stop, and a send's stop, cross too.
    typing(&app, &alice, &conv, Some("stop")).await;
    heard(&mut to_bob, &alice, &conv, "stop").await;
    typing(&app, &alice, &conv, None).await;
    heard(&mut to_bob, &alice, &conv, "start").await;
    send(&app, &alice, &conv, "sent on the first process", &[]).await;
    heard(&mut to_bob, &alice, &conv, "stop").await;
}
