//! Wire objects: what the API answers with, built from domain entities.
//! Timestamps are integer Unix seconds; ids are lowercase and hyphenated.
//! Their OpenAPI schemas are derived from these structs; a field that may
//! be null is still always present (`required`).

use confab_domain::{
    Attachment, Contact, ConversationView, Group, Message, Paged, Reaction, Timestamp,
};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Schema, Type};
use utoipa::openapi::RefOr;
use utoipa::ToSchema;

fn secs(t: Timestamp) -> i64 {
    t.secs()
}

fn opt_secs(t: Option<Timestamp>) -> Option<i64> {
    t.map(Timestamp::secs)
}

/// `{"has_more": bool, "data": [...]}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ListDto<T> {
    pub has_more: bool,
    pub data: Vec<T>,
}

impl<T> ListDto<T> {
    pub fn from_paged<E>(paged: Paged<E>, f: impl FnMut(E) -> T) -> Self {
        let paged = paged.map(f);
        Self {
            has_more: paged.has_more,
            data: paged.items,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ContactDto {
    pub id: String,
    pub username: String,
    pub phone_number: String,
    pub avatar_url: String,
    pub last_active_at: i64,
    pub created_at: i64,
}

impl From<&Contact> for ContactDto {
    fn from(c: &Contact) -> Self {
        Self {
            id: c.id().to_string(),
            username: c.username().to_string(),
            phone_number: c.phone_number().to_string(),
            avatar_url: c.avatar_url().to_string(),
            last_active_at: secs(c.last_active_at()),
            created_at: secs(c.created_at()),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AttachmentDto {
    pub id: String,
    pub message_id: String,
    pub filename: String,
    pub file_url: String,
    pub file_type: String,
    #[schema(required = true)]
    pub file_size: Option<i64>,
    pub created_at: i64,
}

impl From<&Attachment> for AttachmentDto {
    fn from(a: &Attachment) -> Self {
        Self {
            id: a.id.to_string(),
            message_id: a.message_id.to_string(),
            filename: a.filename.to_string(),
            file_url: a.file_url.to_string(),
            file_type: a.file_type.to_string(),
            file_size: a.file_size.map(|s| s.bytes()),
            created_at: secs(a.created_at),
        }
    }
}

/// One reaction name with its reactors' usernames, written as the
/// single-key object `{"like": ["alice", "bob"]}`.
#[derive(Debug)]
pub struct ReactionDto {
    pub name: String,
    pub usernames: Vec<String>,
}

impl Serialize for ReactionDto {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(&self.name, &self.usernames)?;
        map.end()
    }
}

impl utoipa::PartialSchema for ReactionDto {
    fn schema() -> RefOr<Schema> {
        let usernames = ArrayBuilder::new().items(ObjectBuilder::new().schema_type(Type::String));
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .additional_properties(Some(usernames))
            .min_properties(Some(1))
            .max_properties(Some(1))
            .description(Some(
                "one reaction name and the usernames of its reactors, in the order they reacted",
            ))
            .into()
    }
}

impl ToSchema for ReactionDto {}

impl From<&Reaction> for ReactionDto {
    fn from(r: &Reaction) -> Self {
        Self {
            name: r.name().to_string(),
            usernames: r
                .reactors()
                .iter()
                .map(|x| x.username.to_string())
                .collect(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MessageDto {
    pub id: String,
    pub conversation_id: String,
    pub contact: ContactDto,
    pub message: String,
    pub reactions: Vec<ReactionDto>,
    pub attachments: Vec<AttachmentDto>,
    #[schema(required = true)]
    pub read_at: Option<i64>,
    pub created_at: i64,
    #[schema(required = true)]
    pub updated_at: Option<i64>,
}

impl From<&Message> for MessageDto {
    fn from(m: &Message) -> Self {
        Self {
            id: m.id().to_string(),
            conversation_id: m.conversation_id().to_string(),
            contact: ContactDto::from(m.sender()),
            message: m.text().to_string(),
            reactions: m.reactions().iter().map(ReactionDto::from).collect(),
            attachments: m.attachments().iter().map(AttachmentDto::from).collect(),
            read_at: opt_secs(m.read_at()),
            created_at: secs(m.created_at()),
            updated_at: opt_secs(m.updated_at()),
        }
    }
}

/// A conversation as the caller sees it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConversationDto {
    pub id: String,
    /// The other member of a direct conversation; null for a group one.
    #[schema(required = true)]
    pub contact_id: Option<String>,
    #[schema(required = true)]
    pub group_id: Option<String>,
    #[schema(required = true)]
    pub pinned_message_id: Option<String>,
    pub is_pinned: bool,
    pub is_muted: bool,
    #[schema(required = true)]
    pub last_active_at: Option<i64>,
    #[schema(required = true)]
    pub last_opened_at: Option<i64>,
    pub created_at: i64,
    #[schema(required = true)]
    pub archived_at: Option<i64>,
    /// The caller's messages from others that arrived after the caller
    /// last opened this conversation (all of them if never opened).
    #[schema(minimum = 0)]
    pub unread_count: u64,
}

impl From<&ConversationView> for ConversationDto {
    fn from(v: &ConversationView) -> Self {
        let c = &v.conversation;
        Self {
            id: c.id().to_string(),
            contact_id: v.contact_id().map(|id| id.to_string()),
            group_id: c.group_id().map(|id| id.to_string()),
            pinned_message_id: c.pinned_message_id().map(|id| id.to_string()),
            is_pinned: v.state.is_pinned,
            is_muted: v.state.is_muted,
            last_active_at: opt_secs(c.last_active_at()),
            last_opened_at: opt_secs(v.state.last_opened_at),
            created_at: secs(c.created_at()),
            archived_at: opt_secs(v.state.archived_at),
            unread_count: v.state.unread_count,
        }
    }
}

/// Members a group object embeds at most (API.md section 13): an object's
/// size, and the size of every `group.*` event, stays bounded whatever the
/// group's.
pub const GROUP_EMBEDDED_MEMBERS: usize = 100;

#[derive(Debug, Serialize, ToSchema)]
pub struct GroupDto {
    pub id: String,
    pub name: String,
    pub description: String,
    pub avatar_url: String,
    /// The first 100 members, in the order they joined (`member_count`
    /// counts them all).
    pub contacts: Vec<ContactDto>,
    /// How many members the group has.
    pub member_count: u64,
    pub created_at: i64,
}

impl From<&Group> for GroupDto {
    fn from(g: &Group) -> Self {
        Self {
            id: g.id().to_string(),
            name: g.name().to_string(),
            description: g.description().to_string(),
            avatar_url: g.avatar_url().to_string(),
            contacts: g
                .members()
                .iter()
                .take(GROUP_EMBEDDED_MEMBERS)
                .map(|m| ContactDto::from(&m.contact))
                .collect(),
            member_count: g.members().len() as u64,
            created_at: secs(g.created_at()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use confab_domain::{
        AvatarUrl, ContactId, ContactParts, ConversationId, MessageId, MessageParts, MessageText,
        PhoneNumber, ReactionName, Reactor, Username,
    };
    use serde_json::json;
    use uuid::Uuid;

    fn contact(n: u128, name: &str) -> Contact {
        Contact::new(ContactParts {
            id: ContactId::from_uuid(Uuid::from_u128(n)),
            username: Username::new(name.into()).expect("valid"),
            phone_number: PhoneNumber::new("+15550100".into()).expect("valid"),
            avatar_url: AvatarUrl::none(),
            last_active_at: Timestamp::from_micros(1_700_000_000_999_999),
            created_at: Timestamp::from_secs(1_600_000_000),
        })
        .expect("valid")
    }

    #[test]
    fn message_wire_shape() {
        let alice = contact(1, "alice");
        let bob = contact(2, "bob");
        let reactor = |c: &Contact| Reactor {
            contact_id: c.id(),
            username: c.username().clone(),
        };
        let m = Message::new(MessageParts {
            id: MessageId::from_uuid(Uuid::from_u128(3)),
            conversation_id: ConversationId::from_uuid(Uuid::from_u128(4)),
            sender: alice.clone(),
            text: MessageText::new("hi".into()).expect("valid"),
            reactions: vec![
                Reaction::new(
                    ReactionName::new("like".into()).expect("valid"),
                    vec![reactor(&alice), reactor(&bob)],
                )
                .expect("valid"),
                Reaction::new(
                    ReactionName::new("heart".into()).expect("valid"),
                    vec![reactor(&bob)],
                )
                .expect("valid"),
            ],
            attachments: vec![],
            read_at: None,
            created_at: Timestamp::from_secs(1_700_000_001),
            updated_at: None,
        })
        .expect("valid");
        let v = serde_json::to_value(MessageDto::from(&m)).expect("json");
        assert_eq!(
            v,
            json!({
                "id": "00000000-0000-0000-0000-000000000003",
                "conversation_id": "00000000-0000-0000-0000-000000000004",
                "contact": {
                    "id": "00000000-0000-0000-0000-000000000001",
                    "username": "alice",
                    "phone_number": "+15550100",
                    "avatar_url": "",
                    "last_active_at": 1_700_000_000,
                    "created_at": 1_600_000_000
                },
                "message": "hi",
                "reactions": [{"like": ["alice", "bob"]}, {"heart": ["bob"]}],
                "attachments": [],
                "read_at": null,
                "created_at": 1_700_000_001,
                "updated_at": null
            })
        );
        let keys: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
        assert_eq!(keys[0], "id", "fields keep their declared order");
    }
}
