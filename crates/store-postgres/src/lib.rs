//! confab's PostgreSQL store: the storage ports of `confab-ports` implemented
//! with diesel over an r2d2 connection pool, with its embedded migrations
//! (`migrations/postgres`).
//!
//! The code lives in `confab-store-sql` (feature `postgres`), written once
//! for both SQL stores; this crate is the PostgreSQL build of it, so that a
//! program that needs only PostgreSQL compiles and links nothing of SQLite.
//!
//! Depends on the domain and the ports only (through `confab-store-sql`):
//! never on `confab-service` or `confab-server`, which name this crate only
//! in their startup code.

pub use confab_store_sql::{within_db_budget, PgStore, PgWakeups};
