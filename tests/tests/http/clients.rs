//! What real clients send (docs/api.md "Requests and answers"): booleans as Python and
//! other clients write them, a JSON document sent as a form (`curl -d`'s
//! default type), and errors that never echo more than 100 characters of
//! the input.

use confab_tests::http::TestApp;
use reqwest::Method;
use serde_json::json;

async fn booleans_in_any_letter_case_or_as_1_and_0(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let c = app.direct(&alice, &bob).await;
    let path = format!("/v1/conversations/{c}");
    for (value, muted) in [
        ("True", true),
        ("FALSE", false),
        ("1", true),
        ("0", false),
        ("tRuE", true),
    ] {
        let r = app.put(&alice, &path, &[("is_muted", value)]).await;
        assert_eq!(r.expect(200)["is_muted"], muted, "form {value}");
    }
    for (value, muted) in [
        (json!(false), false),
        (json!(1), true),
        (json!(0), false),
        (json!(true), true),
    ] {
        let r = app
            .json(Method::PUT, &alice, &path, &json!({ "is_muted": value }))
            .await;
        assert_eq!(r.expect(200)["is_muted"], muted, "JSON {value}");
    }
    // Filters take them too.
    let r = app.get(&alice, "/v1/conversations?muted=TRUE").await;
    assert_eq!(r.expect(200)["data"].as_array().expect("data").len(), 1);
    for bad in ["yes", "2", "", "truth"] {
        app.put(&alice, &path, &[("is_muted", bad)])
            .await
            .expect_error(400, "parameter_invalid", Some("is_muted"));
    }
    for bad in [json!("true"), json!(2), json!(null)] {
        app.json(Method::PUT, &alice, &path, &json!({ "is_muted": bad }))
            .await
            .expect_error(400, "parameter_invalid", Some("is_muted"));
    }
}

async fn a_json_document_sent_as_a_form_says_what_to_do(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let c = app.direct(&alice, &bob).await;
    let body = json!({"conversation_id": c, "message": "hello"}).to_string();
    let r = app
        .send(
            Method::POST,
            "/v1/messages",
            Some(&alice.token),
            Some(("application/x-www-form-urlencoded", body.into_bytes())),
            &[],
        )
        .await;
    r.expect_error(400, "body_invalid", None);
    let message = r.body["message"].as_str().expect("message");
    assert!(
        message.contains("Content-Type: application/json"),
        "{message}"
    );
    // Nothing was sent.
    let page = app
        .get(&alice, &format!("/v1/messages?conversation_id={c}"))
        .await;
    assert_eq!(page.expect(200)["data"], json!([]));
    // A form whose value merely starts with a brace is a form.
    let r = app
        .post(
            &alice,
            "/v1/messages",
            &[("conversation_id", &c), ("message", "{not json")],
        )
        .await;
    assert_eq!(r.expect(201)["message"], "{not json");
}

async fn errors_echo_at_most_100_characters_of_the_input(app: TestApp) {
    let alice = app.user("alice").await;
    let long_key = "k".repeat(30_000);
    let r = app.post(&alice, "/v1/messages", &[(&long_key, "x")]).await;
    r.expect(400);
    assert_eq!(r.body["code"], "parameter_unknown");
    let param = r.body["param"].as_str().expect("param");
    assert!(
        param.chars().count() <= 103,
        "param of {} characters",
        param.len()
    );
    let message = r.body["message"].as_str().expect("message");
    assert!(message.len() < 300, "message of {} bytes", message.len());
    assert!(r.raw.len() < 600, "an error of {} bytes", r.raw.len());
}

/// `distinct=true`: the caller's existing direct conversation (200), else
/// a new one (201); without it, a POST makes another, as before.
async fn distinct_returns_the_existing_direct_conversation(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let first = app
        .post(
            &alice,
            "/v1/conversations",
            &[("contact_id", &bob.id), ("distinct", "true")],
        )
        .await;
    let id = first.expect(201)["id"].clone();
    // Either of the two asks: the same conversation, 200.
    for (who, peer) in [(&alice, &bob), (&bob, &alice)] {
        let again = app
            .json(
                Method::POST,
                who,
                "/v1/conversations",
                &json!({"contact_id": peer.id, "distinct": true}),
            )
            .await;
        assert_eq!(again.expect(200)["id"], id, "{}", who.username);
    }
    // Another contact: a new one.
    app.post(
        &alice,
        "/v1/conversations",
        &[("contact_id", &carol.id), ("distinct", "1")],
    )
    .await
    .expect(201);
    // Without distinct (or false): another conversation, as before.
    for distinct in ["false", "0"] {
        let other = app
            .post(
                &alice,
                "/v1/conversations",
                &[("contact_id", &bob.id), ("distinct", distinct)],
            )
            .await;
        assert_ne!(other.expect(201)["id"], id);
    }
    // With a group: refused, nothing made.
    let group = app
        .json(
            Method::POST,
            &alice,
            "/v1/groups",
            &json!({"name": "g", "contact_ids": [bob.id]}),
        )
        .await;
    let group = group.expect(201)["id"].as_str().expect("id").to_owned();
    app.post(
        &alice,
        "/v1/conversations",
        &[("group_id", &group), ("distinct", "true")],
    )
    .await
    .expect_error(400, "parameter_invalid", Some("distinct"));
    app.post(
        &alice,
        "/v1/conversations",
        &[("contact_id", &bob.id), ("distinct", "maybe")],
    )
    .await
    .expect_error(400, "parameter_invalid", Some("distinct"));
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    distinct_returns_the_existing_direct_conversation,
    booleans_in_any_letter_case_or_as_1_and_0,
    a_json_document_sent_as_a_form_says_what_to_do,
    errors_echo_at_most_100_characters_of_the_input,
);
