//! The `confab-ports` implementations of the store: the shared files
//! (`crates/store-sql/per-backend/ports/`), compiled here for
//! [`crate::SqliteStore`]. Each method runs one query function
//! (`crate::queries`) through the door (`confab_store_sql::door`) in the
//! right kind of transaction.

#[path = "../../store-sql/per-backend/ports/events.rs"]
mod events;
#[path = "../../store-sql/per-backend/ports/stores.rs"]
mod stores;
#[path = "../../store-sql/per-backend/ports/webhooks.rs"]
mod webhooks;
