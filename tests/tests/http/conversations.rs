//! docs/api.md "Conversations" (conversations) with the list rules of section 4 and
//! the model of section 0: create, open (read-on-open), list and page,
//! filters, per-member and shared state, delete with its messages, and
//! outsiders who see nothing and change nothing.

use confab_tests::http::{Resp, TestApp, User};
use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{
    self, assert_recent, conversation_messages, data_ids, group_conversation, id_of, ids,
    listed_conversation, new_group, now_secs, UNKNOWN_ID,
};

fn conv_path(id: &str) -> String {
    format!("/v1/conversations/{id}")
}

/// One page of `GET /v1/conversations?query`: (ids, has_more).
async fn page(app: &TestApp, user: &User, query: &str) -> (Vec<String>, bool) {
    support::page(app, user, &format!("/v1/conversations?{query}")).await
}

#[track_caller]
fn assert_fresh_direct(c: &Value, other: &User) {
    let obj = c.as_object().expect("conversation object");
    for key in [
        "id",
        "contact_id",
        "group_id",
        "pinned_message_id",
        "is_pinned",
        "is_muted",
        "last_active_at",
        "last_opened_at",
        "created_at",
        "archived_at",
    ] {
        assert!(obj.contains_key(key), "conversation lacks {key}: {c}");
    }
    let id = c["id"].as_str().expect("id string");
    assert_eq!(id.len(), 36);
    assert_eq!(c["contact_id"], other.id.as_str());
    assert!(c["group_id"].is_null());
    assert!(c["pinned_message_id"].is_null());
    assert_eq!(c["is_pinned"], false);
    assert_eq!(c["is_muted"], false);
    assert!(c["last_active_at"].is_null());
    assert!(c["last_opened_at"].is_null());
    assert!(c["archived_at"].is_null());
    assert_recent(&c["created_at"]);
}

// -------------------------------------------------------------------- create

async fn create_direct_conversation(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let r = app
        .post(&alice, "/v1/conversations", &[("contact_id", &bob.id)])
        .await;
    let c = r.expect(201).clone();
    assert_fresh_direct(&c, &bob);
    let id = id_of(&c);
    let loc = r.header("location").expect("Location");
    assert!(loc.ends_with(&conv_path(&id)), "Location {loc}");

    // Each member sees the other as contact_id; the rest is the same.
    let bobs = listed_conversation(&app, &bob, &id).await;
    assert_fresh_direct(&bobs, &alice);
    assert_eq!(bobs["created_at"], c["created_at"]);
    assert_eq!(listed_conversation(&app, &alice, &id).await, c);

    // Every POST creates a new conversation, also with the same contact,
    // and in JSON too.
    let r = app
        .json(
            Method::POST,
            &bob,
            "/v1/conversations",
            &json!({"contact_id": alice.id}),
        )
        .await;
    let second = r.expect(201).clone();
    assert_fresh_direct(&second, &alice);
    assert_ne!(id_of(&second), id);
    let (all, more) = page(&app, &alice, "").await;
    assert_eq!(all, vec![id_of(&second), id]);
    assert!(!more);
}

async fn create_validates_the_target(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let theirs = new_group(&app, &bob, "A group", &[&carol]).await;
    let mine = new_group(&app, &alice, "A group", &[&bob]).await;

    let r = app
        .post(
            &alice,
            "/v1/conversations",
            &[("contact_id", &bob.id), ("group_id", &mine)],
        )
        .await;
    r.expect(400);
    assert_eq!(r.body["code"], "parameter_invalid", "{}", r.raw);
    assert!(
        [json!(null), json!("contact_id"), json!("group_id")].contains(&r.body["param"]),
        "{}",
        r.raw
    );

    let r = app.post(&alice, "/v1/conversations", &[]).await;
    r.expect(400);
    assert!(
        [json!("parameter_missing"), json!("parameter_invalid")].contains(&r.body["code"]),
        "{}",
        r.raw
    );
    assert!(
        [json!(null), json!("contact_id"), json!("group_id")].contains(&r.body["param"]),
        "{}",
        r.raw
    );
    let r = app
        .send(
            Method::POST,
            "/v1/conversations",
            Some(&alice.token),
            None,
            &[],
        )
        .await;
    r.expect(400);

    let r = app
        .post(&alice, "/v1/conversations", &[("contact_id", &alice.id)])
        .await;
    r.expect_error(400, "parameter_invalid", Some("contact_id"));

    for unknown in [UNKNOWN_ID, "not-an-id"] {
        let r = app
            .post(&alice, "/v1/conversations", &[("contact_id", unknown)])
            .await;
        assert_eq!(r.status.as_u16(), 404, "contact_id {unknown}: {}", r.raw);
        r.expect_error(404, "not_found", Some("contact_id"));
    }
    for unknown in [UNKNOWN_ID, theirs.as_str(), "not-an-id"] {
        let r = app
            .post(&alice, "/v1/conversations", &[("group_id", unknown)])
            .await;
        assert_eq!(r.status.as_u16(), 404, "group_id {unknown}: {}", r.raw);
        r.expect_error(404, "not_found", Some("group_id"));
    }
    for (key, value) in [
        ("id", UNKNOWN_ID),
        ("is_muted", "true"),
        ("created_at", "1"),
    ] {
        let r = app
            .post(
                &alice,
                "/v1/conversations",
                &[("contact_id", &bob.id), (key, value)],
            )
            .await;
        r.expect_error(400, "parameter_unknown", Some(key));
    }
    // Nothing was created.
    let (all, _) = page(&app, &alice, "").await;
    assert!(all.is_empty(), "{all:?}");

    // The group form works.
    let r = app
        .post(&alice, "/v1/conversations", &[("group_id", &mine)])
        .await;
    let g = r.expect(201);
    assert_eq!(g["group_id"], mine.as_str());
    assert!(g["contact_id"].is_null());
    assert_eq!(g["is_pinned"], false);
    assert_eq!(g["is_muted"], false);
    assert!(g["last_opened_at"].is_null());
}

// ---------------------------------------------------------------------- open

async fn opening_reads_for_the_caller_only(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let conv = app.direct(&alice, &bob).await;
    let a1 = app.send_message(&alice, &conv, "from alice").await;
    let b1 = app.send_message(&bob, &conv, "from bob 1").await;
    let b2 = app.send_message(&bob, &conv, "from bob 2").await;
    let before = listed_conversation(&app, &alice, &conv).await;
    assert!(before["last_opened_at"].is_null());

    let r = app.get(&alice, &conv_path(&conv)).await;
    let opened = r.expect(200).clone();
    let alice_opened = assert_recent(&opened["last_opened_at"]);
    assert_eq!(opened["contact_id"], bob.id.as_str());
    assert_eq!(opened["last_active_at"], b2["created_at"]);
    assert_eq!(opened["created_at"], before["created_at"]);
    assert_eq!(listed_conversation(&app, &alice, &conv).await, opened);
    // Bob has not opened it.
    assert!(listed_conversation(&app, &bob, &conv).await["last_opened_at"].is_null());

    let msg = |m: &Value| format!("/v1/messages/{}", id_of(m));
    let got_b1 = app.get(&bob, &msg(&b1)).await.expect(200).clone();
    let b1_read = assert_recent(&got_b1["read_at"]);
    assert_recent(&app.get(&bob, &msg(&b2)).await.expect(200)["read_at"]);
    assert!(app.get(&bob, &msg(&a1)).await.expect(200)["read_at"].is_null());
    // Reading changes nothing else.
    for key in [
        "message",
        "contact",
        "created_at",
        "updated_at",
        "reactions",
    ] {
        assert_eq!(got_b1[key], b1[key], "field {key}");
    }

    // A new message is unread until the next open.
    let b3 = app.send_message(&bob, &conv, "from bob 3").await;
    assert!(app.get(&alice, &msg(&b3)).await.expect(200)["read_at"].is_null());

    // Now bob opens: alice's message becomes read, bob's stay as they were.
    let r = app.get(&bob, &conv_path(&conv)).await;
    let bob_view = r.expect(200).clone();
    assert_recent(&bob_view["last_opened_at"]);
    assert_eq!(bob_view["contact_id"], alice.id.as_str());
    assert_recent(&app.get(&alice, &msg(&a1)).await.expect(200)["read_at"]);
    assert_eq!(
        app.get(&alice, &msg(&b1)).await.expect(200)["read_at"],
        b1_read
    );
    assert!(app.get(&alice, &msg(&b3)).await.expect(200)["read_at"].is_null());
    assert_eq!(
        listed_conversation(&app, &alice, &conv).await["last_opened_at"],
        alice_opened
    );

    // Alice opens again: b3 is read.
    app.get(&alice, &conv_path(&conv)).await.expect(200);
    assert_recent(&app.get(&bob, &msg(&b3)).await.expect(200)["read_at"]);
    // The list of messages shows the same state.
    let all = conversation_messages(&app, &alice, &conv).await;
    assert!(all.iter().all(|m| m["read_at"].is_i64()), "{all:?}");
}

// ---------------------------------------------------------------------- list

async fn list_orders_by_latest_activity(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let dave = app.user("dave").await;
    let c1 = app.direct(&alice, &bob).await;
    let c2 = app.direct(&alice, &carol).await;
    let c3 = app.direct(&dave, &alice).await;

    let (got, more) = page(&app, &alice, "").await;
    assert_eq!(got, vec![c3.clone(), c2.clone(), c1.clone()]);
    assert!(!more);

    let m = app.send_message(&bob, &c1, "bump").await;
    let (got, _) = page(&app, &alice, "").await;
    assert_eq!(got, vec![c1.clone(), c3.clone(), c2.clone()]);
    assert_eq!(
        listed_conversation(&app, &alice, &c1).await["last_active_at"],
        m["created_at"]
    );
    assert!(listed_conversation(&app, &alice, &c2).await["last_active_at"].is_null());

    app.send_message(&alice, &c2, "bump too").await;
    let (got, _) = page(&app, &alice, "").await;
    assert_eq!(got, vec![c2.clone(), c1.clone(), c3.clone()]);

    // Updating or opening is not activity.
    app.put(&alice, &conv_path(&c3), &[("is_pinned", "true")])
        .await
        .expect(200);
    app.get(&alice, &conv_path(&c3)).await.expect(200);
    let (got, _) = page(&app, &alice, "").await;
    assert_eq!(got, vec![c2.clone(), c1.clone(), c3.clone()]);

    // Each sees only their own.
    assert_eq!(page(&app, &bob, "").await.0, vec![c1.clone()]);
    assert_eq!(page(&app, &carol, "").await.0, vec![c2.clone()]);
    assert_eq!(page(&app, &dave, "").await.0, vec![c3]);
}

async fn list_pages_both_ways(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let mut created = Vec::new();
    for _ in 0..23 {
        created.push(app.direct(&alice, &bob).await);
    }
    let newest_first: Vec<String> = created.iter().rev().cloned().collect();

    let (got, more) = page(&app, &alice, "").await;
    assert_eq!(got, newest_first[..10].to_vec());
    assert!(more);

    let mut seen = Vec::new();
    let mut pages = Vec::new();
    let (mut items, mut more) = page(&app, &bob, "limit=10").await;
    loop {
        pages.push((items.len(), more));
        seen.extend(items.iter().cloned());
        if !more {
            break;
        }
        let last = items.last().expect("non-empty page").clone();
        (items, more) = page(&app, &bob, &format!("limit=10&starting_after={last}")).await;
    }
    assert_eq!(pages, vec![(10, true), (10, true), (3, false)]);
    assert_eq!(seen, newest_first);

    let oldest = newest_first.last().expect("items").clone();
    let mut back: Vec<String> = Vec::new();
    let mut pages = Vec::new();
    let (mut items, mut more) =
        page(&app, &alice, &format!("limit=10&ending_before={oldest}")).await;
    loop {
        pages.push((items.len(), more));
        let mut chunk = items.clone();
        chunk.extend(back);
        back = chunk;
        if !more {
            break;
        }
        let first = items.first().expect("non-empty page").clone();
        (items, more) = page(&app, &alice, &format!("limit=10&ending_before={first}")).await;
    }
    assert_eq!(pages, vec![(10, true), (10, true), (2, false)]);
    assert_eq!(back, newest_first[..22].to_vec());

    let (items, more) = page(
        &app,
        &alice,
        &format!("limit=4&ending_before={}", newest_first[6]),
    )
    .await;
    assert_eq!(items, newest_first[2..6].to_vec());
    assert!(more);
    let (items, more) = page(&app, &alice, &format!("ending_before={}", newest_first[0])).await;
    assert!(items.is_empty());
    assert!(!more);

    // A message moves its conversation to the front of every page walk.
    app.send_message(&bob, &oldest, "I am back").await;
    let (items, _) = page(&app, &alice, "limit=2").await;
    assert_eq!(items, vec![oldest.clone(), newest_first[0].clone()]);
    let (items, more) = page(
        &app,
        &alice,
        &format!("limit=3&starting_after={}", newest_first[20]),
    )
    .await;
    assert_eq!(items, vec![newest_first[21].clone()]);
    assert!(!more);

    for bad in ["0", "101", "ten", "-5", ""] {
        let r = app
            .get(&alice, &format!("/v1/conversations?limit={bad}"))
            .await;
        r.expect_error(400, "parameter_invalid", Some("limit"));
    }
}

async fn list_cursor_errors(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let mine = app.direct(&alice, &bob).await;
    let muted = app.direct(&alice, &bob).await;
    let foreign = app.direct(&bob, &carol).await;
    app.put(&alice, &conv_path(&muted), &[("is_muted", "true")])
        .await
        .expect(200);

    for cursor in ["starting_after", "ending_before"] {
        for bad in [foreign.as_str(), UNKNOWN_ID, "junk"] {
            let r = app
                .get(&alice, &format!("/v1/conversations?{cursor}={bad}"))
                .await;
            assert_eq!(r.status.as_u16(), 400, "{cursor}={bad}: {}", r.raw);
            r.expect_error(400, "parameter_invalid", Some(cursor));
        }
        // Filtered out of the list being paged.
        let r = app
            .get(
                &alice,
                &format!("/v1/conversations?muted=true&{cursor}={mine}"),
            )
            .await;
        r.expect_error(400, "parameter_invalid", Some(cursor));
        let r = app
            .get(
                &alice,
                &format!("/v1/conversations?muted=true&{cursor}={muted}"),
            )
            .await;
        let body = r.expect(200);
        assert_eq!(body["data"], json!([]));
        assert_eq!(body["has_more"], false);
    }
    let r = app
        .get(
            &alice,
            &format!("/v1/conversations?starting_after={mine}&ending_before={muted}"),
        )
        .await;
    r.expect(400);
    assert_eq!(r.body["code"], "parameter_invalid", "{}", r.raw);
}

async fn filters_are_per_member(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let c1 = app.direct(&alice, &bob).await;
    let c2 = app.direct(&alice, &bob).await;
    let c3 = app.direct(&bob, &alice).await;
    let c4 = app.direct(&alice, &bob).await;
    let now = now_secs().to_string();
    app.put(&alice, &conv_path(&c1), &[("is_muted", "true")])
        .await
        .expect(200);
    app.put(&alice, &conv_path(&c2), &[("archived_at", &now)])
        .await
        .expect(200);
    app.put(&alice, &conv_path(&c3), &[("is_pinned", "true")])
        .await
        .expect(200);
    app.put(&bob, &conv_path(&c4), &[("is_muted", "1")])
        .await
        .expect(200);
    app.put(&bob, &conv_path(&c1), &[("is_pinned", "1")])
        .await
        .expect(200);

    let cases: Vec<(&User, &str, Vec<String>)> = vec![
        (&alice, "", ids(&[&c4, &c3, &c2, &c1])),
        (&alice, "muted=true", ids(&[&c1])),
        (&alice, "muted=1", ids(&[&c1])),
        (&alice, "muted=false", ids(&[&c4, &c3, &c2])),
        (&alice, "archived=true", ids(&[&c2])),
        (&alice, "archived=false", ids(&[&c4, &c3, &c1])),
        (&alice, "pinned=true", ids(&[&c3])),
        (&alice, "pinned=0", ids(&[&c4, &c2, &c1])),
        (&alice, "muted=true&pinned=true", ids(&[])),
        (&alice, "muted=false&archived=false", ids(&[&c4, &c3])),
        (&bob, "", ids(&[&c4, &c3, &c2, &c1])),
        (&bob, "muted=true", ids(&[&c4])),
        (&bob, "muted=false", ids(&[&c3, &c2, &c1])),
        (&bob, "archived=true", ids(&[])),
        (&bob, "archived=false", ids(&[&c4, &c3, &c2, &c1])),
        (&bob, "pinned=true", ids(&[&c1])),
        (&bob, "pinned=false", ids(&[&c4, &c3, &c2])),
    ];
    for (user, query, want) in cases {
        let (got, more) = page(&app, user, query).await;
        assert_eq!(got, want, "{} ?{query}", user.username);
        assert!(!more);
    }
    // Paging inside a filter.
    let (got, more) = page(&app, &alice, "muted=false&limit=2").await;
    assert_eq!(got, ids(&[&c4, &c3]));
    assert!(more);
    let (got, more) = page(
        &app,
        &alice,
        &format!("muted=false&limit=2&starting_after={c3}"),
    )
    .await;
    assert_eq!(got, ids(&[&c2]));
    assert!(!more);

    // The group filter.
    let group = new_group(&app, &alice, "A group", &[&bob]).await;
    let gc = group_conversation(&app, &bob, &group).await;
    let (got, _) = page(&app, &alice, &format!("group_id={group}")).await;
    assert_eq!(got, vec![gc.clone()]);
    let (got, _) = page(&app, &alice, "").await;
    assert_eq!(got.len(), 5);
    assert_eq!(got[0], gc);
}

// -------------------------------------------------------------------- update

async fn update_changes_only_what_is_sent(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let conv = app.direct(&alice, &bob).await;
    let path = conv_path(&conv);
    let start = listed_conversation(&app, &alice, &conv).await;
    let bob_start = listed_conversation(&app, &bob, &conv).await;

    let r = app.put(&alice, &path, &[("is_pinned", "true")]).await;
    let pinned = r.expect(200).clone();
    let mut want = start.clone();
    want["is_pinned"] = json!(true);
    assert_eq!(pinned, want);

    let r = app.put(&alice, &path, &[("is_muted", "true")]).await;
    want["is_muted"] = json!(true);
    assert_eq!(r.expect(200), &want);

    let now = now_secs();
    let r = app
        .put(&alice, &path, &[("archived_at", &now.to_string())])
        .await;
    want["archived_at"] = json!(now);
    assert_eq!(r.expect(200), &want);

    let r = app.put(&alice, &path, &[("is_pinned", "false")]).await;
    want["is_pinned"] = json!(false);
    assert_eq!(r.expect(200), &want);
    assert_eq!(listed_conversation(&app, &alice, &conv).await, want);

    // Per-member: bob's view has not moved.
    assert_eq!(listed_conversation(&app, &bob, &conv).await, bob_start);

    // Bob's own changes leave alice's alone.
    let r = app
        .put(&bob, &path, &[("is_pinned", "true"), ("is_muted", "false")])
        .await;
    let b = r.expect(200);
    assert_eq!(b["is_pinned"], true);
    assert_eq!(b["is_muted"], false);
    assert!(b["archived_at"].is_null());
    assert_eq!(listed_conversation(&app, &alice, &conv).await, want);

    // A refused PUT changes nothing, not even its valid attributes.
    let r = app
        .put(
            &alice,
            &path,
            &[("is_pinned", "true"), ("archived_at", "soon")],
        )
        .await;
    r.expect_error(400, "parameter_invalid", Some("archived_at"));
    let r = app
        .put(
            &alice,
            &path,
            &[("is_muted", "false"), ("pinned_message_id", UNKNOWN_ID)],
        )
        .await;
    r.expect_error(400, "parameter_invalid", Some("pinned_message_id"));
    assert_eq!(listed_conversation(&app, &alice, &conv).await, want);

    for key in [
        "id",
        "contact_id",
        "group_id",
        "last_active_at",
        "last_opened_at",
        "created_at",
    ] {
        let r = app.put(&alice, &path, &[(key, "1")]).await;
        r.expect_error(400, "parameter_unknown", Some(key));
    }
    assert_eq!(listed_conversation(&app, &alice, &conv).await, want);
}

async fn archived_at_rules(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let conv = app.direct(&alice, &bob).await;
    let path = conv_path(&conv);
    let created = listed_conversation(&app, &alice, &conv).await["created_at"]
        .as_i64()
        .expect("created_at");
    let now = now_secs();

    for bad in [
        (created - 1).to_string(),
        "0".to_owned(),
        "-5".to_owned(),
        (now + 120).to_string(),
        (now * 1000).to_string(),
        "abc".to_owned(),
        "1.5".to_owned(),
        format!("{now}.0"),
        "true".to_owned(),
    ] {
        let r = app.put(&alice, &path, &[("archived_at", &bad)]).await;
        assert_eq!(r.status.as_u16(), 400, "archived_at={bad}: {}", r.raw);
        r.expect_error(400, "parameter_invalid", Some("archived_at"));
    }
    let r = app
        .json(
            Method::PUT,
            &alice,
            &path,
            &json!({"archived_at": now * 1000}),
        )
        .await;
    r.expect_error(400, "parameter_invalid", Some("archived_at"));
    let r = app
        .json(Method::PUT, &alice, &path, &json!({"archived_at": "later"}))
        .await;
    r.expect_error(400, "parameter_invalid", Some("archived_at"));
    assert!(listed_conversation(&app, &alice, &conv).await["archived_at"].is_null());

    // The creation second itself, now, and a little ahead are fine.
    let r = app
        .put(&alice, &path, &[("archived_at", &created.to_string())])
        .await;
    assert_eq!(r.expect(200)["archived_at"], created);
    let r = app
        .put(&alice, &path, &[("archived_at", &(now + 30).to_string())])
        .await;
    assert_eq!(r.expect(200)["archived_at"], now + 30);
    let r = app
        .json(Method::PUT, &alice, &path, &json!({"archived_at": now}))
        .await;
    assert_eq!(r.expect(200)["archived_at"], now);
    assert!(listed_conversation(&app, &bob, &conv).await["archived_at"].is_null());
    assert_eq!(
        page(&app, &alice, "archived=true").await.0,
        vec![conv.clone()]
    );

    // Empty string unarchives.
    let r = app.put(&alice, &path, &[("archived_at", "")]).await;
    assert!(r.expect(200)["archived_at"].is_null(), "{}", r.raw);
    assert!(listed_conversation(&app, &alice, &conv).await["archived_at"].is_null());
    assert!(page(&app, &alice, "archived=true").await.0.is_empty());
}

async fn pinned_message_is_shared(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let conv = app.direct(&alice, &bob).await;
    let other = app.direct(&alice, &bob).await;
    let foreign = app.direct(&carol, &bob).await;
    let path = conv_path(&conv);
    let m = app.send_message(&bob, &conv, "pin this").await;
    let elsewhere = app.send_message(&alice, &other, "not here").await;
    let hidden = app.send_message(&carol, &foreign, "secret").await;

    let r = app
        .put(&alice, &path, &[("pinned_message_id", &id_of(&m))])
        .await;
    let c = r.expect(200);
    assert_eq!(c["pinned_message_id"], id_of(&m).as_str());
    assert_eq!(
        c["is_pinned"], false,
        "pinning a message is not pinning the conversation"
    );
    assert_eq!(
        listed_conversation(&app, &bob, &conv).await["pinned_message_id"],
        id_of(&m).as_str()
    );
    assert!(listed_conversation(&app, &alice, &other).await["pinned_message_id"].is_null());

    for bad in [
        id_of(&elsewhere),
        id_of(&hidden),
        UNKNOWN_ID.to_owned(),
        "xyz".to_owned(),
    ] {
        let r = app.put(&bob, &path, &[("pinned_message_id", &bad)]).await;
        assert_eq!(r.status.as_u16(), 400, "pinned_message_id={bad}: {}", r.raw);
        r.expect_error(400, "parameter_invalid", Some("pinned_message_id"));
    }
    assert_eq!(
        listed_conversation(&app, &alice, &conv).await["pinned_message_id"],
        id_of(&m).as_str()
    );

    // Other attributes leave it alone.
    app.put(&bob, &path, &[("is_muted", "true")])
        .await
        .expect(200);
    assert_eq!(
        listed_conversation(&app, &alice, &conv).await["pinned_message_id"],
        id_of(&m).as_str()
    );

    // Bob unpins for both.
    let r = app.put(&bob, &path, &[("pinned_message_id", "")]).await;
    assert!(r.expect(200)["pinned_message_id"].is_null(), "{}", r.raw);
    assert!(listed_conversation(&app, &alice, &conv).await["pinned_message_id"].is_null());

    // JSON works the same.
    let r = app
        .json(
            Method::PUT,
            &bob,
            &path,
            &json!({"pinned_message_id": id_of(&m)}),
        )
        .await;
    assert_eq!(r.expect(200)["pinned_message_id"], id_of(&m).as_str());
    assert_eq!(
        listed_conversation(&app, &alice, &conv).await["pinned_message_id"],
        id_of(&m).as_str()
    );
}

// -------------------------------------------------------------------- delete

async fn delete_by_either_member_takes_the_messages(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let conv = app.direct(&alice, &bob).await;
    let kept = app.direct(&alice, &bob).await;
    let m1 = app.send_message(&alice, &conv, "one").await;
    let m2 = app.send_message(&bob, &conv, "two").await;
    app.put(
        &alice,
        &format!("/v1/messages/{}", id_of(&m2)),
        &[("reactions[like][]", "alice")],
    )
    .await
    .expect(200);
    let k = app.send_message(&bob, &kept, "kept").await;

    // Bob did not create it; he may delete it all the same.
    let r = app.delete(&bob, &conv_path(&conv)).await;
    r.expect(204);
    assert!(r.raw.is_empty());

    for u in [&alice, &bob] {
        app.get(u, &conv_path(&conv))
            .await
            .expect_error(404, "not_found", None);
        for m in [&m1, &m2] {
            app.get(u, &format!("/v1/messages/{}", id_of(m)))
                .await
                .expect_error(404, "not_found", None);
        }
        let r = app
            .get(u, &format!("/v1/messages?conversation_id={conv}"))
            .await;
        r.expect_error(404, "not_found", Some("conversation_id"));
        let r = app.get(u, "/v1/messages").await;
        assert_eq!(data_ids(r.expect(200)), vec![id_of(&k)]);
        assert_eq!(page(&app, u, "").await.0, vec![kept.clone()]);
    }
    let r = app
        .post(
            &alice,
            "/v1/messages",
            &[("conversation_id", &conv), ("message", "hello?")],
        )
        .await;
    r.expect_error(404, "not_found", Some("conversation_id"));
    app.delete(&alice, &conv_path(&conv))
        .await
        .expect_error(404, "not_found", None);
    app.put(&alice, &conv_path(&conv), &[("is_muted", "true")])
        .await
        .expect_error(404, "not_found", None);

    // The creator may delete too.
    app.delete(&alice, &conv_path(&kept)).await.expect(204);
    assert!(page(&app, &bob, "").await.0.is_empty());
    let r = app.get(&bob, "/v1/messages").await;
    assert_eq!(r.expect(200)["data"], json!([]));
}

// ------------------------------------------------------------------ outsider

#[track_caller]
fn assert_hidden(r: &Resp, param: Option<&str>, what: &str) {
    assert_eq!(r.status.as_u16(), 404, "{what}: {}", r.raw);
    r.expect_error(404, "not_found", param);
}

/// Both members' views of the conversation and its messages, read without
/// opening it.
async fn snapshot(
    app: &TestApp,
    alice: &User,
    bob: &User,
    conv: &str,
) -> (Value, Value, Vec<Value>, Vec<Value>) {
    (
        listed_conversation(app, alice, conv).await,
        listed_conversation(app, bob, conv).await,
        conversation_messages(app, alice, conv).await,
        conversation_messages(app, bob, conv).await,
    )
}

async fn outsider_gets_404_and_changes_nothing(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let conv = app.direct(&alice, &bob).await;
    let r = app
        .post(
            &alice,
            "/v1/messages",
            &[
                ("conversation_id", &conv),
                ("message", "private"),
                ("attachments[0][file_url]", "https://files.example/p"),
                ("attachments[0][filename]", "p"),
            ],
        )
        .await;
    let m = r.expect(201).clone();
    let mid = id_of(&m);
    let mpath = format!("/v1/messages/{mid}");
    app.put(&bob, &mpath, &[("reactions[like][]", "bob")])
        .await
        .expect(200);
    app.send_message(&bob, &conv, "also private").await;
    app.put(
        &alice,
        &conv_path(&conv),
        &[("pinned_message_id", &mid), ("is_muted", "true")],
    )
    .await
    .expect(200);

    let before = snapshot(&app, &alice, &bob, &conv).await;

    // What an unknown id answers, for comparison: the same.
    let unknown = app.get(&carol, &conv_path(UNKNOWN_ID)).await;
    assert_hidden(&unknown, None, "unknown conversation");

    let cpath = conv_path(&conv);
    let hidden = app.get(&carol, &cpath).await;
    assert_hidden(&hidden, None, "GET conversation");
    assert_eq!(
        hidden.body, unknown.body,
        "404 bodies differ: an existence oracle"
    );
    assert_hidden(
        &app.put(&carol, &cpath, &[("is_muted", "false")]).await,
        None,
        "PUT conversation is_muted",
    );
    assert_hidden(
        &app.put(&carol, &cpath, &[("pinned_message_id", "")]).await,
        None,
        "PUT conversation pinned_message_id",
    );
    assert_hidden(
        &app.put(&carol, &cpath, &[("archived_at", &now_secs().to_string())])
            .await,
        None,
        "PUT conversation archived_at",
    );
    assert_hidden(
        &app.send(Method::PUT, &cpath, Some(&carol.token), None, &[])
            .await,
        None,
        "empty PUT conversation",
    );
    assert_hidden(
        &app.delete(&carol, &cpath).await,
        None,
        "DELETE conversation",
    );
    assert_hidden(&app.get(&carol, &mpath).await, None, "GET message");
    assert_hidden(
        &app.put(&carol, &mpath, &[("message", "hacked")]).await,
        None,
        "PUT message text",
    );
    assert_hidden(
        &app.put(&carol, &mpath, &[("reactions[like][]", "carol")])
            .await,
        None,
        "PUT message reaction",
    );
    assert_hidden(
        &app.put(
            &carol,
            &mpath,
            &[
                ("attachments[0][file_url]", "https://evil.example/x"),
                ("attachments[0][filename]", "x"),
            ],
        )
        .await,
        None,
        "PUT message attachments",
    );
    assert_hidden(
        &app.send(Method::PUT, &mpath, Some(&carol.token), None, &[])
            .await,
        None,
        "empty PUT message",
    );
    assert_hidden(&app.delete(&carol, &mpath).await, None, "DELETE message");
    assert_hidden(
        &app.delete(&carol, &format!("{mpath}/reactions/like")).await,
        None,
        "DELETE reaction",
    );
    assert_hidden(
        &app.post(
            &carol,
            "/v1/messages",
            &[("conversation_id", &conv), ("message", "let me in")],
        )
        .await,
        Some("conversation_id"),
        "POST message",
    );
    assert_hidden(
        &app.get(&carol, &format!("/v1/messages?conversation_id={conv}"))
            .await,
        Some("conversation_id"),
        "GET messages of the conversation",
    );
    let r = app
        .get(&carol, &format!("/v1/messages?starting_after={mid}"))
        .await;
    r.expect_error(400, "parameter_invalid", Some("starting_after"));
    let r = app
        .get(&carol, &format!("/v1/conversations?starting_after={conv}"))
        .await;
    r.expect_error(400, "parameter_invalid", Some("starting_after"));
    let r = app.get(&carol, "/v1/messages").await;
    assert_eq!(r.expect(200)["data"], json!([]));
    let r = app.get(&carol, "/v1/conversations").await;
    assert_eq!(r.expect(200)["data"], json!([]));

    let after = snapshot(&app, &alice, &bob, &conv).await;
    assert_eq!(after, before, "an outsider changed something");
    let (alice_view, _, msgs, _) = after;
    assert_eq!(alice_view["pinned_message_id"], mid.as_str());
    assert_eq!(alice_view["is_muted"], true);
    assert!(alice_view["last_opened_at"].is_null(), "nobody opened it");
    assert_eq!(msgs.len(), 2);
    assert!(msgs.iter().all(|m| m["read_at"].is_null()));
    let first = app.get(&bob, &mpath).await.expect(200).clone();
    assert_eq!(first["message"], "private");
    assert_eq!(first["reactions"], json!([{"like": ["bob"]}]));
    assert_eq!(first["attachments"].as_array().expect("list").len(), 1);
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    create_direct_conversation,
    create_validates_the_target,
    opening_reads_for_the_caller_only,
    list_orders_by_latest_activity,
    list_pages_both_ways,
    list_cursor_errors,
    filters_are_per_member,
    update_changes_only_what_is_sent,
    archived_at_rules,
    pinned_message_is_shared,
    delete_by_either_member_takes_the_messages,
    outsider_gets_404_and_changes_nothing,
);
