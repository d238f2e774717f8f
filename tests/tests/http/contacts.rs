//! Contacts (docs/api.md "Contacts"): one's own profile, any contact by id, lookup
//! by username, and the uniqueness of usernames in any case.

use confab_service::ServiceError;
use confab_tests::http::TestApp;
use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{keys, now_secs};

/// The fields of a contact object, sorted.
const CONTACT_KEYS: [&str; 6] = [
    "avatar_url",
    "created_at",
    "id",
    "last_active_at",
    "phone_number",
    "username",
];

/// Asserts `v` is a contact object of exactly the contract's shape, with
/// string `avatar_url` and `phone_number` (never null) and integer times.
#[track_caller]
pub(crate) fn assert_contact_shape(v: &Value) {
    assert_eq!(keys(v), CONTACT_KEYS, "contact fields: {v}");
    assert!(v["id"].is_string(), "id: {v}");
    assert!(v["username"].is_string(), "username: {v}");
    assert!(v["phone_number"].is_string(), "phone_number: {v}");
    assert!(v["avatar_url"].is_string(), "avatar_url never null: {v}");
    assert!(v["last_active_at"].is_i64(), "last_active_at integer: {v}");
    assert!(v["created_at"].is_i64(), "created_at integer: {v}");
}

/// Asserts `v` is a contact object of exactly the contract's shape as the
/// contact `viewer` (an id) sees it: `phone_number` is a string on the
/// viewer's own contact and null on anyone else's.
#[track_caller]
pub(crate) fn assert_contact_shape_seen_by(v: &Value, viewer: &str) {
    assert_eq!(keys(v), CONTACT_KEYS, "contact fields: {v}");
    assert!(v["id"].is_string(), "id: {v}");
    assert!(v["username"].is_string(), "username: {v}");
    // phone numbers are private: docs/api.md "Blocks and reports"
    if v["id"] == viewer {
        assert!(v["phone_number"].is_string(), "own phone_number: {v}");
    } else {
        assert!(v["phone_number"].is_null(), "another's phone_number: {v}");
    }
    assert!(v["avatar_url"].is_string(), "avatar_url never null: {v}");
    assert!(v["last_active_at"].is_i64(), "last_active_at integer: {v}");
    assert!(v["created_at"].is_i64(), "created_at integer: {v}");
}

async fn me_is_the_callers_contact(app: TestApp) {
    let alice = app.user("alice").await;
    let _bob = app.user("bob").await;
    let r = app.get(&alice, "/v1/contacts/me").await;
    let me = r.expect(200);
    assert_contact_shape(me);
    assert_eq!(me["id"], alice.id.as_str());
    assert_eq!(me["username"], "alice");
    assert_eq!(me["phone_number"], "+15550100");
    assert_eq!(me["avatar_url"], "");
    // Fresh contact, request within the minute: activity starts at creation.
    assert_eq!(me["last_active_at"], me["created_at"]);
    let now = now_secs();
    let created = me["created_at"].as_i64().expect("created_at");
    assert!(
        (now - 60..=now + 1).contains(&created),
        "created_at {created} is Unix seconds near {now}"
    );
}

async fn update_me_changes_only_what_is_sent(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;

    let r = app
        .put(
            &alice,
            "/v1/contacts/me",
            &[
                ("phone_number", "+4930123456"),
                ("avatar_url", "https://img.example/alice.png"),
            ],
        )
        .await;
    let me = r.expect(200);
    assert_contact_shape(me);
    assert_eq!(me["id"], alice.id.as_str());
    assert_eq!(me["username"], "alice");
    assert_eq!(me["phone_number"], "+4930123456");
    assert_eq!(me["avatar_url"], "https://img.example/alice.png");

    // Persisted, and visible to others: the avatar, not the phone number.
    let r = app.get(&alice, "/v1/contacts/me").await;
    assert_eq!(r.expect(200)["phone_number"], "+4930123456");
    let r = app.get(&bob, &format!("/v1/contacts/{}", alice.id)).await;
    let seen = r.expect(200);
    // phone numbers are private: docs/api.md "Blocks and reports"
    assert!(seen["phone_number"].is_null(), "phone_number: {seen}");
    assert_eq!(seen["avatar_url"], "https://img.example/alice.png");

    // Only the submitted attribute changes.
    let r = app
        .put(&alice, "/v1/contacts/me", &[("phone_number", "+12")])
        .await;
    let me = r.expect(200);
    assert_eq!(me["phone_number"], "+12");
    assert_eq!(me["avatar_url"], "https://img.example/alice.png");

    // Empty string removes the avatar: "" again, never null.
    let r = app
        .put(&alice, "/v1/contacts/me", &[("avatar_url", "")])
        .await;
    let me = r.expect(200);
    assert_eq!(me["avatar_url"], "");
    assert_eq!(me["phone_number"], "+12");

    // 15 digits is the E.164 maximum; JSON bodies work the same way.
    let r = app
        .json(
            Method::PUT,
            &alice,
            "/v1/contacts/me",
            &json!({"phone_number": "+123456789012345", "avatar_url": "http://x.example"}),
        )
        .await;
    let me = r.expect(200);
    assert_eq!(me["phone_number"], "+123456789012345");
    assert_eq!(me["avatar_url"], "http://x.example");

    // An empty PUT changes nothing.
    let r = app.put(&alice, "/v1/contacts/me", &[]).await;
    let me = r.expect(200).clone();
    assert_eq!(me["phone_number"], "+123456789012345");
    assert_eq!(me["avatar_url"], "http://x.example");
    assert_eq!(me["username"], "alice");

    // Bob was not touched.
    let r = app.get(&bob, "/v1/contacts/me").await;
    let b = r.expect(200);
    assert_eq!(b["phone_number"], "+15550100");
    assert_eq!(b["avatar_url"], "");
}

async fn update_me_validates(app: TestApp) {
    let alice = app.user("alice").await;
    let long_url = format!("https://x.example/{}", "a".repeat(2048));
    let cases: &[(&str, &str, &str, &str)] = &[
        // (field, value, code, param)
        (
            "phone_number",
            "15550100",
            "parameter_invalid",
            "phone_number",
        ),
        ("phone_number", "+1", "parameter_invalid", "phone_number"),
        (
            "phone_number",
            "+1234567890123456",
            "parameter_invalid",
            "phone_number",
        ),
        (
            "phone_number",
            "+1555abc0",
            "parameter_invalid",
            "phone_number",
        ),
        (
            "phone_number",
            "+1 555 0100",
            "parameter_invalid",
            "phone_number",
        ),
        ("phone_number", "", "parameter_invalid", "phone_number"),
        (
            "avatar_url",
            "ftp://x.example/a.png",
            "parameter_invalid",
            "avatar_url",
        ),
        ("avatar_url", "not a url", "parameter_invalid", "avatar_url"),
        (
            "avatar_url",
            "javascript:alert(1)",
            "parameter_invalid",
            "avatar_url",
        ),
        ("avatar_url", "https://", "parameter_invalid", "avatar_url"),
        (
            "avatar_url",
            long_url.as_str(),
            "parameter_invalid",
            "avatar_url",
        ),
        // No mass assignment.
        (
            "id",
            "0190f7b0-0000-7000-8000-000000000000",
            "parameter_unknown",
            "id",
        ),
        ("username", "mallory", "parameter_unknown", "username"),
        ("created_at", "0", "parameter_unknown", "created_at"),
        ("last_active_at", "0", "parameter_unknown", "last_active_at"),
        ("nickname", "al", "parameter_unknown", "nickname"),
    ];
    for (field, value, code, param) in cases {
        let r = app.put(&alice, "/v1/contacts/me", &[(field, value)]).await;
        assert_eq!(r.status.as_u16(), 400, "{field}={value:?}: {}", r.raw);
        r.expect_error(400, code, Some(param));
    }

    // A wrong JSON type is invalid too.
    let r = app
        .json(
            Method::PUT,
            &alice,
            "/v1/contacts/me",
            &json!({"phone_number": 15550100}),
        )
        .await;
    r.expect_error(400, "parameter_invalid", Some("phone_number"));

    // A request with one bad attribute changes nothing, also not the good one.
    let r = app
        .put(
            &alice,
            "/v1/contacts/me",
            &[("phone_number", "+4930123456"), ("avatar_url", "ftp://bad")],
        )
        .await;
    r.expect_error(400, "parameter_invalid", Some("avatar_url"));
    let r = app
        .put(
            &alice,
            "/v1/contacts/me",
            &[("phone_number", "+4930123456"), ("username", "mallory")],
        )
        .await;
    r.expect_error(400, "parameter_unknown", Some("username"));

    let r = app.get(&alice, "/v1/contacts/me").await;
    let me = r.expect(200);
    assert_eq!(me["id"], alice.id.as_str());
    assert_eq!(me["username"], "alice");
    assert_eq!(me["phone_number"], "+15550100");
    assert_eq!(me["avatar_url"], "");
}

async fn get_contact_by_id(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;

    // Any existing contact, no shared conversation needed.
    let mine = app.get(&alice, "/v1/contacts/me").await.expect(200).clone();
    let r = app.get(&bob, &format!("/v1/contacts/{}", alice.id)).await;
    let seen = r.expect(200);
    assert_contact_shape_seen_by(seen, &bob.id);
    assert_eq!(seen["id"], alice.id.as_str());
    assert_eq!(seen["username"], "alice");
    // phone numbers are private: docs/api.md "Blocks and reports"
    assert!(seen["phone_number"].is_null(), "phone_number: {seen}");
    assert_eq!(mine["phone_number"], "+15550100");
    assert_eq!(seen["avatar_url"], mine["avatar_url"]);
    assert_eq!(seen["created_at"], mine["created_at"]);

    // One's own id works too, with one's own phone number.
    let r = app.get(&alice, &format!("/v1/contacts/{}", alice.id)).await;
    let own = r.expect(200);
    assert_eq!(own["username"], "alice");
    // phone numbers are private: docs/api.md "Blocks and reports" (but not from oneself)
    assert_eq!(own["phone_number"], "+15550100");

    // Unknown (well-formed) and malformed ids: 404.
    let unknown = uuid::Uuid::now_v7().to_string();
    app.get(&bob, &format!("/v1/contacts/{unknown}"))
        .await
        .expect_error(404, "not_found", None);
    app.get(&bob, "/v1/contacts/not-an-id")
        .await
        .expect_error(404, "not_found", None);
}

async fn find_contact_by_username(app: TestApp) {
    let alice = app.user("alice").await;
    let _bob = app.user("Bob_Smith").await;
    let _alicia = app.user("alicia").await;

    for query in ["alice", "ALICE", "aLiCe"] {
        let r = app
            .get(&alice, &format!("/v1/contacts?username={query}"))
            .await;
        let body = r.expect(200);
        assert_eq!(body["has_more"], false, "{query}: {body}");
        let data = body["data"].as_array().expect("data array");
        assert_eq!(data.len(), 1, "{query}: {body}");
        assert_contact_shape(&data[0]);
        assert_eq!(data[0]["id"], alice.id.as_str());
        assert_eq!(data[0]["username"], "alice");
    }

    // The username comes back as it was created, whatever case was asked.
    let r = app.get(&alice, "/v1/contacts?username=bob_smith").await;
    let body = r.expect(200);
    assert_eq!(body["data"][0]["username"], "Bob_Smith", "{body}");
    assert_eq!(body["data"].as_array().expect("data").len(), 1);

    // Exact match only: no prefix search, no match is an empty list.
    for query in ["ali", "alic", "nobody", "alice.", "bob"] {
        let r = app
            .get(&alice, &format!("/v1/contacts?username={query}"))
            .await;
        let body = r.expect(200);
        assert_eq!(
            body,
            &json!({"has_more": false, "data": []}),
            "{query}: {body}"
        );
    }

    // Unknown query parameters are rejected.
    app.get(&alice, "/v1/contacts?name=alice")
        .await
        .expect_error(400, "parameter_unknown", Some("name"));
    app.get(
        &alice,
        "/v1/contacts?username=alice&phone_number=%2B15550100",
    )
    .await
    .expect_error(400, "parameter_unknown", Some("phone_number"));
}

async fn contact_routes_need_auth_and_right_methods(app: TestApp) {
    let alice = app.user("alice").await;
    for path in [
        "/v1/contacts/me".to_owned(),
        format!("/v1/contacts/{}", alice.id),
        "/v1/contacts?username=alice".to_owned(),
    ] {
        let r = app.send(Method::GET, &path, None, None, &[]).await;
        r.expect_error(401, "unauthorized", None);
    }
    let r = app
        .send(
            Method::PUT,
            "/v1/contacts/me",
            Some("cfb_not-a-real-token"),
            Some((
                "application/x-www-form-urlencoded",
                b"phone_number=%2B4930123456".to_vec(),
            )),
            &[],
        )
        .await;
    r.expect_error(401, "unauthorized", None);
    let r = app.get(&alice, "/v1/contacts/me").await;
    assert_eq!(r.expect(200)["phone_number"], "+15550100");

    // Contacts are made by the operator's CLI, never over HTTP.
    let r = app
        .post(&alice, "/v1/contacts", &[("username", "mallory")])
        .await;
    r.expect_error(405, "method_not_allowed", None);
    let allow = r
        .header("allow")
        .expect("Allow header")
        .to_ascii_uppercase();
    assert!(allow.contains("GET"), "Allow: {allow}");
    let r = app.delete(&alice, "/v1/contacts/me").await;
    r.expect_error(405, "method_not_allowed", None);
    let allow = r
        .header("allow")
        .expect("Allow header")
        .to_ascii_uppercase();
    assert!(
        allow.contains("GET") && allow.contains("PUT"),
        "Allow: {allow}"
    );
    let r = app.get(&alice, "/v1/contacts?username=mallory").await;
    assert_eq!(r.expect(200)["data"], json!([]));
}

async fn duplicate_username_is_a_conflict(app: TestApp) {
    let alice = app.user("alice").await;
    for name in ["ALICE", "alice", "Alice"] {
        let err = app
            .service
            .create_contact(name, "+15550199", None)
            .await
            .expect_err("a taken username must be refused");
        assert!(
            matches!(err, ServiceError::Conflict(_)),
            "{name}: expected Conflict, got {err:?}"
        );
    }
    // Still exactly one, unchanged.
    let r = app.get(&alice, "/v1/contacts?username=alice").await;
    let body = r.expect(200);
    let data = body["data"].as_array().expect("data");
    assert_eq!(data.len(), 1, "{body}");
    assert_eq!(data[0]["id"], alice.id.as_str());
    assert_eq!(data[0]["username"], "alice");
    assert_eq!(data[0]["phone_number"], "+15550100");
    // A different name still works.
    let carol = app
        .service
        .create_contact("alice2", "+15550199", None)
        .await
        .expect("a free username");
    assert_eq!(carol.username().as_str(), "alice2");
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    me_is_the_callers_contact,
    update_me_changes_only_what_is_sent,
    update_me_validates,
    get_contact_by_id,
    find_contact_by_username,
    contact_routes_need_auth_and_right_methods,
    duplicate_username_is_a_conflict,
);
