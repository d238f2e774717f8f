//! Conversations: creating, updating and deleting them, direct or of a
//! group.
use confab_domain::{Field, MemberStatePatch, Rule};

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

/// `view(of)` with `msg_id()` pinned and the viewer's own state `state`.
fn pinned_view(of: &Contact, state: MemberState) -> ConversationView {
    let pinned = Conversation::new(confab_domain::ConversationParts {
        pinned_message_id: Some(msg_id()),
        ..direct().into_parts()
    })
    .expect("valid");
    ConversationView {
        conversation: pinned,
        viewer: of.id(),
        state,
    }
}

#[tokio::test]
async fn a_change_to_what_is_already_set_writes_nothing() {
    let state = MemberState {
        is_pinned: true,
        is_muted: true,
        archived_at: Some(Timestamp::from_secs(NOW - 10)),
        ..MemberState::default()
    };
    let mut m = Mocks::new();
    let v = pinned_view(&bob(), state);
    m.conversations
        .expect_conversation_for()
        .returning(move |_, _| Ok(Some(v.clone())));
    // Nothing is read of the pinned message, nothing written, no event.
    m.messages.expect_message_for().never();
    m.conversations.expect_update_conversation().never();
    let mut signal = MockEventSignal::new();
    signal.expect_committed().never();
    m.signal = Some(signal);
    let svc = m.service();
    for (pinned, is_pinned, is_muted, archived_at) in [
        (Some(Some(msg_id())), None, None, None),
        (None, Some(true), Some(true), None),
        (None, None, None, Some(Some(Timestamp::from_secs(NOW - 10)))),
        (
            Some(Some(msg_id())),
            Some(true),
            Some(true),
            Some(Some(Timestamp::from_secs(NOW - 10))),
        ),
    ] {
        let answer = svc
            .update_conversation(&bob(), conv_id(), pinned, is_pinned, is_muted, archived_at)
            .await
            .expect("200");
        assert_eq!(answer, pinned_view(&bob(), state));
    }
}

#[tokio::test]
async fn only_what_changes_goes_to_the_store() {
    let mut m = Mocks::new();
    let state = MemberState {
        is_muted: true,
        ..MemberState::default()
    };
    let v = pinned_view(&bob(), state);
    m.conversations
        .expect_conversation_for()
        .returning(move |_, _| Ok(Some(v.clone())));
    let after = pinned_view(&bob(), state);
    m.conversations
        .expect_update_conversation()
        .withf(|_, _, pinned, patch, outbox| {
            pinned.is_none()
                && *patch
                    == MemberStatePatch {
                        is_pinned: Some(true),
                        ..MemberStatePatch::default()
                    }
                // Only the caller's own state: an event for them alone.
                && matches!(outbox.events.as_slice(), [e]
                    if e.audience == confab_domain::Audience::Contact(bob().id()))
        })
        .times(1)
        .returning(move |_, _, _, _, _| Ok(after.clone()));
    m.service()
        .update_conversation(
            &bob(),
            conv_id(),
            Some(Some(msg_id())),
            Some(true),
            Some(true),
            None,
        )
        .await
        .expect("200");
}

#[tokio::test]
async fn a_pin_does_not_reach_across_a_block_but_ones_own_state_does() {
    let mut m = Mocks::new();
    let v = view(&alice());
    m.conversations
        .expect_conversation_for()
        .returning(move |_, _| Ok(Some(v.clone())));
    visible_message(&mut m, bob(), &alice());
    let mut moderation = MockModerationStore::new();
    moderation
        .expect_conversation_blocker()
        .returning(|_, _| Ok(Some(bob().id())));
    m.moderation = moderation;
    let after = view(&alice());
    m.conversations
        .expect_update_conversation()
        .withf(|_, _, pinned, _, _| pinned.is_none())
        .times(1)
        .returning(move |_, _, _, _, _| Ok(after.clone()));
    let svc = m.service();
    assert!(matches!(
        svc.update_conversation(&alice(), conv_id(), Some(Some(msg_id())), None, None, None)
            .await,
        Err(ServiceError::Blocked {
            field: None,
            by_caller: false
        })
    ));
    svc.update_conversation(&alice(), conv_id(), None, None, Some(true), None)
        .await
        .expect("one's own mute stays allowed");
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
            group_member(alice(), GroupRole::Owner),
            group_member(bob(), GroupRole::Member),
            group_member(carol.clone(), GroupRole::Member),
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
