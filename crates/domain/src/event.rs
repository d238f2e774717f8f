//! Events: the facts a change makes, and who may learn of each (API.md
//! section 11). A use case that changes state builds its events here; the
//! store writes them in the change's own transaction; delivery (streams,
//! webhooks) happens after commit and decides nothing.

use std::fmt;
use std::str::FromStr;

use uuid::Uuid;

use crate::{AttachmentId, ContactId, ConversationId, GroupId, MessageId, Timestamp};

/// Names one change: every recipient and every webhook see the same id for
/// it. Time-ordered (UUIDv7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(Uuid);

impl EventId {
    pub const fn from_uuid(id: Uuid) -> Self {
        Self(id)
    }
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
    type Err = ();
    /// Only the canonical form (36 chars, lowercase, hyphenated).
    fn from_str(s: &str) -> Result<Self, ()> {
        if s.len() != 36 || s.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(());
        }
        Uuid::parse_str(s).map(Self).map_err(|_| ())
    }
}

/// What happened, to what kind of object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventType {
    ContactCreated,
    ContactUpdated,
    ConversationCreated,
    ConversationUpdated,
    ConversationDeleted,
    MessageCreated,
    MessageUpdated,
    MessageDeleted,
    GroupCreated,
    GroupUpdated,
    GroupDeleted,
    AttachmentCreated,
}

impl EventType {
    pub const ALL: [EventType; 12] = [
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
        }
    }

    /// Whether the payload is only the object's id (the object is gone).
    pub const fn is_deletion(self) -> bool {
        matches!(
            self,
            Self::ConversationDeleted | Self::MessageDeleted | Self::GroupDeleted
        )
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EventType {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        Self::ALL.into_iter().find(|t| t.name() == s).ok_or(())
    }
}

/// The object an event is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Subject {
    Contact(ContactId),
    Conversation(ConversationId),
    Message(MessageId),
    Group(GroupId),
    Attachment(AttachmentId),
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
        group: GroupId,
        also: Vec<ContactId>,
    },
    /// The contact and everyone sharing a conversation with them (direct,
    /// or through a group that has a conversation).
    ContactCircle(ContactId),
}

/// One event a change makes. Its payload is the subject as each recipient
/// would `GET` it after the change (`{"id"}` for a deletion); the store
/// renders it from what it wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub id: EventId,
    pub kind: EventType,
    pub subject: Subject,
    pub audience: Audience,
    /// Who made the change; webhooks get the payload as the actor sees it.
    pub actor: ContactId,
    pub at: Timestamp,
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
