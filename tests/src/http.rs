//! The black-box HTTP harness: the real application on a real socket (port
//! 0) against a fresh database made for the test, driven with a real HTTP
//! client.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use confab_server::startup::{
    open_service_waiting, Application, RateLimits, ServerOptions, Synchronous,
};
use confab_service::Confab;
use reqwest::header::{HeaderMap, CONTENT_TYPE};
use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::db::{Backend, TestDb};

/// A running server with its own database. Dropping it drops the database.
pub struct TestApp {
    pub base_url: String,
    pub client: reqwest::Client,
    pub service: Confab,
    pub backend: Backend,
    /// Where this server keeps uploaded files: a folder of its own, or
    /// (with `CONFAB_TEST_STORAGE_URL`, e.g. `s3://bucket/prefix`) a
    /// prefix of its own under that URL.
    pub files: TestFiles,
    _db: TestDb,
}

/// A test server's file storage.
pub struct TestFiles {
    /// The `CONFAB_STORAGE_URL` it was opened with.
    pub url: String,
    /// The folder, when local (removed with it).
    pub dir: Option<tempfile::TempDir>,
}

impl TestFiles {
    /// A folder of its own, or a prefix of its own under
    /// `CONFAB_TEST_STORAGE_URL`.
    pub fn new() -> Self {
        match std::env::var("CONFAB_TEST_STORAGE_URL") {
            Ok(url) if !url.is_empty() => Self {
                url: format!(
                    "{}/{}",
                    url.trim_end_matches('/'),
                    uuid::Uuid::now_v7().simple()
                ),
                dir: None,
            },
            _ => {
                let dir = tempfile::tempdir().expect("a folder for the files");
                Self {
                    url: dir.path().display().to_string(),
                    dir: Some(dir),
                }
            }
        }
    }

    /// The storage, opened as `confab serve` opens it.
    pub fn open(&self) -> confab_files::ObjectFiles {
        confab_files::ObjectFiles::from_url(&self.url, std::path::Path::new("confab-files"))
            .expect("open the file storage")
    }
}

impl Default for TestFiles {
    fn default() -> Self {
        Self::new()
    }
}

/// A contact with a live token.
#[derive(Debug, Clone)]
pub struct User {
    pub id: String,
    pub username: String,
    pub token: String,
}

/// What came back: status, headers, and the body (parsed as JSON when it is
/// JSON, `Value::Null` when empty, else the raw text as a JSON string).
#[derive(Debug)]
pub struct Resp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
    pub raw: String,
}

impl Resp {
    /// Asserts the status, printing the body when it differs.
    #[track_caller]
    pub fn expect(&self, status: u16) -> &Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.raw
        );
        &self.body
    }

    /// Asserts an error response in the contract's shape.
    #[track_caller]
    pub fn expect_error(&self, status: u16, code: &str, param: Option<&str>) {
        self.expect(status);
        assert_eq!(self.body["code"], code, "body: {}", self.raw);
        let want_type = if status >= 500 {
            "api_error"
        } else {
            "invalid_request"
        };
        assert_eq!(self.body["type"], want_type, "body: {}", self.raw);
        assert!(self.body["message"].is_string(), "body: {}", self.raw);
        match param {
            Some(p) => assert_eq!(self.body["param"], p, "body: {}", self.raw),
            None => assert!(self.body["param"].is_null(), "body: {}", self.raw),
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

impl TestApp {
    /// The test's database, as the store opened it (a `postgres://` URL or
    /// an SQLite file path).
    pub fn database_url(&self) -> &str {
        &self._db.url
    }

    /// Starts the application on `backend` with a fresh database.
    pub async fn spawn(backend: Backend) -> TestApp {
        // The default per-token limit stays on (the suites show it never
        // trips normal use). The per-address limit for requests without a
        // valid token is off: every test actor here shares 127.0.0.1, so it
        // would be one budget for all of them, and tests that send dead
        // tokens on purpose would spend it for the others. It has its own
        // tests in tests/tests/http/rate_limit.rs.
        Self::spawn_with(
            backend,
            RateLimits {
                anonymous: None,
                ..RateLimits::default()
            },
        )
        .await
    }

    /// Starts the application on `backend` with a fresh database and these
    /// rate limits.
    pub async fn spawn_with(backend: Backend, limits: RateLimits) -> TestApp {
        Self::spawn_with_options(
            backend,
            ServerOptions {
                rate_limits: limits,
                ..ServerOptions::default()
            },
        )
        .await
    }

    /// Starts the application on `backend` with a fresh database and these
    /// server options; also returns the application's private metrics port,
    /// when the options ask for one.
    pub async fn spawn_with_options(backend: Backend, options: ServerOptions) -> TestApp {
        Self::spawn_full(backend, options).await.0
    }

    /// [`TestApp::spawn_with_options`], with the private metrics port.
    pub async fn spawn_full(backend: Backend, options: ServerOptions) -> (TestApp, Option<u16>) {
        Self::spawn_shaped(backend, options, |service| service).await
    }

    /// Starts the application on `backend` with a fresh database, its
    /// service set up by `shape` (a limit of its own, as the operator's
    /// settings give it), e.g. `|s| s.with_max_group_members(5)`.
    pub async fn spawn_with_service(
        backend: Backend,
        shape: impl FnOnce(Confab) -> Confab + Send + 'static,
    ) -> TestApp {
        Self::spawn_shaped(
            backend,
            ServerOptions {
                rate_limits: RateLimits {
                    anonymous: None,
                    ..RateLimits::default()
                },
                ..ServerOptions::default()
            },
            shape,
        )
        .await
        .0
    }

    async fn spawn_shaped(
        backend: Backend,
        options: ServerOptions,
        shape: impl FnOnce(Confab) -> Confab + Send + 'static,
    ) -> (TestApp, Option<u16>) {
        let db = match backend {
            Backend::Postgres => TestDb::postgres(),
            Backend::Sqlite => TestDb::sqlite(),
        };
        let config = crate::db::app_database(&db);
        let files = TestFiles::new();
        let storage = std::sync::Arc::new(files.open());
        let service = tokio::task::spawn_blocking(move || {
            let opened =
                open_service_waiting(&config, Duration::ZERO, None, Synchronous::default())
                    .expect("open store")
                    .with_files(storage, confab_service::DEFAULT_MAX_UPLOAD_BYTES);
            shape(opened)
        })
        .await
        .expect("join");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let app = Application::build_with_options(service.clone(), listener, options)
            .await
            .expect("build app");
        let metrics_port = app.metrics_port();
        tokio::spawn(app.run_until_stopped());
        let app = TestApp {
            base_url: format!("http://127.0.0.1:{port}"),
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("client"),
            service,
            backend,
            files,
            _db: db,
        };
        (app, metrics_port)
    }

    /// Creates a contact and a token for it, the way the operator's CLI does.
    pub async fn user(&self, username: &str) -> User {
        let contact = self
            .service
            .create_contact(username, "+15550100", None)
            .await
            .expect("create contact");
        let token = self
            .service
            .issue_token(username, None)
            .await
            .expect("issue token");
        User {
            id: contact.id().to_string(),
            username: username.to_owned(),
            token,
        }
    }

    /// Revokes every token of `user` (what `confab token revoke` does), waits
    /// until the server refuses the old one (the contract allows 5 s), and
    /// gives `user` a fresh token; returns the revoked one.
    pub async fn revoke_and_reissue(&self, user: &mut User) -> String {
        let old = user.token.clone();
        self.send(Method::GET, "/v1/contacts/me", Some(&old), None, &[])
            .await
            .expect(200);
        self.service
            .revoke_tokens(&user.username)
            .await
            .expect("revoke tokens");
        self.wait_refused(&old, Duration::from_secs(6)).await;
        user.token = self
            .service
            .issue_token(&user.username, None)
            .await
            .expect("issue token");
        old
    }

    /// A token of `user` that has expired: issued for one second (the
    /// shortest the service issues), then waited out. `user`'s own token
    /// stays valid.
    pub async fn expired_token(&self, user: &User) -> String {
        let issued = Instant::now();
        let token = self
            .service
            .issue_token(&user.username, Some(1))
            .await
            .expect("issue token");
        let accepted = self.wait_refused(&token, Duration::from_secs(5)).await;
        // A token refused from the start would prove nothing about expiry.
        assert!(
            accepted || issued.elapsed() >= Duration::from_secs(1),
            "a token valid for 1 s was refused at once"
        );
        token
    }

    /// Polls until `token` answers 401; returns whether it was accepted
    /// before that.
    async fn wait_refused(&self, token: &str, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        let mut accepted = false;
        loop {
            let r = self
                .send(Method::GET, "/v1/contacts/me", Some(token), None, &[])
                .await;
            if r.status == StatusCode::UNAUTHORIZED {
                return accepted;
            }
            r.expect(200);
            accepted = true;
            assert!(
                Instant::now() < deadline,
                "token still accepted after {within:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Sends a request; `body` is (content type, bytes).
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<(&str, Vec<u8>)>,
        headers: &[(&str, &str)],
    ) -> Resp {
        let mut req = self
            .client
            .request(method, format!("{}{}", self.base_url, path));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some((content_type, bytes)) = body {
            req = req.header(CONTENT_TYPE, content_type).body(bytes);
        }
        let resp = req.send().await.expect("request sent");
        let status = resp.status();
        let headers = resp.headers().clone();
        let raw = resp.text().await.expect("body read");
        let body = if raw.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&raw).unwrap_or_else(|_| Value::String(raw.clone()))
        };
        Resp {
            status,
            headers,
            body,
            raw,
        }
    }

    pub async fn get(&self, user: &User, path: &str) -> Resp {
        self.send(Method::GET, path, Some(&user.token), None, &[])
            .await
    }

    pub async fn delete(&self, user: &User, path: &str) -> Resp {
        self.send(Method::DELETE, path, Some(&user.token), None, &[])
            .await
    }

    /// A form-encoded body; keys are sent as given (brackets raw), values
    /// percent-encoded.
    pub async fn form(
        &self,
        method: Method,
        user: &User,
        path: &str,
        pairs: &[(&str, &str)],
    ) -> Resp {
        self.send(
            method,
            path,
            Some(&user.token),
            Some((
                "application/x-www-form-urlencoded",
                encode_form(pairs).into_bytes(),
            )),
            &[],
        )
        .await
    }

    pub async fn post(&self, user: &User, path: &str, pairs: &[(&str, &str)]) -> Resp {
        self.form(Method::POST, user, path, pairs).await
    }

    pub async fn put(&self, user: &User, path: &str, pairs: &[(&str, &str)]) -> Resp {
        self.form(Method::PUT, user, path, pairs).await
    }

    pub async fn json(&self, method: Method, user: &User, path: &str, body: &Value) -> Resp {
        self.send(
            method,
            path,
            Some(&user.token),
            Some(("application/json", body.to_string().into_bytes())),
            &[],
        )
        .await
    }

    /// Creates a direct conversation between `a` and `b`; returns its id.
    pub async fn direct(&self, a: &User, b: &User) -> String {
        let r = self
            .post(a, "/v1/conversations", &[("contact_id", &b.id)])
            .await;
        r.expect(201)["id"].as_str().expect("id").to_owned()
    }

    /// Sends a message; returns the message object.
    pub async fn send_message(&self, from: &User, conversation: &str, text: &str) -> Value {
        let r = self
            .post(
                from,
                "/v1/messages",
                &[("conversation_id", conversation), ("message", text)],
            )
            .await;
        r.expect(201).clone()
    }
}

/// Encodes pairs as `application/x-www-form-urlencoded`, leaving `[` and `]`
/// in keys raw (the bracket notation clients most often send).
pub fn encode_form(pairs: &[(&str, &str)]) -> String {
    fn enc(s: &str, keep_brackets: bool) -> String {
        let mut out = String::new();
        for b in s.bytes() {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                    out.push(b as char)
                }
                b'[' | b']' if keep_brackets => out.push(b as char),
                b' ' => out.push('+'),
                _ => out.push_str(&format!("%{b:02X}")),
            }
        }
        out
    }
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k, true), enc(v, false)))
        .collect::<Vec<_>>()
        .join("&")
}

/// One part of a `multipart/form-data` body: its name, its filename, its
/// declared type, its bytes.
pub type Part<'a> = (&'a str, Option<&'a str>, Option<&'a str>, &'a [u8]);

/// The boundary [`multipart`] separates parts with.
pub const BOUNDARY: &str = "confab-test-boundary-7d1f";

/// A `multipart/form-data` body of `parts`, and its content type.
pub fn multipart(parts: &[Part<'_>]) -> (String, Vec<u8>) {
    let mut body = Vec::new();
    for (name, filename, content_type, bytes) in parts {
        body.extend_from_slice(format!("--{BOUNDARY}\r\n").as_bytes());
        let mut disposition = format!("Content-Disposition: form-data; name=\"{name}\"");
        if let Some(f) = filename {
            disposition.push_str(&format!("; filename=\"{f}\""));
        }
        body.extend_from_slice(disposition.as_bytes());
        body.extend_from_slice(b"\r\n");
        if let Some(t) = content_type {
            body.extend_from_slice(format!("Content-Type: {t}\r\n").as_bytes());
        }
        body.extend_from_slice(b"\r\n");
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={BOUNDARY}"), body)
}

impl TestApp {
    /// Uploads `bytes` as `filename` (`POST /v1/attachments`).
    pub async fn upload(&self, user: &User, filename: &str, bytes: &[u8]) -> Resp {
        let (content_type, body) = multipart(&[(
            "file",
            Some(filename),
            Some("application/octet-stream"),
            bytes,
        )]);
        self.send(
            Method::POST,
            "/v1/attachments",
            Some(&user.token),
            Some((&content_type, body)),
            &[],
        )
        .await
    }

    /// Whether the storage holds the file of attachment `id`.
    pub async fn file_exists(&self, id: &str) -> bool {
        use confab_ports::FileStorage as _;
        let id: confab_domain::AttachmentId = id.parse().expect("an attachment id");
        match self.files.open().open(id, None).await {
            Ok(_) => true,
            Err(confab_ports::StoreError::NotFound) => false,
            Err(e) => panic!("the storage failed: {e}"),
        }
    }

    /// The names in the storage's folder, when it is local (every file,
    /// also one half-written).
    pub fn stored_files(&self) -> Vec<String> {
        let Some(dir) = &self.files.dir else {
            return Vec::new();
        };
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .expect("read the files folder")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}
