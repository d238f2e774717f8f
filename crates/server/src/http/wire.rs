//! The JSON of a message and of a page of messages, the answers confab
//! serves most, written straight from the domain entities.
//!
//! serde's derive for [`MessageDto`](crate::http::dto::MessageDto) first copies
//! every string of the message into the wire object, then escapes every key
//! and every value as it writes them: for a first page of ten messages that
//! was over a quarter of the instructions confab ran per request
//! (`bench/instructions.sh`, docs/performance.md). Here the keys are written
//! as the literals they are, ids (hex digits and hyphens) as they are, and
//! only the strings people wrote (a text, a username, a file name...) go
//! through serde_json's escaping. The wire objects of `dto` stay the schema
//! of record (OpenAPI) and the path of every other answer; a property test
//! below holds this writer to their exact bytes.

use confab_domain::{Attachment, Contact, Message, Paged, Reaction, Timestamp};
use serde::Serializer as _;
use uuid::Uuid;

/// What an answer's buffer starts with: most answers fit whole (a page of
/// ten messages is about 5 KB).
pub(crate) const BUFFER: usize = 8 * 1024;

/// Written JSON as a string (an event's payload, a kept 201): `None` only
/// if writing failed, which plain data does not.
pub fn text(json: serde_json::Result<Vec<u8>>) -> Option<String> {
    json.ok().and_then(|bytes| String::from_utf8(bytes).ok())
}

/// `{"has_more": ..., "data": [message, ...]}`.
pub fn message_page(page: &Paged<Message>) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(BUFFER);
    out.extend_from_slice(if page.has_more {
        br#"{"has_more":true,"data":"#
    } else {
        br#"{"has_more":false,"data":"#
    });
    array(&mut out, &page.items, write_message)?;
    out.push(b'}');
    Ok(out)
}

/// One message, as `GET /v1/messages/{id}` answers it.
pub fn message(m: &Message) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(BUFFER / 4);
    write_message(&mut out, m)?;
    Ok(out)
}

fn write_message(out: &mut Vec<u8>, m: &Message) -> serde_json::Result<()> {
    out.extend_from_slice(br#"{"id":"#);
    id(out, m.id().as_uuid());
    out.extend_from_slice(br#","conversation_id":"#);
    id(out, m.conversation_id().as_uuid());
    out.extend_from_slice(br#","contact":"#);
    write_contact(out, m.sender())?;
    out.extend_from_slice(br#","message":"#);
    string(out, m.text().as_str())?;
    out.extend_from_slice(br#","reactions":"#);
    array(out, m.reactions(), write_reaction)?;
    out.extend_from_slice(br#","attachments":"#);
    array(out, m.attachments(), write_attachment)?;
    out.extend_from_slice(br#","read_at":"#);
    opt_secs(out, m.read_at())?;
    out.extend_from_slice(br#","created_at":"#);
    secs(out, m.created_at())?;
    out.extend_from_slice(br#","updated_at":"#);
    opt_secs(out, m.updated_at())?;
    out.push(b'}');
    Ok(())
}

fn write_contact(out: &mut Vec<u8>, c: &Contact) -> serde_json::Result<()> {
    out.extend_from_slice(br#"{"id":"#);
    id(out, c.id().as_uuid());
    out.extend_from_slice(br#","username":"#);
    string(out, c.username().as_str())?;
    out.extend_from_slice(br#","phone_number":"#);
    string(out, c.phone_number().as_str())?;
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

fn write_attachment(out: &mut Vec<u8>, a: &Attachment) -> serde_json::Result<()> {
    out.extend_from_slice(br#"{"id":"#);
    id(out, a.id.as_uuid());
    out.extend_from_slice(br#","message_id":"#);
    id(out, a.message_id.as_uuid());
    out.extend_from_slice(br#","filename":"#);
    string(out, a.filename.as_str())?;
    out.extend_from_slice(br#","file_url":"#);
    string(out, a.file_url.as_str())?;
    out.extend_from_slice(br#","file_type":"#);
    string(out, a.file_type.as_str())?;
    out.extend_from_slice(br#","file_size":"#);
    nullable(out, a.file_size, |out, size| int(out, size.bytes()))?;
    out.extend_from_slice(br#","created_at":"#);
    secs(out, a.created_at)?;
    out.push(b'}');
    Ok(())
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
    use crate::http::dto::{ListDto, MessageDto};
    use confab_domain::{
        AttachmentId, AvatarUrl, ContactId, ContactParts, ConversationId, FileSize, FileType,
        FileUrl, Filename, MessageId, MessageParts, MessageText, PhoneNumber, ReactionName,
        Reactor, Username,
    };
    use proptest::prelude::*;

    /// Any text a message may hold: quotes, backslashes, control
    /// characters, every plane of Unicode.
    fn any_text() -> impl Strategy<Value = MessageText> {
        "(?s).{1,40}".prop_filter_map("a valid text", |s| MessageText::new(s).ok())
    }

    fn contact() -> impl Strategy<Value = Contact> {
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

    fn reaction() -> impl Strategy<Value = Reaction> {
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

    fn attachment() -> impl Strategy<Value = Attachment> {
        (
            any::<(u128, u128)>(),
            "[^/\\x00-\\x1f]{1,30}",
            "https://files\\.example/[a-z0-9\"]{1,20}",
            prop_oneof!["image/png", "application/x-\"odd\""],
            prop::option::of(0..i64::MAX),
            any::<i64>(),
        )
            .prop_filter_map(
                "a valid attachment",
                |((id, message), name, url, kind, size, made)| {
                    Some(Attachment {
                        id: AttachmentId::from_uuid(Uuid::from_u128(id)),
                        message_id: MessageId::from_uuid(Uuid::from_u128(message)),
                        filename: Filename::new(name).ok()?,
                        file_url: FileUrl::new(url).ok()?,
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

    prop_compose! {
        fn message_parts()(
            ids in any::<(u128, u128)>(),
            sender in contact(),
            text in any_text(),
            reactions in prop::collection::vec(reaction(), 0..3),
            attachments in prop::collection::vec(attachment(), 0..3),
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
                    .map(|a| Attachment { message_id: id, ..a })
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
        fn a_message_is_the_bytes_of_its_wire_object(m in any_message()) {
            let expected = serde_json::to_vec(&MessageDto::from(&m)).expect("json");
            prop_assert_eq!(
                String::from_utf8(message(&m).expect("json")).expect("utf-8"),
                String::from_utf8(expected).expect("utf-8")
            );
        }

        #[test]
        fn a_page_is_the_bytes_of_its_wire_object(
            items in prop::collection::vec(any_message(), 0..4),
            has_more in any::<bool>(),
        ) {
            let page = Paged { items, has_more };
            let written = message_page(&page).expect("json");
            let expected = serde_json::to_vec(&ListDto::from_paged(page, |m| MessageDto::from(&m)))
                .expect("json");
            prop_assert_eq!(
                String::from_utf8(written).expect("utf-8"),
                String::from_utf8(expected).expect("utf-8")
            );
        }
    }
}
