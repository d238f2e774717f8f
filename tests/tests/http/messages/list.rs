//! Get and list: scopes, order, limits, paging both ways and cursor
//! errors.

use confab_tests::http::TestApp;
use serde_json::{json, Value};

use crate::support::{id_of, pair, UNKNOWN_ID};

use super::{message_path, page};

async fn get_message_and_list_scopes(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let with_bob = app.direct(&alice, &bob).await;
    let with_carol = app.direct(&carol, &alice).await;
    let b1 = app.send_message(&alice, &with_bob, "to bob 1").await;
    let c1 = app
        .send_message(&carol, &with_carol, "to alice from carol")
        .await;
    let b2 = app.send_message(&bob, &with_bob, "to alice from bob").await;

    let (all, more) = page(&app, &alice, "").await;
    assert_eq!(all, vec![id_of(&b2), id_of(&c1), id_of(&b1)]);
    assert!(!more);
    let (only_bob, _) = page(&app, &alice, &format!("conversation_id={with_bob}")).await;
    assert_eq!(only_bob, vec![id_of(&b2), id_of(&b1)]);
    let (only_carol, _) = page(&app, &alice, &format!("conversation_id={with_carol}")).await;
    assert_eq!(only_carol, vec![id_of(&c1)]);
    let (bobs, _) = page(&app, &bob, "").await;
    assert_eq!(bobs, vec![id_of(&b2), id_of(&b1)]);
    let (carols, _) = page(&app, &carol, "").await;
    assert_eq!(carols, vec![id_of(&c1)]);

    // List items are full message objects: as alice sees them, with the
    // sender carol's phone number null (phone numbers are private: docs/api.md
    // "Blocks and reports").
    let r = app
        .get(
            &alice,
            &format!("/v1/messages?conversation_id={with_carol}"),
        )
        .await;
    let item = &r.expect(200)["data"][0];
    assert!(item["contact"]["phone_number"].is_null(), "{item}");
    assert_eq!(c1["contact"]["phone_number"], "+15550100");
    let mut c1_as_others_see = c1.clone();
    c1_as_others_see["contact"]["phone_number"] = Value::Null;
    assert_eq!(item, &c1_as_others_see);

    for bad in [UNKNOWN_ID, "nope"] {
        let r = app
            .get(&alice, &format!("/v1/messages?conversation_id={bad}"))
            .await;
        r.expect_error(404, "not_found", Some("conversation_id"));
    }
    let r = app
        .get(&bob, &format!("/v1/messages?conversation_id={with_carol}"))
        .await;
    r.expect_error(404, "not_found", Some("conversation_id"));

    app.get(&carol, &message_path(&b1))
        .await
        .expect_error(404, "not_found", None);
    let r = app.get(&bob, &message_path(&b1)).await;
    // phone numbers are private: docs/api.md "Blocks and reports"
    let seen = r.expect(200);
    assert!(seen["contact"]["phone_number"].is_null(), "{seen}");
    assert_eq!(b1["contact"]["phone_number"], "+15550100");
    let mut b1_as_others_see = b1.clone();
    b1_as_others_see["contact"]["phone_number"] = Value::Null;
    assert_eq!(seen, &b1_as_others_see);
}

async fn newest_first_within_one_second(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let mut sent = Vec::new();
    for i in 0..15 {
        let from = if i % 3 == 0 { &bob } else { &alice };
        sent.push(id_of(
            &app.send_message(from, &conv, &format!("m{i}")).await,
        ));
    }
    sent.reverse();
    let (got, more) = page(&app, &alice, &format!("conversation_id={conv}&limit=100")).await;
    assert_eq!(got, sent);
    assert!(!more);
    let (got, _) = page(&app, &bob, "limit=15").await;
    assert_eq!(got, sent);
}

async fn limit_default_and_bounds(app: TestApp) {
    let (alice, _bob, conv) = pair(&app).await;
    for i in 0..12 {
        app.send_message(&alice, &conv, &format!("m{i}")).await;
    }
    let (got, more) = page(&app, &alice, "").await;
    assert_eq!(got.len(), 10);
    assert!(more);
    let (got, more) = page(&app, &alice, "limit=12").await;
    assert_eq!(got.len(), 12);
    assert!(!more);
    let (got, more) = page(&app, &alice, "limit=11").await;
    assert_eq!(got.len(), 11);
    assert!(more);
    let (got, more) = page(&app, &alice, "limit=100").await;
    assert_eq!(got.len(), 12);
    assert!(!more);
    let (got, _) = page(&app, &alice, "limit=1").await;
    assert_eq!(got.len(), 1);
    for bad in ["0", "101", "abc", "-1", "1.5", "", "1e1"] {
        let r = app.get(&alice, &format!("/v1/messages?limit={bad}")).await;
        assert_eq!(r.status.as_u16(), 400, "limit={bad}: {}", r.raw);
        r.expect_error(400, "parameter_invalid", Some("limit"));
    }
}

async fn paging_forwards_and_backwards(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let mut sent = Vec::new();
    for i in 0..23 {
        let from = if i % 2 == 0 { &alice } else { &bob };
        sent.push(id_of(
            &app.send_message(from, &conv, &format!("m{i}")).await,
        ));
    }
    let newest_first: Vec<String> = sent.iter().rev().cloned().collect();
    let base = format!("conversation_id={conv}&limit=10");

    // Forwards.
    let mut seen = Vec::new();
    let mut pages = Vec::new();
    let (mut items, mut more) = page(&app, &alice, &base).await;
    loop {
        pages.push((items.len(), more));
        seen.extend(items.iter().cloned());
        if !more {
            break;
        }
        let last = items
            .last()
            .expect("a page with has_more is not empty")
            .clone();
        (items, more) = page(&app, &alice, &format!("{base}&starting_after={last}")).await;
    }
    assert_eq!(pages, vec![(10, true), (10, true), (3, false)]);
    assert_eq!(seen, newest_first);

    // Backwards from the last item: each page precedes the cursor, still in
    // list order.
    let oldest = newest_first.last().expect("items").clone();
    let mut back = Vec::new();
    let mut pages = Vec::new();
    let (mut items, mut more) = page(&app, &bob, &format!("{base}&ending_before={oldest}")).await;
    loop {
        pages.push((items.len(), more));
        let mut chunk = items.clone();
        chunk.extend(back);
        back = chunk;
        if !more {
            break;
        }
        let first = items
            .first()
            .expect("a page with has_more is not empty")
            .clone();
        (items, more) = page(&app, &bob, &format!("{base}&ending_before={first}")).await;
    }
    assert_eq!(pages, vec![(10, true), (10, true), (2, false)]);
    assert_eq!(back, newest_first[..22].to_vec());

    // Exactly the page before an item.
    let (items, more) = page(
        &app,
        &alice,
        &format!(
            "conversation_id={conv}&limit=3&ending_before={}",
            newest_first[5]
        ),
    )
    .await;
    assert_eq!(items, newest_first[2..5].to_vec());
    assert!(more);
    let (items, more) = page(
        &app,
        &alice,
        &format!(
            "conversation_id={conv}&limit=3&ending_before={}",
            newest_first[2]
        ),
    )
    .await;
    assert_eq!(items, newest_first[..2].to_vec());
    assert!(!more);
    // Ends of the list.
    let (items, more) = page(
        &app,
        &alice,
        &format!("{base}&ending_before={}", newest_first[0]),
    )
    .await;
    assert!(items.is_empty());
    assert!(!more);
    let (items, more) = page(&app, &alice, &format!("{base}&starting_after={oldest}")).await;
    assert!(items.is_empty());
    assert!(!more);
    // Paging across all conversations works the same way.
    let (items, more) = page(
        &app,
        &alice,
        &format!("limit=5&starting_after={}", newest_first[17]),
    )
    .await;
    assert_eq!(items, newest_first[18..23].to_vec());
    assert!(!more);
}

async fn cursor_errors(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let carol = app.user("carol").await;
    let other = app.direct(&alice, &carol).await;
    let foreign = app.direct(&bob, &carol).await;
    let here = id_of(&app.send_message(&alice, &conv, "here").await);
    let there = id_of(&app.send_message(&alice, &other, "there").await);
    let hidden = id_of(&app.send_message(&bob, &foreign, "hidden").await);

    for cursor in ["starting_after", "ending_before"] {
        for bad in [there.as_str(), UNKNOWN_ID, "garbage"] {
            let r = app
                .get(
                    &alice,
                    &format!("/v1/messages?conversation_id={conv}&{cursor}={bad}"),
                )
                .await;
            assert_eq!(r.status.as_u16(), 400, "{cursor}={bad}: {}", r.raw);
            r.expect_error(400, "parameter_invalid", Some(cursor));
        }
        // A message of a conversation alice is not in is not in her list.
        let r = app
            .get(&alice, &format!("/v1/messages?{cursor}={hidden}"))
            .await;
        r.expect_error(400, "parameter_invalid", Some(cursor));
        // In the list of all her conversations `there` is a fine cursor.
        app.get(&alice, &format!("/v1/messages?{cursor}={there}"))
            .await
            .expect(200);
    }
    let r = app
        .get(
            &alice,
            &format!("/v1/messages?starting_after={here}&ending_before={there}"),
        )
        .await;
    r.expect(400);
    assert_eq!(r.body["code"], "parameter_invalid", "{}", r.raw);
    assert!(
        [json!(null), json!("starting_after"), json!("ending_before")].contains(&r.body["param"]),
        "{}",
        r.raw
    );
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    get_message_and_list_scopes,
    newest_first_within_one_second,
    limit_default_and_bounds,
    paging_forwards_and_backwards,
    cursor_errors,
);
