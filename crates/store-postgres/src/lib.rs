//! confab's PostgreSQL adapter: the storage ports of `confab-ports`
//! implemented with diesel, with its embedded migrations
//! (`migrations/postgres`).
//!
//! What is PostgreSQL's own lives here: the store and its connection
//! handling ([`PgStore`]: the r2d2 pool, its checkout, client timeouts,
//! migrations, and [`confab_store_sql::SqlBackend`]: native `uuid` ids,
//! `FOR UPDATE` row locks, the feed's `LATERAL` plan), the asynchronous
//! connections its hot calls run on (`pg_async`), and `LISTEN`/`NOTIFY`
//! for event wake-ups across processes ([`PgWakeups`]). The queries and
//! the port implementations are the ones both SQL stores share
//! (`confab-store-sql`), compiled here against PostgreSQL (`queries`,
//! `ports`).
//!
//! Depends on the domain and the ports (and `confab-store-sql`) only:
//! never on `confab-service` or `confab-server`, which name this crate only
//! in their startup code.

mod feed;
mod listen;
mod pg_async;
/// The port implementations both SQL stores share, compiled for [`Store`].
#[path = "../../store-sql/per-backend/ports/mod.rs"]
mod ports;
/// The queries both SQL stores share, compiled against this database.
#[path = "../../store-sql/per-backend/queries/mod.rs"]
mod queries;
mod search;
mod store;

pub use listen::PgWakeups;
pub use store::PgStore;

/// The store the shared port implementations are compiled for.
type Store = PgStore;
