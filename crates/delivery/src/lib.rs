//! confab's delivery: what happens after a commit. The event hub and the
//! `GET /v1/events` streams it feeds, and the webhook sender. Neither
//! decides anything: the events table is the truth, and both only carry
//! what was committed.
//!
//! It reads through the service alone (no store adapter) and knows nothing
//! of HTTP routes: the HTTP API (`confab-http`) opens its streams, the
//! server starts the hub and the sender.

pub mod events;
pub mod webhooks;
