//! The stores' internal error, before it becomes a [`StoreError`]. Diesel's
//! transaction functions need an error type built `From` diesel's errors.

use confab_domain::DomainError;
use confab_ports::StoreError;

use crate::SqlBackend;

/// Why a store operation failed.
#[derive(Debug)]
pub enum Error {
    Db(diesel::result::Error),
    /// No pooled connection could be had (database down, pool exhausted).
    Pool(diesel::r2d2::PoolError),
    Store(StoreError),
    /// The caller stopped waiting (see [`crate::door::Abandoned`]): nothing
    /// was done, or the transaction was rolled back.
    Abandoned,
}

impl From<diesel::result::Error> for Error {
    fn from(e: diesel::result::Error) -> Self {
        Self::Db(e)
    }
}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

impl From<DomainError> for Error {
    fn from(e: DomainError) -> Self {
        Self::Store(StoreError::Rule(e))
    }
}

impl Error {
    /// Whether a statement failed because its connection is gone (as
    /// opposed to a pool that could not connect, or a refused statement).
    pub fn is_connection_lost<S: SqlBackend>(&self) -> bool {
        use diesel::result::{DatabaseErrorKind as Kind, Error as E};
        match self {
            Self::Db(E::DatabaseError(Kind::ClosedConnection | Kind::UnableToSendCommand, _)) => {
                true
            }
            Self::Db(e) => S::is_unavailable(e),
            Self::Pool(_) | Self::Store(_) | Self::Abandoned => false,
        }
    }

    /// The port's error, keeping diesel's or the pool's error as its source.
    pub fn into_store<S: SqlBackend>(self) -> StoreError {
        use diesel::result::{DatabaseErrorKind as Kind, Error as E};
        match self {
            Self::Store(e) => e,
            Self::Pool(e) => StoreError::Unavailable(Box::new(e)),
            Self::Abandoned => StoreError::Unavailable("the caller stopped waiting".into()),
            Self::Db(E::DatabaseError(Kind::UniqueViolation, info)) => {
                StoreError::Conflict(info.message().to_owned())
            }
            // Every reference the ports take is to something that must exist
            // (a conversation, a contact, a group): a foreign key refusing the
            // write means it is gone, typically deleted concurrently.
            Self::Db(E::DatabaseError(Kind::ForeignKeyViolation, _)) => StoreError::NotFound,
            Self::Db(
                e @ E::DatabaseError(Kind::ClosedConnection | Kind::UnableToSendCommand, _),
            ) => StoreError::Unavailable(Box::new(e)),
            Self::Db(E::NotFound) => StoreError::NotFound,
            Self::Db(e) if S::is_unavailable(&e) => StoreError::Unavailable(Box::new(e)),
            Self::Db(e) => StoreError::Other(Box::new(e)),
        }
    }
}

/// A stored value that no longer passes its domain invariant.
#[derive(Debug, thiserror::Error)]
#[error("stored {what} is invalid")]
pub struct Corrupt {
    what: &'static str,
    #[source]
    source: DomainError,
}

/// A stored value that fails its domain invariant.
pub fn corrupt(what: &'static str, e: DomainError) -> Error {
    Error::Store(StoreError::Other(Box::new(Corrupt { what, source: e })))
}

/// A stored fact that breaks an invariant no single value carries (e.g. a
/// message whose sender is missing).
pub fn inconsistent(what: String) -> Error {
    Error::Store(StoreError::Other(what.into()))
}

/// Stored values, each valid, that together break a rule of the entity
/// they make (a message with eleven attachments): an inconsistency like
/// [`inconsistent`]'s, with the rule as its source.
#[derive(Debug, thiserror::Error)]
#[error("stored {what} breaks a rule of its entity")]
pub struct Broken {
    what: String,
    #[source]
    source: DomainError,
}

/// Stored values that the entity's constructor refuses: `what` names the
/// entity ("message <id>"), `e` the rule.
pub fn broken(what: String, e: DomainError) -> Error {
    Error::Store(StoreError::Other(Box::new(Broken { what, source: e })))
}
