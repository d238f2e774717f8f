//! What gives a conversation depth beyond a list of messages: replies that
//! quote a message, threads one level deep, mentions of members, and the
//! earlier texts of an edited message.

use crate::{
    has_repeats, ContactId, ConversationId, DomainError, EditId, Field, Message, MessageId,
    MessageText, Rule, Timestamp, Username,
};

/// The most contacts one message may mention.
pub const MAX_MENTIONS: usize = 50;

/// The contacts a message mentions: at most [`MAX_MENTIONS`], each once, in
/// the order given.
///
/// # Example
///
/// ```
/// use confab_domain::{ContactId, DomainError, Field, Mentions, Rule};
///
/// let ann: ContactId = "0190a1b2-0000-7000-8000-00000000000a".parse()?;
/// let bo: ContactId = "0190a1b2-0000-7000-8000-00000000000b".parse()?;
/// let both = Mentions::new(vec![ann, bo])?;
/// assert_eq!(both.added_since(&Mentions::new(vec![ann])?), vec![bo]);
/// assert_eq!(
///     Mentions::new(vec![ann, ann]),
///     Err(DomainError::breaks(Field::Mentions, Rule::DuplicateMention))
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Mentions(Vec<ContactId>);

impl Mentions {
    /// Mentions of `contacts`.
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::Mentions`]: with
    /// [`Rule::TooManyMentions`] for more than [`MAX_MENTIONS`], with
    /// [`Rule::DuplicateMention`] when a contact comes twice.
    pub fn new(contacts: Vec<ContactId>) -> Result<Self, DomainError> {
        if contacts.len() > MAX_MENTIONS {
            return Err(DomainError::breaks(
                Field::Mentions,
                Rule::TooManyMentions { max: MAX_MENTIONS },
            ));
        }
        if has_repeats(contacts.clone()) {
            return Err(DomainError::breaks(Field::Mentions, Rule::DuplicateMention));
        }
        Ok(Self(contacts))
    }

    /// No one.
    pub fn none() -> Self {
        Self::default()
    }

    /// The contacts, in the order given.
    pub fn contacts(&self) -> &[ContactId] {
        &self.0
    }

    /// Whether no one is mentioned.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `contact` is mentioned.
    pub fn includes(&self, contact: ContactId) -> bool {
        self.0.contains(&contact)
    }

    /// The contacts mentioned here and not in `earlier`, in this order:
    /// whom an edit newly mentions.
    pub fn added_since(&self, earlier: &Mentions) -> Vec<ContactId> {
        self.0
            .iter()
            .copied()
            .filter(|c| !earlier.includes(*c))
            .collect()
    }

    /// The mentioned contacts who are not in `members` (those a message of
    /// a conversation with these members may not mention).
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::Mentions`] with
    /// [`Rule::NotConversationMember`] when one is not a member.
    pub fn check_members(&self, members: &[ContactId]) -> Result<(), DomainError> {
        if self.0.iter().all(|c| members.contains(c)) {
            Ok(())
        } else {
            Err(DomainError::breaks(
                Field::Mentions,
                Rule::NotConversationMember,
            ))
        }
    }
}

/// The message a reply quotes, as it reads now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Quote {
    /// The quoted message exists.
    Message(QuotedMessage),
    /// The quoted message was deleted: only its id is left, never its text.
    Deleted(MessageId),
}

impl Quote {
    /// The quoted message's id.
    pub fn id(&self) -> MessageId {
        match self {
            Self::Message(m) => m.id,
            Self::Deleted(id) => *id,
        }
    }
}

/// A quoted message that still exists: what a reply shows of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotedMessage {
    /// Its id.
    pub id: MessageId,
    /// Its sender.
    pub sender: ContactId,
    /// Its sender's username.
    pub sender_username: Username,
    /// Its text now ([`MessageText::none`] for a message that is only its
    /// attachments).
    pub text: MessageText,
}

impl QuotedMessage {
    /// What a reply to `message` quotes of it.
    pub fn of(message: &Message) -> Self {
        Self {
            id: message.id(),
            sender: message.sender().id(),
            sender_username: message.sender().username().clone(),
            text: message.text().clone(),
        }
    }
}

/// An earlier text of an edited message, replaced at `edited_at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageEdit {
    /// The edit's own id (what pages of a message's edits are cursored by).
    pub id: EditId,
    /// The message edited.
    pub message_id: MessageId,
    /// The text the message had until the edit.
    pub text: MessageText,
    /// When the edit replaced this text.
    pub edited_at: Timestamp,
}

impl Message {
    /// Whether a new message of `conversation` may quote this one: only a
    /// message of the same conversation.
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::ReplyTo`] with
    /// [`Rule::OutsideConversation`].
    pub fn check_quotable_in(&self, conversation: ConversationId) -> Result<(), DomainError> {
        if self.conversation_id() == conversation {
            Ok(())
        } else {
            Err(DomainError::breaks(
                Field::ReplyTo,
                Rule::OutsideConversation,
            ))
        }
    }

    /// Whether a new message of `conversation` may reply in this one's
    /// thread: only a message of the same conversation that is not itself
    /// a thread reply (threads are one level deep).
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::Parent`] with
    /// [`Rule::OutsideConversation`] or [`Rule::ThreadReply`].
    ///
    /// # Example
    ///
    /// ```
    /// # use confab_domain::*;
    /// # let now = Timestamp::from_secs(1_700_000_000);
    /// # let alice = Contact::new(ContactParts {
    /// #     id: "0190a1b2-0000-7000-8000-00000000000a".parse()?,
    /// #     username: Username::new("alice".into())?,
    /// #     phone_number: PhoneNumber::new("+15550100".into())?,
    /// #     avatar_url: AvatarUrl::none(),
    /// #     last_active_at: now,
    /// #     created_at: now,
    /// # })?;
    /// let chat: ConversationId = "0190a1b2-0000-7000-8000-0000000000c0".parse()?;
    /// let root = MessageParts::new(
    ///     "0190a1b2-0000-7000-8000-0000000000d0".parse()?,
    ///     chat,
    ///     alice.clone(),
    ///     MessageText::new("lunch?".into())?,
    ///     now,
    /// );
    /// let reply = MessageParts {
    ///     id: "0190a1b2-0000-7000-8000-0000000000d1".parse()?,
    ///     parent_id: Some(root.id),
    ///     ..root.clone()
    /// };
    /// let (root, reply) = (Message::new(root)?, Message::new(reply)?);
    /// assert!(root.check_thread_parent_in(chat).is_ok());
    /// assert_eq!(
    ///     reply.check_thread_parent_in(chat),
    ///     Err(DomainError::breaks(Field::Parent, Rule::ThreadReply))
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_thread_parent_in(&self, conversation: ConversationId) -> Result<(), DomainError> {
        if self.conversation_id() != conversation {
            return Err(DomainError::breaks(
                Field::Parent,
                Rule::OutsideConversation,
            ));
        }
        if self.parent_id().is_some() {
            return Err(DomainError::breaks(Field::Parent, Rule::ThreadReply));
        }
        Ok(())
    }
}

/// The mentioned contacts whose unread mention count a change from
/// `earlier` to `now` mentions of a message sent by `sender` moves: the
/// newly mentioned gain one, the no longer mentioned lose one. The sender
/// never counts their own message.
pub fn mention_changes(
    sender: ContactId,
    earlier: &Mentions,
    now: &Mentions,
) -> (Vec<ContactId>, Vec<ContactId>) {
    let gained = now
        .added_since(earlier)
        .into_iter()
        .filter(|c| *c != sender)
        .collect();
    let lost = earlier
        .added_since(now)
        .into_iter()
        .filter(|c| *c != sender)
        .collect();
    (gained, lost)
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn c(n: u128) -> ContactId {
        ContactId::from_uuid(Uuid::from_u128(n))
    }

    #[test]
    fn mentions_are_bounded_and_distinct() {
        let fifty: Vec<ContactId> = (1..=50).map(c).collect();
        assert!(Mentions::new(fifty.clone()).is_ok());
        let mut fifty_one = fifty;
        fifty_one.push(c(51));
        assert_eq!(
            Mentions::new(fifty_one),
            Err(DomainError::breaks(
                Field::Mentions,
                Rule::TooManyMentions { max: 50 }
            ))
        );
        assert!(Mentions::new(vec![c(1), c(2), c(1)]).is_err());
        assert!(Mentions::none().is_empty());
    }

    #[test]
    fn only_members_may_be_mentioned() {
        let m = Mentions::new(vec![c(1), c(2)]).expect("valid");
        assert!(m.check_members(&[c(2), c(1), c(3)]).is_ok());
        assert_eq!(
            m.check_members(&[c(1)]),
            Err(DomainError::breaks(
                Field::Mentions,
                Rule::NotConversationMember
            ))
        );
    }

    #[test]
    fn an_edit_counts_the_newly_mentioned_and_uncounts_the_dropped() {
        let before = Mentions::new(vec![c(1), c(2)]).expect("valid");
        let after = Mentions::new(vec![c(2), c(3), c(9)]).expect("valid");
        // The sender (9) mentioning themself counts for no one.
        assert_eq!(
            mention_changes(c(9), &before, &after),
            (vec![c(3)], vec![c(1)])
        );
        assert_eq!(mention_changes(c(9), &after, &after), (vec![], vec![]));
    }
}
