//! Phone privacy and reports in webhooks (docs/api.md "Blocks and reports"): a scenario
//! of sends, edits, reactions, group and role changes, contact changes
//! (by the contact and by the operator), a block with refused attempts and
//! reports; no webhook body carries a phone number (every contact's
//! `phone_number` is `null`) or a refused text, a `report.created`
//! delivery carries the operators' report object, and no contact's event
//! list shows a report.

use std::time::Duration;

use serde_json::{json, Value};

use super::binary::raw_request;
use super::support::*;

fn contact(db: &Db, name: &str, phone: &str) -> (String, String) {
    let created: Value = serde_json::from_str(&db.confab_ok(&[
        "contact",
        "create",
        "--username",
        name,
        "--phone-number",
        phone,
    ]))
    .expect("contact JSON");
    let token = db.confab_ok(&["token", "issue", "--username", name]);
    (created["id"].as_str().expect("id").to_owned(), token)
}

fn ok(port: u16, method: &str, path: &str, token: &str, body: Value, want: u16) -> Value {
    let (status, answer) = call(port, method, path, token, &body);
    assert_eq!(status, want, "{method} {path}: {answer}");
    answer
}

fn id(v: &Value) -> String {
    v["id"].as_str().expect("id").to_owned()
}

/// Every event `token`'s contact can list (`GET /v1/events` with
/// `Accept: application/json`, paged with `after=`), oldest first.
fn listed_events(port: u16, token: &str) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut query = "limit=100".to_owned();
    for _ in 0..100 {
        let head = format!(
            "GET /v1/events?{query} HTTP/1.1\r\nAuthorization: Bearer {token}\r\nAccept: application/json"
        );
        let (status, _, body) = raw_request(port, &head, "");
        assert_eq!(status, 200, "{body}");
        let page: Value = serde_json::from_str(&body).expect("JSON list");
        out.extend(page["data"].as_array().expect("data").iter().cloned());
        if page["has_more"] != true {
            return out;
        }
        query = format!("limit=100&after={}", id(out.last().expect("an event")));
    }
    panic!("paging the events does not end");
}

/// Every contact object in `v` (an object with `username` and
/// `avatar_url`): its id and its `phone_number` (`None` when absent).
fn contacts_in(v: &Value, out: &mut Vec<(String, Option<Value>)>) {
    match v {
        Value::Object(map) => {
            if map.contains_key("username") && map.contains_key("avatar_url") {
                let id = map.get("id").and_then(Value::as_str).unwrap_or("?");
                out.push((id.to_owned(), map.get("phone_number").cloned()));
            }
            map.values().for_each(|v| contacts_in(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| contacts_in(v, out)),
        _ => {}
    }
}

/// Every phone number of the scenario (with and without `+`).
const PHONES: [&str; 7] = [
    "+15557770301",
    "+15557770302",
    "+15557770303",
    "+15557770304",
    // Set during the scenario: alice's own, bob's by the operator.
    "+15557770401",
    "+15557770402",
    // The operator's new contact.
    "+15557770305",
];

/// What the block refused.
const REFUSED: [&str; 3] = [
    "refused-secret-send",
    "refused-secret-edit",
    "refused-secret-blocker",
];

#[track_caller]
fn assert_clean(body: &Value, what: &str) {
    let text = body.to_string();
    for p in PHONES {
        assert!(
            !text.contains(p.trim_start_matches('+')),
            "{what}: phone number {p} in {body}"
        );
    }
    for s in REFUSED {
        assert!(!text.contains(s), "{what}: refused text {s:?} in {body}");
    }
    let mut found = Vec::new();
    contacts_in(body, &mut found);
    for (id, phone) in found {
        assert_eq!(
            phone,
            Some(Value::Null),
            "{what}: contact {id} without a null phone_number in {body}"
        );
    }
}

pub(crate) fn webhooks_carry_no_phone_number_and_report_created(store: Store) {
    let db = Db::new(store);
    db.confab_ok(&["migrate"]);
    let receiver = Receiver::start(|_, _| Reply::Status(204));
    // Every event type.
    let hook = create_webhook(&db, &receiver.url(), None);
    let secret = hook["secret"].as_str().expect("secret").to_owned();
    let (alice, at) = contact(&db, "alice", "+15557770301");
    let (bob, bt) = contact(&db, "bob", "+15557770302");
    let (carol, ct) = contact(&db, "carol", "+15557770303");
    let (dave, dt) = contact(&db, "dave", "+15557770304");
    let key: Value =
        serde_json::from_str(&db.confab_ok(&["key", "create", "--name", "ops"])).expect("key");
    let key = key["key"].as_str().expect("key").to_owned();
    let (_server, port) = db.serve("serve", true);

    // A direct conversation: sends, an edit, a reaction.
    let ab = id(&ok(
        port,
        "POST",
        "/v1/conversations",
        &at,
        json!({"contact_id": bob}),
        201,
    ));
    let send = |token: &str, conv: &str, text: &str| -> String {
        id(&ok(
            port,
            "POST",
            "/v1/messages",
            token,
            json!({"conversation_id": conv, "message": text}),
            201,
        ))
    };
    send(&at, &ab, "hello bob");
    let b1 = send(&bt, &ab, "hello alice");
    ok(
        port,
        "PUT",
        &format!("/v1/messages/{b1}"),
        &bt,
        json!({"message": "hello alice!"}),
        200,
    );
    ok(
        port,
        "PUT",
        &format!("/v1/messages/{b1}"),
        &at,
        json!({"reactions": {"like": ["alice"]}}),
        200,
    );
    // A group with an admin, a member in and out, its conversation.
    let gid = id(&ok(
        port,
        "POST",
        "/v1/groups",
        &at,
        json!({"name": "Crew", "contact_ids": [bob, carol, dave]}),
        201,
    ));
    let group = format!("/v1/groups/{gid}");
    ok(
        port,
        "PUT",
        &group,
        &at,
        json!({"add_admin_ids": [bob]}),
        200,
    );
    let erin = ok(
        port,
        "POST",
        "/v1/admin/contacts",
        &key,
        json!({"username": "erin", "phone_number": "+15557770305"}),
        201,
    );
    ok(
        port,
        "PUT",
        &group,
        &bt,
        json!({"add_contact_ids": [erin["id"]]}),
        200,
    );
    ok(
        port,
        "PUT",
        &group,
        &bt,
        json!({"remove_contact_ids": [erin["id"]]}),
        200,
    );
    let gc = id(&ok(
        port,
        "POST",
        "/v1/conversations",
        &ct,
        json!({"group_id": gid}),
        201,
    ));
    for token in [&at, &bt, &ct, &dt] {
        send(token, &gc, "in the group");
    }
    // Contact changes: alice's own, the operator's of bob.
    let mine = ok(
        port,
        "PUT",
        "/v1/contacts/me",
        &at,
        json!({"phone_number": "+15557770401"}),
        200,
    );
    assert_eq!(mine["phone_number"], "+15557770401");
    ok(
        port,
        "PUT",
        &format!("/v1/admin/contacts/{bob}"),
        &key,
        json!({"phone_number": "+15557770402"}),
        200,
    );
    // Carol blocks dave: his attempts and hers are refused.
    let cd = id(&ok(
        port,
        "POST",
        "/v1/conversations",
        &ct,
        json!({"contact_id": dave}),
        201,
    ));
    let d1 = send(&dt, &cd, "dave before the block");
    // A block takes no body.
    let head = format!("POST /v1/contacts/{dave}/block HTTP/1.1\r\nAuthorization: Bearer {ct}");
    let (status, _, answer) = raw_request(port, &head, "");
    assert_eq!(status, 201, "{answer}");
    for (token, method, path, body) in [
        (
            &dt,
            "POST",
            "/v1/messages".to_owned(),
            json!({"conversation_id": cd, "message": "refused-secret-send"}),
        ),
        (
            &dt,
            "PUT",
            format!("/v1/messages/{d1}"),
            json!({"message": "refused-secret-edit"}),
        ),
        (
            &ct,
            "POST",
            "/v1/messages".to_owned(),
            json!({"conversation_id": cd, "message": "refused-secret-blocker"}),
        ),
    ] {
        let answer = ok(port, method, &path, token, body, 403);
        assert_eq!(answer["code"], "contact_blocked", "{answer}");
    }
    // Reports.
    let report = ok(
        port,
        "POST",
        "/v1/reports",
        &at,
        json!({"message_id": b1, "reason": "spam", "description": "ads"}),
        201,
    );
    let of_dave = ok(
        port,
        "POST",
        "/v1/reports",
        &ct,
        json!({"contact_id": dave, "reason": "harassment"}),
        201,
    );
    let the_end = send(&at, &gc, "the end");

    // First attempts go out in event order: once the last message and both
    // reports are delivered, every earlier event is too.
    let report_ids = [id(&report), id(&of_dave)];
    receiver.wait(
        "the scenario delivered",
        Duration::from_secs(30),
        &db,
        |got| {
            let delivered = |needle: &str| {
                got.iter()
                    .any(|d| d.answered == 204 && d.body.contains(needle))
            };
            delivered(&the_end) && report_ids.iter().all(|r| delivered(r))
        },
    );
    let bodies: Vec<Value> = receiver
        .got()
        .iter()
        .map(|d| verified(d, &secret))
        .collect();
    for b in &bodies {
        assert_clean(b, "webhook");
    }
    // Not vacuous: the changes that name contacts were delivered.
    let of_type =
        |kind: &str| -> Vec<&Value> { bodies.iter().filter(|b| b["type"] == kind).collect() };
    assert!(
        of_type("contact.updated")
            .iter()
            .any(|b| b["payload"]["id"] == alice.as_str() && b["payload"]["phone_number"].is_null()),
        "alice's contact.updated: {bodies:#?}"
    );
    for kind in [
        "message.created",
        "message.updated",
        "group.created",
        "group.updated",
    ] {
        assert!(!of_type(kind).is_empty(), "no {kind}: {bodies:#?}");
    }
    // report.created: the operators' report object, once per report.
    let reports = of_type("report.created");
    assert_eq!(reports.len(), 2, "{reports:#?}");
    let delivered = reports
        .iter()
        .find(|b| b["payload"]["id"] == report["id"])
        .expect("alice's report delivered");
    let payload = &delivered["payload"];
    let mut keys: Vec<&str> = payload
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "contact_id",
            "created_at",
            "description",
            "id",
            "message_id",
            "reason",
            "reporter_id",
            "status",
            "updated_at",
        ]
    );
    for k in [
        "id",
        "message_id",
        "contact_id",
        "reason",
        "description",
        "status",
        "created_at",
    ] {
        assert_eq!(payload[k], report[k], "{k}: {payload}");
    }
    assert_eq!(payload["reporter_id"], alice.as_str());
    assert_eq!(payload["contact_id"], bob.as_str());
    assert_eq!(payload["status"], "open");
    assert_eq!(payload["updated_at"], payload["created_at"]);
    let (status, seen) = call(
        port,
        "GET",
        &format!("/v1/admin/reports/{}", id(&report)),
        &key,
        &Value::Null,
    );
    assert_eq!(status, 200, "{seen}");
    assert_eq!(&seen, payload, "the webhook's object is the operators'");

    // No contact's event list shows a report, or a phone number.
    for (name, token) in [("alice", &at), ("bob", &bt), ("carol", &ct), ("dave", &dt)] {
        let events = listed_events(port, token);
        assert!(
            events
                .iter()
                .any(|e| e["payload"]["id"] == the_end.as_str()),
            "{name} lists the last message"
        );
        for e in &events {
            assert_ne!(e["type"], "report.created", "{name}: {e}");
            let text = e.to_string();
            for r in &report_ids {
                assert!(!text.contains(r.as_str()), "{name} lists report {r}: {e}");
            }
            assert_clean(e, name);
        }
    }
}
