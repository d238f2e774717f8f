//! Every query of the store: the shared query files
//! (`crates/store-sql/per-backend/queries/`, one per aggregate), compiled
//! here against PostgreSQL's connection, so that diesel checks each statement
//! against this database. Each function is synchronous and runs inside the
//! transaction its caller (the port implementation, `crate::ports`)
//! opened. Lists page by keyset over an index, never by OFFSET.

use confab_store_sql::SqlBackend;

/// The store these queries run for; the query files name it `super::Backend`
/// for what differs between the databases ([`SqlBackend`]).
pub(crate) type Backend = crate::PgStore;
/// The connection every query takes.
pub(crate) type Conn = <Backend as SqlBackend>::Conn;
/// diesel's backend.
pub(crate) type Db = diesel::pg::Pg;
pub(crate) use confab_store_sql::queries::Result;

#[path = "../../store-sql/per-backend/queries/contacts.rs"]
mod contacts;
#[path = "../../store-sql/per-backend/queries/conversations.rs"]
mod conversations;
#[path = "../../store-sql/per-backend/queries/events_read.rs"]
mod events_read;
#[path = "../../store-sql/per-backend/queries/groups.rs"]
mod groups;
#[path = "../../store-sql/per-backend/queries/health.rs"]
mod health;
#[path = "../../store-sql/per-backend/queries/idempotency.rs"]
mod idempotency;
#[path = "../../store-sql/per-backend/queries/membership.rs"]
mod membership;
#[path = "../../store-sql/per-backend/queries/message_send.rs"]
mod message_send;
#[path = "../../store-sql/per-backend/queries/message_updates.rs"]
mod message_updates;
#[path = "../../store-sql/per-backend/queries/messages.rs"]
mod messages;
#[path = "../../store-sql/per-backend/queries/outbox.rs"]
mod outbox;
#[path = "../../store-sql/per-backend/queries/tokens.rs"]
mod tokens;
#[path = "../../store-sql/per-backend/queries/webhooks.rs"]
mod webhooks;

pub(crate) use self::{
    contacts::*, conversations::*, events_read::*, groups::*, health::*, idempotency::*,
    message_send::*, message_updates::*, messages::*, tokens::*, webhooks::*,
};
