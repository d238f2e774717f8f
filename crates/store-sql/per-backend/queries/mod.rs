//! The queries of a store not yet generic, one file per aggregate, compiled
//! by each store crate as its `queries` module (`#[path]`), against its own
//! connection: diesel checks each statement against that database. The
//! generic ones (the health check, contacts, idempotency keys, the events
//! outbox, webhooks) are functions of `confab_store_sql::queries`, and the
//! modules here move there the same way (see that crate's docs); the small
//! `idempotency` and `outbox` modules below pass this store to the generic
//! functions the files here still call. Each function is synchronous and
//! runs inside the transaction its caller (the port implementation,
//! `crate::ports`) opened. Lists page by keyset over an index, never by
//! OFFSET.

use confab_store_sql::SqlBackend;

/// The store these queries run for (the including crate's `Store`); the
/// query files name it `super::Backend` for what differs between the
/// databases ([`SqlBackend`]).
pub(crate) type Backend = crate::Store;
/// The connection every query takes.
pub(crate) type Conn = <Backend as SqlBackend>::Conn;
/// diesel's backend.
pub(crate) type Db = <Backend as SqlBackend>::Db;
pub(crate) use confab_store_sql::queries::Result;

mod attachments;
mod conversation_members;
mod conversations;
mod depth;
mod erase;
mod events_read;
mod export;
mod groups;
mod jobs;
mod membership;
mod message_send;
mod message_updates;
mod messages;
mod moderation;
mod search;
mod tokens;

pub(crate) use self::{
    attachments::*, conversation_members::*, conversations::*, depth::*, erase::*, events_read::*,
    export::*, groups::*, jobs::*, message_send::*, message_updates::*, messages::*, moderation::*,
    search::*, tokens::*,
};

/// The idempotency queries are generic
/// (`confab_store_sql::queries::idempotency`); the write queries compiled
/// here complete their key through this, for this store.
mod idempotency {
    use confab_ports::Completion;

    use super::{Backend, Conn, Result};

    /// `confab_store_sql::queries::idempotency::complete` for this store.
    pub(crate) fn complete<T: 'static>(
        conn: &mut Conn,
        completion: Option<Completion<T>>,
        written: &T,
    ) -> Result<()> {
        confab_store_sql::queries::idempotency::complete::<Backend, T>(conn, completion, written)
    }
}

/// The events outbox is generic (`confab_store_sql::queries::outbox`); the
/// write queries compiled here write their events through this, for this
/// store.
mod outbox {
    use confab_domain::Event;
    use confab_ports::{Outbox, PayloadRenderer};
    pub(super) use confab_store_sql::queries::outbox::{
        expand_marked_read, Deleted, Written, SCRUBBED,
    };

    use super::{Backend, Conn, Result};

    /// `confab_store_sql::queries::outbox::write_events` for this store.
    pub(super) fn write_events(
        conn: &mut Conn,
        events: &[Event],
        render: &dyn PayloadRenderer,
        written: &Written<'_>,
    ) -> Result<()> {
        confab_store_sql::queries::outbox::write_events::<Backend>(conn, events, render, written)
    }

    /// `confab_store_sql::queries::outbox::write` for this store.
    pub(super) fn write(conn: &mut Conn, outbox: &Outbox, written: &Written<'_>) -> Result<()> {
        confab_store_sql::queries::outbox::write::<Backend>(conn, outbox, written)
    }

    /// `confab_store_sql::queries::outbox::scrub` for this store.
    pub(super) fn scrub(conn: &mut Conn, deleted: Deleted) -> Result<()> {
        confab_store_sql::queries::outbox::scrub::<Backend>(conn, deleted)
    }
}
