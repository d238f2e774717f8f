//! Event tickets (docs/api.md "Requests and answers"): a browser's `EventSource` sends no
//! header, so it opens its stream with `GET /v1/events?ticket=...`. A
//! ticket opens streams (and their reconnects) and nothing else, and lives
//! no longer than the token that made it.

use std::time::{Duration, Instant};

use confab_tests::http::{Resp, TestApp, User};
use reqwest::Method;

use crate::events::Sse;

async fn make_ticket(app: &TestApp, user: &User) -> String {
    let r = app
        .send(
            Method::POST,
            "/v1/events/tickets",
            Some(&user.token),
            None,
            &[],
        )
        .await;
    r.expect(201)["ticket"].as_str().expect("ticket").to_owned()
}

/// A GET without `Authorization`.
async fn anonymous(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> Resp {
    app.send(Method::GET, path, None, None, headers).await
}

async fn a_ticket_opens_the_stream_and_its_reconnects(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let c = app.direct(&alice, &bob).await;
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    let r = app
        .send(
            Method::POST,
            "/v1/events/tickets",
            Some(&alice.token),
            None,
            &[],
        )
        .await;
    let made = r.expect(201).clone();
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let ticket = made["ticket"].as_str().expect("ticket");
    assert!(ticket.starts_with("cft_") && ticket.len() == 68, "{ticket}");
    assert!(ticket[4..].bytes().all(|b| b.is_ascii_hexdigit()));
    let expires_at = made["expires_at"].as_i64().expect("expires_at");
    assert!(
        (before + 599..=before + 602).contains(&expires_at),
        "expires 10 minutes on: {expires_at} (now {before})"
    );
    assert_eq!(made.as_object().map(|o| o.len()), Some(2), "{made}");

    // The stream, without a header.
    let path = format!("/v1/events?ticket={ticket}");
    let mut sse = Sse::open_as(&app.base_url, None, &path, &[]).await;
    let first = app.send_message(&bob, &c, "one").await;
    let seen = sse
        .event_of("message.created", Duration::from_secs(5))
        .await
        .expect("message.created on the ticket's stream");
    assert_eq!(seen.data["payload"]["id"], first["id"]);
    drop(sse);
    // A reconnect with Last-Event-ID: what came meanwhile is replayed.
    let second = app.send_message(&bob, &c, "two").await;
    let mut again = Sse::open_as(&app.base_url, None, &path, &[("last-event-id", &seen.id)]).await;
    let replayed = again
        .event_of("message.created", Duration::from_secs(5))
        .await
        .expect("replayed");
    assert_eq!(replayed.data["payload"]["id"], second["id"]);
    // The same ticket opens more than one stream while it lives.
    let _third = Sse::open_as(&app.base_url, None, &path, &[]).await;
}

async fn a_ticket_opens_nothing_else(app: TestApp) {
    let alice = app.user("alice").await;
    let ticket = make_ticket(&app, &alice).await;
    let q = format!("ticket={ticket}");
    // Every other route: a request without credentials.
    for path in [
        format!("/v1/contacts/me?{q}"),
        format!("/v1/conversations?{q}"),
        format!("/v1/events/tickets?{q}"),
    ] {
        anonymous(&app, &path, &[])
            .await
            .expect_error(401, "unauthorized", None);
    }
    let r = app
        .send(
            Method::POST,
            &format!("/v1/events/tickets?{q}"),
            None,
            None,
            &[],
        )
        .await;
    r.expect_error(401, "unauthorized", None);
    // Not a token either.
    app.send(Method::GET, "/v1/contacts/me", Some(&ticket), None, &[])
        .await
        .expect_error(401, "unauthorized", None);
    app.send(Method::GET, "/v1/events", Some(&ticket), None, &[])
        .await
        .expect_error(401, "unauthorized", None);
    // The list of events is read with a token.
    anonymous(
        &app,
        &format!("/v1/events?{q}"),
        &[("accept", "application/json")],
    )
    .await
    .expect_error(401, "unauthorized", None);
    // Unknown, altered, empty; and a token is never taken in the query.
    // Its last hex digit changed (to another one, whatever it was).
    let last = if ticket.ends_with('0') { '1' } else { '0' };
    let altered = format!("{}{last}", &ticket[..ticket.len() - 1]);
    for bad in [
        "cft_0000000000000000000000000000000000000000000000000000000000000000",
        altered.as_str(),
        "",
        alice.token.as_str(),
    ] {
        anonymous(&app, &format!("/v1/events?ticket={bad}"), &[])
            .await
            .expect_error(401, "unauthorized", None);
    }
    anonymous(
        &app,
        &format!("/v1/events?access_token={}", alice.token),
        &[],
    )
    .await
    .expect_error(401, "unauthorized", None);
    // A ticket takes no parameters to be made.
    app.post(&alice, "/v1/events/tickets", &[("expires_in", "60")])
        .await
        .expect_error(400, "parameter_unknown", Some("expires_in"));
}

async fn revoking_the_token_refuses_its_tickets_and_ends_their_streams(app: TestApp) {
    let mut alice = app.user("alice").await;
    let ticket = make_ticket(&app, &alice).await;
    let path = format!("/v1/events?ticket={ticket}");
    let mut sse = Sse::open_as(&app.base_url, None, &path, &[]).await;
    let revoked = Instant::now();
    app.revoke_and_reissue(&mut alice).await;
    sse.expect_end_within(revoked, Duration::from_secs(5)).await;
    anonymous(&app, &path, &[])
        .await
        .expect_error(401, "unauthorized", None);
    // The new token makes tickets that work.
    let fresh = make_ticket(&app, &alice).await;
    Sse::open_as(
        &app.base_url,
        None,
        &format!("/v1/events?ticket={fresh}"),
        &[],
    )
    .await;
}

/// A ticket past its lifetime is an expired credential: 401
/// `token_expired` (the client makes a new one), with its challenge. A
/// ticket lives no longer than its token: one whose token expired is
/// refused the same way.
async fn an_expired_ticket_is_token_expired(app: TestApp) {
    let mut alice = app.user("alice").await;
    let issued = Instant::now();
    alice.token = app
        .service
        .issue_token("alice", Some(2))
        .await
        .expect("issue");
    let ticket = make_ticket(&app, &alice).await;
    let path = format!("/v1/events?ticket={ticket}");
    tokio::time::sleep_until((issued + Duration::from_millis(2_300)).into()).await;
    let r = anonymous(&app, &path, &[]).await;
    r.expect_error(401, "token_expired", None);
    let www = r.header("www-authenticate").unwrap_or_default();
    assert!(
        www.starts_with("Bearer error=\"invalid_token\""),
        "WWW-Authenticate: {www:?}"
    );
    // Unknown tickets stay `unauthorized`: nothing says whether one exists.
    anonymous(
        &app,
        "/v1/events?ticket=cft_0000000000000000000000000000000000000000000000000000000000000000",
        &[],
    )
    .await
    .expect_error(401, "unauthorized", None);
}

async fn a_server_key_makes_no_ticket(app: TestApp) {
    let alice = app.user("alice").await;
    let key = app
        .service
        .create_server_key("app backend")
        .await
        .expect("key")
        .secret;
    app.send(
        Method::POST,
        "/v1/events/tickets",
        Some(&key),
        None,
        &[("confab-contact", &alice.id)],
    )
    .await
    .expect_error(403, "forbidden", None);
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    a_ticket_opens_the_stream_and_its_reconnects,
    a_ticket_opens_nothing_else,
    revoking_the_token_refuses_its_tickets_and_ends_their_streams,
    a_server_key_makes_no_ticket,
    an_expired_ticket_is_token_expired,
);
