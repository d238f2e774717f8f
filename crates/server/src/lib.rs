//! confab's server process and command line (binary `confab`): the
//! configuration, the CLI, startup wiring (the one place that names a store
//! adapter), logs, the connection gate, background upkeep.
//!
//! What the process serves lives in crates of their own, each found by its
//! name: `confab-http` (what is said on the wire), `confab-delivery` (what
//! happens after a commit: the event hub and its streams, the webhook
//! sender) and `confab-metrics` (what the process counts). This crate wires
//! them to the service; it is the outermost layer: no other confab crate
//! depends on it (the black-box tests excepted), and it never talks to a
//! database except through the service.

pub mod app;

// The paths other crates and the binary use.
pub use app::{cli, config, startup, telemetry};
pub use confab_delivery::events;
pub use confab_http::{client_addr, openapi, payloads};
