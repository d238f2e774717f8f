//! Reports are limited per contact: at most `CONFAB_REPORTS_PER_HOUR` new
//! reports a UTC hour (one contact filed 150 in a second), all its tokens
//! together, also when they come at once; past it 429 `report_quota` with
//! `Retry-After`, and nothing written. A report of the same open target
//! again is no new report, and answers as before.

use confab_tests::db::Backend;
use confab_tests::http::TestApp;

use super::{rows, say};
use crate::support::pair;

const LIMIT: u32 = 5;

async fn reports_past_the_hours_limit_are_refused_and_write_nothing(backend: Backend) {
    let app = TestApp::spawn_with_service(backend, |s| s.with_report_quota(LIMIT)).await;
    let (alice, bob, conv) = pair(&app).await;
    let second_token = app.service.issue_token("alice", None).await.expect("token");
    let mut messages = Vec::new();
    for n in 0..30 {
        messages.push(say(&app, &bob, &conv, &format!("spam {n}")).await);
    }
    // 30 at once, from two tokens of one contact: exactly the limit pass.
    let mut asks = Vec::new();
    for (n, m) in messages.iter().enumerate() {
        let token = if n % 2 == 0 {
            alice.token.clone()
        } else {
            second_token.clone()
        };
        let (base, m) = (app.base_url.clone(), m.clone());
        asks.push(tokio::spawn(async move {
            reqwest::Client::new()
                .post(format!("{base}/v1/reports"))
                .bearer_auth(token)
                .form(&[("message_id", m.as_str()), ("reason", "spam")])
                .send()
                .await
                .expect("answer")
        }));
    }
    let (mut filed, mut refused) = (Vec::new(), 0);
    for ask in asks {
        let r = ask.await.expect("join");
        match r.status().as_u16() {
            201 => filed.push(r.json::<serde_json::Value>().await.expect("json")),
            429 => {
                let retry: u64 = r
                    .headers()
                    .get("retry-after")
                    .expect("Retry-After")
                    .to_str()
                    .expect("ascii")
                    .parse()
                    .expect("seconds");
                assert!((1..=3600).contains(&retry), "{retry}");
                let body: serde_json::Value = r.json().await.expect("json");
                assert_eq!(body["code"], "report_quota", "{body}");
                assert!(body["param"].is_null(), "{body}");
                refused += 1;
            }
            other => panic!("{other}: {}", r.text().await.unwrap_or_default()),
        }
    }
    assert_eq!(filed.len(), LIMIT as usize, "{refused} refused");
    assert_eq!(refused, 30 - LIMIT as usize);
    assert_eq!(rows(&app, "reports"), i64::from(LIMIT), "a refusal wrote");
    // One more, one at a time: refused too.
    let last = messages
        .iter()
        .find(|m| !filed.iter().any(|f| f["message_id"] == m.as_str()));
    let r = app
        .post(
            &alice,
            "/v1/reports",
            &[
                ("message_id", last.expect("an unreported one")),
                ("reason", "spam"),
            ],
        )
        .await;
    r.expect_error(429, "report_quota", None);
    // The same open report again is no new one: answered as before.
    let again = app
        .post(
            &alice,
            "/v1/reports",
            &[
                ("message_id", filed[0]["message_id"].as_str().expect("id")),
                ("reason", "spam"),
            ],
        )
        .await;
    assert_eq!(again.expect(200)["id"], filed[0]["id"]);
    // Another contact has a limit of its own.
    let r = app
        .post(
            &bob,
            "/v1/reports",
            &[("contact_id", &alice.id), ("reason", "other")],
        )
        .await;
    r.expect(201);
    assert_eq!(rows(&app, "reports"), i64::from(LIMIT) + 1);
}

confab_tests::on_both_stores!(
    crate::support::on_backend;
    reports_past_the_hours_limit_are_refused_and_write_nothing,
);
