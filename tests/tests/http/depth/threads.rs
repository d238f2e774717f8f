//! Threads (`parent_id`): a top-level message counts its replies and
//! knows its latest, also when replies are deleted; thread replies stay
//! out of the conversation's list unless asked for; a thread is listed
//! newest first and paged with cursors of its own; a bad `parent_id` is
//! refused without writing anything; a thread reply is a message like any
//! other (event, unread count).

use std::time::Duration;

use confab_tests::http::TestApp;
use serde_json::json;

use super::{
    caught_up, counts, created_of, message, open, send, snapshot, thread_reply, trio, try_send,
    try_send_json, without_activity,
};
use crate::support::{conversation_created, id_of, page, UNKNOWN_ID};

async fn a_thread_counts_its_replies_and_knows_its_latest(app: TestApp) {
    let (alice, bob, carol, conv) = trio(&app).await;
    let parent = send(&app, &alice, &conv, "a thread starts here", &[]).await;
    let p = id_of(&parent);
    let other = id_of(&send(&app, &alice, &conv, "no thread here", &[]).await);

    let first = thread_reply(&app, &bob, &conv, &p, "first reply").await;
    assert_eq!(first["parent_id"], p.as_str(), "{first}");
    assert_eq!(first["reply_count"], 0);
    assert!(first["last_reply_at"].is_null());
    assert!(first["reply_to"].is_null());
    let first_at = first["created_at"].as_i64().expect("created_at");
    for who in [&alice, &bob, &carol] {
        let got = message(&app, who, &p).await;
        assert_eq!(got["reply_count"], 1, "{got}");
        assert_eq!(got["last_reply_at"], first_at, "{got}");
        assert!(got["parent_id"].is_null());
    }

    // The next reply a second later, in JSON: its time is the latest.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let second = try_send_json(
        &app,
        &carol,
        &json!({"conversation_id": conv, "message": "second reply", "parent_id": p}),
    )
    .await;
    let second = second.expect(201).clone();
    assert_eq!(second["parent_id"], p.as_str());
    let second_at = second["created_at"].as_i64().expect("created_at");
    assert!(second_at > first_at, "{first_at} then {second_at}");
    let got = message(&app, &bob, &p).await;
    assert_eq!(got["reply_count"], 2, "{got}");
    assert_eq!(got["last_reply_at"], second_at, "{got}");
    // The list shows the same counts.
    let rows = crate::support::conversation_messages(&app, &bob, &conv).await;
    let row = rows.iter().find(|m| m["id"] == p.as_str()).expect("listed");
    assert_eq!(row["reply_count"], 2, "{row}");
    assert_eq!(row["last_reply_at"], second_at, "{row}");
    // Another message's thread is untouched.
    let got = message(&app, &alice, &other).await;
    assert_eq!(got["reply_count"], 0);
    assert!(got["last_reply_at"].is_null());

    // Deleting the latest reply: one fewer, the latest is the one before.
    app.delete(&carol, &format!("/v1/messages/{}", id_of(&second)))
        .await
        .expect(204);
    let got = message(&app, &carol, &p).await;
    assert_eq!(got["reply_count"], 1, "{got}");
    assert_eq!(got["last_reply_at"], first_at, "{got}");
    // And the last one: none, and no latest.
    app.delete(&bob, &format!("/v1/messages/{}", id_of(&first)))
        .await
        .expect(204);
    let got = message(&app, &alice, &p).await;
    assert_eq!(got["reply_count"], 0, "{got}");
    assert!(got["last_reply_at"].is_null(), "{got}");
    let thread = app
        .get(&alice, &format!("/v1/messages?parent_id={p}"))
        .await;
    assert_eq!(thread.expect(200)["data"], json!([]));
}

async fn thread_replies_stay_out_of_the_conversation_list(app: TestApp) {
    let (alice, bob, _carol, conv) = trio(&app).await;
    let m1 = id_of(&send(&app, &alice, &conv, "one", &[]).await);
    let p = id_of(&send(&app, &alice, &conv, "two, with a thread", &[]).await);
    let r1 = id_of(&thread_reply(&app, &bob, &conv, &p, "reply a").await);
    let r2 = id_of(&thread_reply(&app, &alice, &conv, &p, "reply b").await);
    let m2 = id_of(&send(&app, &bob, &conv, "three", &[]).await);
    let list = |query: &str| format!("/v1/messages?conversation_id={conv}{query}");

    let top = vec![m2.clone(), p.clone(), m1.clone()];
    let all = vec![m2.clone(), r2.clone(), r1.clone(), p.clone(), m1.clone()];
    assert_eq!(page(&app, &bob, &list("")).await, (top.clone(), false));
    assert_eq!(
        page(&app, &bob, &list("&include_replies=false")).await,
        (top.clone(), false)
    );
    assert_eq!(
        page(&app, &bob, &list("&include_replies=true")).await,
        (all.clone(), false)
    );
    // Paged one at a time, the replies are skipped both ways.
    assert_eq!(
        page(&app, &bob, &list("&limit=1")).await,
        (vec![m2.clone()], true)
    );
    assert_eq!(
        page(&app, &bob, &list(&format!("&limit=1&starting_after={m2}"))).await,
        (vec![p.clone()], true)
    );
    assert_eq!(
        page(&app, &bob, &list(&format!("&limit=1&starting_after={p}"))).await,
        (vec![m1.clone()], false)
    );
    assert_eq!(
        page(&app, &bob, &list(&format!("&limit=1&ending_before={m1}"))).await,
        (vec![p.clone()], true)
    );
    // With them, a reply is a cursor like any other.
    assert_eq!(
        page(
            &app,
            &bob,
            &list(&format!(
                "&include_replies=true&limit=2&starting_after={r2}"
            ))
        )
        .await,
        (vec![r1.clone(), p.clone()], true)
    );
    assert_eq!(
        page(
            &app,
            &bob,
            &list(&format!("&include_replies=true&limit=2&ending_before={p}"))
        )
        .await,
        (vec![r2.clone(), r1.clone()], true)
    );
    // Without them, a reply is not in the list: 400 naming the cursor.
    for (cursor, param) in [
        (format!("&starting_after={r1}"), "starting_after"),
        (format!("&ending_before={r2}"), "ending_before"),
        (
            format!("&include_replies=false&starting_after={r2}"),
            "starting_after",
        ),
    ] {
        app.get(&bob, &list(&cursor))
            .await
            .expect_error(400, "parameter_invalid", Some(param));
    }
    app.get(&bob, &list("&include_replies=maybe"))
        .await
        .expect_error(400, "parameter_invalid", Some("include_replies"));
}

async fn a_thread_is_listed_newest_first_and_paged(app: TestApp) {
    let (alice, bob, carol, conv) = trio(&app).await;
    let dave = app.user("dave").await;
    let dave_conv = app.direct(&dave, &alice).await;
    let p = id_of(&send(&app, &alice, &conv, "the thread", &[]).await);
    let other = id_of(&send(&app, &bob, &conv, "another thread", &[]).await);
    let elsewhere = id_of(&thread_reply(&app, &carol, &conv, &other, "not in p").await);
    let mut r = Vec::new();
    for i in 0..5 {
        let who = [&alice, &bob, &carol][i % 3];
        r.push(id_of(
            &thread_reply(&app, who, &conv, &p, &format!("reply {i}")).await,
        ));
    }
    let plain = id_of(&send(&app, &carol, &conv, "no replies", &[]).await);
    let thread = |query: &str| format!("/v1/messages?parent_id={p}{query}");

    // Every member reads it, newest first; each row is a reply of p.
    for who in [&alice, &bob, &carol] {
        let resp = app.get(who, &thread("&limit=100")).await;
        let body = resp.expect(200);
        assert_eq!(body["has_more"], false);
        let rows = body["data"].as_array().expect("data");
        let ids: Vec<String> = rows.iter().map(id_of).collect();
        assert_eq!(ids, [&r[4], &r[3], &r[2], &r[1], &r[0]].map(String::clone));
        for row in rows {
            assert_eq!(row["parent_id"], p.as_str(), "{row}");
        }
    }
    // The default limit (10) holds all five.
    assert_eq!(page(&app, &bob, &thread("")).await.0.len(), 5);
    // Forwards and backwards.
    assert_eq!(
        page(&app, &bob, &thread("&limit=2")).await,
        (vec![r[4].clone(), r[3].clone()], true)
    );
    assert_eq!(
        page(
            &app,
            &bob,
            &thread(&format!("&limit=2&starting_after={}", r[3]))
        )
        .await,
        (vec![r[2].clone(), r[1].clone()], true)
    );
    assert_eq!(
        page(
            &app,
            &bob,
            &thread(&format!("&limit=2&starting_after={}", r[1]))
        )
        .await,
        (vec![r[0].clone()], false)
    );
    assert_eq!(
        page(
            &app,
            &bob,
            &thread(&format!("&limit=2&ending_before={}", r[0]))
        )
        .await,
        (vec![r[2].clone(), r[1].clone()], true)
    );
    assert_eq!(
        page(
            &app,
            &bob,
            &thread(&format!("&limit=2&ending_before={}", r[3]))
        )
        .await,
        (vec![r[4].clone()], false)
    );
    // A message without replies: an empty thread.
    assert_eq!(
        page(
            &app,
            &bob,
            &format!("/v1/messages?parent_id={plain}&limit=100")
        )
        .await,
        (vec![], false)
    );
    // A cursor that is not a reply in this thread: 400 naming it.
    for bad in [&p, &elsewhere, &other, &plain, &UNKNOWN_ID.to_owned()] {
        app.get(&bob, &thread(&format!("&starting_after={bad}")))
            .await
            .expect_error(400, "parameter_invalid", Some("starting_after"));
        app.get(&bob, &thread(&format!("&ending_before={bad}")))
            .await
            .expect_error(400, "parameter_invalid", Some("ending_before"));
    }
    // A thread that is not there, or not the caller's: 404 on parent_id.
    app.get(&bob, &format!("/v1/messages?parent_id={UNKNOWN_ID}"))
        .await
        .expect_error(404, "not_found", Some("parent_id"));
    app.get(&dave, &thread(""))
        .await
        .expect_error(404, "not_found", Some("parent_id"));
    let in_dave_conv = id_of(&send(&app, &dave, &dave_conv, "dave's", &[]).await);
    app.get(&bob, &format!("/v1/messages?parent_id={in_dave_conv}"))
        .await
        .expect_error(404, "not_found", Some("parent_id"));
}

async fn a_bad_parent_id_is_refused_and_writes_nothing(app: TestApp) {
    let (alice, bob, carol, conv) = trio(&app).await;
    let dave = app.user("dave").await;
    let erin = app.user("erin").await;
    let foreign_conv = app.direct(&dave, &erin).await;
    let foreign = id_of(&send(&app, &dave, &foreign_conv, "elsewhere", &[]).await);
    let p = id_of(&send(&app, &alice, &conv, "a thread", &[]).await);
    let q = id_of(&send(&app, &carol, &conv, "quotable", &[]).await);
    let nested = id_of(&thread_reply(&app, &bob, &conv, &p, "in the thread").await);

    let before = snapshot(&app, &conv, &[&alice, &bob, &carol]).await;
    assert_eq!(message(&app, &alice, &p).await["reply_count"], 1);
    for bad in [foreign.as_str(), UNKNOWN_ID, nested.as_str(), "nope", &conv] {
        let r = try_send(&app, &alice, &conv, "refused", &[("parent_id", bad)]).await;
        assert_eq!(r.status.as_u16(), 400, "parent_id {bad:?}: {}", r.raw);
        r.expect_error(400, "parameter_invalid", Some("parent_id"));
        // Also beside a good quote and a good mention.
        let r = try_send(
            &app,
            &bob,
            &conv,
            "refused",
            &[
                ("reply_to_id", q.as_str()),
                ("mentions[]", alice.id.as_str()),
                ("parent_id", bad),
            ],
        )
        .await;
        r.expect_error(400, "parameter_invalid", Some("parent_id"));
    }
    for body in [
        json!({"conversation_id": conv, "message": "refused", "parent_id": nested}),
        json!({"conversation_id": conv, "message": "refused", "parent_id": foreign}),
        json!({"conversation_id": conv, "message": "refused", "parent_id": 1}),
    ] {
        try_send_json(&app, &carol, &body).await.expect_error(
            400,
            "parameter_invalid",
            Some("parent_id"),
        );
    }
    // A non-member: 404 on the conversation, even with a good parent.
    try_send(&app, &dave, &conv, "refused", &[("parent_id", p.as_str())])
        .await
        .expect_error(404, "not_found", Some("conversation_id"));
    try_send(
        &app,
        &dave,
        &conv,
        "refused",
        &[("parent_id", nested.as_str())],
    )
    .await
    .expect_error(404, "not_found", Some("conversation_id"));

    assert_eq!(snapshot(&app, &conv, &[&alice, &bob, &carol]).await, before);
    let thread = app
        .get(&alice, &format!("/v1/messages?parent_id={p}&limit=100"))
        .await;
    assert_eq!(
        crate::support::data_ids(thread.expect(200)),
        [nested.as_str()]
    );
    // The foreign conversation is untouched too.
    let theirs = crate::support::conversation_messages(&app, &dave, &foreign_conv).await;
    assert_eq!(theirs.len(), 1);
    assert_eq!(theirs[0]["reply_count"], 0);
}

async fn a_thread_reply_is_a_message_like_any_other(app: TestApp) {
    let (alice, bob, carol, conv) = trio(&app).await;
    let dave = app.user("dave").await;
    let since_bob = conversation_created(&app, &bob).await;
    let since_carol = conversation_created(&app, &carol).await;
    let p = id_of(&send(&app, &alice, &conv, "the thread", &[]).await);
    open(&app, &bob, &conv).await;
    assert_eq!(counts(&app, &bob, &conv).await, (0, 0));

    let r1 = thread_reply(&app, &alice, &conv, &p, "first in thread").await;
    let r2 = thread_reply(&app, &alice, &conv, &p, "second in thread").await;
    // The others' unread counts grow by each reply; the sender's does not.
    assert_eq!(counts(&app, &bob, &conv).await, (2, 0));
    assert_eq!(counts(&app, &carol, &conv).await, (3, 0));
    assert_eq!(counts(&app, &alice, &conv).await, (0, 0));
    // A reply by bob counts for alice.
    let r3 = thread_reply(&app, &bob, &conv, &p, "bob's reply").await;
    assert_eq!(counts(&app, &alice, &conv).await, (1, 0));

    // Each member gets its message.created, as they would GET it.
    for (who, since) in [(&bob, &since_bob), (&carol, &since_carol)] {
        let last = id_of(&r3);
        let (raw, events) = caught_up(&app, &who.token, since, |e| created_of(e, &last)).await;
        for reply in [&r1, &r2, &r3] {
            let id = id_of(reply);
            let e = events
                .iter()
                .find(|e| created_of(e, &id))
                .unwrap_or_else(|| panic!("no message.created of {id}: {raw}"));
            assert_eq!(e["payload"]["parent_id"], p.as_str(), "{e}");
            assert_eq!(e["payload"]["reply_count"], 0, "{e}");
            assert!(e["payload"]["reply_to"].is_null(), "{e}");
            assert_eq!(e["payload"]["mentions"], json!([]), "{e}");
            let as_got = message(&app, who, &id).await;
            let mut want = without_activity(&as_got);
            // read_at may have moved since (carol has not opened); no
            // payload carries a phone number (docs/api.md), not even
            // the recipient's own.
            want["read_at"] = e["payload"]["read_at"].clone();
            want["contact"]["phone_number"] = serde_json::Value::Null;
            assert_eq!(without_activity(&e["payload"]), want, "{e}");
        }
    }
    // Not to a non-member.
    let dave_events = app
        .send(
            reqwest::Method::GET,
            "/v1/events?limit=100",
            Some(&dave.token),
            None,
            &[("accept", "application/json")],
        )
        .await;
    let raw = &dave_events.raw;
    dave_events.expect(200);
    assert!(!raw.contains("in thread"), "{raw}");

    // Opening reads the replies too.
    let opened = open(&app, &bob, &conv).await;
    assert_eq!(opened["unread_count"], 0);
    assert_eq!(counts(&app, &bob, &conv).await, (0, 0));
    let got = message(&app, &alice, &id_of(&r1)).await;
    assert!(got["read_at"].is_i64(), "read once opened: {got}");
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    a_thread_counts_its_replies_and_knows_its_latest,
    thread_replies_stay_out_of_the_conversation_list,
    a_thread_is_listed_newest_first_and_paged,
    a_bad_parent_id_is_refused_and_writes_nothing,
    a_thread_reply_is_a_message_like_any_other,
);
