//! The wire writers held to objects built by hand from each entity.
use super::*;
use confab_domain::{
    AttachmentId, AvatarUrl, ContactId, ContactParts, ConversationId, FileSize, FileType, FileUrl,
    Filename, GroupDescription, GroupId, GroupMember, GroupName, GroupParts, GroupRole, Mentions,
    MessageId, MessageParts, MessageText, PhoneNumber, QuotedMessage, ReactionName, Reactor,
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
        "reply_to": m.reply_to().map(|q| match q {
            Quote::Deleted(id) => json!({"id": id_json(id.as_uuid()), "deleted": true}),
            Quote::Message(q) => json!({
                "id": id_json(q.id.as_uuid()),
                "contact": {
                    "id": id_json(q.sender.as_uuid()),
                    "username": q.sender_username.as_str(),
                },
                "message": q.text.as_str(),
            }),
        }),
        "parent_id": m.parent_id().map(|p| id_json(p.as_uuid())),
        "reply_count": m.reply_count(),
        "last_reply_at": m.last_reply_at().map(Timestamp::secs),
        "mentions": m
            .mentions()
            .contacts()
            .iter()
            .map(|c| id_json(c.as_uuid()))
            .collect::<Vec<_>>(),
        "edited_at": m.edited_at().map(Timestamp::secs),
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
        depth in message_depth(),
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
            ..depth
        }
    }
}

prop_compose! {
    /// A message's quote, thread, mentions and edit time, any of them,
    /// around placeholder attributes that `message_parts` replaces.
    fn message_depth()(
        quote in prop::option::of((any::<u128>(), any::<bool>(), any_contact(), any_text())),
        parent in prop::option::of(any::<u128>()),
        reply_count in any::<u32>(),
        last_reply_at in prop::option::of(any::<i64>()),
        mentions in prop::collection::btree_set(any::<u128>(), 0..4),
        edited_at in prop::option::of(any::<i64>()),
        placeholder in any_contact(),
    ) -> MessageParts {
        MessageParts {
            reply_to: quote.map(|(q, gone, sender, text)| {
                let id = MessageId::from_uuid(Uuid::from_u128(q));
                if gone {
                    Quote::Deleted(id)
                } else {
                    Quote::Message(QuotedMessage {
                        id,
                        sender: sender.id(),
                        sender_username: sender.username().clone(),
                        text,
                    })
                }
            }),
            parent_id: parent.map(|p| MessageId::from_uuid(Uuid::from_u128(p))),
            reply_count: u64::from(reply_count),
            last_reply_at: last_reply_at.map(Timestamp::from_micros),
            mentions: Mentions::new(
                mentions
                    .into_iter()
                    .map(|c| ContactId::from_uuid(Uuid::from_u128(c)))
                    .collect(),
            )
            .expect("distinct"),
            edited_at: edited_at.map(Timestamp::from_micros),
            ..MessageParts::new(
                MessageId::from_uuid(Uuid::nil()),
                ConversationId::from_uuid(Uuid::nil()),
                placeholder,
                MessageText::none(),
                Timestamp::from_micros(0),
            )
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
        reply_to: None,
        parent_id: None,
        reply_count: 0,
        last_reply_at: None,
        mentions: confab_domain::Mentions::none(),
        edited_at: None,
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
            r#""read_at":null,"created_at":1700000001,"updated_at":1700000002,"#,
            r#""reply_to":null,"parent_id":null,"reply_count":0,"last_reply_at":null,"#,
            r#""mentions":[],"edited_at":null}"#,
        )
    );
}
