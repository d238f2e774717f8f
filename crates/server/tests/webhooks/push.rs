//! Push notifications through webhooks (docs/api.md "Server API: from an app's backend"): a
//! `message.created` delivery of a conversation of at most 100 members
//! names the members to notify (`recipients`: not the sender, not those
//! who muted it, as they are when the delivery goes out); above 100,
//! `recipients` is null.

use std::time::Duration;

use serde_json::{json, Value};

use super::support::*;

fn contact(db: &Db, name: &str) -> (String, String) {
    let created: Value = serde_json::from_str(&db.confab_ok(&[
        "contact",
        "create",
        "--username",
        name,
        "--phone-number",
        "+15550100",
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

fn send(port: u16, token: &str, conversation: &str, text: &str) {
    ok(
        port,
        "POST",
        "/v1/messages",
        token,
        json!({"conversation_id": conversation, "message": text}),
        201,
    );
}

pub(crate) fn recipients_name_whom_to_notify(store: Store) {
    let db = Db::new(store);
    db.confab_ok(&["migrate"]);
    let receiver = Receiver::start(|_, _| Reply::Status(204));
    let hook = create_webhook(&db, &receiver.url(), Some("message.created"));
    let secret = hook["secret"].as_str().expect("secret").to_owned();
    let (_, alice_token) = contact(&db, "alice");
    let (bob, bob_token) = contact(&db, "bob");
    let (carol, carol_token) = contact(&db, "carol");
    let key: Value =
        serde_json::from_str(&db.confab_ok(&["key", "create", "--name", "push"])).expect("key");
    let key = key["key"].as_str().expect("key").to_owned();
    let (_server, port) = db.serve("serve", true);

    // A direct conversation: the peer; once the peer muted it, no one.
    let direct = ok(
        port,
        "POST",
        "/v1/conversations",
        &alice_token,
        json!({"contact_id": bob}),
        201,
    );
    let direct = direct["id"].as_str().expect("id").to_owned();
    send(port, &alice_token, &direct, "push-1");
    // Whom to notify is read when the delivery goes out (within a second
    // of the send): the mute below comes after it.
    receiver.wait("push-1 delivered", Duration::from_secs(30), &db, |got| {
        got.iter()
            .any(|d| d.answered == 204 && d.body.contains("push-1"))
    });
    ok(
        port,
        "PUT",
        &format!("/v1/conversations/{direct}"),
        &bob_token,
        json!({"is_muted": true}),
        200,
    );
    send(port, &alice_token, &direct, "push-2");
    // A group conversation of three, carol muted it: bob only.
    let group = ok(
        port,
        "POST",
        "/v1/groups",
        &alice_token,
        json!({"name": "trio", "contact_ids": [bob, carol]}),
        201,
    );
    let trio = ok(
        port,
        "POST",
        "/v1/conversations",
        &alice_token,
        json!({"group_id": group["id"]}),
        201,
    );
    let trio = trio["id"].as_str().expect("id").to_owned();
    ok(
        port,
        "PUT",
        &format!("/v1/conversations/{trio}"),
        &carol_token,
        json!({"is_muted": true}),
        200,
    );
    send(port, &alice_token, &trio, "push-3");
    // A group of 101: null, the backend pages the members instead.
    let mut many = Vec::new();
    for i in 0..100 {
        let created = ok(
            port,
            "POST",
            "/v1/admin/contacts",
            &key,
            json!({"username": format!("member{i}"), "phone_number": "+15550100"}),
            201,
        );
        many.push(created["id"].as_str().expect("id").to_owned());
    }
    let big = ok(
        port,
        "POST",
        "/v1/groups",
        &alice_token,
        json!({"name": "crowd", "contact_ids": many}),
        201,
    );
    assert_eq!(big["member_count"], 101);
    let crowd = ok(
        port,
        "POST",
        "/v1/conversations",
        &alice_token,
        json!({"group_id": big["id"]}),
        201,
    );
    let crowd = crowd["id"].as_str().expect("id").to_owned();
    send(port, &alice_token, &crowd, "push-4");

    receiver.wait(
        "4 messages delivered",
        Duration::from_secs(30),
        &db,
        |got| got.iter().filter(|d| d.answered == 204).count() >= 4,
    );
    let bodies: Vec<Value> = receiver
        .got()
        .iter()
        .map(|d| verified(d, &secret))
        .collect();
    let recipients = |text: &str| -> Value {
        bodies
            .iter()
            .find(|b| b["payload"]["message"] == text)
            .unwrap_or_else(|| panic!("{text} not delivered: {bodies:#?}"))["recipients"]
            .clone()
    };
    assert_eq!(recipients("push-1"), json!([bob]));
    assert_eq!(recipients("push-2"), json!([]));
    assert_eq!(recipients("push-3"), json!([bob]));
    assert_eq!(recipients("push-4"), Value::Null);
}
