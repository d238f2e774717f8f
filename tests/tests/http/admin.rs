//! The server API (docs/api.md "Server API: from an app's backend") over real HTTP on both stores: server
//! keys, `/v1/admin` contacts, tokens and webhooks, and acting for a
//! contact with `Confab-Contact`.

use std::time::{Duration, Instant};

use confab_server::startup::{Quota, RateLimits, ServerOptions};
use confab_tests::db::Backend;
use confab_tests::http::{Resp, TestApp, User};
use reqwest::Method;
use serde_json::{json, Value};

use crate::events::Sse;
use crate::support::UNKNOWN_ID;

mod contact_data;
mod erase_jobs;

/// A server key made the way `confab key create` makes one.
async fn server_key(app: &TestApp) -> String {
    app.service
        .create_server_key("app backend")
        .await
        .expect("create key")
        .secret
}

/// A request with `credential` (a key or a token), a JSON body if any, and
/// extra headers.
async fn call(
    app: &TestApp,
    method: Method,
    path: &str,
    credential: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> Resp {
    let body = body.map(|b| ("application/json", b.to_string().into_bytes()));
    app.send(method, path, Some(credential), body, headers)
        .await
}

async fn admin(app: &TestApp, method: Method, path: &str, key: &str, body: Option<Value>) -> Resp {
    call(app, method, path, key, body, &[]).await
}

/// Creates a contact over the server API; returns it.
async fn create_contact(app: &TestApp, key: &str, username: &str) -> Value {
    admin(
        app,
        Method::POST,
        "/v1/admin/contacts",
        key,
        Some(json!({"username": username, "phone_number": "+15550123"})),
    )
    .await
    .expect(201)
    .clone()
}

/// Mints a token over the server API; returns the minted object.
async fn mint(app: &TestApp, key: &str, contact: &str, body: Value) -> Resp {
    admin(
        app,
        Method::POST,
        &format!("/v1/admin/contacts/{contact}/tokens"),
        key,
        Some(body),
    )
    .await
}

async fn only_server_keys_reach_the_server_api(app: TestApp) {
    let key = server_key(&app).await;
    let alice = app.user("alice").await;
    admin(&app, Method::GET, "/v1/admin/contacts", &key, None)
        .await
        .expect(200);
    // A contact's token: 403, on every admin path, known or not.
    for path in [
        "/v1/admin/contacts",
        "/v1/admin/webhooks",
        "/v1/admin/nothing",
    ] {
        app.get(&alice, path)
            .await
            .expect_error(403, "forbidden", None);
    }
    // No credential, an unknown key, a malformed one: 401.
    app.send(Method::GET, "/v1/admin/contacts", None, None, &[])
        .await
        .expect_error(401, "unauthorized", None);
    let unknown = format!("cfb_sk_{}", "0".repeat(64));
    for bad in [unknown.as_str(), "cfb_sk_", "cfb_sk_x"] {
        admin(&app, Method::GET, "/v1/admin/contacts", bad, None)
            .await
            .expect_error(401, "unauthorized", None);
    }
    // An unknown admin route with a key: 404, like any unknown route.
    admin(&app, Method::GET, "/v1/admin/nothing", &key, None)
        .await
        .expect_error(404, "not_found", None);
}

async fn a_key_acts_for_a_contact_with_exactly_its_rights(app: TestApp) {
    let key = server_key(&app).await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let theirs = app.direct(&alice, &carol).await;
    // Without Confab-Contact, a key is no one on the contact routes.
    for path in ["/v1/contacts/me", "/v1/conversations", "/v1/nothing"] {
        call(&app, Method::GET, path, &key, None, &[])
            .await
            .expect_error(401, "unauthorized", None);
    }
    for bad in [UNKNOWN_ID, "bob", ""] {
        call(
            &app,
            Method::GET,
            "/v1/contacts/me",
            &key,
            None,
            &[("confab-contact", bad)],
        )
        .await
        .expect_error(401, "unauthorized", None);
    }
    let as_bob = [("confab-contact", bob.id.as_str())];
    let me = call(&app, Method::GET, "/v1/contacts/me", &key, None, &as_bob).await;
    assert_eq!(me.expect(200)["id"], bob.id.as_str());
    // Bob's rights: a conversation of others is not there for him.
    call(
        &app,
        Method::GET,
        &format!("/v1/conversations/{theirs}"),
        &key,
        None,
        &as_bob,
    )
    .await
    .expect_error(404, "not_found", None);
    // What bob may do, the key does for him: open a conversation, send.
    let opened = call(
        &app,
        Method::POST,
        "/v1/conversations",
        &key,
        Some(json!({"contact_id": alice.id})),
        &as_bob,
    )
    .await;
    let conversation = opened.expect(201)["id"].as_str().expect("id").to_owned();
    let sent = call(
        &app,
        Method::POST,
        "/v1/messages",
        &key,
        Some(json!({"conversation_id": conversation, "message": "from the backend"})),
        &as_bob,
    )
    .await;
    assert_eq!(sent.expect(201)["contact"]["id"], bob.id.as_str());
    let page = app
        .get(
            &alice,
            &format!("/v1/messages?conversation_id={conversation}"),
        )
        .await;
    assert_eq!(page.expect(200)["data"][0]["message"], "from the backend");
    // A key acting for bob is not a server-API caller there either: the
    // admin routes need no Confab-Contact and ignore none of their rules.
    call(&app, Method::GET, "/v1/admin/contacts", &key, None, &as_bob)
        .await
        .expect(200);
}

async fn a_contact_token_cannot_name_another_contact(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let as_bob = [("confab-contact", bob.id.as_str())];
    call(
        &app,
        Method::GET,
        "/v1/contacts/me",
        &alice.token,
        None,
        &as_bob,
    )
    .await
    .expect_error(403, "forbidden", None);
    // Naming oneself changes nothing.
    let as_self = [("confab-contact", alice.id.as_str())];
    let me = call(
        &app,
        Method::GET,
        "/v1/contacts/me",
        &alice.token,
        None,
        &as_self,
    )
    .await;
    assert_eq!(me.expect(200)["id"], alice.id.as_str());
}

async fn a_revoked_key_is_refused(app: TestApp) {
    let created = app
        .service
        .create_server_key("short-lived")
        .await
        .expect("create key");
    let bob = app.user("bob").await;
    let key = created.secret;
    admin(&app, Method::GET, "/v1/admin/contacts", &key, None)
        .await
        .expect(200);
    let listed = app.service.list_server_keys().await.expect("list");
    let used = listed
        .iter()
        .find(|k| k.id == created.key.id)
        .expect("listed");
    assert!(used.last_used_at.is_some(), "its use is recorded: {used:?}");
    app.service
        .revoke_server_key(&created.key.id.to_string())
        .await
        .expect("revoke");
    admin(&app, Method::GET, "/v1/admin/contacts", &key, None)
        .await
        .expect_error(401, "unauthorized", None);
    call(
        &app,
        Method::GET,
        "/v1/contacts/me",
        &key,
        None,
        &[("confab-contact", bob.id.as_str())],
    )
    .await
    .expect_error(401, "unauthorized", None);
    let revoked = app.service.list_server_keys().await.expect("list");
    assert!(revoked[0].revoked_at.is_some(), "{revoked:?}");
    assert!(app.service.revoke_server_key(UNKNOWN_ID).await.is_err());
}

async fn contacts_are_created_listed_found_and_changed(app: TestApp) {
    let key = server_key(&app).await;
    let created = admin(
        &app,
        Method::POST,
        "/v1/admin/contacts",
        &key,
        Some(json!({
            "username": "Alice",
            "phone_number": "+15550100",
            "avatar_url": "https://example.com/a.png",
        })),
    )
    .await;
    let alice = created.expect(201).clone();
    let id = alice["id"].as_str().expect("id").to_owned();
    assert_eq!(
        created.header("location"),
        Some(format!("/v1/admin/contacts/{id}").as_str())
    );
    assert_eq!(alice["username"], "Alice");
    assert_eq!(alice["phone_number"], "+15550100");
    assert_eq!(alice["avatar_url"], "https://example.com/a.png");
    // The username is taken in any letter case.
    admin(
        &app,
        Method::POST,
        "/v1/admin/contacts",
        &key,
        Some(json!({"username": "ALICE", "phone_number": "+15550101"})),
    )
    .await
    .expect_error(409, "conflict", Some("username"));
    // Bad input: each a clear error, nothing created.
    let cases: [(Value, &str, &str); 5] = [
        (
            json!({"phone_number": "+15550100"}),
            "parameter_missing",
            "username",
        ),
        (
            json!({"username": "bob"}),
            "parameter_missing",
            "phone_number",
        ),
        (
            json!({"username": "b b", "phone_number": "+15550100"}),
            "parameter_invalid",
            "username",
        ),
        (
            json!({"username": "bob", "phone_number": "555"}),
            "parameter_invalid",
            "phone_number",
        ),
        (
            json!({"username": "bob", "phone_number": "+15550100", "role": "x"}),
            "parameter_unknown",
            "role",
        ),
    ];
    for (body, code, param) in cases {
        admin(&app, Method::POST, "/v1/admin/contacts", &key, Some(body))
            .await
            .expect_error(400, code, Some(param));
    }
    for name in ["bob", "carol", "dave"] {
        create_contact(&app, &key, name).await;
    }
    // Newest first, paged.
    let first = admin(&app, Method::GET, "/v1/admin/contacts?limit=2", &key, None).await;
    let first = first.expect(200).clone();
    let names = |page: &Value| -> Vec<String> {
        page["data"]
            .as_array()
            .expect("data")
            .iter()
            .map(|c| c["username"].as_str().expect("name").to_owned())
            .collect()
    };
    assert_eq!(names(&first), ["dave", "carol"]);
    assert_eq!(first["has_more"], true);
    let after = first["data"][1]["id"].as_str().expect("id");
    let rest = admin(
        &app,
        Method::GET,
        &format!("/v1/admin/contacts?limit=2&starting_after={after}"),
        &key,
        None,
    )
    .await;
    let rest = rest.expect(200).clone();
    assert_eq!(names(&rest), ["bob", "Alice"]);
    assert_eq!(rest["has_more"], false);
    admin(
        &app,
        Method::GET,
        &format!("/v1/admin/contacts?starting_after={UNKNOWN_ID}"),
        &key,
        None,
    )
    .await
    .expect_error(400, "parameter_invalid", Some("starting_after"));
    // By username, in any letter case.
    let found = admin(
        &app,
        Method::GET,
        "/v1/admin/contacts?username=aLiCe",
        &key,
        None,
    )
    .await;
    assert_eq!(names(found.expect(200)), ["Alice"]);
    let none = admin(
        &app,
        Method::GET,
        "/v1/admin/contacts?username=zed",
        &key,
        None,
    )
    .await;
    assert_eq!(none.expect(200)["data"], json!([]));
    // One, by id.
    let got = admin(
        &app,
        Method::GET,
        &format!("/v1/admin/contacts/{id}"),
        &key,
        None,
    )
    .await;
    assert_eq!(got.expect(200), &alice);
    for missing in [UNKNOWN_ID, "not-an-id"] {
        admin(
            &app,
            Method::GET,
            &format!("/v1/admin/contacts/{missing}"),
            &key,
            None,
        )
        .await
        .expect_error(404, "not_found", None);
    }
    // Changed: the contact's own next request sees it.
    let token = mint(&app, &key, &id, json!({})).await;
    let token = token.expect(201)["token"]
        .as_str()
        .expect("token")
        .to_owned();
    let me = app
        .send(Method::GET, "/v1/contacts/me", Some(&token), None, &[])
        .await;
    assert_eq!(me.expect(200)["phone_number"], "+15550100");
    let changed = admin(
        &app,
        Method::PUT,
        &format!("/v1/admin/contacts/{id}"),
        &key,
        Some(json!({"phone_number": "+15550199"})),
    )
    .await;
    assert_eq!(changed.expect(200)["phone_number"], "+15550199");
    assert_eq!(changed.body["avatar_url"], "https://example.com/a.png");
    let me = app
        .send(Method::GET, "/v1/contacts/me", Some(&token), None, &[])
        .await;
    assert_eq!(me.expect(200)["phone_number"], "+15550199");
    admin(
        &app,
        Method::PUT,
        &format!("/v1/admin/contacts/{id}"),
        &key,
        Some(json!({"username": "renamed"})),
    )
    .await
    .expect_error(400, "parameter_unknown", Some("username"));
    admin(
        &app,
        Method::PUT,
        &format!("/v1/admin/contacts/{UNKNOWN_ID}"),
        &key,
        Some(json!({"phone_number": "+15550199"})),
    )
    .await
    .expect_error(404, "not_found", None);
}

async fn tokens_are_minted_listed_and_revoked_one_or_all(app: TestApp) {
    let key = server_key(&app).await;
    let alice = create_contact(&app, &key, "alice").await;
    let id = alice["id"].as_str().expect("id");
    // Lifetimes: 60 s to 365 days, whole seconds.
    for bad in [json!(59), json!(31_536_001), json!("soon"), json!(1.5)] {
        mint(&app, &key, id, json!({ "expires_in": bad }))
            .await
            .expect_error(400, "parameter_invalid", Some("expires_in"));
    }
    mint(&app, &key, UNKNOWN_ID, json!({}))
        .await
        .expect_error(404, "not_found", None);
    let phone = mint(&app, &key, id, json!({})).await;
    let phone = phone.expect(201).clone();
    assert_eq!(phone["contact_id"], id);
    assert_eq!(phone["expires_at"], Value::Null);
    let laptop = mint(&app, &key, id, json!({"expires_in": 3600})).await;
    let laptop = laptop.expect(201).clone();
    assert_eq!(
        laptop["expires_at"].as_i64().expect("expiry") - laptop["created_at"].as_i64().expect("t"),
        3600
    );
    let secret = |t: &Value| t["token"].as_str().expect("token").to_owned();
    let (phone_token, laptop_token) = (secret(&phone), secret(&laptop));
    assert!(phone_token.starts_with("cfb_") && !phone_token.starts_with("cfb_sk_"));
    let me = |token: String| {
        let app = &app;
        async move {
            app.send(Method::GET, "/v1/contacts/me", Some(&token), None, &[])
                .await
        }
    };
    me(phone_token.clone()).await.expect(200);
    // Listed newest first, never with a secret; the used one shows it.
    let path = format!("/v1/admin/contacts/{id}/tokens");
    let listed = admin(&app, Method::GET, &path, &key, None).await;
    let data = listed.expect(200)["data"].as_array().expect("data").clone();
    assert_eq!(data.len(), 2);
    assert_eq!(data[0]["id"], laptop["id"]);
    assert_eq!(data[1]["id"], phone["id"]);
    assert!(data[1]["last_used_at"].is_i64(), "{data:?}");
    assert_eq!(data[0]["last_used_at"], Value::Null);
    for t in &data {
        assert!(t.get("token").is_none(), "{t}");
    }
    assert!(!listed.raw.contains(&phone_token[4..]) && !listed.raw.contains(&laptop_token[4..]));
    let page = admin(&app, Method::GET, &format!("{path}?limit=1"), &key, None).await;
    assert_eq!(page.expect(200)["has_more"], true);
    admin(
        &app,
        Method::GET,
        &format!("/v1/admin/contacts/{UNKNOWN_ID}/tokens"),
        &key,
        None,
    )
    .await
    .expect_error(404, "not_found", None);
    // One device signs out: its token alone stops.
    let one = format!("/v1/admin/tokens/{}", phone["id"].as_str().expect("id"));
    admin(&app, Method::DELETE, &one, &key, None)
        .await
        .expect(204);
    me(phone_token.clone())
        .await
        .expect_error(401, "unauthorized", None);
    me(laptop_token.clone()).await.expect(200);
    admin(&app, Method::DELETE, &one, &key, None)
        .await
        .expect_error(404, "not_found", None);
    let listed = admin(&app, Method::GET, &path, &key, None).await;
    assert_eq!(
        listed.expect(200)["data"].as_array().expect("data").len(),
        1
    );
    // Every device signs out.
    mint(&app, &key, id, json!({})).await.expect(201);
    admin(&app, Method::DELETE, &path, &key, None)
        .await
        .expect(204);
    me(laptop_token)
        .await
        .expect_error(401, "unauthorized", None);
    let listed = admin(&app, Method::GET, &path, &key, None).await;
    assert_eq!(listed.expect(200)["data"], json!([]));
    admin(
        &app,
        Method::DELETE,
        &format!("/v1/admin/contacts/{UNKNOWN_ID}/tokens"),
        &key,
        None,
    )
    .await
    .expect_error(404, "not_found", None);
    admin(
        &app,
        Method::DELETE,
        "/v1/admin/tokens/not-an-id",
        &key,
        None,
    )
    .await
    .expect_error(404, "not_found", None);
}

async fn a_revoked_token_s_stream_ends_within_5_s(app: TestApp) {
    let key = server_key(&app).await;
    let alice = create_contact(&app, &key, "alice").await;
    let id = alice["id"].as_str().expect("id");
    let minted = mint(&app, &key, id, json!({})).await;
    let minted = minted.expect(201).clone();
    let token = minted["token"].as_str().expect("token");
    let mut sse = Sse::open(&app.base_url, token, "/v1/events", &[]).await;
    // A stream opened by the key for alice lives as long as the key.
    let mut by_key = Sse::open(&app.base_url, &key, "/v1/events", &[("confab-contact", id)]).await;
    let revoked = Instant::now();
    admin(
        &app,
        Method::DELETE,
        &format!("/v1/admin/tokens/{}", minted["id"].as_str().expect("id")),
        &key,
        None,
    )
    .await
    .expect(204);
    sse.expect_end_within(revoked, Duration::from_secs(5)).await;
    // The key's stream is still open (heartbeats, no end).
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if by_key.frame(Duration::from_millis(500)).await.is_none() {
            assert!(!by_key.ended, "the key's stream ended with the token");
        }
    }
}

async fn webhooks_are_managed_over_http(backend: Backend) {
    // Its webhooks point at this machine (a test never reaches further):
    // allowed here as `CONFAB_WEBHOOK_ALLOW_PRIVATE=true` allows them.
    let app = TestApp::spawn_with_options(
        backend,
        ServerOptions {
            webhook_allow_private: true,
            rate_limits: RateLimits {
                anonymous: None,
                ..RateLimits::default()
            },
            ..ServerOptions::default()
        },
    )
    .await;
    let key = server_key(&app).await;
    let path = "/v1/admin/webhooks";
    let created = admin(
        &app,
        Method::POST,
        path,
        &key,
        Some(json!({"url": "http://127.0.0.1:9/confab", "events": ["message.created"]})),
    )
    .await;
    let hook = created.expect(201).clone();
    let id = hook["id"].as_str().expect("id").to_owned();
    assert_eq!(
        created.header("location"),
        Some(format!("{path}/{id}").as_str())
    );
    assert_eq!(hook["events"], json!(["message.created"]));
    let secret = hook["secret"]
        .as_str()
        .expect("secret shown once")
        .to_owned();
    assert!(secret.len() >= 32, "{secret}");
    let all = admin(
        &app,
        Method::POST,
        path,
        &key,
        Some(json!({"url": "http://127.0.0.1:9/all"})),
    )
    .await;
    assert_eq!(all.expect(201)["events"], json!([]));
    let listed = admin(&app, Method::GET, path, &key, None).await;
    let data = listed.expect(200)["data"].as_array().expect("data").clone();
    assert_eq!(data.len(), 2);
    assert_eq!(data[0]["id"], id.as_str());
    assert!(data.iter().all(|w| w.get("secret").is_none()), "{data:?}");
    assert!(!listed.raw.contains(&secret));
    // Refused: each names its parameter, nothing is created.
    let cases = [
        (
            json!({"url": "ftp://127.0.0.1/x"}),
            "parameter_invalid",
            "url",
        ),
        (json!({"url": "not a url"}), "parameter_invalid", "url"),
        (
            json!({"url": "http://127.0.0.1:9/x", "events": ["message.exploded"]}),
            "parameter_invalid",
            "events",
        ),
        (
            json!({"url": "http://127.0.0.1:9/x", "events": "message.created"}),
            "parameter_invalid",
            "events",
        ),
        (
            json!({"events": ["message.created"]}),
            "parameter_missing",
            "url",
        ),
    ];
    for (body, code, param) in cases {
        admin(&app, Method::POST, path, &key, Some(body))
            .await
            .expect_error(400, code, Some(param));
    }
    let listed = admin(&app, Method::GET, path, &key, None).await;
    assert_eq!(
        listed.expect(200)["data"].as_array().expect("data").len(),
        2
    );
    admin(&app, Method::DELETE, &format!("{path}/{id}"), &key, None)
        .await
        .expect(204);
    admin(&app, Method::DELETE, &format!("{path}/{id}"), &key, None)
        .await
        .expect_error(404, "not_found", None);
    let listed = admin(&app, Method::GET, path, &key, None).await;
    assert_eq!(
        listed.expect(200)["data"].as_array().expect("data").len(),
        1
    );
}

async fn conversation_members_show_mute_and_unread(app: TestApp) {
    let key = server_key(&app).await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let group = app
        .json(
            Method::POST,
            &alice,
            "/v1/groups",
            &json!({"name": "trio", "contact_ids": [bob.id, carol.id]}),
        )
        .await;
    let group = group.expect(201)["id"].as_str().expect("id").to_owned();
    let conversation = app
        .json(
            Method::POST,
            &alice,
            "/v1/conversations",
            &json!({"group_id": group}),
        )
        .await;
    let conversation = conversation.expect(201)["id"]
        .as_str()
        .expect("id")
        .to_owned();
    app.send_message(&alice, &conversation, "one").await;
    app.send_message(&alice, &conversation, "two").await;
    // Bob reads them; carol mutes the conversation.
    app.get(&bob, &format!("/v1/conversations/{conversation}"))
        .await
        .expect(200);
    app.json(
        Method::PUT,
        &carol,
        &format!("/v1/conversations/{conversation}"),
        &json!({"is_muted": true}),
    )
    .await
    .expect(200);
    let path = format!("/v1/admin/conversations/{conversation}/members");
    let listed = admin(&app, Method::GET, &path, &key, None).await;
    let listed = listed.expect(200).clone();
    let rows: Vec<(String, bool, i64)> = listed["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|m| {
            (
                m["contact"]["username"].as_str().expect("name").to_owned(),
                m["is_muted"].as_bool().expect("muted"),
                m["unread_count"].as_i64().expect("unread"),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("alice".to_owned(), false, 0),
            ("bob".to_owned(), false, 0),
            ("carol".to_owned(), true, 2),
        ]
    );
    assert_eq!(listed["has_more"], false);
    // The counts are those the members see.
    let carols = app.get(&carol, "/v1/conversations").await;
    assert_eq!(carols.expect(200)["data"][0]["unread_count"], 2);
    // Paged by member.
    let first = admin(&app, Method::GET, &format!("{path}?limit=2"), &key, None).await;
    let first = first.expect(200).clone();
    assert_eq!(first["has_more"], true);
    let rest = admin(
        &app,
        Method::GET,
        &format!("{path}?starting_after={}", bob.id),
        &key,
        None,
    )
    .await;
    assert_eq!(
        rest.expect(200)["data"][0]["contact"]["id"],
        carol.id.as_str()
    );
    admin(
        &app,
        Method::GET,
        &format!("{path}?starting_after={UNKNOWN_ID}"),
        &key,
        None,
    )
    .await
    .expect_error(400, "parameter_invalid", Some("starting_after"));
    // A direct conversation: its creator, then its peer.
    let direct = app.direct(&bob, &alice).await;
    app.send_message(&bob, &direct, "hi").await;
    let path = format!("/v1/admin/conversations/{direct}/members");
    let listed = admin(&app, Method::GET, &path, &key, None).await;
    let data = listed.expect(200)["data"].clone();
    assert_eq!(data[0]["contact"]["id"], bob.id.as_str());
    assert_eq!(data[1]["contact"]["id"], alice.id.as_str());
    assert_eq!(
        (
            data[0]["unread_count"].clone(),
            data[1]["unread_count"].clone()
        ),
        (json!(0), json!(1))
    );
    let before = admin(
        &app,
        Method::GET,
        &format!("{path}?ending_before={}", alice.id),
        &key,
        None,
    )
    .await;
    let before = before.expect(200).clone();
    assert_eq!(before["data"].as_array().expect("data").len(), 1);
    assert_eq!(before["data"][0]["contact"]["id"], bob.id.as_str());
    for missing in [UNKNOWN_ID, "nope"] {
        admin(
            &app,
            Method::GET,
            &format!("/v1/admin/conversations/{missing}/members"),
            &key,
            None,
        )
        .await
        .expect_error(404, "not_found", None);
    }
}

/// Without `CONFAB_WEBHOOK_ALLOW_PRIVATE`, the server API refuses what the
/// CLI refuses: private, loopback and link-local addresses.
async fn webhooks_to_private_addresses_are_refused(app: TestApp) {
    let key = server_key(&app).await;
    for url in [
        "http://127.0.0.1:9/x",
        "http://10.0.0.1/x",
        "http://169.254.169.254/latest",
        "http://[::1]/x",
    ] {
        admin(
            &app,
            Method::POST,
            "/v1/admin/webhooks",
            &key,
            Some(json!({ "url": url })),
        )
        .await
        .expect_error(400, "parameter_invalid", Some("url"));
    }
    let listed = admin(&app, Method::GET, "/v1/admin/webhooks", &key, None).await;
    assert_eq!(listed.expect(200)["data"], json!([]));
}

async fn a_key_has_its_own_rate_limit(backend: Backend) {
    let app = TestApp::spawn_with(
        backend,
        RateLimits {
            per_contact: Quota::new(100, 100),
            anonymous: None,
            per_key: Quota::new(1, 3),
        },
    )
    .await;
    let key = server_key(&app).await;
    let bob: User = app.user("bob").await;
    let as_bob = [("confab-contact", bob.id.as_str())];
    for _ in 0..3 {
        call(&app, Method::GET, "/v1/contacts/me", &key, None, &as_bob)
            .await
            .expect(200);
    }
    let limited = call(&app, Method::GET, "/v1/admin/contacts", &key, None, &[]).await;
    limited.expect_error(429, "rate_limited", None);
    assert!(limited.header("retry-after").is_some());
    // Bob's own budget is untouched by what the key did for him.
    app.get(&bob, "/v1/contacts/me").await.expect(200);
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    only_server_keys_reach_the_server_api,
    a_key_acts_for_a_contact_with_exactly_its_rights,
    a_contact_token_cannot_name_another_contact,
    a_revoked_key_is_refused,
    contacts_are_created_listed_found_and_changed,
    tokens_are_minted_listed_and_revoked_one_or_all,
    a_revoked_token_s_stream_ends_within_5_s,
    webhooks_to_private_addresses_are_refused,
    conversation_members_show_mute_and_unread,
);

mod limits {
    confab_tests::on_both_stores!(
        crate::support::on_backend;
        a_key_has_its_own_rate_limit,
        webhooks_are_managed_over_http,
    );
    use super::{a_key_has_its_own_rate_limit, webhooks_are_managed_over_http};
}
