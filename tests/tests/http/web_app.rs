//! The web client built into the binary (`CONFAB_WEB_APP`): off by default
//! (`/app/` is then an unknown route); when on, `/app/` and its three files
//! with their types, a strict Content-Security-Policy, caching by version
//! and `ETag`, `HEAD`, a redirect from `/app`, and nothing else under
//! `/app/` (no way out of it). No token is asked for, and loading the page
//! spends nothing of the anonymous rate limit.

use std::io::{Read, Write};
use std::net::TcpStream;

use confab_server::startup::{Quota, RateLimits, ServerOptions};
use confab_tests::db::Backend;
use confab_tests::http::{Resp, TestApp};
use reqwest::Method;

async fn with_web_app(backend: Backend, on: bool, rate_limits: RateLimits) -> TestApp {
    TestApp::spawn_with_options(
        backend,
        ServerOptions {
            web_app: on,
            rate_limits,
            ..ServerOptions::default()
        },
    )
    .await
}

async fn get(app: &TestApp, path: &str) -> Resp {
    app.send(Method::GET, path, None, None, &[]).await
}

/// The status line's code of a request sent as written (no client
/// normalises its path).
fn raw_status(app: &TestApp, path: &str) -> u16 {
    let address = app.base_url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).expect("connected");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .expect("request written");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("answer read");
    answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {answer}"))
}

async fn off_by_default_is_an_unknown_route(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    for path in ["/app/", "/app", "/app/index.html", "/app/app.js"] {
        get(&app, path).await.expect_error(404, "not_found", None);
    }
}

async fn serves_the_page_with_a_strict_policy(backend: Backend) {
    let app = with_web_app(backend, true, RateLimits::default()).await;
    for path in ["/app/", "/app/index.html"] {
        let page = get(&app, path).await;
        page.expect(200);
        assert_eq!(
            page.header("content-type"),
            Some("text/html; charset=utf-8")
        );
        assert!(page.raw.contains("<title>confab</title>"), "{}", page.raw);
        assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(page.header("cache-control"), Some("no-cache"));
        assert!(page.header("etag").is_some());
        let csp = page.header("content-security-policy").expect("a CSP");
        for directive in [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "connect-src 'self'",
            "img-src 'self'",
            "frame-ancestors 'none'",
            "base-uri 'none'",
        ] {
            assert!(csp.contains(directive), "{directive} in {csp}");
        }
        assert!(!csp.contains("unsafe"), "{csp}");
    }
}

/// `./app.js?v=...` as the page names it.
fn asset_link(page: &str, name: &str) -> String {
    let start = page
        .find(&format!("\"./{name}?v="))
        .unwrap_or_else(|| panic!("the page names {name}: {page}"));
    let link = &page[start + 3..];
    format!("/app/{}", &link[..link.find('"').expect("closing quote")])
}

async fn serves_the_assets_with_their_types_and_versions(backend: Backend) {
    let app = with_web_app(backend, true, RateLimits::default()).await;
    let page = get(&app, "/app/").await.raw;
    for (name, content_type) in [
        ("app.js", "text/javascript; charset=utf-8"),
        ("app.css", "text/css; charset=utf-8"),
    ] {
        // As the page asks for it: kept for good.
        let versioned = get(&app, &asset_link(&page, name)).await;
        versioned.expect(200);
        assert_eq!(versioned.header("content-type"), Some(content_type));
        assert_eq!(versioned.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(
            versioned.header("cache-control"),
            Some("public, max-age=31536000, immutable")
        );
        assert!(!versioned.raw.is_empty());
        // Without its version (or with another): revalidated.
        for path in [format!("/app/{name}"), format!("/app/{name}?v=0000")] {
            let plain = get(&app, &path).await;
            plain.expect(200);
            assert_eq!(plain.header("cache-control"), Some("no-cache"), "{path}");
            assert_eq!(plain.raw, versioned.raw);
            // The ETag makes a revalidation a 304.
            let etag = plain.header("etag").expect("an ETag");
            let again = app
                .send(Method::GET, &path, None, None, &[("if-none-match", etag)])
                .await;
            again.expect(304);
            assert_eq!(again.raw, "");
            assert_eq!(again.header("etag"), Some(etag));
        }
    }
    let other = app
        .send(
            Method::GET,
            "/app/app.js",
            None,
            None,
            &[("if-none-match", "W/\"0123456789abcdef\"")],
        )
        .await;
    other.expect(200);
}

async fn head_redirect_and_other_methods(backend: Backend) {
    let app = with_web_app(backend, true, RateLimits::default()).await;
    let full = get(&app, "/app/app.js").await;
    let head = app.send(Method::HEAD, "/app/app.js", None, None, &[]).await;
    head.expect(200);
    assert_eq!(head.raw, "");
    assert_eq!(head.header("content-type"), full.header("content-type"));
    assert_eq!(head.header("etag"), full.header("etag"));
    let head = app.send(Method::HEAD, "/app/", None, None, &[]).await;
    head.expect(200);
    assert!(head.header("content-security-policy").is_some());

    for method in [Method::GET, Method::HEAD] {
        let redirect = app.send(method, "/app", None, None, &[]).await;
        redirect.expect(308);
        assert_eq!(redirect.header("location"), Some("/app/"));
    }

    let post = app.send(Method::POST, "/app/", None, None, &[]).await;
    post.expect_error(405, "method_not_allowed", None);
    assert_eq!(post.header("allow"), Some("GET, HEAD"));
}

async fn nothing_else_is_under_app(backend: Backend) {
    let app = with_web_app(backend, true, RateLimits::default()).await;
    for path in [
        "/app/..%2fCargo.toml",
        "/app/%2e%2e%2fCargo.toml",
        "/app/..%2f..%2fCargo.toml",
        "/app/webapp.rs",
        "/app/app.js.map",
        "/app/dist/app.js",
        "/app/app.js/",
        "/app/INDEX.HTML",
        "/app/app.js%00",
        "/app//etc/passwd",
    ] {
        let r = get(&app, path).await;
        r.expect_error(404, "not_found", None);
        assert!(r.header("content-security-policy").is_none(), "{path}");
    }
    // As written on the wire, where no client folds the dots away.
    for path in [
        "/app/../Cargo.toml",
        "/app/../../../../etc/passwd",
        "/app/./app.js/../../openapi.json",
        "/app/index.html/..",
        "/app/%2e%2e/%2e%2e/Cargo.toml",
    ] {
        assert_eq!(raw_status(&app, path), 404, "{path}");
    }
}

async fn needs_no_token_and_spends_no_anonymous_budget(backend: Backend) {
    let limits = RateLimits {
        anonymous: Quota::new(1, 2),
        ..RateLimits::default()
    };
    let app = with_web_app(backend, true, limits).await;
    for _ in 0..10 {
        get(&app, "/app/").await.expect(200);
        get(&app, "/app/app.js").await.expect(200);
    }
    // The anonymous budget is still whole: two refusals without a token
    // are 401, the third is past it.
    for _ in 0..2 {
        get(&app, "/v1/contacts/me")
            .await
            .expect_error(401, "unauthorized", None);
    }
    get(&app, "/v1/contacts/me").await.expect(429);
}

confab_tests::on_both_stores!(crate::support::on_backend;
    off_by_default_is_an_unknown_route,
    serves_the_page_with_a_strict_policy,
    serves_the_assets_with_their_types_and_versions,
    head_redirect_and_other_methods,
    nothing_else_is_under_app,
    needs_no_token_and_spends_no_anonymous_budget,
);
