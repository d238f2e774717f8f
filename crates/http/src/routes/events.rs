//! `GET /v1/events`: the caller's event stream (Server-Sent Events), or
//! with `Accept: application/json` the catch-up list.

use actix_web::http::header::{self, HeaderMap};
use actix_web::{web, HttpMessage as _, HttpRequest, HttpResponse};
use confab_domain::EventId;
use confab_service::Confab;
use utoipa::ToSchema;

use super::{endpoint, page_json, Endpoint};
use crate::auth::{bearer_token, Actor, Caller, TicketStream};
use crate::dto::ListDto;
use crate::error::{ApiError, ErrorBody};
use crate::requests::events::EventsIn;
use crate::requests::{Input, NoParams};
use crate::service::Service;
use confab_delivery::events::{open_stream, write_event, Hub, StreamSlots};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        endpoint!(events, __path_events),
        endpoint!(create_ticket, __path_create_ticket),
    ]
}

/// An event as the list and the stream's `data:` lines carry it.
// Schema only (nothing reads its fields): written by
// `confab_delivery::events::write_event`.
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
        (status = 401, description = "no token, or `ticket` is unknown, expired or its token \
            was revoked; or a ticket asked for the list", body = ErrorBody),
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
    // A ticket authenticated the request already (`auth`); it opens a
    // stream, never the list.
    let EventsIn {
        after,
        limit,
        ticket: ticket_given,
    } = query;
    let ticket = req.extensions().get::<TicketStream>().cloned();
    let after = match last_event_id(req.headers())? {
        Some(id) => Some(id),
        None => after,
    };
    let service: &Confab = hub.service();
    if wants_json(req.headers()) {
        // (A ticket that authenticated the request is this parameter.)
        if ticket_given.is_some() {
            return Err(ApiError::unauthorized_because(
                "a ticket opens the event stream only: read the list with your token",
            ));
        }
        let limit = limit.unwrap_or_default();
        let page = service.list_events(&caller.0, after, limit).await?;
        return Ok(page_json(&page, |out, e| {
            write_event(out, e, &e.payload);
            Ok(())
        }));
    }
    if limit.is_some() {
        return Err(ApiError::invalid(
            "limit",
            "limit applies to the list (Accept: application/json), not to the stream".to_owned(),
        ));
    }
    // Authentication already checked the header; this is its hash, so that
    // the hub can end the stream when the token is revoked.
    // With a ticket, the token that made it.
    let token = match ticket {
        Some(TicketStream(token)) => token,
        None => bearer_token(req.headers())
            .map(Confab::stream_token)
            .ok_or_else(ApiError::unauthorized)?,
    };
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

/// A new event ticket.
#[derive(Debug, serde::Serialize, ToSchema)]
pub struct TicketDto {
    /// `cft_` and 64 hex characters: pass it as `GET /v1/events?ticket=...`.
    /// Shown this once; only its SHA-256 is stored.
    #[schema(pattern = "^cft_[0-9a-f]{64}$")]
    pub ticket: String,
    /// Unix seconds: after this the ticket opens no stream (one it opened
    /// stays open).
    pub expires_at: i64,
}

/// Make an event ticket: a credential for a browser's `EventSource`, which
/// cannot send `Authorization`. It opens the caller's event stream (`GET
/// /v1/events?ticket=...`, reconnects with `Last-Event-ID` included) for 10
/// minutes, and nothing else; revoking the token that made it refuses it
/// and ends the streams it opened. Made with a contact's token only (not a
/// server key). `Idempotency-Key` is not taken: a ticket's secret is never
/// stored, and a retry that makes a second ticket costs nothing.
#[utoipa::path(
    post, path = "/v1/events/tickets", tag = "events", operation_id = "create_event_ticket",
    request_body(description = "no parameters (an empty body)", content(
        (NoParams = "application/x-www-form-urlencoded"),
        (NoParams = "application/json"),
    )),
    responses(
        (status = 201, description = "the ticket", body = TicketDto),
        (status = 403, description = "`forbidden`: made with a server key (tickets hang on a \
            contact's token)", body = ErrorBody),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn create_ticket(
    req: HttpRequest,
    service: Service,
    _: Caller,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    if req.extensions().get::<Actor>().is_some() {
        return Err(ApiError::forbidden(
            "a ticket is made with a contact's token (it ends with that token), \
             not with a server key: mint the contact a token first",
        ));
    }
    let token = bearer_token(req.headers()).ok_or_else(ApiError::unauthorized)?;
    let ticket = service.issue_ticket(token).await?;
    Ok(HttpResponse::Created().json(TicketDto {
        ticket: ticket.ticket,
        expires_at: ticket.expires_at.secs(),
    }))
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
