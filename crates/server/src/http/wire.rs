//! The JSON of a message (with its contact, reactions and attachments), a
//! contact, an attachment, a group (with its first members), and the page
//! (`{"has_more", "data"}`) of every list. This module is their only
//! writer: the answers, the event payloads ([`crate::http::payloads`]),
//! the answers kept for idempotency keys and the CLI's contact
//! ([`ContactDto`](crate::http::dto::ContactDto)) all come from here. The
//! structs of [`crate::http::dto`] describe these objects to OpenAPI and
//! write nothing.
//!
//! Not serde's derive: it first copied every string of the message into a
//! wire struct, then escaped every key and every value as it wrote them;
//! for a first page of ten messages that was over a quarter of the
//! instructions confab ran per request (`bench/instructions.sh`,
//! docs/performance.md). Here the keys are written as the literals they
//! are, ids (hex digits and hyphens) as they are, and only the strings
//! people wrote (a text, a username, a file name...) go through
//! serde_json's escaping. The tests below hold each object to JSON built by
//! hand from the same entity.

use confab_domain::{
    Attachment, Block, Contact, FileSource, Group, GroupMember, Message, Paged, Reaction, Report,
    Timestamp, Viewer,
};

use crate::http::links::unix_now;
pub use crate::http::links::FileLinks;
use serde::{Serialize, Serializer as _};
use uuid::Uuid;

/// What an answer's buffer starts with: most answers fit whole (a page of
/// ten messages is about 5 KB).
pub(crate) const BUFFER: usize = 8 * 1024;

/// Members a group object embeds at most (API.md section 13): an object's
/// size, and the size of every `group.*` event, stays bounded whatever the
/// group's.
pub const GROUP_EMBEDDED_MEMBERS: usize = 100;

/// Written JSON as a string (an event's payload, a kept 201): `None` only
/// if writing failed, which plain data does not.
pub fn text(json: serde_json::Result<Vec<u8>>) -> Option<String> {
    json.ok().and_then(|bytes| String::from_utf8(bytes).ok())
}

/// `{"has_more": ..., "data": [message, ...]}`, uploads' links made by
/// `links`.
pub fn message_page(
    page: &Paged<Message>,
    links: &FileLinks,
    viewer: Viewer,
) -> serde_json::Result<Vec<u8>> {
    let now = unix_now();
    list(page.has_more, &page.items, |out, m| {
        write_message(out, m, links, now, viewer)
    })
}

/// `{"has_more": ..., "data": [attachment, ...]}`.
pub fn attachment_page(page: &Paged<Attachment>, links: &FileLinks) -> serde_json::Result<Vec<u8>> {
    let now = unix_now();
    list(page.has_more, &page.items, |out, a| {
        write_attachment(out, a, links, now)
    })
}

/// `{"has_more": ..., "data": [item, ...]}`, each item written by `write`:
/// the page of every list the API answers.
pub fn list<T>(
    has_more: bool,
    items: &[T],
    write: impl FnMut(&mut Vec<u8>, &T) -> serde_json::Result<()>,
) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(BUFFER);
    out.extend_from_slice(if has_more {
        br#"{"has_more":true,"data":"#
    } else {
        br#"{"has_more":false,"data":"#
    });
    array(&mut out, items, write)?;
    out.push(b'}');
    Ok(out)
}

/// One message, as `GET /v1/messages/{id}` answers it.
pub fn message(m: &Message, links: &FileLinks, viewer: Viewer) -> serde_json::Result<Vec<u8>> {
    let now = unix_now();
    one(BUFFER / 4, m, |out, m| {
        write_message(out, m, links, now, viewer)
    })
}

/// One contact, as `GET /v1/contacts/{id}` answers it to `viewer`.
pub fn contact(c: &Contact, viewer: Viewer) -> serde_json::Result<Vec<u8>> {
    one(256, c, |out, c| write_contact(out, c, viewer))
}

/// One attachment, as `GET /v1/attachments/{id}` answers it.
pub fn attachment(a: &Attachment, links: &FileLinks) -> serde_json::Result<Vec<u8>> {
    let now = unix_now();
    one(512, a, |out, a| write_attachment(out, a, links, now))
}

/// One group, as `GET /v1/groups/{id}` answers it.
pub fn group(g: &Group, viewer: Viewer) -> serde_json::Result<Vec<u8>> {
    one(BUFFER, g, |out, g| write_group(out, g, viewer))
}

/// `value` alone, written by `write` into a buffer of `capacity` bytes.
fn one<T>(
    capacity: usize,
    value: &T,
    write: impl FnOnce(&mut Vec<u8>, &T) -> serde_json::Result<()>,
) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(capacity);
    write(&mut out, value)?;
    Ok(out)
}

/// An object whose one writer is its serde derive (a conversation), as an
/// item of [`list`].
pub fn write_serialized<T: Serialize>(out: &mut Vec<u8>, value: &T) -> serde_json::Result<()> {
    value.serialize(&mut serde_json::Serializer::new(out))
}

fn write_message(
    out: &mut Vec<u8>,
    m: &Message,
    links: &FileLinks,
    now: i64,
    viewer: Viewer,
) -> serde_json::Result<()> {
    out.extend_from_slice(br#"{"id":"#);
    id(out, m.id().as_uuid());
    out.extend_from_slice(br#","conversation_id":"#);
    id(out, m.conversation_id().as_uuid());
    out.extend_from_slice(br#","contact":"#);
    write_contact(out, m.sender(), viewer)?;
    out.extend_from_slice(br#","message":"#);
    string(out, m.text().as_str())?;
    out.extend_from_slice(br#","reactions":"#);
    array(out, m.reactions(), write_reaction)?;
    out.extend_from_slice(br#","attachments":"#);
    array(out, m.attachments(), |out, a| {
        write_attachment(out, a, links, now)
    })?;
    out.extend_from_slice(br#","read_at":"#);
    opt_secs(out, m.read_at())?;
    out.extend_from_slice(br#","created_at":"#);
    secs(out, m.created_at())?;
    out.extend_from_slice(br#","updated_at":"#);
    opt_secs(out, m.updated_at())?;
    out.push(b'}');
    Ok(())
}

/// A contact as `viewer` may see it: the phone number only for the
/// contact themself and the operator ([`Contact::phone_number_for`]),
/// `null` for everyone else.
pub fn write_contact(out: &mut Vec<u8>, c: &Contact, viewer: Viewer) -> serde_json::Result<()> {
    out.extend_from_slice(br#"{"id":"#);
    id(out, c.id().as_uuid());
    out.extend_from_slice(br#","username":"#);
    string(out, c.username().as_str())?;
    out.extend_from_slice(br#","phone_number":"#);
    nullable(out, c.phone_number_for(viewer), |out, p| {
        string(out, p.as_str())
    })?;
    out.extend_from_slice(br#","avatar_url":"#);
    string(out, c.avatar_url().as_str())?;
    out.extend_from_slice(br#","last_active_at":"#);
    secs(out, c.last_active_at())?;
    out.extend_from_slice(br#","created_at":"#);
    secs(out, c.created_at())?;
    out.push(b'}');
    Ok(())
}

/// `{"like": ["alice", "bob"]}`.
fn write_reaction(out: &mut Vec<u8>, r: &Reaction) -> serde_json::Result<()> {
    out.push(b'{');
    string(out, r.name().as_str())?;
    out.push(b':');
    array(out, r.reactors(), |out, reactor| {
        string(out, reactor.username.as_str())
    })?;
    out.push(b'}');
    Ok(())
}

/// An attachment; an upload's `file_url` is a fresh signed link to its
/// content ([`FileLinks`]).
fn write_attachment(
    out: &mut Vec<u8>,
    a: &Attachment,
    links: &FileLinks,
    now: i64,
) -> serde_json::Result<()> {
    out.extend_from_slice(br#"{"id":"#);
    id(out, a.id.as_uuid());
    out.extend_from_slice(br#","message_id":"#);
    match a.message_id {
        Some(m) => id(out, m.as_uuid()),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(br#","filename":"#);
    string(out, a.filename.as_str())?;
    out.extend_from_slice(br#","file_url":"#);
    match &a.source {
        FileSource::Link(url) => string(out, url.as_str())?,
        FileSource::Stored(_) => string(out, &links.content_url(a.id.as_uuid(), now))?,
    }
    out.extend_from_slice(br#","file_type":"#);
    string(out, a.file_type.as_str())?;
    out.extend_from_slice(br#","file_size":"#);
    nullable(out, a.file_size, |out, size| int(out, size.bytes()))?;
    out.extend_from_slice(br#","created_at":"#);
    secs(out, a.created_at)?;
    out.push(b'}');
    Ok(())
}

/// The group with its first [`GROUP_EMBEDDED_MEMBERS`] members, in the
/// order they joined, and the count of them all.
pub fn write_group(out: &mut Vec<u8>, g: &Group, viewer: Viewer) -> serde_json::Result<()> {
    out.extend_from_slice(br#"{"id":"#);
    id(out, g.id().as_uuid());
    out.extend_from_slice(br#","name":"#);
    string(out, g.name().as_str())?;
    out.extend_from_slice(br#","description":"#);
    string(out, g.description().as_str())?;
    out.extend_from_slice(br#","avatar_url":"#);
    string(out, g.avatar_url().as_str())?;
    out.extend_from_slice(br#","contacts":"#);
    let first = g.first_members();
    let embedded = &first[..first.len().min(GROUP_EMBEDDED_MEMBERS)];
    array(out, embedded, |out, member| {
        write_contact(out, &member.contact, viewer)
    })?;
    out.extend_from_slice(br#","member_count":"#);
    serde_json::Serializer::new(&mut *out).serialize_u64(g.member_count())?;
    out.extend_from_slice(br#","created_at":"#);
    secs(out, g.created_at())?;
    out.push(b'}');
    Ok(())
}

/// A group member as `GET /v1/groups/{id}/members` lists it:
/// `{"contact", "role", "joined_at"}`.
pub fn write_member(out: &mut Vec<u8>, m: &GroupMember, viewer: Viewer) -> serde_json::Result<()> {
    out.extend_from_slice(br#"{"contact":"#);
    write_contact(out, &m.contact, viewer)?;
    out.extend_from_slice(br#","role":"#);
    string(out, m.role.as_str())?;
    out.extend_from_slice(br#","joined_at":"#);
    secs(out, m.joined_at)?;
    out.push(b'}');
    Ok(())
}

/// A block as its blocker lists it: `{"contact", "created_at"}`.
pub fn write_block(out: &mut Vec<u8>, b: &Block, viewer: Viewer) -> serde_json::Result<()> {
    out.extend_from_slice(br#"{"contact":"#);
    write_contact(out, &b.contact, viewer)?;
    out.extend_from_slice(br#","created_at":"#);
    secs(out, b.created_at)?;
    out.push(b'}');
    Ok(())
}

/// One block.
pub fn block(b: &Block, viewer: Viewer) -> serde_json::Result<Vec<u8>> {
    one(512, b, |out, b| write_block(out, b, viewer))
}

/// A report: as its reporter reads it, or with `reporter_id` and
/// `updated_at` as the operator does (`for_operator`).
pub fn write_report(out: &mut Vec<u8>, r: &Report, for_operator: bool) -> serde_json::Result<()> {
    out.extend_from_slice(br#"{"id":"#);
    id(out, r.id.as_uuid());
    if for_operator {
        out.extend_from_slice(br#","reporter_id":"#);
        id(out, r.reporter.as_uuid());
    }
    out.extend_from_slice(br#","message_id":"#);
    match r.message_id {
        Some(m) => id(out, m.as_uuid()),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(br#","contact_id":"#);
    id(out, r.contact_id.as_uuid());
    out.extend_from_slice(br#","reason":"#);
    string(out, r.reason.as_str())?;
    out.extend_from_slice(br#","description":"#);
    string(out, r.description.as_str())?;
    out.extend_from_slice(br#","status":"#);
    string(out, r.status.as_str())?;
    out.extend_from_slice(br#","created_at":"#);
    secs(out, r.created_at)?;
    if for_operator {
        out.extend_from_slice(br#","updated_at":"#);
        secs(out, r.updated_at)?;
    }
    out.push(b'}');
    Ok(())
}

/// One report (see [`write_report`]).
pub fn report(r: &Report, for_operator: bool) -> serde_json::Result<Vec<u8>> {
    one(512, r, |out, r| write_report(out, r, for_operator))
}

/// `[item, ...]`, each item written by `write`.
fn array<T>(
    out: &mut Vec<u8>,
    items: &[T],
    mut write: impl FnMut(&mut Vec<u8>, &T) -> serde_json::Result<()>,
) -> serde_json::Result<()> {
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write(out, item)?;
    }
    out.push(b']');
    Ok(())
}

/// `null`, or the value written by `write`.
fn nullable<T>(
    out: &mut Vec<u8>,
    value: Option<T>,
    write: impl FnOnce(&mut Vec<u8>, T) -> serde_json::Result<()>,
) -> serde_json::Result<()> {
    match value {
        Some(value) => write(out, value),
        None => {
            out.extend_from_slice(b"null");
            Ok(())
        }
    }
}

/// An id in the API's one spelling (lowercase, hyphenated): nothing in it
/// needs escaping.
fn id(out: &mut Vec<u8>, id: &Uuid) {
    let mut buf = [0u8; uuid::fmt::Hyphenated::LENGTH];
    out.push(b'"');
    out.extend_from_slice(id.hyphenated().encode_lower(&mut buf).as_bytes());
    out.push(b'"');
}

/// A string as serde_json writes it (quoted, escaped).
fn string(out: &mut Vec<u8>, s: &str) -> serde_json::Result<()> {
    serde_json::Serializer::new(out).serialize_str(s)
}

fn int(out: &mut Vec<u8>, n: i64) -> serde_json::Result<()> {
    serde_json::Serializer::new(out).serialize_i64(n)
}

fn secs(out: &mut Vec<u8>, t: Timestamp) -> serde_json::Result<()> {
    int(out, t.secs())
}

fn opt_secs(out: &mut Vec<u8>, t: Option<Timestamp>) -> serde_json::Result<()> {
    nullable(out, t, secs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use confab_domain::{
        AttachmentId, AvatarUrl, ContactId, ContactParts, ConversationId, FileSize, FileType,
        FileUrl, Filename, GroupDescription, GroupId, GroupMember, GroupName, GroupParts,
        GroupRole, MessageId, MessageParts, MessageText, PhoneNumber, ReactionName, Reactor,
        Username,
    };
    use proptest::prelude::*;
    use serde_json::{json, Value};

    // The expected objects, built by hand from the entity with `json!`.
    // serde_json keeps their keys in the order written here (the
    // workspace enables `preserve_order`), so their text is the exact
    // bytes the API promises: the keys in this order, no spaces, the
    // strings as serde_json escapes them.

    fn id_json(id: &Uuid) -> Value {
        Value::String(id.hyphenated().to_string())
    }

    fn contact_json(c: &Contact) -> Value {
        json!({
            "id": id_json(c.id().as_uuid()),
            "username": c.username().as_str(),
            "phone_number": c.phone_number().as_str(),
            "avatar_url": c.avatar_url().as_str(),
            "last_active_at": c.last_active_at().secs(),
            "created_at": c.created_at().secs(),
        })
    }

    fn reaction_json(r: &Reaction) -> Value {
        let usernames: Vec<&str> = r.reactors().iter().map(|x| x.username.as_str()).collect();
        let mut one = serde_json::Map::new();
        one.insert(r.name().as_str().to_owned(), json!(usernames));
        Value::Object(one)
    }

    fn attachment_json(a: &Attachment) -> Value {
        json!({
            "id": id_json(a.id.as_uuid()),
            "message_id": a.message_id.map(|m| id_json(m.as_uuid())),
            "filename": a.filename.as_str(),
            "file_url": match &a.source {
                FileSource::Link(url) => url.as_str().to_owned(),
                // Unsigned links: `FileLinks::default()`.
                FileSource::Stored(_) => format!("/v1/attachments/{}/content", a.id),
            },
            "file_type": a.file_type.as_str(),
            "file_size": a.file_size.map(FileSize::bytes),
            "created_at": a.created_at.secs(),
        })
    }

    fn message_json(m: &Message) -> Value {
        json!({
            "id": id_json(m.id().as_uuid()),
            "conversation_id": id_json(m.conversation_id().as_uuid()),
            "contact": contact_json(m.sender()),
            "message": m.text().as_str(),
            "reactions": m.reactions().iter().map(reaction_json).collect::<Vec<_>>(),
            "attachments": m.attachments().iter().map(attachment_json).collect::<Vec<_>>(),
            "read_at": m.read_at().map(Timestamp::secs),
            "created_at": m.created_at().secs(),
            "updated_at": m.updated_at().map(Timestamp::secs),
        })
    }

    fn group_json(g: &Group) -> Value {
        json!({
            "id": id_json(g.id().as_uuid()),
            "name": g.name().as_str(),
            "description": g.description().as_str(),
            "avatar_url": g.avatar_url().as_str(),
            "contacts": g.first_members().iter().take(100).map(|m| contact_json(&m.contact))
                .collect::<Vec<_>>(),
            "member_count": g.member_count(),
            "created_at": g.created_at().secs(),
        })
    }

    fn page_json(has_more: bool, data: Vec<Value>) -> Value {
        json!({"has_more": has_more, "data": data})
    }

    /// `written` is `expected`: the same bytes, and the same value read
    /// back.
    fn same(written: serde_json::Result<Vec<u8>>, expected: &Value) -> Result<(), TestCaseError> {
        let written = String::from_utf8(written.expect("json")).expect("utf-8");
        let read: Value = serde_json::from_str(&written).expect("valid JSON");
        prop_assert_eq!(&read, expected);
        prop_assert_eq!(written, serde_json::to_string(expected).expect("json"));
        Ok(())
    }

    /// Any text a message may hold: quotes, backslashes, control
    /// characters, every plane of Unicode.
    fn any_text() -> impl Strategy<Value = MessageText> {
        "(?s).{1,40}".prop_filter_map("a valid text", |s| MessageText::new(s).ok())
    }

    fn any_contact() -> impl Strategy<Value = Contact> {
        (
            any::<u128>(),
            "[a-z][a-z0-9_]{0,31}",
            "\\+?[0-9]{2,15}",
            prop_oneof![
                Just(String::new()),
                "https://[a-z]{1,10}\\.example/[a-zA-Z0-9%\"\\\\<>{}|^`]{0,20}"
            ],
            any::<i64>(),
            any::<i64>(),
        )
            .prop_filter_map(
                "a valid contact",
                |(id, name, phone, avatar, seen, made)| {
                    Contact::new(ContactParts {
                        id: ContactId::from_uuid(Uuid::from_u128(id)),
                        username: Username::new(name).ok()?,
                        phone_number: PhoneNumber::new(phone).ok()?,
                        avatar_url: AvatarUrl::new(avatar).ok()?,
                        last_active_at: Timestamp::from_micros(seen),
                        created_at: Timestamp::from_micros(made),
                    })
                    .ok()
                },
            )
    }

    fn any_reaction() -> impl Strategy<Value = Reaction> {
        (
            "[a-z0-9_+-]{1,16}",
            prop::collection::vec((any::<u128>(), "[a-z][a-z0-9_]{0,31}"), 1..4),
        )
            .prop_filter_map("a valid reaction", |(name, reactors)| {
                Reaction::new(
                    ReactionName::new(name).ok()?,
                    reactors
                        .into_iter()
                        .map(|(id, username)| {
                            Some(Reactor {
                                contact_id: ContactId::from_uuid(Uuid::from_u128(id)),
                                username: Username::new(username).ok()?,
                            })
                        })
                        .collect::<Option<_>>()?,
                )
                .ok()
            })
    }

    fn any_attachment() -> impl Strategy<Value = Attachment> {
        (
            any::<(u128, u128, u128)>(),
            "[^/\\x00-\\x1f]{1,30}",
            prop::option::of("https://files\\.example/[a-z0-9\"]{1,20}"),
            prop_oneof!["image/png", "application/x-\"odd\""],
            prop::option::of(0..i64::MAX),
            any::<i64>(),
        )
            .prop_filter_map(
                "a valid attachment",
                |((id, message, uploader), name, url, kind, size, made)| {
                    let source = match url {
                        Some(url) => FileSource::Link(FileUrl::new(url).ok()?),
                        None => FileSource::Stored(confab_domain::ContentDigest::new([7; 32])),
                    };
                    Some(Attachment {
                        id: AttachmentId::from_uuid(Uuid::from_u128(id)),
                        message_id: Some(MessageId::from_uuid(Uuid::from_u128(message))),
                        conversation_id: None,
                        uploader: ContactId::from_uuid(Uuid::from_u128(uploader)),
                        filename: Filename::new(name).ok()?,
                        source,
                        file_type: FileType::new(kind).ok()?,
                        file_size: match size {
                            Some(bytes) => Some(FileSize::new(bytes).ok()?),
                            None => None,
                        },
                        created_at: Timestamp::from_micros(made),
                    })
                },
            )
    }

    fn any_group() -> impl Strategy<Value = Group> {
        (
            any::<u128>(),
            "(?s).{1,20}",
            "(?s).{0,20}",
            any_contact(),
            // Around the 100 members a group object embeds.
            prop_oneof![0..3_u128, 99..=101_u128],
            any::<i64>(),
        )
            .prop_filter_map(
                "a valid group",
                |(id, name, description, someone, size, made)| {
                    // Members who differ by id, joined in reverse id order.
                    // A group carries its first 100; it counts them all.
                    let members = (0..size)
                        .rev()
                        .take(confab_domain::FIRST_MEMBERS)
                        .map(|n| GroupMember {
                            contact: Contact::new(ContactParts {
                                id: ContactId::from_uuid(Uuid::from_u128(n)),
                                ..someone.clone().into_parts()
                            })
                            .expect("valid"),
                            role: GroupRole::Member,
                            joined_at: Timestamp::from_secs(0),
                        })
                        .collect();
                    Group::new(GroupParts {
                        id: GroupId::from_uuid(Uuid::from_u128(id)),
                        name: GroupName::new(name).ok()?,
                        description: GroupDescription::new(description).ok()?,
                        avatar_url: AvatarUrl::none(),
                        created_by: ContactId::from_uuid(Uuid::from_u128(1)),
                        created_at: Timestamp::from_micros(made),
                        first_members: members,
                        member_count: size as u64,
                        owners: Vec::new(),
                    })
                    .ok()
                },
            )
    }

    prop_compose! {
        fn message_parts()(
            ids in any::<(u128, u128)>(),
            sender in any_contact(),
            text in any_text(),
            reactions in prop::collection::vec(any_reaction(), 0..3),
            attachments in prop::collection::vec(any_attachment(), 0..3),
            read_at in prop::option::of(any::<i64>()),
            created_at in any::<i64>(),
            updated_at in prop::option::of(any::<i64>()),
        ) -> MessageParts {
            let id = MessageId::from_uuid(Uuid::from_u128(ids.0));
            MessageParts {
                id,
                conversation_id: ConversationId::from_uuid(Uuid::from_u128(ids.1)),
                sender,
                text,
                reactions,
                // A message's attachments are its own.
                attachments: attachments
                    .into_iter()
                    .map(|a| Attachment {
                        message_id: Some(id),
                        conversation_id: Some(ConversationId::from_uuid(Uuid::from_u128(ids.1))),
                        ..a
                    })
                    .collect(),
                read_at: read_at.map(Timestamp::from_micros),
                created_at: Timestamp::from_micros(created_at),
                updated_at: updated_at.map(Timestamp::from_micros),
            }
        }
    }

    fn any_message() -> impl Strategy<Value = Message> {
        message_parts().prop_filter_map("a valid message", |p| Message::new(p).ok())
    }

    proptest! {
        #[test]
        fn a_message_is_its_object(m in any_message()) {
            same(message(&m, &FileLinks::default(), Viewer::Operator), &message_json(&m))?;
        }

        #[test]
        fn a_page_of_messages_is_its_object(
            items in prop::collection::vec(any_message(), 0..4),
            has_more in any::<bool>(),
        ) {
            let expected = page_json(has_more, items.iter().map(message_json).collect());
            same(message_page(&Paged { items, has_more }, &FileLinks::default(), Viewer::Operator), &expected)?;
        }

        #[test]
        fn a_contact_is_its_object(c in any_contact()) {
            same(contact(&c, Viewer::Operator), &contact_json(&c))?;
            same(contact(&c, Viewer::Contact(c.id())), &contact_json(&c))?;
            // Anyone else: the same object without the phone number.
            let mut private = contact_json(&c);
            private["phone_number"] = Value::Null;
            same(contact(&c, Viewer::Anyone), &private)?;
            let other = ContactId::from_uuid(Uuid::from_u128(c.id().as_uuid().as_u128() ^ 1));
            same(contact(&c, Viewer::Contact(other)), &private)?;
        }

        #[test]
        fn a_list_of_contacts_is_its_object(
            items in prop::collection::vec(any_contact(), 0..3),
            has_more in any::<bool>(),
        ) {
            let expected = page_json(has_more, items.iter().map(contact_json).collect());
            same(list(has_more, &items, |out, c| write_contact(out, c, Viewer::Operator)), &expected)?;
        }

        #[test]
        fn an_attachment_is_its_object(a in any_attachment()) {
            same(attachment(&a, &FileLinks::default()), &attachment_json(&a))?;
        }

        #[test]
        fn a_group_is_its_object_with_its_first_100_members(g in any_group()) {
            same(group(&g, Viewer::Operator), &group_json(&g))?;
        }
    }

    /// One message written out in full, so that a reader sees the bytes.
    #[test]
    fn a_message_in_full() {
        let person = |n: u128, name: &str| {
            Contact::new(ContactParts {
                id: ContactId::from_uuid(Uuid::from_u128(n)),
                username: Username::new(name.into()).expect("valid"),
                phone_number: PhoneNumber::new("+15550100".into()).expect("valid"),
                avatar_url: AvatarUrl::none(),
                last_active_at: Timestamp::from_micros(1_700_000_000_999_999),
                created_at: Timestamp::from_secs(1_600_000_000),
            })
            .expect("valid")
        };
        let (alice, bob) = (person(1, "alice"), person(2, "bob"));
        let reactor = |c: &Contact| Reactor {
            contact_id: c.id(),
            username: c.username().clone(),
        };
        let m = Message::new(MessageParts {
            id: MessageId::from_uuid(Uuid::from_u128(3)),
            conversation_id: ConversationId::from_uuid(Uuid::from_u128(4)),
            sender: alice.clone(),
            text: MessageText::new("hi \"you\"\n".into()).expect("valid"),
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
            attachments: vec![Attachment {
                id: AttachmentId::from_uuid(Uuid::from_u128(5)),
                message_id: Some(MessageId::from_uuid(Uuid::from_u128(3))),
                conversation_id: Some(ConversationId::from_uuid(Uuid::from_u128(4))),
                uploader: ContactId::from_uuid(Uuid::from_u128(1)),
                filename: Filename::new("a.png".into()).expect("valid"),
                source: FileSource::Link(
                    FileUrl::new("https://files.example/a".into()).expect("valid"),
                ),
                file_type: FileType::new("image/png".into()).expect("valid"),
                file_size: None,
                created_at: Timestamp::from_secs(1_700_000_001),
            }],
            read_at: None,
            created_at: Timestamp::from_secs(1_700_000_001),
            updated_at: Some(Timestamp::from_secs(1_700_000_002)),
        })
        .expect("valid");
        let written = String::from_utf8(
            message(&m, &FileLinks::default(), Viewer::Contact(m.sender().id())).expect("json"),
        )
        .expect("utf-8");
        assert_eq!(
            written,
            concat!(
                r#"{"id":"00000000-0000-0000-0000-000000000003","#,
                r#""conversation_id":"00000000-0000-0000-0000-000000000004","#,
                r#""contact":{"id":"00000000-0000-0000-0000-000000000001","username":"alice","#,
                r#""phone_number":"+15550100","avatar_url":"","last_active_at":1700000000,"#,
                r#""created_at":1600000000},"#,
                r#""message":"hi \"you\"\n","#,
                r#""reactions":[{"like":["alice","bob"]},{"heart":["bob"]}],"#,
                r#""attachments":[{"id":"00000000-0000-0000-0000-000000000005","#,
                r#""message_id":"00000000-0000-0000-0000-000000000003","filename":"a.png","#,
                r#""file_url":"https://files.example/a","file_type":"image/png","#,
                r#""file_size":null,"created_at":1700000001}],"#,
                r#""read_at":null,"created_at":1700000001,"updated_at":1700000002}"#,
            )
        );
    }
}
