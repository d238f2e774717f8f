//! A pin change in a group conversation is one event read by the group,
//! whatever its size: its payload the conversation's shared attributes
//! alone (each member keeps their own mute, archive and counts), the
//! actor's own full view beside it for the actor. A direct conversation's
//! two members each get their own view, as before.

use confab_tests::http::{TestApp, User};
use serde_json::Value;

use super::{created, events_until, latest_event, rows, say};
use crate::support::{group_conversation, keys, listed_conversation, new_group, pair};

/// The keys of a group conversation's shared attributes.
const SHARED: [&str; 6] = [
    "contact_id",
    "created_at",
    "group_id",
    "id",
    "last_active_at",
    "pinned_message_id",
];

/// `user`'s `conversation.updated` events of `conv` after `from`, once the
/// marker message `marker` has arrived.
async fn updates(
    app: &TestApp,
    user: &User,
    from: Option<&str>,
    conv: &str,
    marker: &str,
) -> Vec<Value> {
    events_until(app, user, from, created(marker))
        .await
        .into_iter()
        .filter(|e| e["type"] == "conversation.updated" && e["payload"]["id"] == conv)
        .collect()
}

async fn a_pin_in_a_group_is_one_row_for_any_size_and_every_view_stays_right(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let mut others = Vec::new();
    for n in 0..20 {
        others.push(app.user(&format!("member{n}")).await);
    }
    let mut members: Vec<&User> = vec![&bob];
    members.extend(others.iter());
    let group = new_group(&app, &alice, "big", &members).await;
    let conv = group_conversation(&app, &alice, &group).await;
    let path = format!("/v1/conversations/{conv}");
    // Bob's own state differs from alice's.
    app.put(&bob, &path, &[("is_muted", "true")])
        .await
        .expect(200);
    let m = say(&app, &bob, &conv, "pin me").await;
    let marker = say(&app, &alice, &conv, "ready").await;
    let from_bob = events_until(&app, &bob, None, created(&marker)).await;
    let from_bob = from_bob
        .last()
        .map(|e| e["id"].as_str().expect("id").to_owned());
    let from_alice = latest_event(&app, &alice).await;
    let from_member = latest_event(&app, &others[0]).await;

    let (recipients, by_group) = (rows(&app, "event_recipients"), rows(&app, "event_groups"));
    let r = app
        .put(
            &alice,
            &path,
            &[("pinned_message_id", &m), ("is_pinned", "true")],
        )
        .await;
    let answer = r.expect(200).clone();
    assert_eq!(answer["pinned_message_id"], m.as_str());
    assert_eq!(answer["is_pinned"], true, "{answer}");
    // One row for the group, one for the actor's own view: not one per
    // member (22 here).
    assert_eq!(rows(&app, "event_groups") - by_group, 1);
    assert_eq!(rows(&app, "event_recipients") - recipients, 1);

    let marker = say(&app, &alice, &conv, "pinned").await;
    // A member hears the shared attributes alone...
    for member in [&bob, &others[0]] {
        let from = if member.id == bob.id {
            &from_bob
        } else {
            &from_member
        };
        let seen = updates(&app, member, from.as_deref(), &conv, &marker).await;
        assert_eq!(seen.len(), 1, "{seen:?}");
        let payload = &seen[0]["payload"];
        assert_eq!(keys(payload), SHARED, "{payload}");
        assert_eq!(payload["pinned_message_id"], m.as_str());
        assert!(payload["contact_id"].is_null());
        assert_eq!(payload["group_id"], group.as_str());
    }
    // ...and keeps their own state: bob is still muted, the pin shows.
    let bobs = listed_conversation(&app, &bob, &conv).await;
    assert_eq!(bobs["is_muted"], true, "{bobs}");
    assert_eq!(bobs["is_pinned"], false, "{bobs}");
    assert_eq!(bobs["pinned_message_id"], m.as_str());
    // The actor's other devices get her whole view, her own pin in it.
    let hers = updates(&app, &alice, from_alice.as_deref(), &conv, &marker).await;
    assert_eq!(hers.len(), 1, "{hers:?}");
    assert_eq!(hers[0]["payload"], answer, "her view as answered");

    // A member unpins: the same, for everyone.
    let from_alice = latest_event(&app, &alice).await;
    app.put(&bob, &path, &[("pinned_message_id", "")])
        .await
        .expect(200);
    let marker = say(&app, &bob, &conv, "unpinned").await;
    let hers = updates(&app, &alice, from_alice.as_deref(), &conv, &marker).await;
    assert_eq!(hers.len(), 1, "{hers:?}");
    assert_eq!(keys(&hers[0]["payload"]), SHARED);
    assert!(hers[0]["payload"]["pinned_message_id"].is_null());

    // Deleted means gone: the actor's own payload goes with the rest.
    app.delete(&alice, &path).await.expect(204);
    let gone = super::events_until(&app, &alice, from_alice.as_deref(), |e: &Value| {
        e["type"] == "conversation.deleted"
    })
    .await;
    for e in gone.iter().filter(|e| e["type"] == "conversation.updated") {
        assert_eq!(
            e["payload"],
            serde_json::json!({"id": conv, "deleted": true}),
            "{e}"
        );
    }
    let all = super::events_after(&app, &alice, None).await;
    let raw = serde_json::to_string(&all).expect("json");
    assert!(!raw.contains("\"is_pinned\":true"), "{raw}");
}

async fn a_pin_in_a_direct_conversation_still_reaches_each_with_their_own_view(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let path = format!("/v1/conversations/{conv}");
    app.put(&bob, &path, &[("is_muted", "true")])
        .await
        .expect(200);
    let m = say(&app, &bob, &conv, "pin me").await;
    let marker = say(&app, &alice, &conv, "ready").await;
    events_until(&app, &bob, None, created(&marker)).await;
    let from_bob = latest_event(&app, &bob).await;
    app.put(&alice, &path, &[("pinned_message_id", &m)])
        .await
        .expect(200);
    let marker = say(&app, &alice, &conv, "pinned").await;
    let seen = updates(&app, &bob, from_bob.as_deref(), &conv, &marker).await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    let payload = &seen[0]["payload"];
    assert_eq!(payload["pinned_message_id"], m.as_str());
    assert_eq!(payload["is_muted"], true, "bob's own view: {payload}");
    assert_eq!(payload["contact_id"], alice.id.as_str(), "{payload}");
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    a_pin_in_a_group_is_one_row_for_any_size_and_every_view_stays_right,
    a_pin_in_a_direct_conversation_still_reaches_each_with_their_own_view,
);
