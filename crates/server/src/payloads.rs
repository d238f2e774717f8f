//! Event payloads in the wire format (API.md section 11): the object exactly
//! as its recipient would `GET` it, built by the same wire objects as the
//! GET endpoints ([`crate::dto`]), so the two cannot drift apart.

use confab_domain::{Attachment, Contact, ConversationView, Group, Message};
use confab_service::PayloadRenderer;
use serde::Serialize;
use uuid::Uuid;

use crate::dto::{AttachmentDto, ContactDto, ConversationDto, GroupDto, MessageDto};

/// Renders payloads as the JSON the API answers with.
#[derive(Debug, Clone, Copy, Default)]
pub struct WirePayloads;

/// The JSON of a wire object. Serializing these plain structs cannot fail;
/// if it ever did, `{}` beats a panic inside a write's transaction.
fn json(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "{}".to_owned())
}

#[derive(Serialize)]
struct Deleted {
    id: String,
}

impl PayloadRenderer for WirePayloads {
    fn contact(&self, contact: &Contact) -> String {
        json(&ContactDto::from(contact))
    }

    fn conversation(&self, conversation: &ConversationView) -> String {
        json(&ConversationDto::from(conversation))
    }

    fn message(&self, message: &Message) -> String {
        json(&MessageDto::from(message))
    }

    fn group(&self, group: &Group) -> String {
        json(&GroupDto::from(group))
    }

    fn attachment(&self, attachment: &Attachment) -> String {
        json(&AttachmentDto::from(attachment))
    }

    fn deleted(&self, id: Uuid) -> String {
        json(&Deleted {
            id: id.hyphenated().to_string(),
        })
    }
}
