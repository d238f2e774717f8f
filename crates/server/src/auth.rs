//! Bearer-token authentication: a middleware on the whole `/v1` scope (so
//! it runs before routing: an unknown `/v1` path without a token is 401),
//! and the [`Caller`] extractor handlers use to learn who is asking.

use std::future::{ready, Ready};

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderMap, AUTHORIZATION};
use actix_web::middleware::Next;
use actix_web::{web, FromRequest, HttpMessage, HttpRequest};
use confab_domain::Contact;
use confab_service::Confab;

use crate::error::ApiError;

/// The authenticated contact making the request.
#[derive(Debug, Clone)]
pub struct Caller(pub Contact);

/// The token of `Authorization: Bearer <token>` (scheme in any case). Only
/// this header counts: a token in the query string is never looked at.
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && !token.contains(' '))
        .then_some(token)
}

/// Authenticates every request it wraps, or answers 401.
///
/// A refusal is answered as a response, not returned as `Err`: an error
/// leaves the middleware chain as `Err` and becomes a response only inside
/// actix, past every outer middleware (the security headers among them).
pub async fn require_token(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    match authenticate(&req).await {
        Ok(caller) => {
            req.extensions_mut().insert(caller);
            Ok(next.call(req).await?.map_into_left_body())
        }
        Err(e) => Ok(req.error_response(e).map_into_right_body()),
    }
}

async fn authenticate(req: &ServiceRequest) -> Result<Caller, ApiError> {
    let service = req
        .app_data::<web::Data<Confab>>()
        .ok_or_else(|| ApiError::internal(&"the service is not registered as app data"))?;
    let token = bearer_token(req.headers()).ok_or_else(ApiError::unauthorized)?;
    let contact = service.authenticate(token).await.map_err(ApiError::from)?;
    tracing::Span::current().record("caller", tracing::field::display(contact.id));
    Ok(Caller(contact))
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
