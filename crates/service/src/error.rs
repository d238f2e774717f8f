use confab_domain::DomainError;
use confab_ports::StoreError;

/// Why a use case failed. The HTTP layer maps each variant to one status.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// An input breaks a rule (400 `parameter_invalid`).
    #[error("{param} {reason}")]
    Invalid { param: &'static str, reason: String },
    /// The caller is not authenticated (401).
    #[error("unauthorized")]
    Unauthorized,
    /// The caller may see the thing but not do this (403).
    #[error("{0}")]
    Forbidden(&'static str),
    /// Nothing of that id visible to the caller (404); `param` names the
    /// request parameter that held the id, when it was not the path.
    #[error("not found")]
    NotFound { param: Option<&'static str> },
    /// A uniqueness rule refused it (409).
    #[error("{0}")]
    Conflict(String),
    /// The store cannot be reached (503).
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// Anything else (500). The text goes to the log only.
    #[error("internal: {0}")]
    Internal(String),
}

impl ServiceError {
    pub const fn not_found() -> Self {
        Self::NotFound { param: None }
    }
    pub const fn not_found_param(param: &'static str) -> Self {
        Self::NotFound { param: Some(param) }
    }
}

impl From<DomainError> for ServiceError {
    fn from(e: DomainError) -> Self {
        match e {
            DomainError::Invalid { field, reason } => Self::Invalid {
                param: field,
                reason,
            },
            DomainError::Forbidden(why) => Self::Forbidden(why),
        }
    }
}

impl From<StoreError> for ServiceError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound => Self::not_found(),
            StoreError::Conflict(what) => Self::Conflict(what),
            StoreError::Rule(rule) => rule.into(),
            StoreError::Unavailable(why) => Self::Unavailable(why.to_string()),
            // The service turns CursorNotFound into an error naming the
            // cursor parameter before it gets here; reaching this is a bug.
            StoreError::CursorNotFound => Self::Internal("unmapped cursor error".into()),
            StoreError::Other(why) => Self::Internal(why.to_string()),
        }
    }
}

/// Maps a store error of a paged list, naming the cursor that was not found.
pub(crate) fn page_error<Id>(page: &confab_domain::Page<Id>, e: StoreError) -> ServiceError {
    match (e, page.cursor.as_ref()) {
        (StoreError::CursorNotFound, Some(c)) => ServiceError::Invalid {
            param: match c {
                confab_domain::Cursor::After(_) => "starting_after",
                confab_domain::Cursor::Before(_) => "ending_before",
            },
            reason: "must be the id of an item in the list being paged".into(),
        },
        (e, _) => e.into(),
    }
}
