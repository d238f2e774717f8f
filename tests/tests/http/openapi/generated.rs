//! What clients generated from the document rely on, checked against the
//! live server with real objects: every id on the wire is described as a
//! UUID and a list's items are their object's own schema (one type for an
//! id alone and in a page); `Idempotency-Key` is listed exactly on the
//! operations where a retry replays; a body is `required` exactly when the
//! request fails without one. (tests/clients/run.sh then generates the
//! clients themselves.)

use std::collections::{BTreeMap, BTreeSet};

use confab_server::startup::{RateLimits, ServerOptions};
use confab_tests::db::Backend;
use confab_tests::http::{Resp, TestApp, User};
use reqwest::Method;
use serde_json::{json, Value};

use super::{documented_routes, fetch_document, operation};

/// The objects of every kind, so that each documented GET has something to
/// show and each write something to act on.
struct World {
    app: TestApp,
    doc: Value,
    key: String,
    alice: User,
    bob: User,
    carol: User,
    conversation: String,
    /// alice's, mentioning bob, replying to bob's, with an upload, edited.
    message: String,
    /// bob's, reported by alice.
    bobs_message: String,
    group: String,
    upload: String,
    report: String,
    webhook: String,
    /// The erase of dan, who had a message: left running after its first
    /// batch (no budget).
    job: String,
}

fn id_of(r: &Resp, status: u16) -> String {
    r.expect(status)["id"].as_str().expect("id").to_owned()
}

impl World {
    async fn new(backend: Backend) -> World {
        // The webhook points at this machine (nothing listens there).
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
        let doc = fetch_document(&app).await;
        let key = app
            .service
            .create_server_key("generated clients")
            .await
            .expect("server key")
            .secret;
        let (alice, bob, carol) = (
            app.user("alice").await,
            app.user("bob").await,
            app.user("carol").await,
        );
        let hook = json!({"url": "http://127.0.0.1:9/confab-hook"});
        let hook = Some(("application/json", hook.to_string().into_bytes()));
        let webhook = id_of(
            &app.send(Method::POST, "/v1/admin/webhooks", Some(&key), hook, &[])
                .await,
            201,
        );
        let conversation = app.direct(&alice, &bob).await;
        let bobs_message = app.send_message(&bob, &conversation, "hello alice").await["id"]
            .as_str()
            .expect("id")
            .to_owned();
        let upload = id_of(&app.upload(&alice, "notes.txt", b"notes").await, 201);
        let sent = app
            .json(
                Method::POST,
                &alice,
                "/v1/messages",
                &json!({
                    "conversation_id": conversation,
                    "message": "hello bob",
                    "mentions": [bob.id],
                    "reply_to_id": bobs_message,
                    "attachments": [{"id": upload}],
                }),
            )
            .await;
        let message = id_of(&sent, 201);
        app.json(
            Method::PUT,
            &alice,
            &format!("/v1/messages/{message}"),
            &json!({"message": "hello again bob"}),
        )
        .await
        .expect(200);
        let report = id_of(
            &app.json(
                Method::POST,
                &alice,
                "/v1/reports",
                &json!({"message_id": bobs_message, "reason": "spam"}),
            )
            .await,
            201,
        );
        let group = id_of(
            &app.json(
                Method::POST,
                &alice,
                "/v1/groups",
                &json!({"name": "team", "contact_ids": [bob.id]}),
            )
            .await,
            201,
        );
        app.post(&alice, &format!("/v1/contacts/{}/block", carol.id), &[])
            .await
            .expect(201);
        let dan = app.user("dan").await;
        let dans = app.direct(&dan, &bob).await;
        app.send_message(&dan, &dans, "hello bob").await;
        let dan_id = dan.id.parse().expect("contact id");
        let job = match app
            .service
            .erase_contact(dan_id, std::time::Duration::ZERO)
            .await
            .expect("erase")
        {
            confab_service::Finished::Running(job) => job.id.to_string(),
            confab_service::Finished::Done => panic!("dan's erase took one batch"),
        };
        World {
            app,
            doc,
            key,
            alice,
            bob,
            carol,
            conversation,
            message,
            bobs_message,
            group,
            upload,
            report,
            webhook,
            job,
        }
    }

    /// A concrete path for a documented one, with the query a GET of it
    /// needs, and the credential to call it with: the server key on
    /// /v1/admin, else alice's token. Panics on a path it does not know, so
    /// that a new route is added here.
    fn call(&self, method: &str, path: &str) -> (String, &str) {
        let w = self;
        let id = match path {
            p if p.starts_with("/v1/admin/contacts/") => &w.alice.id,
            p if p.starts_with("/v1/admin/conversations/") => &w.conversation,
            p if p.starts_with("/v1/admin/reports/") => &w.report,
            p if p.starts_with("/v1/admin/webhooks/") => &w.webhook,
            p if p.starts_with("/v1/admin/jobs/") => &w.job,
            p if p.starts_with("/v1/attachments/") => &w.upload,
            // alice blocks carol (not bob: she writes to bob).
            p if p.starts_with("/v1/contacts/") && p.ends_with("/block") => &w.carol.id,
            p if p.starts_with("/v1/contacts/") => &w.bob.id,
            p if p.starts_with("/v1/conversations/") => &w.conversation,
            p if p.starts_with("/v1/groups/") => &w.group,
            p if p.starts_with("/v1/messages/") => &w.message,
            p if p.starts_with("/v1/reports/") => &w.report,
            p if !p.contains('{') => "",
            p => panic!("{method} {p}: which object? (add it to World::call)"),
        };
        let mut concrete = path.replace("{id}", id);
        if method == "GET" {
            match path {
                "/v1/messages" => {
                    concrete.push_str(&format!("?conversation_id={}", w.conversation))
                }
                "/v1/messages/search" => concrete.push_str("?query=hello"),
                "/v1/contacts" => concrete.push_str("?username=bob"),
                _ => {}
            }
        }
        let credential = if path.starts_with("/v1/admin") {
            w.key.as_str()
        } else {
            w.alice.token.as_str()
        };
        (concrete, credential)
    }
}

/// The schema `schema` names, following `$ref`s.
fn resolve<'a>(doc: &'a Value, mut schema: &'a Value) -> &'a Value {
    while let Some(pointer) = schema.get("$ref").and_then(Value::as_str) {
        schema = doc
            .pointer(pointer.trim_start_matches('#'))
            .unwrap_or_else(|| panic!("{pointer} resolves to nothing"));
    }
    schema
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36 && uuid::Uuid::try_parse(s).is_ok()
}

/// Walks `value` with its schema: every UUID string must be described as
/// `format: uuid` and every `format: uuid` string must be one. Counts the
/// UUIDs seen.
fn check_ids(doc: &Value, schema: &Value, value: &Value, at: &str, out: &mut Check) {
    let schema = resolve(doc, schema);
    if let Some(branches) = schema.get("oneOf").and_then(Value::as_array) {
        // A nullable object: `[object, null]`.
        if !value.is_null() {
            let branch = branches
                .iter()
                .map(|b| resolve(doc, b))
                .find(|b| b.get("type") != Some(&json!("null")))
                .unwrap_or_else(|| panic!("{at}: no branch for {value}"));
            check_ids(doc, branch, value, at, out);
        }
        return;
    }
    match value {
        Value::String(s) => {
            let described = schema.get("format") == Some(&json!("uuid"));
            if is_uuid(s) {
                out.ids += 1;
            }
            if is_uuid(s) != described {
                out.problems.push(format!(
                    "{at}: {s:?}, described {}",
                    serde_json::to_string(schema).unwrap_or_default()
                ));
            }
        }
        Value::Array(items) => {
            let item = schema.get("items").unwrap_or(&Value::Null);
            for (i, v) in items.iter().enumerate() {
                check_ids(doc, item, v, &format!("{at}[{i}]"), out);
            }
        }
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let extra = schema.get("additionalProperties").filter(|s| s.is_object());
            if props.is_none() && extra.is_none() {
                // A free-form object (an event's payload): described as one.
                return;
            }
            for (key, v) in map {
                match props.and_then(|p| p.get(key)).or(extra) {
                    Some(s) => check_ids(doc, s, v, &format!("{at}.{key}"), out),
                    None => out.problems.push(format!("{at}.{key}: not in its schema")),
                }
            }
        }
        _ => {}
    }
}

#[derive(Default)]
struct Check {
    ids: usize,
    problems: Vec<String>,
}

async fn every_id_on_the_wire_is_described_as_a_uuid(backend: Backend) {
    let w = World::new(backend).await;
    let doc = &w.doc;
    // A page's items are their object's schema, not a copy: a generated
    // client then reads an id the same way alone and in a list.
    for (name, schema) in doc["components"]["schemas"].as_object().expect("schemas") {
        if let Some(item) = name.strip_prefix("ListDto_") {
            assert_eq!(
                schema["properties"]["data"]["items"],
                json!({ "$ref": format!("#/components/schemas/{item}") }),
                "the items of {name}"
            );
        }
    }
    // Pages that may be empty here: search indexes off the send's path, a
    // delivery is attempted in the background.
    let may_be_empty = ["/v1/messages/search", "/v1/admin/webhooks/{id}/deliveries"];
    let mut check = Check::default();
    let mut read = 0;
    for (method, path) in documented_routes(doc) {
        let op = operation(doc, &method, &path);
        let Some(schema) = op.pointer("/responses/200/content/application~1json/schema") else {
            continue;
        };
        if method != "GET" || !path.starts_with("/v1/") {
            continue;
        }
        let (url, credential) = w.call(&method, &path);
        // On PostgreSQL an event becomes readable once no transaction that
        // began before its commit is still running, anywhere on the server
        // (other tests' included): the catch-up list is asked again for a
        // while before it counts as empty.
        let patient = path == "/v1/events";
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let body = loop {
            let r = w
                .app
                .send(
                    Method::GET,
                    &url,
                    Some(credential),
                    None,
                    &[("accept", "application/json")],
                )
                .await;
            let body = r.expect(200).clone();
            let empty = body
                .get("data")
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty);
            if !(patient && empty && std::time::Instant::now() < deadline) {
                break body;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        };
        if let Some(items) = body.get("data").and_then(Value::as_array) {
            assert!(
                !items.is_empty() || may_be_empty.contains(&path.as_str()),
                "GET {url}: an empty page checks nothing"
            );
        }
        check_ids(doc, schema, &body, &format!("GET {url}"), &mut check);
        read += 1;
    }
    assert!(
        check.problems.is_empty(),
        "ids not described as such:\n{}",
        check.problems.join("\n")
    );
    assert!(
        read >= 25 && check.ids >= 60,
        "{read} reads, {} ids",
        check.ids
    );
}

/// The operations whose retry with the same `Idempotency-Key` replays the
/// first answer.
const IDEMPOTENT: [(&str, &str); 6] = [
    ("POST", "/v1/attachments"),
    ("POST", "/v1/contacts/{id}/block"),
    ("POST", "/v1/conversations"),
    ("POST", "/v1/groups"),
    ("POST", "/v1/messages"),
    ("POST", "/v1/reports"),
];

fn advertised(doc: &Value) -> BTreeSet<(String, String)> {
    documented_routes(doc)
        .into_iter()
        .filter(|(method, path)| {
            operation(doc, method, path)["parameters"]
                .as_array()
                .is_some_and(|params| {
                    params
                        .iter()
                        .any(|p| p["name"] == "Idempotency-Key" && p["in"] == "header")
                })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotency_key_is_listed_exactly_where_a_retry_replays() {
    let w = World::new(Backend::Sqlite).await;
    let listed = advertised(&w.doc);
    let expected: BTreeSet<(String, String)> = IDEMPOTENT
        .iter()
        .map(|(m, p)| ((*m).to_owned(), (*p).to_owned()))
        .collect();
    assert_eq!(listed, expected);
    for (method, path) in &listed {
        let responses = &operation(&w.doc, method, path)["responses"];
        for status in ["409", "422", "429"] {
            assert!(
                responses.get(status).is_some(),
                "{method} {path} lists the key, not its {status}"
            );
        }
    }

    // Each listed operation replays a retry (the upload's quota and bytes
    // are checked further with the upload's own tests).
    let retried: BTreeMap<&str, Value> = BTreeMap::from([
        ("/v1/contacts/{id}/block", json!({})),
        // Not distinct: a second direct conversation with bob.
        ("/v1/conversations", json!({"contact_id": w.bob.id})),
        ("/v1/groups", json!({"name": "retried"})),
        (
            "/v1/messages",
            json!({"conversation_id": w.conversation, "message": "retried"}),
        ),
        (
            "/v1/reports",
            json!({"message_id": w.bobs_message, "reason": "other"}),
        ),
    ]);
    let (upload_type, upload_body) = confab_tests::http::multipart(&[(
        "file",
        Some("retried.txt"),
        Some("text/plain"),
        b"retried",
    )]);
    for (method, path) in &listed {
        let body = match retried.get(path.as_str()) {
            Some(json) => ("application/json", json.to_string().into_bytes()),
            None if path == "/v1/attachments" => (upload_type.as_str(), upload_body.clone()),
            None => panic!("{method} {path}: no retry checked"),
        };
        let (url, credential) = w.call(method, path);
        let key = format!("retry {path}");
        let headers = [("Idempotency-Key", key.as_str())];
        let send = || {
            let body = Some((body.0, body.1.clone()));
            w.app
                .send(Method::POST, &url, Some(credential), body, &headers)
        };
        let first = send().await;
        assert!(first.status.is_success(), "{path}: {}", first.raw);
        let retry = send().await;
        assert_eq!(retry.header("idempotent-replayed"), Some("true"), "{path}");
        assert_eq!(retry.status, first.status, "{path}");
        assert_eq!(retry.raw, first.raw, "{path}");
    }

    // Tickets and typing take no key (a second ticket or typing costs
    // nothing): the document does not list it, and a retry runs again.
    for (path, body) in [
        ("/v1/events/tickets", json!({})),
        ("/v1/conversations/{id}/typing", json!({"state": "start"})),
    ] {
        let (url, credential) = w.call("POST", path);
        let mut answers = Vec::new();
        for _ in 0..2 {
            let body = Some(("application/json", body.to_string().into_bytes()));
            let r = w
                .app
                .send(
                    Method::POST,
                    &url,
                    Some(credential),
                    body,
                    &[("Idempotency-Key", "not taken")],
                )
                .await;
            assert!(r.status.is_success(), "{path}: {}", r.raw);
            assert_eq!(r.header("idempotent-replayed"), None, "{path}");
            answers.push(r.raw);
        }
        if path == "/v1/events/tickets" {
            assert_ne!(answers[0], answers[1], "a second ticket");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_is_required_exactly_when_the_request_fails_without_one() {
    let w = World::new(Backend::Sqlite).await;
    let mut checked = 0;
    for (method, path) in documented_routes(&w.doc) {
        let op = operation(&w.doc, &method, &path);
        let Some(required) = op["requestBody"].get("required") else {
            continue;
        };
        let (url, credential) = w.call(&method, &path);
        let m = Method::from_bytes(method.as_bytes()).expect("method");
        let r = w.app.send(m, &url, Some(credential), None, &[]).await;
        let refused = r.status.is_client_error();
        assert!(
            refused || r.status.is_success(),
            "{method} {path} without a body: {} {}",
            r.status,
            r.raw
        );
        assert_eq!(
            *required,
            Value::Bool(refused),
            "{method} {path} without a body: {} {}",
            r.status,
            r.raw
        );
        checked += 1;
    }
    assert!(checked >= 15, "{checked} bodies");
}

confab_tests::on_both_stores!(
    crate::support::on_backend;
    every_id_on_the_wire_is_described_as_a_uuid,
);
