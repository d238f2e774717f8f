//! What an operator sees of webhook deliveries (docs/api.md "Server API: from an app's backend"): the
//! recent attempts of a webhook over HTTP (status, or why there was no
//! answer), and the `/metrics` series (attempts by result, retries
//! pending, age of the oldest event not yet delivered).

use std::time::Duration;

use serde_json::{json, Value};

use super::binary::{free_port, raw_request};
use super::support::*;

fn metric(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| {
            l.strip_prefix(series)?
                .strip_prefix(' ')?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
}

pub(crate) fn attempts_are_listed_and_counted(store: Store) {
    let db = Db::new(store);
    db.confab_ok(&["migrate"]);
    // The first attempt is answered 500, the retry 204.
    let receiver = Receiver::start(|_, n| Reply::Status(if n == 0 { 500 } else { 204 }));
    let key: Value =
        serde_json::from_str(&db.confab_ok(&["key", "create", "--name", "ops"])).expect("key");
    let key = key["key"].as_str().expect("key").to_owned();
    let (_server, port) = db.serve("serve", true);
    let hook = |url: String| {
        let (status, hook) = call(
            port,
            "POST",
            "/v1/admin/webhooks",
            &key,
            &json!({"url": url, "events": ["message.created"]}),
        );
        assert_eq!(status, 201, "{hook}");
        hook["id"].as_str().expect("id").to_owned()
    };
    let answered = hook(receiver.url());
    // Nothing listens there: each attempt fails without an answer.
    let dead = hook(format!("http://127.0.0.1:{}/hook", free_port()));
    let chat = Chat::new(&db, port);
    chat.send(port, "watched");
    receiver.wait("the retry delivered", Duration::from_secs(30), &db, |got| {
        got.iter().any(|d| d.answered == 204)
    });
    let delivered_event = receiver.got()[0].event_id.clone();

    // The sender records an attempt once its answer is in: the receiver
    // may have the delivery a moment before the record is committed.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let listed = loop {
        let (status, listed) = call(
            port,
            "GET",
            &format!("/v1/admin/webhooks/{answered}/deliveries"),
            &key,
            &Value::Null,
        );
        assert_eq!(status, 200, "{listed}");
        let n = listed["data"].as_array().map_or(0, Vec::len);
        if n >= 2 || std::time::Instant::now() > deadline {
            break listed;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let rows: Vec<(u64, Value, Value)> = listed["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|d| {
            assert_eq!(d["event_id"], delivered_event.as_str(), "{d}");
            assert!(d["attempted_at"].is_i64(), "{d}");
            (
                d["attempt"].as_u64().expect("attempt"),
                d["status"].clone(),
                d["error"].clone(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [(2, json!(204), Value::Null), (1, json!(500), Value::Null)],
        "newest first"
    );
    let (status, page) = call(
        port,
        "GET",
        &format!("/v1/admin/webhooks/{answered}/deliveries?limit=1"),
        &key,
        &Value::Null,
    );
    assert_eq!((status, page["has_more"].clone()), (200, json!(true)));
    let (status, failed) = call(
        port,
        "GET",
        &format!("/v1/admin/webhooks/{dead}/deliveries"),
        &key,
        &Value::Null,
    );
    assert_eq!(status, 200, "{failed}");
    let first = &failed["data"][0];
    assert_eq!(first["status"], Value::Null, "{failed}");
    assert!(
        first["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{failed}"
    );
    let (status, _) = call(
        port,
        "GET",
        "/v1/admin/webhooks/0190a5e0-0000-7000-8000-000000000000/deliveries",
        &key,
        &Value::Null,
    );
    assert_eq!(status, 404);

    let (status, _, text) = raw_request(port, "GET /metrics HTTP/1.1", "");
    assert_eq!(status, 200);
    assert_eq!(
        metric(
            &text,
            r#"confab_webhook_attempts_total{result="succeeded"}"#
        ),
        1.0
    );
    assert!(metric(&text, r#"confab_webhook_attempts_total{result="failed"}"#) >= 2.0);
    // The dead webhook's delivery waits for its retry, since the send.
    assert_eq!(metric(&text, "confab_webhook_retries_pending"), 1.0);
    assert!(metric(&text, "confab_webhook_oldest_pending_seconds") > 0.0);
}
