//! Events (docs/api.md "Listen for events"): what each write hands the store, and that
//! a write that changes nothing hands it nothing.
use confab_domain::{
    AttachmentId, Audience, ContactProfilePatch, Event, EventType, FileUrl, Filename,
    NewAttachment, PhoneNumber, ReactionName, Subject,
};
use confab_ports::{MockEventSignal, Outbox, StoreError};

use crate::{ConversationTarget, MessageUpdate, SendMessage};

use super::*;

fn at_now() -> Timestamp {
    Timestamp::from_secs(NOW)
}

/// (kind, subject, audience) of each event; each made by `actor` now.
fn summary(outbox: &Outbox, actor: &Contact) -> Vec<(EventType, Subject, Audience)> {
    outbox
        .events
        .iter()
        .map(|e: &Event| {
            assert_eq!(e.actor, actor.id(), "made by the caller");
            assert_eq!(e.at, at_now(), "made now");
            (e.kind, e.subject, e.audience.clone())
        })
        .collect()
}

fn members() -> Audience {
    Audience::ConversationMembers(conv_id())
}

/// A signal that must be told of exactly `n` commits.
fn signalled(m: &mut Mocks, n: usize) {
    let mut signal = MockEventSignal::new();
    signal.expect_committed().times(n).returning(|| ());
    m.signal = Some(signal);
}

fn file() -> NewAttachment {
    NewAttachment {
        filename: Filename::new("a.txt".into()).expect("valid"),
        file_url: FileUrl::new("https://f.example/a".into()).expect("valid"),
        file_type: confab_domain::FileType::new("text/plain".into()).expect("valid"),
        file_size: None,
    }
}

#[tokio::test]
async fn a_send_hands_message_created_for_the_members_and_signals_once() {
    let mut m = Mocks::new();
    m.messages
        .expect_append_message()
        .withf(|n, outbox, _| {
            summary(outbox, &bob())
                == [(EventType::MessageCreated, Subject::Message(n.id), members())]
        })
        .times(1)
        .returning(|_, _, _| Ok(message_from(bob())));
    signalled(&mut m, 1);
    let send = SendMessage {
        attachments: vec![crate::AttachmentInput::Link(file())],
        ..hi()
    };
    m.service()
        .send_message(&bob(), send, None)
        .await
        .expect("sent");
}

#[tokio::test]
async fn a_failed_write_signals_nothing() {
    let mut m = Mocks::new();
    m.messages
        .expect_append_message()
        .returning(|_, _, _| Err(StoreError::NotFound));
    signalled(&mut m, 0);
    let send = hi();
    assert!(m.service().send_message(&bob(), send, None).await.is_err());
}

#[tokio::test]
async fn an_edit_with_files_hands_message_updated_and_each_attachment() {
    let mut m = Mocks::new();
    visible_message(&mut m, alice(), &alice());
    m.messages
        .expect_update_message()
        .withf(|id, change, outbox| {
            let files: Vec<AttachmentId> = change
                .add_attachments
                .iter()
                .map(confab_domain::AddAttachment::id)
                .collect();
            summary(outbox, &alice())
                == [
                    (EventType::MessageUpdated, Subject::Message(*id), members()),
                    (
                        EventType::AttachmentCreated,
                        Subject::Attachment(files[0]),
                        members(),
                    ),
                ]
        })
        .times(1)
        .returning(|_, _, _| Ok(message_from(alice())));
    signalled(&mut m, 1);
    let update = MessageUpdate {
        text: Some(text("edited")),
        attachments: vec![crate::AttachmentInput::Link(file())],
        ..Default::default()
    };
    m.service()
        .update_message(&alice(), msg_id(), update)
        .await
        .expect("updated");
}

#[tokio::test]
async fn unchanged_text_and_a_reaction_one_does_not_have_write_nothing() {
    let mut m = Mocks::new();
    visible_message(&mut m, alice(), &alice());
    signalled(&mut m, 0);
    let svc = m.service();
    let same = MessageUpdate {
        text: Some(text("hello")),
        ..Default::default()
    };
    svc.update_message(&alice(), msg_id(), same)
        .await
        .expect("no-op");
    svc.remove_reaction(
        &alice(),
        msg_id(),
        ReactionName::new("like".into()).expect("valid"),
    )
    .await
    .expect("no-op");
}

#[tokio::test]
async fn a_delete_hands_message_deleted() {
    let mut m = Mocks::new();
    visible_message(&mut m, alice(), &alice());
    m.messages
        .expect_delete_message()
        .withf(|id, _, outbox| {
            summary(outbox, &alice())
                == [(EventType::MessageDeleted, Subject::Message(*id), members())]
        })
        .times(1)
        .returning(|_, _, _| Ok(()));
    signalled(&mut m, 1);
    m.service()
        .delete_message(&alice(), msg_id())
        .await
        .expect("deleted");
}

#[tokio::test]
async fn opening_hands_the_openers_update_and_the_read_marks() {
    let mut m = Mocks::new();
    let v = view(&bob());
    m.conversations
        .expect_open_conversation()
        .withf(|viewer, id, _, outbox| {
            *viewer == bob().id()
                && summary(outbox, &bob())
                    == [
                        (
                            EventType::ConversationUpdated,
                            Subject::Conversation(*id),
                            Audience::Contact(bob().id()),
                        ),
                        (
                            EventType::MessageUpdated,
                            Subject::MessagesMarkedRead(*id),
                            members(),
                        ),
                    ]
        })
        .times(1)
        .returning(move |_, _, _, _| Ok(v.clone()));
    signalled(&mut m, 1);
    m.service()
        .open_conversation(&bob(), conv_id())
        .await
        .expect("opened");
}

#[tokio::test]
async fn own_state_is_for_the_caller_and_the_pinned_message_for_all() {
    let mut m = Mocks::new();
    let v = view(&alice());
    m.conversations
        .expect_conversation_for()
        .returning(move |_, _| Ok(Some(v.clone())));
    let msg = message_from(bob());
    m.messages
        .expect_message_for()
        .returning(move |_, _| Ok(Some(msg.clone())));
    let v2 = view(&alice());
    m.conversations
        .expect_update_conversation()
        .withf(|_, id, pinned, _, outbox| {
            let audience = if pinned.is_some() {
                members()
            } else {
                Audience::Contact(alice().id())
            };
            summary(outbox, &alice())
                == [(
                    EventType::ConversationUpdated,
                    Subject::Conversation(*id),
                    audience,
                )]
        })
        .times(2)
        .returning(move |_, _, _, _, _| Ok(v2.clone()));
    signalled(&mut m, 2);
    let svc = m.service();
    svc.update_conversation(&alice(), conv_id(), None, Some(true), None, None)
        .await
        .expect("pinned for alice");
    svc.update_conversation(&alice(), conv_id(), Some(Some(msg_id())), None, None, None)
        .await
        .expect("pinned message");
    // Nothing submitted: nothing written, nothing signalled.
    svc.update_conversation(&alice(), conv_id(), None, None, None, None)
        .await
        .expect("no-op");
}

#[tokio::test]
async fn conversations_created_and_deleted_are_for_their_members() {
    let mut m = Mocks::new();
    m.contacts.expect_contact().returning(|_| Ok(Some(bob())));
    m.conversations
        .expect_create_conversation()
        .withf(|c, outbox, _| {
            summary(outbox, &alice())
                == [(
                    EventType::ConversationCreated,
                    Subject::Conversation(c.id()),
                    Audience::ConversationMembers(c.id()),
                )]
        })
        .times(1)
        .returning(|_, _, _| Ok(()));
    let v = view(&alice());
    m.conversations
        .expect_conversation_for()
        .returning(move |_, _| Ok(Some(v.clone())));
    m.conversations
        .expect_delete_conversation()
        .withf(|id, _, outbox| {
            summary(outbox, &alice())
                == [(
                    EventType::ConversationDeleted,
                    Subject::Conversation(*id),
                    members(),
                )]
        })
        .times(1)
        .returning(|_, _, _| Ok(()));
    signalled(&mut m, 2);
    let svc = m.service();
    svc.create_conversation(&alice(), ConversationTarget::Contact(bob().id()), None)
        .await
        .expect("created");
    svc.delete_conversation(&alice(), conv_id())
        .await
        .expect("deleted");
}

#[tokio::test]
async fn group_events_go_to_members_and_the_removed() {
    let mut m = Mocks::new();
    let g = group_with(&alice(), &bob());
    group_seen(&mut m, &g);
    let gid = g.id();
    let g3 = g.clone();
    m.groups
        .expect_create_group()
        .withf(|new, _, outbox, _| {
            summary(outbox, &alice())
                == [(
                    EventType::GroupCreated,
                    Subject::Group(new.id),
                    Audience::GroupMembers {
                        group: new.id,
                        also: vec![],
                    },
                )]
        })
        .times(1)
        .returning(move |_, _, _, _| Ok(g3.clone()));
    let g4 = g.clone();
    m.groups
        .expect_update_group()
        .withf(move |id, _, _, outbox| {
            summary(outbox, &alice())
                == [(
                    EventType::GroupUpdated,
                    Subject::Group(*id),
                    Audience::GroupMembers {
                        group: gid,
                        also: vec![bob().id()],
                    },
                )]
        })
        .times(1)
        .returning(move |_, _, _, _| Ok(g4.clone()));
    m.groups
        .expect_delete_group()
        .withf(move |id, outbox| {
            summary(outbox, &alice())
                == [(
                    EventType::GroupDeleted,
                    Subject::Group(*id),
                    Audience::GroupMembers {
                        group: gid,
                        also: vec![],
                    },
                )]
        })
        .times(1)
        .returning(|_, _| Ok(()));
    signalled(&mut m, 3);
    let svc = m.service();
    svc.create_group(
        &alice(),
        crate::NewGroupRequest {
            name: GroupName::new("team".into()).expect("valid"),
            description: None,
            avatar_url: None,
            contact_ids: vec![bob().id()],
        },
        None,
    )
    .await
    .expect("created");
    svc.update_group(
        &alice(),
        gid,
        crate::GroupUpdate {
            remove_contact_ids: vec![bob().id()],
            ..Default::default()
        },
    )
    .await
    .expect("updated");
    svc.delete_group(&alice(), gid).await.expect("deleted");
}

#[tokio::test]
async fn contacts_hear_of_themselves_and_their_circle_of_profile_changes() {
    let mut m = Mocks::new();
    m.contacts
        .expect_create_contact()
        .withf(|c, outbox| {
            summary(outbox, c)
                == [(
                    EventType::ContactCreated,
                    Subject::Contact(c.id()),
                    Audience::Contact(c.id()),
                )]
        })
        .times(1)
        .returning(|c, _| Ok(c));
    m.contacts
        .expect_update_contact()
        .withf(|id, _, outbox| {
            summary(outbox, &alice())
                == [(
                    EventType::ContactUpdated,
                    Subject::Contact(*id),
                    Audience::ContactCircle(alice().id()),
                )]
        })
        .times(1)
        .returning(|_, _, _| Ok(alice()));
    signalled(&mut m, 2);
    let svc = m.service();
    svc.create_contact("carol", "+15550100", None)
        .await
        .expect("created");
    let patch = ContactProfilePatch {
        phone_number: Some(PhoneNumber::new("+15550199".into()).expect("valid")),
        avatar_url: None,
    };
    svc.update_me(&alice(), patch).await.expect("updated");
    // An empty patch: nothing written, nothing signalled.
    svc.update_me(&alice(), ContactProfilePatch::default())
        .await
        .expect("no-op");
}
