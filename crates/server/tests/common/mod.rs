//! A small harness for the server's own HTTP tests: the real application
//! on port 0 over a fresh SQLite file, driven with a real HTTP client.

#![allow(dead_code)] // each test file uses a part of it

use std::net::TcpListener;

use confab_server::startup::{open_service, Application, Database, RateLimits, ServerOptions};
use confab_service::Confab;
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::Value;

pub struct TestApp {
    pub base_url: String,
    pub client: reqwest::Client,
    pub service: Confab,
    _dir: tempfile::TempDir,
}

pub struct Resp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

impl TestApp {
    /// The application with its default settings.
    pub async fn spawn() -> TestApp {
        Self::spawn_with(RateLimits::default()).await
    }

    pub async fn spawn_with(limits: RateLimits) -> TestApp {
        Self::spawn_with_options(ServerOptions {
            rate_limits: limits,
            ..ServerOptions::default()
        })
        .await
    }

    pub async fn spawn_with_options(options: ServerOptions) -> TestApp {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("confab.db").display().to_string();
        let service = tokio::task::spawn_blocking(move || {
            open_service(&Database::Sqlite(path)).expect("open store")
        })
        .await
        .expect("join");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let app = Application::build_with_options(service.clone(), listener, options)
            .await
            .expect("build app");
        tokio::spawn(app.run_until_stopped());
        TestApp {
            base_url: format!("http://127.0.0.1:{port}"),
            client: reqwest::Client::new(),
            service,
            _dir: dir,
        }
    }

    /// A new contact's token.
    pub async fn token(&self, username: &str) -> String {
        self.service
            .create_contact(username, "+15550100", None)
            .await
            .expect("create contact");
        self.service
            .issue_token(username, None)
            .await
            .expect("issue token")
    }

    pub async fn send(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        form: Option<&str>,
    ) -> Resp {
        let mut req = self
            .client
            .request(method, format!("{}{}", self.base_url, path));
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        if let Some(form) = form {
            req = req
                .header("content-type", "application/x-www-form-urlencoded")
                .body(form.to_owned());
        }
        let resp = req.send().await.expect("request sent");
        let status = resp.status();
        let headers = resp.headers().clone();
        let raw = resp.text().await.expect("body read");
        let body = serde_json::from_str(&raw).unwrap_or(Value::Null);
        Resp {
            status,
            headers,
            body,
        }
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> Resp {
        self.send(Method::GET, path, token, None).await
    }
}
