//! A write that changes nothing (the pinned message pinned again, a mute
//! already set, a group's details or a profile given the values they have)
//! answers 200 with the object as it is, writes no row and tells nobody.

use confab_tests::http::TestApp;
use serde_json::Value;

use super::{created, events_until, kinds, latest_event, rows, say};
use crate::support::{group_conversation, id_of, listed_conversation, new_group, now_secs, pair};

/// Every row a write may add: events and their audiences, the
/// members' own states.
fn written(app: &TestApp) -> [i64; 4] {
    [
        rows(app, "events"),
        rows(app, "event_recipients"),
        rows(app, "event_groups"),
        rows(app, "conversation_states"),
    ]
}

async fn writes_that_change_nothing_write_nothing_and_tell_nobody(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let path = format!("/v1/conversations/{conv}");
    let m = say(&app, &alice, &conv, "pin me").await;
    let archived = (now_secs() + 30).to_string();
    // The real changes, once.
    app.put(&alice, &path, &[("pinned_message_id", &m)])
        .await
        .expect(200);
    app.put(
        &bob,
        &path,
        &[("is_muted", "true"), ("archived_at", &archived)],
    )
    .await
    .expect(200);
    let group = new_group(&app, &alice, "team", &[&bob]).await;
    let group_path = format!("/v1/groups/{group}");
    app.put(
        &alice,
        &group_path,
        &[
            ("description", "the team"),
            ("avatar_url", "https://example.com/t.png"),
        ],
    )
    .await
    .expect(200);
    let in_group = group_conversation(&app, &alice, &group).await;
    app.put(
        &alice,
        "/v1/contacts/me",
        &[("avatar_url", "https://example.com/a.png")],
    )
    .await
    .expect(200);
    let marker = say(&app, &bob, &conv, "everything so far").await;
    let since_alice = events_until(&app, &alice, None, created(&marker)).await;
    let since_bob = events_until(&app, &bob, None, created(&marker)).await;
    let (from_alice, from_bob) = (
        latest_event(&app, &alice).await,
        latest_event(&app, &bob).await,
    );
    assert!(!since_alice.is_empty() && !since_bob.is_empty());
    let before = written(&app);
    let bobs_view = listed_conversation(&app, &bob, &conv).await;
    let alices_view = listed_conversation(&app, &alice, &conv).await;

    // The same again, every way: 200 with the object as it is.
    for (who, view, pairs) in [
        (
            &alice,
            &alices_view,
            vec![("pinned_message_id", m.as_str())],
        ),
        (
            &alice,
            &alices_view,
            vec![("pinned_message_id", m.as_str()), ("is_muted", "false")],
        ),
        (&bob, &bobs_view, vec![("is_muted", "true")]),
        (&bob, &bobs_view, vec![("archived_at", archived.as_str())]),
        (
            &bob,
            &bobs_view,
            vec![
                ("is_pinned", "false"),
                ("is_muted", "true"),
                ("pinned_message_id", m.as_str()),
            ],
        ),
    ] {
        let answer = app.put(who, &path, &pairs).await;
        assert_eq!(answer.expect(200), view, "{pairs:?}: {}", answer.raw);
    }
    // Nothing pinned in the group's conversation: unpinning changes nothing.
    let r = app
        .put(
            &bob,
            &format!("/v1/conversations/{in_group}"),
            &[("pinned_message_id", "")],
        )
        .await;
    assert!(r.expect(200)["pinned_message_id"].is_null(), "{}", r.raw);
    let group_now = app.get(&alice, &group_path).await.expect(200).clone();
    let r = app
        .put(
            &alice,
            &group_path,
            &[
                ("name", "team"),
                ("description", "the team"),
                ("avatar_url", "https://example.com/t.png"),
            ],
        )
        .await;
    assert_eq!(r.expect(200), &group_now, "{}", r.raw);
    let me = app.get(&alice, "/v1/contacts/me").await.expect(200).clone();
    let phone = me["phone_number"]
        .as_str()
        .expect("her own number")
        .to_owned();
    let r = app
        .put(
            &alice,
            "/v1/contacts/me",
            &[
                ("phone_number", phone.as_str()),
                ("avatar_url", "https://example.com/a.png"),
            ],
        )
        .await;
    assert_eq!(r.expect(200), &me, "{}", r.raw);

    // No row written, nobody told: the next events either of them gets
    // are the marker's.
    assert_eq!(written(&app), before, "rows were written");
    let marker = say(&app, &bob, &conv, "nothing since").await;
    for (who, from) in [(&alice, &from_alice), (&bob, &from_bob)] {
        let events = events_until(&app, who, from.as_deref(), created(&marker)).await;
        assert_eq!(
            kinds(&events),
            ["message.created"],
            "{} heard of writes that changed nothing: {events:?}",
            who.username
        );
    }

    // A real change after them still counts, once.
    let other = say(&app, &bob, &conv, "pin this instead").await;
    let from = events_until(&app, &bob, None, created(&other))
        .await
        .last()
        .map(|e| e["id"].as_str().expect("id").to_owned());
    let r = app
        .put(&alice, &path, &[("pinned_message_id", &other)])
        .await;
    assert_eq!(r.expect(200)["pinned_message_id"], other.as_str());
    let events = events_until(&app, &bob, from.as_deref(), |e: &Value| {
        e["type"] == "conversation.updated"
    })
    .await;
    assert_eq!(kinds(&events), ["conversation.updated"], "{events:?}");
    assert_eq!(events[0]["payload"]["pinned_message_id"], other.as_str());
    assert_eq!(id_of(&events[0]["payload"]), conv);
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    writes_that_change_nothing_write_nothing_and_tell_nobody,
);
