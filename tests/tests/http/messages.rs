//! API.md section 5 (messages) with the list rules of section 4: send, get,
//! list and page, edit, react, attach, unreact, delete, and many clients
//! sending at once.

use std::collections::HashSet;
use std::time::Duration;

use confab_tests::http::{encode_form, TestApp, User};
use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{
    self, assert_id, assert_recent, conversation_messages, group_conversation, id_of, keys,
    new_group, pair, Case, UNKNOWN_ID,
};

/// A group conversation of alice (owner), bob and carol.
async fn trio(app: &TestApp) -> (User, User, User, String) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let group_id = new_group(app, &alice, "Trio", &[&bob, &carol]).await;
    let conv = group_conversation(app, &alice, &group_id).await;
    (alice, bob, carol, conv)
}

/// One page of `GET /v1/messages` with the given query: (ids, has_more).
async fn page(app: &TestApp, user: &User, query: &str) -> (Vec<String>, bool) {
    support::page(app, user, &format!("/v1/messages?{query}")).await
}

fn message_path(m: &Value) -> String {
    format!("/v1/messages/{}", id_of(m))
}

/// `user` PUTs the reaction `pairs` to the message at `path`, which must
/// succeed; returns the message's reactions after it.
async fn react(app: &TestApp, user: &User, path: &str, pairs: &[(&str, &str)]) -> Value {
    let r = app.put(user, path, pairs).await;
    r.expect(200)["reactions"].clone()
}

// ---------------------------------------------------------------------- send

async fn send_returns_the_full_message(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let r = app
        .post(
            &alice,
            "/v1/messages",
            &[("conversation_id", &conv), ("message", "Hello, Bob!")],
        )
        .await;
    let m = r.expect(201).clone();
    let obj = m.as_object().expect("object");
    for key in [
        "id",
        "conversation_id",
        "contact",
        "message",
        "reactions",
        "attachments",
        "read_at",
        "created_at",
        "updated_at",
    ] {
        assert!(obj.contains_key(key), "message lacks {key}: {m}");
    }
    assert_id(&m["id"]);
    assert_eq!(m["conversation_id"], conv.as_str());
    assert_eq!(m["message"], "Hello, Bob!");
    assert_eq!(m["reactions"], json!([]));
    assert_eq!(m["attachments"], json!([]));
    assert!(m["read_at"].is_null());
    assert!(m["updated_at"].is_null());
    let created = assert_recent(&m["created_at"]);

    let contact = m["contact"].as_object().expect("contact object");
    assert_eq!(contact.len(), 6, "contact has exactly six fields: {m}");
    assert_eq!(m["contact"]["id"], alice.id.as_str());
    assert_eq!(m["contact"]["username"], "alice");
    assert_eq!(m["contact"]["phone_number"], "+15550100");
    assert!(m["contact"]["avatar_url"].is_string(), "avatar_url: {m}");
    assert_recent(&m["contact"]["last_active_at"]);
    assert_recent(&m["contact"]["created_at"]);

    // GET gives the same object, to either member.
    let got = app.get(&bob, &message_path(&m)).await;
    assert_eq!(got.expect(200), &m);
    let got = app.get(&alice, &message_path(&m)).await;
    assert_eq!(got.expect(200), &m);

    // The conversation's last activity is the message's creation.
    let list = app.get(&bob, "/v1/conversations").await;
    let c = &list.expect(200)["data"][0];
    assert_eq!(c["id"], conv.as_str());
    assert_eq!(c["last_active_at"], created);

    // A reply by bob carries bob as the contact.
    let reply = app.send_message(&bob, &conv, "Hi!").await;
    assert_eq!(reply["contact"]["id"], bob.id.as_str());
    assert_eq!(reply["contact"]["username"], "bob");
    let list = app.get(&alice, "/v1/conversations").await;
    assert_eq!(
        list.expect(200)["data"][0]["last_active_at"],
        reply["created_at"]
    );
}

async fn send_validates_its_parameters(app: TestApp) {
    let (alice, _bob, conv) = pair(&app).await;
    let carol = app.user("carol").await;
    let dave = app.user("dave").await;
    let foreign = app.direct(&carol, &dave).await;

    let r = app.post(&alice, "/v1/messages", &[("message", "hi")]).await;
    r.expect_error(400, "parameter_missing", Some("conversation_id"));
    let r = app
        .post(&alice, "/v1/messages", &[("conversation_id", &conv)])
        .await;
    r.expect_error(400, "parameter_missing", Some("message"));
    let r = app.post(&alice, "/v1/messages", &[]).await;
    assert_eq!(r.status.as_u16(), 400);
    assert_eq!(r.body["code"], "parameter_missing");

    // Nothing visible: white space, zero-width and other format characters.
    for bad in [
        "",
        " ",
        "   \n\t  ",
        "\u{3000}",
        "\u{200B}",
        " \u{200B}\u{2060}\u{FEFF} ",
    ] {
        let r = app
            .post(
                &alice,
                "/v1/messages",
                &[("conversation_id", &conv), ("message", bad)],
            )
            .await;
        assert_eq!(r.status.as_u16(), 400, "message {bad:?}: {}", r.raw);
        r.expect_error(400, "parameter_invalid", Some("message"));
    }

    // 4096 characters are fine, 4097 are not; characters, not bytes.
    let ok = "é".repeat(4096);
    let m = app.send_message(&alice, &conv, &ok).await;
    assert_eq!(m["message"], ok.as_str());
    let ok_ascii = "a".repeat(4096);
    app.send_message(&alice, &conv, &ok_ascii).await;
    for too_long in ["é".repeat(4097), "a".repeat(4097)] {
        let r = app
            .post(
                &alice,
                "/v1/messages",
                &[("conversation_id", &conv), ("message", &too_long)],
            )
            .await;
        r.expect_error(400, "parameter_invalid", Some("message"));
    }

    for target in [UNKNOWN_ID, foreign.as_str(), "not-a-uuid"] {
        let r = app
            .post(
                &alice,
                "/v1/messages",
                &[("conversation_id", target), ("message", "hi")],
            )
            .await;
        assert_eq!(
            r.status.as_u16(),
            404,
            "conversation_id {target:?}: {}",
            r.raw
        );
        r.expect_error(404, "not_found", Some("conversation_id"));
    }

    // Only the two valid messages exist; carol's conversation is untouched.
    assert_eq!(conversation_messages(&app, &alice, &conv).await.len(), 2);
    assert!(conversation_messages(&app, &carol, &foreign)
        .await
        .is_empty());
}

async fn send_with_attachments(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let r = app
        .post(
            &alice,
            "/v1/messages",
            &[
                ("conversation_id", &conv),
                ("message", "two files"),
                ("attachments[0][file_url]", "https://files.example/a.bin"),
                ("attachments[0][filename]", "a.bin"),
                ("attachments[1][file_url]", "http://files.example/b.png"),
                ("attachments[1][filename]", "b ünïcode.png"),
                ("attachments[1][file_type]", "image/png"),
                ("attachments[1][file_size]", "2048"),
            ],
        )
        .await;
    let m = r.expect(201).clone();
    let msg_id = id_of(&m);
    let atts = m["attachments"].as_array().expect("attachments");
    assert_eq!(atts.len(), 2, "{m}");
    let a = &atts[0];
    assert_eq!(
        keys(a),
        [
            "created_at",
            "file_size",
            "file_type",
            "file_url",
            "filename",
            "id",
            "message_id",
        ],
        "attachment fields"
    );
    assert_id(&a["id"]);
    assert_eq!(a["message_id"], msg_id.as_str());
    assert_eq!(a["filename"], "a.bin");
    assert_eq!(a["file_url"], "https://files.example/a.bin");
    assert_eq!(a["file_type"], "application/octet-stream");
    assert!(a["file_size"].is_null());
    assert_recent(&a["created_at"]);
    let b = &atts[1];
    assert_eq!(b["filename"], "b ünïcode.png");
    assert_eq!(b["file_url"], "http://files.example/b.png");
    assert_eq!(b["file_type"], "image/png");
    assert_eq!(b["file_size"], 2048);
    assert_ne!(a["id"], b["id"]);
    assert_eq!(app.get(&bob, &message_path(&m)).await.expect(200), &m);

    // The same in JSON.
    let r = app
        .json(
            Method::POST,
            &alice,
            "/v1/messages",
            &json!({
                "conversation_id": conv,
                "message": "json files",
                "attachments": [
                    {"file_url": "https://files.example/c", "filename": "c"},
                    {"file_url": "https://files.example/d", "filename": "d",
                     "file_type": "text/plain", "file_size": 0}
                ]
            }),
        )
        .await;
    let m = r.expect(201);
    assert_eq!(m["attachments"][0]["filename"], "c");
    assert_eq!(m["attachments"][0]["file_type"], "application/octet-stream");
    assert!(m["attachments"][0]["file_size"].is_null());
    assert_eq!(m["attachments"][1]["file_type"], "text/plain");
    assert_eq!(m["attachments"][1]["file_size"], 0);

    // Ten is the most.
    let keys: Vec<(String, String, String)> = (0..11)
        .map(|i| {
            (
                format!("attachments[{i}][file_url]"),
                format!("attachments[{i}][filename]"),
                format!("https://files.example/{i}"),
            )
        })
        .collect();
    let mut pairs: Vec<(&str, &str)> = vec![("conversation_id", &conv), ("message", "many")];
    for (url_key, name_key, url) in &keys[..10] {
        pairs.push((url_key, url));
        pairs.push((name_key, "f"));
    }
    let r = app.post(&alice, "/v1/messages", &pairs).await;
    assert_eq!(
        r.expect(201)["attachments"].as_array().expect("list").len(),
        10
    );
    let (url_key, name_key, url) = &keys[10];
    pairs.push((url_key, url));
    pairs.push((name_key, "f"));
    let r = app.post(&alice, "/v1/messages", &pairs).await;
    r.expect_error(400, "parameter_invalid", Some("attachments"));
    assert_eq!(conversation_messages(&app, &alice, &conv).await.len(), 3);
}

/// Extra form pairs for attachment 1, the error code, the error param.
async fn attachment_fields_are_validated(app: TestApp) {
    let (alice, _bob, conv) = pair(&app).await;
    let long_url = format!("https://files.example/{}", "x".repeat(2048));
    let long_name = "n".repeat(256);
    let ok_url = ("attachments[0][file_url]", "https://files.example/ok");
    let ok_name = ("attachments[0][filename]", "ok.txt");
    // (extra pairs for attachment 1, expected code, expected param)
    let cases: Vec<Case> = vec![
        (
            vec![("attachments[1][filename]", "x")],
            "parameter_missing",
            "attachments[1][file_url]",
        ),
        (
            vec![("attachments[1][file_url]", "https://files.example/x")],
            "parameter_missing",
            "attachments[1][filename]",
        ),
        (
            vec![
                ("attachments[1][file_url]", "ftp://files.example/x"),
                ("attachments[1][filename]", "x"),
            ],
            "parameter_invalid",
            "attachments[1][file_url]",
        ),
        (
            vec![
                ("attachments[1][file_url]", "not a url"),
                ("attachments[1][filename]", "x"),
            ],
            "parameter_invalid",
            "attachments[1][file_url]",
        ),
        (
            vec![
                ("attachments[1][file_url]", long_url.as_str()),
                ("attachments[1][filename]", "x"),
            ],
            "parameter_invalid",
            "attachments[1][file_url]",
        ),
        (
            vec![
                ("attachments[1][file_url]", "https://files.example/x"),
                ("attachments[1][filename]", ""),
            ],
            "parameter_invalid",
            "attachments[1][filename]",
        ),
        (
            vec![
                ("attachments[1][file_url]", "https://files.example/x"),
                ("attachments[1][filename]", "dir/x"),
            ],
            "parameter_invalid",
            "attachments[1][filename]",
        ),
        (
            vec![
                ("attachments[1][file_url]", "https://files.example/x"),
                ("attachments[1][filename]", "a\nb"),
            ],
            "parameter_invalid",
            "attachments[1][filename]",
        ),
        (
            vec![
                ("attachments[1][file_url]", "https://files.example/x"),
                ("attachments[1][filename]", long_name.as_str()),
            ],
            "parameter_invalid",
            "attachments[1][filename]",
        ),
        (
            vec![
                ("attachments[1][file_url]", "https://files.example/x"),
                ("attachments[1][filename]", "x"),
                ("attachments[1][file_type]", "image"),
            ],
            "parameter_invalid",
            "attachments[1][file_type]",
        ),
        (
            vec![
                ("attachments[1][file_url]", "https://files.example/x"),
                ("attachments[1][filename]", "x"),
                ("attachments[1][file_size]", "-1"),
            ],
            "parameter_invalid",
            "attachments[1][file_size]",
        ),
        (
            vec![
                ("attachments[1][file_url]", "https://files.example/x"),
                ("attachments[1][filename]", "x"),
                ("attachments[1][file_size]", "big"),
            ],
            "parameter_invalid",
            "attachments[1][file_size]",
        ),
        (
            vec![
                ("attachments[1][file_url]", "https://files.example/x"),
                ("attachments[1][filename]", "x"),
                ("attachments[1][file_size]", "1.5"),
            ],
            "parameter_invalid",
            "attachments[1][file_size]",
        ),
        (
            vec![
                ("attachments[1][file_url]", "https://files.example/x"),
                ("attachments[1][filename]", "x"),
                ("attachments[1][message_id]", UNKNOWN_ID),
            ],
            "parameter_unknown",
            "attachments[1][message_id]",
        ),
    ];
    for (extra, code, param) in cases {
        let mut pairs = vec![
            ("conversation_id", conv.as_str()),
            ("message", "with files"),
            ok_url,
            ok_name,
        ];
        pairs.extend(extra.iter().copied());
        let r = app.post(&alice, "/v1/messages", &pairs).await;
        assert_eq!(r.status.as_u16(), 400, "case {param} {extra:?}: {}", r.raw);
        r.expect_error(400, code, Some(param));
    }
    // Attachment 0 on its own is fine; nothing else was stored.
    assert!(conversation_messages(&app, &alice, &conv).await.is_empty());
    let r = app
        .post(
            &alice,
            "/v1/messages",
            &[
                ("conversation_id", &conv),
                ("message", "ok"),
                ok_url,
                ok_name,
            ],
        )
        .await;
    r.expect(201);
    // In JSON the nested param is named the same way.
    let r = app
        .json(
            Method::POST,
            &alice,
            "/v1/messages",
            &json!({
                "conversation_id": conv,
                "message": "json",
                "attachments": [{"file_url": "https://files.example/x", "filename": "x", "file_size": -5}]
            }),
        )
        .await;
    r.expect_error(400, "parameter_invalid", Some("attachments[0][file_size]"));
    assert_eq!(conversation_messages(&app, &alice, &conv).await.len(), 1);
}

// ---------------------------------------------------------------- get, list

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

    // List items are full message objects.
    let r = app
        .get(
            &alice,
            &format!("/v1/messages?conversation_id={with_carol}"),
        )
        .await;
    assert_eq!(r.expect(200)["data"][0], c1);

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
    assert_eq!(r.expect(200), &b1);
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

// ------------------------------------------------------------ edit, react

async fn edit_by_sender_only(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let m = app.send_message(&alice, &conv, "first draft").await;
    let path = message_path(&m);

    let r = app.put(&bob, &path, &[("message", "bob was here")]).await;
    r.expect_error(403, "forbidden", None);
    let r = app
        .put(
            &bob,
            &path,
            &[("message", "x"), ("reactions[like][]", "bob")],
        )
        .await;
    r.expect_error(403, "forbidden", None);
    let unchanged = app.get(&alice, &path).await.expect(200).clone();
    assert_eq!(unchanged, m);

    let too_long = "z".repeat(4097);
    for bad in ["", "  ", "\u{200B}", too_long.as_str()] {
        let r = app.put(&alice, &path, &[("message", bad)]).await;
        r.expect_error(400, "parameter_invalid", Some("message"));
    }
    let r = app.put(&alice, &path, &[("id", UNKNOWN_ID)]).await;
    r.expect_error(400, "parameter_unknown", Some("id"));
    let r = app.put(&alice, &path, &[("conversation_id", &conv)]).await;
    r.expect_error(400, "parameter_unknown", Some("conversation_id"));
    assert_eq!(app.get(&alice, &path).await.expect(200), &m);

    let r = app.put(&alice, &path, &[("message", "final text")]).await;
    let edited = r.expect(200).clone();
    assert_eq!(edited["message"], "final text");
    let updated = assert_recent(&edited["updated_at"]);
    assert!(updated >= m["created_at"].as_i64().expect("created_at"));
    for key in [
        "id",
        "conversation_id",
        "contact",
        "reactions",
        "attachments",
        "read_at",
        "created_at",
    ] {
        assert_eq!(edited[key], m[key], "field {key} changed");
    }
    assert_eq!(app.get(&bob, &path).await.expect(200), &edited);
}

async fn reactions_add_in_order(app: TestApp) {
    let (alice, bob, carol, conv) = trio(&app).await;
    let m = app.send_message(&alice, &conv, "react!").await;
    let path = message_path(&m);

    let r = app.put(&bob, &path, &[("reactions[like][]", "bob")]).await;
    let after = r.expect(200).clone();
    assert_eq!(after["reactions"], json!([{"like": ["bob"]}]));
    assert_recent(&after["updated_at"]);
    assert_eq!(after["message"], "react!");

    let heart = [("reactions[heart][]", "carol")];
    assert_eq!(
        react(&app, &carol, &path, &heart).await,
        json!([{"like": ["bob"]}, {"heart": ["carol"]}])
    );
    let like = [("reactions[like][]", "alice")];
    let full = json!([{"like": ["bob", "alice"]}, {"heart": ["carol"]}]);
    assert_eq!(react(&app, &alice, &path, &like).await, full);
    for u in [&alice, &bob, &carol] {
        assert_eq!(app.get(u, &path).await.expect(200)["reactions"], full);
    }

    // Several at once, by one caller: names in order of submission.
    let m2 = app.send_message(&bob, &conv, "more").await;
    let path2 = message_path(&m2);
    let both = [("reactions[tada][]", "carol"), ("reactions[+1][]", "carol")];
    assert_eq!(
        react(&app, &carol, &path2, &both).await,
        json!([{"tada": ["carol"]}, {"+1": ["carol"]}])
    );
}

async fn re_adding_a_reaction_changes_nothing(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let m = app.send_message(&alice, &conv, "once").await;
    let path = message_path(&m);
    let first = app.put(&bob, &path, &[("reactions[like][]", "bob")]).await;
    let first = first.expect(200).clone();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let again = app.put(&bob, &path, &[("reactions[like][]", "bob")]).await;
    let again = again.expect(200).clone();
    assert_eq!(again["reactions"], json!([{"like": ["bob"]}]));
    assert_eq!(
        again["updated_at"], first["updated_at"],
        "a no-op PUT set updated_at"
    );
    assert_eq!(again, first);
    // Twice in one request is one reaction too.
    let twice = [("reactions[wow][]", "alice"), ("reactions[wow][]", "alice")];
    assert_eq!(
        react(&app, &alice, &path, &twice).await,
        json!([{"like": ["bob"]}, {"wow": ["alice"]}])
    );
}

async fn reacting_in_someone_elses_name_is_403(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let m = app.send_message(&alice, &conv, "mine").await;
    let path = message_path(&m);
    let r = app
        .put(&bob, &path, &[("reactions[like][]", "alice")])
        .await;
    r.expect_error(403, "forbidden", None);
    // Mixed own and foreign names: nothing at all is added.
    let r = app
        .put(
            &bob,
            &path,
            &[("reactions[like][]", "bob"), ("reactions[like][]", "alice")],
        )
        .await;
    r.expect_error(403, "forbidden", None);
    let r = app
        .put(
            &bob,
            &path,
            &[
                ("reactions[heart][]", "bob"),
                ("reactions[like][]", "carol"),
            ],
        )
        .await;
    r.expect_error(403, "forbidden", None);
    let now = app.get(&alice, &path).await.expect(200).clone();
    assert_eq!(now, m);
    assert_eq!(now["reactions"], json!([]));
}

#[track_caller]
fn expect_reactions_invalid(r: &confab_tests::http::Resp) {
    r.expect(400);
    assert_eq!(r.body["code"], "parameter_invalid", "{}", r.raw);
    assert_eq!(r.body["type"], "invalid_request", "{}", r.raw);
    let param = r.body["param"].as_str().unwrap_or_default();
    assert!(param.starts_with("reactions"), "param {param:?}: {}", r.raw);
}

async fn reaction_names_are_validated(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let m = app.send_message(&alice, &conv, "names").await;
    let path = message_path(&m);
    let long = "a".repeat(65);
    for bad in ["Like", "thumbs up", "ok!", "é", long.as_str()] {
        let key = format!("reactions[{bad}][]");
        let r = app.put(&bob, &path, &[(key.as_str(), "bob")]).await;
        assert_eq!(r.status.as_u16(), 400, "name {bad:?}: {}", r.raw);
        expect_reactions_invalid(&r);
    }
    let max = "a".repeat(64);
    let key = format!("reactions[{max}][]");
    let r = app.put(&bob, &path, &[(key.as_str(), "bob")]).await;
    let mut only = serde_json::Map::new();
    only.insert(max.clone(), json!(["bob"]));
    assert_eq!(r.expect(200)["reactions"], json!([only]));
    let r = app
        .put(&bob, &path, &[("reactions[a-z_0+9][]", "bob")])
        .await;
    assert_eq!(r.expect(200)["reactions"][1], json!({"a-z_0+9": ["bob"]}));

    // 32 distinct names at most.
    let names: Vec<String> = (0..30).map(|i| format!("r{i}")).collect();
    let keys: Vec<String> = names.iter().map(|n| format!("reactions[{n}][]")).collect();
    let pairs: Vec<(&str, &str)> = keys.iter().map(|k| (k.as_str(), "alice")).collect();
    let r = app.put(&alice, &path, &pairs).await;
    assert_eq!(
        r.expect(200)["reactions"].as_array().expect("list").len(),
        32
    );
    let r = app
        .put(&bob, &path, &[("reactions[one-more][]", "bob")])
        .await;
    expect_reactions_invalid(&r);
    // Joining an existing name is still fine.
    let r = app.put(&bob, &path, &[("reactions[r7][]", "bob")]).await;
    let body = r.expect(200);
    assert_eq!(body["reactions"].as_array().expect("list").len(), 32);
    assert_eq!(body["reactions"][9], json!({"r7": ["alice", "bob"]}));
}

async fn attachments_appended_by_sender_only(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let r = app
        .post(
            &alice,
            "/v1/messages",
            &[
                ("conversation_id", &conv),
                ("message", "see files"),
                ("attachments[0][file_url]", "https://files.example/1"),
                ("attachments[0][filename]", "one"),
            ],
        )
        .await;
    let m = r.expect(201).clone();
    let path = message_path(&m);

    let r = app
        .put(
            &bob,
            &path,
            &[
                ("attachments[0][file_url]", "https://files.example/evil"),
                ("attachments[0][filename]", "evil"),
            ],
        )
        .await;
    r.expect_error(403, "forbidden", None);
    assert_eq!(app.get(&alice, &path).await.expect(200), &m);

    let r = app
        .put(
            &alice,
            &path,
            &[
                ("attachments[0][file_url]", "https://files.example/2"),
                ("attachments[0][filename]", "two"),
                ("attachments[0][file_size]", "7"),
            ],
        )
        .await;
    let after = r.expect(200).clone();
    let atts = after["attachments"].as_array().expect("list");
    assert_eq!(atts.len(), 2);
    assert_eq!(atts[0], m["attachments"][0]);
    assert_eq!(atts[1]["filename"], "two");
    assert_eq!(atts[1]["file_size"], 7);
    assert_eq!(atts[1]["message_id"], id_of(&m).as_str());
    assert_recent(&after["updated_at"]);

    // Up to ten in all.
    let keys: Vec<(String, String)> = (0..9)
        .map(|i| {
            (
                format!("attachments[{i}][file_url]"),
                format!("attachments[{i}][filename]"),
            )
        })
        .collect();
    let pairs: Vec<(&str, &str)> = keys
        .iter()
        .flat_map(|(u, n)| [(u.as_str(), "https://files.example/n"), (n.as_str(), "n")])
        .collect();
    let r = app.put(&alice, &path, &pairs).await;
    r.expect_error(400, "parameter_invalid", Some("attachments"));
    let r = app.put(&alice, &path, &pairs[..16]).await;
    assert_eq!(
        r.expect(200)["attachments"].as_array().expect("list").len(),
        10
    );
    let r = app.put(&alice, &path, &pairs[..2]).await;
    r.expect_error(400, "parameter_invalid", Some("attachments"));
    assert_eq!(
        app.get(&bob, &path).await.expect(200)["attachments"]
            .as_array()
            .expect("list")
            .len(),
        10
    );
}

async fn remove_own_reaction_only(app: TestApp) {
    let (alice, bob, carol, conv) = trio(&app).await;
    let m = app.send_message(&carol, &conv, "unreact").await;
    let path = message_path(&m);
    react(&app, &bob, &path, &[("reactions[like][]", "bob")]).await;
    react(&app, &alice, &path, &[("reactions[like][]", "alice")]).await;
    react(&app, &alice, &path, &[("reactions[heart][]", "alice")]).await;

    let r = app.delete(&bob, &format!("{path}/reactions/like")).await;
    let after = r.expect(200).clone();
    assert_eq!(id_of(&after), id_of(&m));
    assert_eq!(
        after["reactions"],
        json!([{"like": ["alice"]}, {"heart": ["alice"]}])
    );

    // Not had: 200, no change.
    let before = app.get(&carol, &path).await.expect(200).clone();
    let r = app.delete(&bob, &format!("{path}/reactions/heart")).await;
    assert_eq!(r.expect(200), &before);
    let r = app
        .delete(&carol, &format!("{path}/reactions/nothing"))
        .await;
    assert_eq!(r.expect(200), &before);

    // The last reactor's removal removes the name.
    let r = app.delete(&alice, &format!("{path}/reactions/like")).await;
    assert_eq!(r.expect(200)["reactions"], json!([{"heart": ["alice"]}]));
    let r = app.delete(&alice, &format!("{path}/reactions/heart")).await;
    assert_eq!(r.expect(200)["reactions"], json!([]));
    assert_eq!(
        app.get(&bob, &path).await.expect(200)["reactions"],
        json!([])
    );

    // Unknown message: 404.
    let r = app
        .delete(&alice, &format!("/v1/messages/{UNKNOWN_ID}/reactions/like"))
        .await;
    r.expect_error(404, "not_found", None);
}

// -------------------------------------------------------------------- delete

async fn delete_by_sender_only(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let m = app.send_message(&alice, &conv, "delete me").await;
    let keep = app.send_message(&bob, &conv, "keep me").await;
    let path = message_path(&m);
    app.put(&bob, &path, &[("reactions[like][]", "bob")])
        .await
        .expect(200);

    let r = app.delete(&bob, &path).await;
    r.expect_error(403, "forbidden", None);
    app.get(&alice, &path).await.expect(200);

    let r = app.delete(&alice, &path).await;
    r.expect(204);
    assert!(r.raw.is_empty());
    app.get(&alice, &path)
        .await
        .expect_error(404, "not_found", None);
    app.get(&bob, &path)
        .await
        .expect_error(404, "not_found", None);
    app.put(&alice, &path, &[("message", "back?")])
        .await
        .expect_error(404, "not_found", None);
    app.delete(&alice, &format!("{path}/reactions/like"))
        .await
        .expect_error(404, "not_found", None);
    app.delete(&alice, &path)
        .await
        .expect_error(404, "not_found", None);
    let (left, _) = page(&app, &bob, &format!("conversation_id={conv}")).await;
    assert_eq!(left, vec![id_of(&keep)]);
}

async fn deleting_the_pinned_message_unpins(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let m = app.send_message(&bob, &conv, "pin me").await;
    let conv_path = format!("/v1/conversations/{conv}");
    let r = app
        .put(&alice, &conv_path, &[("pinned_message_id", &id_of(&m))])
        .await;
    assert_eq!(r.expect(200)["pinned_message_id"], id_of(&m).as_str());
    app.delete(&bob, &message_path(&m)).await.expect(204);
    for u in [&alice, &bob] {
        let c = app.get(u, &conv_path).await;
        assert!(c.expect(200)["pinned_message_id"].is_null(), "{}", c.raw);
    }
}

// --------------------------------------------------------------- concurrency

async fn post_message(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    conv: &str,
    text: &str,
) -> Value {
    let resp = client
        .post(format!("{base}/v1/messages"))
        .bearer_auth(token)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(encode_form(&[("conversation_id", conv), ("message", text)]))
        .send()
        .await
        .expect("request sent");
    let status = resp.status().as_u16();
    let body = resp.text().await.expect("body");
    assert_eq!(status, 201, "concurrent send failed: {body}");
    serde_json::from_str(&body).expect("JSON body")
}

async fn concurrent_senders_lose_nothing(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let mut tasks = Vec::new();
    for task in 0..16usize {
        let client = app.client.clone();
        let base = app.base_url.clone();
        let token = if task % 2 == 0 {
            alice.token.clone()
        } else {
            bob.token.clone()
        };
        let conv = conv.clone();
        // 8 tasks send 13, 8 send 12: 200 in all.
        let count = if task < 8 { 13 } else { 12 };
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            for i in 0..count {
                let m = post_message(&client, &base, &token, &conv, &format!("t{task} m{i}")).await;
                mine.push(id_of(&m));
            }
            mine
        }));
    }
    let mut per_task = Vec::new();
    for t in tasks {
        per_task.push(t.await.expect("task"));
    }
    let total: usize = per_task.iter().map(Vec::len).sum();
    assert_eq!(total, 200);

    let mut listed: Vec<Value> = Vec::new();
    let mut pages = Vec::new();
    let mut query = format!("/v1/messages?conversation_id={conv}&limit=100");
    loop {
        let r = app.get(&bob, &query).await;
        let body = r.expect(200).clone();
        let data = body["data"].as_array().expect("data").clone();
        let more = body["has_more"].as_bool().expect("has_more");
        pages.push((data.len(), more));
        let last = data.last().map(id_of);
        listed.extend(data);
        if !more {
            break;
        }
        query = format!(
            "/v1/messages?conversation_id={conv}&limit=100&starting_after={}",
            last.expect("non-empty page")
        );
    }
    assert_eq!(pages, vec![(100, true), (100, false)]);
    let listed_ids: Vec<String> = listed.iter().map(id_of).collect();
    let unique: HashSet<&String> = listed_ids.iter().collect();
    assert_eq!(unique.len(), 200, "each message exactly once");
    let sent: HashSet<&String> = per_task.iter().flatten().collect();
    assert_eq!(unique, sent);

    // Newest first: created_at never increases down the list, and each
    // client's messages appear in the reverse of the order it sent them.
    let times: Vec<i64> = listed
        .iter()
        .map(|m| m["created_at"].as_i64().expect("created_at"))
        .collect();
    assert!(
        times.windows(2).all(|w| w[0] >= w[1]),
        "created_at order: {times:?}"
    );
    let position = |id: &String| listed_ids.iter().position(|x| x == id).expect("listed");
    for mine in &per_task {
        let positions: Vec<usize> = mine.iter().map(position).collect();
        assert!(
            positions.windows(2).all(|w| w[0] > w[1]),
            "a client's messages are out of order: {positions:?}"
        );
    }
    // The conversation's last activity is the newest message's.
    let c = app.get(&alice, "/v1/conversations").await;
    assert_eq!(
        c.expect(200)["data"][0]["last_active_at"],
        listed[0]["created_at"]
    );
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    send_returns_the_full_message,
    send_validates_its_parameters,
    send_with_attachments,
    attachment_fields_are_validated,
    get_message_and_list_scopes,
    newest_first_within_one_second,
    limit_default_and_bounds,
    paging_forwards_and_backwards,
    cursor_errors,
    edit_by_sender_only,
    reactions_add_in_order,
    re_adding_a_reaction_changes_nothing,
    reacting_in_someone_elses_name_is_403,
    reaction_names_are_validated,
    attachments_appended_by_sender_only,
    remove_own_reaction_only,
    delete_by_sender_only,
    deleting_the_pinned_message_unpins,
    concurrent_senders_lose_nothing,
);
