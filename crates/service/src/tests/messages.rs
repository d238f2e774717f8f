//! Messages: who may read, send, edit, react to and delete them.
use confab_domain::{Cursor, Field, Page, PageLimit, ReactionName, Rule};
use confab_ports::{Outbox, PayloadRenderer, StoreError};

use crate::{MessageUpdate, ServiceError};

use super::*;

#[tokio::test]
async fn outsider_gets_not_found_for_a_message_and_nothing_is_written() {
    let mut m = Mocks::new();
    let carol = contact(3, "carol");
    // The store answers "not visible" exactly like "no such message".
    m.messages
        .expect_message_for()
        .with(eq(carol.id()), eq(msg_id()))
        .returning(|_, _| Ok(None));
    let svc = m.service();
    assert!(matches!(
        svc.message(&carol, msg_id()).await,
        Err(ServiceError::NotFound { of: None })
    ));
    let update = MessageUpdate {
        text: Some(text("mine now")),
        ..Default::default()
    };
    assert!(matches!(
        svc.update_message(&carol, msg_id(), update).await,
        Err(ServiceError::NotFound { .. })
    ));
    assert!(matches!(
        svc.delete_message(&carol, msg_id()).await,
        Err(ServiceError::NotFound { .. })
    ));
}

#[tokio::test]
async fn sending_into_a_foreign_conversation_is_not_found_naming_the_conversation() {
    let mut m = Mocks::new();
    // The store checks membership inside the write.
    m.messages
        .expect_append_message()
        .times(1)
        .returning(|_, _, _| Err(StoreError::NotFound));
    let svc = m.service();
    let send = hi();
    assert!(matches!(
        svc.send_message(&contact(3, "carol"), send, None).await,
        Err(ServiceError::NotFound {
            of: Some(Field::Conversation)
        })
    ));
}

#[tokio::test]
async fn send_appends_as_the_caller_at_now() {
    let mut m = Mocks::new();
    m.messages
        .expect_append_message()
        .withf(|n, _, completion| {
            completion.is_none()
                && n.sender == bob()
                && n.conversation_id == conv_id()
                && n.created_at == Timestamp::from_secs(NOW)
        })
        .times(1)
        .returning(|_, _, _| Ok(message_from(bob())));
    let svc = m.service();
    let send = hi();
    assert!(svc.send_message(&bob(), send, None).await.is_ok());
}

/// A renderer of its own for one write, and whether an outbox renders
/// with it.
fn own_renderer() -> (
    Arc<dyn PayloadRenderer>,
    impl Fn(&Outbox) -> bool + Send + Sync + 'static,
) {
    let render: Arc<dyn PayloadRenderer> = Arc::new(MockPayloadRenderer::new());
    let expected = render.clone();
    (render, move |outbox: &Outbox| {
        Arc::ptr_eq(&outbox.render, &expected)
    })
}

#[tokio::test]
async fn a_send_hands_the_store_the_renderer_it_was_given() {
    let mut m = Mocks::new();
    let (render, renders_with_it) = own_renderer();
    m.messages
        .expect_append_message()
        .withf(move |_, outbox, _| renders_with_it(outbox))
        .times(1)
        .returning(|_, _, _| Ok(message_from(bob())));
    let send = hi();
    assert!(m
        .service()
        .send_message_rendered_by(&bob(), send, None, render)
        .await
        .is_ok());
}

#[tokio::test]
async fn an_edit_and_an_unreact_hand_the_store_the_renderer_they_were_given() {
    let mut m = Mocks::new();
    let like = ReactionName::new("like".into()).expect("valid");
    let mut parts = message_from(alice()).into_parts();
    parts.reactions = vec![confab_domain::Reaction::new(
        like.clone(),
        vec![confab_domain::Reactor {
            contact_id: bob().id(),
            username: bob().username().clone(),
        }],
    )
    .expect("valid")];
    let liked = confab_domain::Message::new(parts).expect("valid");
    m.messages
        .expect_message_for()
        .returning(move |_, _| Ok(Some(liked.clone())));
    let (render, renders_with_it) = own_renderer();
    m.messages
        .expect_update_message()
        .withf(move |_, _, outbox| renders_with_it(outbox))
        .times(1)
        .returning(|_, _, _| Ok(message_from(alice())));
    let (unreact_render, unreact_renders_with_it) = own_renderer();
    m.messages
        .expect_remove_reaction()
        .withf(move |_, _, _, _, outbox| unreact_renders_with_it(outbox))
        .times(1)
        .returning(|_, _, _, _, _| Ok(message_from(alice())));
    let svc = m.service();
    let update = MessageUpdate {
        reactions: vec![(
            ReactionName::new("heart".into()).expect("valid"),
            vec!["bob".into()],
        )],
        ..Default::default()
    };
    assert!(svc
        .update_message_rendered_by(&bob(), msg_id(), update, render)
        .await
        .is_ok());
    assert!(svc
        .remove_reaction_rendered_by(&bob(), msg_id(), like, unreact_render)
        .await
        .is_ok());
}

#[tokio::test]
async fn only_the_sender_edits() {
    let mut m = Mocks::new();
    visible_message(&mut m, alice(), &bob());
    let svc = m.service();
    let update = MessageUpdate {
        text: Some(text("edited")),
        ..Default::default()
    };
    assert!(matches!(
        svc.update_message(&bob(), msg_id(), update).await,
        Err(ServiceError::Forbidden(_))
    ));
}

#[tokio::test]
async fn sender_edit_reaches_the_store_with_now() {
    let mut m = Mocks::new();
    visible_message(&mut m, alice(), &alice());
    m.messages
        .expect_update_message()
        .withf(|id, c, _| {
            *id == msg_id()
                && c.text.as_ref().map(MessageText::as_str) == Some("edited")
                && c.at == Timestamp::from_secs(NOW)
        })
        .times(1)
        .returning(|_, _, _| Ok(message_from(alice())));
    let update = MessageUpdate {
        text: Some(text("edited")),
        ..Default::default()
    };
    assert!(m
        .service()
        .update_message(&alice(), msg_id(), update)
        .await
        .is_ok());
}

#[tokio::test]
async fn only_the_sender_attaches() {
    let mut m = Mocks::new();
    visible_message(&mut m, alice(), &bob());
    let update = MessageUpdate {
        attachments: vec![crate::AttachmentInput::Link(confab_domain::NewAttachment {
            filename: confab_domain::Filename::new("a.txt".into()).expect("valid"),
            file_url: confab_domain::FileUrl::new("https://x.example/a".into()).expect("valid"),
            file_type: confab_domain::FileType::octet_stream(),
            file_size: None,
        })],
        ..Default::default()
    };
    assert!(matches!(
        m.service().update_message(&bob(), msg_id(), update).await,
        Err(ServiceError::Forbidden(_))
    ));
}

/// A "like" in `username`'s name.
fn like_as(username: &str) -> MessageUpdate {
    let like = ReactionName::new("like".into()).expect("valid");
    MessageUpdate {
        reactions: vec![(like, vec![username.into()])],
        ..Default::default()
    }
}

#[tokio::test]
async fn reacting_in_someone_elses_name_is_forbidden() {
    let mut m = Mocks::new();
    visible_message(&mut m, alice(), &bob());
    let update = like_as("alice");
    assert!(matches!(
        m.service().update_message(&bob(), msg_id(), update).await,
        Err(ServiceError::Forbidden(_))
    ));
}

#[tokio::test]
async fn any_member_reacts_in_own_name() {
    let mut m = Mocks::new();
    visible_message(&mut m, alice(), &bob());
    m.messages
        .expect_update_message()
        .withf(|_, c, _| c.reactor == bob().id() && c.add_reactions.len() == 1 && c.text.is_none())
        .times(1)
        .returning(|_, _, _| Ok(message_from(alice())));
    let update = like_as("bob");
    assert!(m
        .service()
        .update_message(&bob(), msg_id(), update)
        .await
        .is_ok());
}

#[tokio::test]
async fn empty_update_returns_the_message_without_writing() {
    let mut m = Mocks::new();
    visible_message(&mut m, alice(), &alice());
    let got = m
        .service()
        .update_message(&alice(), msg_id(), MessageUpdate::default())
        .await
        .expect("ok");
    assert_eq!(got.updated_at(), None);
}

#[tokio::test]
async fn only_the_sender_deletes_in_a_direct_conversation() {
    let mut m = Mocks::new();
    visible_message(&mut m, alice(), &bob());
    m.conversations
        .expect_conversation_for()
        .returning(|viewer, _| {
            Ok(Some(ConversationView {
                viewer,
                ..view(&bob())
            }))
        });
    assert!(matches!(
        m.service().delete_message(&bob(), msg_id()).await,
        Err(ServiceError::Forbidden(_))
    ));
}

/// A group conversation of group 7, as `viewer` sees it.
fn group_view(viewer: ContactId) -> ConversationView {
    ConversationView {
        conversation: Conversation::new_group(
            conv_id(),
            alice().id(),
            GroupId::from_uuid(Uuid::from_u128(7)),
            Timestamp::from_secs(NOW - 50),
        ),
        viewer,
        state: MemberState::default(),
    }
}

#[tokio::test]
async fn a_group_admin_or_owner_deletes_anyone_s_message_and_a_member_does_not() {
    let carol = contact(3, "carol");
    for (role, allowed) in [
        (GroupRole::Admin, true),
        (GroupRole::Owner, true),
        (GroupRole::Member, false),
    ] {
        let mut m = Mocks::new();
        visible_message(&mut m, bob(), &carol);
        m.conversations
            .expect_conversation_for()
            .returning(|viewer, _| Ok(Some(group_view(viewer))));
        let who = carol.id();
        m.groups
            .expect_member_roles()
            .withf(move |g, asked| *g == GroupId::from_uuid(Uuid::from_u128(7)) && asked == &[who])
            .returning(move |_, _| Ok(vec![(who, role)]));
        if allowed {
            m.messages
                .expect_delete_message()
                .withf(move |id, by, _| *id == msg_id() && *by == who)
                .times(1)
                .returning(|_, _, _| Ok(()));
        }
        let done = m.service().delete_message(&carol, msg_id()).await;
        if allowed {
            assert!(done.is_ok(), "{role:?}: {done:?}");
        } else {
            assert!(matches!(done, Err(ServiceError::Forbidden(_))), "{role:?}");
        }
    }
}

#[tokio::test]
async fn a_block_refuses_a_send_only_after_the_store_found_nothing_to_write() {
    // The store refuses the send (the conversation's members are in a
    // block, or the caller is no member); only then is the block asked.
    for (blocker, want) in [
        (Some(bob().id()), Some(false)),
        (Some(alice().id()), Some(true)),
        (None, None),
    ] {
        let mut m = Mocks::new();
        m.messages
            .expect_append_message()
            .returning(|_, _, _| Err(StoreError::NotFound));
        let mut moderation = MockModerationStore::new();
        moderation
            .expect_conversation_blocker()
            .withf(|c, member| *c == conv_id() && *member == alice().id())
            .times(1)
            .returning(move |_, _| Ok(blocker));
        m.moderation = moderation;
        let send = hi();
        let got = m.service().send_message(&alice(), send, None).await;
        match want {
            Some(by_caller) => assert!(
                matches!(
                    got,
                    Err(ServiceError::Blocked {
                        field: Some(Field::Conversation),
                        by_caller: b
                    }) if b == by_caller
                ),
                "{got:?}"
            ),
            None => assert!(matches!(
                got,
                Err(ServiceError::NotFound {
                    of: Some(Field::Conversation)
                })
            )),
        }
    }
}

#[tokio::test]
async fn a_block_refuses_an_edit_or_a_reaction_before_any_write() {
    let mut m = Mocks::new();
    visible_message(&mut m, alice(), &alice());
    let mut moderation = MockModerationStore::new();
    moderation
        .expect_conversation_blocker()
        .returning(|_, _| Ok(Some(bob().id())));
    m.moderation = moderation;
    // No expectation on update_message: reaching it fails the test.
    let update = crate::MessageUpdate {
        text: Some(text("changed")),
        ..Default::default()
    };
    assert!(matches!(
        m.service().update_message(&alice(), msg_id(), update).await,
        Err(ServiceError::Blocked {
            field: None,
            by_caller: false
        })
    ));
}

#[tokio::test]
async fn a_cursor_not_in_the_list_names_its_side() {
    let mut m = Mocks::new();
    m.messages
        .expect_list_messages()
        .returning(|_, _, _| Err(StoreError::CursorNotFound));
    let svc = m.service();
    let page = Page {
        limit: PageLimit::default(),
        cursor: Some(Cursor::Before(msg_id())),
    };
    assert!(matches!(
        svc.list_messages(&alice(), None.into(), page).await,
        Err(ServiceError::Invalid {
            field: Field::PageBefore,
            rule: Rule::CursorNotInList
        })
    ));
}
