//! Files (docs/api.md "Files and attachments"): uploads streamed to the storage, attached by
//! id, listed, renamed, deleted, served through signed links or a Bearer
//! token with the safe-serving headers, `Range` and `ETag`; every bad input
//! a clear error with nothing stored; files of deleted things removed.

use confab_tests::db::execute;
use confab_tests::http::{multipart, TestApp, User};
use reqwest::Method;
use serde_json::{json, Value};

use crate::support::UNKNOWN_ID;

/// The first bytes of a PNG file (its signature and an IHDR chunk's start).
const PNG: &[u8] =
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00";
/// An HTML page, which must never be served as HTML.
const HTML: &[u8] = b"<!DOCTYPE html><html><body><script>alert(1)</script></body></html>";

async fn upload(app: &TestApp, user: &User, name: &str, bytes: &[u8]) -> Value {
    app.upload(user, name, bytes).await.expect(201).clone()
}

fn id_of(v: &Value) -> String {
    v["id"].as_str().expect("id").to_owned()
}

/// The path and query of an absolute `file_url`.
fn path_of(url: &str) -> String {
    let after_scheme = url.split_once("://").expect("absolute").1;
    let slash = after_scheme.find('/').expect("a path");
    after_scheme[slash..].to_owned()
}

/// A GET without a token.
async fn anonymous(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut req = app.client.get(format!("{}{}", app.base_url, path));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.expect("sent")
}

async fn an_upload_is_its_uploader_s_with_its_type_from_its_bytes(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    // The part says text/html; the bytes are a PNG.
    let (ct, body) = multipart(&[("file", Some("cat.png"), Some("text/html"), PNG)]);
    let r = app
        .send(
            Method::POST,
            "/v1/attachments",
            Some(&alice.token),
            Some((&ct, body)),
            &[],
        )
        .await;
    let made = r.expect(201).clone();
    let id = id_of(&made);
    assert_eq!(
        r.header("location"),
        Some(format!("/v1/attachments/{id}").as_str())
    );
    assert_eq!(made["message_id"], Value::Null);
    assert_eq!(made["filename"], "cat.png");
    assert_eq!(made["file_type"], "image/png");
    assert_eq!(made["file_size"], PNG.len());
    assert!(made["created_at"].is_i64());
    let url = made["file_url"].as_str().expect("file_url");
    assert!(
        url.starts_with(&format!(
            "{}/v1/attachments/{id}/content?expires=",
            app.base_url
        )),
        "{url}"
    );
    assert!(url.contains("&signature="), "{url}");
    let keys: Vec<&String> = made.as_object().expect("object").keys().collect();
    assert_eq!(
        keys,
        [
            "id",
            "message_id",
            "filename",
            "file_url",
            "file_type",
            "file_size",
            "created_at"
        ]
    );
    assert!(app.file_exists(&id).await);

    // Its uploader sees it; nobody else does.
    app.get(&alice, &format!("/v1/attachments/{id}"))
        .await
        .expect(200);
    app.get(&bob, &format!("/v1/attachments/{id}"))
        .await
        .expect_error(404, "not_found", None);
    let mine = app.get(&alice, "/v1/attachments").await;
    assert_eq!(mine.expect(200)["data"][0]["id"], id.as_str());
    let theirs = app.get(&bob, "/v1/attachments").await;
    assert_eq!(theirs.expect(200)["data"], json!([]));
    // An upload of HTML is bytes, not a page.
    let page = upload(&app, &alice, "page.html", HTML).await;
    assert_eq!(page["file_type"], "application/octet-stream");
}

async fn a_signed_link_serves_the_bytes_safely(app: TestApp) {
    let alice = app.user("alice").await;
    let png = upload(&app, &alice, "cat.png", PNG).await;
    let link = path_of(png["file_url"].as_str().expect("url"));
    let r = anonymous(&app, &link, &[]).await;
    assert_eq!(r.status(), 200);
    let h = r.headers().clone();
    assert_eq!(h["content-type"], "image/png");
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["content-security-policy"], "sandbox");
    assert!(h["content-disposition"]
        .to_str()
        .expect("text")
        .starts_with("inline"));
    assert_eq!(h["content-length"], PNG.len().to_string().as_str());
    assert_eq!(h["accept-ranges"], "bytes");
    assert_eq!(r.bytes().await.expect("body").as_ref(), PNG);

    // HTML is a download, never a page.
    let page = upload(&app, &alice, "page.html", HTML).await;
    let r = anonymous(&app, &path_of(page["file_url"].as_str().expect("url")), &[]).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/octet-stream");
    assert!(r.headers()["content-disposition"]
        .to_str()
        .expect("text")
        .starts_with("attachment"));
    assert_eq!(r.headers()["content-security-policy"], "sandbox");

    // An altered signature, expiry or id; no signature: 404, as if nothing
    // were there.
    let (path, query) = link.split_once('?').expect("query");
    let sig_at = query.find("signature=").expect("signature") + "signature=".len();
    let mut flipped = query.to_owned();
    let c = if &query[sig_at..=sig_at] == "0" {
        "1"
    } else {
        "0"
    };
    flipped.replace_range(sig_at..=sig_at, c);
    let expires: i64 = query
        .split('&')
        .find_map(|p| p.strip_prefix("expires="))
        .expect("expires")
        .parse()
        .expect("number");
    let later = query.replace(
        &format!("expires={expires}"),
        &format!("expires={}", expires + 300),
    );
    let earlier = query.replace(
        &format!("expires={expires}"),
        &format!("expires={}", expires - 7200),
    );
    let other = path.replace(&id_of(&png), &id_of(&page));
    for bad in [
        format!("{path}?{flipped}"),
        format!("{path}?{later}"),
        format!("{path}?{earlier}"),
        format!("{other}?{query}"),
        path.to_owned(),
        format!("{path}?signature=abc&expires=1"),
    ] {
        let r = anonymous(&app, &bad, &[]).await;
        let status = r.status().as_u16();
        let body: Value = r.json().await.expect("json");
        assert!(
            (status == 404 && body["code"] == "not_found") || (bad == path && status == 401),
            "{bad}: {status} {body}"
        );
    }
}

async fn a_bearer_member_reads_ranges_and_etags(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let bytes: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
    let up = upload(&app, &alice, "data.bin", &bytes).await;
    let id = id_of(&up);
    let content = format!("/v1/attachments/{id}/content");
    // Not attached: only its uploader.
    app.get(&bob, &content)
        .await
        .expect_error(404, "not_found", None);
    let c = app.direct(&alice, &bob).await;
    let sent = app
        .json(
            Method::POST,
            &alice,
            "/v1/messages",
            &json!({"conversation_id": c, "attachments": [{"id": id}]}),
        )
        .await;
    let message = sent.expect(201).clone();
    assert_eq!(message["message"], "");
    assert_eq!(message["attachments"][0]["id"], id.as_str());
    assert_eq!(message["attachments"][0]["message_id"], message["id"]);
    // Now the conversation's members read it; others still do not.
    let whole = app
        .send(Method::GET, &content, Some(&bob.token), None, &[])
        .await;
    whole.expect(200);
    assert_eq!(
        whole
            .header("content-disposition")
            .map(|d| d.starts_with("attachment")),
        Some(true)
    );
    app.get(&carol, &content)
        .await
        .expect_error(404, "not_found", None);
    app.get(&carol, &format!("/v1/attachments/{id}"))
        .await
        .expect_error(404, "not_found", None);

    // A range.
    let r = app
        .client
        .get(format!("{}{content}", app.base_url))
        .bearer_auth(&bob.token)
        .header("range", "bytes=100-199")
        .send()
        .await
        .expect("sent");
    assert_eq!(r.status(), 206);
    assert_eq!(r.headers()["content-range"], "bytes 100-199/10000");
    let etag = r.headers()["etag"].to_str().expect("etag").to_owned();
    assert_eq!(r.bytes().await.expect("body").as_ref(), &bytes[100..200]);
    let r = app
        .client
        .get(format!("{}{content}", app.base_url))
        .bearer_auth(&bob.token)
        .header("range", "bytes=-10")
        .send()
        .await
        .expect("sent");
    assert_eq!(r.status(), 206);
    assert_eq!(r.bytes().await.expect("body").as_ref(), &bytes[9990..]);
    // Beyond the end: 416 with the size.
    let r = app
        .send(
            Method::GET,
            &content,
            Some(&bob.token),
            None,
            &[("range", "bytes=20000-")],
        )
        .await;
    r.expect_error(416, "range_not_satisfiable", None);
    assert_eq!(r.header("content-range"), Some("bytes */10000"));
    // The ETag: 304 when the client holds it.
    let r = app
        .send(
            Method::GET,
            &content,
            Some(&bob.token),
            None,
            &[("if-none-match", &etag)],
        )
        .await;
    r.expect(304);
    assert_eq!(r.raw, "");
    // The same link in the message (signed) works without a token.
    let link = path_of(message["attachments"][0]["file_url"].as_str().expect("url"));
    assert_eq!(anonymous(&app, &link, &[]).await.status(), 200);
}

async fn an_upload_is_attached_once_by_its_uploader(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let c = app.direct(&alice, &bob).await;
    let mine = id_of(&upload(&app, &alice, "a.png", PNG).await);
    let theirs = id_of(&upload(&app, &bob, "b.png", PNG).await);
    let send = |attachments: Value| {
        let body = json!({"conversation_id": c, "message": "look", "attachments": attachments});
        let alice = &alice;
        let app = &app;
        async move { app.json(Method::POST, alice, "/v1/messages", &body).await }
    };
    // Someone else's upload, an unknown one, a malformed id: 400 naming it.
    send(json!([{"id": theirs}])).await.expect_error(
        400,
        "parameter_invalid",
        Some("attachments[0][id]"),
    );
    send(json!([{"file_url": "https://files.example/x", "filename": "x"}, {"id": UNKNOWN_ID}]))
        .await
        .expect_error(400, "parameter_invalid", Some("attachments[1][id]"));
    send(json!([{"id": "not-an-id"}])).await.expect_error(
        400,
        "parameter_invalid",
        Some("attachments[0][id]"),
    );
    // `id` beside the by-URL keys is not an attachment of either kind.
    send(json!([{"id": mine, "filename": "x"}]))
        .await
        .expect_error(400, "parameter_unknown", Some("attachments[0][filename]"));
    // Nothing was written by the refusals.
    let page = app
        .get(&alice, &format!("/v1/messages?conversation_id={c}"))
        .await;
    assert_eq!(page.expect(200)["data"], json!([]));
    // With a link beside it, in order.
    let sent = send(json!([
        {"file_url": "https://files.example/x", "filename": "x"},
        {"id": mine},
    ]))
    .await;
    let message = sent.expect(201).clone();
    assert_eq!(message["attachments"][1]["id"], mine.as_str());
    assert_eq!(message["attachments"][1]["filename"], "a.png");
    // Once only.
    send(json!([{"id": mine}])).await.expect_error(
        400,
        "parameter_invalid",
        Some("attachments[0][id]"),
    );
    // A message needs text or an attachment.
    app.json(
        Method::POST,
        &alice,
        "/v1/messages",
        &json!({"conversation_id": c}),
    )
    .await
    .expect_error(400, "parameter_missing", Some("message"));
    // Appended by PUT (its sender only, like any attachment).
    let later = id_of(&upload(&app, &alice, "later.png", PNG).await);
    let path = format!("/v1/messages/{}", id_of(&message));
    app.put(&bob, &path, &[("attachments[0][id]", &theirs)])
        .await
        .expect_error(403, "forbidden", None);
    let updated = app
        .put(&alice, &path, &[("attachments[0][id]", &later)])
        .await;
    let updated = updated.expect(200).clone();
    assert_eq!(updated["attachments"][2]["id"], later.as_str());
    // Bob sees it in the conversation's list of files.
    let files = app
        .get(&bob, &format!("/v1/attachments?conversation_id={c}"))
        .await;
    let ids: Vec<&str> = files.expect(200)["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|a| a["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert!(ids.contains(&mine.as_str()) && ids.contains(&later.as_str()));
    let of_message = app
        .get(
            &bob,
            &format!("/v1/attachments?message_id={}", id_of(&message)),
        )
        .await;
    assert_eq!(
        of_message.expect(200)["data"].as_array().map(Vec::len),
        Some(3)
    );
    let carol = app.user("carol").await;
    app.get(&carol, &format!("/v1/attachments?conversation_id={c}"))
        .await
        .expect_error(404, "not_found", Some("conversation_id"));
    app.get(
        &carol,
        &format!("/v1/attachments?message_id={}", id_of(&message)),
    )
    .await
    .expect_error(404, "not_found", Some("message_id"));
}

async fn the_uploader_renames_and_deletes(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let c = app.direct(&alice, &bob).await;
    let id = id_of(&upload(&app, &alice, "a.png", PNG).await);
    let message = app
        .json(
            Method::POST,
            &alice,
            "/v1/messages",
            &json!({"conversation_id": c, "message": "hi", "attachments": [{"id": id}]}),
        )
        .await
        .expect(201)
        .clone();
    let path = format!("/v1/attachments/{id}");
    app.put(&bob, &path, &[("filename", "mine.png")])
        .await
        .expect_error(403, "forbidden", None);
    for bad in ["a/b.png", "a\\b.png", "a\u{7}b", ""] {
        app.put(&alice, &path, &[("filename", bad)])
            .await
            .expect_error(400, "parameter_invalid", Some("filename"));
    }
    let renamed = app.put(&alice, &path, &[("filename", "renamed.png")]).await;
    assert_eq!(renamed.expect(200)["filename"], "renamed.png");
    let seen = app
        .get(&bob, &format!("/v1/messages/{}", id_of(&message)))
        .await;
    assert_eq!(
        seen.expect(200)["attachments"][0]["filename"],
        "renamed.png"
    );
    app.delete(&bob, &path)
        .await
        .expect_error(403, "forbidden", None);
    app.delete(&alice, &path).await.expect(204);
    app.delete(&alice, &path)
        .await
        .expect_error(404, "not_found", None);
    app.get(&alice, &format!("{path}/content"))
        .await
        .expect_error(404, "not_found", None);
    let seen = app
        .get(&bob, &format!("/v1/messages/{}", id_of(&message)))
        .await;
    assert_eq!(seen.expect(200)["attachments"], json!([]));
    // Its bytes are gone from the storage at once.
    assert!(!app.file_exists(&id).await);
}

async fn bad_uploads_are_refused_and_store_nothing(app: TestApp) {
    let alice = app.user("alice").await;
    let post = |ct: String, body: Vec<u8>| {
        let app = &app;
        let alice = &alice;
        async move {
            app.send(
                Method::POST,
                "/v1/attachments",
                Some(&alice.token),
                Some((&ct, body)),
                &[],
            )
            .await
        }
    };
    let (ct, body) = multipart(&[("filename", None, None, b"x.png")]);
    post(ct, body)
        .await
        .expect_error(400, "parameter_missing", Some("file"));
    let (ct, body) = multipart(&[
        ("file", Some("a.png"), None, PNG),
        ("file", Some("b.png"), None, PNG),
    ]);
    post(ct, body)
        .await
        .expect_error(400, "parameter_invalid", Some("file"));
    let (ct, body) = multipart(&[
        ("file", Some("a.png"), None, PNG),
        ("colour", None, None, b"blue"),
    ]);
    post(ct, body)
        .await
        .expect_error(400, "parameter_unknown", Some("colour"));
    for name in ["../etc/passwd", "a\\b.png", "a\u{1}b"] {
        let (ct, body) = multipart(&[
            ("file", Some("a.png"), None, PNG),
            ("filename", None, None, name.as_bytes()),
        ]);
        post(ct, body)
            .await
            .expect_error(400, "parameter_invalid", Some("filename"));
    }
    let (ct, body) = multipart(&[("file", None, None, PNG)]);
    post(ct, body)
        .await
        .expect_error(400, "parameter_missing", Some("filename"));
    // A body cut short.
    let (ct, mut body) = multipart(&[("file", Some("a.png"), None, PNG)]);
    body.truncate(body.len() - 20);
    post(ct, body).await.expect_error(400, "body_invalid", None);
    // Not multipart.
    post("application/json".into(), b"{}".to_vec())
        .await
        .expect_error(415, "unsupported_media_type", None);
    assert_eq!(
        app.get(&alice, "/v1/attachments").await.expect(200)["data"],
        json!([])
    );
    assert!(
        app.stored_files().is_empty(),
        "nothing stored: {:?}",
        app.stored_files()
    );
}

async fn an_upload_over_the_limit_is_refused_even_chunked(backend: confab_tests::db::Backend) {
    let app = TestApp::spawn_with_service(backend, |s| s.with_max_upload_bytes(100_000)).await;
    let alice = app.user("alice").await;
    let big = vec![7u8; 300_000];
    let (ct, body) = multipart(&[("file", Some("big.bin"), None, &big)]);
    // Declared: refused before it is read.
    app.send(
        Method::POST,
        "/v1/attachments",
        Some(&alice.token),
        Some((&ct, body.clone())),
        &[],
    )
    .await
    .expect_error(413, "payload_too_large", Some("file"));
    // Chunked (no length): refused once it passes the limit.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        body.chunks(16 * 1024).map(|c| Ok(c.to_vec())).collect();
    let r = app
        .client
        .post(format!("{}/v1/attachments", app.base_url))
        .bearer_auth(&alice.token)
        .header("content-type", ct)
        .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
            chunks,
        )))
        .send()
        .await;
    // The server may close before the client has sent everything: then
    // the client sees the answer or a reset, never a 2xx.
    if let Ok(r) = r {
        assert_eq!(r.status(), 413);
        let body: Value = r.json().await.expect("json");
        assert_eq!(body["code"], "payload_too_large");
    }
    // Under the limit is fine.
    upload(&app, &alice, "small.bin", &vec![1u8; 99_000]).await;
    assert_eq!(
        app.get(&alice, "/v1/attachments").await.expect(200)["data"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    // Only the one upload's file: nothing of the refused ones.
    if app.files.dir.is_some() {
        assert_eq!(app.stored_files().len(), 1, "{:?}", app.stored_files());
    }
}

async fn by_url_attachments_may_not_name_private_addresses(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let c = app.direct(&alice, &bob).await;
    for url in [
        "http://169.254.169.254/latest/meta-data",
        "http://127.0.0.1/x",
        "http://10.1.2.3/x",
        "http://[::1]/x",
        "http://[fe80::1]/x",
        "http://2130706433/x",
        "http://0x7f.1/x",
        "http://localhost/x",
        "https://192.168.0.1:8443/x",
    ] {
        app.post(
            &alice,
            "/v1/messages",
            &[
                ("conversation_id", &c),
                ("message", "x"),
                ("attachments[0][file_url]", url),
                ("attachments[0][filename]", "x"),
            ],
        )
        .await
        .expect_error(400, "parameter_invalid", Some("attachments[0][file_url]"));
    }
    app.post(
        &alice,
        "/v1/messages",
        &[
            ("conversation_id", &c),
            ("message", "x"),
            ("attachments[0][file_url]", "https://93.184.215.14/x"),
            ("attachments[0][filename]", "x"),
        ],
    )
    .await
    .expect(201);
}

async fn files_of_deleted_things_go_and_unattached_uploads_expire(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let c = app.direct(&alice, &bob).await;
    let send_with = |id: String| {
        let app = &app;
        let alice = &alice;
        let c = c.clone();
        async move {
            app.json(
                Method::POST,
                alice,
                "/v1/messages",
                &json!({"conversation_id": c, "attachments": [{"id": id}]}),
            )
            .await
            .expect(201)
            .clone()
        }
    };
    let in_message = id_of(&upload(&app, &alice, "m.png", PNG).await);
    let message = send_with(in_message.clone()).await;
    let in_conversation = id_of(&upload(&app, &alice, "c.png", PNG).await);
    send_with(in_conversation.clone()).await;
    let never_attached = id_of(&upload(&app, &alice, "n.png", PNG).await);
    let fresh = id_of(&upload(&app, &alice, "f.png", PNG).await);

    app.delete(&alice, &format!("/v1/messages/{}", id_of(&message)))
        .await
        .expect(204);
    app.delete(&alice, &format!("/v1/conversations/{c}"))
        .await
        .expect(204);
    // A day later for the one never attached (the clock of its row moved).
    let quoted = format!("'{never_attached}'");
    execute(
        app.database_url(),
        app.backend,
        &format!(
            "UPDATE file_deletions SET due_at = 0 WHERE CAST(attachment_id AS TEXT) = {quoted}"
        ),
    );
    // The server's own sweeper (every 30 s) may take some of them first.
    app.service.sweep_files().await.expect("sweep");
    for gone in [&in_message, &in_conversation, &never_attached] {
        assert!(!app.file_exists(gone).await, "{gone} still stored");
    }
    app.get(&alice, &format!("/v1/attachments/{never_attached}"))
        .await
        .expect_error(404, "not_found", None);
    // The fresh upload stays: not due for a day.
    assert!(app.file_exists(&fresh).await);
    app.get(&alice, &format!("/v1/attachments/{fresh}"))
        .await
        .expect(200);
    // The expired upload's uploader learns it is gone, and its earlier
    // event no longer names the file (events are listed once every older
    // transaction has ended: polled).
    let gone = json!({"id": never_attached});
    let scrubbed = json!({"id": never_attached, "deleted": true});
    crate::support::eventually(|| async {
        let r = app
            .send(
                Method::GET,
                "/v1/events?limit=100",
                Some(&alice.token),
                None,
                &[("accept", "application/json")],
            )
            .await;
        let events = r.expect(200)["data"].as_array().expect("data").clone();
        let deleted = events
            .iter()
            .any(|e| e["type"] == "attachment.deleted" && e["payload"] == gone);
        let created = events.iter().find(|e| {
            e["type"] == "attachment.created" && e["payload"]["id"] == never_attached.as_str()
        });
        deleted && created.is_some_and(|e| e["payload"] == scrubbed)
    })
    .await;
    // Nothing more is due.
    assert_eq!(app.service.sweep_files().await.expect("sweep"), 0);
}

async fn uploads_make_events_for_whoever_sees_them(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let c = app.direct(&alice, &bob).await;
    let id = id_of(&upload(&app, &alice, "a.png", PNG).await);
    let events = |user: &User| {
        let app = &app;
        let token = user.token.clone();
        async move {
            app.send(
                Method::GET,
                "/v1/events?limit=100",
                Some(&token),
                None,
                &[("accept", "application/json")],
            )
            .await
            .expect(200)["data"]
                .as_array()
                .expect("data")
                .clone()
        }
    };
    let types = |list: &[Value]| -> Vec<String> {
        list.iter()
            .filter(|e| {
                e["type"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("attachment."))
            })
            .map(|e| e["type"].as_str().expect("type").to_owned())
            .collect()
    };
    crate::support::eventually(|| async { types(&events(&alice).await) == ["attachment.created"] })
        .await;
    assert!(types(&events(&bob).await).is_empty());
    app.json(
        Method::POST,
        &alice,
        "/v1/messages",
        &json!({"conversation_id": c, "message": "hi", "attachments": [{"id": id}]}),
    )
    .await
    .expect(201);
    app.put(
        &alice,
        &format!("/v1/attachments/{id}"),
        &[("filename", "b.png")],
    )
    .await
    .expect(200);
    crate::support::eventually(|| async { types(&events(&bob).await) == ["attachment.updated"] })
        .await;
    let renamed = events(&bob)
        .await
        .into_iter()
        .find(|e| e["type"] == "attachment.updated")
        .expect("updated");
    assert_eq!(renamed["payload"]["filename"], "b.png");
    assert_eq!(renamed["payload"]["id"], id.as_str());
}

async fn files_go_with_their_group_and_their_contact(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let group = crate::support::new_group(&app, &alice, "team", &[&bob]).await;
    let conversation = crate::support::group_conversation(&app, &alice, &group).await;
    let in_group = id_of(&upload(&app, &alice, "g.png", PNG).await);
    app.json(
        Method::POST,
        &alice,
        "/v1/messages",
        &json!({"conversation_id": conversation, "attachments": [{"id": in_group}]}),
    )
    .await
    .expect(201);
    // Carol's files: one sent to Bob, one never attached.
    let direct = app.direct(&carol, &bob).await;
    let sent = id_of(&upload(&app, &carol, "c.png", PNG).await);
    app.json(
        Method::POST,
        &carol,
        "/v1/messages",
        &json!({"conversation_id": direct, "attachments": [{"id": sent}]}),
    )
    .await
    .expect(201);
    let kept_aside = id_of(&upload(&app, &carol, "k.png", PNG).await);

    app.delete(&alice, &format!("/v1/groups/{group}"))
        .await
        .expect(204);
    // Carol erased through the server API (the right to be forgotten).
    let key = app
        .service
        .create_server_key("files test")
        .await
        .expect("key")
        .secret;
    app.send(
        Method::DELETE,
        &format!("/v1/admin/contacts/{}", carol.id),
        Some(&key),
        None,
        &[],
    )
    .await
    .expect(204);
    app.service.sweep_files().await.expect("sweep");
    for gone in [&in_group, &sent, &kept_aside] {
        assert!(!app.file_exists(gone).await, "{gone} still stored");
    }
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    files_go_with_their_group_and_their_contact,
    an_upload_is_its_uploader_s_with_its_type_from_its_bytes,
    a_signed_link_serves_the_bytes_safely,
    a_bearer_member_reads_ranges_and_etags,
    an_upload_is_attached_once_by_its_uploader,
    the_uploader_renames_and_deletes,
    bad_uploads_are_refused_and_store_nothing,
    by_url_attachments_may_not_name_private_addresses,
    files_of_deleted_things_go_and_unattached_uploads_expire,
    uploads_make_events_for_whoever_sees_them,
);

mod limits {
    confab_tests::on_both_stores!(
        crate::support::on_backend;
        an_upload_over_the_limit_is_refused_even_chunked,
    );
    use super::an_upload_over_the_limit_is_refused_even_chunked;
}
