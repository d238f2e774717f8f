//! The queries both stores share: those written once as functions generic
//! over the backend ([`contacts`], [`health`], [`idempotency`],
//! [`outbox`], [`webhooks`]), and what the queries still compiled per backend
//! (`per-backend/queries/`, see the crate docs) share and that runs no
//! statement: the membership predicates and list builders, paging, the
//! events fan-out's bounds, and small helpers.

use crate::error::Error;
use confab_ports::StoreError;

pub mod contacts;
pub mod events_read;
pub mod health;
pub mod idempotency;
pub mod membership;
pub mod outbox;
pub mod paging;
pub mod webhooks;

pub type Result<T> = std::result::Result<T, Error>;

pub fn not_found() -> Error {
    Error::Store(StoreError::NotFound)
}

/// `ids` without duplicates and without `skip`, first occurrence kept.
pub fn distinct_except<T: PartialEq + Copy>(ids: &[T], skip: Option<T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(ids.len());
    for id in ids {
        if Some(*id) != skip && !out.contains(id) {
            out.push(*id);
        }
    }
    out
}
