//! Every query of the SQL stores, in diesel's DSL, one file per aggregate.
//!
//! Each file holds its functions in a `macro_rules! expand`, which
//! [`instantiate`] expands in a backend's `queries` module against that
//! backend's `Conn` and `Db` (why not generics: see the crate docs). What runs
//! no statement (paging, the helpers below) is ordinary code.
//!
//! Each function is synchronous and runs inside the transaction its caller
//! (the port implementation) opened. Lists page by keyset over an index,
//! never by OFFSET.

use crate::error::Error;
use confab_ports::StoreError;

pub mod events_read;
pub mod membership;
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
