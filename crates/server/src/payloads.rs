//! Event payloads in the wire format (API.md section 11): the object exactly
//! as its recipient would `GET` it, built by the same wire objects as the
//! GET endpoints ([`crate::dto`]; a message by the same writer,
//! [`crate::wire`]), so the two cannot drift apart.

use confab_domain::{Attachment, Contact, ConversationView, Group, Message};
use confab_service::PayloadRenderer;
use serde::Serialize;
use uuid::Uuid;

use crate::dto::{AttachmentDto, ContactDto, ConversationDto, GroupDto};

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
        // The same writer as the answers' (`crate::wire`), held to
        // `MessageDto`'s bytes by its tests.
        crate::wire::text(crate::wire::message(message)).unwrap_or_else(|| "{}".to_owned())
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

#[cfg(test)]
mod tests {
    use super::*;
    use confab_domain::{AvatarUrl, ContactId, PhoneNumber, Timestamp, Username};
    use serde_json::json;

    #[test]
    fn a_deletion_is_its_id_alone() {
        let id = Uuid::from_u128(7);
        assert_eq!(
            WirePayloads.deleted(id),
            r#"{"id":"00000000-0000-0000-0000-000000000007"}"#
        );
    }

    #[test]
    fn a_contact_is_its_wire_object() {
        let c = Contact {
            id: ContactId::from_uuid(Uuid::from_u128(1)),
            username: Username::new("alice".into()).expect("valid"),
            phone_number: PhoneNumber::new("+15550100".into()).expect("valid"),
            avatar_url: AvatarUrl::none(),
            last_active_at: Timestamp::from_secs(2),
            created_at: Timestamp::from_secs(1),
        };
        let v: serde_json::Value = serde_json::from_str(&WirePayloads.contact(&c)).expect("json");
        assert_eq!(
            v,
            json!({"id": "00000000-0000-0000-0000-000000000001", "username": "alice",
                   "phone_number": "+15550100", "avatar_url": "", "last_active_at": 2,
                   "created_at": 1})
        );
    }
}
