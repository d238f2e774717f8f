//! Logs: `tracing` to stderr, filtered by `RUST_LOG`, with one line per HTTP
//! request (the close of its root span, carrying method, route, status,
//! latency and the authenticated caller).

use std::io::IsTerminal;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Uri;
use actix_web::HttpMessage;
use tracing::Span;
use tracing_actix_web::{RequestId, RootSpanBuilder};
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::EnvFilter;

/// Installs the global subscriber. `default_filter` applies when `RUST_LOG`
/// is unset or invalid. Calling it twice is harmless (tests).
pub fn init(default_filter: &str) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    // tracing-actix-web records spans, not events: without CLOSE span events
    // a plain fmt subscriber would print nothing per request.
    let _already_set = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_span_events(FmtSpan::CLOSE)
        .try_init();
}

/// The request's root span: tracing-actix-web's usual fields (the ones its
/// `on_request_end` fills in too) plus `caller`, which authentication fills
/// in. Built here rather than with `root_span!`, which logs the request
/// target raw: a token wrongly sent as `?access_token=...` or message text
/// in a query would reach the log. The target is logged redacted (see
/// [`redacted_target`]); no header is logged.
pub struct RequestSpan;

impl RootSpanBuilder for RequestSpan {
    fn on_request_start(request: &ServiceRequest) -> Span {
        let route = request.match_pattern().unwrap_or_else(|| "default".into());
        let method = request.method().as_str();
        let client_ip = request
            .peer_addr()
            .map(|a| a.ip().to_string())
            .unwrap_or_default();
        tracing::info_span!(
            "HTTP request",
            http.method = %method,
            http.route = %route,
            http.target = %redacted_target(request.uri()),
            http.client_ip = %client_ip,
            http.status_code = tracing::field::Empty,
            otel.name = %format_args!("{method} {route}"),
            otel.kind = "server",
            otel.status_code = tracing::field::Empty,
            request_id = %request_id(request),
            exception.message = tracing::field::Empty,
            caller = tracing::field::Empty,
        )
    }

    /// Status only. Unlike tracing-actix-web's default, the error's text is
    /// recorded for a server error alone: a 4xx message may quote what the
    /// client sent (a malformed parameter name), and the client already has
    /// it in the response. A 5xx message is generic; its cause is logged
    /// where it happens.
    fn on_request_end<B: MessageBody>(
        span: Span,
        outcome: &Result<ServiceResponse<B>, actix_web::Error>,
    ) {
        let (status, error) = match outcome {
            Ok(res) => (res.status(), res.response().error()),
            Err(e) => (e.as_response_error().status_code(), Some(e)),
        };
        span.record("http.status_code", status.as_u16());
        if status.is_server_error() {
            span.record("otel.status_code", "ERROR");
            if let Some(e) = error {
                span.record("exception.message", tracing::field::display(e));
            }
        } else {
            span.record("otel.status_code", "OK");
        }
    }
}

fn request_id(request: &ServiceRequest) -> String {
    request
        .extensions()
        .get::<RequestId>()
        .map(ToString::to_string)
        .unwrap_or_default()
}

const REDACTED: &str = "[redacted]";

/// The request target fit for a log: every query value replaced by
/// `[redacted]` (`/v1/messages?access_token=[redacted]&limit=[redacted]`),
/// and any query name or path segment that does not look like one of ours
/// (a parameter name, an id) replaced whole, so that a secret pasted where a
/// name belongs is not logged either.
pub fn redacted_target(uri: &Uri) -> String {
    let mut out = String::with_capacity(uri.path().len() + 16);
    for (i, segment) in uri.path().split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        out.push_str(if looks_plain(segment, 64) {
            segment
        } else {
            REDACTED
        });
    }
    if let Some(query) = uri.query() {
        out.push('?');
        for (i, pair) in query.split('&').enumerate() {
            if i > 0 {
                out.push('&');
            }
            let name = pair.split_once('=').map_or(pair, |(name, _)| name);
            out.push_str(if looks_plain(name, 40) {
                name
            } else {
                REDACTED
            });
            out.push('=');
            out.push_str(REDACTED);
        }
    }
    out
}

/// Short, of the characters our names and ids use (brackets may be
/// percent-encoded), and not a token.
fn looks_plain(s: &str, max_len: usize) -> bool {
    let decoded = percent_decoded(s);
    s.len() <= max_len
        && !decoded
            .to_ascii_lowercase()
            .windows(4)
            .any(|w| w == b"cfb_")
        && decoded
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'[' | b']'))
}

/// `%XX` as the byte it stands for (a stray `%` stays, and is refused).
fn percent_decoded(s: &str) -> Vec<u8> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(s: &str) -> String {
        redacted_target(&s.parse().expect("uri"))
    }

    #[test]
    fn query_values_and_odd_names_are_redacted() {
        assert_eq!(
            target("/v1/messages?access_token=cfb_0123abcd&limit=5"),
            "/v1/messages?access_token=[redacted]&limit=[redacted]"
        );
        assert_eq!(target("/v1/messages"), "/v1/messages");
        assert_eq!(
            target("/v1/messages/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"),
            "/v1/messages/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
        );
        assert_eq!(
            target("/v1/x?reactions%5Blike%5D%5B%5D=bob&bare"),
            "/v1/x?reactions%5Blike%5D%5B%5D=[redacted]&bare=[redacted]"
        );
        assert_eq!(
            target("/v1/x?cfb_0123abcd&hello%20world=1"),
            "/v1/x?[redacted]=[redacted]&[redacted]=[redacted]"
        );
        assert_eq!(target("/v1/cfb_0123abcd/x"), "/v1/[redacted]/x");
        assert_eq!(
            target("/v1/x?cfb%5f0123=1&%=1"),
            "/v1/x?[redacted]=[redacted]&[redacted]=[redacted]"
        );
        assert_eq!(target("/v1/x?"), "/v1/x?=[redacted]");
    }
}
