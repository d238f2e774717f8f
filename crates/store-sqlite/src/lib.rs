//! confab's embedded default store: the storage ports of `confab-ports`
//! implemented on a SQLite file through diesel and an r2d2 pool, with its
//! embedded migrations (`migrations/sqlite`).
//!
//! The code lives in `confab-store-sql` (feature `sqlite`), written once for
//! both SQL stores; this crate is the SQLite build of it, so that a program
//! that needs only SQLite compiles and links nothing of PostgreSQL.
//!
//! Depends on the domain and the ports only (through `confab-store-sql`):
//! never on `confab-service` or `confab-server`, which name this crate only
//! in their startup code.

pub use confab_store_sql::{within_db_budget, LocalWakeups, SqliteStore, Synchronous};
