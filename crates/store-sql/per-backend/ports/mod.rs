//! The `confab-ports` implementations of a store, compiled by each store
//! crate as its `ports` module (`#[path]`) for its `crate::Store`. Each
//! method runs one query function (`crate::queries`) through the door
//! (`confab_store_sql::door`) in the right kind of transaction.

mod events;
mod jobs;
mod moderation;
mod stores;
mod webhooks;
