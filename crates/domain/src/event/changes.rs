//! Which change makes which events, for whom (docs/api.md "Events: which
//! change makes which event"). `ids` gives each event its own id, in the
//! order of the events returned. A change that changes nothing makes no
//! event: the use case does not call these for it, and a store that finds
//! nothing to change writes none of them.
//!
//! Most changes make one event: the `single_events!` table below names,
//! for each, its kind, subject and audience, and `one` builds it.

use super::{Audience, Change, Event, EventId, EventType, Subject};
use crate::{AttachmentId, ContactId, ConversationId, GroupId, MessageId, ReportId, Timestamp};

/// The single event of `change`: `kind` about `subject`, for `audience`,
/// with the next of `ids`.
fn one(
    change: Change,
    mut ids: impl FnMut() -> EventId,
    (kind, subject, audience): (EventType, Subject, Audience),
) -> Vec<Event> {
    vec![change.event(ids(), kind, subject, audience)]
}

/// A group's members, no one else.
fn group_members(group: GroupId) -> Audience {
    Audience::GroupMembers {
        group,
        also: Vec::new(),
    }
}

use Audience::ConversationMembers as Members;
use EventType as T;

/// Defines each change that makes one event: `name(args) => kind, subject,
/// audience;` becomes `pub fn name(change, ids, args) -> Vec<Event>`.
macro_rules! single_events {
    ($($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),*) => $kind:ident, $subject:expr, $audience:expr;)*) => {$(
        $(#[$doc])*
        pub fn $name(change: Change, ids: impl FnMut() -> EventId, $($arg: $ty),*) -> Vec<Event> {
            one(change, ids, (EventType::$kind, $subject, $audience))
        }
    )*};
}

// The changes that make one event.
single_events! {
    /// A message sent: `message.created` alone, for the conversation's members.
    /// Its attachments are part of it, and the conversation's `last_active_at`
    /// and the members' `unread_count` move with it (clients apply both).
    message_sent(message: MessageId, conversation: ConversationId)
        => MessageCreated, Subject::Message(message), Members(conversation);

    /// A message deleted: `message.deleted` (`{"id"}`) for the members it had.
    /// A conversation that had it pinned has no pinned message any more:
    /// clients apply that from this event.
    message_deleted(message: MessageId, conversation: ConversationId)
        => MessageDeleted, Subject::Message(message), Members(conversation);

    /// A conversation created: `conversation.created` for its members, each
    /// with their own view of it.
    conversation_created(conversation: ConversationId)
        => ConversationCreated, Subject::Conversation(conversation), Members(conversation);

    /// A conversation deleted: `conversation.deleted` (`{"id"}`) for the
    /// members it had. Its messages go with it without events of their own.
    conversation_deleted(conversation: ConversationId)
        => ConversationDeleted, Subject::Conversation(conversation), Members(conversation);

    /// A group created: `group.created` for its members.
    group_created(group: GroupId)
        => GroupCreated, Subject::Group(group), group_members(group);

    /// A group deleted: `group.deleted` (`{"id"}`) for the members it had. Its
    /// conversations go with it without events of their own.
    group_deleted(group: GroupId)
        => GroupDeleted, Subject::Group(group), group_members(group);

    /// A contact's profile changed: `contact.updated` for the contact and
    /// everyone sharing a conversation with it. Recording its activity
    /// (`last_active_at`) makes no event: that would be one per request.
    contact_updated(contact: ContactId)
        => ContactUpdated, Subject::Contact(contact), Audience::ContactCircle(contact);

    /// A report filed: `report.created` for the operator alone (webhooks);
    /// no contact's stream or event list shows it.
    report_created(report: ReportId)
        => ReportCreated, Subject::Report(report), Audience::Operator;
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
    let members = Members(conversation);
    let mut events = vec![change.event(
        ids(),
        T::MessageUpdated,
        Subject::Message(message),
        members.clone(),
    )];
    events.extend(appended.iter().map(|a| {
        change.event(
            ids(),
            T::AttachmentCreated,
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
    ids: impl FnMut() -> EventId,
    kind: EventType,
    attachment: &crate::Attachment,
) -> Vec<Event> {
    let audience = match attachment.conversation_id {
        Some(c) => Members(c),
        None => Audience::Contact(attachment.uploader),
    };
    one(
        change,
        ids,
        (kind, Subject::Attachment(attachment.id), audience),
    )
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
            T::ConversationUpdated,
            Subject::Conversation(conversation),
            Audience::Contact(change.actor),
        ),
        change.event(
            ids(),
            T::MessageUpdated,
            Subject::MessagesMarkedRead(conversation),
            Members(conversation),
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
    ids: impl FnMut() -> EventId,
    conversation: ConversationId,
    shared_state_changed: bool,
) -> Vec<Event> {
    let audience = if shared_state_changed {
        Members(conversation)
    } else {
        Audience::Contact(change.actor)
    };
    let subject = Subject::Conversation(conversation);
    one(change, ids, (T::ConversationUpdated, subject, audience))
}

/// A group changed: `group.updated` for its members after the change and
/// for those it `removed` (who learn that they are out; the store keeps
/// only those who really were members).
pub fn group_updated(
    change: Change,
    ids: impl FnMut() -> EventId,
    group: GroupId,
    removed: &[ContactId],
) -> Vec<Event> {
    let mut also: Vec<ContactId> = Vec::with_capacity(removed.len());
    for id in removed {
        if !also.contains(id) {
            also.push(*id);
        }
    }
    let audience = Audience::GroupMembers { group, also };
    one(
        change,
        ids,
        (T::GroupUpdated, Subject::Group(group), audience),
    )
}

/// A contact created (by the operator): `contact.created` for the contact
/// itself, which is also the actor (there is no other).
pub fn contact_created(
    at: Timestamp,
    ids: impl FnMut() -> EventId,
    contact: ContactId,
) -> Vec<Event> {
    let made = (
        T::ContactCreated,
        Subject::Contact(contact),
        Audience::Contact(contact),
    );
    one(Change::new(contact, at), ids, made)
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

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

    type Made = (EventType, Subject, Audience);

    fn kinds(events: &[Event]) -> Vec<Made> {
        events
            .iter()
            .map(|e| (e.kind, e.subject, e.audience.clone()))
            .collect()
    }

    #[test]
    fn each_single_event_change_names_its_kind_subject_and_audience() {
        let m = MessageId::from_uuid(Uuid::from_u128(0x1));
        let g = GroupId::from_uuid(Uuid::from_u128(0x6));
        let r = ReportId::from_uuid(Uuid::from_u128(0x7));
        let c = Subject::Conversation(conv());
        let cases: [(Vec<Event>, Made); 9] = [
            (
                message_sent(change(), ids(), m, conv()),
                (T::MessageCreated, Subject::Message(m), Members(conv())),
            ),
            (
                message_deleted(change(), ids(), m, conv()),
                (T::MessageDeleted, Subject::Message(m), Members(conv())),
            ),
            (
                conversation_created(change(), ids(), conv()),
                (T::ConversationCreated, c, Members(conv())),
            ),
            (
                conversation_deleted(change(), ids(), conv()),
                (T::ConversationDeleted, c, Members(conv())),
            ),
            (
                conversation_updated(change(), ids(), conv(), false),
                (T::ConversationUpdated, c, Audience::Contact(alice())),
            ),
            (
                conversation_updated(change(), ids(), conv(), true),
                (T::ConversationUpdated, c, Members(conv())),
            ),
            (
                group_created(change(), ids(), g),
                (T::GroupCreated, Subject::Group(g), group_members(g)),
            ),
            (
                group_deleted(change(), ids(), g),
                (T::GroupDeleted, Subject::Group(g), group_members(g)),
            ),
            (
                report_created(change(), ids(), r),
                (T::ReportCreated, Subject::Report(r), Audience::Operator),
            ),
        ];
        for (events, made) in cases {
            assert_eq!(kinds(&events), [made]);
            assert_eq!(events[0].actor, alice());
            assert_eq!(events[0].at, Timestamp::from_secs(1_700_000_000));
        }
    }

    #[test]
    fn a_message_updated_with_attachments_announces_each_with_its_own_id() {
        let m = MessageId::from_uuid(Uuid::from_u128(0x1));
        let a = [
            AttachmentId::from_uuid(Uuid::from_u128(0x2)),
            AttachmentId::from_uuid(Uuid::from_u128(0x3)),
        ];
        let events = message_updated(change(), ids(), m, conv(), &a);
        assert_eq!(
            kinds(&events),
            [
                (T::MessageUpdated, Subject::Message(m), Members(conv())),
                (
                    T::AttachmentCreated,
                    Subject::Attachment(a[0]),
                    Members(conv())
                ),
                (
                    T::AttachmentCreated,
                    Subject::Attachment(a[1]),
                    Members(conv())
                ),
            ]
        );
        let ids: Vec<EventId> = events.iter().map(|e| e.id).collect();
        assert!(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
    }

    #[test]
    fn opening_is_for_the_opener_and_read_marks_for_the_members() {
        let events = conversation_opened(change(), ids(), conv());
        assert_eq!(
            kinds(&events),
            [
                (
                    T::ConversationUpdated,
                    Subject::Conversation(conv()),
                    Audience::Contact(alice())
                ),
                (
                    T::MessageUpdated,
                    Subject::MessagesMarkedRead(conv()),
                    Members(conv())
                ),
            ]
        );
    }

    #[test]
    fn a_group_update_also_reaches_the_removed_once_each() {
        let g = GroupId::from_uuid(Uuid::from_u128(0x6));
        let bob = ContactId::from_uuid(Uuid::from_u128(0xB));
        let events = group_updated(change(), ids(), g, &[bob, bob]);
        let audience = Audience::GroupMembers {
            group: g,
            also: vec![bob],
        };
        assert_eq!(
            kinds(&events),
            [(T::GroupUpdated, Subject::Group(g), audience)]
        );
    }

    #[test]
    fn contacts_learn_of_themselves_and_their_circle_of_profile_changes() {
        let bob = ContactId::from_uuid(Uuid::from_u128(0xB));
        let created = contact_created(Timestamp::from_secs(1), ids(), bob);
        assert_eq!(
            kinds(&created),
            [(
                T::ContactCreated,
                Subject::Contact(bob),
                Audience::Contact(bob)
            )]
        );
        assert_eq!(created[0].actor, bob, "a new contact is its own actor");
        assert_eq!(
            kinds(&contact_updated(change(), ids(), alice())),
            [(
                T::ContactUpdated,
                Subject::Contact(alice()),
                Audience::ContactCircle(alice())
            )]
        );
    }
}
