//! `GET /v1/events`: the caller's event stream (Server-Sent Events), or
//! with `Accept: application/json` the catch-up list.

use actix_web::http::header::{self, HeaderMap};
use actix_web::{web, HttpRequest, HttpResponse};
use confab_domain::EventId;
use confab_service::Confab;
use utoipa::ToSchema;

use super::{endpoint, ok_json, Endpoint};
use crate::delivery::events::{open_stream, write_event, Hub, StreamSlots};
use crate::http::auth::{bearer_token, Caller};
use crate::http::dto::ListDto;
use crate::http::error::{ApiError, ErrorBody};
use crate::http::requests::events::EventsIn;
use crate::http::requests::Input;
use crate::http::wire;

pub fn endpoints() -> Vec<Endpoint> {
    vec![endpoint!(events, __path_events)]
}

/// An event as the list and the stream's `data:` lines carry it.
// Schema only (nothing reads its fields): written by
// `crate::delivery::events::write_event`.
#[allow(dead_code)]
#[derive(Debug, ToSchema)]
pub struct EventDto {
    /// Names the change: the same for every recipient (dedupe by it).
    pub id: String,
    /// `message.created`, `conversation.updated`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// Unix seconds.
    pub created_at: i64,
    /// The object as the recipient would GET it (`{"id"}` for a deletion).
    #[schema(value_type = Object)]
    pub payload: serde_json::Value,
}

/// The caller's events. By default a Server-Sent Events stream: each frame
/// is `id: <event id>`, `event: <type>`, `data: <the event as JSON>`; a
/// `: keep-alive` comment comes after 15 s without events. Resume with the
/// `Last-Event-ID` header (or `after`): the events after that one are
/// replayed, then live ones follow, none missed or repeated. With `Accept:
/// application/json`: the events after `after` (from the oldest kept
/// without it), oldest first, as a list of at most `limit`.
#[utoipa::path(
    get, path = "/v1/events", tag = "events", operation_id = "events",
    params(
        EventsIn,
        ("Last-Event-ID" = Option<String>, Header,
            description = "the stream's form of `after` (wins over it when both are given)"),
    ),
    responses(
        (status = 200, description = "the stream, or the list with `Accept: application/json`",
            content(
                (String = "text/event-stream"),
                (ListDto<EventDto> = "application/json"),
            )),
        (status = 400, description = "`after` (or `Last-Event-ID`) is malformed, unknown or \
            older than the events kept (7 days): resync, then stream without it; or `limit` \
            given to a stream", body = ErrorBody),
        (status = 429, description = "`too_many_streams`: the caller's contact already holds \
            `CONFAB_MAX_STREAMS_PER_CONTACT` (default 10) open streams; or `rate_limited`",
            body = ErrorBody),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn events(
    req: HttpRequest,
    hub: web::Data<Hub>,
    slots: web::Data<StreamSlots>,
    caller: Caller,
    Input(query): Input<EventsIn>,
) -> Result<HttpResponse, ApiError> {
    let EventsIn { after, limit } = query;
    let after = match last_event_id(req.headers())? {
        Some(id) => Some(id),
        None => after,
    };
    let service: &Confab = hub.service();
    if wants_json(req.headers()) {
        let limit = limit.unwrap_or_default();
        let page = service.list_events(&caller.0, after, limit).await?;
        return Ok(ok_json(wire::list(page.has_more, &page.items, |out, e| {
            write_event(out, e, &e.payload);
            Ok(())
        })));
    }
    if limit.is_some() {
        return Err(ApiError::invalid(
            "limit",
            "limit applies to the list (Accept: application/json), not to the stream".to_owned(),
        ));
    }
    // Authentication already checked the header; this is its hash, so that
    // the hub can end the stream when the token is revoked.
    let token = bearer_token(req.headers())
        .map(Confab::stream_token)
        .ok_or_else(ApiError::unauthorized)?;
    let slot = slots
        .take(caller.0.id())
        .ok_or_else(|| ApiError::too_many_streams(slots.max()))?;
    // Subscribed before the start is read: whatever the hub reads from now
    // on is queued, and the replay covers everything before.
    let subscription = hub.subscribe(caller.0.id(), token.clone());
    let start = service.events_start(after).await?;
    Ok(open_stream(
        &hub,
        caller.0.id(),
        token,
        start,
        subscription,
        slot,
    ))
}

/// `Last-Event-ID`, the header a reconnecting client sends; empty means
/// none (the SSE rule). Malformed is the same error as a malformed `after`.
fn last_event_id(headers: &HeaderMap) -> Result<Option<EventId>, ApiError> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(None);
    };
    let raw = value.to_str().unwrap_or("invalid").trim();
    if raw.is_empty() {
        return Ok(None);
    }
    raw.parse::<EventId>()
        .map(Some)
        .map_err(|_| ApiError::invalid("after", "Last-Event-ID is not a valid event id".to_owned()))
}

/// Whether the client asked for the list: `Accept` names
/// `application/json` ahead of (or without) `text/event-stream`.
fn wants_json(headers: &HeaderMap) -> bool {
    let accept = headers
        .get_all(header::ACCEPT)
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",")
        .to_ascii_lowercase();
    match (
        accept.find("application/json"),
        accept.find("text/event-stream"),
    ) {
        (Some(json), Some(sse)) => json < sse,
        (Some(_), None) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                header::HeaderName::from_static(k),
                HeaderValue::from_static(v),
            );
        }
        h
    }

    #[test]
    fn negotiation() {
        assert!(!wants_json(&headers(&[])));
        assert!(!wants_json(&headers(&[("accept", "text/event-stream")])));
        assert!(!wants_json(&headers(&[("accept", "*/*")])));
        assert!(wants_json(&headers(&[("accept", "application/json")])));
        assert!(wants_json(&headers(&[(
            "accept",
            "application/json, text/event-stream"
        )])));
        assert!(!wants_json(&headers(&[(
            "accept",
            "text/event-stream, application/json"
        )])));
    }

    #[test]
    fn last_event_id_header() {
        assert_eq!(last_event_id(&headers(&[])).expect("none"), None);
        assert_eq!(
            last_event_id(&headers(&[("last-event-id", "")])).expect("empty"),
            None
        );
        let id = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
        let got = last_event_id(&headers(&[("last-event-id", id)])).expect("id");
        assert_eq!(got.map(|g| g.to_string()).as_deref(), Some(id));
        let e = last_event_id(&headers(&[("last-event-id", "x")])).expect_err("bad");
        assert_eq!((e.code(), e.param()), ("parameter_invalid", Some("after")));
    }
}
