use thiserror::Error;

/// Why a domain rule refused something. Each variant names the field it is
/// about (when there is one) so that adapters can point at the input at fault.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DomainError {
    /// A value does not satisfy its type's invariant.
    #[error("{field} {reason}")]
    Invalid { field: &'static str, reason: String },
    /// The actor may see the thing but may not do this to it.
    #[error("{0}")]
    Forbidden(&'static str),
}

impl DomainError {
    pub fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        Self::Invalid {
            field,
            reason: reason.into(),
        }
    }
}
