//! The request id: the client's `X-Request-Id` when it is sane, else a new
//! UUIDv7; logged with the request and echoed in every response, so that a
//! client and an operator can name the same request.

use std::fmt;

use actix_web::http::header::{HeaderMap, HeaderName};
use uuid::Uuid;

pub const HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// The longest id taken from a client.
const MAX_LEN: usize = 64;

/// The id of one request (in the request's extensions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(String);

impl RequestId {
    /// The client's id if sane, else a new one.
    pub fn of(headers: &HeaderMap) -> RequestId {
        headers
            .get(&HEADER)
            .and_then(|v| v.to_str().ok())
            .filter(|id| is_sane(id))
            .map_or_else(
                || RequestId(Uuid::now_v7().to_string()),
                |id| RequestId(id.to_owned()),
            )
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// 1 to 64 of `A-Z a-z 0-9 . _ -`: safe in a log line and a header. Not
/// something shaped like a token either (`cfb_`), which would then be logged.
fn is_sane(id: &str) -> bool {
    (1..=MAX_LEN).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && !id.to_ascii_lowercase().contains("cfb_")
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::HeaderValue;

    fn id_for(value: Option<&str>) -> String {
        let mut headers = HeaderMap::new();
        if let Some(v) = value {
            headers.insert(HEADER, HeaderValue::from_str(v).expect("header"));
        }
        RequestId::of(&headers).to_string()
    }

    #[test]
    fn sane_ids_are_kept_others_replaced() {
        assert_eq!(id_for(Some("abc-123_x.y")), "abc-123_x.y");
        let long = "a".repeat(64);
        assert_eq!(id_for(Some(&long)), long);
        for bad in [
            None,
            Some(""),
            Some("a b"),
            Some("a/b"),
            Some("ä"),
            Some(&*"a".repeat(65)),
            Some("cfb_0123abcd"),
            Some("x-CFB_0123"),
        ] {
            let id = id_for(bad);
            assert_ne!(Some(id.as_str()), bad, "{bad:?}");
            let uuid = Uuid::parse_str(&id).expect("a generated UUID");
            assert_eq!(uuid.get_version_num(), 7);
        }
    }
}
