//! confab's embedded default store: the storage ports of `confab-ports`
//! implemented on a SQLite file through diesel, with its embedded
//! migrations (`migrations/sqlite`).
//!
//! What is SQLite's own lives here: the store ([`SqliteStore`]: its pool,
//! pragmas, migrations and [`confab_store_sql::SqlBackend`]: `TEXT` ids, the
//! feed's rowid plan), its one writer at a time (`turn`), the group commit
//! that runs queued writes in shared transactions (`group_commit`), the
//! WAL checkpoints (`checkpoint`), and search's FTS5 index, fed from a
//! backlog off the writers' path (`search_index`, `search`). The queries and the port implementations
//! are the ones both SQL stores share (`confab-store-sql`), compiled here
//! against SQLite (`queries`, `ports`).
//!
//! Depends on the domain and the ports (and `confab-store-sql`) only:
//! never on `confab-service` or `confab-server`, which name this crate only
//! in their startup code.

mod checkpoint;
mod group_commit;
/// The port implementations both SQL stores share, compiled for [`Store`].
#[path = "../../store-sql/per-backend/ports/mod.rs"]
mod ports;
/// The queries both SQL stores share, compiled against this database.
#[path = "../../store-sql/per-backend/queries/mod.rs"]
mod queries;
mod search;
mod search_index;
mod store;
mod turn;

pub use confab_store_sql::{LocalTyping, LocalWakeups};
pub use store::{SqliteStore, Synchronous};

/// The store the shared port implementations are compiled for.
type Store = SqliteStore;
