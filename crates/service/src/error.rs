use confab_domain::{DomainError, Field, Rule};
use confab_ports::StoreError;

pub use confab_ports::BoxError;

/// Why a use case failed, in the domain's terms. Adapters decide how each
/// variant is shown; the causes of `Unavailable` and `Internal` are for the
/// operator, never for the caller.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// An input breaks a rule of the domain or of the use case; the request
    /// changed nothing.
    #[error("{field} {rule}")]
    Invalid { field: Field, rule: Rule },
    /// The caller did not prove who they are.
    #[error("unauthorized")]
    Unauthorized,
    /// The caller's credential (a token, an event ticket) was good but
    /// has expired: a new one will do.
    #[error("the credential has expired")]
    Expired,
    /// The caller may see the thing but may not do this to it.
    #[error("{0}")]
    Forbidden(&'static str),
    /// A block between the caller and another contact refused it;
    /// `field` names the input that brought the other in, if one did.
    #[error("blocked")]
    Blocked {
        field: Option<Field>,
        by_caller: bool,
    },
    /// Nothing of that id is visible to the caller (whether or not it
    /// exists). `of` is the input that held the id; `None` when it is the
    /// thing the operation acts on.
    #[error("not found")]
    NotFound { of: Option<Field> },
    /// A uniqueness rule refused it.
    #[error("{0}")]
    Conflict(String),
    /// Another run of this request holds its idempotency key: it is still
    /// in flight.
    #[error("a request with this idempotency key is still in flight")]
    IdempotencyInFlight,
    /// The idempotency key was used for a different request.
    #[error("this idempotency key was used for a different request")]
    IdempotencyKeyReused,
    /// A new idempotency key, refused: the caller already claimed `max`
    /// new keys this UTC day, which ends in `retry_after_secs`. The
    /// request did not run; without a key it would.
    #[error("at most {max} new idempotency keys a day")]
    IdempotencyQuota { max: u32, retry_after_secs: u64 },
    /// The caller already runs `max` searches, as many as a contact may at
    /// once: this one did not run. One may start when another ends.
    #[error("at most {max} searches at once")]
    TooManySearches { max: u32 },
    /// A new report, refused: the caller already filed `max` new reports
    /// this UTC hour, which ends in `retry_after_secs`. Nothing was
    /// written.
    #[error("at most {max} new reports an hour")]
    ReportQuota { max: u32, retry_after_secs: u64 },
    /// An upload passed the largest size allowed, `max` bytes; nothing of
    /// it was kept.
    #[error("the file is larger than {max} bytes")]
    TooLarge { max: u64 },
    /// An upload would take the caller's stored files past their quota
    /// of `limit` bytes; they take `used` bytes now. Nothing of it was
    /// kept.
    #[error("stored files would pass {limit} bytes (now {used})")]
    UploadQuota { used: u64, limit: u64 },
    /// The caller already has `max` uploads under way.
    #[error("at most {max} uploads at once")]
    TooManyUploads { max: usize },
    /// The file storage's disk has `free` bytes, at or below the `floor`
    /// kept free; no upload is taken until more is freed.
    #[error("the storage's disk has {free} bytes free, its floor is {floor}")]
    StorageFull { free: u64, floor: u64 },
    /// The store cannot be reached; trying again later may succeed.
    #[error("the store is unavailable")]
    Unavailable(#[source] StoreError),
    /// Anything else: a bug, or a failure nobody can act on but the operator.
    #[error("{what}")]
    Internal {
        what: &'static str,
        #[source]
        source: BoxError,
    },
}

impl ServiceError {
    pub const fn not_found() -> Self {
        Self::NotFound { of: None }
    }
    pub const fn not_found_of(field: Field) -> Self {
        Self::NotFound { of: Some(field) }
    }
    pub const fn invalid(field: Field, rule: Rule) -> Self {
        Self::Invalid { field, rule }
    }
}

impl From<DomainError> for ServiceError {
    fn from(e: DomainError) -> Self {
        match e {
            DomainError::Invalid { field, rule } => Self::Invalid { field, rule },
            DomainError::Forbidden(why) => Self::Forbidden(why),
            DomainError::Blocked { field, by_actor } => Self::Blocked {
                field,
                by_caller: by_actor,
            },
        }
    }
}

impl From<StoreError> for ServiceError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound => Self::not_found(),
            StoreError::Conflict(what) => Self::Conflict(what),
            StoreError::Rule(rule) => rule.into(),
            // A retry took the key over while this run was slow: that run is
            // the one in flight now.
            StoreError::ClaimLost => Self::IdempotencyInFlight,
            e @ StoreError::Unavailable(_) => Self::Unavailable(e),
            // The service turns CursorNotFound into an error naming the
            // cursor before it gets here; reaching this is a bug.
            e @ StoreError::CursorNotFound => Self::Internal {
                what: "a store error was left unmapped",
                source: Box::new(e),
            },
            e @ StoreError::Other(_) => Self::Internal {
                what: "the store failed",
                source: Box::new(e),
            },
        }
    }
}

/// Maps a store error of a paged list, naming the cursor that was not found.
pub(crate) fn page_error<Id>(page: &confab_domain::Page<Id>, e: StoreError) -> ServiceError {
    match (e, page.cursor.as_ref()) {
        (StoreError::CursorNotFound, Some(c)) => {
            ServiceError::invalid(c.field(), Rule::CursorNotInList)
        }
        (e, _) => e.into(),
    }
}
