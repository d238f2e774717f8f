//! Events: the facts a change makes, and who may learn of each (docs/api.md
//! "Listen for events"). A use case that changes state builds its events here; the
//! store writes them in the change's own transaction; delivery (streams,
//! webhooks) happens after commit and decides nothing.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;
use uuid::Uuid;

use crate::ids::parse_canonical;
use crate::ids::ReportId;
use crate::ParseIdError;
use crate::{AttachmentId, ContactId, ConversationId, GroupId, MessageId, Timestamp};

// Which change makes which events, for whom.
mod changes;
pub use changes::{
    attachment_changed, contact_created, contact_updated, conversation_created,
    conversation_deleted, conversation_opened, conversation_updated, group_created, group_deleted,
    group_updated, message_deleted, message_sent, message_updated, report_created,
};

/// Names one change: every recipient and every webhook see the same id for
/// it. Time-ordered (UUIDv7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(Uuid);

impl EventId {
    /// Wraps a UUID: the caller (the id generator, a store reading its
    /// rows) vouches that it names an event.
    pub const fn from_uuid(id: Uuid) -> Self {
        Self(id)
    }
    /// The UUID inside, for adapters that store or send it.
    pub const fn as_uuid(&self) -> &Uuid {
        &self.0
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0.hyphenated(), f)
    }
}

impl FromStr for EventId {
    type Err = ParseIdError;
    /// Only the canonical form (36 chars, lowercase, hyphenated), as for
    /// every other id.
    fn from_str(s: &str) -> Result<Self, ParseIdError> {
        parse_canonical(s).map(Self)
    }
}

/// What happened, to what kind of object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventType {
    /// `contact.created`: a contact was created.
    ContactCreated,
    /// `contact.updated`: a contact's profile changed.
    ContactUpdated,
    /// `conversation.created`: a conversation was created.
    ConversationCreated,
    /// `conversation.updated`: a member's own state or the shared pinned
    /// message changed, or a member opened it.
    ConversationUpdated,
    /// `conversation.deleted`: a conversation is gone.
    ConversationDeleted,
    /// `message.created`: a message was sent.
    MessageCreated,
    /// `message.updated`: a message's text, reactions, attachments or read
    /// mark changed.
    MessageUpdated,
    /// `message.deleted`: a message is gone.
    MessageDeleted,
    /// `group.created`: a group was created.
    GroupCreated,
    /// `group.updated`: a group's details or members changed.
    GroupUpdated,
    /// `group.deleted`: a group is gone.
    GroupDeleted,
    /// `attachment.created`: a file was uploaded, or an attachment was
    /// added to a message.
    AttachmentCreated,
    /// `attachment.updated`: an attachment was renamed.
    AttachmentUpdated,
    /// `attachment.deleted`: an attachment is gone (deleted, or an upload
    /// never attached expired).
    AttachmentDeleted,
    /// `report.created`: a contact reported a message or a contact (for
    /// the operator: webhooks only).
    ReportCreated,
}

impl EventType {
    /// Every event type, in a fixed order: what a subscription to "every
    /// type" means, and what names are parsed against.
    ///
    /// ```
    /// use confab_domain::EventType;
    ///
    /// for t in EventType::ALL {
    ///     assert_eq!(t.name().parse::<EventType>(), Ok(t));
    /// }
    /// assert_eq!("message.created".parse(), Ok(EventType::MessageCreated));
    /// assert!("Message.Created".parse::<EventType>().is_err());
    /// ```
    pub const ALL: [EventType; 15] = [
        Self::ContactCreated,
        Self::ContactUpdated,
        Self::ConversationCreated,
        Self::ConversationUpdated,
        Self::ConversationDeleted,
        Self::MessageCreated,
        Self::MessageUpdated,
        Self::MessageDeleted,
        Self::GroupCreated,
        Self::GroupUpdated,
        Self::GroupDeleted,
        Self::AttachmentCreated,
        Self::AttachmentUpdated,
        Self::AttachmentDeleted,
        Self::ReportCreated,
    ];

    /// The event's name, `<object>.<change>`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::ContactCreated => "contact.created",
            Self::ContactUpdated => "contact.updated",
            Self::ConversationCreated => "conversation.created",
            Self::ConversationUpdated => "conversation.updated",
            Self::ConversationDeleted => "conversation.deleted",
            Self::MessageCreated => "message.created",
            Self::MessageUpdated => "message.updated",
            Self::MessageDeleted => "message.deleted",
            Self::GroupCreated => "group.created",
            Self::GroupUpdated => "group.updated",
            Self::GroupDeleted => "group.deleted",
            Self::AttachmentCreated => "attachment.created",
            Self::AttachmentUpdated => "attachment.updated",
            Self::AttachmentDeleted => "attachment.deleted",
            Self::ReportCreated => "report.created",
        }
    }

    /// Whether the payload is only the object's id (the object is gone).
    pub const fn is_deletion(self) -> bool {
        matches!(
            self,
            Self::ConversationDeleted
                | Self::MessageDeleted
                | Self::GroupDeleted
                | Self::AttachmentDeleted
        )
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a string names no event type: it is not one of the names of
/// [`EventType::ALL`] (`<object>.<change>`, lowercase).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("unknown event type: expected a name such as \"message.created\"")]
pub struct ParseEventTypeError {
    // Private: the error may later say more without breaking callers.
    _private: (),
}

impl FromStr for EventType {
    type Err = ParseEventTypeError;
    /// The exact name [`EventType::name`] gives, nothing else (no other
    /// case, no spaces).
    fn from_str(s: &str) -> Result<Self, ParseEventTypeError> {
        Self::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or(ParseEventTypeError { _private: () })
    }
}

/// The object an event is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Subject {
    /// A contact.
    Contact(ContactId),
    /// A conversation.
    Conversation(ConversationId),
    /// A message.
    Message(MessageId),
    /// A group.
    Group(GroupId),
    /// An attachment.
    Attachment(AttachmentId),
    /// A report.
    Report(ReportId),
    /// Every message of the conversation that the change marked read: one
    /// `message.updated` event each (opening a conversation). Only the
    /// store knows which they are, so it makes one event per message, each
    /// with its own id, for the event's audience.
    MessagesMarkedRead(ConversationId),
}

/// Who receives an event: each contact who can see the object when it
/// changes. The store resolves the audience inside the change's
/// transaction, so it is exactly who could see it at that moment.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Audience {
    /// One contact: a per-member change, or a contact's own creation.
    Contact(ContactId),
    /// Every member of the conversation: both members of a direct one, the
    /// group's current members for a group one. For a deletion, the
    /// members just before it.
    ConversationMembers(ConversationId),
    /// The group's members after the change, and `also` (members the change
    /// removed, who learn that they are out). For a deletion, the members
    /// just before it.
    GroupMembers {
        /// The group whose members receive it.
        group: GroupId,
        /// Contacts who receive it too though no longer members.
        also: Vec<ContactId>,
    },
    /// The contact and everyone sharing a conversation with them (direct,
    /// or through a group that has a conversation).
    ContactCircle(ContactId),
    /// No contact: the operator alone, through webhooks.
    Operator,
}

/// One event a change makes. Its payload is the subject as each recipient
/// would `GET` it after the change (`{"id"}` for a deletion); the store
/// renders it from what it wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The same for every recipient of this event.
    pub id: EventId,
    /// What happened.
    pub kind: EventType,
    /// What it happened to.
    pub subject: Subject,
    /// Who receives it.
    pub audience: Audience,
    /// Who made the change; webhooks get the payload as the actor sees it.
    pub actor: ContactId,
    /// When the change was made.
    pub at: Timestamp,
}

/// Who made a change and when: what every event of the change shares.
///
/// A plain pair (public fields): any contact may act at any time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    /// Who made the change.
    pub actor: ContactId,
    /// When it was made.
    pub at: Timestamp,
}

impl Change {
    /// The change `actor` makes at `at`.
    pub const fn new(actor: ContactId, at: Timestamp) -> Self {
        Self { actor, at }
    }

    fn event(self, id: EventId, kind: EventType, subject: Subject, audience: Audience) -> Event {
        Event {
            id,
            kind,
            subject,
            audience,
            actor: self.actor,
            at: self.at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in EventType::ALL {
            assert_eq!(t.name().parse::<EventType>(), Ok(t));
        }
        assert!("message.exploded".parse::<EventType>().is_err());
        assert!(EventType::MessageDeleted.is_deletion());
        assert!(!EventType::MessageUpdated.is_deletion());
    }
}
