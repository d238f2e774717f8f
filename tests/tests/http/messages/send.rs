//! Sending: the full message, parameter validation and attachments.

use confab_tests::http::TestApp;
use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{
    assert_id, assert_recent, conversation_messages, id_of, keys, pair, Case, UNKNOWN_ID,
};

use super::message_path;

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
    // The sender's own answer carries her phone number.
    assert_eq!(m["contact"]["phone_number"], "+15550100");
    assert!(m["contact"]["avatar_url"].is_string(), "avatar_url: {m}");
    assert_recent(&m["contact"]["last_active_at"]);
    assert_recent(&m["contact"]["created_at"]);

    // GET gives the same object, to either member, but for the phone
    // number: phone numbers are private: docs/api.md "Blocks and reports". Bob sees alice's
    // as null, alice sees her own.
    let got = app.get(&bob, &message_path(&m)).await;
    let got = got.expect(200);
    assert!(got["contact"]["phone_number"].is_null(), "{got}");
    let mut as_others_see = m.clone();
    as_others_see["contact"]["phone_number"] = Value::Null;
    assert_eq!(got, &as_others_see);
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
    // phone numbers are private: docs/api.md "Blocks and reports"
    assert_eq!(m["contact"]["phone_number"], "+15550100");
    let got = app.get(&bob, &message_path(&m)).await.expect(200).clone();
    assert!(got["contact"]["phone_number"].is_null(), "{got}");
    let mut as_others_see = m.clone();
    as_others_see["contact"]["phone_number"] = Value::Null;
    assert_eq!(got, as_others_see);

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

confab_tests::on_both_stores!(
    crate::support::on_server;
    send_returns_the_full_message,
    send_validates_its_parameters,
    send_with_attachments,
    attachment_fields_are_validated,
);
