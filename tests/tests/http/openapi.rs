//! `GET /openapi.json` describes exactly the routes the server serves, a
//! real validator accepts it, and `GET /docs` renders it in a browser
//! without internet access; `generated` checks what generated clients rely
//! on.
//!
//! The validator (`openapi-spec-validator`) and the browser (Debian's
//! `chromium`) are outside tools: `.ci/run` installs them and sets
//! `CONFAB_REQUIRE_TOOLS=1`, which turns a missing tool into a failure;
//! elsewhere a missing tool skips that check with a note.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

use confab_tests::db::Backend;
use confab_tests::http::TestApp;
use reqwest::{redirect, Method};
use serde_json::Value;

use crate::support::UNKNOWN_ID;

mod generated;

/// `(METHOD, path)` pairs.
type Routes = BTreeSet<(String, String)>;

async fn fetch_document(app: &TestApp) -> Value {
    let r = app
        .send(Method::GET, "/openapi.json", None, None, &[])
        .await;
    let doc = r.expect(200).clone();
    assert!(
        r.header("content-type")
            .is_some_and(|ct| ct.starts_with("application/json")),
        "content type of /openapi.json"
    );
    doc
}

fn documented_routes(doc: &Value) -> Routes {
    doc["paths"]
        .as_object()
        .expect("paths")
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .expect("path item")
                .keys()
                .map(|method| (method.to_uppercase(), path.clone()))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn operation<'a>(doc: &'a Value, method: &str, path: &str) -> &'a Value {
    &doc["paths"][path][method.to_lowercase()]
}

/// A concrete URL path for a documented one.
fn concrete(path: &str) -> String {
    path.replace("{id}", UNKNOWN_ID)
        .replace("{name}", "like")
        .replace("{file}", "index.html")
}

fn require_tools() -> bool {
    std::env::var("CONFAB_REQUIRE_TOOLS").is_ok_and(|v| v == "1")
}

/// The first of `candidates` that exists, or `None` (a failure when tools
/// are required).
fn find_tool(what: &str, candidates: &[PathBuf]) -> Option<PathBuf> {
    let found = candidates.iter().find(|p| p.is_file()).cloned();
    if found.is_none() {
        assert!(
            !require_tools(),
            "{what} not found (looked at {candidates:?})"
        );
        eprintln!("skipped: {what} not found (looked at {candidates:?})");
    }
    found
}

fn on_path(name: &str) -> Vec<PathBuf> {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).map(|d| d.join(name)).collect())
        .unwrap_or_default()
}

fn venv_tool(name: &str) -> Vec<PathBuf> {
    let venv = std::env::var_os("CONFAB_CI_VENV")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/confab-ci-venv"))
        });
    let mut candidates: Vec<PathBuf> = venv.map(|v| v.join("bin").join(name)).into_iter().collect();
    candidates.extend(on_path(name));
    candidates
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_document_lists_exactly_the_served_routes() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let doc = fetch_document(&app).await;
    assert_eq!(doc["openapi"], "3.1.0");

    let documented = documented_routes(&doc);
    let served: Routes = confab_server::openapi::served_routes()
        .into_iter()
        .collect();
    let undocumented: Vec<_> = served.difference(&documented).collect();
    let unserved: Vec<_> = documented.difference(&served).collect();
    assert!(
        undocumented.is_empty(),
        "served but not documented: {undocumented:?}"
    );
    assert!(
        unserved.is_empty(),
        "documented but not served: {unserved:?}"
    );
    for route in [
        ("GET", "/healthz"),
        ("GET", "/readyz"),
        ("GET", "/openapi.json"),
        ("GET", "/docs"),
        ("GET", "/v1/messages"),
        ("POST", "/v1/messages"),
        ("DELETE", "/v1/messages/{id}/reactions/{name}"),
        ("PUT", "/v1/conversations/{id}"),
        ("DELETE", "/v1/groups/{id}"),
        ("GET", "/v1/contacts/me"),
    ] {
        let route = (route.0.to_owned(), route.1.to_owned());
        assert!(documented.contains(&route), "{route:?} is not documented");
    }
}

/// Each documented operation is routed (never the 404 of an unknown route
/// nor a 405) and answers a status it documents; each documented path
/// refuses any other method with 405 and an `Allow` of exactly its
/// documented methods.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_server_answers_as_documented() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let alice = app.user("alice").await;
    let doc = fetch_document(&app).await;
    let client = reqwest::Client::builder()
        .redirect(redirect::Policy::none())
        .build()
        .expect("client");

    let mut methods_of: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (method, path) in documented_routes(&doc) {
        methods_of
            .entry(path.clone())
            .or_default()
            .insert(method.clone());
        let op = operation(&doc, &method, &path);
        let url = format!("{}{}", app.base_url, concrete(&path));
        let m = Method::from_bytes(method.as_bytes()).expect("method");
        let v1 = path.starts_with("/v1/");

        // Ask for JSON: `GET /v1/events` is otherwise an endless stream.
        let resp = client
            .request(m.clone(), &url)
            .bearer_auth(&alice.token)
            .header("accept", "application/json")
            .send()
            .await
            .expect("sent");
        let status = resp.status().as_u16();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        assert_ne!(status, 405, "{method} {path} is not routed: {body}");
        assert_ne!(
            body["message"], "no such route",
            "{method} {path} is not routed"
        );
        assert!(
            op["responses"].get(status.to_string()).is_some(),
            "{method} {path} answered {status}, which it does not document: {body}"
        );

        // Security: on /v1/admin the server key alone (a contact's token
        // is 403 there); elsewhere on /v1 a contact's token or a server key
        // acting for a contact; nothing outside /v1.
        let without_token = client.request(m, &url).send().await.expect("sent");
        if path.starts_with("/v1/admin/") {
            assert_eq!(
                status, 403,
                "{method} {path} with a contact's token: {body}"
            );
            assert_eq!(
                op["security"],
                serde_json::json!([{ "server_key": [] }]),
                "{method} {path}"
            );
        } else if v1 {
            assert_eq!(
                op["security"],
                serde_json::json!([{ "bearer": [] }, { "server_key": [] }]),
                "{method} {path}"
            );
        }
        if v1 {
            assert_eq!(without_token.status().as_u16(), 401, "{method} {path}");
            for status in ["400", "401", "404", "503"] {
                assert!(
                    op["responses"].get(status).is_some(),
                    "{method} {path} does not document {status}"
                );
            }
        } else {
            assert_ne!(without_token.status().as_u16(), 401, "{method} {path}");
            assert!(op.get("security").is_none(), "{method} {path}");
        }

        // Bodies: one media type, JSON (an upload: multipart), and only on
        // POST and PUT; a body with parameters says they may come as a
        // form instead (generators would make two models of one body).
        let body = &op["requestBody"];
        let encoding = if method == "POST" && path == "/v1/attachments" {
            "multipart/form-data"
        } else {
            "application/json"
        };
        if method == "POST" || method == "PUT" {
            let types: Vec<&String> = body["content"]
                .as_object()
                .map(|c| c.keys().collect())
                .unwrap_or_default();
            assert_eq!(types, [encoding], "{method} {path}");
            let schema = &body["content"][encoding]["schema"]["$ref"];
            let name = schema.as_str().expect("a named schema").rsplit('/').next();
            let params = &doc["components"]["schemas"][name.expect("name")]["properties"];
            if encoding == "application/json" && params.as_object().is_some_and(|p| !p.is_empty()) {
                assert!(
                    body["description"]
                        .as_str()
                        .is_some_and(|d| d.contains("application/x-www-form-urlencoded")),
                    "{method} {path}: {}",
                    body["description"]
                );
            }
            assert!(op["responses"].get("413").is_some(), "{method} {path}");
            assert!(op["responses"].get("415").is_some(), "{method} {path}");
        } else {
            assert!(
                op.get("requestBody").is_none(),
                "{method} {path} has a body"
            );
        }
    }

    let key = app
        .service
        .create_server_key("documented")
        .await
        .expect("server key")
        .secret;
    for (path, methods) in methods_of {
        let url = format!("{}{}", app.base_url, concrete(&path));
        let credential = if path.starts_with("/v1/admin/") {
            &key
        } else {
            &alice.token
        };
        let resp = client
            .request(Method::PATCH, &url)
            .bearer_auth(credential)
            .send()
            .await
            .expect("sent");
        assert_eq!(resp.status().as_u16(), 405, "PATCH {path}");
        let allow: BTreeSet<String> = resp
            .headers()
            .get("allow")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .split(',')
            .map(|m| m.trim().to_owned())
            .filter(|m| !m.is_empty())
            .collect();
        assert_eq!(allow, methods, "Allow of {path}");
    }
}

/// The schemas every operation relies on are there, with the contract's
/// error body and the bearer scheme.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_document_describes_errors_and_auth() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let doc = fetch_document(&app).await;
    let error = &doc["components"]["schemas"]["Error"];
    let mut required: Vec<&str> = error["required"]
        .as_array()
        .expect("required")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["code", "message", "param", "type"]);
    let codes = error["properties"]["code"]["enum"]
        .as_array()
        .expect("codes");
    for code in [
        "body_invalid",
        "parameter_missing",
        "parameter_invalid",
        "parameter_unknown",
        "unauthorized",
        "forbidden",
        "not_found",
        "method_not_allowed",
        "conflict",
        "payload_too_large",
        "unsupported_media_type",
        "idempotency_key_reused",
        "rate_limited",
        "internal_error",
        "unavailable",
    ] {
        assert!(codes.contains(&Value::from(code)), "code {code}");
    }
    let bearer = &doc["components"]["securitySchemes"]["bearer"];
    assert_eq!(bearer["type"], "http");
    assert_eq!(bearer["scheme"], "bearer");
    for name in [
        "MessageDto",
        "ConversationDto",
        "GroupDto",
        "ContactDto",
        "AttachmentDto",
        "ReactionDto",
        "SendMessageIn",
    ] {
        assert!(
            doc["components"]["schemas"].get(name).is_some(),
            "schema {name}"
        );
    }
    // Unknown parameters are refused, and the document says so.
    assert_eq!(
        doc["components"]["schemas"]["SendMessageIn"]["additionalProperties"],
        false
    );
}

/// The document speaks for itself: no description points at a file or an
/// issue its reader does not have, and every error answer (4xx, 5xx)
/// carries the error body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_document_stands_alone() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let doc = fetch_document(&app).await;
    let text = doc.to_string();
    for outside in ["API.md", "issue #", "section 1", "section 2"] {
        assert!(!text.contains(outside), "the document cites {outside:?}");
    }
    let numbered = issue_number(&text);
    assert!(numbered.is_none(), "the document cites {numbered:?}");
    for (method, path) in documented_routes(&doc) {
        for (status, response) in operation(&doc, &method, &path)["responses"]
            .as_object()
            .expect("responses")
        {
            if status.starts_with('4') || status.starts_with('5') {
                assert_eq!(
                    response["content"]["application/json"]["schema"]["$ref"],
                    "#/components/schemas/Error",
                    "{method} {path} {status}"
                );
            }
        }
    }
}

/// `#` followed by digits (an issue or pull request number), if any.
fn issue_number(text: &str) -> Option<String> {
    text.match_indices('#').find_map(|(at, _)| {
        let digits: String = text[at + 1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        (!digits.is_empty()).then(|| format!("#{digits}"))
    })
}

/// `openapi-spec-validator` (PyPI) accepts the document.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_validator_accepts_the_document() {
    let Some(validator) = find_tool(
        "openapi-spec-validator",
        &venv_tool("openapi-spec-validator"),
    ) else {
        return;
    };
    let app = TestApp::spawn(Backend::Sqlite).await;
    let r = app
        .send(Method::GET, "/openapi.json", None, None, &[])
        .await;
    r.expect(200);
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, &r.raw).expect("document written");
    let out = tokio::task::spawn_blocking(move || Command::new(validator).arg(&file).output())
        .await
        .expect("joined")
        .expect("validator runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("OK"),
        "validator: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Headless Chromium loads `/docs` (following its redirect), runs the page's
/// JavaScript (served by confab itself: the browser has no network beyond
/// it) and shows every operation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_docs_page_renders_the_operations_in_a_browser() {
    let mut candidates = on_path("chromium");
    candidates.push(PathBuf::from("/usr/bin/chromium"));
    let Some(chromium) = find_tool("chromium", &candidates) else {
        return;
    };
    let app = TestApp::spawn(Backend::Sqlite).await;
    let doc = fetch_document(&app).await;
    let profile = tempfile::tempdir().expect("profile dir");
    let url = format!("{}/docs", app.base_url);
    let profile_dir = profile.path().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--virtual-time-budget=10000",
            ])
            .arg(format!("--user-data-dir={}", profile_dir.display()))
            .arg("--dump-dom")
            .arg(url)
            .output()
    })
    .await
    .expect("joined")
    .expect("chromium runs");
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        dom.contains("swagger-ui") && dom.contains("opblock"),
        "the page did not render operations; stderr: {}\nDOM: {dom}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (method, path) in documented_routes(&doc) {
        // Each operation's block carries its path in `data-path`.
        assert!(
            dom.contains(&format!("data-path=\"{path}\"")),
            "{method} {path} is not on the page"
        );
    }
}
