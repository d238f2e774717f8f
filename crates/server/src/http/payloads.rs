//! Event payloads in the wire format (API.md section 11): the object exactly
//! as its recipient would `GET` it, built by the same wire objects as the
//! GET endpoints ([`crate::http::dto`]; a message by the same writer,
//! [`crate::http::wire`]), so the two cannot drift apart.

use confab_domain::{Attachment, Contact, ConversationView, Group, Message};
use confab_service::PayloadRenderer;
use serde::Serialize;
use uuid::Uuid;

use crate::http::dto::{AttachmentDto, ContactDto, ConversationDto, GroupDto};

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
        // The same writer as the answers' (`crate::http::wire`), held to
        // `MessageDto`'s bytes by its tests.
        crate::http::wire::text(crate::http::wire::message(message))
            .unwrap_or_else(|| "{}".to_owned())
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
    use confab_domain::{
        AvatarUrl, ContactId, ContactParts, GroupDescription, GroupId, GroupMember, GroupName,
        GroupParts, GroupRole, PhoneNumber, Timestamp, Username,
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
        }
    }

    fn group(members: u128) -> Group {
        Group::new(GroupParts {
            id: GroupId::from_uuid(Uuid::from_u128(1 << 64)),
            name: GroupName::new("big".into()).expect("valid"),
            description: GroupDescription::empty(),
            avatar_url: AvatarUrl::none(),
            created_by: ContactId::from_uuid(Uuid::from_u128(1)),
            created_at: Timestamp::from_secs(1),
            members: (1..=members).map(member).collect(),
        })
        .expect("valid")
    }

    #[test]
    fn a_group_event_embeds_its_first_100_members_and_counts_them_all() {
        // Joined in reverse id order: the embedded ones are the first to
        // join, whatever their ids.
        let mut big = group(2_000).into_parts();
        big.members.reverse();
        let big = Group::new(big).expect("valid");
        let payload = WirePayloads.group(&big);
        let v: serde_json::Value = serde_json::from_str(&payload).expect("json");
        assert_eq!(v["member_count"], 2_000);
        let embedded: Vec<&str> = v["contacts"]
            .as_array()
            .expect("contacts")
            .iter()
            .map(|c| c["id"].as_str().expect("id"))
            .collect();
        let first: Vec<String> = big.members()[..100]
            .iter()
            .map(|m| m.contact.id().to_string())
            .collect();
        assert_eq!(embedded, first);
        // The size of a 100-member group's event, not of a 2,000-member one.
        let mut first_hundred = big.clone().into_parts();
        first_hundred.members.truncate(100);
        let first_hundred = Group::new(first_hundred).expect("valid");
        let hundred = WirePayloads.group(&first_hundred).len();
        assert!(payload.len() <= hundred + 16, "{} bytes", payload.len());

        let small = WirePayloads.group(&group(3));
        let v: serde_json::Value = serde_json::from_str(&small).expect("json");
        assert_eq!(v["member_count"], 3);
        assert_eq!(v["contacts"].as_array().map(Vec::len), Some(3));
    }

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
        let c = Contact::new(ContactParts {
            id: ContactId::from_uuid(Uuid::from_u128(1)),
            username: Username::new("alice".into()).expect("valid"),
            phone_number: PhoneNumber::new("+15550100".into()).expect("valid"),
            avatar_url: AvatarUrl::none(),
            last_active_at: Timestamp::from_secs(2),
            created_at: Timestamp::from_secs(1),
        })
        .expect("valid");
        let v: serde_json::Value = serde_json::from_str(&WirePayloads.contact(&c)).expect("json");
        assert_eq!(
            v,
            json!({"id": "00000000-0000-0000-0000-000000000001", "username": "alice",
                   "phone_number": "+15550100", "avatar_url": "", "last_active_at": 2,
                   "created_at": 1})
        );
    }
}
