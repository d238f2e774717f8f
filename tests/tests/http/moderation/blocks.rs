//! Blocks (docs/api.md "Blocks and reports"): a block is made once, found, listed
//! newest first and undone; in a direct conversation it stops both
//! contacts writing (new conversations, sends, edits, reactions) from the
//! next request on, while reading, one's own deletions and per-member
//! state stay allowed; the blocked is never told until they try; the
//! blocked cannot add the blocker to a group; group conversations are
//! otherwise unaffected.

use std::time::Duration;

use confab_tests::http::{Resp, TestApp, User};
use reqwest::Method;
use serde_json::{json, Value};

use super::{after_marker, block, try_send, unblock, without_activity};
use crate::support::{
    assert_recent, data_ids, group_conversation, id_of, keys, listed_conversation, member_ids,
    new_group, now_secs, page, UNKNOWN_ID,
};

fn block_path(whom: &User) -> String {
    format!("/v1/contacts/{}/block", whom.id)
}

/// Asserts a refusal for a block: 403 `contact_blocked` naming `param`;
/// the blocked's message does not give the block away, the blocker's says
/// to unblock.
#[track_caller]
fn assert_blocked(r: &Resp, param: Option<&str>, caller_is_blocker: bool) {
    r.expect_error(403, "contact_blocked", param);
    let message = r.body["message"].as_str().unwrap_or("").to_lowercase();
    if caller_is_blocker {
        assert!(message.contains("unblock"), "{}", r.raw);
    } else {
        assert!(!message.contains("block"), "tells the blocked: {}", r.raw);
    }
}

/// `who` tries to start a direct conversation with `peer`, plain, with
/// `distinct=true` and as JSON.
async fn direct_attempts(app: &TestApp, who: &User, peer: &User) -> Vec<Resp> {
    vec![
        app.post(
            who,
            "/v1/conversations",
            &[("contact_id", peer.id.as_str())],
        )
        .await,
        app.post(
            who,
            "/v1/conversations",
            &[("contact_id", peer.id.as_str()), ("distinct", "true")],
        )
        .await,
        app.json(
            Method::POST,
            who,
            "/v1/conversations",
            &json!({"contact_id": peer.id, "distinct": true}),
        )
        .await,
    ]
}

/// All of `user`'s conversation ids (one page of 100).
async fn conversation_ids(app: &TestApp, user: &User) -> Vec<String> {
    page(app, user, "/v1/conversations?limit=100").await.0
}

async fn a_block_is_made_once_found_and_undone(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;

    let r = block(&app, &alice, &bob).await;
    let first = r.expect(201).clone();
    assert_eq!(keys(&first), ["contact", "created_at"], "{first}");
    assert_eq!(first["contact"]["id"], bob.id.as_str());
    assert_eq!(first["contact"]["username"], "bob");
    assert!(first["contact"]["phone_number"].is_null(), "{first}");
    assert_recent(&first["created_at"]);
    let location = r.header("location").expect("Location");
    assert!(location.ends_with(&block_path(&bob)), "Location {location}");
    // Again, twice: 200 with the first block, its time unchanged.
    for _ in 0..2 {
        let again = block(&app, &alice, &bob).await;
        assert_eq!(
            without_activity(again.expect(200)),
            without_activity(&first)
        );
    }
    let got = app.get(&alice, &block_path(&bob)).await;
    assert_eq!(without_activity(got.expect(200)), without_activity(&first));

    // Only the caller's own blocks are found.
    app.get(&bob, &block_path(&alice))
        .await
        .expect_error(404, "not_found", None);
    app.get(&alice, &block_path(&carol))
        .await
        .expect_error(404, "not_found", None);
    app.delete(&alice, &block_path(&carol))
        .await
        .expect_error(404, "not_found", None);
    app.delete(&bob, &block_path(&alice))
        .await
        .expect_error(404, "not_found", None);
    // Unknown or malformed ids: 404; oneself: 400 naming the id; a body
    // parameter: unknown.
    for id in [UNKNOWN_ID, "nope"] {
        let p = format!("/v1/contacts/{id}/block");
        app.post(&alice, &p, &[])
            .await
            .expect_error(404, "not_found", None);
        app.get(&alice, &p)
            .await
            .expect_error(404, "not_found", None);
        app.delete(&alice, &p)
            .await
            .expect_error(404, "not_found", None);
    }
    block(&app, &alice, &alice)
        .await
        .expect_error(400, "parameter_invalid", Some("id"));
    app.post(&alice, &block_path(&carol), &[("reason", "spam")])
        .await
        .expect_error(400, "parameter_unknown", Some("reason"));
    app.get(&alice, &block_path(&carol))
        .await
        .expect_error(404, "not_found", None);

    // Undone: 204 with no body; then gone, and a second DELETE is 404.
    let r = app.delete(&alice, &block_path(&bob)).await;
    r.expect(204);
    assert!(r.raw.is_empty(), "{}", r.raw);
    app.get(&alice, &block_path(&bob))
        .await
        .expect_error(404, "not_found", None);
    app.delete(&alice, &block_path(&bob))
        .await
        .expect_error(404, "not_found", None);
    // A new block is a new one.
    let again = block(&app, &alice, &bob).await;
    let t = again.expect(201)["created_at"]
        .as_i64()
        .expect("created_at");
    assert!(t >= first["created_at"].as_i64().expect("created_at"));
    // Each direction is its own block.
    block(&app, &bob, &alice).await.expect(201);
    app.get(&bob, &block_path(&alice)).await.expect(200);
    unblock(&app, &bob, &alice).await.expect(204);
    app.get(&alice, &block_path(&bob)).await.expect(200);
}

async fn blocks_are_listed_newest_first_with_contact_cursors(app: TestApp) {
    let alice = app.user("alice").await;
    let carol = app.user("carol").await;
    let mut b = Vec::new();
    for i in 1..=5 {
        b.push(app.user(&format!("b{i}")).await);
    }
    for u in &b {
        block(&app, &alice, u).await.expect(201);
    }
    // Someone else's block is not alice's.
    block(&app, &carol, &b[0]).await.expect(201);
    let id = |i: usize| b[i - 1].id.clone();
    let list = "/v1/contacts/blocked";

    let r = app.get(&alice, list).await;
    let body = r.expect(200);
    assert_eq!(body["has_more"], false);
    let items = body["data"].as_array().expect("data");
    let listed: Vec<String> = items
        .iter()
        .map(|i| i["contact"]["id"].as_str().expect("id").to_owned())
        .collect();
    assert_eq!(listed, [id(5), id(4), id(3), id(2), id(1)], "newest first");
    for i in items {
        assert_eq!(keys(i), ["contact", "created_at"], "{i}");
        assert!(i["contact"]["phone_number"].is_null(), "{i}");
    }
    let ids = |body: &Value| -> Vec<String> {
        body["data"]
            .as_array()
            .expect("data")
            .iter()
            .map(|i| i["contact"]["id"].as_str().expect("id").to_owned())
            .collect()
    };
    let paged = |query: String| {
        let app = &app;
        let alice = &alice;
        async move {
            let r = app.get(alice, &format!("{list}?{query}")).await;
            let body = r.expect(200).clone();
            (ids(&body), body["has_more"] == true)
        }
    };
    // Forwards.
    assert_eq!(paged("limit=2".into()).await, (vec![id(5), id(4)], true));
    assert_eq!(
        paged(format!("limit=2&starting_after={}", id(4))).await,
        (vec![id(3), id(2)], true)
    );
    assert_eq!(
        paged(format!("limit=2&starting_after={}", id(2))).await,
        (vec![id(1)], false)
    );
    // Backwards, still newest first within a page.
    assert_eq!(
        paged(format!("limit=2&ending_before={}", id(1))).await,
        (vec![id(3), id(2)], true)
    );
    assert_eq!(
        paged(format!("limit=2&ending_before={}", id(3))).await,
        (vec![id(5), id(4)], false)
    );
    // Bad cursors and limits.
    for (query, param) in [
        (format!("starting_after={}", carol.id), "starting_after"),
        (format!("ending_before={UNKNOWN_ID}"), "ending_before"),
        ("limit=0".to_owned(), "limit"),
        ("limit=101".to_owned(), "limit"),
        ("limit=x".to_owned(), "limit"),
    ] {
        app.get(&alice, &format!("{list}?{query}"))
            .await
            .expect_error(400, "parameter_invalid", Some(param));
    }
    let both = app
        .get(
            &alice,
            &format!("{list}?starting_after={}&ending_before={}", id(4), id(2)),
        )
        .await;
    both.expect(400);

    // Unblocked: gone from the list; blocked again later: the newest.
    unblock(&app, &alice, &b[2]).await.expect(204);
    assert_eq!(
        ids(app.get(&alice, list).await.expect(200)),
        [id(5), id(4), id(2), id(1)]
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    block(&app, &alice, &b[2]).await.expect(201);
    assert_eq!(
        ids(app.get(&alice, list).await.expect(200)),
        [id(3), id(5), id(4), id(2), id(1)]
    );
    // Carol's list is hers; the blocked see none of it.
    assert_eq!(ids(app.get(&carol, list).await.expect(200)), [id(1)]);
    assert!(ids(app.get(&b[0], list).await.expect(200)).is_empty());
}

async fn a_block_stops_writing_in_the_direct_conversation_both_ways(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let direct = app.direct(&alice, &bob).await;
    let another = app.direct(&bob, &alice).await;
    let of_alice = id_of(&app.send_message(&alice, &direct, "from alice").await);
    let of_bob = id_of(&app.send_message(&bob, &direct, "from bob").await);
    let alice_convs = conversation_ids(&app, &alice).await;
    let bob_convs = conversation_ids(&app, &bob).await;

    // Alice blocks bob: neither writes to the other in any of their
    // direct conversations.
    block(&app, &alice, &bob).await.expect(201);
    for (who, is_blocker) in [(&bob, false), (&alice, true)] {
        for conv in [&direct, &another] {
            let r = try_send(&app, who, conv, "through?").await;
            assert_blocked(&r, Some("conversation_id"), is_blocker);
        }
        let r = app
            .json(
                Method::POST,
                who,
                "/v1/messages",
                &json!({"conversation_id": direct, "message": "json?"}),
            )
            .await;
        assert_blocked(&r, Some("conversation_id"), is_blocker);
        // Nor edits, reacts or attaches, on their own message or the other's.
        let (own, other) = if is_blocker {
            (&of_alice, &of_bob)
        } else {
            (&of_bob, &of_alice)
        };
        let own_path = format!("/v1/messages/{own}");
        let other_path = format!("/v1/messages/{other}");
        let attempts = [
            (own_path.clone(), vec![("message", "edited")]),
            (
                other_path.clone(),
                vec![("reactions[like][]", who.username.as_str())],
            ),
            (
                own_path.clone(),
                vec![("reactions[heart][]", who.username.as_str())],
            ),
            (
                own_path,
                vec![
                    ("attachments[0][file_url]", "https://example.com/a.png"),
                    ("attachments[0][filename]", "a.png"),
                ],
            ),
        ];
        for (path, pairs) in &attempts {
            let r = app.put(who, path, pairs).await;
            assert_eq!(r.status.as_u16(), 403, "{path} {pairs:?}: {}", r.raw);
            assert_blocked(&r, None, is_blocker);
        }
        // Nor starts a direct conversation, plain or distinct.
        let peer = if is_blocker { &bob } else { &alice };
        for r in direct_attempts(&app, who, peer).await {
            assert_blocked(&r, Some("contact_id"), is_blocker);
        }
    }
    // Nothing of it happened.
    let msgs = crate::support::conversation_messages(&app, &bob, &direct).await;
    let texts: Vec<(&str, &Value)> = msgs
        .iter()
        .map(|m| (m["message"].as_str().expect("text"), &m["reactions"]))
        .collect();
    assert_eq!(
        texts,
        [("from bob", &json!([])), ("from alice", &json!([]))]
    );
    for m in &msgs {
        assert_eq!(m["attachments"], json!([]), "{m}");
        assert!(m["updated_at"].is_null(), "{m}");
    }
    let again = crate::support::conversation_messages(&app, &alice, &another).await;
    assert!(again.is_empty(), "{again:?}");
    assert_eq!(conversation_ids(&app, &alice).await, alice_convs);
    assert_eq!(conversation_ids(&app, &bob).await, bob_convs);

    // Everyone else's conversations with either of them go on.
    for (x, y) in [(&carol, &bob), (&carol, &alice)] {
        let c = app.direct(x, y).await;
        app.send_message(x, &c, "hi").await;
        app.send_message(y, &c, "hi back").await;
        app.post(y, "/v1/conversations", &[("contact_id", x.id.as_str())])
            .await
            .expect(201);
    }
}

async fn what_stays_allowed_in_a_blocked_direct_conversation(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let direct = app.direct(&alice, &bob).await;
    let of_alice = id_of(&app.send_message(&alice, &direct, "from alice").await);
    let of_bob = id_of(&app.send_message(&bob, &direct, "from bob").await);
    for (who, on) in [(&alice, &of_bob), (&bob, &of_alice)] {
        app.put(
            who,
            &format!("/v1/messages/{on}"),
            &[("reactions[like][]", who.username.as_str())],
        )
        .await
        .expect(200);
    }
    // This time the other way round: bob blocks alice.
    block(&app, &bob, &alice).await.expect(201);
    let conv = format!("/v1/conversations/{direct}");
    for (who, other) in [(&alice, &of_bob), (&bob, &of_alice)] {
        // Reading and opening.
        let opened = app.get(who, &conv).await;
        assert_eq!(opened.expect(200)["unread_count"], 0, "{}", opened.raw);
        let listed = app
            .get(who, &format!("/v1/messages?conversation_id={direct}"))
            .await;
        assert_eq!(
            data_ids(listed.expect(200)),
            [of_bob.clone(), of_alice.clone()]
        );
        let m = app.get(who, &format!("/v1/messages/{other}")).await;
        assert!(m.expect(200)["read_at"].is_i64(), "{}", m.raw);
        // Taking back one's own reaction.
        let r = app
            .delete(who, &format!("/v1/messages/{other}/reactions/like"))
            .await;
        assert_eq!(r.expect(200)["reactions"], json!([]), "{}", r.raw);
        // Per-member state.
        let now = now_secs().to_string();
        for pairs in [
            vec![("is_muted", "true")],
            vec![("is_pinned", "true")],
            vec![("archived_at", now.as_str())],
            vec![("archived_at", "")],
        ] {
            app.put(who, &conv, &pairs).await.expect(200);
        }
        let mine = listed_conversation(&app, who, &direct).await;
        assert_eq!(mine["is_muted"], true, "{mine}");
        assert_eq!(mine["is_pinned"], true, "{mine}");
        assert!(mine["archived_at"].is_null(), "{mine}");
    }
    // Deleting one's own message.
    app.delete(&alice, &format!("/v1/messages/{of_alice}"))
        .await
        .expect(204);
    app.get(&bob, &format!("/v1/messages/{of_alice}"))
        .await
        .expect_error(404, "not_found", None);
    // Not the other's message (that stays the sender's).
    app.delete(&alice, &format!("/v1/messages/{of_bob}"))
        .await
        .expect_error(403, "forbidden", None);
    // Deleting the conversation, by either member (here the blocked).
    app.delete(&alice, &conv).await.expect(204);
    app.get(&bob, &conv)
        .await
        .expect_error(404, "not_found", None);
}

async fn a_block_takes_effect_on_the_next_request_and_unblock_restores(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let direct = app.direct(&alice, &bob).await;
    let of_bob = id_of(&app.send_message(&bob, &direct, "before").await);

    block(&app, &alice, &bob).await.expect(201);
    assert_blocked(
        &try_send(&app, &bob, &direct, "right after").await,
        Some("conversation_id"),
        false,
    );
    unblock(&app, &alice, &bob).await.expect(204);
    // Restored at once: sends, edits, reactions, conversations.
    app.send_message(&bob, &direct, "right after the unblock")
        .await;
    app.send_message(&alice, &direct, "welcome back").await;
    app.put(
        &bob,
        &format!("/v1/messages/{of_bob}"),
        &[("message", "edited")],
    )
    .await
    .expect(200);
    app.put(
        &alice,
        &format!("/v1/messages/{of_bob}"),
        &[("reactions[like][]", "alice")],
    )
    .await
    .expect(200);
    let same = app
        .post(
            &bob,
            "/v1/conversations",
            &[("contact_id", alice.id.as_str()), ("distinct", "true")],
        )
        .await;
    assert_eq!(same.expect(200)["id"], direct.as_str());
    app.post(
        &alice,
        "/v1/conversations",
        &[("contact_id", bob.id.as_str())],
    )
    .await
    .expect(201);

    // The other way; then both ways: one unblock is not enough.
    block(&app, &bob, &alice).await.expect(201);
    assert_blocked(
        &try_send(&app, &alice, &direct, "now?").await,
        Some("conversation_id"),
        false,
    );
    assert_blocked(
        &try_send(&app, &bob, &direct, "now?").await,
        Some("conversation_id"),
        true,
    );
    block(&app, &alice, &bob).await.expect(201);
    unblock(&app, &bob, &alice).await.expect(204);
    for who in [&alice, &bob] {
        try_send(&app, who, &direct, "still?").await.expect_error(
            403,
            "contact_blocked",
            Some("conversation_id"),
        );
        let peer = if who.id == alice.id { &bob } else { &alice };
        let again = app
            .post(
                who,
                "/v1/conversations",
                &[("contact_id", peer.id.as_str())],
            )
            .await;
        again.expect_error(403, "contact_blocked", Some("contact_id"));
    }
    unblock(&app, &alice, &bob).await.expect(204);
    for who in [&alice, &bob] {
        app.send_message(who, &direct, "at last").await;
    }
}

async fn the_blocked_is_never_told(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let direct = app.direct(&alice, &bob).await;
    app.send_message(&alice, &direct, "hello bob").await;
    // Carol's conversation with bob carries the markers.
    let marks = app.direct(&carol, &bob).await;
    let alice_path = format!("/v1/contacts/{}", alice.id);
    let lookup = "/v1/contacts?username=alice";
    let seen_before = without_activity(app.get(&bob, &alice_path).await.expect(200));
    let found_before = without_activity(app.get(&bob, lookup).await.expect(200));
    let conv_before = without_activity(&listed_conversation(&app, &bob, &direct).await);
    let events_before = after_marker(&app, &carol, &bob, &marks, "marker one").await;

    block(&app, &alice, &bob).await.expect(201);

    // No event: between the two markers bob hears only the second.
    let events_after = after_marker(&app, &carol, &bob, &marks, "marker two").await;
    let new: Vec<&Value> = events_after
        .iter()
        .filter(|e| !events_before.iter().any(|b| b["id"] == e["id"]))
        .collect();
    assert_eq!(new.len(), 1, "bob heard more than the marker: {new:#?}");
    assert_eq!(new[0]["payload"]["message"], "marker two", "{new:#?}");
    // Alice, her lookup and their conversation look as before to him.
    assert_eq!(
        without_activity(app.get(&bob, &alice_path).await.expect(200)),
        seen_before
    );
    assert_eq!(
        without_activity(app.get(&bob, lookup).await.expect(200)),
        found_before
    );
    assert_eq!(
        without_activity(&listed_conversation(&app, &bob, &direct).await),
        conv_before
    );
    // He has blocked no one, and finds no block of his on her.
    let his = app.get(&bob, "/v1/contacts/blocked").await;
    assert_eq!(his.expect(200)["data"], json!([]));
    app.get(&bob, &block_path(&alice))
        .await
        .expect_error(404, "not_found", None);
    // Until he tries; even then the message does not name a block.
    assert_blocked(
        &try_send(&app, &bob, &direct, "hello?").await,
        Some("conversation_id"),
        false,
    );
}

async fn the_blocked_cannot_add_the_blocker_to_a_group(app: TestApp) {
    // Bob blocks alice: alice is the blocked, bob the blocker.
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let dave = app.user("dave").await;
    let erin = app.user("erin").await;
    let hers = new_group(&app, &alice, "Hers", &[&carol]).await;
    let theirs = new_group(&app, &carol, "Carol's", &[&alice, &dave]).await;
    app.put(
        &carol,
        &format!("/v1/groups/{theirs}"),
        &[("add_admin_ids[]", alice.id.as_str())],
    )
    .await
    .expect(200);
    block(&app, &bob, &alice).await.expect(201);
    let groups_of = |u: &User| {
        let app = &app;
        let u = u.clone();
        async move { page(app, &u, "/v1/groups?limit=100").await.0 }
    };
    let alice_groups = groups_of(&alice).await;

    // Creating a group with him: 403 naming contact_ids, nothing made.
    for r in [
        app.post(
            &alice,
            "/v1/groups",
            &[("name", "G"), ("contact_ids[]", bob.id.as_str())],
        )
        .await,
        app.post(
            &alice,
            "/v1/groups",
            &[
                ("name", "G"),
                ("contact_ids[]", carol.id.as_str()),
                ("contact_ids[]", bob.id.as_str()),
            ],
        )
        .await,
        app.json(
            Method::POST,
            &alice,
            "/v1/groups",
            &json!({"name": "G", "contact_ids": [bob.id]}),
        )
        .await,
    ] {
        r.expect_error(403, "contact_blocked", Some("contact_ids"));
    }
    assert_eq!(groups_of(&alice).await, alice_groups);
    assert!(groups_of(&bob).await.is_empty());
    // Adding him to her group, or to one she is an admin of: 403 naming
    // add_contact_ids, and nobody of the request is added.
    for gid in [&hers, &theirs] {
        let p = format!("/v1/groups/{gid}");
        let before = member_ids(app.get(&alice, &p).await.expect(200));
        for r in [
            app.put(&alice, &p, &[("add_contact_ids[]", bob.id.as_str())])
                .await,
            app.put(
                &alice,
                &p,
                &[
                    ("add_contact_ids[]", erin.id.as_str()),
                    ("add_contact_ids[]", bob.id.as_str()),
                ],
            )
            .await,
            app.json(
                Method::PUT,
                &alice,
                &p,
                &json!({"add_contact_ids": [bob.id]}),
            )
            .await,
        ] {
            r.expect_error(403, "contact_blocked", Some("add_contact_ids"));
        }
        assert_eq!(member_ids(app.get(&alice, &p).await.expect(200)), before);
    }
    assert!(groups_of(&bob).await.is_empty());
    assert!(groups_of(&erin).await.is_empty());
    // Others she may add, as owner and as admin.
    app.put(
        &alice,
        &format!("/v1/groups/{theirs}"),
        &[("add_contact_ids[]", erin.id.as_str())],
    )
    .await
    .expect(200);

    // The blocker may add the blocked, at creation and later.
    let r = app
        .post(
            &bob,
            "/v1/groups",
            &[("name", "Bob's"), ("contact_ids[]", alice.id.as_str())],
        )
        .await;
    r.expect(201);
    let later = new_group(&app, &bob, "Later", &[]).await;
    app.put(
        &bob,
        &format!("/v1/groups/{later}"),
        &[("add_contact_ids[]", alice.id.as_str())],
    )
    .await
    .expect(200);
    // A third contact may put them together.
    app.put(
        &carol,
        &format!("/v1/groups/{theirs}"),
        &[("add_contact_ids[]", bob.id.as_str())],
    )
    .await
    .expect(200);
    // Once unblocked, she may add him.
    unblock(&app, &bob, &alice).await.expect(204);
    app.put(
        &alice,
        &format!("/v1/groups/{hers}"),
        &[("add_contact_ids[]", bob.id.as_str())],
    )
    .await
    .expect(200);
}

async fn group_conversations_are_unaffected_by_blocks(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let gid = new_group(&app, &carol, "Carol's", &[&alice, &bob]).await;
    let conv = group_conversation(&app, &alice, &gid).await;
    let early = id_of(&app.send_message(&bob, &conv, "early").await);
    block(&app, &alice, &bob).await.expect(201);
    block(&app, &bob, &alice).await.expect(201);

    // Both keep writing there: sends, edits, reactions on each other's
    // messages, new conversations of the group.
    let of_alice = id_of(&app.send_message(&alice, &conv, "from alice").await);
    let of_bob = id_of(&app.send_message(&bob, &conv, "from bob").await);
    app.put(
        &bob,
        &format!("/v1/messages/{early}"),
        &[("message", "edited")],
    )
    .await
    .expect(200);
    for (who, on) in [(&alice, &of_bob), (&bob, &of_alice)] {
        app.put(
            who,
            &format!("/v1/messages/{on}"),
            &[("reactions[like][]", who.username.as_str())],
        )
        .await
        .expect(200);
        app.send_message(who, &conv, "and again").await;
    }
    let second = group_conversation(&app, &bob, &gid).await;
    app.send_message(&alice, &second, "in bob's conversation")
        .await;
    // Each sees the other's messages there.
    let seen = crate::support::conversation_messages(&app, &alice, &conv).await;
    assert!(seen.iter().any(|m| m["id"] == of_bob.as_str()));
    let seen = crate::support::conversation_messages(&app, &bob, &conv).await;
    assert!(seen.iter().any(|m| m["id"] == of_alice.as_str()));
    // The group itself: still both members.
    let g = app.get(&carol, &format!("/v1/groups/{gid}")).await;
    let members = member_ids(g.expect(200));
    assert!(members.contains(&alice.id) && members.contains(&bob.id));
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    a_block_is_made_once_found_and_undone,
    blocks_are_listed_newest_first_with_contact_cursors,
    a_block_stops_writing_in_the_direct_conversation_both_ways,
    what_stays_allowed_in_a_blocked_direct_conversation,
    a_block_takes_effect_on_the_next_request_and_unblock_restores,
    the_blocked_is_never_told,
    the_blocked_cannot_add_the_blocker_to_a_group,
    group_conversations_are_unaffected_by_blocks,
);
