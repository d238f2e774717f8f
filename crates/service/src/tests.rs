//! Unit tests of the use cases with every port mocked: each rule of who may
//! do what, and that a refused request never reaches a write.

use std::sync::Arc;

use confab_domain::{
    AvatarUrl, Contact, ContactId, Conversation, ConversationId, ConversationView, Cursor,
    DomainError, Field, Group, GroupDescription, GroupId, GroupMember, GroupName, GroupRole,
    MemberState, Message, MessageId, MessageText, Page, PageLimit, PhoneNumber, ReactionName, Rule,
    Timestamp, Username,
};
use confab_ports::{
    ClaimOutcome, KeyClaim, MockClock, MockContactStore, MockConversationStore, MockEventSignal,
    MockEventStore, MockGroupStore, MockHealthCheck, MockIdGenerator, MockIdempotencyStore,
    MockMessageStore, MockPayloadRenderer, MockTokenStore, MockWebhookStore, StoreError,
};
use mockall::predicate::eq;
use uuid::Uuid;

use crate::{
    Completion, Confab, ConversationTarget, IdempotencyKey, Idempotent, MessageUpdate, Ports,
    SendMessage, ServiceError, StoredResponse,
};

const NOW: i64 = 1_700_000_000;

/// Mocks with no expectations: any call not set up fails the test.
struct Mocks {
    contacts: MockContactStore,
    tokens: MockTokenStore,
    conversations: MockConversationStore,
    messages: MockMessageStore,
    groups: MockGroupStore,
    idempotency: MockIdempotencyStore,
    webhooks: MockWebhookStore,
    /// `None`: commits may be signalled any number of times.
    signal: Option<MockEventSignal>,
    events: MockEventStore,
}

/// Every port a mock without expectations (any call fails the test), the
/// clock at `now_secs`: other test modules override the ports they use.
pub(crate) fn mocked_ports(now_secs: i64) -> Ports {
    let mut clock = MockClock::new();
    clock
        .expect_now()
        .returning(move || Timestamp::from_secs(now_secs));
    Ports {
        contacts: Arc::new(MockContactStore::new()),
        tokens: Arc::new(MockTokenStore::new()),
        conversations: Arc::new(MockConversationStore::new()),
        messages: Arc::new(MockMessageStore::new()),
        groups: Arc::new(MockGroupStore::new()),
        idempotency: Arc::new(MockIdempotencyStore::new()),
        webhooks: Arc::new(MockWebhookStore::new()),
        events: Arc::new(MockEventStore::new()),
        health: Arc::new(MockHealthCheck::new()),
        wakeups: Arc::new(confab_ports::MockEventWakeups::new()),
        clock: Arc::new(clock),
        ids: Arc::new(MockIdGenerator::new()),
        render: Arc::new(MockPayloadRenderer::new()),
        signal: Arc::new(MockEventSignal::new()),
    }
}

impl Mocks {
    fn new() -> Self {
        Self {
            contacts: MockContactStore::new(),
            tokens: MockTokenStore::new(),
            conversations: MockConversationStore::new(),
            messages: MockMessageStore::new(),
            groups: MockGroupStore::new(),
            idempotency: MockIdempotencyStore::new(),
            webhooks: MockWebhookStore::new(),
            signal: None,
            events: MockEventStore::new(),
        }
    }

    fn service(self) -> Confab {
        let mut clock = MockClock::new();
        clock.expect_now().returning(|| Timestamp::from_secs(NOW));
        let mut ids = MockIdGenerator::new();
        ids.expect_new_id().returning(|| Uuid::from_u128(0xABCD));
        Confab::new(Ports {
            contacts: Arc::new(self.contacts),
            tokens: Arc::new(self.tokens),
            conversations: Arc::new(self.conversations),
            messages: Arc::new(self.messages),
            groups: Arc::new(self.groups),
            idempotency: Arc::new(self.idempotency),
            webhooks: Arc::new(self.webhooks),
            events: Arc::new(self.events),
            health: Arc::new(MockHealthCheck::new()),
            wakeups: Arc::new(confab_ports::PollOnly(std::time::Duration::from_secs(1))),
            clock: Arc::new(clock),
            ids: Arc::new(ids),
            // The service never renders a payload: the store does.
            render: Arc::new(MockPayloadRenderer::new()),
            signal: Arc::new(self.signal.unwrap_or_else(|| {
                let mut any = MockEventSignal::new();
                any.expect_committed().returning(|| ());
                any
            })),
        })
    }
}

fn contact(n: u128, name: &str) -> Contact {
    Contact {
        id: ContactId::from_uuid(Uuid::from_u128(n)),
        username: Username::new(name.into()).expect("valid"),
        phone_number: PhoneNumber::new("+15550100".into()).expect("valid"),
        avatar_url: AvatarUrl::none(),
        last_active_at: Timestamp::from_secs(NOW),
        created_at: Timestamp::from_secs(NOW - 100),
    }
}

fn alice() -> Contact {
    contact(1, "alice")
}
fn bob() -> Contact {
    contact(2, "bob")
}

fn conv_id() -> ConversationId {
    ConversationId::from_uuid(Uuid::from_u128(100))
}
fn msg_id() -> MessageId {
    MessageId::from_uuid(Uuid::from_u128(200))
}

fn direct() -> Conversation {
    Conversation::new_direct(
        conv_id(),
        alice().id,
        bob().id,
        Timestamp::from_secs(NOW - 50),
    )
    .expect("valid")
}

fn view(of: &Contact) -> ConversationView {
    ConversationView {
        conversation: direct(),
        viewer: of.id,
        state: MemberState::default(),
    }
}

fn message_from(sender: Contact) -> Message {
    Message {
        id: msg_id(),
        conversation_id: conv_id(),
        sender,
        text: MessageText::new("hello".into()).expect("valid"),
        reactions: vec![],
        attachments: vec![],
        read_at: None,
        created_at: Timestamp::from_secs(NOW - 10),
        updated_at: None,
    }
}

/// The message exists and `viewer` is a member of its conversation.
fn visible_message(m: &mut Mocks, sender: Contact, viewer: &Contact) {
    let msg = message_from(sender);
    m.messages
        .expect_message_for()
        .with(eq(viewer.id), eq(msg_id()))
        .returning(move |_, _| Ok(Some(msg.clone())));
}

fn text(s: &str) -> MessageText {
    MessageText::new(s.into()).expect("valid")
}

#[tokio::test]
async fn outsider_gets_not_found_for_a_message_and_nothing_is_written() {
    let mut m = Mocks::new();
    let carol = contact(3, "carol");
    // The store answers "not visible" exactly like "no such message".
    m.messages
        .expect_message_for()
        .with(eq(carol.id), eq(msg_id()))
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
    let send = SendMessage {
        conversation_id: conv_id(),
        text: text("hi"),
        attachments: vec![],
    };
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
    let send = SendMessage {
        conversation_id: conv_id(),
        text: text("hi"),
        attachments: vec![],
    };
    assert!(svc.send_message(&bob(), send, None).await.is_ok());
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
        attachments: vec![confab_domain::NewAttachment {
            filename: confab_domain::Filename::new("a.txt".into()).expect("valid"),
            file_url: confab_domain::FileUrl::new("https://x.example/a".into()).expect("valid"),
            file_type: confab_domain::FileType::octet_stream(),
            file_size: None,
        }],
        ..Default::default()
    };
    assert!(matches!(
        m.service().update_message(&bob(), msg_id(), update).await,
        Err(ServiceError::Forbidden(_))
    ));
}

#[tokio::test]
async fn reacting_in_someone_elses_name_is_forbidden() {
    let mut m = Mocks::new();
    visible_message(&mut m, alice(), &bob());
    let update = MessageUpdate {
        reactions: vec![(
            ReactionName::new("like".into()).expect("valid"),
            vec!["alice".into()],
        )],
        ..Default::default()
    };
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
        .withf(|_, c, _| c.reactor == bob().id && c.add_reactions.len() == 1 && c.text.is_none())
        .times(1)
        .returning(|_, _, _| Ok(message_from(alice())));
    let update = MessageUpdate {
        reactions: vec![(
            ReactionName::new("like".into()).expect("valid"),
            vec!["bob".into()],
        )],
        ..Default::default()
    };
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
    assert_eq!(got.updated_at, None);
}

#[tokio::test]
async fn only_the_sender_deletes() {
    let mut m = Mocks::new();
    visible_message(&mut m, alice(), &bob());
    assert!(matches!(
        m.service().delete_message(&bob(), msg_id()).await,
        Err(ServiceError::Forbidden(_))
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
        svc.list_messages(&alice(), None, page).await,
        Err(ServiceError::Invalid {
            field: Field::PageBefore,
            rule: Rule::CursorNotInList
        })
    ));
}

#[tokio::test]
async fn conversation_with_yourself_is_invalid_before_any_lookup() {
    let svc = Mocks::new().service();
    assert!(matches!(
        svc.create_conversation(&alice(), ConversationTarget::Contact(alice().id), None)
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
            .create_conversation(&alice(), ConversationTarget::Contact(bob().id), None)
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
    let mut other = message_from(alice());
    other.conversation_id = ConversationId::from_uuid(Uuid::from_u128(999));
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
            *viewer == bob().id
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

fn group_with(owner: &Contact, member: &Contact) -> Group {
    Group {
        id: GroupId::from_uuid(Uuid::from_u128(7)),
        name: GroupName::new("team".into()).expect("valid"),
        description: GroupDescription::empty(),
        avatar_url: AvatarUrl::none(),
        created_by: owner.id,
        created_at: Timestamp::from_secs(NOW - 1000),
        members: vec![
            GroupMember {
                contact: owner.clone(),
                role: GroupRole::Owner,
            },
            GroupMember {
                contact: member.clone(),
                role: GroupRole::Member,
            },
        ],
    }
}

fn group_conversation_view(creator: &Contact, viewer: &Contact) -> ConversationView {
    ConversationView {
        conversation: Conversation::new_group(
            conv_id(),
            creator.id,
            GroupId::from_uuid(Uuid::from_u128(7)),
            Timestamp::from_secs(NOW - 50),
        ),
        viewer: viewer.id,
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
    let g = Group {
        members: vec![
            GroupMember {
                contact: alice(),
                role: GroupRole::Owner,
            },
            GroupMember {
                contact: bob(),
                role: GroupRole::Member,
            },
            GroupMember {
                contact: carol.clone(),
                role: GroupRole::Member,
            },
        ],
        ..group_with(&alice(), &bob())
    };
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
        .withf(|id, by, _| *id == conv_id() && *by == alice().id)
        .times(1)
        .returning(|_, _, _| Ok(()));
    assert!(m
        .service()
        .delete_conversation(&alice(), conv_id())
        .await
        .is_ok());
}

#[tokio::test]
async fn a_member_may_only_remove_themself_from_a_group() {
    let mut m = Mocks::new();
    let g = group_with(&alice(), &bob());
    m.groups
        .expect_group_for()
        .returning(move |_, _| Ok(Some(g.clone())));
    let update = crate::GroupUpdate {
        remove_contact_ids: vec![alice().id],
        ..Default::default()
    };
    assert!(matches!(
        m.service()
            .update_group(&bob(), GroupId::from_uuid(Uuid::from_u128(7)), update)
            .await,
        Err(ServiceError::Forbidden(_))
    ));
}

#[tokio::test]
async fn revoked_or_unknown_token_is_unauthorized() {
    let mut m = Mocks::new();
    m.tokens
        .expect_contact_for_token()
        .returning(|_, _| Ok(None));
    let svc = m.service();
    assert!(matches!(
        svc.authenticate("cfb_0000").await,
        Err(ServiceError::Unauthorized)
    ));
    // Not even looked up: wrong shape.
    assert!(matches!(
        svc.authenticate("Basic abc").await,
        Err(ServiceError::Unauthorized)
    ));
}

#[tokio::test]
async fn tokens_are_looked_up_by_hash_and_activity_is_recorded_at_most_once_a_minute() {
    let token = "cfb_secret";
    let hash = crate::auth::token_hash_for_tests(token);
    assert_ne!(hash, token);
    assert_eq!(hash.len(), 64);
    let mut m = Mocks::new();
    let mut stale = alice();
    stale.last_active_at = Timestamp::from_secs(NOW - 61);
    m.tokens
        .expect_contact_for_token()
        .with(eq(hash), eq(Timestamp::from_secs(NOW)))
        .returning(move |_, _| Ok(Some(stale.clone())));
    m.contacts
        .expect_touch_contact()
        .with(eq(alice().id), eq(Timestamp::from_secs(NOW)))
        .times(1)
        .returning(|_, _| Ok(()));
    let who = m
        .service()
        .authenticate(token)
        .await
        .expect("authenticated");
    assert_eq!(who.last_active_at, Timestamp::from_secs(NOW));

    // Fresh activity: no write.
    let mut m = Mocks::new();
    m.tokens
        .expect_contact_for_token()
        .returning(|_, _| Ok(Some(alice())));
    assert!(m.service().authenticate(token).await.is_ok());
}

#[tokio::test]
async fn a_live_token_is_trusted_for_a_few_seconds_without_the_store() {
    let token = "cfb_cached";
    let mut m = alice_last_seen_a_minute_ago();
    // The activity recorded by the first request is remembered too.
    m.contacts
        .expect_touch_contact()
        .times(1)
        .returning(|_, _| Ok(()));
    let svc = m.service();
    for _ in 0..3 {
        let who = svc.authenticate(token).await.expect("authenticated");
        assert_eq!(who.id, alice().id);
        assert_eq!(who.last_active_at, Timestamp::from_secs(NOW));
    }
}

/// A revocation through this process's service (what the CLI does in its
/// own process, and any revocation a server makes) is not hidden by the
/// cache of live tokens: the next request asks the store, which refuses
/// the token.
#[tokio::test]
async fn a_revocation_in_this_process_drops_its_cached_tokens_at_once() {
    let token = "cfb_revoked";
    let mut m = Mocks::new();
    let mut lookups = mockall::Sequence::new();
    m.tokens
        .expect_contact_for_token()
        .times(1)
        .in_sequence(&mut lookups)
        .returning(|_, _| Ok(Some(alice())));
    m.tokens
        .expect_contact_for_token()
        .times(1)
        .in_sequence(&mut lookups)
        .returning(|_, _| Ok(None));
    m.contacts
        .expect_contact_by_username()
        .returning(|_| Ok(Some(alice())));
    m.tokens
        .expect_revoke_tokens()
        .with(eq(alice().id), eq(Timestamp::from_secs(NOW)))
        .times(1)
        .returning(|_, _| Ok(1));
    let svc = m.service();
    // Looked up once, then trusted from the cache.
    for _ in 0..2 {
        assert_eq!(svc.authenticate(token).await.expect("live").id, alice().id);
    }
    assert_eq!(svc.revoke_tokens("alice").await.expect("revoked"), 1);
    assert!(matches!(
        svc.authenticate(token).await,
        Err(ServiceError::Unauthorized)
    ));
}

/// Mocks whose token store finds alice once, her activity over a minute
/// old.
fn alice_last_seen_a_minute_ago() -> Mocks {
    let mut m = Mocks::new();
    let mut stale = alice();
    stale.last_active_at = Timestamp::from_secs(NOW - 61);
    m.tokens
        .expect_contact_for_token()
        .times(1)
        .returning(move |_, _| Ok(Some(stale.clone())));
    m
}

/// Requests of one contact that see its activity stale at once (the first
/// request of a minute and those beside it) write it once: the others go
/// on without writing while the first one's write is claimed. A claim
/// dropped unfinished frees the contact for the next request.
#[tokio::test]
async fn activity_seen_stale_by_requests_at_once_is_written_once() {
    let token = "cfb_herd";
    let mut m = alice_last_seen_a_minute_ago();
    let writes = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = writes.clone();
    m.contacts
        .expect_touch_contact()
        .with(eq(alice().id), eq(Timestamp::from_secs(NOW)))
        .returning(move |_, _| {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(())
        });
    let written = || writes.load(std::sync::atomic::Ordering::SeqCst);
    let svc = m.service();
    // Another request of hers is writing it.
    let held = svc
        .tokens
        .claim_touch(alice().id, Timestamp::from_secs(NOW))
        .expect("the first claim of the minute");
    assert!(svc
        .tokens
        .claim_touch(alice().id, Timestamp::from_secs(NOW))
        .is_none());
    for _ in 0..3 {
        let who = svc.authenticate(token).await.expect("authenticated");
        assert_eq!(who.last_active_at, Timestamp::from_secs(NOW - 61));
    }
    assert_eq!(written(), 0);
    // Its write failed or was dropped: the next request writes it, once.
    drop(held);
    for _ in 0..3 {
        let who = svc.authenticate(token).await.expect("authenticated");
        assert_eq!(who.last_active_at, Timestamp::from_secs(NOW));
    }
    assert_eq!(written(), 1);
}

/// A failed activity write fails its request and leaves the write to the
/// next request.
#[tokio::test]
async fn a_failed_activity_write_is_made_by_the_next_request() {
    let token = "cfb_retry";
    let mut m = alice_last_seen_a_minute_ago();
    let attempts = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = attempts.clone();
    m.contacts.expect_touch_contact().returning(move |_, _| {
        if counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            Err(StoreError::Unavailable("down".into()))
        } else {
            Ok(())
        }
    });
    let svc = m.service();
    assert!(matches!(
        svc.authenticate(token).await,
        Err(ServiceError::Unavailable(_))
    ));
    let who = svc.authenticate(token).await.expect("authenticated");
    assert_eq!(who.last_active_at, Timestamp::from_secs(NOW));
    assert_eq!(attempts.load(std::sync::atomic::Ordering::SeqCst), 2);
}

#[tokio::test]
async fn duplicate_username_is_a_conflict() {
    let mut m = Mocks::new();
    m.contacts
        .expect_create_contact()
        .withf(|c, _| c.username.as_str() == "ALICE")
        .times(1)
        .returning(|c, _| {
            Err(StoreError::Conflict(format!(
                "username {} is taken",
                c.username
            )))
        });
    assert!(matches!(
        m.service().create_contact("ALICE", "+15550100", None).await,
        Err(ServiceError::Conflict(_))
    ));
}

#[tokio::test]
async fn store_rule_errors_surface_as_invalid() {
    let e: ServiceError = StoreError::Rule(DomainError::breaks(
        Field::Reactions,
        Rule::TooManyReactionNames { max: 32 },
    ))
    .into();
    assert!(matches!(
        e,
        ServiceError::Invalid {
            field: Field::Reactions,
            rule: Rule::TooManyReactionNames { max: 32 }
        }
    ));
    let e: ServiceError = StoreError::Unavailable("down".into()).into();
    assert!(matches!(e, ServiceError::Unavailable(_)));
}

/// Every message down the chain of `source()`s, the error's own excluded.
fn causes(e: &dyn std::error::Error) -> Vec<String> {
    std::iter::successors(e.source(), |&e| e.source())
        .map(ToString::to_string)
        .collect()
}

#[tokio::test]
async fn store_failures_keep_their_cause() {
    let e: ServiceError = StoreError::Unavailable("connection refused".into()).into();
    assert!(matches!(e, ServiceError::Unavailable(_)));
    assert!(causes(&e).iter().any(|c| c.contains("connection refused")));
    let e: ServiceError = StoreError::Other("disk full".into()).into();
    assert!(matches!(e, ServiceError::Internal { .. }));
    assert!(causes(&e).iter().any(|c| c.contains("disk full")));
    assert!(!e.to_string().contains("disk full"));
}

// Idempotency keys.

fn key(s: &str) -> IdempotencyKey {
    IdempotencyKey::parse(s).expect("valid key")
}

fn stored(status: u16, body: &str) -> StoredResponse {
    StoredResponse {
        status,
        location: None,
        body: body.to_owned(),
    }
}

#[test]
fn an_idempotency_key_is_1_to_255_visible_ascii_characters() {
    for bad in ["", "caf\u{e9}", "tab\there", "new\nline", &"k".repeat(256)] {
        assert!(
            matches!(
                IdempotencyKey::parse(bad),
                Err(DomainError::Invalid {
                    field: Field::IdempotencyKey,
                    ..
                })
            ),
            "{bad:?}"
        );
    }
    for good in ["k", "order 42", "6f1c-9a", &"k".repeat(255)] {
        assert_eq!(key(good).as_str(), good);
    }
}

#[tokio::test]
async fn a_new_key_is_claimed_for_the_caller_with_a_lease_and_a_24_hour_life() {
    let mut m = Mocks::new();
    m.idempotency
        .expect_claim_key()
        .withf(|r| {
            r.claim.contact_id == bob().id
                && r.claim.key == "k1"
                && r.claim.holder == Uuid::from_u128(0xABCD)
                && r.fingerprint == "digest"
                && r.now == Timestamp::from_secs(NOW)
                && r.locked_until == Timestamp::from_secs(NOW + crate::LEASE_SECS)
                && r.expired_before == Timestamp::from_secs(NOW - 24 * 60 * 60)
                && r.new_keys_per_day == Some(crate::DEFAULT_KEYS_PER_DAY)
        })
        .times(1)
        .returning(|_| Ok(ClaimOutcome::Claimed));
    let begun = m
        .service()
        .begin_idempotent(&bob(), key("k1"), "digest".into())
        .await;
    match begun {
        Ok(Idempotent::Run(claim)) => {
            assert_eq!(claim.contact_id, bob().id);
            assert_eq!(claim.key, "k1");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_new_key_past_the_quota_is_refused_until_the_next_utc_day() {
    let mut m = Mocks::new();
    m.idempotency
        .expect_claim_key()
        .withf(|r| r.new_keys_per_day == Some(3))
        .times(1)
        .returning(|_| Ok(ClaimOutcome::QuotaExceeded));
    let got = m
        .service()
        .with_idempotency_quota(3)
        .begin_idempotent(&bob(), key("k1"), "digest".into())
        .await;
    // NOW is 22:13:20 UTC: the day ends 6,400 s later.
    assert!(
        matches!(
            got,
            Err(ServiceError::IdempotencyQuota {
                max: 3,
                retry_after_secs: 6_400
            })
        ),
        "{got:?}"
    );
}

#[tokio::test]
async fn a_quota_of_0_is_no_limit() {
    let mut m = Mocks::new();
    m.idempotency
        .expect_claim_key()
        .withf(|r| r.new_keys_per_day.is_none())
        .times(1)
        .returning(|_| Ok(ClaimOutcome::Claimed));
    let got = m
        .service()
        .with_idempotency_quota(0)
        .begin_idempotent(&bob(), key("k1"), "digest".into())
        .await;
    assert!(matches!(got, Ok(Idempotent::Run(_))), "{got:?}");
}

#[tokio::test]
async fn a_key_answered_before_replays_for_the_same_request_only() {
    let cases: [(ClaimOutcome, &str); 4] = [
        (
            ClaimOutcome::Completed {
                same_request: true,
                response: stored(201, "{}"),
            },
            "replay",
        ),
        (
            ClaimOutcome::Completed {
                same_request: false,
                response: stored(201, "{}"),
            },
            "reused",
        ),
        (ClaimOutcome::InFlight { same_request: true }, "in flight"),
        (
            ClaimOutcome::InFlight {
                same_request: false,
            },
            "reused",
        ),
    ];
    for (outcome, want) in cases {
        let mut m = Mocks::new();
        let found = outcome.clone();
        m.idempotency
            .expect_claim_key()
            .times(1)
            .returning(move |_| Ok(found.clone()));
        let got = m
            .service()
            .begin_idempotent(&bob(), key("k1"), "digest".into())
            .await;
        let ok = match (want, &got) {
            ("replay", Ok(Idempotent::Replay(r))) => *r == stored(201, "{}"),
            ("reused", Err(ServiceError::IdempotencyKeyReused))
            | ("in flight", Err(ServiceError::IdempotencyInFlight)) => true,
            _ => false,
        };
        assert!(ok, "{outcome:?}: {got:?}");
    }
}

fn claim() -> KeyClaim {
    KeyClaim {
        contact_id: bob().id,
        key: "k1".into(),
        holder: Uuid::from_u128(7),
    }
}

#[tokio::test]
async fn a_send_hands_its_completion_to_the_write_and_a_lost_claim_is_in_flight() {
    let mut m = Mocks::new();
    let mut calls = 0;
    m.messages
        .expect_append_message()
        .times(2)
        .returning(move |_, _, completion| {
            calls += 1;
            let message = message_from(bob());
            let (claim, response) = completion.expect("a completion").render(&message);
            assert_eq!(claim.key, "k1");
            assert_eq!(response.body, message.id.to_string());
            if calls == 1 {
                Ok(message)
            } else {
                Err(StoreError::ClaimLost)
            }
        });
    let svc = m.service();
    let send = || SendMessage {
        conversation_id: conv_id(),
        text: text("hi"),
        attachments: vec![],
    };
    let completion = || {
        Some(Completion::new(claim(), |m: &Message| {
            stored(201, &m.id.to_string())
        }))
    };
    assert!(svc.send_message(&bob(), send(), completion()).await.is_ok());
    assert!(matches!(
        svc.send_message(&bob(), send(), completion()).await,
        Err(ServiceError::IdempotencyInFlight)
    ));
}

#[tokio::test]
async fn a_new_conversation_is_completed_with_the_view_the_caller_gets() {
    let mut m = Mocks::new();
    m.contacts.expect_contact().returning(|_| Ok(Some(bob())));
    m.conversations
        .expect_create_conversation()
        .times(1)
        .returning(|conversation, _, completion| {
            let (_, response) = completion.expect("a completion").render(&());
            assert_eq!(response.body, conversation.id.to_string());
            Ok(())
        });
    let completion = Completion::new(claim(), |v: &ConversationView| {
        stored(201, &v.conversation.id.to_string())
    });
    let view = m
        .service()
        .create_conversation(
            &alice(),
            ConversationTarget::Contact(bob().id),
            Some(completion),
        )
        .await
        .expect("created");
    assert_eq!(view.viewer, alice().id);
}

#[tokio::test]
async fn a_run_that_wrote_nothing_keeps_its_answer_or_frees_its_key() {
    let mut m = Mocks::new();
    m.idempotency
        .expect_complete_key()
        .withf(|c, r| *c == claim() && r.status == 404)
        .times(1)
        .returning(|_, _| Ok(true));
    m.idempotency
        .expect_release_key()
        .withf(|c| *c == claim())
        .times(1)
        .returning(|_| Ok(()));
    let svc = m.service();
    svc.end_idempotent(claim(), Some(stored(404, "{}"))).await;
    svc.end_idempotent(claim(), None).await;
}

#[tokio::test]
async fn prunes_events_older_than_seven_days_in_batches() {
    let mut m = Mocks::new();
    m.events
        .expect_prune_events()
        .withf(|before, batch| {
            *before == Timestamp::from_secs(NOW - 7 * 24 * 3600) && *batch == 500
        })
        .times(1)
        .returning(|_, _| Ok(500));
    assert_eq!(m.service().prune_events(500).await.expect("pruned"), 500);
}

// Events (API.md section 11): what each write hands the store, and that
// a write that changes nothing hands it nothing.

mod events {
    use confab_domain::{
        AttachmentId, Audience, ContactProfilePatch, Event, EventType, FileUrl, Filename,
        NewAttachment, PhoneNumber, Subject,
    };
    use confab_ports::{MockEventSignal, Outbox};

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
                assert_eq!(e.actor, actor.id, "made by the caller");
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
            conversation_id: conv_id(),
            text: text("hi"),
            attachments: vec![file()],
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
        let send = SendMessage {
            conversation_id: conv_id(),
            text: text("hi"),
            attachments: vec![],
        };
        assert!(m.service().send_message(&bob(), send, None).await.is_err());
    }

    #[tokio::test]
    async fn an_edit_with_files_hands_message_updated_and_each_attachment() {
        let mut m = Mocks::new();
        visible_message(&mut m, alice(), &alice());
        m.messages
            .expect_update_message()
            .withf(|id, change, outbox| {
                let files: Vec<AttachmentId> =
                    change.add_attachments.iter().map(|(a, _)| *a).collect();
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
            attachments: vec![file()],
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
                *viewer == bob().id
                    && summary(outbox, &bob())
                        == [
                            (
                                EventType::ConversationUpdated,
                                Subject::Conversation(*id),
                                Audience::Contact(bob().id),
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
                    Audience::Contact(alice().id)
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
                        Subject::Conversation(c.id),
                        Audience::ConversationMembers(c.id),
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
        svc.create_conversation(&alice(), ConversationTarget::Contact(bob().id), None)
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
        let gid = g.id;
        let g2 = g.clone();
        m.groups
            .expect_group_for()
            .returning(move |_, _| Ok(Some(g2.clone())));
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
                            also: vec![bob().id],
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
                contact_ids: vec![bob().id],
            },
            None,
        )
        .await
        .expect("created");
        svc.update_group(
            &alice(),
            gid,
            crate::GroupUpdate {
                remove_contact_ids: vec![bob().id],
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
                        Subject::Contact(c.id),
                        Audience::Contact(c.id),
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
                        Audience::ContactCircle(alice().id),
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
}
