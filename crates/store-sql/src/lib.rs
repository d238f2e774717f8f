//! confab's SQL stores, written once: the diesel schema, the row structs, every
//! query and the `confab-ports` implementations, for PostgreSQL (feature
//! `postgres`, [`PgStore`]) and SQLite (feature `sqlite`, [`SqliteStore`]).
//! The crates `confab-store-postgres` and `confab-store-sqlite` re-export one
//! store each, so that a build needs only the database it uses.
//!
//! Depends on the domain and the ports only: never on `confab-service` or
//! `confab-server`, which name a store only in their startup code.
//!
//! # What a backend supplies
//!
//! The `SqlBackend` trait (`src/backend.rs`) is everything that differs
//! between the two databases, stated to the compiler: the diesel backend and
//! connection types (`Db`, `Conn`), how ids are stored (`Db: IdColumn`:
//! PostgreSQL `uuid`, SQLite lowercase hyphenated `TEXT`), row locks
//! (`lock_message`, `lock_group`: `FOR UPDATE` on PostgreSQL, nothing on
//! SQLite, whose write transactions already hold the database's write lock),
//! which errors mean "unreachable" (`is_unavailable`), the pool and
//! transactions (`checkout`, `connection_lost`, `write_tx`), an optional
//! plan of its own for the all-conversations feed (`feed_page`), and how
//! a message's reactions and attachments become JSON columns of its row
//! (`json_rows`). Reads run without a transaction: a page is one
//! statement, its relations included, and so is one message. Each backend module
//! implements it on its store type; a missing or mistyped item is a compile
//! error there. It is crate-private: a third database would be a module of
//! this crate, where the queries are instantiated.
//!
//! # Why the queries are instantiated per backend
//!
//! Everything that does not run a statement is ordinary code, written once:
//! the schema and row structs (every id column has one SQL type, `IdSql`,
//! which each backend encodes), the error mapping, paging, and the door to
//! the database (generic over `S: SqlBackend`). The queries are not generic:
//! diesel proves each statement against a concrete backend, through the
//! dialect's own syntax types (`SelectStatement<..>: QueryFragment<Db,
//! Db::SelectStatementSyntax>`, and likewise for `ON CONFLICT`, batch
//! inserts, `IN` and boxed queries). A function generic over the backend
//! needs such a where-clause, spelling out the statement's type, for each
//! statement it runs: some fifty here, each to be rewritten with its query.
//! So each file of `src/queries/` holds its functions in a `macro_rules!`,
//! and each backend module expands them once against its own
//! `<Store as SqlBackend>::Conn` and `::Db` (`queries::instantiate!`). The
//! code is written, reviewed and changed once; each expansion is type-checked
//! against its database; the contract suite (`tests/tests/store_contract/`)
//! checks that the two behave alike.
//!
//! Rejected: two copies of the code (they drift); one source file compiled
//! into two crates by `#[path]` (what a backend must supply was written only
//! in a README); diesel's `MultiConnection` (one connection enum for both
//! databases), which lacks `ON CONFLICT` upserts, row locks and a uuid type.

// Without a backend feature only the shared code is built, for nothing.
#![cfg_attr(not(any(feature = "postgres", feature = "sqlite")), allow(unused))]

mod backend;
mod door;
mod error;
mod id;
mod ports;
mod ports_events;
mod ports_webhooks;
mod queries;
mod raw;
mod rows;
mod schema;
mod wakeups;

#[cfg(feature = "postgres")]
mod listen;
#[cfg(feature = "postgres")]
mod pg_async;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

use backend::SqlBackend;

pub use door::within_db_budget;
#[cfg(feature = "postgres")]
pub use listen::PgWakeups;
#[cfg(feature = "postgres")]
pub use postgres::PgStore;
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteStore, Synchronous};
pub use wakeups::LocalWakeups;
