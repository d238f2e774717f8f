//! Many clients sending at once.

use std::collections::HashSet;

use confab_tests::http::{encode_form, TestApp};
use serde_json::Value;

use crate::support::{id_of, pair};

async fn post_message(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    conv: &str,
    text: &str,
) -> Value {
    let resp = client
        .post(format!("{base}/v1/messages"))
        .bearer_auth(token)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(encode_form(&[("conversation_id", conv), ("message", text)]))
        .send()
        .await
        .expect("request sent");
    let status = resp.status().as_u16();
    let body = resp.text().await.expect("body");
    assert_eq!(status, 201, "concurrent send failed: {body}");
    serde_json::from_str(&body).expect("JSON body")
}

async fn concurrent_senders_lose_nothing(app: TestApp) {
    let (alice, bob, conv) = pair(&app).await;
    let mut tasks = Vec::new();
    for task in 0..16usize {
        let client = app.client.clone();
        let base = app.base_url.clone();
        let token = if task % 2 == 0 {
            alice.token.clone()
        } else {
            bob.token.clone()
        };
        let conv = conv.clone();
        // 8 tasks send 13, 8 send 12: 200 in all.
        let count = if task < 8 { 13 } else { 12 };
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            for i in 0..count {
                let m = post_message(&client, &base, &token, &conv, &format!("t{task} m{i}")).await;
                mine.push(id_of(&m));
            }
            mine
        }));
    }
    let mut per_task = Vec::new();
    for t in tasks {
        per_task.push(t.await.expect("task"));
    }
    let total: usize = per_task.iter().map(Vec::len).sum();
    assert_eq!(total, 200);

    let mut listed: Vec<Value> = Vec::new();
    let mut pages = Vec::new();
    let mut query = format!("/v1/messages?conversation_id={conv}&limit=100");
    loop {
        let r = app.get(&bob, &query).await;
        let body = r.expect(200).clone();
        let data = body["data"].as_array().expect("data").clone();
        let more = body["has_more"].as_bool().expect("has_more");
        pages.push((data.len(), more));
        let last = data.last().map(id_of);
        listed.extend(data);
        if !more {
            break;
        }
        query = format!(
            "/v1/messages?conversation_id={conv}&limit=100&starting_after={}",
            last.expect("non-empty page")
        );
    }
    assert_eq!(pages, vec![(100, true), (100, false)]);
    let listed_ids: Vec<String> = listed.iter().map(id_of).collect();
    let unique: HashSet<&String> = listed_ids.iter().collect();
    assert_eq!(unique.len(), 200, "each message exactly once");
    let sent: HashSet<&String> = per_task.iter().flatten().collect();
    assert_eq!(unique, sent);

    // Newest first: created_at never increases down the list, and each
    // client's messages appear in the reverse of the order it sent them.
    let times: Vec<i64> = listed
        .iter()
        .map(|m| m["created_at"].as_i64().expect("created_at"))
        .collect();
    assert!(
        times.windows(2).all(|w| w[0] >= w[1]),
        "created_at order: {times:?}"
    );
    let position = |id: &String| listed_ids.iter().position(|x| x == id).expect("listed");
    for mine in &per_task {
        let positions: Vec<usize> = mine.iter().map(position).collect();
        assert!(
            positions.windows(2).all(|w| w[0] > w[1]),
            "a client's messages are out of order: {positions:?}"
        );
    }
    // The conversation's last activity is the newest message's.
    let c = app.get(&alice, "/v1/conversations").await;
    assert_eq!(
        c.expect(200)["data"][0]["last_active_at"],
        listed[0]["created_at"]
    );
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    concurrent_senders_lose_nothing,
);
