//! Property tests of the domain's validated values, through their public
//! constructors only: whatever a client sends, a constructor answers Ok or
//! `DomainError::Invalid` (never a panic, never `Forbidden`), and what it
//! accepts it accepts again (a value's text is itself valid).

use std::str::FromStr;

use confab_domain::{
    AttachmentId, AvatarUrl, ContactId, ConversationId, DomainError, FileSize, FileType, FileUrl,
    Filename, GroupDescription, GroupId, GroupName, GroupRole, MessageId, MessageText, PageLimit,
    PhoneNumber, ReactionName, Username,
};
use proptest::prelude::*;

/// Text a hostile or careless client might send: anything at all, or
/// strings built from the characters validators look at (white space,
/// invisible format characters, controls, separators, URL pieces).
fn hostile_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        prop::collection::vec(
            prop_oneof![
                Just(' '),
                Just('\t'),
                Just('\n'),
                Just('\0'),
                Just('\u{200B}'),
                Just('\u{FEFF}'),
                Just('\u{202E}'),
                Just('\u{85}'),
                Just('/'),
                Just(':'),
                Just('.'),
                Just('+'),
                Just('-'),
                Just('_'),
                Just('%'),
                Just('é'),
                Just('😀'),
                prop::char::range('0', '9'),
                prop::char::range('a', 'z'),
                prop::char::range('A', 'Z'),
            ],
            0..80,
        )
        .prop_map(|chars| chars.into_iter().collect()),
        (
            prop_oneof![
                Just("https://"),
                Just("http://"),
                Just("ftp://"),
                Just("+"),
                Just("")
            ],
            "[a-zA-Z0-9./:+?#@%_-]{0,40}",
        )
            .prop_map(|(prefix, rest)| format!("{prefix}{rest}")),
        // Around the length limits (4096 characters of text, 2048 of URL).
        (0usize..5000, prop_oneof![Just('a'), Just('é'), Just(' ')])
            .prop_map(|(n, c)| std::iter::repeat_n(c, n).collect()),
    ]
}

/// Checks one constructor on one input.
fn check<T, E>(
    input: &str,
    new: impl Fn(String) -> Result<T, DomainError>,
    text: E,
) -> Result<(), TestCaseError>
where
    E: Fn(&T) -> String,
{
    match new(input.to_owned()) {
        Ok(value) => {
            let again = text(&value);
            prop_assert!(
                new(again.clone()).is_ok(),
                "accepted {input:?} as {again:?}, which it refuses"
            );
        }
        Err(e @ DomainError::Invalid { .. }) => {
            // Every refusal reads as a sentence about a named input.
            let text = e.to_string();
            prop_assert!(text.contains(' ') && !text.ends_with(' '), "{text:?}");
        }
        Err(other) => prop_assert!(false, "{input:?}: not an invalid-value error: {other:?}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn string_values_never_panic(input in hostile_text()) {
        check(&input, MessageText::new, |v| v.as_str().to_owned())?;
        check(&input, Username::new, |v| v.as_str().to_owned())?;
        check(&input, PhoneNumber::new, |v| v.as_str().to_owned())?;
        check(&input, AvatarUrl::new, |v| v.as_str().to_owned())?;
        check(&input, FileUrl::new, |v| v.as_str().to_owned())?;
        check(&input, Filename::new, |v| v.as_str().to_owned())?;
        check(&input, FileType::new, |v| v.as_str().to_owned())?;
        check(&input, ReactionName::new, |v| v.as_str().to_owned())?;
        check(&input, GroupName::new, |v| v.as_str().to_owned())?;
        check(&input, GroupDescription::new, |v| v.as_str().to_owned())?;
    }

    #[test]
    fn message_text_needs_something_visible(spaces in "[ \t\n\r]{0,50}") {
        prop_assert!(MessageText::new(spaces).is_err());
    }

    #[test]
    fn numbers_never_panic(n in any::<i64>()) {
        match PageLimit::new(n) {
            Ok(limit) => prop_assert!((1..=100).contains(&n) && i64::from(limit.get()) == n),
            Err(e) => {
                let invalid = matches!(e, DomainError::Invalid { .. });
                prop_assert!(!(1..=100).contains(&n) && invalid);
            }
        }
        match FileSize::new(n) {
            Ok(_) => prop_assert!(n >= 0),
            Err(e) => {
                let invalid = matches!(e, DomainError::Invalid { .. });
                prop_assert!(invalid);
            }
        }
        if n < 0 {
            prop_assert!(FileSize::new(n).is_err());
        }
    }

    #[test]
    fn ids_have_one_spelling(input in prop_oneof![
        any::<String>(),
        "[0-9a-fA-F-]{30,40}",
        any::<u128>().prop_map(|n| uuid::Uuid::from_u128(n).hyphenated().to_string()),
    ]) {
        for (parsed, shown) in [
            (ContactId::from_str(&input).map(|id| id.to_string()).ok(), "contact"),
            (ConversationId::from_str(&input).map(|id| id.to_string()).ok(), "conversation"),
            (MessageId::from_str(&input).map(|id| id.to_string()).ok(), "message"),
            (GroupId::from_str(&input).map(|id| id.to_string()).ok(), "group"),
            (AttachmentId::from_str(&input).map(|id| id.to_string()).ok(), "attachment"),
        ] {
            if let Some(text) = parsed {
                prop_assert_eq!(&text, &input, "{} id", shown);
            }
        }
        if let Some(role) = GroupRole::parse(&input) {
            prop_assert_eq!(role.as_str(), input.as_str());
        }
    }
}
