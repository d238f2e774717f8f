use super::*;
use crate::{
    AttachmentId, AvatarUrl, ContactParts, FileSource, FileType, FileUrl, Filename, PhoneNumber,
    Reactor, Username,
};
use uuid::Uuid;

fn contact(n: u128, name: &str) -> Contact {
    Contact::new(ContactParts {
        id: ContactId::from_uuid(Uuid::from_u128(n)),
        username: Username::new(name.into()).expect("valid"),
        phone_number: PhoneNumber::new("+15550100".into()).expect("valid"),
        avatar_url: AvatarUrl::none(),
        last_active_at: Timestamp::from_secs(0),
        created_at: Timestamp::from_secs(0),
    })
    .expect("valid")
}

fn rn(s: &str) -> ReactionName {
    ReactionName::new(s.into()).expect("valid")
}

fn reactor(c: &Contact) -> Reactor {
    Reactor {
        contact_id: c.id(),
        username: c.username().clone(),
    }
}

fn parts(sender: Contact) -> MessageParts {
    MessageParts::new(
        MessageId::from_uuid(Uuid::from_u128(77)),
        ConversationId::from_uuid(Uuid::from_u128(9)),
        sender,
        MessageText::new("hi".into()).expect("valid"),
        Timestamp::from_secs(0),
    )
}

fn message(sender: Contact) -> Message {
    Message::new(parts(sender)).expect("valid")
}

fn attachment(n: u128) -> Attachment {
    Attachment {
        id: AttachmentId::from_uuid(Uuid::from_u128(n)),
        message_id: Some(MessageId::from_uuid(Uuid::from_u128(77))),
        conversation_id: Some(ConversationId::from_uuid(Uuid::from_u128(9))),
        uploader: ContactId::from_uuid(Uuid::from_u128(1)),
        filename: Filename::new("a".into()).expect("valid"),
        source: FileSource::Link(FileUrl::new("https://x.example/a".into()).expect("valid")),
        file_type: FileType::octet_stream(),
        file_size: None,
        created_at: Timestamp::from_secs(0),
    }
}

#[test]
fn only_sender_edits_deletes_attaches() {
    let alice = contact(1, "alice");
    let bob = contact(2, "bob");
    let m = message(alice.clone());
    assert!(m.check_edit(alice.id()).is_ok());
    assert!(matches!(
        m.check_edit(bob.id()),
        Err(DomainError::Forbidden(_))
    ));
    assert!(m.check_delete(alice.id(), false).is_ok());
    assert!(matches!(
        m.check_delete(bob.id(), false),
        Err(DomainError::Forbidden(_))
    ));
    // The group's owner or an admin moderates it.
    assert!(m.check_delete(bob.id(), true).is_ok());
    assert!(m.check_attach(alice.id(), 10).is_ok());
    assert!(matches!(
        m.check_attach(bob.id(), 1),
        Err(DomainError::Forbidden(_))
    ));
}

#[test]
fn attachment_limit_counts_existing_ones() {
    let alice = contact(1, "alice");
    let m = Message::new(MessageParts {
        attachments: (0..9).map(attachment).collect(),
        ..parts(alice.clone())
    })
    .expect("9 attachments");
    assert!(m.check_attach(alice.id(), 1).is_ok());
    assert!(matches!(
        m.check_attach(alice.id(), 2),
        Err(DomainError::Invalid {
            field: Field::Attachments,
            rule: Rule::TooManyAttachments { max: 10 }
        })
    ));
}

#[test]
fn reacting_only_in_own_name() {
    let alice = contact(1, "alice");
    let bob = contact(2, "bob");
    let m = message(alice.clone());
    let ok = m.plan_reactions(&bob, &[(rn("like"), vec!["BOB".into()])]);
    assert_eq!(ok, Ok(vec![rn("like")]));
    let forged = m.plan_reactions(&bob, &[(rn("like"), vec!["alice".into()])]);
    assert!(matches!(forged, Err(DomainError::Forbidden(_))));
    let mixed = m.plan_reactions(&bob, &[(rn("like"), vec!["bob".into(), "alice".into()])]);
    assert!(matches!(mixed, Err(DomainError::Forbidden(_))));
    let empty = m.plan_reactions(&bob, &[(rn("like"), vec![])]);
    assert!(matches!(
        empty,
        Err(DomainError::Invalid {
            field: Field::Reactions,
            rule: Rule::ReactionWithoutReactor
        })
    ));
}

#[test]
fn existing_reaction_is_not_added_twice() {
    let alice = contact(1, "alice");
    let bob = contact(2, "bob");
    let m = Message::new(MessageParts {
        reactions: vec![Reaction::new(rn("like"), vec![reactor(&bob)]).expect("valid")],
        ..parts(alice.clone())
    })
    .expect("valid");
    let plan = m.plan_reactions(
        &bob,
        &[
            (rn("like"), vec!["bob".into()]),
            (rn("heart"), vec!["bob".into()]),
        ],
    );
    assert_eq!(plan, Ok(vec![rn("heart")]));
    // alice may still add "like": same name, another reactor.
    assert_eq!(
        m.plan_reactions(&alice, &[(rn("like"), vec!["alice".into()])]),
        Ok(vec![rn("like")])
    );
}

#[test]
fn a_message_keeps_its_rules() {
    let alice = contact(1, "alice");
    let bob = contact(2, "bob");
    let breaks = |field, rule| Err(DomainError::breaks(field, rule));
    assert!(Message::new(MessageParts {
        attachments: (0..10).map(attachment).collect(),
        ..parts(alice.clone())
    })
    .is_ok());
    assert_eq!(
        Message::new(MessageParts {
            attachments: (0..11).map(attachment).collect(),
            ..parts(alice.clone())
        }),
        breaks(Field::Attachments, Rule::TooManyAttachments { max: 10 })
    );
    let mut elsewhere = attachment(1);
    elsewhere.message_id = Some(MessageId::from_uuid(Uuid::from_u128(78)));
    assert_eq!(
        Message::new(MessageParts {
            attachments: vec![attachment(0), elsewhere],
            ..parts(alice.clone())
        }),
        breaks(Field::Attachments, Rule::OfAnotherMessage)
    );
    let like = |who: &Contact| Reaction::new(rn("like"), vec![reactor(who)]).expect("valid");
    assert_eq!(
        Message::new(MessageParts {
            reactions: vec![like(&alice), like(&bob)],
            ..parts(alice.clone())
        }),
        breaks(Field::Reactions, Rule::DuplicateReactionName)
    );
    assert_eq!(
        Message::new(MessageParts {
            reactions: (0..33)
                .map(|i| Reaction::new(rn(&format!("r{i}")), vec![reactor(&bob)]))
                .collect::<Result<_, _>>()
                .expect("valid"),
            ..parts(alice.clone())
        }),
        breaks(Field::Reactions, Rule::TooManyReactionNames { max: 32 })
    );
    // Taken apart and built again, it is the same message.
    let m = message(alice.clone());
    assert_eq!(Message::new(m.clone().into_parts()), Ok(m));
}

#[test]
fn a_reaction_has_each_reactor_once() {
    let alice = contact(1, "alice");
    let bob = contact(2, "bob");
    assert_eq!(
        Reaction::new(rn("like"), vec![]),
        Err(DomainError::breaks(Field::Reactions, Rule::EmptyReaction))
    );
    assert_eq!(
        Reaction::new(
            rn("like"),
            vec![reactor(&alice), reactor(&bob), reactor(&alice)]
        ),
        Err(DomainError::breaks(
            Field::Reactions,
            Rule::DuplicateReactor
        ))
    );
    let r = Reaction::new(rn("like"), vec![reactor(&bob)]).expect("valid");
    assert!(r.has_reactor(bob.id()) && !r.has_reactor(alice.id()));
}

#[test]
fn at_most_32_distinct_names() {
    let alice = contact(1, "alice");
    let m = Message::new(MessageParts {
        reactions: (0..32)
            .map(|i| Reaction::new(rn(&format!("r{i}")), vec![reactor(&alice)]).expect("valid"))
            .collect(),
        ..parts(alice.clone())
    })
    .expect("32 names");
    let bob = contact(2, "bob");
    // Joining an existing name is fine; a 33rd name is not.
    assert!(m
        .plan_reactions(&bob, &[(rn("r3"), vec!["bob".into()])])
        .is_ok());
    assert!(matches!(
        m.plan_reactions(&bob, &[(rn("new"), vec!["bob".into()])]),
        Err(DomainError::Invalid {
            field: Field::Reactions,
            rule: Rule::TooManyReactionNames { max: 32 }
        })
    ));
}
