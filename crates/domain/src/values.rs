//! Validated value objects. Each can only be built through `new`, which checks
//! the invariant, so a value that exists is a valid one.

use crate::{DomainError, Field};

fn has_control(s: &str) -> bool {
    s.chars().any(char::is_control)
}

macro_rules! string_value {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub struct $name(String);

        impl $name {
            /// The value as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
            /// The value's text, without copying it.
            pub fn into_inner(self) -> String {
                self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

/// Whether `c` shows as something: not white space, not a control
/// character, and not one of the characters that render as nothing (Unicode's
/// format characters, category Cf, and the fillers and blanks that look
/// empty). A message of only such characters would look empty to every
/// reader, so it is refused like an empty one.
fn is_visible(c: char) -> bool {
    !(c.is_whitespace() || c.is_control() || is_invisible(c))
}

/// The characters that render as nothing, though neither white space nor
/// control characters: Unicode 15's format characters (Cf) and the blank
/// fillers (Hangul fillers, braille blank, combining grapheme joiner).
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{2800}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFF8}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

string_value!(
    /// The text of a message: 1 to 4096 characters with at least one visible
    /// one (not only white space or invisible format characters), no NUL.
    /// Line breaks and tabs are allowed.
    MessageText
);
impl MessageText {
    /// The longest text, in characters (Unicode scalar values, not bytes).
    pub const MAX_CHARS: usize = 4096;
    /// Checks `raw` and keeps it as it is (no trimming, no normalization).
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::MessageText`] when nothing in
    /// `raw` would show, when it is longer than [`Self::MAX_CHARS`], or when
    /// it holds a NUL.
    ///
    /// # Example
    ///
    /// ```
    /// use confab_domain::{DomainError, Field, MessageText};
    ///
    /// let text = MessageText::new("Hello,\n\tBob!".into())?;
    /// assert_eq!(text.as_str(), "Hello,\n\tBob!");
    /// assert!(MessageText::new("é".repeat(4096)).is_ok());
    ///
    /// // Nothing a reader could see is no message: white space, a
    /// // zero-width space.
    /// for blank in ["", "  \n", "\u{200B}"] {
    ///     assert!(matches!(
    ///         MessageText::new(blank.into()),
    ///         Err(DomainError::Invalid { field: Field::MessageText, .. })
    ///     ));
    /// }
    /// assert!(MessageText::new("x".repeat(4097)).is_err());
    /// # Ok::<(), DomainError>(())
    /// ```
    pub fn new(raw: String) -> Result<Self, DomainError> {
        if !raw.chars().any(is_visible) {
            return Err(DomainError::invalid(
                Field::MessageText,
                "must hold at least one visible character (not only white space or invisible characters)",
            ));
        }
        if raw.chars().count() > Self::MAX_CHARS {
            return Err(DomainError::invalid(
                Field::MessageText,
                "must be at most 4096 characters",
            ));
        }
        if raw.contains('\0') {
            return Err(DomainError::invalid(
                Field::MessageText,
                "must not contain NUL characters",
            ));
        }
        Ok(Self(raw))
    }

    /// No text: the text of a message that is only its attachments (a
    /// photo without a caption), written `""`. [`check_message_content`]
    /// says when a message may have it.
    ///
    /// [`check_message_content`]: crate::check_message_content
    pub fn none() -> Self {
        Self(String::new())
    }

    /// Whether this is [`Self::none`].
    pub fn is_none(&self) -> bool {
        self.0.is_empty()
    }
}

string_value!(
    /// A username: 1 to 32 of `A-Z a-z 0-9 _ . -`; unique case-insensitively.
    Username
);
impl Username {
    /// Checks `raw`; the case is kept as given.
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::Username`].
    pub fn new(raw: String) -> Result<Self, DomainError> {
        let ok_len = (1..=32).contains(&raw.len());
        let ok_chars = raw
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
        if !ok_len || !ok_chars {
            return Err(DomainError::invalid(
                Field::Username,
                "must be 1 to 32 characters of A-Z a-z 0-9 _ . -",
            ));
        }
        Ok(Self(raw))
    }
    /// The key under which uniqueness is enforced.
    pub fn folded(&self) -> String {
        self.0.to_ascii_lowercase()
    }
    /// Whether `other` names the same user (case-insensitive).
    pub fn matches(&self, other: &str) -> bool {
        self.0.eq_ignore_ascii_case(other)
    }
}

string_value!(
    /// A phone number in E.164 form: `+` then 2 to 15 digits.
    PhoneNumber
);
impl PhoneNumber {
    /// Checks `raw` is in E.164 form.
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::PhoneNumber`].
    pub fn new(raw: String) -> Result<Self, DomainError> {
        let digits = raw.strip_prefix('+').unwrap_or("");
        if !(2..=15).contains(&digits.len()) || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(DomainError::invalid(
                Field::PhoneNumber,
                "must be in E.164 form: + then 2 to 15 digits",
            ));
        }
        Ok(Self(raw))
    }
}

/// Checks an absolute http(s) URL without pulling a URL parser into the
/// domain: scheme, a non-empty host, no white space or control characters.
fn is_http_url(raw: &str) -> bool {
    let lower = raw.get(..8).unwrap_or(raw).to_ascii_lowercase();
    let rest = if lower.starts_with("https://") {
        &raw[8..]
    } else if lower.starts_with("http://") {
        &raw[7..]
    } else {
        return false;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit('@').next().unwrap_or("");
    !host.is_empty()
        && !host.starts_with(':')
        && !raw.chars().any(|c| c.is_whitespace() || c.is_control())
}

string_value!(
    /// An avatar URL: empty (no avatar) or an http(s) URL of at most 2048
    /// characters.
    AvatarUrl
);
impl AvatarUrl {
    /// Checks `raw`; the domain never fetches it.
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::AvatarUrl`].
    pub fn new(raw: String) -> Result<Self, DomainError> {
        if raw.is_empty() || (raw.len() <= 2048 && is_http_url(&raw)) {
            Ok(Self(raw))
        } else {
            Err(DomainError::invalid(
                Field::AvatarUrl,
                "must be empty or an http or https URL of at most 2048 characters",
            ))
        }
    }
    /// No avatar (the empty URL).
    pub fn none() -> Self {
        Self(String::new())
    }
}

string_value!(
    /// Where an attachment's bytes live: an http(s) URL, at most 2048 chars.
    FileUrl
);
impl FileUrl {
    /// Checks `raw`; the domain never fetches it.
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::FileUrl`].
    pub fn new(raw: String) -> Result<Self, DomainError> {
        if raw.len() <= 2048 && is_http_url(&raw) {
            Ok(Self(raw))
        } else {
            Err(DomainError::invalid(
                Field::FileUrl,
                "must be an http or https URL of at most 2048 characters",
            ))
        }
    }
}

string_value!(
    /// An attachment's file name: 1 to 255 characters, no `/`, no control
    /// characters.
    Filename
);
impl Filename {
    /// Whether the name holds a `\\`, which names a folder on some systems:
    /// an upload's name may not ([`Filename::new`] allows it for a link's
    /// name, as it always did).
    pub fn has_backslash(&self) -> bool {
        self.0.contains('\\')
    }

    /// Checks `raw`; no `/`, so that it can never name a path.
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::Filename`].
    pub fn new(raw: String) -> Result<Self, DomainError> {
        let n = raw.chars().count();
        if n == 0 || n > 255 || raw.contains('/') || has_control(&raw) {
            return Err(DomainError::invalid(
                Field::Filename,
                "must be 1 to 255 characters without / or control characters",
            ));
        }
        Ok(Self(raw))
    }
}

string_value!(
    /// A MIME type `type/subtype` (RFC 6838 token characters, at most 255).
    FileType
);
impl FileType {
    /// Checks `raw` is a MIME type of the form `type/subtype`.
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::FileType`].
    pub fn new(raw: String) -> Result<Self, DomainError> {
        fn token(s: &str) -> bool {
            !s.is_empty()
                && s.bytes().all(|b| {
                    b.is_ascii_alphanumeric()
                        || matches!(
                            b,
                            b'!' | b'#' | b'$' | b'&' | b'-' | b'^' | b'_' | b'.' | b'+'
                        )
                })
        }
        let ok =
            raw.len() <= 255 && matches!(raw.split_once('/'), Some((t, s)) if token(t) && token(s));
        if ok {
            Ok(Self(raw))
        } else {
            Err(DomainError::invalid(
                Field::FileType,
                "must be a MIME type of the form type/subtype",
            ))
        }
    }
    /// `application/octet-stream`: the type of bytes nobody described.
    pub fn octet_stream() -> Self {
        Self("application/octet-stream".to_owned())
    }
}

/// An attachment's size in bytes (>= 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileSize(i64);
impl FileSize {
    /// A size of `bytes`.
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::FileSize`] when negative.
    pub fn new(bytes: i64) -> Result<Self, DomainError> {
        if bytes < 0 {
            return Err(DomainError::invalid(
                Field::FileSize,
                "must be an integer of at least 0",
            ));
        }
        Ok(Self(bytes))
    }
    /// The size in bytes.
    pub const fn bytes(self) -> i64 {
        self.0
    }
}

string_value!(
    /// A reaction name: 1 to 64 of `a-z 0-9 _ + -`.
    ReactionName
);
impl ReactionName {
    /// Checks `raw`. Only lowercase letters are allowed, so a name has one
    /// spelling: "Like" is refused rather than made a second "like".
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::Reactions`].
    ///
    /// # Example
    ///
    /// ```
    /// use confab_domain::ReactionName;
    ///
    /// assert_eq!(ReactionName::new("thumbs_up+1".into())?.as_str(), "thumbs_up+1");
    /// assert!(ReactionName::new("Like".into()).is_err());
    /// assert!(ReactionName::new("".into()).is_err());
    /// assert!(ReactionName::new("a".repeat(65)).is_err());
    /// # Ok::<(), confab_domain::DomainError>(())
    /// ```
    pub fn new(raw: String) -> Result<Self, DomainError> {
        let ok = (1..=64).contains(&raw.len())
            && raw.bytes().all(|b| {
                b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'+' | b'-')
            });
        if ok {
            Ok(Self(raw))
        } else {
            Err(DomainError::invalid(
                Field::Reactions,
                "must be reaction names of 1 to 64 characters of a-z 0-9 _ + -",
            ))
        }
    }
}

string_value!(
    /// A group's name: 1 to 100 characters, not only white space.
    GroupName
);
impl GroupName {
    /// Checks `raw`.
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::GroupName`].
    pub fn new(raw: String) -> Result<Self, DomainError> {
        let n = raw.chars().count();
        if raw.trim().is_empty() || n > 100 || has_control(&raw) {
            return Err(DomainError::invalid(
                Field::GroupName,
                "must be 1 to 100 characters, not only white space, without control characters",
            ));
        }
        Ok(Self(raw))
    }
}

string_value!(
    /// A group's description: at most 1000 characters (may be empty), no NUL.
    GroupDescription
);
impl GroupDescription {
    /// Checks `raw`.
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::GroupDescription`].
    pub fn new(raw: String) -> Result<Self, DomainError> {
        if raw.chars().count() > 1000 || raw.contains('\0') {
            return Err(DomainError::invalid(
                Field::GroupDescription,
                "must be at most 1000 characters without NUL",
            ));
        }
        Ok(Self(raw))
    }
    /// No description.
    pub fn empty() -> Self {
        Self(String::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_text_rules() {
        assert!(MessageText::new("hi".into()).is_ok());
        assert!(MessageText::new(" \n\t ".into()).is_err());
        assert!(MessageText::new(String::new()).is_err());
        assert!(MessageText::new("é".repeat(4096)).is_ok());
        assert!(MessageText::new("é".repeat(4097)).is_err());
        assert!(MessageText::new("a\0b".into()).is_err());
        // Nothing a reader could see: zero-width space, joiners, BOM, soft
        // hyphen, word joiner, Hangul filler, variation selector, tags.
        for blank in [
            "\u{200B}",
            " \u{200B}\u{200C}\u{200D} ",
            "\u{FEFF}",
            "\u{00AD}\u{2060}",
            "\u{3164}",
            "\u{FE0F}",
            "\u{E0041}\u{E007F}",
            "\u{2028}\u{3000}",
        ] {
            assert!(MessageText::new(blank.into()).is_err(), "{blank:?}");
        }
        // One visible character among them is enough; emoji with joiners
        // and variation selectors are text.
        assert!(MessageText::new("\u{200B}a\u{200B}".into()).is_ok());
        assert!(MessageText::new("\u{2764}\u{FE0F}".into()).is_ok());
        assert!(MessageText::new("\u{1F469}\u{200D}\u{1F4BB}".into()).is_ok());
    }

    #[test]
    fn username_rules() {
        assert!(Username::new("Alice_1.x-y".into()).is_ok());
        assert!(Username::new("a".repeat(32)).is_ok());
        assert!(Username::new("a".repeat(33)).is_err());
        assert!(Username::new(String::new()).is_err());
        assert!(Username::new("al ice".into()).is_err());
        assert!(Username::new("alicé".into()).is_err());
        let u = Username::new("Alice".into()).expect("valid");
        assert!(u.matches("aLICE"));
        assert_eq!(u.folded(), "alice");
    }

    #[test]
    fn phone_rules() {
        assert!(PhoneNumber::new("+15550100".into()).is_ok());
        assert!(PhoneNumber::new("15550100".into()).is_err());
        assert!(PhoneNumber::new("+1555010a".into()).is_err());
        assert!(PhoneNumber::new("+1234567890123456".into()).is_err());
    }

    #[test]
    fn url_rules() {
        assert!(FileUrl::new("https://x.example/a.png".into()).is_ok());
        assert!(FileUrl::new("HTTP://x.example".into()).is_ok());
        assert!(FileUrl::new("ftp://x.example/a".into()).is_err());
        assert!(FileUrl::new("https://".into()).is_err());
        assert!(FileUrl::new("https://a b".into()).is_err());
        assert!(FileUrl::new(format!("https://x.example/{}", "a".repeat(2048))).is_err());
        assert!(AvatarUrl::new(String::new()).is_ok());
        assert!(AvatarUrl::new("javascript:alert(1)".into()).is_err());
    }

    #[test]
    fn attachment_field_rules() {
        assert!(Filename::new("report.pdf".into()).is_ok());
        assert!(Filename::new("a/b".into()).is_err());
        assert!(Filename::new("a\nb".into()).is_err());
        assert!(Filename::new("x".repeat(256)).is_err());
        assert!(FileType::new("image/png".into()).is_ok());
        assert!(FileType::new("application/vnd.api+json".into()).is_ok());
        assert!(FileType::new("image".into()).is_err());
        assert!(FileType::new("image/".into()).is_err());
        assert!(FileType::new("a b/c".into()).is_err());
        assert!(FileSize::new(0).is_ok());
        assert!(FileSize::new(-1).is_err());
    }

    #[test]
    fn reaction_name_rules() {
        assert!(ReactionName::new("thumbs_up+1".into()).is_ok());
        assert!(ReactionName::new("Like".into()).is_err());
        assert!(ReactionName::new(String::new()).is_err());
        assert!(ReactionName::new("a".repeat(65)).is_err());
    }

    #[test]
    fn group_name_rules() {
        assert!(GroupName::new("Team".into()).is_ok());
        assert!(GroupName::new("  ".into()).is_err());
        assert!(GroupName::new("x".repeat(101)).is_err());
        assert!(GroupDescription::new(String::new()).is_ok());
    }
}
