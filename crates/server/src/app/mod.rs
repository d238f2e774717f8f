//! The application: configuration from the environment, the `confab`
//! command line, startup wiring (the only place that names a store), logs,
//! metrics, and the background upkeep (retention).

pub mod cli;
pub mod config;
pub mod connections;
pub(crate) mod jobs;
pub mod opening;
pub(crate) mod retention;
pub mod startup;
pub mod telemetry;
