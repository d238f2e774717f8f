//! confab's HTTP server and command line (binary `confab`): the actix-web
//! routes, the wire objects, request decoding, the one `ApiError`
//! type, bearer authentication, configuration, telemetry and startup wiring.
//!
//! It adapts HTTP to the use cases of `confab-service` and nothing more:
//! rules live in the domain and the service. Only [`startup`] names a store
//! adapter; everything else sees the service alone. This is the outermost
//! layer: no other confab crate may depend on it (the black-box tests
//! excepted), and it never talks to a database except through the service.
//!
//! Modules: [`cli`] (the `confab` commands), [`config`] (environment ->
//! `Settings`), [`startup`] (store, service, HTTP server), [`telemetry`]
//! (logs), [`openapi`] (the OpenAPI document, built from the routes);
//! privately `routes` (thin handlers), `requests` (one request type per
//! operation), `params` and `decode` (the one way request attributes are
//! read), `dto` (wire objects), `error`, `auth`, `ratelimit`, `metrics`
//! (`GET /metrics`), `request_id` and `webhooks` (the delivery worker);
//! [`events`] (the event hub and the `GET /v1/events` streams);
//! [`payloads`] (event payloads in the wire format).

pub mod cli;
pub mod client_addr;
pub mod config;
pub mod events;
pub mod openapi;
pub mod startup;
pub mod telemetry;

mod auth;
mod decode;
mod dto;
mod error;
mod headers;
mod idempotency;
mod limits;
mod metrics;
mod params;
pub mod payloads;
mod ratelimit;
mod request_id;
mod requests;
mod retention;
mod routes;
mod unread_body;
mod webhooks;
mod wire;
