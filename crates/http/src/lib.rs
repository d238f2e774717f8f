//! confab's HTTP API: what confab says and hears on the wire. The routes (thin
//! handlers), one request type per operation and the one way their
//! attributes are decoded, the one error type and its JSON body, the wire
//! objects (and the event payloads, written in the same format),
//! authentication and rate limits, idempotency keys as HTTP sees them, the
//! OpenAPI document, and what keeps hostile clients from taking the server
//! (the client address behind proxies, refused bodies left unread).
//!
//! It adapts HTTP to the use cases of `confab-service` and nothing more:
//! rules live in the domain and the service. It never names a store
//! adapter (the server's startup chooses one) and never depends on the
//! server crate that assembles it; below it are `confab-delivery` (the
//! events route opens the hub's streams) and `confab-metrics`.

pub mod auth;
pub mod client_addr;
pub mod content;
pub mod decode;
pub mod dto;
pub mod error;
pub mod export;
pub mod headers;
pub mod idempotency;
pub mod limits;
pub mod links;
pub mod openapi;
pub mod params;
pub mod payloads;
pub mod ratelimit;
pub mod request_id;
pub mod requests;
pub mod routes;
pub mod service;
pub mod unread_body;
pub mod wire;
