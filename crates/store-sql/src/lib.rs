//! What confab's two SQL stores share: the diesel schema, the row structs
//! and their conversions, ids in the database, the error mapping, paging,
//! raw statements, the door to the database (deadlines, the gate, the
//! request's budget) and the [`SqlBackend`] trait that says what each
//! database supplies. The stores themselves are `confab-store-postgres` and
//! `confab-store-sqlite`.
//!
//! Depends on the domain and the ports only: never on `confab-service` or
//! `confab-server`, which name a store only in their startup code.
//!
//! # The queries, written once and compiled per backend
//!
//! The queries (`per-backend/queries/`) and the port implementations
//! (`per-backend/ports/`) are written once, in diesel's DSL, and compiled
//! by each store crate as modules of its own (`#[path]`): there `Conn`,
//! `Db` and `Backend` are that crate's connection, diesel backend and store
//! type, so every statement is type-checked against its database and every
//! name in those files is an ordinary path a reader (or rust-analyzer) can
//! follow. They are not generic functions because diesel proves each
//! statement against a concrete backend through the dialect's own syntax
//! types: a function generic over the backend needs a where-clause spelling
//! out the statement's type for each statement it runs (some fifty). The
//! contract suite (`tests/tests/store_contract/`) checks that the two
//! stores behave alike.
//!
//! What a backend must supply is [`SqlBackend`], implemented by each store
//! type; a missing or mistyped item is a compile error in that crate. The
//! features `postgres` and `sqlite` compile the id column's encoding
//! ([`id::IdColumn`]) and the webhook statements' dialect for that database.
//!
//! Rejected: two copies of the code (they drift); `macro_rules!` bodies
//! expanded per backend (their names resolved only where expanded, and
//! tools lost the trail); diesel's `MultiConnection` (one connection enum for
//! both databases), which lacks `ON CONFLICT` upserts, row locks and a uuid
//! type.

// Without a backend feature only the shared code is built, for nothing.
#![cfg_attr(not(any(feature = "postgres", feature = "sqlite")), allow(unused))]

mod backend;
pub mod door;
pub mod error;
pub mod id;
pub mod queries;
pub mod raw;
pub mod rows;
pub mod schema;
pub mod search;
pub mod search_share;
mod typing;
mod wakeups;

pub use backend::{Pooled, SqlBackend};
pub use typing::{LocalTyping, TYPING_QUEUE};
pub use wakeups::LocalWakeups;
