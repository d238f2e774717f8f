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

pub(crate) mod contacts;
pub(crate) mod conversations;
pub(crate) mod events_read;
pub(crate) mod groups;
pub(crate) mod health;
pub(crate) mod idempotency;
pub(crate) mod membership;
pub(crate) mod message_updates;
pub(crate) mod messages;
pub(crate) mod outbox;
pub(crate) mod paging;
pub(crate) mod tokens;

pub(crate) type Result<T> = std::result::Result<T, Error>;

pub(crate) fn not_found() -> Error {
    Error::Store(StoreError::NotFound)
}

/// `ids` without duplicates and without `skip`, first occurrence kept.
pub(crate) fn distinct_except<T: PartialEq + Copy>(ids: &[T], skip: Option<T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(ids.len());
    for id in ids {
        if Some(*id) != skip && !out.contains(id) {
            out.push(*id);
        }
    }
    out
}

/// Expands every query for the store type `$store` (a [`crate::SqlBackend`]),
/// one submodule per file of this module; the port implementations call them
/// through the re-exports at its end.
macro_rules! instantiate {
    ($store:ty) => {
        /// The backend these queries are compiled for; the query modules see
        /// it only through these names.
        type Backend = $store;
        type Conn = <Backend as $crate::SqlBackend>::Conn;
        type Db = <Backend as $crate::SqlBackend>::Db;
        use $crate::queries::Result;

        mod membership {
            $crate::queries::membership::expand!();
        }
        mod health {
            $crate::queries::health::expand!();
        }
        mod idempotency {
            $crate::queries::idempotency::expand!();
        }
        mod outbox {
            $crate::queries::outbox::expand!();
        }
        mod contacts {
            $crate::queries::contacts::expand!();
        }
        mod tokens {
            $crate::queries::tokens::expand!();
        }
        mod conversations {
            $crate::queries::conversations::expand!();
        }
        mod messages {
            $crate::queries::messages::expand!();
        }
        mod message_updates {
            $crate::queries::message_updates::expand!();
        }
        mod groups {
            $crate::queries::groups::expand!();
        }
        mod events_read {
            $crate::queries::events_read::expand!();
        }

        pub(crate) use self::{
            contacts::*, conversations::*, events_read::*, groups::*, health::*, idempotency::*,
            message_updates::*, messages::*, tokens::*,
        };
    };
}
pub(crate) use instantiate;
