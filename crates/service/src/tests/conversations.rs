//! Conversations: creating, updating and deleting them, direct or of a
//! group.
use confab_domain::{Field, Rule};

use crate::{ConversationTarget, ServiceError};

use super::*;

#[tokio::test]
async fn conversation_with_yourself_is_invalid_before_any_lookup() {
    let svc = Mocks::new().service();
    assert!(matches!(
        svc.create_conversation(&alice(), ConversationTarget::Contact(alice().id()), None)
            .await,
        Err(ServiceError::Invalid {
            field: Field::Contact,
            rule: Rule::ConversationWithSelf
        })
    ));
}

#[tokio::test]
async fn conversation_with_an_unknown_contact_is_not_found() {
    let mut m = Mocks::new();
    m.contacts.expect_contact().returning(|_| Ok(None));
    assert!(matches!(
        m.service()
            .create_conversation(&alice(), ConversationTarget::Contact(bob().id()), None)
            .await,
        Err(ServiceError::NotFound {
            of: Some(Field::Contact)
        })
    ));
}

#[tokio::test]
async fn conversation_with_a_foreign_group_is_not_found() {
    let mut m = Mocks::new();
    m.groups.expect_group_for().returning(|_, _| Ok(None));
    let gid = GroupId::from_uuid(Uuid::from_u128(7));
    assert!(matches!(
        m.service()
            .create_conversation(&alice(), ConversationTarget::Group(gid), None)
            .await,
        Err(ServiceError::NotFound {
            of: Some(Field::Group)
        })
    ));
}

#[tokio::test]
async fn archive_in_milliseconds_is_refused_without_writing() {
    let mut m = Mocks::new();
    let v = view(&alice());
    m.conversations
        .expect_conversation_for()
        .returning(move |_, _| Ok(Some(v.clone())));
    let at = Some(Some(Timestamp::from_secs(NOW * 1000)));
    assert!(matches!(
        m.service()
            .update_conversation(&alice(), conv_id(), None, None, None, at)
            .await,
        Err(ServiceError::Invalid {
            field: Field::ArchivedAt,
            rule: Rule::TooFarInFuture { .. }
        })
    ));
}

#[tokio::test]
async fn pinning_a_message_of_another_conversation_is_invalid() {
    let mut m = Mocks::new();
    let v = view(&alice());
    m.conversations
        .expect_conversation_for()
        .returning(move |_, _| Ok(Some(v.clone())));
    let other = Message::new(MessageParts {
        conversation_id: ConversationId::from_uuid(Uuid::from_u128(999)),
        ..message_from(alice()).into_parts()
    })
    .expect("valid");
    m.messages
        .expect_message_for()
        .returning(move |_, _| Ok(Some(other.clone())));
    assert!(matches!(
        m.service()
            .update_conversation(&alice(), conv_id(), Some(Some(msg_id())), None, None, None)
            .await,
        Err(ServiceError::Invalid {
            field: Field::PinnedMessage,
            rule: Rule::OutsideConversation
        })
    ));
}

#[tokio::test]
async fn per_member_changes_go_to_the_store_for_the_caller() {
    let mut m = Mocks::new();
    let v = view(&bob());
    m.conversations
        .expect_conversation_for()
        .returning(move |_, _| Ok(Some(v.clone())));
    let v2 = view(&bob());
    m.conversations
        .expect_update_conversation()
        .withf(|viewer, _, pinned, patch, _| {
            *viewer == bob().id()
                && pinned.is_none()
                && patch.is_muted == Some(true)
                && patch.is_pinned.is_none()
                && patch.archived_at.is_none()
        })
        .times(1)
        .returning(move |_, _, _, _, _| Ok(v2.clone()));
    assert!(m
        .service()
        .update_conversation(&bob(), conv_id(), None, None, Some(true), None)
        .await
        .is_ok());
}

fn group_conversation_view(creator: &Contact, viewer: &Contact) -> ConversationView {
    ConversationView {
        conversation: Conversation::new_group(
            conv_id(),
            creator.id(),
            GroupId::from_uuid(Uuid::from_u128(7)),
            Timestamp::from_secs(NOW - 50),
        ),
        viewer: viewer.id(),
        state: MemberState::default(),
    }
}

#[tokio::test]
async fn a_plain_member_may_not_delete_someone_elses_group_conversation() {
    let carol = contact(3, "carol");
    let mut m = Mocks::new();
    let v = group_conversation_view(&bob(), &carol);
    m.conversations
        .expect_conversation_for()
        .returning(move |_, _| Ok(Some(v.clone())));
    let g = Group::new(GroupParts {
        member_count: 3,
        first_members: vec![
            GroupMember {
                contact: alice(),
                role: GroupRole::Owner,
                joined_at: Timestamp::from_secs(NOW - 1000),
            },
            GroupMember {
                contact: bob(),
                role: GroupRole::Member,
                joined_at: Timestamp::from_secs(NOW - 1000),
            },
            GroupMember {
                contact: carol.clone(),
                role: GroupRole::Member,
                joined_at: Timestamp::from_secs(NOW - 1000),
            },
        ],
        ..group_with(&alice(), &bob()).into_parts()
    })
    .expect("valid");
    m.groups
        .expect_group_for()
        .returning(move |_, _| Ok(Some(g.clone())));
    assert!(matches!(
        m.service().delete_conversation(&carol, conv_id()).await,
        Err(ServiceError::Forbidden(_))
    ));
}

#[tokio::test]
async fn a_group_owner_may_delete_a_members_group_conversation() {
    let mut m = Mocks::new();
    let v = group_conversation_view(&bob(), &alice());
    m.conversations
        .expect_conversation_for()
        .returning(move |_, _| Ok(Some(v.clone())));
    let g = group_with(&alice(), &bob());
    m.groups
        .expect_group_for()
        .returning(move |_, _| Ok(Some(g.clone())));
    m.conversations
        .expect_delete_conversation()
        .withf(|id, by, _| *id == conv_id() && *by == alice().id())
        .times(1)
        .returning(|_, _, _| Ok(()));
    assert!(m
        .service()
        .delete_conversation(&alice(), conv_id())
        .await
        .is_ok());
}
