//! A tour of confab's domain rules: build contacts, a conversation and a
//! message, then apply the pin, mute, archive, edit, react and group rules
//! and print what each answers.
//!
//! Run with `cargo run -p confab-domain --example rules`.

use std::error::Error;

use confab_domain::{
    conversation_updated, AvatarUrl, Change, Contact, ContactId, ContactParts, Conversation,
    ConversationId, DomainError, EventId, Group, GroupDescription, GroupEdit, GroupId, GroupMember,
    GroupName, GroupParts, GroupRole, MemberState, MemberStatePatch, Message, MessageId,
    MessageParts, MessageText, PhoneNumber, ReactionName, Timestamp, Username,
};

fn contact(id: &str, name: &str, now: Timestamp) -> Result<Contact, Box<dyn Error>> {
    Ok(Contact::new(ContactParts {
        id: id.parse()?,
        username: Username::new(name.to_owned())?,
        phone_number: PhoneNumber::new("+15550100".to_owned())?,
        avatar_url: AvatarUrl::none(),
        last_active_at: now,
        created_at: now,
    })?)
}

/// Prints what a rule answered: the value it let through, or why not.
fn show<T: std::fmt::Debug>(what: &str, answer: Result<T, DomainError>) {
    match answer {
        Ok(value) => println!("{what:<44} ok: {value:?}"),
        Err(e) => println!("{what:<44} refused: {e}"),
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let now = Timestamp::from_secs(1_700_000_000);
    let alice = contact("0190a1b2-0000-7000-8000-00000000000a", "alice", now)?;
    let bob = contact("0190a1b2-0000-7000-8000-00000000000b", "bob", now)?;

    // Conversations: direct ones need two different contacts.
    let chat_id: ConversationId = "0190a1b2-0000-7000-8000-0000000000c0".parse()?;
    show(
        "a conversation with oneself",
        Conversation::new_direct(chat_id, alice.id(), alice.id(), now).map(|c| c.id()),
    );
    let chat = Conversation::new_direct(chat_id, alice.id(), bob.id(), now)?;
    println!(
        "{:<44} {:?}",
        "bob's view: the other member is",
        chat.other_member(bob.id()).map(|c| c == alice.id())
    );

    // Values: checked once, when built.
    show(
        "a blank message text",
        MessageText::new(" \u{200B} ".into()),
    );
    show(
        "a 4097-character text",
        MessageText::new("x".repeat(4097)).map(|t| t.as_str().len()),
    );
    show("reaction name \"Like\"", ReactionName::new("Like".into()));

    // Entities: built through a constructor that checks the rules between
    // their attributes; their fields are private.
    let message = Message::new(MessageParts {
        id: "0190a1b2-0000-7000-8000-0000000000d0".parse()?,
        conversation_id: chat.id(),
        sender: alice.clone(),
        text: MessageText::new("Hello, Bob!".into())?,
        reactions: vec![],
        attachments: vec![],
        read_at: None,
        created_at: now,
        updated_at: None,
        reply_to: None,
        parent_id: None,
        reply_count: 0,
        last_reply_at: None,
        mentions: confab_domain::Mentions::none(),
        edited_at: None,
    })?;

    // The pinned message: a message of this conversation only.
    show("pin alice's message", chat.check_pin(&message));
    let elsewhere = Message::new(MessageParts {
        conversation_id: "0190a1b2-0000-7000-8000-0000000000c1".parse()?,
        ..message.clone().into_parts()
    })?;
    show(
        "pin a message of another conversation",
        chat.check_pin(&elsewhere),
    );

    // A member's own state: pin, mute, archive.
    show("archive now", chat.check_archive(now, now));
    show(
        "archive an hour ahead",
        chat.check_archive(now.plus_secs(3_600), now),
    );
    show(
        "archive before the conversation existed",
        chat.check_archive(now.plus_secs(-1), now),
    );
    let state = MemberState::default().patched(&MemberStatePatch {
        is_pinned: Some(true),
        is_muted: Some(true),
        archived_at: Some(Some(chat.check_archive(now, now)?)),
    });
    println!("{:<44} {state:?}", "bob pins, mutes and archives");
    let unarchived = state.patched(&MemberStatePatch {
        archived_at: Some(None),
        ..MemberStatePatch::default()
    });
    println!("{:<44} {unarchived:?}", "then unarchives");

    // Such a change concerns bob alone: its event goes to him only.
    let mut n = 0u128;
    let events = conversation_updated(
        Change::new(bob.id(), now),
        || {
            n += 1;
            EventId::from_uuid(uuid_from(n))
        },
        chat.id(),
        false,
    );
    println!(
        "{:<44} {} for {:?}",
        "the event of bob's change", events[0].kind, events[0].audience
    );

    // Messages: only the sender edits or deletes; reactions in one's own name.
    show("alice edits her message", message.check_edit(alice.id()));
    show("bob edits alice's message", message.check_edit(bob.id()));
    let like = ReactionName::new("like".into())?;
    show(
        "bob reacts \"like\" as bob",
        message.plan_reactions(&bob, &[(like.clone(), vec!["BOB".into()])]),
    );
    show(
        "bob reacts \"like\" as alice",
        message.plan_reactions(&bob, &[(like, vec!["alice".into()])]),
    );
    show(
        "alice attaches 11 files",
        message.check_attach(alice.id(), 11),
    );

    // Groups: owners change them; the last owner cannot leave.
    let group = Group::new(GroupParts {
        id: "0190a1b2-0000-7000-8000-0000000000e0".parse::<GroupId>()?,
        name: GroupName::new("Team".into())?,
        description: GroupDescription::empty(),
        avatar_url: AvatarUrl::none(),
        created_by: alice.id(),
        created_at: now,
        first_members: vec![
            GroupMember {
                contact: alice.clone(),
                role: GroupRole::Owner,
                joined_at: now,
            },
            GroupMember {
                contact: bob.clone(),
                role: GroupRole::Member,
                joined_at: now,
            },
        ],
        member_count: 2,
        owners: vec![alice.id()],
    })?;
    // Each member's role, as a store would read it for the change.
    let role_of = |id| {
        group
            .first_members()
            .iter()
            .find(|m| m.contact.id() == id)
            .map(|m| m.role)
    };
    fn removing(who: &[ContactId]) -> GroupEdit<'_> {
        GroupEdit {
            removes: who,
            ..GroupEdit::default()
        }
    }
    show(
        "bob leaves the group",
        group.check_update(bob.id(), &removing(&[bob.id()]), role_of),
    );
    show(
        "bob removes alice",
        group.check_update(bob.id(), &removing(&[alice.id()]), role_of),
    );
    show(
        "alice makes bob an admin",
        group.check_update(
            alice.id(),
            &GroupEdit {
                add_admins: &[bob.id()],
                ..GroupEdit::default()
            },
            role_of,
        ),
    );
    show(
        "alice, the last owner, leaves",
        group.check_update(alice.id(), &removing(&[alice.id()]), role_of),
    );

    // Ids have one spelling.
    let typed: Result<MessageId, _> = "0190A1B2-0000-7000-8000-0000000000D0".parse();
    println!(
        "{:<44} {}",
        "a message id in capitals",
        typed.map_or_else(|e| format!("refused: {e}"), |id| format!("ok: {id}"))
    );
    Ok(())
}

/// A UUID from a number, for the example's event ids (a service uses
/// time-ordered UUIDv7s from its id generator).
fn uuid_from(n: u128) -> uuid::Uuid {
    uuid::Uuid::from_u128(n)
}
