//! Bearer-token authentication: a middleware on the whole `/v1` scope (so
//! it runs before routing: an unknown `/v1` path without a token is 401),
//! and the [`Caller`] extractor handlers use to learn who is asking.

use std::future::{ready, Ready};
use std::net::IpAddr;

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderMap, AUTHORIZATION};
use actix_web::http::ConnectionType;
use actix_web::middleware::Next;
use actix_web::{web, FromRequest, HttpMessage, HttpRequest, HttpResponse};
use confab_domain::{Contact, ContactId};
use confab_service::{is_server_key, ServerKey, ServiceError, StreamToken, TicketCaller};

use crate::client_addr::TrustedProxies;
use crate::error::ApiError;
use crate::ratelimit::{Budget, Limiter, Verdict};
use crate::service::Service;

/// The authenticated contact making the request.
#[derive(Debug, Clone)]
pub struct Caller(pub Contact);

impl Caller {
    /// Who is shown the answer: the caller, as themself (a server key
    /// acting for a contact sees what the contact sees).
    pub fn viewer(&self) -> confab_domain::Viewer {
        confab_domain::Viewer::Contact(self.0.id())
    }
}

/// The token of `Authorization: Bearer <token>` (scheme in any case). Only
/// this header counts: a token in the query string is never looked at.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && !token.contains(' '))
        .then_some(token)
}

/// Whether an `Authorization` header brings something with the Bearer
/// scheme (any case), well-formed or not.
fn has_bearer_scheme(headers: &HeaderMap) -> bool {
    headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .is_some_and(|(scheme, rest)| {
            scheme.eq_ignore_ascii_case("bearer") && !rest.trim().is_empty()
        })
}

/// Authenticates every request it wraps, or answers 401; applies the rate
/// limits (see [`crate::ratelimit`]), answering 429.
///
/// A refusal is answered as a response, not returned as `Err`: an error
/// leaves the middleware chain as `Err` and becomes a response only inside
/// actix, past every outer middleware (the security headers among them).
pub async fn require_token(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    match authenticate(&req).await {
        Ok((who, budget)) => {
            match who {
                Authenticated::Contact(caller, actor) => {
                    req.extensions_mut().insert(caller);
                    if let Some(actor) = actor {
                        req.extensions_mut().insert(actor);
                    }
                }
                Authenticated::Ticket(ticket) => {
                    req.extensions_mut().insert(Caller(ticket.contact.clone()));
                    req.extensions_mut().insert(TicketStream(ticket.token));
                }
                Authenticated::Server(server) => {
                    req.extensions_mut().insert(Actor(server.0.id));
                    req.extensions_mut().insert(server);
                }
                // The handler checks the link's signature.
                Authenticated::SignedLink => {}
            }
            let mut res = next.call(req).await?;
            if let Some(budget) = budget {
                budget.write(res.headers_mut(), false);
            }
            Ok(res.map_into_left_body())
        }
        // Not `req.into_response`, which would drop the error the refusal
        // carries for the log line and the metrics.
        // The body's reader goes with the refusal, so that the connection
        // closes instead of reading the body on (`unread_body`).
        Err(refusal) => {
            let (req, payload) = req.into_parts();
            crate::unread_body::hold(&req, payload);
            Ok(ServiceResponse::new(req, refusal).map_into_right_body())
        }
    }
}

/// The server key of a request to `/v1/admin` (docs/api.md "Server API: from an app's backend").
#[derive(Debug, Clone)]
pub struct Server(pub ServerKey);

/// The server key a request was made with, when it was (also when it acts
/// for a contact): the request log names it as `actor`.
#[derive(Debug, Clone, Copy)]
pub struct Actor(pub uuid::Uuid);

/// The header with which a server key acts for a contact.
pub const CONFAB_CONTACT: &str = "confab-contact";

/// Who a request is from.
enum Authenticated {
    /// A contact, with its token or through a server key (`Confab-Contact`).
    Contact(Caller, Option<Actor>),
    /// A server key on `/v1/admin`.
    Server(Server),
    /// A contact, with an event ticket (on `GET /v1/events` only).
    Ticket(TicketCaller),
    /// Nobody yet: a signed link to a file's content, whose signature its
    /// handler checks (404 when it does not hold).
    SignedLink,
}

/// Whether the request is a signed link to an attachment's content
/// (`GET /v1/attachments/{id}/content?...&signature=...`, docs/api.md
/// "Files and attachments"): the one route a request without a token may reach.
fn is_signed_link(req: &HttpRequest) -> bool {
    let method = req.method();
    if method != actix_web::http::Method::GET && method != actix_web::http::Method::HEAD {
        return false;
    }
    let in_attachments = req
        .path()
        .strip_prefix("/v1/attachments/")
        .and_then(|rest| rest.strip_suffix("/content"))
        .is_some_and(|id| !id.is_empty() && !id.contains('/'));
    in_attachments
        && req
            .query_string()
            .split('&')
            .any(|pair| pair.starts_with("signature="))
}

/// The token whose ticket opened the request (`GET /v1/events?ticket=`):
/// the stream ends when that token is revoked.
#[derive(Debug, Clone)]
pub struct TicketStream(pub StreamToken);

/// The `ticket` query parameter of a `GET /v1/events`, the one request a
/// ticket authenticates; `None` on every other route, so that a ticket
/// anywhere else is a request without credentials (401).
fn ticket_of(req: &HttpRequest) -> Option<&str> {
    if req.method() != actix_web::http::Method::GET || req.path() != "/v1/events" {
        return None;
    }
    req.query_string()
        .split('&')
        .find_map(|pair| pair.strip_prefix("ticket="))
        .filter(|ticket| !ticket.is_empty())
}

/// Whether the request is for the server API (`/v1/admin` and below).
fn is_admin(path: &str) -> bool {
    path.strip_prefix("/v1/admin")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The caller and what is left of their budget, or the refusal to send
/// (built with `from_error`, so that the request's log line and the error
/// metrics see the [`ApiError`] and its cause).
///
/// The address's allowance is looked at only for requests that bring no
/// valid token: a valid token is judged by its contact's budget alone (a
/// server key by its own), so that others behind the same address (a
/// proxy, a NAT) spending theirs on bad tokens never lock it out (docs/api.md
/// "Hostile load").
async fn authenticate(
    req: &ServiceRequest,
) -> Result<(Authenticated, Option<Budget>), HttpResponse> {
    let service = Service::of(req.request())
        .ok_or_else(|| ApiError::internal(&"the service is not registered as app data"))
        .map_err(HttpResponse::from_error)?;
    let anonymous = |refusal: ApiError| -> HttpResponse {
        anonymous_refusal(req.request()).unwrap_or_else(|| HttpResponse::from_error(refusal))
    };
    let Some(token) = bearer_token(req.headers()) else {
        // A browser's EventSource sends no header: its stream opens with a
        // ticket (docs/api.md "Requests and answers"), on that one route only.
        if is_signed_link(req.request()) {
            // Within the address's anonymous allowance, like any request
            // without a token.
            return match anonymous_refusal(req.request()) {
                Some(refusal) => Err(refusal),
                None => Ok((Authenticated::SignedLink, None)),
            };
        }
        return match ticket_of(req.request()) {
            Some(ticket) => {
                let caller = match service.authenticate_ticket(ticket).await {
                    Ok(caller) => caller,
                    Err(ServiceError::Unauthorized) => {
                        return Err(anonymous(ApiError::invalid_token_because(
                            "the ticket is unknown or its token was revoked: \
                             make a new one (POST /v1/events/tickets)",
                        )))
                    }
                    Err(ServiceError::Expired) => {
                        return Err(anonymous(ApiError::token_expired(
                            "the ticket (or the token that made it) has expired: \
                             make a new one (POST /v1/events/tickets)",
                        )))
                    }
                    Err(e) => return Err(HttpResponse::from_error(ApiError::from(e))),
                };
                tracing::Span::current()
                    .record("caller", tracing::field::display(caller.contact.id()));
                let limiter = req.app_data::<web::Data<Limiter>>();
                let budget = match limiter.map(|l| l.check_contact(caller.contact.id())) {
                    Some(Verdict::Limited(budget)) => return Err(too_many(&budget)),
                    Some(Verdict::Allowed(budget)) => budget,
                    None => None,
                };
                Ok((Authenticated::Ticket(caller), budget))
            }
            // A Bearer header whose token is misshapen is a refused
            // token; no header (or another scheme) asks for one.
            None if has_bearer_scheme(req.headers()) => Err(anonymous(ApiError::invalid_token())),
            None => Err(anonymous(ApiError::unauthorized())),
        };
    };
    let limiter = req.app_data::<web::Data<Limiter>>();
    let admin = is_admin(req.path());
    let acting_for = req.headers().get(CONFAB_CONTACT);
    if is_server_key(token) {
        let key = match service.authenticate_key(token).await {
            Ok(key) => key,
            Err(ServiceError::Unauthorized) => return Err(anonymous(ApiError::invalid_token())),
            Err(e) => return Err(HttpResponse::from_error(ApiError::from(e))),
        };
        tracing::Span::current().record("actor", tracing::field::display(key.id));
        let budget = match limiter.map(|l| l.check_key(key.id)) {
            Some(Verdict::Limited(budget)) => return Err(too_many(&budget)),
            Some(Verdict::Allowed(budget)) => budget,
            None => None,
        };
        if admin {
            return Ok((Authenticated::Server(Server(key)), budget));
        }
        let refuse = |why: &str| HttpResponse::from_error(ApiError::unauthorized_because(why));
        let Some(value) = acting_for else {
            return Err(refuse(
                "a server key acts on contact routes only for a contact: \
                 Confab-Contact: <contact id>",
            ));
        };
        let Some(id) = value
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<ContactId>().ok())
        else {
            return Err(refuse("Confab-Contact must be the id of a contact"));
        };
        let contact = match service.acting_for(id).await {
            Ok(contact) => contact,
            Err(ServiceError::Unauthorized) => {
                return Err(refuse("Confab-Contact does not name a contact"))
            }
            Err(e) => return Err(HttpResponse::from_error(ApiError::from(e))),
        };
        tracing::Span::current().record("caller", tracing::field::display(contact.id()));
        return Ok((
            Authenticated::Contact(Caller(contact), Some(Actor(key.id))),
            budget,
        ));
    }
    // Expired or not, a refused token spends the address's anonymous
    // allowance: a client retrying with it is no valid caller.
    let contact = match service.authenticate(token).await {
        Ok(contact) => contact,
        Err(e @ (ServiceError::Unauthorized | ServiceError::Expired)) => {
            return Err(anonymous(ApiError::from(e)))
        }
        Err(e) => return Err(HttpResponse::from_error(ApiError::from(e))),
    };
    tracing::Span::current().record("caller", tracing::field::display(contact.id()));
    if admin {
        return Err(HttpResponse::from_error(ApiError::forbidden(
            "the server API takes a server key (Authorization: Bearer cfb_sk_...), \
             not a contact's token",
        )));
    }
    // A contact's token acts for its contact only: naming another is
    // refused rather than ignored (a backend that sent its contact's token
    // by mistake would otherwise act as the wrong contact).
    if let Some(value) = acting_for {
        let names_self = value
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<ContactId>().ok())
            == Some(contact.id());
        if !names_self {
            return Err(HttpResponse::from_error(ApiError::forbidden(
                "Confab-Contact is for server keys: a contact's token acts for its contact only",
            )));
        }
    }
    let budget = match limiter.map(|l| l.check_contact(contact.id())) {
        Some(Verdict::Limited(budget)) => return Err(too_many(&budget)),
        Some(Verdict::Allowed(budget)) => budget,
        None => None,
    };
    Ok((Authenticated::Contact(Caller(contact), None), budget))
}

/// A request that brings no valid token costs its client's address one
/// unit of the anonymous allowance: `Some(429)` when that is spent (an
/// address already spent is refused without counting again, so that its
/// block ends when announced), `None` to go on.
pub fn anonymous_refusal(req: &HttpRequest) -> Option<HttpResponse> {
    let limiter = req.app_data::<web::Data<Limiter>>()?;
    let ip = client_ip(req)?;
    let verdict = match limiter.blocked(ip) {
        Some(budget) => Verdict::Limited(budget),
        None => limiter.check_anonymous(ip),
    };
    match verdict {
        Verdict::Limited(budget) => Some(too_many(&budget)),
        Verdict::Allowed(_) => None,
    }
    .map(|mut refusal| {
        // As after a 401: the rest of the body is not read.
        refusal
            .head_mut()
            .set_connection_type(ConnectionType::Close);
        refusal
    })
}

/// The client's address: the peer, or behind trusted proxies the address
/// they forwarded (see [`crate::client_addr`]).
pub fn client_ip(req: &HttpRequest) -> Option<IpAddr> {
    let peer = req.peer_addr()?.ip();
    Some(match req.app_data::<web::Data<TrustedProxies>>() {
        Some(proxies) => proxies.client(peer, req.headers()),
        None => peer,
    })
}

fn too_many(budget: &Budget) -> HttpResponse {
    let mut res = HttpResponse::from_error(ApiError::rate_limited(budget.reset_secs));
    budget.apply(&mut res, true);
    res
}

impl FromRequest for Server {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(
            req.extensions()
                .get::<Server>()
                .cloned()
                .ok_or_else(ApiError::unauthorized),
        )
    }
}

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(
            req.extensions()
                .get::<Caller>()
                .cloned()
                .ok_or_else(ApiError::unauthorized),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::HeaderValue;

    fn token_of(value: &str) -> Option<String> {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, HeaderValue::from_str(value).expect("header"));
        bearer_token(&headers).map(str::to_owned)
    }

    #[test]
    fn the_server_api_is_v1_admin_and_below() {
        assert!(is_admin("/v1/admin"));
        assert!(is_admin("/v1/admin/contacts"));
        assert!(!is_admin("/v1/administrators"));
        assert!(!is_admin("/v1/contacts"));
        assert!(!is_admin("/admin"));
    }

    #[test]
    fn parses_bearer_header() {
        assert_eq!(token_of("Bearer cfb_abc").as_deref(), Some("cfb_abc"));
        assert_eq!(token_of("bearer cfb_abc").as_deref(), Some("cfb_abc"));
        assert_eq!(token_of("Bearer  cfb_abc ").as_deref(), Some("cfb_abc"));
        assert_eq!(token_of("Basic dXNlcjpwdw=="), None);
        assert_eq!(token_of("Bearer"), None);
        assert_eq!(token_of("Bearer "), None);
        assert_eq!(token_of("Bearer a b"), None);
        assert_eq!(bearer_token(&HeaderMap::new()), None);
    }
}
