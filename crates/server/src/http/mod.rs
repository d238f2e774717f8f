//! HTTP: what confab says and hears on the wire. The routes (thin
//! handlers), one request type per operation and the one way their
//! attributes are decoded, the one error type and its JSON body, the wire
//! objects (and the event payloads, written in the same format),
//! authentication and rate limits, idempotency keys as HTTP sees them, the
//! OpenAPI document, and what keeps hostile clients from taking the server
//! (the client address behind proxies, refused bodies left unread).

pub(crate) mod auth;
pub mod client_addr;
pub(crate) mod content;
pub(crate) mod decode;
pub(crate) mod dto;
pub(crate) mod error;
pub(crate) mod export;
pub(crate) mod headers;
pub(crate) mod idempotency;
pub(crate) mod limits;
pub mod links;
pub mod openapi;
pub(crate) mod params;
pub mod payloads;
pub(crate) mod ratelimit;
pub(crate) mod request_id;
pub(crate) mod requests;
pub(crate) mod routes;
pub(crate) mod service;
pub(crate) mod unread_body;
pub(crate) mod wire;
