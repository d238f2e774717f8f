//! confab's HTTP server and command line (binary `confab`).
//!
//! It adapts HTTP to the use cases of `confab-service` and nothing more:
//! rules live in the domain and the service. Only [`startup`] names a store
//! adapter; everything else sees the service alone. This is the outermost
//! layer: no other confab crate may depend on it (the black-box tests
//! excepted), and it never talks to a database except through the service.
//!
//! Three rooms, each answering one question:
//! - [`http`]: what is said on the wire. Routes (thin handlers), one request
//!   type per operation and its decoding, the one `ApiError`, wire objects
//!   and event payloads, authentication, rate limits, idempotency keys as
//!   HTTP sees them, the OpenAPI document, hostile-client defences.
//! - [`delivery`]: what happens after a commit. The event hub and its
//!   streams, the webhook sender.
//! - [`app`]: how the process runs. Configuration, the CLI, startup wiring,
//!   logs, metrics, background upkeep.
//!
//! Arrows point from `app` to the other two and from `http` to `delivery`
//! (the events route opens the hub's streams), never back; all three count
//! into `metrics`, which sits below them.

pub mod app;
pub mod delivery;
pub mod http;
/// What the process counts, for `GET /metrics`: below the three rooms,
/// each of which counts something (requests, events, the pool).
mod metrics;

// The paths other crates and the binary use.
pub use app::{cli, config, startup, telemetry};
pub use delivery::events;
pub use http::{client_addr, openapi, payloads};
