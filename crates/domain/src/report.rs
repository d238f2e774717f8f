//! Reports: a contact tells the operator about a message or a contact
//! (abuse, spam). Operators read them and close them; nobody else sees
//! them but their reporter.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use crate::ids::ReportId;
use crate::{ContactId, DomainError, Field, MessageId, Rule, Timestamp};

/// Why a report was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReportReason {
    /// Unwanted bulk or commercial content.
    Spam,
    /// Abuse aimed at someone.
    Harassment,
    /// Content that breaks the service's rules.
    Inappropriate,
    /// Anything else (the description says what).
    Other,
}

/// Where a report stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReportStatus {
    /// Waiting for the operator.
    Open,
    /// The operator acted on it.
    Resolved,
    /// The operator found nothing to act on.
    Dismissed,
}

/// Why a string names no [`ReportReason`] or [`ReportStatus`]: it is not
/// one of their names (lowercase).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("unknown name: expected one of {expected}")]
pub struct ParseReportError {
    expected: &'static str,
}

macro_rules! named_enum {
    ($ty:ident, $expected:literal, $($variant:ident => $name:literal),+ $(,)?) => {
        impl $ty {
            /// Every value, in a fixed order.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];
            /// Its name, lowercase.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl FromStr for $ty {
            type Err = ParseReportError;
            /// Exactly the name [`Self::as_str`] gives.
            fn from_str(s: &str) -> Result<Self, ParseReportError> {
                match s {
                    $($name => Ok($ty::$variant),)+
                    _ => Err(ParseReportError { expected: $expected }),
                }
            }
        }
    };
}

named_enum!(ReportReason, "spam, harassment, inappropriate, other",
    Spam => "spam", Harassment => "harassment", Inappropriate => "inappropriate", Other => "other");
named_enum!(ReportStatus, "open, resolved, dismissed",
    Open => "open", Resolved => "resolved", Dismissed => "dismissed");

/// What a reporter wrote about a report: at most 1000 characters (may be
/// empty), no NUL.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ReportDescription(String);

impl ReportDescription {
    /// Checks `raw`.
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::ReportDescription`].
    pub fn new(raw: String) -> Result<Self, DomainError> {
        if raw.chars().count() > 1000 || raw.contains('\0') {
            return Err(DomainError::invalid(
                Field::ReportDescription,
                "must be at most 1000 characters without NUL",
            ));
        }
        Ok(Self(raw))
    }
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
    /// The text, owned.
    pub fn into_inner(self) -> String {
        self.0
    }
}

/// What a report is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReportTarget {
    /// A message the reporter can see.
    Message(MessageId),
    /// A contact.
    Contact(ContactId),
}

/// A report as its reporter files it, before the store checks what it is
/// about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewReport {
    /// Who reports.
    pub reporter: ContactId,
    /// What about.
    pub target: ReportTarget,
    /// Why.
    pub reason: ReportReason,
    /// In the reporter's words.
    pub description: ReportDescription,
}

impl NewReport {
    /// Checks what can be checked before anything is read: a contact does
    /// not report themself.
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::ReportedContact`] with
    /// [`Rule::IsSelf`].
    pub fn check(&self) -> Result<(), DomainError> {
        match self.target {
            ReportTarget::Contact(c) => {
                crate::check_other_contact(self.reporter, c, Field::ReportedContact)
            }
            ReportTarget::Message(_) => Ok(()),
        }
    }

    /// Checks a message report against the message's sender: nobody
    /// reports their own message.
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::ReportedMessage`] with
    /// [`Rule::OwnMessage`].
    pub fn check_sender(&self, sender: ContactId) -> Result<(), DomainError> {
        if sender == self.reporter {
            return Err(DomainError::breaks(
                Field::ReportedMessage,
                Rule::OwnMessage,
            ));
        }
        Ok(())
    }
}

/// New reports a contact may file in an hour unless the deployment says
/// otherwise: far more than anyone reports by hand, far fewer than a
/// script floods the operator's queue with.
pub const DEFAULT_REPORTS_PER_HOUR: u32 = 30;

/// The hour a report filed at `at` counts in, for the limit on new reports
/// per contact: whole hours since the Unix epoch, UTC. The count starts
/// over with each hour.
///
/// ```
/// use confab_domain::{report_hour, secs_to_next_report_hour, Timestamp};
///
/// let at = Timestamp::from_secs(7_200 + 1_800);
/// assert_eq!(report_hour(at), 2);
/// assert_eq!(secs_to_next_report_hour(at), 1_800);
/// assert_eq!(secs_to_next_report_hour(Timestamp::from_secs(7_200)), 3_600);
/// ```
pub fn report_hour(at: Timestamp) -> i64 {
    at.micros().div_euclid(MICROS_PER_HOUR)
}

/// The seconds from `at` to the start of the next hour (when a contact past
/// the limit may report again), at least 1.
pub fn secs_to_next_report_hour(at: Timestamp) -> u64 {
    let next = (report_hour(at) + 1) * MICROS_PER_HOUR;
    let micros = next - at.micros();
    u64::try_from((micros + 999_999) / 1_000_000)
        .unwrap_or(1)
        .max(1)
}

const MICROS_PER_HOUR: i64 = 3_600 * 1_000_000;

/// A report, as stored.
///
/// A plain record (public fields): its values are each checked, and the
/// store that made it vouches for how they fit together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Never changes.
    pub id: ReportId,
    /// Who reported.
    pub reporter: ContactId,
    /// The message reported, for a message report (it may since have been
    /// deleted).
    pub message_id: Option<MessageId>,
    /// The contact reported; for a message report, its sender.
    pub contact_id: ContactId,
    /// Why.
    pub reason: ReportReason,
    /// In the reporter's words (may be empty).
    pub description: ReportDescription,
    /// Where it stands.
    pub status: ReportStatus,
    /// When it was filed.
    pub created_at: Timestamp,
    /// When its status last changed (its filing, until then).
    pub updated_at: Timestamp,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_nothing_else() {
        for r in ReportReason::ALL {
            assert_eq!(r.as_str().parse::<ReportReason>(), Ok(*r));
        }
        for s in ReportStatus::ALL {
            assert_eq!(s.as_str().parse::<ReportStatus>(), Ok(*s));
        }
        assert!("Spam".parse::<ReportReason>().is_err());
        assert!("closed".parse::<ReportStatus>().is_err());
        assert_eq!(
            "x".parse::<ReportStatus>()
                .expect_err("not a status")
                .to_string(),
            "unknown name: expected one of open, resolved, dismissed"
        );
    }

    #[test]
    fn descriptions_are_bounded() {
        assert!(ReportDescription::new(String::new()).is_ok());
        assert!(ReportDescription::new("é".repeat(1000)).is_ok());
        assert!(ReportDescription::new("é".repeat(1001)).is_err());
        assert!(ReportDescription::new("a\0".into()).is_err());
    }

    #[test]
    fn nobody_reports_themself_or_their_own_message() {
        let me: ContactId = "0190a1b2-0000-7000-8000-00000000000a".parse().expect("id");
        let other: ContactId = "0190a1b2-0000-7000-8000-00000000000b".parse().expect("id");
        let report = |target| NewReport {
            reporter: me,
            target,
            reason: ReportReason::Spam,
            description: ReportDescription::default(),
        };
        assert!(report(ReportTarget::Contact(other)).check().is_ok());
        assert_eq!(
            report(ReportTarget::Contact(me)).check(),
            Err(DomainError::breaks(Field::ReportedContact, Rule::IsSelf))
        );
        let m = report(ReportTarget::Message(
            "0190a1b2-0000-7000-8000-0000000000aa".parse().expect("id"),
        ));
        assert!(m.check_sender(other).is_ok());
        assert_eq!(
            m.check_sender(me),
            Err(DomainError::breaks(
                Field::ReportedMessage,
                Rule::OwnMessage
            ))
        );
    }
}
