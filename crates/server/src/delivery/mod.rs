//! Delivery: what happens after a commit. The event hub and the
//! `GET /v1/events` streams it feeds, and the webhook sender. Neither
//! decides anything: the events table is the truth, and both only carry
//! what was committed.

pub mod events;
pub(crate) mod webhooks;
