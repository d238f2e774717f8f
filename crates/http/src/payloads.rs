//! Event payloads in the wire format (docs/api.md "Listen for events"): the object exactly
//! as its recipient would `GET` it, written by the same writer as the GET
//! endpoints' answers ([`crate::wire`]; a conversation by its
//! [`ConversationDto`]), so the two cannot drift apart.

use std::sync::{Mutex, PoisonError};

use confab_domain::{
    Attachment, Contact, Conversation, ConversationView, Group, Message, MessageId, Report, Viewer,
};
use confab_service::PayloadRenderer;
use serde::Serialize;
use uuid::Uuid;

use crate::dto::{ConversationDto, SharedConversationDto};
use crate::wire::{self, FileLinks};

/// Renders payloads as the JSON the API answers with, uploads' links made
/// by its [`FileLinks`] (the writing request's). A payload is made once
/// for all its recipients and webhooks, so it shows what anyone may see
/// ([`Viewer::Anyone`]: no phone number).
#[derive(Debug, Clone, Default)]
pub struct WirePayloads {
    links: FileLinks,
}

impl WirePayloads {
    /// Payloads whose uploads' links `links` makes.
    pub fn new(links: FileLinks) -> Self {
        Self { links }
    }
}

/// Written JSON as a payload. Writing plain data cannot fail; if it ever
/// did, `{}` beats a panic inside a write's transaction.
fn payload(json: serde_json::Result<Vec<u8>>) -> String {
    wire::text(json).unwrap_or_else(|| "{}".to_owned())
}

#[derive(Serialize)]
struct Deleted {
    id: String,
}

impl PayloadRenderer for WirePayloads {
    fn contact(&self, contact: &Contact) -> String {
        payload(wire::contact(contact, Viewer::Anyone))
    }

    fn conversation(&self, conversation: &ConversationView) -> String {
        payload(serde_json::to_vec(&ConversationDto::from(conversation)))
    }

    fn conversation_shared(&self, conversation: &Conversation) -> String {
        payload(serde_json::to_vec(&SharedConversationDto::from(
            conversation,
        )))
    }

    fn message(&self, message: &Message) -> String {
        payload(wire::message(message, &self.links, Viewer::Anyone))
    }

    fn group(&self, group: &Group) -> String {
        payload(wire::group(group, Viewer::Anyone))
    }

    fn attachment(&self, attachment: &Attachment) -> String {
        payload(wire::attachment(attachment, &self.links))
    }

    fn deleted(&self, id: Uuid) -> String {
        payload(serde_json::to_vec(&Deleted {
            id: id.hyphenated().to_string(),
        }))
    }

    fn report(&self, report: &Report) -> String {
        payload(wire::report(report, true))
    }
}

/// The payloads of one write that answers with the message it wrote (a
/// send, an edit, a reaction taken back): the message's JSON is written
/// once, for the write's event, and [`RenderedOnce::message_json`] hands
/// the same text to the answer and to the answer kept for an idempotency
/// key. Every other payload is [`WirePayloads`]'. Make one per write.
#[derive(Debug, Default)]
pub struct RenderedOnce {
    /// The message whose JSON was written, and that JSON.
    message: Mutex<Option<(MessageId, String)>>,
    /// Every other payload's writer.
    payloads: WirePayloads,
}

impl RenderedOnce {
    /// A renderer for one write of the request whose links are `links`.
    pub fn new(links: FileLinks) -> Self {
        Self {
            message: Mutex::default(),
            payloads: WirePayloads::new(links),
        }
    }

    /// The JSON of `message`: the text already written for a message with
    /// its id, else written now and kept. A store renders the event of a
    /// write from the message as written, which is what the write returns,
    /// so the text kept is that message's (debug builds check it).
    pub fn message_json(&self, message: &Message) -> String {
        let mut kept = self.message.lock().unwrap_or_else(PoisonError::into_inner);
        match &*kept {
            Some((id, json)) if *id == message.id() => {
                debug_assert_eq!(*json, self.payloads.message(message), "another message");
                json.clone()
            }
            _ => {
                let json = self.payloads.message(message);
                *kept = Some((message.id(), json.clone()));
                json
            }
        }
    }
}

impl RenderedOnce {
    /// The answer to `viewer` with `message`: its event's JSON
    /// ([`RenderedOnce::message_json`], for anyone), with the sender's
    /// phone number where `viewer` may see it (the sender's own answer).
    pub fn answer_json(&self, message: &Message, viewer: Viewer) -> String {
        let json = self.message_json(message);
        match message.sender().phone_number_for(viewer) {
            None => json,
            Some(phone) => {
                let answer = with_sender_phone(&json, phone.as_str());
                debug_assert_eq!(
                    Some(&answer),
                    wire::text(wire::message(message, &self.payloads.links, viewer)).as_ref(),
                    "the answer is the message as its viewer reads it"
                );
                answer
            }
        }
    }
}

/// A message's JSON for anyone with its sender's phone number put in: the
/// first `"phone_number":null` is the sender's (the contact comes before
/// the text, and a username holds no quote that could fake the key).
fn with_sender_phone(json: &str, phone: &str) -> String {
    const SLOT: &str = r#""phone_number":null"#;
    match json.find(SLOT) {
        Some(at) => {
            let quoted = serde_json::to_string(phone).unwrap_or_else(|_| "null".to_owned());
            let mut out = String::with_capacity(json.len() + quoted.len());
            out.push_str(&json[..at]);
            out.push_str(r#""phone_number":"#);
            out.push_str(&quoted);
            out.push_str(&json[at + SLOT.len()..]);
            out
        }
        None => json.to_owned(),
    }
}

impl PayloadRenderer for RenderedOnce {
    fn contact(&self, contact: &Contact) -> String {
        self.payloads.contact(contact)
    }

    fn conversation(&self, conversation: &ConversationView) -> String {
        self.payloads.conversation(conversation)
    }

    fn conversation_shared(&self, conversation: &Conversation) -> String {
        self.payloads.conversation_shared(conversation)
    }

    fn message(&self, message: &Message) -> String {
        self.message_json(message)
    }

    fn group(&self, group: &Group) -> String {
        self.payloads.group(group)
    }

    fn attachment(&self, attachment: &Attachment) -> String {
        self.payloads.attachment(attachment)
    }

    fn deleted(&self, id: Uuid) -> String {
        self.payloads.deleted(id)
    }

    fn report(&self, report: &Report) -> String {
        self.payloads.report(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use confab_domain::{
        AvatarUrl, ContactId, ContactParts, ConversationId, GroupDescription, GroupId, GroupMember,
        GroupName, GroupParts, GroupRole, MessageParts, MessageText, PhoneNumber, Timestamp,
        Username,
    };
    use serde_json::json;

    fn member(n: u128) -> GroupMember {
        GroupMember {
            contact: Contact::new(ContactParts {
                id: ContactId::from_uuid(Uuid::from_u128(n)),
                username: Username::new(format!("u{n}")).expect("valid"),
                phone_number: PhoneNumber::new("+15550100".into()).expect("valid"),
                avatar_url: AvatarUrl::none(),
                last_active_at: Timestamp::from_secs(2),
                created_at: Timestamp::from_secs(1),
            })
            .expect("valid"),
            role: if n == 1 {
                GroupRole::Owner
            } else {
                GroupRole::Member
            },
            joined_at: Timestamp::from_secs(1),
        }
    }

    /// A group of `count` members that carries its first `first`
    /// (joined in reverse id order: the embedded ones are the first to
    /// join, whatever their ids).
    fn group(first: u128, count: u64) -> Group {
        Group::new(GroupParts {
            id: GroupId::from_uuid(Uuid::from_u128(1 << 64)),
            name: GroupName::new("big".into()).expect("valid"),
            description: GroupDescription::empty(),
            avatar_url: AvatarUrl::none(),
            created_by: ContactId::from_uuid(Uuid::from_u128(1)),
            created_at: Timestamp::from_secs(1),
            first_members: (1..=first).rev().map(member).collect(),
            member_count: count,
            owners: vec![ContactId::from_uuid(Uuid::from_u128(1))],
        })
        .expect("valid")
    }

    #[test]
    fn a_group_event_embeds_its_first_100_members_and_counts_them_all() {
        let big = group(100, 2_000);
        let payload = WirePayloads::default().group(&big);
        let v: serde_json::Value = serde_json::from_str(&payload).expect("json");
        assert_eq!(v["member_count"], 2_000);
        let embedded: Vec<&str> = v["contacts"]
            .as_array()
            .expect("contacts")
            .iter()
            .map(|c| c["id"].as_str().expect("id"))
            .collect();
        let first: Vec<String> = big
            .first_members()
            .iter()
            .map(|m| m.contact.id().to_string())
            .collect();
        assert_eq!(embedded, first);
        // The size of a 100-member group's event, not of a 2,000-member one.
        let hundred = WirePayloads::default().group(&group(100, 100)).len();
        assert!(payload.len() <= hundred + 16, "{} bytes", payload.len());

        let small = WirePayloads::default().group(&group(3, 3));
        let v: serde_json::Value = serde_json::from_str(&small).expect("json");
        assert_eq!(v["member_count"], 3);
        assert_eq!(v["contacts"].as_array().map(Vec::len), Some(3));
    }

    #[test]
    fn a_deletion_is_its_id_alone() {
        let id = Uuid::from_u128(7);
        assert_eq!(
            WirePayloads::default().deleted(id),
            r#"{"id":"00000000-0000-0000-0000-000000000007"}"#
        );
    }

    #[test]
    fn a_contact_is_its_wire_object_without_its_phone_number() {
        let c = Contact::new(ContactParts {
            id: ContactId::from_uuid(Uuid::from_u128(1)),
            username: Username::new("alice".into()).expect("valid"),
            phone_number: PhoneNumber::new("+15550100".into()).expect("valid"),
            avatar_url: AvatarUrl::none(),
            last_active_at: Timestamp::from_secs(2),
            created_at: Timestamp::from_secs(1),
        })
        .expect("valid");
        let v: serde_json::Value =
            serde_json::from_str(&WirePayloads::default().contact(&c)).expect("json");
        assert_eq!(
            v,
            json!({"id": "00000000-0000-0000-0000-000000000001", "username": "alice",
                   "phone_number": null, "avatar_url": "", "last_active_at": 2,
                   "created_at": 1})
        );
    }

    fn message(n: u128, text: &str) -> Message {
        Message::new(MessageParts {
            id: MessageId::from_uuid(Uuid::from_u128(n)),
            conversation_id: ConversationId::from_uuid(Uuid::from_u128(9)),
            sender: member(1).contact,
            text: MessageText::new(text.into()).expect("valid"),
            reactions: vec![],
            attachments: vec![],
            read_at: None,
            created_at: Timestamp::from_secs(3),
            updated_at: None,
            reply_to: None,
            parent_id: None,
            reply_count: 0,
            last_reply_at: None,
            mentions: confab_domain::Mentions::none(),
            edited_at: None,
        })
        .expect("valid")
    }

    #[test]
    fn a_write_answers_with_the_json_of_its_event() {
        let once = RenderedOnce::default();
        let sent = message(1, "hi");
        let event = once.message(&sent);
        assert_eq!(event, WirePayloads::default().message(&sent));
        assert_eq!(once.message_json(&sent), event);
        // Another message has JSON of its own.
        let other = message(2, "other");
        assert_eq!(
            once.message_json(&other),
            WirePayloads::default().message(&other)
        );
        // A write without an event (nothing changed) writes it for the
        // answer.
        assert_eq!(
            RenderedOnce::default().message_json(&sent),
            WirePayloads::default().message(&sent)
        );
    }

    #[test]
    fn the_sender_is_answered_with_their_phone_number_and_nobody_else() {
        let once = RenderedOnce::default();
        let sent = message(1, r#"my "phone_number":null is"#);
        let event = once.message(&sent);
        let v: serde_json::Value = serde_json::from_str(&event).expect("json");
        assert_eq!(v["contact"]["phone_number"], serde_json::Value::Null);
        assert!(!event.contains("+15550100"));
        let sender = Viewer::Contact(sent.sender().id());
        let answer = once.answer_json(&sent, sender);
        assert_eq!(
            Some(answer.clone()),
            wire::text(wire::message(&sent, &FileLinks::default(), sender))
        );
        let v: serde_json::Value = serde_json::from_str(&answer).expect("json");
        assert_eq!(v["contact"]["phone_number"], "+15550100");
        // The text is untouched.
        assert_eq!(v["message"], r#"my "phone_number":null is"#);
        let other = Viewer::Contact(ContactId::from_uuid(Uuid::from_u128(2)));
        assert_eq!(once.answer_json(&sent, other), event);
    }

    /// The kept text is what answers, not a new rendering: debug builds
    /// check it against one.
    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "another message")]
    fn the_answer_is_the_text_kept_for_the_event() {
        let once = RenderedOnce::default();
        once.message(&message(1, "as written"));
        once.message_json(&message(1, "changed since"));
    }
}
