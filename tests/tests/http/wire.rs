//! docs/api.md "Requests and answers" to 3: the wire format (content types, body encodings,
//! unknown parameters, booleans, ids, timestamps, success codes), the error
//! body, and bearer authentication.

use std::time::{Duration, Instant};

use confab_tests::http::{encode_form, Resp, TestApp, User};
use reqwest::Method;
use serde_json::json;

use crate::support::{assert_id, assert_recent, pair, UNKNOWN_ID};

const FORM: &str = "application/x-www-form-urlencoded";
const JSON: &str = "application/json";

#[track_caller]
fn assert_json_type(r: &Resp) {
    let ct = r.header("content-type").unwrap_or_default();
    assert!(
        ct.starts_with("application/json"),
        "status {}: content type {ct:?}, body {}",
        r.status,
        r.raw
    );
    assert!(
        r.body.is_object(),
        "status {}: body is not a JSON object: {}",
        r.status,
        r.raw
    );
}

/// The path of a `Location` header (relative or absolute).
#[track_caller]
fn location_path(app: &TestApp, r: &Resp) -> String {
    let loc = r.header("location").expect("Location header").to_owned();
    loc.strip_prefix(&app.base_url)
        .map_or(loc.clone(), str::to_owned)
}

/// `user` sends `body` with the given content type.
async fn send_body(
    app: &TestApp,
    method: Method,
    user: &User,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Resp {
    app.send(
        method,
        path,
        Some(&user.token),
        Some((content_type, body)),
        &[],
    )
    .await
}

async fn send_form(app: &TestApp, method: Method, user: &User, path: &str, body: &str) -> Resp {
    send_body(app, method, user, path, FORM, body.as_bytes().to_vec()).await
}

// ---------------------------------------------------------------- responses

async fn responses_are_json_also_errors(app: TestApp) {
    let (alice, _bob, conv) = pair(&app).await;

    let r = app.get(&alice, "/v1/conversations").await;
    r.expect(200);
    assert_json_type(&r);

    let r = app
        .post(
            &alice,
            "/v1/messages",
            &[("conversation_id", &conv), ("message", "hi")],
        )
        .await;
    r.expect(201);
    assert_json_type(&r);

    let r = app
        .post(&alice, "/v1/messages", &[("conversation_id", &conv)])
        .await;
    r.expect_error(400, "parameter_missing", Some("message"));
    assert_json_type(&r);

    let r = app
        .send(Method::GET, "/v1/conversations", None, None, &[])
        .await;
    r.expect_error(401, "unauthorized", None);
    assert_json_type(&r);

    let r = app.get(&alice, "/v1/conversations/not-an-id").await;
    r.expect_error(404, "not_found", None);
    assert_json_type(&r);
}

async fn unknown_route_is_json_404(app: TestApp) {
    let alice = app.user("alice").await;
    for path in [
        "/v1/nothing-here",
        "/v1/messages/x/y/z",
        "/nothing-here",
        "/v2/messages",
    ] {
        let r = app.get(&alice, path).await;
        r.expect_error(404, "not_found", None);
        assert_json_type(&r);
    }
}

#[track_caller]
fn assert_allow(r: &Resp, methods: &[&str]) {
    let allow = r.header("allow").expect("Allow header").to_uppercase();
    let listed: Vec<&str> = allow.split(',').map(str::trim).collect();
    for m in methods {
        assert!(listed.contains(m), "Allow {allow:?} lacks {m}");
    }
}

async fn wrong_method_is_405_with_allow(app: TestApp) {
    let (alice, _bob, conv) = pair(&app).await;
    let msg = app.send_message(&alice, &conv, "hi").await;
    let msg_id = msg["id"].as_str().expect("id");

    let r = app
        .send(Method::PATCH, "/v1/messages", Some(&alice.token), None, &[])
        .await;
    r.expect_error(405, "method_not_allowed", None);
    assert_json_type(&r);
    assert_allow(&r, &["GET", "POST"]);

    let r = app
        .post(
            &alice,
            &format!("/v1/messages/{msg_id}"),
            &[("message", "x")],
        )
        .await;
    r.expect_error(405, "method_not_allowed", None);
    assert_json_type(&r);
    assert_allow(&r, &["GET", "PUT", "DELETE"]);

    let r = app
        .send(
            Method::PUT,
            "/v1/conversations",
            Some(&alice.token),
            None,
            &[],
        )
        .await;
    r.expect_error(405, "method_not_allowed", None);
    assert_allow(&r, &["GET", "POST"]);

    let r = app
        .post(&alice, &format!("/v1/conversations/{conv}"), &[])
        .await;
    r.expect_error(405, "method_not_allowed", None);
    assert_allow(&r, &["GET", "PUT", "DELETE"]);

    // The refused POST sent nothing.
    let list = app.get(&alice, "/v1/messages").await;
    assert_eq!(list.expect(200)["data"].as_array().expect("data").len(), 1);
}

// ------------------------------------------------------------- body formats

async fn other_body_types_are_415(app: TestApp) {
    let (alice, _bob, conv) = pair(&app).await;
    let text_body = format!("conversation_id={conv}&message=hi");
    let r = send_body(
        &app,
        Method::POST,
        &alice,
        "/v1/messages",
        "text/plain",
        text_body.into_bytes(),
    )
    .await;
    r.expect_error(415, "unsupported_media_type", None);
    assert_json_type(&r);

    let boundary = "XyZzY";
    let multipart = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"conversation_id\"\r\n\r\n{conv}\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"message\"\r\n\r\nhi\r\n--{boundary}--\r\n"
    );
    let r = send_body(
        &app,
        Method::POST,
        &alice,
        "/v1/messages",
        &format!("multipart/form-data; boundary={boundary}"),
        multipart.into_bytes(),
    )
    .await;
    r.expect_error(415, "unsupported_media_type", None);
    assert_json_type(&r);

    let r = send_body(
        &app,
        Method::PUT,
        &alice,
        &format!("/v1/conversations/{conv}"),
        "application/xml",
        b"<is_muted>true</is_muted>".to_vec(),
    )
    .await;
    r.expect_error(415, "unsupported_media_type", None);

    // Nothing was sent or changed.
    let list = app.get(&alice, "/v1/messages").await;
    assert_eq!(list.expect(200)["data"], json!([]));
    let c = app.get(&alice, "/v1/conversations").await;
    assert_eq!(c.expect(200)["data"][0]["is_muted"], false);
}

async fn body_over_64_kib_is_413(app: TestApp) {
    let (alice, _bob, conv) = pair(&app).await;
    let body = format!("conversation_id={conv}&message={}", "a".repeat(66 * 1024));
    let r = send_form(&app, Method::POST, &alice, "/v1/messages", &body).await;
    r.expect_error(413, "payload_too_large", None);
    assert_json_type(&r);

    let body = json!({"conversation_id": conv, "message": "b".repeat(70_000)}).to_string();
    let r = send_body(
        &app,
        Method::POST,
        &alice,
        "/v1/messages",
        JSON,
        body.into_bytes(),
    )
    .await;
    r.expect_error(413, "payload_too_large", None);

    let list = app.get(&alice, "/v1/messages").await;
    assert_eq!(list.expect(200)["data"], json!([]));
}

async fn body_of_60_kib_passes_the_size_check(app: TestApp) {
    let (alice, _bob, conv) = pair(&app).await;
    // 4096 four-byte characters (12 bytes each percent-encoded) plus six
    // long attachment URLs: a valid request of about 60 KiB.
    let text = "\u{1F600}".repeat(4096);
    let urls: Vec<String> = (0..6)
        .map(|i| format!("https://files.example/{i}/{}", "u".repeat(1950)))
        .collect();
    let names: Vec<String> = (0..6).map(|i| format!("f{i}.bin")).collect();
    let url_keys: Vec<String> = (0..6)
        .map(|i| format!("attachments[{i}][file_url]"))
        .collect();
    let name_keys: Vec<String> = (0..6)
        .map(|i| format!("attachments[{i}][filename]"))
        .collect();
    let mut pairs: Vec<(&str, &str)> = vec![("conversation_id", &conv), ("message", &text)];
    for i in 0..6 {
        pairs.push((&url_keys[i], &urls[i]));
        pairs.push((&name_keys[i], &names[i]));
    }
    let body = encode_form(&pairs);
    assert!(
        (60 * 1024..64 * 1024).contains(&body.len()),
        "test body is {} bytes",
        body.len()
    );
    let r = send_form(&app, Method::POST, &alice, "/v1/messages", &body).await;
    let m = r.expect(201);
    assert_eq!(m["message"], text.as_str());
    assert_eq!(m["attachments"].as_array().expect("attachments").len(), 6);
    assert_eq!(m["attachments"][5]["file_url"], urls[5].as_str());
}

async fn undecodable_bodies_are_body_invalid(app: TestApp) {
    let (alice, _bob, conv) = pair(&app).await;
    let json_bodies: Vec<Vec<u8>> = vec![
        br#"{"conversation_id": "#.to_vec(),
        b"not json at all".to_vec(),
        format!(r#"[{{"conversation_id": "{conv}", "message": "hi"}}]"#).into_bytes(),
        b"\"just a string\"".to_vec(),
        {
            let mut b = format!(r#"{{"conversation_id": "{conv}", "message": ""#).into_bytes();
            b.extend_from_slice(&[0xff, 0xfe]);
            b.extend_from_slice(b"\"}");
            b
        },
    ];
    for body in json_bodies {
        let shown = String::from_utf8_lossy(&body).into_owned();
        let r = send_body(&app, Method::POST, &alice, "/v1/messages", JSON, body).await;
        assert_eq!(r.status.as_u16(), 400, "body {shown:?} -> {}", r.raw);
        r.expect_error(400, "body_invalid", None);
        assert_json_type(&r);
    }

    // Invalid UTF-8 in a form, raw and percent-encoded.
    let mut raw = format!("conversation_id={conv}&message=").into_bytes();
    raw.extend_from_slice(&[b'h', 0xff, 0xfe, b'i']);
    let encoded = format!("conversation_id={conv}&message=h%FF%FEi").into_bytes();
    for body in [raw, encoded] {
        let shown = String::from_utf8_lossy(&body).into_owned();
        let r = send_body(&app, Method::POST, &alice, "/v1/messages", FORM, body).await;
        assert_eq!(r.status.as_u16(), 400, "body {shown:?} -> {}", r.raw);
        r.expect_error(400, "body_invalid", None);
    }

    let list = app.get(&alice, "/v1/messages").await;
    assert_eq!(list.expect(200)["data"], json!([]));
}

async fn brackets_raw_and_percent_encoded(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let m = app.send_message(&alice, &conv, "react to me").await;
    let path = format!("/v1/messages/{}", m["id"].as_str().expect("id"));

    let r = send_form(
        &app,
        Method::PUT,
        &bob,
        &path,
        "reactions%5Blike%5D%5B%5D=bob",
    )
    .await;
    assert_eq!(r.expect(200)["reactions"], json!([{"like": ["bob"]}]));

    let r = send_form(&app, Method::PUT, &alice, &path, "reactions[like][]=alice").await;
    assert_eq!(
        r.expect(200)["reactions"],
        json!([{"like": ["bob", "alice"]}])
    );

    // Attachments with encoded brackets too.
    let body = format!(
        "conversation_id={conv}&message=file&attachments%5B0%5D%5Bfile_url%5D=https%3A%2F%2Fx.example%2Fa.png&attachments%5B0%5D%5Bfilename%5D=a.png"
    );
    let r = send_form(&app, Method::POST, &alice, "/v1/messages", &body).await;
    let m = r.expect(201);
    assert_eq!(m["attachments"][0]["file_url"], "https://x.example/a.png");
    assert_eq!(m["attachments"][0]["filename"], "a.png");
}

async fn json_body_equals_form_body(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let from_form = app
        .post(
            &alice,
            "/v1/messages",
            &[
                ("conversation_id", &conv),
                ("message", "same"),
                ("attachments[0][file_url]", "https://x.example/a.png"),
                ("attachments[0][filename]", "a.png"),
                ("attachments[0][file_type]", "image/png"),
                ("attachments[0][file_size]", "1234"),
            ],
        )
        .await;
    let from_form = from_form.expect(201).clone();
    let from_json = app
        .json(
            Method::POST,
            &alice,
            "/v1/messages",
            &json!({
                "conversation_id": conv,
                "message": "same",
                "attachments": [{
                    "file_url": "https://x.example/a.png",
                    "filename": "a.png",
                    "file_type": "image/png",
                    "file_size": 1234
                }]
            }),
        )
        .await;
    let from_json = from_json.expect(201).clone();
    for key in [
        "conversation_id",
        "message",
        "contact",
        "reactions",
        "read_at",
        "updated_at",
    ] {
        assert_eq!(from_form[key], from_json[key], "field {key}");
    }
    for key in ["filename", "file_url", "file_type", "file_size"] {
        assert_eq!(
            from_form["attachments"][0][key], from_json["attachments"][0][key],
            "attachment field {key}"
        );
    }
    assert_eq!(from_json["attachments"][0]["file_size"], 1234);
    assert_ne!(from_form["id"], from_json["id"]);

    // Reactions and conversation attributes in JSON.
    let path = format!("/v1/messages/{}", from_json["id"].as_str().expect("id"));
    let r = app
        .json(
            Method::PUT,
            &bob,
            &path,
            &json!({"reactions": {"like": ["bob"]}}),
        )
        .await;
    assert_eq!(r.expect(200)["reactions"], json!([{"like": ["bob"]}]));
    let r = app
        .json(
            Method::PUT,
            &alice,
            &format!("/v1/conversations/{conv}"),
            &json!({"is_muted": true, "is_pinned": false}),
        )
        .await;
    let c = r.expect(200);
    assert_eq!(c["is_muted"], true);
    assert_eq!(c["is_pinned"], false);

    // A JSON value of the wrong type is a parameter error, not a body error.
    let r = app
        .json(
            Method::PUT,
            &alice,
            &format!("/v1/conversations/{conv}"),
            &json!({"is_muted": "maybe"}),
        )
        .await;
    r.expect_error(400, "parameter_invalid", Some("is_muted"));
}

async fn empty_body_means_no_attributes(app: TestApp) {
    let (alice, _bob, conv) = pair(&app).await;
    let m = app.send_message(&alice, &conv, "unchanged").await;
    let path = format!("/v1/messages/{}", m["id"].as_str().expect("id"));

    let r = app
        .send(Method::PUT, &path, Some(&alice.token), None, &[])
        .await;
    let after = r.expect(200);
    assert_eq!(after["message"], "unchanged");
    assert!(
        after["updated_at"].is_null(),
        "updated_at: {}",
        after["updated_at"]
    );
    assert_eq!(after, &m);

    // An empty form body is the same.
    let r = send_form(&app, Method::PUT, &alice, &path, "").await;
    assert_eq!(r.expect(200), &m);

    let before = app.get(&alice, "/v1/conversations").await.expect(200)["data"][0].clone();
    let r = app
        .send(
            Method::PUT,
            &format!("/v1/conversations/{conv}"),
            Some(&alice.token),
            None,
            &[],
        )
        .await;
    assert_eq!(r.expect(200), &before);
}

async fn unknown_parameters_are_rejected(app: TestApp) {
    let (alice, _bob, conv) = pair(&app).await;
    for (key, value) in [
        ("id", UNKNOWN_ID),
        ("created_at", "1700000000"),
        ("contact", "x"),
        ("updated_at", "1700000000"),
        ("read_at", "1700000000"),
    ] {
        let r = app
            .post(
                &alice,
                "/v1/messages",
                &[("conversation_id", &conv), ("message", "hi"), (key, value)],
            )
            .await;
        r.expect_error(400, "parameter_unknown", Some(key));
    }
    let r = app
        .json(
            Method::POST,
            &alice,
            "/v1/messages",
            &json!({"conversation_id": conv, "message": "hi", "contact": {"id": UNKNOWN_ID}}),
        )
        .await;
    r.expect_error(400, "parameter_unknown", Some("contact"));

    let r = app.get(&alice, "/v1/messages?colour=blue").await;
    r.expect_error(400, "parameter_unknown", Some("colour"));
    let r = app.get(&alice, "/v1/conversations?limit=5&sort=asc").await;
    r.expect_error(400, "parameter_unknown", Some("sort"));

    let r = app
        .put(
            &alice,
            &format!("/v1/conversations/{conv}"),
            &[("contact_id", UNKNOWN_ID)],
        )
        .await;
    r.expect_error(400, "parameter_unknown", Some("contact_id"));

    let list = app.get(&alice, "/v1/messages").await;
    assert_eq!(list.expect(200)["data"], json!([]));
}

async fn booleans_true_false_one_zero(app: TestApp) {
    let (alice, _bob, conv) = pair(&app).await;
    let path = format!("/v1/conversations/{conv}");
    for (value, want) in [("true", true), ("false", false), ("1", true), ("0", false)] {
        let r = app.put(&alice, &path, &[("is_muted", value)]).await;
        assert_eq!(r.expect(200)["is_muted"], want, "is_muted={value}");
        let r = app
            .get(&alice, &format!("/v1/conversations?muted={value}"))
            .await;
        let data = r.expect(200)["data"].as_array().expect("data").clone();
        // After setting is_muted=want, filtering muted=value finds it.
        assert_eq!(data.len(), 1, "muted={value}");
    }
    // Leave it muted, then try values that are not booleans.
    app.put(&alice, &path, &[("is_muted", "true")])
        .await
        .expect(200);
    for bad in ["yes", "no", "TRUE_", "2", ""] {
        let r = app.put(&alice, &path, &[("is_muted", bad)]).await;
        r.expect_error(400, "parameter_invalid", Some("is_muted"));
    }
    let r = app.get(&alice, "/v1/conversations?muted=yes").await;
    r.expect_error(400, "parameter_invalid", Some("muted"));
    let r = app.get(&alice, "/v1/conversations?pinned=2").await;
    r.expect_error(400, "parameter_invalid", Some("pinned"));
    let c = app.get(&alice, "/v1/conversations").await;
    assert_eq!(c.expect(200)["data"][0]["is_muted"], true);
}

// ---------------------------------------------------------- authentication

#[track_caller]
fn assert_401(r: &Resp) {
    r.expect_error(401, "unauthorized", None);
    assert_json_type(r);
    let www = r
        .header("www-authenticate")
        .expect("WWW-Authenticate header");
    assert!(www.starts_with("Bearer"), "WWW-Authenticate: {www:?}");
}

/// The challenge of a 401: a bare `Bearer` when no token came, with
/// `error="invalid_token"` and a description when one came and was
/// refused (RFC 6750 section 3).
#[track_caller]
fn assert_challenge(r: &Resp, token_refused: bool) {
    let www = r
        .header("www-authenticate")
        .expect("WWW-Authenticate header");
    if token_refused {
        assert!(
            www.starts_with("Bearer error=\"invalid_token\", error_description=\""),
            "WWW-Authenticate: {www:?}"
        );
        assert!(www.ends_with('"') && www.len() > 60, "{www:?}");
    } else {
        assert_eq!(www, "Bearer");
    }
}

async fn missing_or_malformed_token_is_401(app: TestApp) {
    let alice = app.user("alice").await;
    let r = app
        .send(Method::GET, "/v1/conversations", None, None, &[])
        .await;
    assert_401(&r);
    let longer = format!("Bearer {}x", alice.token);
    for header in [
        "Basic YWxpY2U6c2VjcmV0",
        "Bearer",
        "Bearer ",
        "Token abc",
        alice.token.as_str(),
        longer.as_str(),
        "Bearer cfb_0000000000000000000000000000000000000000000000000000000000000000",
    ] {
        let r = app
            .send(
                Method::GET,
                "/v1/conversations",
                None,
                None,
                &[("Authorization", header)],
            )
            .await;
        assert_eq!(r.status.as_u16(), 401, "Authorization: {header:?}");
        assert_401(&r);
        // A Bearer token came (misshapen or unknown): it is refused as
        // such; no token, or another scheme, only asks for one.
        let came = header.starts_with("Bearer ") && header.len() > "Bearer ".len();
        assert_challenge(&r, came);
    }
    // Also on writes: nothing happens without a valid token.
    let r = app
        .send(
            Method::POST,
            "/v1/conversations",
            Some("cfb_nope"),
            Some((FORM, format!("contact_id={}", alice.id).into_bytes())),
            &[],
        )
        .await;
    assert_401(&r);
    assert_challenge(&r, true);
    // The real token works.
    app.get(&alice, "/v1/conversations").await.expect(200);
}

async fn token_in_query_string_is_not_accepted(app: TestApp) {
    let alice = app.user("alice").await;
    for q in ["access_token", "token", "bearer", "auth"] {
        let r = app
            .send(
                Method::GET,
                &format!("/v1/conversations?{q}={}", alice.token),
                None,
                None,
                &[],
            )
            .await;
        assert_eq!(r.status.as_u16(), 401, "?{q}= -> {}", r.raw);
        assert_401(&r);
    }
}

async fn revoked_token_is_401(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    app.get(&alice, "/v1/conversations").await.expect(200);
    let revoked = app.service.revoke_tokens("alice").await.expect("revoke");
    assert_eq!(revoked, 1);
    // A revocation takes effect within 5 seconds.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(6);
    loop {
        let r = app.get(&alice, "/v1/conversations").await;
        if r.status.as_u16() == 401 {
            // Revoked is not expired: a client must not refresh it.
            assert_401(&r);
            assert_challenge(&r, true);
            break;
        }
        r.expect(200);
        assert!(
            tokio::time::Instant::now() < deadline,
            "revoked token still accepted after 6 s"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // Other contacts are untouched, and a new token works.
    app.get(&bob, "/v1/conversations").await.expect(200);
    let fresh = app.service.issue_token("alice", None).await.expect("issue");
    let r = app
        .send(Method::GET, "/v1/conversations", Some(&fresh), None, &[])
        .await;
    r.expect(200);
}

/// An expired token is 401 `token_expired` (the client gets a new one),
/// from the instant it expires: also while this process still trusts its
/// earlier lookup (a few seconds), and once it asks the store again.
async fn expired_token_is_401_token_expired(app: TestApp) {
    let alice = app.user("alice").await;
    let issued = Instant::now();
    let short = app
        .service
        .issue_token("alice", Some(2))
        .await
        .expect("issue");
    let r = app
        .send(Method::GET, "/v1/conversations", Some(&short), None, &[])
        .await;
    r.expect(200);
    let expired = |r: &Resp| {
        r.expect_error(401, "token_expired", None);
        assert_json_type(r);
        assert_challenge(r, true);
    };
    // Past its expiry, within the 3 s its lookup is trusted.
    tokio::time::sleep_until((issued + Duration::from_millis(2_300)).into()).await;
    let r = app
        .send(Method::GET, "/v1/conversations", Some(&short), None, &[])
        .await;
    expired(&r);
    // Asked of the store again: the same answer, on writes too.
    tokio::time::sleep_until((issued + Duration::from_millis(3_600)).into()).await;
    let r = app
        .send(
            Method::POST,
            "/v1/conversations",
            Some(&short),
            Some((FORM, format!("contact_id={}", alice.id).into_bytes())),
            &[],
        )
        .await;
    expired(&r);
    // Her lasting token is untouched.
    app.get(&alice, "/v1/conversations").await.expect(200);
}

/// A token revoked before it expired stays `unauthorized` after its
/// expiry: only a token that would still be good but for its age is
/// `token_expired`.
async fn revoked_then_expired_token_is_unauthorized(app: TestApp) {
    let _alice = app.user("alice").await;
    let issued = Instant::now();
    let short = app
        .service
        .issue_token("alice", Some(1))
        .await
        .expect("issue");
    app.service.revoke_tokens("alice").await.expect("revoke");
    tokio::time::sleep_until((issued + Duration::from_millis(1_300)).into()).await;
    let r = app
        .send(Method::GET, "/v1/conversations", Some(&short), None, &[])
        .await;
    assert_401(&r);
    assert_challenge(&r, true);
}

async fn healthz_needs_no_token(app: TestApp) {
    let r = app.send(Method::GET, "/healthz", None, None, &[]).await;
    r.expect(200);
}

// ------------------------------------------------ codes, ids and timestamps

async fn created_resources_have_location(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let r = app
        .post(&alice, "/v1/conversations", &[("contact_id", &bob.id)])
        .await;
    let conv = r.expect(201).clone();
    let path = location_path(&app, &r);
    let conv_id = conv["id"].as_str().expect("id");
    assert_eq!(path, format!("/v1/conversations/{conv_id}"));
    let got = app.get(&alice, &path).await;
    assert_eq!(got.expect(200)["id"], conv_id);

    let r = app
        .post(
            &alice,
            "/v1/messages",
            &[("conversation_id", conv_id), ("message", "hi")],
        )
        .await;
    let msg = r.expect(201).clone();
    let path = location_path(&app, &r);
    let msg_id = msg["id"].as_str().expect("id");
    assert_eq!(path, format!("/v1/messages/{msg_id}"));
    let got = app.get(&bob, &path).await;
    // phone numbers are private: docs/api.md "Blocks and reports". The sender's answer
    // carries her number; bob sees it null.
    let got = got.expect(200);
    assert!(got["contact"]["phone_number"].is_null(), "{got}");
    assert_eq!(msg["contact"]["phone_number"], "+15550100");
    let mut as_others_see = msg.clone();
    as_others_see["contact"]["phone_number"] = serde_json::Value::Null;
    assert_eq!(got, &as_others_see);
}

async fn delete_is_204_empty_then_404(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let m = app.send_message(&alice, &conv, "bye").await;
    let path = format!("/v1/messages/{}", m["id"].as_str().expect("id"));

    let r = app.delete(&alice, &path).await;
    r.expect(204);
    assert_eq!(r.raw, "", "204 must have an empty body");
    let r = app.delete(&alice, &path).await;
    r.expect_error(404, "not_found", None);
    assert_json_type(&r);
    app.get(&bob, &path)
        .await
        .expect_error(404, "not_found", None);

    let path = format!("/v1/conversations/{conv}");
    let r = app.delete(&bob, &path).await;
    r.expect(204);
    assert_eq!(r.raw, "");
    app.delete(&bob, &path)
        .await
        .expect_error(404, "not_found", None);
    app.delete(&alice, &path)
        .await
        .expect_error(404, "not_found", None);
}

async fn malformed_path_ids_are_404(app: TestApp) {
    let (alice, _bob, conv) = pair(&app).await;
    let m = app.send_message(&alice, &conv, "hi").await;
    let upper = m["id"].as_str().expect("id").to_uppercase();
    for id in [
        "xyz",
        "123",
        "0190a5e0-0000-7000-8000-00000000000",
        "0190a5e0-0000-7000-8000-0000000000000",
        "0190a5e0000070008000000000000000",
        "%20",
        upper.as_str(),
    ] {
        for base in ["/v1/messages", "/v1/conversations"] {
            let path = format!("{base}/{id}");
            let r = app.get(&alice, &path).await;
            assert_eq!(r.status.as_u16(), 404, "GET {path} -> {}", r.raw);
            r.expect_error(404, "not_found", None);
            app.put(&alice, &path, &[])
                .await
                .expect_error(404, "not_found", None);
            app.delete(&alice, &path)
                .await
                .expect_error(404, "not_found", None);
        }
    }
    let r = app.delete(&alice, "/v1/messages/xyz/reactions/like").await;
    r.expect_error(404, "not_found", None);
    // A well-formed id that does not exist is 404 too.
    let r = app.get(&alice, &format!("/v1/messages/{UNKNOWN_ID}")).await;
    r.expect_error(404, "not_found", None);
    // The message is still there.
    app.get(
        &alice,
        &format!("/v1/messages/{}", m["id"].as_str().expect("id")),
    )
    .await
    .expect(200);
}

async fn ids_and_timestamps_have_the_wire_form(app: TestApp) {
    let (alice, bob, conv_id) = pair(&app).await;
    assert_id(&json!(conv_id));
    let m = app.send_message(&bob, &conv_id, "hello").await;
    let msg_id = assert_id(&m["id"]);
    assert_eq!(m["conversation_id"], conv_id.as_str());
    assert_id(&m["contact"]["id"]);
    let sent = assert_recent(&m["created_at"]);
    assert_recent(&m["contact"]["created_at"]);
    assert_recent(&m["contact"]["last_active_at"]);

    let c = app
        .get(&alice, &format!("/v1/conversations/{conv_id}"))
        .await;
    let c = c.expect(200);
    assert_id(&c["id"]);
    assert_eq!(assert_id(&c["contact_id"]), bob.id);
    assert_recent(&c["created_at"]);
    assert_eq!(assert_recent(&c["last_active_at"]), sent);
    assert_recent(&c["last_opened_at"]);

    let r = app
        .put(
            &bob,
            &format!("/v1/messages/{msg_id}"),
            &[
                ("message", "edited"),
                ("attachments[0][file_url]", "https://x.example/a"),
                ("attachments[0][filename]", "a"),
            ],
        )
        .await;
    let m = r.expect(200);
    assert!(assert_recent(&m["updated_at"]) >= sent);
    assert_recent(&m["read_at"]);
    let a = &m["attachments"][0];
    assert_id(&a["id"]);
    assert_eq!(a["message_id"], msg_id.as_str());
    assert_recent(&a["created_at"]);
}

/// A parameter name nested thousands of levels deep (60 KiB of `[b]`) is a
/// clear 400, and the server keeps serving: it once overflowed the stack.
async fn hostile_nesting_is_body_invalid_and_the_server_survives(app: TestApp) {
    let (alice, _bob, conv) = pair(&app).await;
    let deep = format!("message{}=x", "[b]".repeat(20_000));
    let r = send_form(&app, Method::POST, &alice, "/v1/messages", &deep).await;
    r.expect_error(400, "body_invalid", None);
    let q = format!("/v1/conversations?muted{}=1", "[b]".repeat(2_000));
    app.get(&alice, &q)
        .await
        .expect_error(400, "body_invalid", None);
    app.send_message(&alice, &conv, "still here").await;
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    hostile_nesting_is_body_invalid_and_the_server_survives,
    responses_are_json_also_errors,
    unknown_route_is_json_404,
    wrong_method_is_405_with_allow,
    other_body_types_are_415,
    body_over_64_kib_is_413,
    body_of_60_kib_passes_the_size_check,
    undecodable_bodies_are_body_invalid,
    brackets_raw_and_percent_encoded,
    json_body_equals_form_body,
    empty_body_means_no_attributes,
    unknown_parameters_are_rejected,
    booleans_true_false_one_zero,
    missing_or_malformed_token_is_401,
    token_in_query_string_is_not_accepted,
    revoked_token_is_401,
    expired_token_is_401_token_expired,
    revoked_then_expired_token_is_unauthorized,
    healthz_needs_no_token,
    created_resources_have_location,
    delete_is_204_empty_then_404,
    malformed_path_ids_are_404,
    ids_and_timestamps_have_the_wire_form,
);
