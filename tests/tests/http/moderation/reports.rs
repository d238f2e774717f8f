//! Reports (docs/api.md "Blocks and reports"): validation, what a report names, one
//! report per target while it is open, a reporter's own reports, the
//! operators' list and their decisions, and `report.created`, which no
//! contact ever hears.

use std::time::Duration;

use confab_tests::http::{Resp, TestApp, User};
use reqwest::Method;
use serde_json::{json, Value};

use super::{after_marker, all_events, server_key, with_key};
use crate::events::Sse;
use crate::support::{
    assert_id, assert_recent, group_conversation, id_of, keys, new_group, UNKNOWN_ID,
};

/// The fields of a report object, sorted.
const REPORT_KEYS: [&str; 7] = [
    "contact_id",
    "created_at",
    "description",
    "id",
    "message_id",
    "reason",
    "status",
];

/// The fields of the operators' report object, sorted.
const ADMIN_REPORT_KEYS: [&str; 9] = [
    "contact_id",
    "created_at",
    "description",
    "id",
    "message_id",
    "reason",
    "reporter_id",
    "status",
    "updated_at",
];

async fn report(app: &TestApp, by: &User, pairs: &[(&str, &str)]) -> Resp {
    app.post(by, "/v1/reports", pairs).await
}

/// `by` reports a message; the report object (201).
async fn report_message(app: &TestApp, by: &User, message: &str, reason: &str) -> Value {
    let r = report(app, by, &[("message_id", message), ("reason", reason)]).await;
    r.expect(201).clone()
}

/// `by` reports a contact; the report object (201).
async fn report_contact(app: &TestApp, by: &User, whom: &User, reason: &str) -> Value {
    let r = report(app, by, &[("contact_id", &whom.id), ("reason", reason)]).await;
    r.expect(201).clone()
}

async fn admin(app: &TestApp, key: &str, method: Method, path: &str, body: Option<Value>) -> Resp {
    with_key(app, method, path, key, body, &[]).await
}

/// The operator sets a report's status; the admin object (200).
async fn decide(app: &TestApp, key: &str, id: &str, status: &str) -> Value {
    let r = admin(
        app,
        key,
        Method::PUT,
        &format!("/v1/admin/reports/{id}"),
        Some(json!({ "status": status })),
    )
    .await;
    r.expect(200).clone()
}

/// The ids and `has_more` of a page of `GET /v1/admin/reports?query`.
async fn admin_page(app: &TestApp, key: &str, query: &str) -> (Vec<String>, bool) {
    let r = admin(
        app,
        key,
        Method::GET,
        &format!("/v1/admin/reports?{query}"),
        None,
    )
    .await;
    let body = r.expect(200);
    (crate::support::data_ids(body), body["has_more"] == true)
}

async fn reports_are_validated(app: TestApp) {
    let key = server_key(&app).await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let dave = app.user("dave").await;
    let direct = app.direct(&alice, &bob).await;
    let of_alice = id_of(&app.send_message(&alice, &direct, "mine").await);
    let of_bob = id_of(&app.send_message(&bob, &direct, "his").await);
    let theirs = app.direct(&carol, &dave).await;
    let unseen = id_of(&app.send_message(&carol, &theirs, "not for alice").await);
    let long = "d".repeat(1001);

    type Refusal<'a> = (Vec<(&'a str, &'a str)>, u16, &'a str, &'a str);
    let cases: Vec<Refusal> = vec![
        // Neither target, or both.
        (
            vec![("reason", "spam")],
            400,
            "parameter_missing",
            "message_id",
        ),
        (
            vec![
                ("message_id", of_bob.as_str()),
                ("contact_id", bob.id.as_str()),
                ("reason", "spam"),
            ],
            400,
            "parameter_invalid",
            "contact_id",
        ),
        // The reason: required, one of four.
        (
            vec![("message_id", of_bob.as_str())],
            400,
            "parameter_missing",
            "reason",
        ),
        (
            vec![("contact_id", bob.id.as_str())],
            400,
            "parameter_missing",
            "reason",
        ),
        (
            vec![("message_id", of_bob.as_str()), ("reason", "bogus")],
            400,
            "parameter_invalid",
            "reason",
        ),
        (
            vec![("message_id", of_bob.as_str()), ("reason", "")],
            400,
            "parameter_invalid",
            "reason",
        ),
        // The description: at most 1000 characters.
        (
            vec![
                ("message_id", of_bob.as_str()),
                ("reason", "spam"),
                ("description", long.as_str()),
            ],
            400,
            "parameter_invalid",
            "description",
        ),
        // A message the reporter cannot see; one's own.
        (
            vec![("message_id", UNKNOWN_ID), ("reason", "spam")],
            404,
            "not_found",
            "message_id",
        ),
        (
            vec![("message_id", unseen.as_str()), ("reason", "spam")],
            404,
            "not_found",
            "message_id",
        ),
        (
            vec![("message_id", of_alice.as_str()), ("reason", "spam")],
            400,
            "parameter_invalid",
            "message_id",
        ),
        // A contact that does not exist; oneself.
        (
            vec![("contact_id", UNKNOWN_ID), ("reason", "spam")],
            404,
            "not_found",
            "contact_id",
        ),
        (
            vec![("contact_id", alice.id.as_str()), ("reason", "spam")],
            400,
            "parameter_invalid",
            "contact_id",
        ),
        // Parameters a report does not take.
        (
            vec![
                ("message_id", of_bob.as_str()),
                ("reason", "spam"),
                ("status", "resolved"),
            ],
            400,
            "parameter_unknown",
            "status",
        ),
        (
            vec![
                ("contact_id", bob.id.as_str()),
                ("reason", "spam"),
                ("reporter_id", bob.id.as_str()),
            ],
            400,
            "parameter_unknown",
            "reporter_id",
        ),
    ];
    for (pairs, status, code, param) in &cases {
        let r = report(&app, &alice, pairs).await;
        assert_eq!(r.status.as_u16(), *status, "{pairs:?}: {}", r.raw);
        r.expect_error(*status, code, Some(param));
    }
    // JSON: a reason that is not a string.
    app.json(
        Method::POST,
        &alice,
        "/v1/reports",
        &json!({"message_id": of_bob, "reason": 5}),
    )
    .await
    .expect_error(400, "parameter_invalid", Some("reason"));
    // None of it made a report.
    assert_eq!(admin_page(&app, &key, "limit=100").await, (vec![], false));

    // At the limits: 1000 characters (not bytes), and an empty description.
    let wide = "é".repeat(1000);
    let r = report(
        &app,
        &alice,
        &[
            ("message_id", &of_bob),
            ("reason", "other"),
            ("description", &wide),
        ],
    )
    .await;
    assert_eq!(r.expect(201)["description"], wide.as_str());
    let r = report(
        &app,
        &alice,
        &[
            ("contact_id", &bob.id),
            ("reason", "spam"),
            ("description", ""),
        ],
    )
    .await;
    assert_eq!(r.expect(201)["description"], "");
}

async fn a_report_names_the_sender_of_the_message(app: TestApp) {
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let dave = app.user("dave").await;
    let gid = new_group(&app, &carol, "Carol's", &[&alice, &bob]).await;
    let conv = group_conversation(&app, &carol, &gid).await;
    let of_bob = id_of(&app.send_message(&bob, &conv, "nasty").await);

    // A message: its sender is the contact reported; description "".
    let r = report(
        &app,
        &alice,
        &[("message_id", &of_bob), ("reason", "harassment")],
    )
    .await;
    let made = r.expect(201).clone();
    assert_eq!(keys(&made), REPORT_KEYS, "{made}");
    let id = assert_id(&made["id"]);
    assert_eq!(made["message_id"], of_bob.as_str());
    assert_eq!(made["contact_id"], bob.id.as_str());
    assert_eq!(made["reason"], "harassment");
    assert_eq!(made["description"], "");
    assert_eq!(made["status"], "open");
    assert_recent(&made["created_at"]);
    let location = r.header("location").expect("Location");
    assert!(
        location.ends_with(&format!("/v1/reports/{id}")),
        "{location}"
    );

    // A contact: no message.
    let r = report(
        &app,
        &alice,
        &[
            ("contact_id", &carol.id),
            ("reason", "other"),
            ("description", "spams everyone"),
        ],
    )
    .await;
    let about_carol = r.expect(201);
    assert_eq!(keys(about_carol), REPORT_KEYS);
    assert!(about_carol["message_id"].is_null(), "{about_carol}");
    assert_eq!(about_carol["contact_id"], carol.id.as_str());
    assert_eq!(about_carol["description"], "spams everyone");
    // Any existing contact, shared conversation or not.
    report_contact(&app, &alice, &dave, "spam").await;
    // JSON, every reason.
    let of_carol = id_of(&app.send_message(&carol, &conv, "hmm").await);
    for reason in ["spam", "harassment", "inappropriate", "other"] {
        let r = app
            .json(
                Method::POST,
                &bob,
                "/v1/reports",
                &json!({"message_id": of_carol, "reason": reason, "description": "x"}),
            )
            .await;
        // The first is made; the others find it open (200).
        let want = if reason == "spam" { 201 } else { 200 };
        assert_eq!(r.expect(want)["reason"], "spam", "{}", r.raw);
    }
    // A message the reporter no longer sees (removed from the group): 404.
    let later = id_of(&app.send_message(&bob, &conv, "later").await);
    app.put(
        &carol,
        &format!("/v1/groups/{gid}"),
        &[("remove_contact_ids[]", &alice.id)],
    )
    .await
    .expect(200);
    report(&app, &alice, &[("message_id", &later), ("reason", "spam")])
        .await
        .expect_error(404, "not_found", Some("message_id"));
}

async fn a_report_is_made_once_while_open(app: TestApp) {
    let key = server_key(&app).await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let direct = app.direct(&alice, &bob).await;
    let of_bob = id_of(&app.send_message(&bob, &direct, "spam spam").await);

    let first = report(
        &app,
        &alice,
        &[
            ("message_id", &of_bob),
            ("reason", "spam"),
            ("description", "first"),
        ],
    )
    .await;
    let first = first.expect(201).clone();
    // Again, with another reason and description (form and JSON): 200
    // with the first, unchanged.
    let again = report(
        &app,
        &alice,
        &[
            ("message_id", &of_bob),
            ("reason", "harassment"),
            ("description", "second"),
        ],
    )
    .await;
    assert_eq!(again.expect(200), &first);
    let again = app
        .json(
            Method::POST,
            &alice,
            "/v1/reports",
            &json!({"message_id": of_bob, "reason": "other"}),
        )
        .await;
    assert_eq!(again.expect(200), &first);
    // Another target, another report; another reporter, another report.
    let of_contact = report_contact(&app, &alice, &bob, "spam").await;
    assert_ne!(of_contact["id"], first["id"]);
    let r = report(
        &app,
        &alice,
        &[("contact_id", &bob.id), ("reason", "other")],
    )
    .await;
    assert_eq!(r.expect(200), &of_contact);
    let by_carol = report_contact(&app, &carol, &bob, "spam").await;
    assert_ne!(by_carol["id"], of_contact["id"]);

    // Once resolved, a new report is a new one (201), itself open.
    decide(&app, &key, id_of(&first).as_str(), "resolved").await;
    let second = report_message(&app, &alice, &of_bob, "other").await;
    assert_ne!(second["id"], first["id"]);
    assert_eq!(second["reason"], "other");
    assert_eq!(second["status"], "open");
    let r = report(&app, &alice, &[("message_id", &of_bob), ("reason", "spam")]).await;
    assert_eq!(r.expect(200), &second);
    // Dismissed: the same.
    decide(&app, &key, id_of(&of_contact).as_str(), "dismissed").await;
    let r = report(&app, &alice, &[("contact_id", &bob.id), ("reason", "spam")]).await;
    assert_ne!(r.expect(201)["id"], of_contact["id"]);
    // The first report keeps its history: resolved.
    let got = app
        .get(&alice, &format!("/v1/reports/{}", id_of(&first)))
        .await;
    assert_eq!(got.expect(200)["status"], "resolved");
}

async fn a_reporter_sees_only_their_own_reports(app: TestApp) {
    let key = server_key(&app).await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let made = report_contact(&app, &alice, &bob, "spam").await;
    let path = format!("/v1/reports/{}", id_of(&made));

    let got = app.get(&alice, &path).await;
    assert_eq!(got.expect(200), &made);
    // The reported, anyone else: 404, like a report that does not exist.
    for who in [&bob, &carol] {
        app.get(who, &path)
            .await
            .expect_error(404, "not_found", None);
    }
    for id in [UNKNOWN_ID, "nope"] {
        app.get(&alice, &format!("/v1/reports/{id}"))
            .await
            .expect_error(404, "not_found", None);
    }
    // With its current status, and no operator's fields.
    decide(&app, &key, id_of(&made).as_str(), "dismissed").await;
    let got = app.get(&alice, &path).await;
    let got = got.expect(200);
    assert_eq!(keys(got), REPORT_KEYS);
    assert_eq!(got["status"], "dismissed");
    assert_eq!(got["created_at"], made["created_at"]);
}

async fn operators_list_filter_and_close_reports(app: TestApp) {
    let key = server_key(&app).await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let dave = app.user("dave").await;
    let direct = app.direct(&alice, &bob).await;
    let of_bob = id_of(&app.send_message(&bob, &direct, "buy now").await);
    let r1 = report_contact(&app, &alice, &bob, "spam").await;
    let r2 = report_contact(&app, &bob, &alice, "harassment").await;
    let r3 = report_contact(&app, &carol, &dave, "other").await;
    let r4 = report_message(&app, &alice, &of_bob, "inappropriate").await;
    let r5 = report_contact(&app, &dave, &carol, "spam").await;
    let reporters = [&alice, &bob, &carol, &alice, &dave];
    let made = [&r1, &r2, &r3, &r4, &r5];
    let id = |i: usize| id_of(made[i - 1]);

    // Oldest first; each the report and who made it, updated_at as made.
    let r = admin(&app, &key, Method::GET, "/v1/admin/reports", None).await;
    let body = r.expect(200).clone();
    assert_eq!(body["has_more"], false);
    let items = body["data"].as_array().expect("data");
    assert_eq!(
        crate::support::data_ids(&body),
        (1..=5).map(id).collect::<Vec<_>>()
    );
    for ((item, report), reporter) in items.iter().zip(made).zip(reporters) {
        assert_eq!(keys(item), ADMIN_REPORT_KEYS, "{item}");
        assert_eq!(item["reporter_id"], reporter.id.as_str(), "{item}");
        assert_eq!(item["updated_at"], item["created_at"], "{item}");
        for k in REPORT_KEYS {
            assert_eq!(item[k], report[k], "{k}: {item}");
        }
    }
    let one = admin(
        &app,
        &key,
        Method::GET,
        &format!("/v1/admin/reports/{}", id(4)),
        None,
    )
    .await;
    assert_eq!(one.expect(200), &items[3]);
    for bad in [UNKNOWN_ID, "nope"] {
        admin(
            &app,
            &key,
            Method::GET,
            &format!("/v1/admin/reports/{bad}"),
            None,
        )
        .await
        .expect_error(404, "not_found", None);
    }
    // Paging both ways.
    assert_eq!(
        admin_page(&app, &key, "limit=2").await,
        (vec![id(1), id(2)], true)
    );
    assert_eq!(
        admin_page(&app, &key, &format!("limit=2&starting_after={}", id(2))).await,
        (vec![id(3), id(4)], true)
    );
    assert_eq!(
        admin_page(&app, &key, &format!("limit=2&starting_after={}", id(4))).await,
        (vec![id(5)], false)
    );
    assert_eq!(
        admin_page(&app, &key, &format!("limit=2&ending_before={}", id(5))).await,
        (vec![id(3), id(4)], true)
    );
    assert_eq!(
        admin_page(&app, &key, &format!("limit=2&ending_before={}", id(3))).await,
        (vec![id(1), id(2)], false)
    );
    for (query, param) in [
        (format!("starting_after={UNKNOWN_ID}"), "starting_after"),
        ("limit=0".to_owned(), "limit"),
        ("status=closed".to_owned(), "status"),
        ("status=".to_owned(), "status"),
    ] {
        admin(
            &app,
            &key,
            Method::GET,
            &format!("/v1/admin/reports?{query}"),
            None,
        )
        .await
        .expect_error(400, "parameter_invalid", Some(param));
    }

    // Decisions: the admin object, with its new status and updated_at.
    let resolved = decide(&app, &key, &id(2), "resolved").await;
    assert_eq!(keys(&resolved), ADMIN_REPORT_KEYS);
    assert_eq!(resolved["status"], "resolved");
    assert_eq!(resolved["created_at"], r2["created_at"]);
    let updated = resolved["updated_at"].as_i64().expect("updated_at");
    assert!(updated >= r2["created_at"].as_i64().expect("created_at"));
    assert_recent(&resolved["updated_at"]);
    decide(&app, &key, &id(4), "dismissed").await;
    // PUT errors.
    let put = |id: String, body: Value| {
        let app = &app;
        let key = key.clone();
        async move {
            admin(
                app,
                &key,
                Method::PUT,
                &format!("/v1/admin/reports/{id}"),
                Some(body),
            )
            .await
        }
    };
    put(id(1), json!({}))
        .await
        .expect_error(400, "parameter_missing", Some("status"));
    put(id(1), json!({"status": "closed"})).await.expect_error(
        400,
        "parameter_invalid",
        Some("status"),
    );
    put(id(1), json!({"status": "resolved", "reason": "spam"}))
        .await
        .expect_error(400, "parameter_unknown", Some("reason"));
    put(UNKNOWN_ID.to_owned(), json!({"status": "resolved"}))
        .await
        .expect_error(404, "not_found", None);

    // Filters, paged too.
    assert_eq!(
        admin_page(&app, &key, "status=open").await,
        (vec![id(1), id(3), id(5)], false)
    );
    assert_eq!(
        admin_page(&app, &key, "status=resolved").await,
        (vec![id(2)], false)
    );
    assert_eq!(
        admin_page(&app, &key, "status=dismissed").await,
        (vec![id(4)], false)
    );
    assert_eq!(
        admin_page(&app, &key, "status=open&limit=2").await,
        (vec![id(1), id(3)], true)
    );
    assert_eq!(
        admin_page(
            &app,
            &key,
            &format!("status=open&limit=2&starting_after={}", id(3))
        )
        .await,
        (vec![id(5)], false)
    );
    // Back to open: any of the three.
    assert_eq!(decide(&app, &key, &id(2), "open").await["status"], "open");
    // The reporter sees the decision.
    let theirs = app.get(&alice, &format!("/v1/reports/{}", id(4))).await;
    assert_eq!(theirs.expect(200)["status"], "dismissed");

    // A contact's token: 403 on every operator route, nothing changes.
    for (method, path, body) in [
        (Method::GET, "/v1/admin/reports".to_owned(), None),
        (Method::GET, format!("/v1/admin/reports/{}", id(1)), None),
        (
            Method::PUT,
            format!("/v1/admin/reports/{}", id(1)),
            Some(json!({"status": "dismissed"})),
        ),
    ] {
        let r = match body {
            Some(b) => app.json(method, &alice, &path, &b).await,
            None => app.send(method, &path, Some(&alice.token), None, &[]).await,
        };
        r.expect_error(403, "forbidden", None);
    }
    let r1_now = admin(
        &app,
        &key,
        Method::GET,
        &format!("/v1/admin/reports/{}", id(1)),
        None,
    )
    .await;
    assert_eq!(r1_now.expect(200)["status"], "open");
}

/// Whether `events` hold anything of a report: its type or one of `ids`.
fn report_events<'a>(events: &'a [Value], ids: &[String]) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| {
            let text = e.to_string();
            e["type"] == "report.created" || ids.iter().any(|id| text.contains(id.as_str()))
        })
        .collect()
}

async fn report_created_is_never_an_event_for_a_contact(app: TestApp) {
    let key = server_key(&app).await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let carol = app.user("carol").await;
    let gid = new_group(&app, &alice, "Team", &[&bob, &carol]).await;
    let conv = group_conversation(&app, &alice, &gid).await;
    let of_bob = id_of(&app.send_message(&bob, &conv, "offensive").await);
    // Streams open before the reports.
    let mut streams = Vec::new();
    for u in [&alice, &bob, &carol] {
        streams.push(Sse::open(&app.base_url, &u.token, "/v1/events", &[]).await);
    }

    let ids = vec![
        id_of(&report_message(&app, &alice, &of_bob, "harassment").await),
        id_of(&report_contact(&app, &alice, &bob, "spam").await),
        id_of(&report_message(&app, &carol, &of_bob, "spam").await),
        id_of(&report_contact(&app, &bob, &alice, "other").await),
    ];
    // A marker after them reaches everyone.
    let marker = app.send_message(&alice, &conv, "after the reports").await;
    let marker = id_of(&marker);

    // The catch-up list (as each contact, and as a key acting for them).
    for u in [&alice, &bob, &carol] {
        let events = after_marker(&app, &alice, u, &conv, "marker").await;
        let found = report_events(&events, &ids);
        assert!(found.is_empty(), "{} lists {found:#?}", u.username);
        let acting = with_key(
            &app,
            Method::GET,
            "/v1/events?limit=100",
            &key,
            None,
            &[
                ("confab-contact", u.id.as_str()),
                ("accept", "application/json"),
            ],
        )
        .await;
        let listed = acting.expect(200)["data"].as_array().expect("data").clone();
        assert!(report_events(&listed, &ids).is_empty(), "{}", acting.raw);
        let all = all_events(&app, u, 100).await;
        assert!(report_events(&all, &ids).is_empty());
    }
    // The streams: everything up to the marker, no report.
    for (mut stream, u) in streams.into_iter().zip([&alice, &bob, &carol]) {
        let mut seen = Vec::new();
        loop {
            let e = stream
                .event(Duration::from_secs(10))
                .await
                .unwrap_or_else(|| panic!("{}'s stream: no marker after {seen:#?}", u.username));
            let done = e.kind == "message.created" && e.data["payload"]["id"] == marker.as_str();
            seen.push(e.data);
            if done {
                break;
            }
        }
        let found = report_events(&seen, &ids);
        assert!(found.is_empty(), "{}'s stream had {found:#?}", u.username);
    }
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    reports_are_validated,
    a_report_names_the_sender_of_the_message,
    a_report_is_made_once_while_open,
    a_reporter_sees_only_their_own_reports,
    operators_list_filter_and_close_reports,
    report_created_is_never_an_event_for_a_contact,
);
