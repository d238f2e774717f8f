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
//! # The queries: generic functions, and what is still compiled per backend
//!
//! A query is an ordinary function of this crate, generic over the
//! backend: `pub fn f<B: SqlBackend>(conn: &mut B::Conn, ..)`, type-checked
//! here (`cargo check -p confab-store-sql --features postgres,sqlite`) and
//! called by both stores' port implementations as `f::<Store>`. diesel
//! proves a statement against a concrete backend (its dialect, how each
//! value is bound and read), so a generic function cannot run a diesel
//! statement by itself: each statement is named (`#[diesel::dsl::auto_type]`)
//! and listed once as a capability of the connection ([`run::Run`],
//! [`run::Exec`]) in its module's capability trait (e.g.
//! [`queries::webhooks::statements::WebhookStatements`]), which
//! [`SqlBackend::Conn`] requires; the proof is then made where each store
//! names its connection, and a statement a database cannot run is a
//! compile error there. Raw statements ([`raw`]) need no listing to be
//! executed, only their row types do. A statement whose shape is chosen at
//! run time (a boxed query in the per-backend code) is written out as each
//! of its shapes (a keyset page's three: from the newest, after a cursor,
//! before it), each a capability: the same text each rendered. diesel's
//! upsert statements cannot be named (their types are private) and are
//! written out as raw SQL with the text diesel renders, checked by a test
//! against diesel's own.
//!
//! Generic so far: [`queries::contacts`], [`queries::health`],
//! [`queries::idempotency`], [`queries::outbox`], [`queries::webhooks`].
//! The other queries (`per-backend/queries/`) and the port implementations
//! (`per-backend/ports/`) are still text that each store crate compiles as
//! modules of its own (`#[path]`), against its connection type, calling the
//! generic outbox and idempotency functions through small modules that pass
//! their store; they move here the same way, a module at a time, and the
//! `#[path]` modules go when they are empty. The contract suite
//! (`tests/tests/store_contract/`) checks that the two stores behave alike.

//! What a backend must supply is [`SqlBackend`], implemented by each store
//! type; a missing or mistyped item is a compile error in that crate. The
//! features `postgres` and `sqlite` compile the id column's encoding
//! ([`id::IdColumn`]) and the webhook statements' dialect for that database.
//!
//! Rejected: two copies of the code (they drift); `macro_rules!` bodies
//! expanded per backend (their names resolved only where expanded, and
//! tools lost the trail); diesel's `MultiConnection` (one connection enum for
//! both databases), which lacks `ON CONFLICT` upserts, row locks and a uuid
//! type; a where-clause on each generic function spelling out each of its
//! statements' types (the capability traits say it once, next to the
//! statements).

// Without a backend feature only the shared code is built, for nothing.
#![cfg_attr(not(any(feature = "postgres", feature = "sqlite")), allow(unused))]

mod backend;
pub mod door;
pub mod error;
pub mod id;
pub mod queries;
pub mod raw;
pub mod rows;
pub mod run;
pub mod schema;
pub mod search;
pub mod search_share;
mod typing;
mod wakeups;

pub use backend::{Pooled, SqlBackend};
pub use typing::{LocalTyping, TYPING_QUEUE};
pub use wakeups::LocalWakeups;
