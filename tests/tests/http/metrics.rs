//! docs/api.md "Outside /v1: health, metrics, OpenAPI": `GET /metrics` (Prometheus text, no token) counts
//! requests by route template, method and status, their latency, the
//! requests in flight, errors by code, and the store's connection pool.

use std::collections::BTreeMap;

use confab_tests::http::TestApp;
use reqwest::Method;

use crate::support::UNKNOWN_ID;

confab_tests::on_both_stores!(crate::support::on_server; metrics_count_known_traffic_exactly);

/// One sample: the metric name and its labels.
type Series = (String, BTreeMap<String, String>);

/// The samples of a text exposition.
fn parse(text: &str) -> BTreeMap<Series, f64> {
    let mut out = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (series, value) = line.rsplit_once(' ').expect("name and value");
        let value: f64 = value.parse().expect("a number");
        let (name, labels) = match series.split_once('{') {
            None => (series.to_owned(), BTreeMap::new()),
            Some((name, rest)) => {
                let body = rest.strip_suffix('}').expect("closing brace");
                let mut labels = BTreeMap::new();
                // Values here hold no quotes or commas of their own.
                for pair in body.split("\",").filter(|p| !p.is_empty()) {
                    let (k, v) = pair.split_once("=\"").expect("label");
                    labels.insert(k.to_owned(), v.trim_end_matches('"').to_owned());
                }
                (name.to_owned(), labels)
            }
        };
        out.insert((name, labels), value);
    }
    out
}

fn series(name: &str, labels: &[(&str, &str)]) -> Series {
    (
        name.to_owned(),
        labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    )
}

async fn scrape(app: &TestApp) -> BTreeMap<Series, f64> {
    let r = app.send(Method::GET, "/metrics", None, None, &[]).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.raw);
    assert!(
        r.header("content-type")
            .unwrap_or_default()
            .starts_with("text/plain"),
        "{:?}",
        r.header("content-type")
    );
    parse(&r.raw)
}

async fn metrics_count_known_traffic_exactly(app: TestApp) {
    let alice = app.user("alice").await;
    for _ in 0..3 {
        app.get(&alice, "/v1/contacts/me").await.expect(200);
    }
    let r = app
        .send(Method::GET, "/v1/contacts/me", None, None, &[])
        .await;
    r.expect(401);
    for _ in 0..2 {
        app.get(&alice, &format!("/v1/messages/{UNKNOWN_ID}"))
            .await
            .expect(404);
    }
    app.send(Method::GET, "/nowhere/abc", None, None, &[])
        .await
        .expect(404);
    app.send(Method::GET, "/healthz", None, None, &[])
        .await
        .expect(200);

    let m = scrape(&app).await;
    let requests = |route: &str, status: &str| {
        m.get(&series(
            "confab_http_requests_total",
            &[("method", "GET"), ("route", route), ("status", status)],
        ))
        .copied()
    };
    assert_eq!(requests("/v1/contacts/me", "200"), Some(3.0), "{m:#?}");
    assert_eq!(requests("/v1/contacts/me", "401"), Some(1.0), "{m:#?}");
    assert_eq!(requests("/v1/messages/{id}", "404"), Some(2.0), "{m:#?}");
    assert_eq!(requests("unmatched", "404"), Some(1.0), "{m:#?}");
    assert_eq!(requests("/healthz", "200"), Some(1.0), "{m:#?}");
    // Nothing else was answered before this scrape (which counts itself
    // only once it is answered).
    let total: f64 = m
        .iter()
        .filter(|((name, _), _)| name == "confab_http_requests_total")
        .map(|(_, v)| v)
        .sum();
    assert_eq!(total, 8.0, "{m:#?}");
    // Route templates, never raw paths.
    for (_, labels) in m.keys() {
        if let Some(route) = labels.get("route") {
            assert!(
                !route.contains(UNKNOWN_ID) && !route.contains("nowhere"),
                "{route}"
            );
        }
    }

    let errors = |code: &str| {
        m.get(&series("confab_http_errors_total", &[("code", code)]))
            .copied()
    };
    assert_eq!(errors("not_found"), Some(3.0), "{m:#?}");
    assert_eq!(errors("unauthorized"), Some(1.0), "{m:#?}");

    let latency = |suffix: &str, extra: &[(&str, &str)]| {
        let mut labels = vec![("method", "GET"), ("route", "/v1/contacts/me")];
        labels.extend_from_slice(extra);
        m.get(&series(
            &format!("confab_http_request_duration_seconds{suffix}"),
            &labels,
        ))
        .copied()
    };
    assert_eq!(latency("_count", &[]), Some(4.0), "{m:#?}");
    assert_eq!(latency("_bucket", &[("le", "+Inf")]), Some(4.0), "{m:#?}");
    assert!(latency("_sum", &[]).is_some_and(|s| s > 0.0), "{m:#?}");

    // The scrape itself is the one request in flight.
    assert_eq!(
        m.get(&series("confab_http_requests_in_flight", &[])),
        Some(&1.0),
        "{m:#?}"
    );

    let pool = |name: &str| {
        *m.get(&series(name, &[]))
            .unwrap_or_else(|| panic!("no {name}: {m:#?}"))
    };
    let max = pool("confab_db_pool_max_connections");
    let open = pool("confab_db_pool_connections");
    let idle = pool("confab_db_pool_idle_connections");
    assert!(max >= 1.0, "{m:#?}");
    assert!((1.0..=max).contains(&open), "{m:#?}");
    assert!(idle <= open, "{m:#?}");
    assert_eq!(pool("confab_db_pool_waiting"), 0.0, "{m:#?}");

    // The first scrape is counted by the second.
    let m = scrape(&app).await;
    assert_eq!(
        m.get(&series(
            "confab_http_requests_total",
            &[("method", "GET"), ("route", "/metrics"), ("status", "200")],
        )),
        Some(&1.0),
        "{m:#?}"
    );
}
