use std::fmt;
use std::str::FromStr;

use thiserror::Error;
use uuid::Uuid;

/// Why a string is not an id. Every id has exactly one spelling, the
/// lowercase hyphenated form of its UUID (36 characters), so that two
/// spellings can never name the same thing; anything else is refused.
///
/// ```
/// use confab_domain::{MessageId, ParseIdError};
///
/// let err: ParseIdError = "0190A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B"
///     .parse::<MessageId>()
///     .unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "invalid id: expected a UUID in lowercase hyphenated form (36 characters)"
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("invalid id: expected a UUID in lowercase hyphenated form (36 characters)")]
pub struct ParseIdError {
    // Private: the error may later say more without breaking callers.
    _private: (),
}

/// The one check of an id's spelling, shared by every id type.
pub(crate) fn parse_canonical(s: &str) -> Result<Uuid, ParseIdError> {
    let refused = ParseIdError { _private: () };
    if s.len() != 36 || s.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(refused);
    }
    Uuid::parse_str(s).map_err(|_| refused)
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Uuid);

        impl $name {
            /// Wraps a UUID: the caller (an id generator, a store reading
            /// its rows) vouches that it names this kind of thing.
            pub const fn from_uuid(id: Uuid) -> Self {
                Self(id)
            }
            /// The UUID inside, for adapters that store or send it.
            pub const fn as_uuid(&self) -> &Uuid {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                // Lowercase, hyphenated: the one spelling `from_str` accepts.
                fmt::Display::fmt(&self.0.hyphenated(), f)
            }
        }

        impl FromStr for $name {
            type Err = ParseIdError;
            /// Accepts only the canonical form (36 chars, lowercase,
            /// hyphenated) so that every id has exactly one spelling.
            fn from_str(s: &str) -> Result<Self, ParseIdError> {
                parse_canonical(s).map(Self)
            }
        }
    };
}

id_type!(
    /// A contact (a user of the service).
    ///
    /// Like every id here, it prints and parses in one spelling only:
    ///
    /// ```
    /// use confab_domain::ContactId;
    ///
    /// let id: ContactId = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b".parse()?;
    /// assert_eq!(id.to_string(), "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b");
    /// // Without hyphens, or in capitals, it is not an id.
    /// assert!("0190a1b2c3d47e5f8a9b0c1d2e3f4a5b".parse::<ContactId>().is_err());
    /// # Ok::<(), confab_domain::ParseIdError>(())
    /// ```
    ContactId
);
id_type!(
    /// A conversation.
    ConversationId
);
id_type!(
    /// A message.
    MessageId
);
id_type!(
    /// A group of contacts.
    GroupId
);
id_type!(
    /// A file attached to a message.
    AttachmentId
);
id_type!(
    /// A report of a message or a contact to the operator.
    ReportId
);
id_type!(
    /// An earlier text of an edited message.
    EditId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_only_canonical_lowercase_form() {
        let id = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
        assert_eq!(
            id.parse::<MessageId>().map(|m| m.to_string()),
            Ok(id.to_owned())
        );
        assert!("0190A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B"
            .parse::<MessageId>()
            .is_err());
        assert!("0190a1b2c3d47e5f8a9b0c1d2e3f4a5b"
            .parse::<MessageId>()
            .is_err());
        assert!("nope".parse::<MessageId>().is_err());
    }
}
