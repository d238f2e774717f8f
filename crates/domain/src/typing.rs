//! "Someone is typing": a member's word that they are writing in a
//! conversation. It is never stored: it goes to the other members who are
//! connected now, and expires on its own.
//!
//! The rules: a start holds for [`TYPING_EXPIRES_SECS`]; starts by one
//! contact in one conversation closer than [`TYPING_MIN_INTERVAL_MICROS`]
//! apart add nothing (the first still holds); a stop, or a message sent by
//! the same contact, ends a start that still holds, and means nothing
//! without one. Whatever a member says, the others hear at most one piece
//! of news of theirs per conversation every [`TYPING_MIN_INTERVAL_MICROS`]
//! ([`TypingLine`]): news that comes sooner waits for its turn, and only
//! the last word waiting is told, so a stop is never lost and nobody is
//! shown "typing" past a start's expiry.

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

/// What one member's line in one conversation does with a piece of news
/// ([`TypingLine::say`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypingStep {
    /// Tell the others this now.
    Tell(Typing),
    /// The news waits its turn: ask [`TypingLine::due`] at this time (a
    /// line asks for one wake-up at a time; news that comes while one is
    /// asked for replaces what waits, and needs none of its own).
    WakeAt(Timestamp),
    /// Nothing to tell (a start within 2 s of the one that holds, a stop
    /// with nothing to stop, or news that replaced what waits).
    Nothing,
}

/// What the other members of a conversation were last told of one
/// member's typing, and what waits to be told: the rule that they hear
/// at most one piece of news every [`TYPING_MIN_INTERVAL_MICROS`],
/// whatever the member sends (a start, a stop, a send), and that the
/// member's last word still reaches them.
///
/// - A start within 2 s of the start the others were told adds nothing
///   (that one still holds), and takes back a stop that waits (the member
///   types again).
/// - A stop ends a start the others were told and that still holds; a
///   stop of nothing tells nothing, and takes back a start that waits.
/// - News that comes within 2 s of the last told waits until then; at
///   most one piece waits (the last), and a start that waits is told
///   only if it still holds then, with its own expiry.
///
/// So a listener never shows "typing" for longer than a start's
/// [`TYPING_EXPIRES_SECS`], a stop reaches them at most 2 s late, and
/// any sequence of starts and stops (alternating included) reaches them
/// as at most one piece of news per 2 s.
///
/// ```
/// use confab_domain::{ContactId, ConversationId, Timestamp, Typing, TypingLine, TypingStep};
/// use uuid::Uuid;
///
/// let (c, who) = (ConversationId::from_uuid(Uuid::from_u128(1)), ContactId::from_uuid(Uuid::from_u128(2)));
/// let at = |ms: i64| Timestamp::from_micros(1_700_000_000_000_000 + ms * 1_000);
/// let start = Typing::start(c, who, at(0));
/// let mut line = TypingLine::told(start);
/// // A stop 100 ms later waits for its turn, 2 s after the start...
/// assert_eq!(line.say(Typing::stop(c, who, at(100)), at(100)), TypingStep::WakeAt(at(2_000)));
/// // ...a start and a stop on top of it add nothing...
/// assert_eq!(line.say(Typing::start(c, who, at(200)), at(200)), TypingStep::Nothing);
/// assert_eq!(line.say(Typing::stop(c, who, at(300)), at(300)), TypingStep::Nothing);
/// // ...and the last word is told when its turn comes.
/// assert_eq!(line.due(at(2_000)), Some(TypingStep::Tell(Typing::stop(c, who, at(2_000)))));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypingLine {
    told: Typing,
    /// When the last news was told.
    told_at: Timestamp,
    waiting: Option<Typing>,
    /// Whether a wake-up is asked for.
    wake_asked: bool,
    /// Whether a message ended the start last told: the others' clients
    /// take a message as the end of its sender's typing, so a new start
    /// is news to them, however soon it comes.
    ended_by_send: bool,
}

impl TypingLine {
    /// A line whose last news told was `told`, when it was made.
    pub fn told(told: Typing) -> Self {
        Self {
            told,
            told_at: told.made_at(),
            waiting: None,
            wake_asked: false,
            ended_by_send: false,
        }
    }

    /// The last news the others were told.
    pub fn last_told(&self) -> Typing {
        self.told
    }

    /// The news that waits for its turn, if any.
    pub fn waiting(&self) -> Option<Typing> {
        self.waiting
    }

    /// When the next news may be told.
    pub fn next_turn(&self) -> Timestamp {
        Timestamp::from_micros(self.told_at.micros() + TYPING_MIN_INTERVAL_MICROS)
    }

    /// Whether the line can be forgotten at `now`: nothing waits and the
    /// others are not shown "typing" (a line of news told less than 2 s
    /// ago is kept, its turn still counts).
    pub fn is_idle_at(&self, now: Timestamp) -> bool {
        self.waiting.is_none()
            && !self.wake_asked
            && !self.told.holds_at(now)
            && now >= self.next_turn()
    }

    /// The member says `news` at `now` (a send says a stop): what to do.
    pub fn say(&mut self, news: Typing, now: Timestamp) -> TypingStep {
        match news.state() {
            TypingState::Start if self.told.renewed_too_soon_at(now) && !self.ended_by_send => {
                self.waiting = None;
                return TypingStep::Nothing;
            }
            TypingState::Stop if !self.told.holds_at(now) => {
                self.waiting = None;
                return TypingStep::Nothing;
            }
            TypingState::Start | TypingState::Stop => {}
        }
        if now >= self.next_turn() && !self.wake_asked {
            self.tell(news, now);
            return TypingStep::Tell(news);
        }
        self.waiting = Some(news);
        if self.wake_asked {
            TypingStep::Nothing
        } else {
            self.wake_asked = true;
            TypingStep::WakeAt(self.next_turn())
        }
    }

    /// The member sent a message at `now`: it ends their start, for the
    /// others at once (their clients take the message as its end), and a
    /// stop is told in its turn for those that do not. A start after it
    /// is news again (told in its turn), however soon it comes.
    pub fn sent(&mut self, stop: Typing, now: Timestamp) -> TypingStep {
        let holds = self.told.holds_at(now);
        let step = self.say(stop, now);
        if holds {
            self.ended_by_send = true;
        }
        step
    }

    /// The wake-up asked for by [`TypingLine::say`] came at `now`: the
    /// news that waits, told now if it still means something (`Tell`),
    /// or a later wake-up when its turn moved (news another server
    /// process told since); `None` when nothing is left to do.
    pub fn due(&mut self, now: Timestamp) -> Option<TypingStep> {
        self.wake_asked = false;
        let waiting = self.waiting?;
        if now < self.next_turn() {
            self.wake_asked = true;
            return Some(TypingStep::WakeAt(self.next_turn()));
        }
        self.waiting = None;
        let news = match waiting.state() {
            // Told with its own expiry, if it has not passed.
            TypingState::Start if waiting.holds_at(now) => waiting,
            TypingState::Stop if self.told.holds_at(now) => {
                Typing::stop(waiting.conversation_id(), waiting.contact_id(), now)
            }
            TypingState::Start | TypingState::Stop => return None,
        };
        self.tell(news, now);
        Some(TypingStep::Tell(news))
    }

    /// Another server process told `news` (made at its own time): the
    /// others heard it, so it counts as the last news told.
    pub fn heard_elsewhere(&mut self, news: Typing) {
        if news.made_at() >= self.told_at {
            self.told = news;
            self.told_at = news.made_at();
            self.ended_by_send = false;
        }
    }

    fn tell(&mut self, news: Typing, now: Timestamp) {
        self.told = news;
        self.told_at = now;
        self.waiting = None;
        self.ended_by_send = false;
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
