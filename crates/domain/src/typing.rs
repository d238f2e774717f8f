//! "Someone is typing": a member's word that they are writing in a
//! conversation. It is never stored: it goes to the other members who are
//! connected now, and expires on its own.
//!
//! The rules: a start holds for [`TYPING_EXPIRES_SECS`]; starts by one
//! contact in one conversation closer than [`TYPING_MIN_INTERVAL_MICROS`]
//! apart add nothing (the first still holds); a stop, or a message sent by
//! the same contact, ends a start that still holds, and means nothing
//! without one.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use crate::{ContactId, ConversationId, Timestamp};

/// How long a start holds when nothing renews or ends it.
pub const TYPING_EXPIRES_SECS: i64 = 8;

/// The least time between two starts of one contact in one conversation
/// that both count.
pub const TYPING_MIN_INTERVAL_MICROS: i64 = 2_000_000;

/// Whether a contact started or stopped typing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TypingState {
    /// They are typing.
    #[default]
    Start,
    /// They stopped (or sent what they typed).
    Stop,
}

impl TypingState {
    /// Its name, lowercase: `start` or `stop`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Start => "start",
            Self::Stop => "stop",
        }
    }
}

impl fmt::Display for TypingState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a string names no [`TypingState`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("unknown typing state: expected start or stop")]
pub struct ParseTypingStateError;

impl FromStr for TypingState {
    type Err = ParseTypingStateError;

    /// Exactly `start` or `stop`.
    fn from_str(s: &str) -> Result<Self, ParseTypingStateError> {
        match s {
            "start" => Ok(Self::Start),
            "stop" => Ok(Self::Stop),
            _ => Err(ParseTypingStateError),
        }
    }
}

/// One member's typing news for the other members of a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Typing {
    conversation_id: ConversationId,
    contact_id: ContactId,
    state: TypingState,
    expires_at: Timestamp,
}

impl Typing {
    /// `contact` started typing in `conversation` at `now`: it holds until
    /// [`TYPING_EXPIRES_SECS`] later.
    ///
    /// ```
    /// use confab_domain::{ContactId, ConversationId, Timestamp, Typing, TypingState};
    /// use uuid::Uuid;
    ///
    /// let (conversation, contact) = (Uuid::from_u128(1), Uuid::from_u128(2));
    /// let now = Timestamp::from_secs(1_700_000_000);
    /// let typing = Typing::start(
    ///     ConversationId::from_uuid(conversation),
    ///     ContactId::from_uuid(contact),
    ///     now,
    /// );
    /// assert_eq!(typing.state(), TypingState::Start);
    /// assert_eq!(typing.expires_at(), Timestamp::from_secs(1_700_000_008));
    /// assert!(typing.holds_at(Timestamp::from_secs(1_700_000_007)));
    /// assert!(!typing.holds_at(Timestamp::from_secs(1_700_000_008)));
    /// ```
    pub fn start(conversation: ConversationId, contact: ContactId, now: Timestamp) -> Self {
        Self {
            conversation_id: conversation,
            contact_id: contact,
            state: TypingState::Start,
            expires_at: now.plus_secs(TYPING_EXPIRES_SECS),
        }
    }

    /// `contact` stopped typing in `conversation` at `now` (a stop expires
    /// at once: there is nothing left to hold).
    pub fn stop(conversation: ConversationId, contact: ContactId, now: Timestamp) -> Self {
        Self {
            conversation_id: conversation,
            contact_id: contact,
            state: TypingState::Stop,
            expires_at: now,
        }
    }

    /// Rebuilds news another server process sent (its fields as they were
    /// made by [`Typing::start`] or [`Typing::stop`]).
    pub fn from_parts(
        conversation: ConversationId,
        contact: ContactId,
        state: TypingState,
        expires_at: Timestamp,
    ) -> Self {
        Self {
            conversation_id: conversation,
            contact_id: contact,
            state,
            expires_at,
        }
    }

    /// The conversation typed in.
    pub fn conversation_id(&self) -> ConversationId {
        self.conversation_id
    }

    /// Who is typing.
    pub fn contact_id(&self) -> ContactId {
        self.contact_id
    }

    /// Started or stopped.
    pub fn state(&self) -> TypingState {
        self.state
    }

    /// When a start stops holding unless renewed; for a stop, when it was
    /// made.
    pub fn expires_at(&self) -> Timestamp {
        self.expires_at
    }

    /// When a start was made (for a stop, when it was made).
    pub fn made_at(&self) -> Timestamp {
        match self.state {
            TypingState::Start => self.expires_at.plus_secs(-TYPING_EXPIRES_SECS),
            TypingState::Stop => self.expires_at,
        }
    }

    /// Whether this is a start that still holds at `now`.
    pub fn holds_at(&self, now: Timestamp) -> bool {
        self.state == TypingState::Start && now < self.expires_at
    }

    /// Whether a new start at `now` adds nothing to this one: this is a
    /// start made less than [`TYPING_MIN_INTERVAL_MICROS`] before `now`.
    pub fn renewed_too_soon_at(&self, now: Timestamp) -> bool {
        self.state == TypingState::Start
            && now.micros() - self.made_at().micros() < TYPING_MIN_INTERVAL_MICROS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn ids() -> (ConversationId, ContactId) {
        (
            ConversationId::from_uuid(Uuid::from_u128(1)),
            ContactId::from_uuid(Uuid::from_u128(2)),
        )
    }

    fn at(secs: i64, micros: i64) -> Timestamp {
        Timestamp::from_micros(secs * 1_000_000 + micros)
    }

    #[test]
    fn states_parse_by_their_names_only() {
        assert_eq!("start".parse(), Ok(TypingState::Start));
        assert_eq!("stop".parse(), Ok(TypingState::Stop));
        assert_eq!("Start".parse::<TypingState>(), Err(ParseTypingStateError));
        assert_eq!("".parse::<TypingState>(), Err(ParseTypingStateError));
        assert_eq!(TypingState::default(), TypingState::Start);
        assert_eq!(TypingState::Stop.to_string(), "stop");
    }

    #[test]
    fn a_start_holds_eight_seconds_and_a_stop_holds_nothing() {
        let (c, who) = ids();
        let start = Typing::start(c, who, at(100, 0));
        assert_eq!(start.expires_at(), at(108, 0));
        assert_eq!(start.made_at(), at(100, 0));
        assert!(start.holds_at(at(107, 999_999)));
        assert!(!start.holds_at(at(108, 0)));
        let stop = Typing::stop(c, who, at(101, 0));
        assert!(!stop.holds_at(at(101, 0)));
        assert_eq!(stop.made_at(), at(101, 0));
    }

    #[test]
    fn starts_closer_than_two_seconds_add_nothing() {
        let start = Typing::start(ids().0, ids().1, at(100, 0));
        assert!(start.renewed_too_soon_at(at(100, 0)));
        assert!(start.renewed_too_soon_at(at(101, 999_999)));
        assert!(!start.renewed_too_soon_at(at(102, 0)));
        let stop = Typing::stop(ids().0, ids().1, at(100, 0));
        assert!(!stop.renewed_too_soon_at(at(100, 1)));
    }

    #[test]
    fn parts_round_trip() {
        let t = Typing::start(ids().0, ids().1, at(5, 7));
        let back = Typing::from_parts(
            t.conversation_id(),
            t.contact_id(),
            t.state(),
            t.expires_at(),
        );
        assert_eq!(back, t);
    }
}
