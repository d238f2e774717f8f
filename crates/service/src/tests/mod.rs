//! Unit tests of the use cases with every port mocked: each rule of who may
//! do what, and that a refused request never reaches a write. One file per
//! use case, beside the module it tests; here the mocks and fixtures they
//! share.

mod auth;
mod contacts;
mod conversations;
mod depth;
mod error;
mod events;
mod files;
mod groups;
mod idempotency;
mod jobs;
mod keys;
mod messages;
mod moderation;
mod retention;
mod search;
mod tickets;
mod typing;

use std::sync::Arc;

use confab_domain::{
    AvatarUrl, Contact, ContactId, ContactParts, Conversation, ConversationId, ConversationView,
    Group, GroupDescription, GroupId, GroupMember, GroupName, GroupParts, GroupRole, MemberState,
    Message, MessageId, MessageParts, MessageText, PhoneNumber, Timestamp, Username,
};
use confab_ports::{
    MockClock, MockContactStore, MockConversationStore, MockEventSignal, MockEventStore,
    MockGroupStore, MockHealthCheck, MockIdGenerator, MockIdempotencyStore, MockMessageStore,
    MockModerationStore, MockPayloadRenderer, MockTokenStore, MockWebhookStore,
};
use mockall::predicate::eq;
use uuid::Uuid;

use crate::{Confab, Ports};

const NOW: i64 = 1_700_000_000;

/// Mocks with no expectations: any call not set up fails the test.
struct Mocks {
    contacts: MockContactStore,
    tokens: MockTokenStore,
    conversations: MockConversationStore,
    messages: MockMessageStore,
    groups: MockGroupStore,
    moderation: MockModerationStore,
    depth: confab_ports::MockDepthStore,
    idempotency: MockIdempotencyStore,
    webhooks: MockWebhookStore,
    /// `None`: commits may be signalled any number of times.
    signal: Option<MockEventSignal>,
    events: MockEventStore,
    /// Without expectations: no use case but typing publishes typing news.
    typing: confab_ports::MockTypingRelay,
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
        attachments: Arc::new(confab_ports::MockAttachmentStore::new()),
        groups: Arc::new(MockGroupStore::new()),
        moderation: Arc::new(MockModerationStore::new()),
        depth: Arc::new(confab_ports::MockDepthStore::new()),
        search: Arc::new(confab_ports::MockSearchStore::new()),
        idempotency: Arc::new(MockIdempotencyStore::new()),
        webhooks: Arc::new(MockWebhookStore::new()),
        events: Arc::new(MockEventStore::new()),
        jobs: Arc::new(confab_ports::MockJobStore::new()),
        health: Arc::new(MockHealthCheck::new()),
        wakeups: Arc::new(confab_ports::MockEventWakeups::new()),
        clock: Arc::new(clock),
        ids: Arc::new(MockIdGenerator::new()),
        render: Arc::new(MockPayloadRenderer::new()),
        signal: Arc::new(MockEventSignal::new()),
        typing: Arc::new(confab_ports::MockTypingRelay::new()),
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
            moderation: no_blocks(),
            depth: confab_ports::MockDepthStore::new(),
            idempotency: MockIdempotencyStore::new(),
            webhooks: MockWebhookStore::new(),
            signal: None,
            events: MockEventStore::new(),
            typing: confab_ports::MockTypingRelay::new(),
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
            attachments: Arc::new(confab_ports::MockAttachmentStore::new()),
            groups: Arc::new(self.groups),
            moderation: Arc::new(self.moderation),
            depth: Arc::new(self.depth),
            search: Arc::new(confab_ports::MockSearchStore::new()),
            idempotency: Arc::new(self.idempotency),
            webhooks: Arc::new(self.webhooks),
            events: Arc::new(self.events),
            jobs: Arc::new(confab_ports::MockJobStore::new()),
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
            typing: Arc::new(self.typing),
        })
    }
}

/// A moderation store where nobody blocked anybody: what every use case
/// that asks sees unless a test says otherwise.
fn no_blocks() -> MockModerationStore {
    let mut m = MockModerationStore::new();
    m.expect_block_between().returning(|_, _| Ok(None));
    m.expect_conversation_blocker().returning(|_, _| Ok(None));
    m.expect_blockers_of().returning(|_, _| Ok(vec![]));
    m
}

/// The group store shows `group` to whoever asks, and answers roles as
/// in its first members.
fn group_seen(m: &mut Mocks, group: &Group) {
    let seen = group.clone();
    m.groups
        .expect_group_for()
        .returning(move |_, _| Ok(Some(seen.clone())));
    let members: Vec<(ContactId, GroupRole)> = group
        .first_members()
        .iter()
        .map(|mem| (mem.contact.id(), mem.role))
        .collect();
    m.groups.expect_member_roles().returning(move |_, asked| {
        Ok(members
            .iter()
            .filter(|(c, _)| asked.contains(c))
            .copied()
            .collect())
    });
}

fn contact(n: u128, name: &str) -> Contact {
    Contact::new(ContactParts {
        id: ContactId::from_uuid(Uuid::from_u128(n)),
        username: Username::new(name.into()).expect("valid"),
        phone_number: PhoneNumber::new("+15550100".into()).expect("valid"),
        avatar_url: AvatarUrl::none(),
        last_active_at: Timestamp::from_secs(NOW),
        created_at: Timestamp::from_secs(NOW - 100),
    })
    .expect("valid")
}

/// `c` as last active at `at`.
fn last_active(c: Contact, at: Timestamp) -> Contact {
    Contact::new(ContactParts {
        last_active_at: at,
        ..c.into_parts()
    })
    .expect("valid")
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
        alice().id(),
        bob().id(),
        Timestamp::from_secs(NOW - 50),
    )
    .expect("valid")
}

fn view(of: &Contact) -> ConversationView {
    ConversationView {
        conversation: direct(),
        viewer: of.id(),
        state: MemberState::default(),
    }
}

fn message_from(sender: Contact) -> Message {
    Message::new(MessageParts {
        id: msg_id(),
        conversation_id: conv_id(),
        sender,
        text: MessageText::new("hello".into()).expect("valid"),
        reactions: vec![],
        attachments: vec![],
        read_at: None,
        created_at: Timestamp::from_secs(NOW - 10),
        updated_at: None,
        reply_to: None,
        parent_id: None,
        reply_count: 0,
        last_reply_at: None,
        mentions: confab_domain::Mentions::none(),
        edited_at: None,
    })
    .expect("valid")
}

/// The message exists and `viewer` is a member of its conversation.
fn visible_message(m: &mut Mocks, sender: Contact, viewer: &Contact) {
    let msg = message_from(sender);
    m.messages
        .expect_message_for()
        .with(eq(viewer.id()), eq(msg_id()))
        .returning(move |_, _| Ok(Some(msg.clone())));
}

/// "hi" sent to `conv_id()`, nothing else (no attachment, quote, thread
/// or mention): what a test sends unless it says otherwise.
fn hi() -> crate::SendMessage {
    crate::SendMessage {
        conversation_id: conv_id(),
        text: text("hi"),
        attachments: vec![],
        reply_to_id: None,
        parent_id: None,
        mentions: Vec::new(),
    }
}

fn text(s: &str) -> MessageText {
    MessageText::new(s.into()).expect("valid")
}

/// `contact` as a member of a group with `role`, since before [`NOW`].
fn group_member(contact: Contact, role: GroupRole) -> GroupMember {
    GroupMember {
        contact,
        role,
        joined_at: Timestamp::from_secs(NOW - 1000),
    }
}

fn group_with(owner: &Contact, member: &Contact) -> Group {
    Group::new(GroupParts {
        id: GroupId::from_uuid(Uuid::from_u128(7)),
        name: GroupName::new("team".into()).expect("valid"),
        description: GroupDescription::empty(),
        avatar_url: AvatarUrl::none(),
        created_by: owner.id(),
        created_at: Timestamp::from_secs(NOW - 1000),
        member_count: 2,
        owners: vec![owner.id()],
        first_members: vec![
            group_member(owner.clone(), GroupRole::Owner),
            group_member(member.clone(), GroupRole::Member),
        ],
    })
    .expect("valid")
}
