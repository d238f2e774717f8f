//! What the outbox writes for each event ([`super`]): its payload,
//! rendered from what the write produced ([`Written`]), and what it is
//! about.

use confab_domain::{
    Attachment, Contact, ConversationView, Event, EventId, EventType, Group, Message, MessageId,
    Report, Subject,
};
use confab_ports::PayloadRenderer;
use uuid::Uuid;

use crate::error::inconsistent;
use crate::id::DbId;
use crate::queries::Result;
use crate::rows::DbKey;

/// What a write produced: its events' payloads are rendered from it.
#[derive(Default)]
pub struct Written<'a> {
    /// The messages written (a message's attachments are found in it).
    pub messages: &'a [Message],
    /// Attachments written on their own (an upload, a rename, a
    /// deletion).
    pub attachments: &'a [Attachment],
    pub group: Option<&'a Group>,
    pub contact: Option<&'a Contact>,
    /// A report filed.
    pub report: Option<&'a Report>,
    /// The conversation as the actor sees it.
    pub view: Option<&'a ConversationView>,
    /// Every member's own view of the conversation, when those differ:
    /// a conversation event then goes to exactly these members, each
    /// with their own payload.
    pub member_views: Option<&'a [ConversationView]>,
    /// A change of a group conversation's shared state: its event's
    /// payload is the conversation's shared attributes alone, read by
    /// the group's members, and the actor gets their own view ([`view`]
    /// (Self::view)) beside it.
    pub shared_only: bool,
}

/// An event's payload.
pub(super) enum Payload {
    /// The same for every recipient of the event's audience.
    Shared(String),
    /// One per recipient; `actor` is the actor's (the event's own).
    /// Only a conversation's own events have these: a deletion's
    /// [`super::scrub`] looks for them there alone.
    Each {
        actor: String,
        each: Vec<(DbId, String)>,
    },
    /// `shared` for the audience, and a recipient of their own beside
    /// it: a group conversation's shared change, for its members, and
    /// the actor's own view (a conversation's own event too).
    SharedAnd { shared: String, own: (DbId, String) },
}

impl Payload {
    /// The event's own payload (the one of its row).
    pub(super) fn actor(&self) -> &str {
        match self {
            Self::Shared(p) | Self::Each { actor: p, .. } | Self::SharedAnd { shared: p, .. } => p,
        }
    }
}

fn subject_uuid(subject: &Subject) -> Uuid {
    match subject {
        Subject::Contact(id) => *id.as_uuid(),
        Subject::Conversation(id) | Subject::MessagesMarkedRead(id) => *id.as_uuid(),
        Subject::Message(id) => *id.as_uuid(),
        Subject::Group(id) => *id.as_uuid(),
        Subject::Attachment(id) => *id.as_uuid(),
        Subject::Report(id) => *id.as_uuid(),
    }
}

/// What an event is about (the columns `subject_id`,
/// `conversation_id` and `message_id`): its subject, and the
/// conversation and message whose content its payload carries, by
/// which a deletion finds it ([`super::scrub`]). A deletion's own event
/// carries no content (`{"id"}`), so it names none and is never
/// scrubbed; nor are contacts' and groups' events.
pub(super) struct About {
    pub(super) subject: DbId,
    pub(super) conversation: Option<DbId>,
    pub(super) message: Option<DbId>,
}

pub(super) fn about(event: &Event, w: &Written<'_>) -> About {
    let subject = subject_uuid(&event.subject).db();
    let (conversation, message) = match event.subject {
        _ if event.kind.is_deletion() => (None, None),
        Subject::Message(id) => match w.messages.iter().find(|m| m.id() == id) {
            Some(m) => (Some(m.conversation_id().db()), Some(id.db())),
            None => (None, None),
        },
        Subject::Attachment(id) => {
            let of = |m: &&Message| m.attachments().iter().any(|a| a.id == id);
            match (
                w.attachments.iter().find(|a| a.id == id),
                w.messages.iter().find(of),
            ) {
                (Some(a), _) => (
                    a.conversation_id.map(|c| c.db()),
                    a.message_id.map(|m| m.db()),
                ),
                (None, Some(m)) => (Some(m.conversation_id().db()), Some(m.id().db())),
                (None, None) => (None, None),
            }
        }
        Subject::Conversation(id) => (Some(id.db()), None),
        Subject::Contact(_)
        | Subject::Group(_)
        | Subject::Report(_)
        | Subject::MessagesMarkedRead(_) => (None, None),
    };
    About {
        subject,
        conversation,
        message,
    }
}

pub(super) fn payload(
    render: &dyn PayloadRenderer,
    event: &Event,
    w: &Written<'_>,
) -> Result<Payload> {
    if event.kind.is_deletion() {
        return Ok(Payload::Shared(
            render.deleted(subject_uuid(&event.subject)),
        ));
    }
    let missing = || {
        inconsistent(format!(
            "the write made no object for its {} event",
            event.kind
        ))
    };
    let shared = match event.subject {
        Subject::Message(id) => render.message(
            w.messages
                .iter()
                .find(|m| m.id() == id)
                .ok_or_else(missing)?,
        ),
        Subject::Attachment(id) => render.attachment(
            w.attachments
                .iter()
                .chain(w.messages.iter().flat_map(|m| m.attachments()))
                .find(|a| a.id == id)
                .ok_or_else(missing)?,
        ),
        Subject::Group(_) => render.group(w.group.ok_or_else(missing)?),
        Subject::Contact(_) => render.contact(w.contact.ok_or_else(missing)?),
        Subject::Report(_) => render.report(w.report.ok_or_else(missing)?),
        Subject::Conversation(_) => {
            let view = w.view.ok_or_else(missing)?;
            if w.shared_only {
                return Ok(Payload::SharedAnd {
                    shared: render.conversation_shared(&view.conversation),
                    own: (view.viewer.db(), render.conversation(view)),
                });
            }
            let actor = render.conversation(view);
            if let Some(views) = w.member_views {
                let each = views
                    .iter()
                    .map(|v| (v.viewer.db(), render.conversation(v)))
                    .collect();
                return Ok(Payload::Each { actor, each });
            }
            actor
        }
        Subject::MessagesMarkedRead(_) => {
            return Err(inconsistent(
                "messages marked read must be expanded by their write".into(),
            ))
        }
    };
    Ok(Payload::Shared(shared))
}

/// `events` with each `Subject::MessagesMarkedRead` event replaced by
/// one `message.updated` per message in `marked`, each with its own
/// new id (none when `marked` is empty).
pub fn expand_marked_read(events: Vec<Event>, marked: &[MessageId]) -> Vec<Event> {
    let mut out = Vec::with_capacity(events.len() + marked.len());
    for e in events {
        if let Subject::MessagesMarkedRead(_) = e.subject {
            out.extend(marked.iter().map(|m| Event {
                id: EventId::from_uuid(Uuid::now_v7()),
                kind: EventType::MessageUpdated,
                subject: Subject::Message(*m),
                ..e.clone()
            }));
        } else {
            out.push(e);
        }
    }
    out
}
