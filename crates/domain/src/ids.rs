use std::fmt;
use std::str::FromStr;

use uuid::Uuid;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Uuid);

        impl $name {
            pub const fn from_uuid(id: Uuid) -> Self {
                Self(id)
            }
            pub const fn as_uuid(&self) -> &Uuid {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                // Lowercase, hyphenated: the one form the API speaks.
                fmt::Display::fmt(&self.0.hyphenated(), f)
            }
        }

        impl FromStr for $name {
            type Err = ();
            /// Accepts only the canonical form (36 chars, lowercase,
            /// hyphenated) so that every id has exactly one spelling.
            fn from_str(s: &str) -> Result<Self, ()> {
                if s.len() != 36 || s.bytes().any(|b| b.is_ascii_uppercase()) {
                    return Err(());
                }
                Uuid::parse_str(s).map(Self).map_err(|_| ())
            }
        }
    };
}

id_type!(
    /// A contact (a user of the service).
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
