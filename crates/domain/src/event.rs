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

// Which change makes which events, for whom (docs/api.md
// "Events: which change makes which event"). `ids` gives each event its own
// id, in the order of the events returned. A change that changes nothing
// makes no event: the use case does not call these for it, and a store that
// finds nothing to change writes none of them.

/// A message sent: `message.created` alone, for the conversation's members.
/// Its attachments are part of it, and the conversation's `last_active_at`
/// and the members' `unread_count` move with it (clients apply both).
pub fn message_sent(
    change: Change,
    mut ids: impl FnMut() -> EventId,
    message: MessageId,
    conversation: ConversationId,
) -> Vec<Event> {
    vec![change.event(
        ids(),
        EventType::MessageCreated,
        Subject::Message(message),
        Audience::ConversationMembers(conversation),
    )]
}

/// A message changed (text, reactions added or taken back, attachments
/// appended): `message.updated`, then `attachment.created` for each
/// appended attachment, all for the conversation's members.
pub fn message_updated(
    change: Change,
    mut ids: impl FnMut() -> EventId,
    message: MessageId,
    conversation: ConversationId,
    appended: &[AttachmentId],
) -> Vec<Event> {
    let members = Audience::ConversationMembers(conversation);
    let mut events = vec![change.event(
        ids(),
        EventType::MessageUpdated,
        Subject::Message(message),
        members.clone(),
    )];
    events.extend(appended.iter().map(|a| {
        change.event(
            ids(),
            EventType::AttachmentCreated,
            Subject::Attachment(*a),
            members.clone(),
        )
    }));
    events
}

/// An attachment uploaded, renamed or deleted (`kind`): one event for
/// whoever can see it: its conversation's members once it is attached,
/// else its uploader alone. For a deletion, the audience just before it.
pub fn attachment_changed(
    change: Change,
    mut ids: impl FnMut() -> EventId,
    kind: EventType,
    attachment: &crate::Attachment,
) -> Vec<Event> {
    let audience = match attachment.conversation_id {
        Some(c) => Audience::ConversationMembers(c),
        None => Audience::Contact(attachment.uploader),
    };
    vec![change.event(ids(), kind, Subject::Attachment(attachment.id), audience)]
}

/// A message deleted: `message.deleted` (`{"id"}`) for the members it had.
/// A conversation that had it pinned has no pinned message any more:
/// clients apply that from this event.
pub fn message_deleted(
    change: Change,
    mut ids: impl FnMut() -> EventId,
    message: MessageId,
    conversation: ConversationId,
) -> Vec<Event> {
    vec![change.event(
        ids(),
        EventType::MessageDeleted,
        Subject::Message(message),
        Audience::ConversationMembers(conversation),
    )]
}

/// A conversation created: `conversation.created` for its members, each
/// with their own view of it.
pub fn conversation_created(
    change: Change,
    mut ids: impl FnMut() -> EventId,
    conversation: ConversationId,
) -> Vec<Event> {
    vec![change.event(
        ids(),
        EventType::ConversationCreated,
        Subject::Conversation(conversation),
        Audience::ConversationMembers(conversation),
    )]
}

/// A conversation opened by the actor: `conversation.updated` for the
/// opener alone (its `last_opened_at` and `unread_count` are its own), and
/// `message.updated` for the members for each message it marked read (the
/// store makes one event per such message; none when there is none).
pub fn conversation_opened(
    change: Change,
    mut ids: impl FnMut() -> EventId,
    conversation: ConversationId,
) -> Vec<Event> {
    vec![
        change.event(
            ids(),
            EventType::ConversationUpdated,
            Subject::Conversation(conversation),
            Audience::Contact(change.actor),
        ),
        change.event(
            ids(),
            EventType::MessageUpdated,
            Subject::MessagesMarkedRead(conversation),
            Audience::ConversationMembers(conversation),
        ),
    ]
}

/// A conversation changed by the actor: `conversation.updated` for the
/// actor alone when only its own state changed (pin, mute, archive), for
/// every member when the shared pinned message changed (a direct
/// conversation's two members each with their own view; a group's with
/// the shared attributes alone, the actor with their own view too, so that
/// it costs the same whatever the group's size). A change that changes
/// nothing makes no event: the use case does not call this for it.
pub fn conversation_updated(
    change: Change,
    mut ids: impl FnMut() -> EventId,
    conversation: ConversationId,
    shared_state_changed: bool,
) -> Vec<Event> {
    let audience = if shared_state_changed {
        Audience::ConversationMembers(conversation)
    } else {
        Audience::Contact(change.actor)
    };
    vec![change.event(
        ids(),
        EventType::ConversationUpdated,
        Subject::Conversation(conversation),
        audience,
    )]
}

/// A conversation deleted: `conversation.deleted` (`{"id"}`) for the
/// members it had. Its messages go with it without events of their own.
pub fn conversation_deleted(
    change: Change,
    mut ids: impl FnMut() -> EventId,
    conversation: ConversationId,
) -> Vec<Event> {
    vec![change.event(
        ids(),
        EventType::ConversationDeleted,
        Subject::Conversation(conversation),
        Audience::ConversationMembers(conversation),
    )]
}

/// A group created: `group.created` for its members.
pub fn group_created(
    change: Change,
    mut ids: impl FnMut() -> EventId,
    group: GroupId,
) -> Vec<Event> {
    vec![change.event(
        ids(),
        EventType::GroupCreated,
        Subject::Group(group),
        Audience::GroupMembers {
            group,
            also: Vec::new(),
        },
    )]
}

/// A group changed: `group.updated` for its members after the change and
/// for those it `removed` (who learn that they are out; the store keeps
/// only those who really were members).
pub fn group_updated(
    change: Change,
    mut ids: impl FnMut() -> EventId,
    group: GroupId,
    removed: &[ContactId],
) -> Vec<Event> {
    let mut also: Vec<ContactId> = Vec::with_capacity(removed.len());
    for id in removed {
        if !also.contains(id) {
            also.push(*id);
        }
    }
    vec![change.event(
        ids(),
        EventType::GroupUpdated,
        Subject::Group(group),
        Audience::GroupMembers { group, also },
    )]
}

/// A group deleted: `group.deleted` (`{"id"}`) for the members it had. Its
/// conversations go with it without events of their own.
pub fn group_deleted(
    change: Change,
    mut ids: impl FnMut() -> EventId,
    group: GroupId,
) -> Vec<Event> {
    vec![change.event(
        ids(),
        EventType::GroupDeleted,
        Subject::Group(group),
        Audience::GroupMembers {
            group,
            also: Vec::new(),
        },
    )]
}

/// A contact created (by the operator): `contact.created` for the contact
/// itself, which is also the actor (there is no other).
pub fn contact_created(
    at: Timestamp,
    mut ids: impl FnMut() -> EventId,
    contact: ContactId,
) -> Vec<Event> {
    vec![Change::new(contact, at).event(
        ids(),
        EventType::ContactCreated,
        Subject::Contact(contact),
        Audience::Contact(contact),
    )]
}

/// A contact's profile changed: `contact.updated` for the contact and
/// everyone sharing a conversation with it. Recording its activity
/// (`last_active_at`) makes no event: that would be one per request.
pub fn contact_updated(
    change: Change,
    mut ids: impl FnMut() -> EventId,
    contact: ContactId,
) -> Vec<Event> {
    vec![change.event(
        ids(),
        EventType::ContactUpdated,
        Subject::Contact(contact),
        Audience::ContactCircle(contact),
    )]
}

/// A report filed: `report.created` for the operator alone (webhooks);
/// no contact's stream or event list shows it.
pub fn report_created(
    change: Change,
    mut ids: impl FnMut() -> EventId,
    report: ReportId,
) -> Vec<Event> {
    vec![change.event(
        ids(),
        EventType::ReportCreated,
        Subject::Report(report),
        Audience::Operator,
    )]
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

    fn ids() -> impl FnMut() -> EventId {
        let mut n = 0;
        move || {
            n += 1;
            EventId::from_uuid(Uuid::from_u128(n))
        }
    }

    fn alice() -> ContactId {
        ContactId::from_uuid(Uuid::from_u128(0xA))
    }

    fn change() -> Change {
        Change::new(alice(), Timestamp::from_secs(1_700_000_000))
    }

    fn conv() -> ConversationId {
        ConversationId::from_uuid(Uuid::from_u128(0xC))
    }

    fn kinds(events: &[Event]) -> Vec<(EventType, Subject, Audience)> {
        events
            .iter()
            .map(|e| (e.kind, e.subject, e.audience.clone()))
            .collect()
    }

    #[test]
    fn a_message_sent_is_message_created_alone_for_the_members() {
        let m = MessageId::from_uuid(Uuid::from_u128(0x1));
        let events = message_sent(change(), ids(), m, conv());
        assert_eq!(
            kinds(&events),
            [(
                EventType::MessageCreated,
                Subject::Message(m),
                Audience::ConversationMembers(conv())
            )]
        );
        assert_eq!(events[0].actor, alice());
        assert_eq!(events[0].at, Timestamp::from_secs(1_700_000_000));
    }

    #[test]
    fn a_message_updated_with_attachments_announces_each_with_its_own_id() {
        let m = MessageId::from_uuid(Uuid::from_u128(0x1));
        let a = [
            AttachmentId::from_uuid(Uuid::from_u128(0x2)),
            AttachmentId::from_uuid(Uuid::from_u128(0x3)),
        ];
        let events = message_updated(change(), ids(), m, conv(), &a);
        let members = Audience::ConversationMembers(conv());
        assert_eq!(
            kinds(&events),
            [
                (
                    EventType::MessageUpdated,
                    Subject::Message(m),
                    members.clone()
                ),
                (
                    EventType::AttachmentCreated,
                    Subject::Attachment(a[0]),
                    members.clone()
                ),
                (
                    EventType::AttachmentCreated,
                    Subject::Attachment(a[1]),
                    members
                ),
            ]
        );
        let ids: Vec<EventId> = events.iter().map(|e| e.id).collect();
        assert_eq!(ids.len(), 3);
        assert!(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
    }

    #[test]
    fn opening_is_for_the_opener_and_read_marks_for_the_members() {
        let events = conversation_opened(change(), ids(), conv());
        assert_eq!(
            kinds(&events),
            [
                (
                    EventType::ConversationUpdated,
                    Subject::Conversation(conv()),
                    Audience::Contact(alice())
                ),
                (
                    EventType::MessageUpdated,
                    Subject::MessagesMarkedRead(conv()),
                    Audience::ConversationMembers(conv())
                ),
            ]
        );
    }

    #[test]
    fn a_per_member_change_is_for_the_actor_and_a_shared_one_for_every_member() {
        let own = conversation_updated(change(), ids(), conv(), false);
        assert_eq!(own[0].audience, Audience::Contact(alice()));
        let shared = conversation_updated(change(), ids(), conv(), true);
        assert_eq!(shared[0].audience, Audience::ConversationMembers(conv()));
        assert_eq!(shared[0].kind, EventType::ConversationUpdated);
    }

    #[test]
    fn deletions_and_creations_name_their_subject() {
        let m = MessageId::from_uuid(Uuid::from_u128(0x1));
        assert_eq!(
            kinds(&message_deleted(change(), ids(), m, conv())),
            [(
                EventType::MessageDeleted,
                Subject::Message(m),
                Audience::ConversationMembers(conv())
            )]
        );
        assert_eq!(
            kinds(&conversation_created(change(), ids(), conv()))[0].0,
            EventType::ConversationCreated
        );
        assert_eq!(
            kinds(&conversation_deleted(change(), ids(), conv()))[0].0,
            EventType::ConversationDeleted
        );
    }

    #[test]
    fn a_group_update_also_reaches_the_removed_once_each() {
        let g = GroupId::from_uuid(Uuid::from_u128(0x6));
        let bob = ContactId::from_uuid(Uuid::from_u128(0xB));
        let events = group_updated(change(), ids(), g, &[bob, bob]);
        assert_eq!(
            kinds(&events),
            [(
                EventType::GroupUpdated,
                Subject::Group(g),
                Audience::GroupMembers {
                    group: g,
                    also: vec![bob]
                }
            )]
        );
        for (events, kind) in [
            (group_created(change(), ids(), g), EventType::GroupCreated),
            (group_deleted(change(), ids(), g), EventType::GroupDeleted),
        ] {
            assert_eq!(
                kinds(&events),
                [(
                    kind,
                    Subject::Group(g),
                    Audience::GroupMembers {
                        group: g,
                        also: vec![]
                    }
                )]
            );
        }
    }

    #[test]
    fn contacts_learn_of_themselves_and_their_circle_of_profile_changes() {
        let bob = ContactId::from_uuid(Uuid::from_u128(0xB));
        let created = contact_created(Timestamp::from_secs(1), ids(), bob);
        assert_eq!(
            kinds(&created),
            [(
                EventType::ContactCreated,
                Subject::Contact(bob),
                Audience::Contact(bob)
            )]
        );
        assert_eq!(created[0].actor, bob, "a new contact is its own actor");
        assert_eq!(
            kinds(&contact_updated(change(), ids(), alice())),
            [(
                EventType::ContactUpdated,
                Subject::Contact(alice()),
                Audience::ContactCircle(alice())
            )]
        );
    }
}
