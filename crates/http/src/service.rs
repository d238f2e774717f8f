//! The service a request runs on: the application's [`Confab`] on store
//! handles that carry the request's database budget, made once per request
//! ([`with_db_budget`]) and taken by the handlers and authentication as
//! [`Service`]. The budget travels with the store handles, in plain sight:
//! no store call reads it from anywhere else.

use std::future::{ready, Ready};
use std::ops::Deref;
use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{web, FromRequest, HttpMessage as _, HttpRequest};
use confab_service::{Confab, DbBudget};

use crate::error::ApiError;

/// All of a request's waits on the database together (a token lookup, an
/// idempotency claim, the write): docs/api.md "Retry safely: idempotency keys" allows 2 s, this leaves
/// room for the HTTP work around them.
pub const REQUEST_DB_BUDGET: Duration = Duration::from_millis(1900);

/// The service of the current request (see the module docs).
#[derive(Clone)]
pub struct Service(web::Data<Confab>);

impl Service {
    /// The request's service: the one [`with_db_budget`] made, else the
    /// application's own (a request that did not pass the middleware, such
    /// as one of an app built without it in a test).
    pub fn of(req: &HttpRequest) -> Option<Self> {
        if let Some(service) = req.extensions().get::<Service>() {
            return Some(service.clone());
        }
        req.app_data::<web::Data<Confab>>().cloned().map(Service)
    }
}

impl Deref for Service {
    type Target = Confab;

    fn deref(&self) -> &Confab {
        &self.0
    }
}

impl FromRequest for Service {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        ready(
            Service::of(req)
                .ok_or_else(|| ApiError::internal(&"the service is not registered as app data")),
        )
    }
}

/// Gives the rest of the request a service whose store calls share one
/// budget of [`REQUEST_DB_BUDGET`].
pub async fn with_db_budget(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    if let Some(app) = req.app_data::<web::Data<Confab>>() {
        // Payloads rendered with this request's file links (an upload's
        // `file_url` names the host it was asked on).
        let links = crate::links::links_of(req.request());
        let service = app
            .within(DbBudget::new(REQUEST_DB_BUDGET))
            .rendering(std::sync::Arc::new(crate::payloads::WirePayloads::new(
                links,
            )));
        req.extensions_mut()
            .insert(Service(web::Data::new(service)));
    }
    next.call(req).await
}
