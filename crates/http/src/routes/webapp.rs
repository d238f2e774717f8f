//! The reference web client, built into the binary and served at `/app/`
//! when `CONFAB_WEB_APP=true` (off by default: then `/app/` is an unknown
//! route like any other).
//!
//! The files are `crates/http/webapp/`: the web client's build
//! (`clients/web`, `node build.mjs --embed` refreshes them), committed so
//! that building the server needs no Node; `clients/run.sh` fails when
//! they differ from a fresh build of the sources. Only those three names
//! exist under `/app/`: any other path there (`..`, a folder, an encoded
//! slash) is a 404. Outside `/v1`, so no token is asked for and nothing
//! is counted against a contact or an address; the page then signs in
//! with a token and calls the API on the same origin.

use std::sync::OnceLock;

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use sha2::{Digest, Sha256};

use crate::error::ApiError;

/// Where the client is served.
pub const PREFIX: &str = "/app";

/// One embedded file.
struct File {
    name: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

/// Every file there is; `index.html` is also `/app/`.
const FILES: [File; 3] = [
    File {
        name: "index.html",
        content_type: "text/html; charset=utf-8",
        bytes: include_bytes!("../../webapp/index.html"),
    },
    File {
        name: "app.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../../webapp/app.js"),
    },
    File {
        name: "app.css",
        content_type: "text/css; charset=utf-8",
        bytes: include_bytes!("../../webapp/app.css"),
    },
];

const INDEX: usize = 0;

/// `index.html` is revalidated on each load (its `ETag` makes that a 304);
/// it names each asset with `?v=` and the asset's version, and an asset
/// asked for with its current version is kept for a year.
const REVALIDATE: &str = "no-cache";
const FOREVER: &str = "public, max-age=31536000, immutable";

/// The methods `/app` and its files take.
const ALLOW: &str = "GET, HEAD";

/// How the pages are served: their `Content-Security-Policy`.
#[derive(Debug, Clone)]
pub struct WebApp {
    csp: HeaderValue,
}

impl WebApp {
    /// `public_url` (`CONFAB_PUBLIC_URL`): where links to uploaded files
    /// point, so the pages may show images from there.
    pub fn new(public_url: Option<&str>) -> Self {
        Self {
            csp: content_security_policy(public_url.and_then(origin)),
        }
    }
}

/// The page's scripts and styles come from its own files only (nothing
/// inline, no `eval`), it talks to its own origin only (the API and the
/// event stream), shows images from there (and from the files' public
/// URL), and nobody may frame it.
fn content_security_policy(files_origin: Option<&str>) -> HeaderValue {
    let images = match files_origin {
        Some(origin) => format!("'self' {origin}"),
        None => "'self'".to_owned(),
    };
    let policy = format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src {images}; \
         connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    );
    HeaderValue::from_str(&policy).unwrap_or_else(|_| {
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
             connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        )
    })
}

/// `https://host:port` of a URL (its scheme and authority), when it has one
/// that can stand in a header.
fn origin(url: &str) -> Option<&str> {
    let (scheme, rest) = url.split_once("://")?;
    let host = rest.split(['/', '?', '#']).next()?;
    let end = scheme.len() + 3 + host.len();
    let ok = !host.is_empty()
        && matches!(scheme, "http" | "https")
        && url[..end]
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b';' && b != b',' && b != b'\'');
    ok.then(|| &url[..end])
}

/// Registers `/app`, `/app/` and `/app/<file>` when the client is served.
pub fn configure(cfg: &mut web::ServiceConfig, app: Option<&WebApp>) {
    let Some(app) = app else { return };
    let data = web::Data::new(app.clone());
    let resource = |path: &str| {
        web::resource(path)
            .app_data(data.clone())
            .default_service(web::to(|| async {
                Err::<HttpResponse, _>(ApiError::method_not_allowed(ALLOW))
            }))
    };
    cfg.service(
        resource(PREFIX)
            .route(web::get().to(to_index))
            .route(web::head().to(to_index)),
    )
    .service(
        resource("/app/")
            .route(web::get().to(index))
            .route(web::head().to(index)),
    )
    .service(
        resource("/app/{file}")
            .route(web::get().to(file))
            .route(web::head().to(file)),
    );
}

/// `/app` is `/app/`, whose relative links then resolve under it.
async fn to_index() -> HttpResponse {
    HttpResponse::PermanentRedirect()
        .insert_header((header::LOCATION, "/app/"))
        .finish()
}

async fn index(req: HttpRequest, app: web::Data<WebApp>) -> HttpResponse {
    serve(&req, &app, INDEX)
}

async fn file(
    req: HttpRequest,
    app: web::Data<WebApp>,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let found = FILES
        .iter()
        .position(|f| f.name == name.as_str())
        .ok_or_else(ApiError::route_not_found)?;
    Ok(serve(&req, &app, found))
}

/// The version of each file: the first 16 hex digits of its SHA-256 (as
/// the web client's build names them in `index.html`).
fn versions() -> &'static [String; 3] {
    static VERSIONS: OnceLock<[String; 3]> = OnceLock::new();
    VERSIONS.get_or_init(|| {
        FILES.each_ref().map(|f| {
            Sha256::digest(f.bytes)[..8]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        })
    })
}

fn serve(req: &HttpRequest, app: &WebApp, index: usize) -> HttpResponse {
    let file = &FILES[index];
    let version = &versions()[index];
    // Weak: the same bytes may leave compressed or not.
    let etag = format!("W/\"{version}\"");
    let versioned = index != INDEX
        && req
            .query_string()
            .split('&')
            .any(|pair| pair.strip_prefix("v=") == Some(version.as_str()));
    let cache = if versioned { FOREVER } else { REVALIDATE };
    let fresh = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| {
            tags.split(',')
                .map(str::trim)
                .any(|t| t == "*" || t.trim_start_matches("W/") == &etag[2..])
        });
    let mut response = HttpResponse::build(if fresh {
        StatusCode::NOT_MODIFIED
    } else {
        StatusCode::OK
    });
    response
        .insert_header((header::ETAG, etag))
        .insert_header((header::CACHE_CONTROL, cache))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CONTENT_SECURITY_POLICY, app.csp.clone()))
        .insert_header((header::REFERRER_POLICY, "no-referrer"));
    if fresh {
        return response.finish();
    }
    response.content_type(file.content_type).body(file.bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_is_the_scheme_and_authority() {
        assert_eq!(
            origin("https://chat.example.com/base/"),
            Some("https://chat.example.com")
        );
        assert_eq!(
            origin("http://127.0.0.1:8080"),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(origin("ftp://x"), None);
        assert_eq!(origin("https://a;b"), None);
        assert_eq!(origin("nothing"), None);
    }

    #[test]
    fn the_index_names_each_asset_with_its_version() {
        let html = std::str::from_utf8(FILES[INDEX].bytes).expect("utf-8");
        for (i, f) in FILES.iter().enumerate().skip(1) {
            let link = format!("\"./{}?v={}\"", f.name, versions()[i]);
            assert!(html.contains(&link), "index.html names {link}");
        }
    }
}
