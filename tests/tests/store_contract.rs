//! The port contract suite: every test is written once against
//! `Arc<dyn Store>` and runs unchanged on both stores (`postgres::*`,
//! `sqlite::*`), each on a fresh database. It checks what `confab-ports`
//! documents, including every error a method MUST return.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use confab_domain::{
    AttachmentId, AvatarUrl, Contact, ContactId, ContactProfilePatch, Conversation, ConversationId,
    ConversationView, Cursor, DomainError, FileSize, FileType, FileUrl, Filename, Group,
    GroupDescription, GroupId, GroupName, GroupRole, MemberState, MemberStatePatch, Message,
    MessageId, MessageText, NewAttachment, Page, PageLimit, Paged, PhoneNumber,
    PinnedMessageChange, ReactionName, Timestamp, Username,
};
use confab_ports::{
    ConversationFilter, GroupChange, MessageChange, NewGroup, NewMessage, NewToken, Store,
    StoreError,
};
use confab_store_postgres::PgStore;
use confab_store_sqlite::SqliteStore;
use confab_tests::db::{postgres_admin_url, Backend, TestDb};
use diesel::connection::SimpleConnection as _;
use diesel::{Connection as _, PgConnection};
use uuid::Uuid;

type S = Arc<dyn Store>;

/// Generates `postgres::<name>` and `sqlite::<name>` for each test function.
macro_rules! contract {
    ($($name:ident),* $(,)?) => {
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let (db, store) = super::open(super::Backend::Postgres).await;
                    super::$name(store).await;
                    drop(db);
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let (db, store) = super::open(super::Backend::Sqlite).await;
                    super::$name(store).await;
                    drop(db);
                }
            )*
        }
    };
}

contract!(
    health_ping,
    contacts_create_and_find,
    contacts_update_and_touch,
    tokens_live_expired_revoked_unknown,
    conversations_create_and_visibility,
    conversations_group_membership_is_live,
    conversations_list_order_follows_activity,
    conversations_list_filters,
    conversations_paging_both_ways,
    conversations_open_marks_others_messages_read,
    conversations_update_pin_and_member_state,
    conversations_delete_cascades,
    messages_append_and_get,
    messages_order_is_exact_within_a_second,
    messages_list_only_visible_conversations,
    messages_paging_both_ways,
    messages_update_text_reactions_attachments,
    messages_reaction_name_limit,
    messages_attachment_limit,
    messages_remove_reaction,
    messages_delete_clears_pin,
    groups_create_and_get,
    groups_list_paging,
    groups_update_members_and_details,
    groups_delete_cascades,
    concurrent_writers_into_one_conversation,
);

async fn open(backend: Backend) -> (TestDb, S) {
    tokio::task::spawn_blocking(move || {
        let db = TestDb::new(backend);
        let store: S = match db.backend() {
            Backend::Postgres => Arc::new(PgStore::connect(&db.url).expect("connect")),
            Backend::Sqlite => Arc::new(SqliteStore::open(&db.url).expect("open")),
        };
        (db, store)
    })
    .await
    .expect("join")
}

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// Asserts that `$e` is `Err` matching `$p`.
macro_rules! assert_err {
    ($e:expr, $p:pat) => {
        match $e {
            Err($p) => {}
            other => panic!(
                "expected Err({}), got {:?}",
                stringify!($p),
                other.map(|_| "Ok(..)")
            ),
        }
    };
}

const T0: i64 = 1_700_000_000;

/// `secs` seconds after the suite's epoch.
fn at(secs: i64) -> Timestamp {
    Timestamp::from_secs(T0 + secs)
}

/// `secs` seconds and `micros` microseconds after the suite's epoch.
fn at_us(secs: i64, micros: i64) -> Timestamp {
    Timestamp::from_micros((T0 + secs) * 1_000_000 + micros)
}

fn new_id() -> Uuid {
    Uuid::now_v7()
}

fn page<Id>(limit: i64, cursor: Option<Cursor<Id>>) -> Page<Id> {
    Page {
        limit: PageLimit::new(limit).expect("limit"),
        cursor,
    }
}

fn no_filter() -> ConversationFilter {
    ConversationFilter::default()
}

async fn contact(s: &S, username: &str) -> Contact {
    s.create_contact(Contact {
        id: ContactId::from_uuid(new_id()),
        username: Username::new(username.into()).expect("username"),
        phone_number: PhoneNumber::new("+15550100".into()).expect("phone"),
        avatar_url: AvatarUrl::none(),
        last_active_at: at(0),
        created_at: at(0),
    })
    .await
    .expect("create contact")
}

async fn direct(s: &S, creator: &Contact, peer: &Contact, created: Timestamp) -> Conversation {
    let c = Conversation::new_direct(
        ConversationId::from_uuid(new_id()),
        creator.id,
        peer.id,
        created,
    )
    .expect("direct");
    s.create_conversation(c.clone())
        .await
        .expect("create direct");
    c
}

async fn group_conversation(
    s: &S,
    creator: &Contact,
    group: GroupId,
    created: Timestamp,
) -> Conversation {
    let c = Conversation::new_group(
        ConversationId::from_uuid(new_id()),
        creator.id,
        group,
        created,
    );
    s.create_conversation(c.clone())
        .await
        .expect("create group conversation");
    c
}

async fn group(s: &S, owner: &Contact, members: &[&Contact], created: Timestamp) -> Group {
    s.create_group(
        NewGroup {
            id: GroupId::from_uuid(new_id()),
            name: GroupName::new("Team".into()).expect("name"),
            description: GroupDescription::empty(),
            avatar_url: AvatarUrl::none(),
            created_by: owner.id,
            member_ids: members.iter().map(|m| m.id).collect(),
            created_at: created,
        },
        created,
    )
    .await
    .expect("create group")
}

fn text(s: &str) -> MessageText {
    MessageText::new(s.into()).expect("text")
}

fn new_message(
    conv: &Conversation,
    sender: &Contact,
    body: &str,
    created: Timestamp,
) -> NewMessage {
    NewMessage {
        id: MessageId::from_uuid(new_id()),
        conversation_id: conv.id,
        sender_id: sender.id,
        text: text(body),
        attachments: Vec::new(),
        created_at: created,
    }
}

async fn send(
    s: &S,
    conv: &Conversation,
    sender: &Contact,
    body: &str,
    created: Timestamp,
) -> Message {
    s.append_message(new_message(conv, sender, body, created))
        .await
        .expect("append message")
}

fn attachment(n: i64) -> (AttachmentId, NewAttachment) {
    (
        AttachmentId::from_uuid(new_id()),
        NewAttachment {
            filename: Filename::new(format!("file{n}.txt")).expect("filename"),
            file_url: FileUrl::new(format!("https://files.example/{n}")).expect("url"),
            file_type: FileType::new("text/plain".into()).expect("type"),
            file_size: Some(FileSize::new(n).expect("size")),
        },
    )
}

fn rn(name: &str) -> ReactionName {
    ReactionName::new(name.into()).expect("reaction name")
}

fn change(by: &Contact, when: Timestamp) -> MessageChange {
    MessageChange {
        text: None,
        add_reactions: Vec::new(),
        reactor: by.id,
        add_attachments: Vec::new(),
        at: when,
    }
}

/// Reactions as `name -> usernames`, in order.
fn reactions_of(m: &Message) -> Vec<(String, Vec<String>)> {
    m.reactions
        .iter()
        .map(|r| {
            (
                r.name.as_str().to_owned(),
                r.reactors
                    .iter()
                    .map(|x| x.username.as_str().to_owned())
                    .collect(),
            )
        })
        .collect()
}

fn conv_ids(p: &Paged<ConversationView>) -> Vec<ConversationId> {
    p.items.iter().map(|v| v.conversation.id).collect()
}

fn msg_ids(p: &Paged<Message>) -> Vec<MessageId> {
    p.items.iter().map(|m| m.id).collect()
}

fn group_ids(p: &Paged<Group>) -> Vec<GroupId> {
    p.items.iter().map(|g| g.id).collect()
}

async fn list_convs(s: &S, viewer: &Contact, filter: ConversationFilter) -> Vec<ConversationId> {
    conv_ids(
        &s.list_conversations(viewer.id, filter, page(100, None))
            .await
            .expect("list conversations"),
    )
}

async fn all_messages(s: &S, viewer: &Contact, conv: Option<ConversationId>) -> Vec<MessageId> {
    msg_ids(
        &s.list_messages(viewer.id, conv, page(100, None))
            .await
            .expect("list messages"),
    )
}

// ---------------------------------------------------------------------------
// Health and contacts
// ---------------------------------------------------------------------------

async fn health_ping(s: S) {
    s.ping().await.expect("ping");
}

async fn contacts_create_and_find(s: S) {
    let alice = contact(&s, "Alice").await;
    assert_eq!(s.contact(alice.id).await.expect("get"), Some(alice.clone()));
    assert_eq!(
        s.contact(ContactId::from_uuid(new_id()))
            .await
            .expect("get"),
        None
    );

    // Usernames are found and unique case-insensitively.
    assert_eq!(
        s.contact_by_username("aLiCe").await.expect("by username"),
        Some(alice.clone())
    );
    assert_eq!(
        s.contact_by_username("Alice").await.expect("by username"),
        Some(alice.clone())
    );
    assert_eq!(
        s.contact_by_username("bob").await.expect("by username"),
        None
    );
    for taken in ["Alice", "alice", "ALICE"] {
        let dup = Contact {
            id: ContactId::from_uuid(new_id()),
            username: Username::new(taken.into()).expect("username"),
            ..alice.clone()
        };
        assert_err!(s.create_contact(dup).await, StoreError::Conflict(_));
    }
    let bob = contact(&s, "bob").await;
    assert_ne!(bob.id, alice.id);
}

async fn contacts_update_and_touch(s: S) {
    let alice = contact(&s, "alice").await;
    let updated = s
        .update_contact(
            alice.id,
            ContactProfilePatch {
                phone_number: Some(PhoneNumber::new("+4930123456".into()).expect("phone")),
                avatar_url: None,
            },
        )
        .await
        .expect("update");
    assert_eq!(updated.phone_number.as_str(), "+4930123456");
    assert_eq!(updated.avatar_url, alice.avatar_url);
    assert_eq!(updated.username, alice.username);

    let avatar = AvatarUrl::new("https://img.example/a.png".into()).expect("avatar");
    let updated = s
        .update_contact(
            alice.id,
            ContactProfilePatch {
                phone_number: None,
                avatar_url: Some(avatar.clone()),
            },
        )
        .await
        .expect("update");
    assert_eq!(updated.avatar_url, avatar);
    assert_eq!(updated.phone_number.as_str(), "+4930123456");

    // An empty patch changes nothing.
    let same = s
        .update_contact(alice.id, ContactProfilePatch::default())
        .await
        .expect("empty patch");
    assert_eq!(same, updated);
    assert_eq!(
        s.contact(alice.id).await.expect("get"),
        Some(updated.clone())
    );

    assert_err!(
        s.update_contact(
            ContactId::from_uuid(new_id()),
            ContactProfilePatch::default()
        )
        .await,
        StoreError::NotFound
    );
    assert_err!(
        s.update_contact(
            ContactId::from_uuid(new_id()),
            ContactProfilePatch {
                phone_number: Some(PhoneNumber::new("+15550199".into()).expect("phone")),
                avatar_url: None
            }
        )
        .await,
        StoreError::NotFound
    );

    // Activity only moves forward.
    s.touch_contact(alice.id, at(100)).await.expect("touch");
    let got = s.contact(alice.id).await.expect("get").expect("some");
    assert_eq!(got.last_active_at, at(100));
    s.touch_contact(alice.id, at(50)).await.expect("touch");
    let got = s.contact(alice.id).await.expect("get").expect("some");
    assert_eq!(got.last_active_at, at(100));
    assert_eq!(got.created_at, at(0));
    s.touch_contact(alice.id, at_us(100, 1))
        .await
        .expect("touch");
    let got = s.contact(alice.id).await.expect("get").expect("some");
    assert_eq!(got.last_active_at, at_us(100, 1));
}

// ---------------------------------------------------------------------------
// Tokens
// ---------------------------------------------------------------------------

fn token(owner: &Contact, hash: &str, expires: Option<Timestamp>) -> NewToken {
    NewToken {
        id: new_id(),
        contact_id: owner.id,
        hash: hash.into(),
        created_at: at(0),
        expires_at: expires,
    }
}

async fn tokens_live_expired_revoked_unknown(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    s.insert_token(token(&alice, "aa01", None))
        .await
        .expect("insert");
    s.insert_token(token(&alice, "aa02", Some(at(100))))
        .await
        .expect("insert");
    s.insert_token(token(&alice, "aa03", Some(at(10))))
        .await
        .expect("insert");
    s.insert_token(token(&bob, "bb01", None))
        .await
        .expect("insert");
    assert_err!(
        s.insert_token(NewToken {
            contact_id: ContactId::from_uuid(new_id()),
            ..token(&alice, "cc01", None)
        })
        .await,
        StoreError::NotFound
    );

    let who = |hash: &'static str, now: Timestamp| {
        let s = s.clone();
        async move {
            s.contact_for_token(hash, now)
                .await
                .expect("lookup")
                .map(|c| c.id)
        }
    };
    assert_eq!(who("aa01", at(50)).await, Some(alice.id));
    assert_eq!(who("aa02", at(50)).await, Some(alice.id));
    assert_eq!(who("bb01", at(50)).await, Some(bob.id));
    assert_eq!(who("ffff", at(50)).await, None, "unknown");
    assert_eq!(who("cc01", at(50)).await, None, "never stored");
    // Expired at `expires_at`.
    assert_eq!(who("aa02", at_us(99, 999_999)).await, Some(alice.id));
    assert_eq!(who("aa02", at(100)).await, None);
    assert_eq!(who("aa03", at(50)).await, None);

    // Revokes the live ones only (aa03 has expired by then).
    assert_eq!(s.revoke_tokens(alice.id, at(50)).await.expect("revoke"), 2);
    assert_eq!(who("aa01", at(51)).await, None);
    assert_eq!(who("aa02", at(51)).await, None);
    assert_eq!(
        who("bb01", at(51)).await,
        Some(bob.id),
        "other contacts keep theirs"
    );
    assert_eq!(s.revoke_tokens(alice.id, at(60)).await.expect("revoke"), 0);
}

// ---------------------------------------------------------------------------
// Conversations
// ---------------------------------------------------------------------------

async fn conversations_create_and_visibility(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let c = direct(&s, &alice, &bob, at(1)).await;

    for (viewer, other) in [(&alice, &bob), (&bob, &alice)] {
        let v = s
            .conversation_for(viewer.id, c.id)
            .await
            .expect("get")
            .expect("member sees it");
        assert_eq!(v.conversation, c);
        assert_eq!(v.viewer, viewer.id);
        assert_eq!(v.contact_id(), Some(other.id));
        assert_eq!(v.state, MemberState::default());
        assert_eq!(v.conversation.pinned_message_id, None);
        assert_eq!(v.conversation.last_active_at, None);
        assert_eq!(v.conversation.created_at, at(1));
    }
    assert_eq!(
        s.conversation_for(carol.id, c.id).await.expect("get"),
        None,
        "outsider"
    );
    assert_eq!(
        s.conversation_for(alice.id, ConversationId::from_uuid(new_id()))
            .await
            .expect("get"),
        None
    );
    assert_eq!(list_convs(&s, &carol, no_filter()).await, vec![]);

    // The peer and the group must exist.
    let ghost = ContactId::from_uuid(new_id());
    let bad = Conversation::new_direct(ConversationId::from_uuid(new_id()), alice.id, ghost, at(2))
        .expect("direct");
    assert_err!(s.create_conversation(bad).await, StoreError::NotFound);
    let bad = Conversation::new_group(
        ConversationId::from_uuid(new_id()),
        alice.id,
        GroupId::from_uuid(new_id()),
        at(2),
    );
    assert_err!(s.create_conversation(bad).await, StoreError::NotFound);

    // A group conversation: the group's members see it, nobody else.
    let g = group(&s, &alice, &[&bob], at(3)).await;
    let gc = group_conversation(&s, &bob, g.id, at(4)).await;
    for viewer in [&alice, &bob] {
        let v = s
            .conversation_for(viewer.id, gc.id)
            .await
            .expect("get")
            .expect("member sees it");
        assert_eq!(v.conversation, gc);
        assert_eq!(v.contact_id(), None);
        assert_eq!(v.conversation.group_id(), Some(g.id));
        assert_eq!(v.state, MemberState::default());
    }
    assert_eq!(
        s.conversation_for(carol.id, gc.id).await.expect("get"),
        None
    );
    assert_eq!(list_convs(&s, &alice, no_filter()).await, vec![gc.id, c.id]);
    assert_eq!(list_convs(&s, &carol, no_filter()).await, vec![]);
}

async fn conversations_group_membership_is_live(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let g = group(&s, &alice, &[&bob], at(1)).await;
    let gc = group_conversation(&s, &alice, g.id, at(2)).await;
    let m = send(&s, &gc, &alice, "hello team", at(3)).await;

    assert!(s
        .conversation_for(bob.id, gc.id)
        .await
        .expect("get")
        .is_some());
    assert_eq!(all_messages(&s, &bob, None).await, vec![m.id]);

    // Removed: bob loses the conversation and its messages at once.
    s.update_group(
        g.id,
        GroupChange {
            remove: vec![bob.id],
            ..GroupChange::default()
        },
        at(4),
    )
    .await
    .expect("remove bob");
    assert_eq!(s.conversation_for(bob.id, gc.id).await.expect("get"), None);
    assert_eq!(list_convs(&s, &bob, no_filter()).await, vec![]);
    assert_eq!(all_messages(&s, &bob, None).await, vec![]);
    assert_eq!(all_messages(&s, &bob, Some(gc.id)).await, vec![]);
    assert_err!(
        s.open_conversation(bob.id, gc.id, at(5)).await,
        StoreError::NotFound
    );
    assert_err!(
        s.update_conversation(bob.id, gc.id, None, MemberStatePatch::default())
            .await,
        StoreError::NotFound
    );

    // Added: carol sees it, with the history.
    assert_eq!(
        s.conversation_for(carol.id, gc.id).await.expect("get"),
        None
    );
    s.update_group(
        g.id,
        GroupChange {
            add: vec![carol.id],
            ..GroupChange::default()
        },
        at(6),
    )
    .await
    .expect("add carol");
    assert!(s
        .conversation_for(carol.id, gc.id)
        .await
        .expect("get")
        .is_some());
    assert_eq!(list_convs(&s, &carol, no_filter()).await, vec![gc.id]);
    assert_eq!(all_messages(&s, &carol, None).await, vec![m.id]);
}

async fn conversations_list_order_follows_activity(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c1 = direct(&s, &alice, &bob, at(1)).await;
    let c2 = direct(&s, &bob, &alice, at(2)).await;
    let c3 = direct(&s, &alice, &bob, at(3)).await;
    assert_eq!(
        list_convs(&s, &alice, no_filter()).await,
        vec![c3.id, c2.id, c1.id]
    );
    assert_eq!(
        list_convs(&s, &bob, no_filter()).await,
        vec![c3.id, c2.id, c1.id]
    );

    // A new message moves its conversation to the top and sets last_active_at.
    let m = send(&s, &c1, &bob, "ping", at_us(4, 5)).await;
    assert_eq!(
        list_convs(&s, &alice, no_filter()).await,
        vec![c1.id, c3.id, c2.id]
    );
    let v = s
        .conversation_for(alice.id, c1.id)
        .await
        .expect("get")
        .expect("some");
    assert_eq!(v.conversation.last_active_at, Some(m.created_at));
    assert_eq!(v.conversation.last_active_at, Some(at_us(4, 5)));

    // Activity within one second is ordered exactly.
    send(&s, &c2, &alice, "pong", at_us(4, 6)).await;
    assert_eq!(
        list_convs(&s, &alice, no_filter()).await,
        vec![c2.id, c1.id, c3.id]
    );

    // Same activity time: the larger id first.
    let ca = direct(&s, &alice, &bob, at(10)).await;
    let cb = direct(&s, &alice, &bob, at(10)).await;
    let (hi, lo) = if ca.id > cb.id {
        (ca.id, cb.id)
    } else {
        (cb.id, ca.id)
    };
    assert_eq!(
        list_convs(&s, &alice, no_filter()).await,
        vec![hi, lo, c2.id, c1.id, c3.id]
    );
}

async fn conversations_list_filters(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let c1 = direct(&s, &alice, &bob, at(1)).await;
    let c2 = direct(&s, &alice, &carol, at(2)).await;
    let c3 = direct(&s, &bob, &alice, at(3)).await;
    let g = group(&s, &alice, &[&bob], at(4)).await;
    let g1 = group_conversation(&s, &bob, g.id, at(5)).await;

    let set = |patch: MemberStatePatch, c: ConversationId| {
        let s = s.clone();
        let alice = alice.id;
        async move {
            s.update_conversation(alice, c, None, patch)
                .await
                .expect("update state")
        }
    };
    let v = set(
        MemberStatePatch {
            is_muted: Some(true),
            ..Default::default()
        },
        c1.id,
    )
    .await;
    assert!(v.state.is_muted);
    set(
        MemberStatePatch {
            is_pinned: Some(true),
            ..Default::default()
        },
        c2.id,
    )
    .await;
    set(
        MemberStatePatch {
            archived_at: Some(Some(at(10))),
            ..Default::default()
        },
        c3.id,
    )
    .await;

    let f =
        |muted: Option<bool>, archived: Option<bool>, pinned: Option<bool>| ConversationFilter {
            muted,
            archived,
            pinned,
            group_id: None,
        };
    assert_eq!(
        list_convs(&s, &alice, f(None, None, None)).await,
        vec![g1.id, c3.id, c2.id, c1.id]
    );
    assert_eq!(
        list_convs(&s, &alice, f(Some(true), None, None)).await,
        vec![c1.id]
    );
    assert_eq!(
        list_convs(&s, &alice, f(Some(false), None, None)).await,
        vec![g1.id, c3.id, c2.id]
    );
    assert_eq!(
        list_convs(&s, &alice, f(None, None, Some(true))).await,
        vec![c2.id]
    );
    assert_eq!(
        list_convs(&s, &alice, f(None, None, Some(false))).await,
        vec![g1.id, c3.id, c1.id]
    );
    assert_eq!(
        list_convs(&s, &alice, f(None, Some(true), None)).await,
        vec![c3.id]
    );
    assert_eq!(
        list_convs(&s, &alice, f(None, Some(false), None)).await,
        vec![g1.id, c2.id, c1.id]
    );
    assert_eq!(
        list_convs(&s, &alice, f(Some(false), Some(false), None)).await,
        vec![g1.id, c2.id]
    );
    assert_eq!(
        list_convs(
            &s,
            &alice,
            ConversationFilter {
                group_id: Some(g.id),
                ..ConversationFilter::default()
            }
        )
        .await,
        vec![g1.id]
    );
    assert_eq!(
        list_convs(
            &s,
            &alice,
            ConversationFilter {
                group_id: Some(GroupId::from_uuid(new_id())),
                ..ConversationFilter::default()
            }
        )
        .await,
        vec![]
    );

    // Per-member state: bob's view is untouched by alice's changes.
    assert_eq!(
        list_convs(&s, &bob, f(Some(true), None, None)).await,
        vec![]
    );
    assert_eq!(
        list_convs(&s, &bob, f(None, Some(true), None)).await,
        vec![]
    );
    assert_eq!(
        list_convs(&s, &bob, f(None, None, Some(false))).await,
        vec![g1.id, c3.id, c1.id]
    );

    // A cursor outside the filtered list.
    assert_err!(
        s.list_conversations(
            alice.id,
            f(Some(true), None, None),
            page(10, Some(Cursor::After(c2.id)))
        )
        .await,
        StoreError::CursorNotFound
    );
    assert_err!(
        s.list_conversations(bob.id, no_filter(), page(10, Some(Cursor::Before(c2.id))))
            .await,
        StoreError::CursorNotFound
    );
}

async fn conversations_paging_both_ways(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let mut c = Vec::new();
    for i in 1..=5 {
        c.push(direct(&s, &alice, &bob, at(i)).await.id);
    }
    let other = direct(&s, &bob, &carol, at(9)).await;
    // List order: c5 c4 c3 c2 c1
    let (c1, c2, c3, c4, c5) = (c[0], c[1], c[2], c[3], c[4]);
    let list = |cursor: Option<Cursor<ConversationId>>| {
        let s = s.clone();
        let alice = alice.id;
        async move {
            s.list_conversations(alice, no_filter(), page(2, cursor))
                .await
                .expect("list")
        }
    };

    let p = list(None).await;
    assert_eq!((conv_ids(&p), p.has_more), (vec![c5, c4], true));
    let p = list(Some(Cursor::After(c4))).await;
    assert_eq!((conv_ids(&p), p.has_more), (vec![c3, c2], true));
    let p = list(Some(Cursor::After(c2))).await;
    assert_eq!((conv_ids(&p), p.has_more), (vec![c1], false));
    let p = list(Some(Cursor::After(c1))).await;
    assert_eq!((conv_ids(&p), p.has_more), (vec![], false));

    let p = list(Some(Cursor::Before(c1))).await;
    assert_eq!((conv_ids(&p), p.has_more), (vec![c3, c2], true));
    let p = list(Some(Cursor::Before(c3))).await;
    assert_eq!((conv_ids(&p), p.has_more), (vec![c5, c4], false));
    let p = list(Some(Cursor::Before(c4))).await;
    assert_eq!((conv_ids(&p), p.has_more), (vec![c5], false));
    let p = list(Some(Cursor::Before(c5))).await;
    assert_eq!((conv_ids(&p), p.has_more), (vec![], false));

    for cursor in [
        Cursor::After(other.id),
        Cursor::Before(other.id),
        Cursor::After(ConversationId::from_uuid(new_id())),
        Cursor::Before(ConversationId::from_uuid(new_id())),
    ] {
        assert_err!(
            s.list_conversations(alice.id, no_filter(), page(2, Some(cursor)))
                .await,
            StoreError::CursorNotFound
        );
    }
}

async fn conversations_open_marks_others_messages_read(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let from_alice = send(&s, &c, &alice, "hi bob", at(2)).await;
    let from_bob = send(&s, &c, &bob, "hi alice", at(3)).await;
    assert_eq!(from_alice.read_at, None);

    let v = s
        .open_conversation(bob.id, c.id, at(10))
        .await
        .expect("open");
    assert_eq!(v.state.last_opened_at, Some(at(10)));
    assert_eq!(v.viewer, bob.id);
    let read = |id: MessageId| {
        let s = s.clone();
        let alice = alice.id;
        async move {
            s.message_for(alice, id)
                .await
                .expect("get")
                .expect("some")
                .read_at
        }
    };
    assert_eq!(read(from_alice.id).await, Some(at(10)));
    assert_eq!(read(from_bob.id).await, None, "own messages stay unread");
    let a = s
        .conversation_for(alice.id, c.id)
        .await
        .expect("get")
        .expect("some");
    assert_eq!(a.state.last_opened_at, None, "per member");

    // Opening again moves last_opened_at but leaves read_at as it was.
    let v = s
        .open_conversation(bob.id, c.id, at(20))
        .await
        .expect("open");
    assert_eq!(v.state.last_opened_at, Some(at(20)));
    assert_eq!(read(from_alice.id).await, Some(at(10)));
    s.open_conversation(alice.id, c.id, at(30))
        .await
        .expect("open");
    assert_eq!(read(from_bob.id).await, Some(at(30)));

    assert_err!(
        s.open_conversation(carol.id, c.id, at(40)).await,
        StoreError::NotFound
    );
    assert_err!(
        s.open_conversation(alice.id, ConversationId::from_uuid(new_id()), at(40))
            .await,
        StoreError::NotFound
    );

    // A group member with no state row yet.
    let g = group(&s, &alice, &[&bob, &carol], at(50)).await;
    let gc = group_conversation(&s, &alice, g.id, at(51)).await;
    let gm = send(&s, &gc, &alice, "all", at(52)).await;
    let v = s
        .open_conversation(carol.id, gc.id, at(60))
        .await
        .expect("open");
    assert_eq!(v.state.last_opened_at, Some(at(60)));
    assert!(!v.state.is_muted && !v.state.is_pinned);
    assert_eq!(read(gm.id).await, Some(at(60)));
    let b = s
        .conversation_for(bob.id, gc.id)
        .await
        .expect("get")
        .expect("some");
    assert_eq!(b.state, MemberState::default());
}

async fn conversations_update_pin_and_member_state(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let other = direct(&s, &alice, &carol, at(1)).await;
    let m = send(&s, &c, &bob, "pin me", at(2)).await;
    let foreign = send(&s, &other, &alice, "not here", at(3)).await;

    // The pinned message is shared.
    let v = s
        .update_conversation(
            alice.id,
            c.id,
            Some(PinnedMessageChange::Pin(m.id)),
            MemberStatePatch::default(),
        )
        .await
        .expect("pin");
    assert_eq!(v.conversation.pinned_message_id, Some(m.id));
    assert_eq!(v.state, MemberState::default());
    let b = s
        .conversation_for(bob.id, c.id)
        .await
        .expect("get")
        .expect("some");
    assert_eq!(b.conversation.pinned_message_id, Some(m.id));

    for bad in [foreign.id, MessageId::from_uuid(new_id())] {
        assert_err!(
            s.update_conversation(
                alice.id,
                c.id,
                Some(PinnedMessageChange::Pin(bad)),
                MemberStatePatch::default()
            )
            .await,
            StoreError::Rule(DomainError::Invalid {
                field: "pinned_message_id",
                ..
            })
        );
    }
    // A refused update changes nothing, also not the state in the same call.
    assert_err!(
        s.update_conversation(
            alice.id,
            c.id,
            Some(PinnedMessageChange::Pin(foreign.id)),
            MemberStatePatch {
                is_muted: Some(true),
                ..Default::default()
            }
        )
        .await,
        StoreError::Rule(_)
    );
    let a = s
        .conversation_for(alice.id, c.id)
        .await
        .expect("get")
        .expect("some");
    assert_eq!(a.conversation.pinned_message_id, Some(m.id));
    assert!(!a.state.is_muted);

    let v = s
        .update_conversation(
            bob.id,
            c.id,
            Some(PinnedMessageChange::Unpin),
            MemberStatePatch::default(),
        )
        .await
        .expect("unpin");
    assert_eq!(v.conversation.pinned_message_id, None);

    // Per-member state: only the submitted attributes, only for the caller.
    let v = s
        .update_conversation(
            alice.id,
            c.id,
            None,
            MemberStatePatch {
                is_pinned: Some(true),
                is_muted: Some(true),
                archived_at: Some(Some(at(5))),
            },
        )
        .await
        .expect("state");
    assert_eq!(
        v.state,
        MemberState {
            is_pinned: true,
            is_muted: true,
            archived_at: Some(at(5)),
            last_opened_at: None,
        }
    );
    let v = s
        .update_conversation(
            alice.id,
            c.id,
            None,
            MemberStatePatch {
                is_muted: Some(false),
                ..Default::default()
            },
        )
        .await
        .expect("state");
    assert_eq!(
        (v.state.is_pinned, v.state.is_muted, v.state.archived_at),
        (true, false, Some(at(5)))
    );
    let v = s
        .update_conversation(
            alice.id,
            c.id,
            None,
            MemberStatePatch {
                archived_at: Some(None),
                ..Default::default()
            },
        )
        .await
        .expect("unarchive");
    assert_eq!((v.state.is_pinned, v.state.archived_at), (true, None));
    let b = s
        .conversation_for(bob.id, c.id)
        .await
        .expect("get")
        .expect("some");
    assert_eq!(b.state, MemberState::default());

    // Bob's own state is independent of alice's.
    let v = s
        .update_conversation(
            bob.id,
            c.id,
            None,
            MemberStatePatch {
                is_muted: Some(true),
                ..Default::default()
            },
        )
        .await
        .expect("bob mutes");
    assert_eq!((v.state.is_pinned, v.state.is_muted), (false, true));
    let a = s
        .conversation_for(alice.id, c.id)
        .await
        .expect("get")
        .expect("some");
    assert_eq!((a.state.is_pinned, a.state.is_muted), (true, false));

    // An empty update returns the view unchanged.
    let same = s
        .update_conversation(alice.id, c.id, None, MemberStatePatch::default())
        .await
        .expect("empty");
    assert_eq!(same, a);

    assert_err!(
        s.update_conversation(carol.id, c.id, None, MemberStatePatch::default())
            .await,
        StoreError::NotFound
    );
    assert_err!(
        s.update_conversation(
            carol.id,
            c.id,
            Some(PinnedMessageChange::Unpin),
            MemberStatePatch::default()
        )
        .await,
        StoreError::NotFound
    );
    assert_err!(
        s.update_conversation(
            alice.id,
            ConversationId::from_uuid(new_id()),
            None,
            MemberStatePatch::default()
        )
        .await,
        StoreError::NotFound
    );
}

async fn conversations_delete_cascades(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let keep = direct(&s, &alice, &bob, at(1)).await;
    let mut m = new_message(&c, &alice, "with everything", at(2));
    m.attachments = vec![attachment(1)];
    let m = s.append_message(m).await.expect("append");
    s.update_message(
        m.id,
        MessageChange {
            add_reactions: vec![rn("like")],
            ..change(&bob, at(3))
        },
    )
    .await
    .expect("react");
    s.update_conversation(
        alice.id,
        c.id,
        Some(PinnedMessageChange::Pin(m.id)),
        MemberStatePatch {
            is_muted: Some(true),
            ..Default::default()
        },
    )
    .await
    .expect("pin");
    let kept = send(&s, &keep, &bob, "stays", at(4)).await;

    s.delete_conversation(c.id).await.expect("delete");
    assert_eq!(s.conversation_for(alice.id, c.id).await.expect("get"), None);
    assert_eq!(s.message_for(alice.id, m.id).await.expect("get"), None);
    assert_eq!(all_messages(&s, &alice, None).await, vec![kept.id]);
    assert_eq!(list_convs(&s, &alice, no_filter()).await, vec![keep.id]);
    assert_err!(s.delete_conversation(c.id).await, StoreError::NotFound);
    assert_err!(
        s.delete_conversation(ConversationId::from_uuid(new_id()))
            .await,
        StoreError::NotFound
    );
    assert!(s
        .message_for(alice.id, kept.id)
        .await
        .expect("get")
        .is_some());
}

// ---------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------

async fn messages_append_and_get(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let mut new = new_message(&c, &alice, "hello\nworld", at_us(2, 123_456));
    new.attachments = vec![attachment(1), attachment(2), attachment(3)];
    let wanted: Vec<(AttachmentId, NewAttachment)> = new.attachments.clone();
    let m = s.append_message(new.clone()).await.expect("append");

    assert_eq!(m.id, new.id);
    assert_eq!(m.conversation_id, c.id);
    assert_eq!(m.sender, alice);
    assert_eq!(m.text.as_str(), "hello\nworld");
    assert_eq!(m.reactions, vec![]);
    assert_eq!(m.read_at, None);
    assert_eq!(m.updated_at, None);
    assert_eq!(m.created_at, at_us(2, 123_456));
    assert_eq!(m.attachments.len(), 3);
    for (got, (id, a)) in m.attachments.iter().zip(&wanted) {
        assert_eq!(got.id, *id);
        assert_eq!(got.message_id, m.id);
        assert_eq!(got.filename, a.filename);
        assert_eq!(got.file_url, a.file_url);
        assert_eq!(got.file_type, a.file_type);
        assert_eq!(got.file_size, a.file_size);
        assert_eq!(got.created_at, m.created_at);
    }
    assert_eq!(
        s.message_for(alice.id, m.id).await.expect("get"),
        Some(m.clone())
    );
    assert_eq!(
        s.message_for(alice.id, MessageId::from_uuid(new_id()))
            .await
            .expect("get"),
        None
    );

    // A file without type and size.
    let mut plain = new_message(&c, &bob, "file", at(3));
    plain.attachments = vec![(
        AttachmentId::from_uuid(new_id()),
        NewAttachment {
            filename: Filename::new("blob".into()).expect("filename"),
            file_url: FileUrl::new("http://files.example/blob".into()).expect("url"),
            file_type: FileType::octet_stream(),
            file_size: None,
        },
    )];
    let p = s.append_message(plain).await.expect("append");
    assert_eq!(p.attachments[0].file_size, None);
    assert_eq!(
        p.attachments[0].file_type.as_str(),
        "application/octet-stream"
    );

    let v = s
        .conversation_for(bob.id, c.id)
        .await
        .expect("get")
        .expect("some");
    assert_eq!(v.conversation.last_active_at, Some(at(3)));

    // The conversation must exist.
    let ghost =
        Conversation::new_direct(ConversationId::from_uuid(new_id()), alice.id, bob.id, at(1))
            .expect("direct");
    assert_err!(
        s.append_message(new_message(&ghost, &alice, "into the void", at(4)))
            .await,
        StoreError::NotFound
    );
    // At most 10 attachments, and nothing is stored when refused.
    let mut too_many = new_message(&c, &alice, "eleven", at(5));
    too_many.attachments = (0..11).map(attachment).collect();
    let refused = too_many.id;
    assert_err!(
        s.append_message(too_many).await,
        StoreError::Rule(DomainError::Invalid {
            field: "attachments",
            ..
        })
    );
    assert_eq!(s.message_for(alice.id, refused).await.expect("get"), None);
    let mut ten = new_message(&c, &alice, "ten", at(6));
    ten.attachments = (0..10).map(attachment).collect();
    assert_eq!(
        s.append_message(ten).await.expect("ten").attachments.len(),
        10
    );
}

async fn messages_order_is_exact_within_a_second(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let with_id = |n: u128, micros: i64| {
        let mut m = new_message(&c, &alice, "x", at_us(5, micros));
        m.id = MessageId::from_uuid(Uuid::from_u128(n));
        m
    };
    // Appended out of order; three share one microsecond.
    let order = [
        with_id(0x10, 500),
        with_id(0x30, 10),
        with_id(0x20, 999_999),
        with_id(0x50, 10),
        with_id(0x40, 10),
        with_id(0x60, 0),
    ];
    for m in &order {
        s.append_message(m.clone()).await.expect("append");
    }
    let id = |n: u128| MessageId::from_uuid(Uuid::from_u128(n));
    let want = vec![id(0x20), id(0x10), id(0x50), id(0x40), id(0x30), id(0x60)];
    assert_eq!(all_messages(&s, &alice, Some(c.id)).await, want);
    assert_eq!(all_messages(&s, &bob, None).await, want);
    // Last activity is the latest message, not the last appended one.
    let v = s
        .conversation_for(alice.id, c.id)
        .await
        .expect("get")
        .expect("some");
    assert_eq!(v.conversation.last_active_at, Some(at_us(5, 999_999)));
}

async fn messages_list_only_visible_conversations(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let ab = direct(&s, &alice, &bob, at(1)).await;
    let ac = direct(&s, &carol, &alice, at(1)).await;
    let bc = direct(&s, &bob, &carol, at(1)).await;
    let g = group(&s, &bob, &[&carol], at(1)).await;
    let gc = group_conversation(&s, &carol, g.id, at(1)).await;
    let m1 = send(&s, &ab, &alice, "1", at(2)).await;
    let m2 = send(&s, &ac, &carol, "2", at(3)).await;
    let m3 = send(&s, &bc, &bob, "3", at(4)).await;
    let m4 = send(&s, &gc, &bob, "4", at(5)).await;
    let m5 = send(&s, &ab, &bob, "5", at(6)).await;

    assert_eq!(
        all_messages(&s, &alice, None).await,
        vec![m5.id, m2.id, m1.id]
    );
    assert_eq!(
        all_messages(&s, &bob, None).await,
        vec![m5.id, m4.id, m3.id, m1.id]
    );
    assert_eq!(
        all_messages(&s, &carol, None).await,
        vec![m4.id, m3.id, m2.id]
    );
    assert_eq!(
        all_messages(&s, &alice, Some(ab.id)).await,
        vec![m5.id, m1.id]
    );
    assert_eq!(all_messages(&s, &carol, Some(gc.id)).await, vec![m4.id]);
    // Scoped to the viewer even when asked for a foreign conversation.
    assert_eq!(all_messages(&s, &alice, Some(bc.id)).await, vec![]);
    assert_eq!(all_messages(&s, &alice, Some(gc.id)).await, vec![]);
    assert_eq!(
        all_messages(&s, &alice, Some(ConversationId::from_uuid(new_id()))).await,
        vec![]
    );
    let nobody = contact(&s, "dave").await;
    assert_eq!(all_messages(&s, &nobody, None).await, vec![]);

    // One message: visible to the members of its conversation only, and to
    // a group's members only while they belong to it.
    let seen = |viewer: ContactId, id: MessageId| {
        let s = s.clone();
        async move { s.message_for(viewer, id).await.expect("get").map(|m| m.id) }
    };
    assert_eq!(seen(alice.id, m1.id).await, Some(m1.id));
    assert_eq!(seen(bob.id, m1.id).await, Some(m1.id));
    assert_eq!(seen(carol.id, m1.id).await, None);
    assert_eq!(seen(nobody.id, m4.id).await, None);
    assert_eq!(seen(carol.id, m4.id).await, Some(m4.id));
    assert_eq!(seen(alice.id, MessageId::from_uuid(new_id())).await, None);
    let removed = GroupChange {
        remove: vec![carol.id],
        ..Default::default()
    };
    s.update_group(g.id, removed, at(7)).await.expect("remove");
    assert_eq!(
        seen(carol.id, m4.id).await,
        None,
        "the conversation's creator left the group"
    );
    let added = GroupChange {
        add: vec![nobody.id],
        ..Default::default()
    };
    s.update_group(g.id, added, at(8)).await.expect("add");
    assert_eq!(seen(nobody.id, m4.id).await, Some(m4.id));
}

async fn messages_paging_both_ways(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let c1 = direct(&s, &alice, &bob, at(1)).await;
    let c2 = direct(&s, &alice, &carol, at(1)).await;
    let hidden = direct(&s, &bob, &carol, at(1)).await;
    // m[0] oldest .. m[6] newest; even ones in c1, odd ones in c2.
    let mut m = Vec::new();
    for i in 0..7 {
        let conv = if i % 2 == 0 { &c1 } else { &c2 };
        m.push(send(&s, conv, &alice, "x", at_us(10, i)).await.id);
    }
    let h = send(&s, &hidden, &bob, "not alice's", at(11)).await;

    let list = |conv: Option<ConversationId>, limit: i64, cursor: Option<Cursor<MessageId>>| {
        let s = s.clone();
        let alice = alice.id;
        async move {
            let p = s
                .list_messages(alice, conv, page(limit, cursor))
                .await
                .expect("list");
            (msg_ids(&p), p.has_more)
        }
    };
    // All of alice's: m6 m5 m4 m3 m2 m1 m0
    assert_eq!(list(None, 3, None).await, (vec![m[6], m[5], m[4]], true));
    assert_eq!(
        list(None, 3, Some(Cursor::After(m[4]))).await,
        (vec![m[3], m[2], m[1]], true)
    );
    assert_eq!(
        list(None, 3, Some(Cursor::After(m[1]))).await,
        (vec![m[0]], false)
    );
    assert_eq!(
        list(None, 3, Some(Cursor::After(m[0]))).await,
        (vec![], false)
    );
    assert_eq!(
        list(None, 3, Some(Cursor::Before(m[0]))).await,
        (vec![m[3], m[2], m[1]], true)
    );
    assert_eq!(
        list(None, 3, Some(Cursor::Before(m[3]))).await,
        (vec![m[6], m[5], m[4]], false)
    );
    assert_eq!(
        list(None, 3, Some(Cursor::Before(m[5]))).await,
        (vec![m[6]], false)
    );
    assert!(!list(None, 7, None).await.1);
    assert!(list(None, 6, None).await.1);

    // One conversation: c1 holds m6 m4 m2 m0.
    assert_eq!(list(Some(c1.id), 2, None).await, (vec![m[6], m[4]], true));
    assert_eq!(
        list(Some(c1.id), 2, Some(Cursor::After(m[4]))).await,
        (vec![m[2], m[0]], false)
    );
    assert_eq!(
        list(Some(c1.id), 2, Some(Cursor::Before(m[0]))).await,
        (vec![m[4], m[2]], true)
    );
    assert_eq!(
        list(Some(c1.id), 2, Some(Cursor::Before(m[4]))).await,
        (vec![m[6]], false)
    );

    // Cursors outside the list being paged.
    for (conv, cursor) in [
        (Some(c1.id), Cursor::After(m[1])),
        (Some(c1.id), Cursor::Before(m[3])),
        (None, Cursor::After(h.id)),
        (None, Cursor::Before(h.id)),
        (Some(hidden.id), Cursor::After(h.id)),
        (None, Cursor::After(MessageId::from_uuid(new_id()))),
    ] {
        assert_err!(
            s.list_messages(alice.id, conv, page(3, Some(cursor))).await,
            StoreError::CursorNotFound
        );
    }
}

async fn messages_update_text_reactions_attachments(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let m = send(&s, &c, &alice, "first", at(2)).await;

    // Nothing submitted, or the same text: no change, no updated_at.
    let same = s
        .update_message(m.id, change(&alice, at(3)))
        .await
        .expect("empty");
    assert_eq!(same, m);
    let same = s
        .update_message(
            m.id,
            MessageChange {
                text: Some(text("first")),
                ..change(&alice, at(3))
            },
        )
        .await
        .expect("same text");
    assert_eq!(same.updated_at, None);

    let edited = s
        .update_message(
            m.id,
            MessageChange {
                text: Some(text("second")),
                ..change(&alice, at(4))
            },
        )
        .await
        .expect("edit");
    assert_eq!(edited.text.as_str(), "second");
    assert_eq!(edited.updated_at, Some(at(4)));
    assert_eq!(edited.created_at, m.created_at);

    // Reactions: grouped by name in order of the first reaction, reactors in
    // the order they reacted; one already had is skipped.
    let r = s
        .update_message(
            m.id,
            MessageChange {
                add_reactions: vec![rn("like")],
                ..change(&bob, at(5))
            },
        )
        .await
        .expect("bob likes");
    assert_eq!(r.updated_at, Some(at(5)));
    let r = s
        .update_message(
            m.id,
            MessageChange {
                add_reactions: vec![rn("heart"), rn("like"), rn("heart")],
                ..change(&alice, at(6))
            },
        )
        .await
        .expect("alice reacts");
    assert_eq!(
        reactions_of(&r),
        vec![
            ("like".into(), vec!["bob".into(), "alice".into()]),
            ("heart".into(), vec!["alice".into()]),
        ]
    );
    assert_eq!(r.reactions[0].reactors[0].contact_id, bob.id);
    let r = s
        .update_message(
            m.id,
            MessageChange {
                add_reactions: vec![rn("like")],
                ..change(&bob, at(7))
            },
        )
        .await
        .expect("bob likes again");
    assert_eq!(
        r.updated_at,
        Some(at(6)),
        "a duplicate reaction changes nothing"
    );
    let r = s
        .update_message(
            m.id,
            MessageChange {
                add_reactions: vec![rn("like"), rn("heart")],
                ..change(&bob, at(8))
            },
        )
        .await
        .expect("bob hearts");
    assert_eq!(r.updated_at, Some(at(8)));
    assert_eq!(
        reactions_of(&r),
        vec![
            ("like".into(), vec!["bob".into(), "alice".into()]),
            ("heart".into(), vec!["alice".into(), "bob".into()]),
        ]
    );

    // Attachments are appended after the existing ones, in order.
    let a1 = attachment(1);
    let a2 = attachment(2);
    let a3 = attachment(3);
    let r = s
        .update_message(
            m.id,
            MessageChange {
                add_attachments: vec![a1.clone(), a2.clone()],
                ..change(&alice, at(9))
            },
        )
        .await
        .expect("attach");
    assert_eq!(r.updated_at, Some(at(9)));
    let r = s
        .update_message(
            m.id,
            MessageChange {
                add_attachments: vec![a3.clone()],
                text: Some(text("third")),
                ..change(&alice, at(10))
            },
        )
        .await
        .expect("attach and edit");
    let ids: Vec<AttachmentId> = r.attachments.iter().map(|a| a.id).collect();
    assert_eq!(ids, vec![a1.0, a2.0, a3.0]);
    assert_eq!(r.attachments[2].created_at, at(10));
    assert_eq!(r.text.as_str(), "third");
    assert_eq!(r.updated_at, Some(at(10)));
    assert_eq!(r.reactions.len(), 2);
    assert_eq!(
        s.message_for(alice.id, m.id).await.expect("get"),
        Some(r.clone())
    );

    // Lists show the same message.
    let listed = s
        .list_messages(bob.id, Some(c.id), page(10, None))
        .await
        .expect("list");
    assert_eq!(listed.items, vec![r]);

    assert_err!(
        s.update_message(MessageId::from_uuid(new_id()), change(&alice, at(11)))
            .await,
        StoreError::NotFound
    );
}

async fn messages_reaction_name_limit(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let m = send(&s, &c, &alice, "react", at(2)).await;
    let names: Vec<ReactionName> = (0..31).map(|i| rn(&format!("r{i}"))).collect();
    let r = s
        .update_message(
            m.id,
            MessageChange {
                add_reactions: names,
                ..change(&alice, at(3))
            },
        )
        .await
        .expect("31 names");
    assert_eq!(r.reactions.len(), 31);
    let r = s
        .update_message(
            m.id,
            MessageChange {
                add_reactions: vec![rn("r31")],
                ..change(&bob, at(4))
            },
        )
        .await
        .expect("the 32nd name");
    assert_eq!(r.reactions.len(), 32);

    // The 33rd name is refused, and nothing of the change is applied.
    assert_err!(
        s.update_message(
            m.id,
            MessageChange {
                add_reactions: vec![rn("r0"), rn("r32")],
                text: Some(text("changed")),
                ..change(&bob, at(5))
            },
        )
        .await,
        StoreError::Rule(DomainError::Invalid {
            field: "reactions",
            ..
        })
    );
    let now = s
        .message_for(alice.id, m.id)
        .await
        .expect("get")
        .expect("some");
    assert_eq!(now, r);

    // Joining an existing name is still fine.
    let r = s
        .update_message(
            m.id,
            MessageChange {
                add_reactions: vec![rn("r0"), rn("r5")],
                ..change(&bob, at(6))
            },
        )
        .await
        .expect("join existing names");
    assert_eq!(r.reactions.len(), 32);
    assert_eq!(
        reactions_of(&r)[0],
        ("r0".into(), vec!["alice".into(), "bob".into()])
    );
}

async fn messages_attachment_limit(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let mut new = new_message(&c, &alice, "files", at(2));
    new.attachments = (0..9).map(attachment).collect();
    let m = s.append_message(new).await.expect("9 attachments");

    let tenth = attachment(9);
    let r = s
        .update_message(
            m.id,
            MessageChange {
                add_attachments: vec![tenth.clone()],
                ..change(&alice, at(3))
            },
        )
        .await
        .expect("the 10th");
    assert_eq!(r.attachments.len(), 10);
    assert_eq!(r.attachments[9].id, tenth.0);

    assert_err!(
        s.update_message(
            m.id,
            MessageChange {
                add_attachments: vec![attachment(10)],
                ..change(&alice, at(4))
            },
        )
        .await,
        StoreError::Rule(DomainError::Invalid {
            field: "attachments",
            ..
        })
    );
    assert_eq!(s.message_for(alice.id, m.id).await.expect("get"), Some(r));
}

async fn messages_remove_reaction(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let m = send(&s, &c, &alice, "hi", at(2)).await;
    s.update_message(
        m.id,
        MessageChange {
            add_reactions: vec![rn("like"), rn("wave")],
            ..change(&bob, at(3))
        },
    )
    .await
    .expect("bob");
    s.update_message(
        m.id,
        MessageChange {
            add_reactions: vec![rn("like")],
            ..change(&alice, at(4))
        },
    )
    .await
    .expect("alice");

    let r = s
        .remove_reaction(m.id, bob.id, rn("like"), at(5))
        .await
        .expect("remove");
    // Names follow their first remaining reaction: bob's "wave" now comes
    // before alice's "like".
    assert_eq!(
        reactions_of(&r),
        vec![
            ("wave".into(), vec!["bob".into()]),
            ("like".into(), vec!["alice".into()])
        ]
    );
    assert_eq!(r.updated_at, Some(at(5)));
    // Not having it is not an error, and changes nothing.
    let r = s
        .remove_reaction(m.id, bob.id, rn("like"), at(6))
        .await
        .expect("remove again");
    assert_eq!(r.updated_at, Some(at(5)));
    let r = s
        .remove_reaction(m.id, alice.id, rn("nope"), at(6))
        .await
        .expect("never had it");
    assert_eq!(r.updated_at, Some(at(5)));
    // The last reactor of a name takes the name with them.
    let r = s
        .remove_reaction(m.id, alice.id, rn("like"), at(7))
        .await
        .expect("remove");
    assert_eq!(reactions_of(&r), vec![("wave".into(), vec!["bob".into()])]);
    assert_eq!(r.updated_at, Some(at(7)));

    assert_err!(
        s.remove_reaction(MessageId::from_uuid(new_id()), bob.id, rn("like"), at(8))
            .await,
        StoreError::NotFound
    );
}

async fn messages_delete_clears_pin(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let mut new = new_message(&c, &alice, "pinned", at(2));
    new.attachments = vec![attachment(1)];
    let m = s.append_message(new).await.expect("append");
    let other = send(&s, &c, &bob, "other", at(3)).await;
    s.update_message(
        m.id,
        MessageChange {
            add_reactions: vec![rn("like")],
            ..change(&bob, at(4))
        },
    )
    .await
    .expect("react");
    s.update_conversation(
        alice.id,
        c.id,
        Some(PinnedMessageChange::Pin(m.id)),
        MemberStatePatch::default(),
    )
    .await
    .expect("pin");

    s.delete_message(m.id).await.expect("delete");
    assert_eq!(s.message_for(alice.id, m.id).await.expect("get"), None);
    assert_eq!(all_messages(&s, &bob, Some(c.id)).await, vec![other.id]);
    let v = s
        .conversation_for(bob.id, c.id)
        .await
        .expect("get")
        .expect("some");
    assert_eq!(v.conversation.pinned_message_id, None);
    assert_err!(s.delete_message(m.id).await, StoreError::NotFound);
    assert_err!(
        s.delete_message(MessageId::from_uuid(new_id())).await,
        StoreError::NotFound
    );
    // The other message and its conversation are untouched.
    assert!(s
        .message_for(alice.id, other.id)
        .await
        .expect("get")
        .is_some());
    // Deleting a message that is not pinned leaves the pin alone.
    let third = send(&s, &c, &bob, "third", at(5)).await;
    s.update_conversation(
        alice.id,
        c.id,
        Some(PinnedMessageChange::Pin(third.id)),
        MemberStatePatch::default(),
    )
    .await
    .expect("pin");
    s.delete_message(other.id).await.expect("delete");
    let v = s
        .conversation_for(bob.id, c.id)
        .await
        .expect("get")
        .expect("some");
    assert_eq!(v.conversation.pinned_message_id, Some(third.id));
}

// ---------------------------------------------------------------------------
// Groups
// ---------------------------------------------------------------------------

fn members(g: &Group) -> Vec<(ContactId, GroupRole)> {
    g.members.iter().map(|m| (m.contact.id, m.role)).collect()
}

async fn groups_create_and_get(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let dave = contact(&s, "dave").await;
    let new = NewGroup {
        id: GroupId::from_uuid(new_id()),
        name: GroupName::new("Book club".into()).expect("name"),
        description: GroupDescription::new("We read.".into()).expect("description"),
        avatar_url: AvatarUrl::new("https://img.example/g.png".into()).expect("avatar"),
        created_by: alice.id,
        // Duplicates and the creator are ignored.
        member_ids: vec![carol.id, alice.id, bob.id, carol.id],
        created_at: at(7),
    };
    let g = s.create_group(new.clone(), at(8)).await.expect("create");
    assert_eq!(g.id, new.id);
    assert_eq!(g.name.as_str(), "Book club");
    assert_eq!(g.description.as_str(), "We read.");
    assert_eq!(g.avatar_url, new.avatar_url);
    assert_eq!(g.created_by, alice.id);
    assert_eq!(g.created_at, at(7));
    assert_eq!(
        members(&g),
        vec![
            (alice.id, GroupRole::Owner),
            (carol.id, GroupRole::Member),
            (bob.id, GroupRole::Member),
        ]
    );
    assert_eq!(g.members[0].contact, alice);

    for viewer in [&alice, &bob, &carol] {
        assert_eq!(
            s.group_for(viewer.id, g.id).await.expect("get"),
            Some(g.clone())
        );
    }
    assert_eq!(s.group_for(dave.id, g.id).await.expect("get"), None);
    assert_eq!(
        s.group_for(alice.id, GroupId::from_uuid(new_id()))
            .await
            .expect("get"),
        None
    );

    // Unknown members: refused, nothing stored.
    let bad = NewGroup {
        id: GroupId::from_uuid(new_id()),
        member_ids: vec![bob.id, ContactId::from_uuid(new_id())],
        ..new.clone()
    };
    assert_err!(
        s.create_group(bad.clone(), at(9)).await,
        StoreError::Rule(DomainError::Invalid {
            field: "contact_ids",
            ..
        })
    );
    assert_eq!(s.group_for(alice.id, bad.id).await.expect("get"), None);

    // A group of one.
    let solo = s
        .create_group(
            NewGroup {
                id: GroupId::from_uuid(new_id()),
                member_ids: vec![],
                ..new
            },
            at(10),
        )
        .await
        .expect("solo");
    assert_eq!(members(&solo), vec![(alice.id, GroupRole::Owner)]);
}

async fn groups_list_paging(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let mut g = Vec::new();
    for i in 1..=5 {
        // Alice owns some and is a member of others.
        let made = if i % 2 == 0 {
            group(&s, &bob, &[&alice, &carol], at(i)).await
        } else {
            group(&s, &alice, &[&bob], at(i)).await
        };
        g.push(made);
    }
    let foreign = group(&s, &bob, &[&carol], at(9)).await;
    let id = |i: usize| g[i - 1].id;

    let list = |cursor: Option<Cursor<GroupId>>| {
        let s = s.clone();
        let alice = alice.id;
        async move { s.list_groups(alice, page(2, cursor)).await.expect("list") }
    };
    let p = list(None).await;
    assert_eq!((group_ids(&p), p.has_more), (vec![id(5), id(4)], true));
    assert_eq!(p.items[0], g[4], "with the members");
    assert_eq!(p.items[1].members.len(), 3);
    let p = list(Some(Cursor::After(id(4)))).await;
    assert_eq!((group_ids(&p), p.has_more), (vec![id(3), id(2)], true));
    let p = list(Some(Cursor::After(id(2)))).await;
    assert_eq!((group_ids(&p), p.has_more), (vec![id(1)], false));
    let p = list(Some(Cursor::Before(id(1)))).await;
    assert_eq!((group_ids(&p), p.has_more), (vec![id(3), id(2)], true));
    let p = list(Some(Cursor::Before(id(3)))).await;
    assert_eq!((group_ids(&p), p.has_more), (vec![id(5), id(4)], false));

    let all = s
        .list_groups(carol.id, page(100, None))
        .await
        .expect("list");
    assert_eq!(
        (group_ids(&all), all.has_more),
        (vec![foreign.id, id(4), id(2)], false)
    );

    for cursor in [
        Cursor::After(foreign.id),
        Cursor::Before(foreign.id),
        Cursor::After(GroupId::from_uuid(new_id())),
    ] {
        assert_err!(
            s.list_groups(alice.id, page(2, Some(cursor))).await,
            StoreError::CursorNotFound
        );
    }
}

async fn groups_update_members_and_details(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let dave = contact(&s, "dave").await;
    let g = group(&s, &alice, &[&bob], at(1)).await;

    let u = s
        .update_group(
            g.id,
            GroupChange {
                name: Some(GroupName::new("Renamed".into()).expect("name")),
                description: Some(GroupDescription::new("new".into()).expect("description")),
                avatar_url: None,
                add: vec![dave.id, bob.id, carol.id, dave.id],
                remove: vec![],
            },
            at(2),
        )
        .await
        .expect("update");
    assert_eq!(u.name.as_str(), "Renamed");
    assert_eq!(u.description.as_str(), "new");
    assert_eq!(u.avatar_url, g.avatar_url);
    assert_eq!(u.created_at, g.created_at);
    assert_eq!(
        members(&u),
        vec![
            (alice.id, GroupRole::Owner),
            (bob.id, GroupRole::Member),
            (dave.id, GroupRole::Member),
            (carol.id, GroupRole::Member),
        ]
    );

    // An unknown contact to add: refused, and nothing of the change applied.
    assert_err!(
        s.update_group(
            g.id,
            GroupChange {
                name: Some(GroupName::new("Nope".into()).expect("name")),
                add: vec![ContactId::from_uuid(new_id())],
                remove: vec![bob.id],
                ..GroupChange::default()
            },
            at(3),
        )
        .await,
        StoreError::Rule(DomainError::Invalid {
            field: "add_contact_ids",
            ..
        })
    );
    assert_eq!(
        s.group_for(alice.id, g.id).await.expect("get"),
        Some(u.clone())
    );

    let u = s
        .update_group(
            g.id,
            GroupChange {
                remove: vec![bob.id, ContactId::from_uuid(new_id())],
                ..GroupChange::default()
            },
            at(4),
        )
        .await
        .expect("remove");
    assert_eq!(
        members(&u),
        vec![
            (alice.id, GroupRole::Owner),
            (dave.id, GroupRole::Member),
            (carol.id, GroupRole::Member),
        ]
    );
    assert_eq!(s.group_for(bob.id, g.id).await.expect("get"), None);
    // Rejoining puts bob last.
    let u = s
        .update_group(
            g.id,
            GroupChange {
                add: vec![bob.id],
                avatar_url: Some(
                    AvatarUrl::new("https://img.example/x.png".into()).expect("avatar"),
                ),
                ..GroupChange::default()
            },
            at(5),
        )
        .await
        .expect("rejoin");
    assert_eq!(u.members.last().map(|m| m.contact.id), Some(bob.id));
    assert_eq!(u.avatar_url.as_str(), "https://img.example/x.png");
    // An empty change returns the group as it is.
    let same = s
        .update_group(g.id, GroupChange::default(), at(6))
        .await
        .expect("empty");
    assert_eq!(same, u);

    assert_err!(
        s.update_group(GroupId::from_uuid(new_id()), GroupChange::default(), at(7))
            .await,
        StoreError::NotFound
    );
}

async fn groups_delete_cascades(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let g = group(&s, &alice, &[&bob], at(1)).await;
    let keep = group(&s, &alice, &[&bob], at(1)).await;
    let gc = group_conversation(&s, &bob, g.id, at(2)).await;
    let kc = group_conversation(&s, &bob, keep.id, at(2)).await;
    let m = send(&s, &gc, &alice, "bye", at(3)).await;
    let km = send(&s, &kc, &alice, "stay", at(3)).await;
    s.open_conversation(bob.id, gc.id, at(4))
        .await
        .expect("open");

    s.delete_group(g.id).await.expect("delete");
    assert_eq!(s.group_for(alice.id, g.id).await.expect("get"), None);
    assert_eq!(
        s.conversation_for(alice.id, gc.id).await.expect("get"),
        None
    );
    assert_eq!(s.message_for(alice.id, m.id).await.expect("get"), None);
    assert_eq!(list_convs(&s, &bob, no_filter()).await, vec![kc.id]);
    assert_eq!(all_messages(&s, &bob, None).await, vec![km.id]);
    let groups = s.list_groups(bob.id, page(10, None)).await.expect("list");
    assert_eq!(group_ids(&groups), vec![keep.id]);
    assert_err!(s.delete_group(g.id).await, StoreError::NotFound);
}

// ---------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------

async fn concurrent_writers_into_one_conversation(s: S) {
    const WRITERS: usize = 16;
    const MESSAGES: usize = 200;
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();

    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let (s, next, c) = (s.clone(), next.clone(), c.clone());
        let sender = if w % 2 == 0 {
            alice.clone()
        } else {
            bob.clone()
        };
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let n = next.fetch_add(1, Ordering::SeqCst);
                if n >= MESSAGES {
                    break mine;
                }
                // Three messages share each microsecond: ties go by id.
                let created = at_us(10, i64::try_from(n / 3).expect("small"));
                let m = s
                    .append_message(new_message(&c, &sender, &format!("message {n}"), created))
                    .await
                    .unwrap_or_else(|e| panic!("writer {w}, message {n}: {e}"));
                mine.push((m.created_at, m.id));
            }
        }));
    }
    let mut expected = Vec::new();
    for t in tasks {
        expected.extend(t.await.expect("writer"));
    }
    assert_eq!(expected.len(), MESSAGES);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
    expected.sort_by(|a, b| b.cmp(a));
    let expected: Vec<MessageId> = expected.into_iter().map(|(_, id)| id).collect();

    // Forward, page by page: each message exactly once, in order.
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let p = s
            .list_messages(bob.id, Some(c.id), page(9, cursor))
            .await
            .expect("page");
        seen.extend(msg_ids(&p));
        if !p.has_more {
            break;
        }
        cursor = seen.last().copied().map(Cursor::After);
    }
    assert_eq!(seen, expected);

    // Backward from the oldest, through the list of all conversations.
    let oldest = *expected.last().expect("messages");
    let mut seen = vec![oldest];
    loop {
        let first = seen[0];
        let p = s
            .list_messages(alice.id, None, page(7, Some(Cursor::Before(first))))
            .await
            .expect("page");
        let mut ids = msg_ids(&p);
        ids.extend(seen);
        seen = ids;
        if !p.has_more {
            break;
        }
    }
    assert_eq!(seen, expected);

    let v = s
        .conversation_for(alice.id, c.id)
        .await
        .expect("get")
        .expect("some");
    assert_eq!(
        v.conversation.last_active_at,
        Some(at_us(10, i64::try_from((MESSAGES - 1) / 3).expect("small")))
    );
}

// ---------------------------------------------------------------------------
// Adapter-specific
// ---------------------------------------------------------------------------

/// A database that cannot be reached fails fast instead of hanging requests.
#[test]
fn postgres_connect_fails_fast_when_the_database_is_down() {
    let started = Instant::now();
    let result = PgStore::connect("postgres://postgres@127.0.0.1:1/confab");
    assert!(result.is_err());
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
}

/// Runs one statement as the PostgreSQL superuser.
async fn pg_admin(sql: String) {
    tokio::task::spawn_blocking(move || {
        let mut admin = PgConnection::establish(&postgres_admin_url()).expect("admin connection");
        admin
            .batch_execute(&sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    })
    .await
    .expect("join");
}

/// While the database refuses connections (its server connections killed,
/// as in a restart), calls fail fast with `Unavailable`; once it is back,
/// the same store works again without being rebuilt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_fails_fast_while_down_and_recovers() {
    let (db, s) = open(Backend::Postgres).await;
    let name = db
        .postgres_name()
        .expect("a PostgreSQL database")
        .to_owned();
    let alice = contact(&s, "alice").await;

    pg_admin(format!("ALTER DATABASE {name} ALLOW_CONNECTIONS false")).await;
    pg_admin(format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"
    ))
    .await;
    let started = Instant::now();
    assert_err!(s.ping().await, StoreError::Unavailable(_));
    assert_err!(s.contact(alice.id).await, StoreError::Unavailable(_));
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "took {:?}",
        started.elapsed()
    );

    pg_admin(format!("ALTER DATABASE {name} ALLOW_CONNECTIONS true")).await;
    s.ping().await.expect("recovered");
    assert_eq!(s.contact(alice.id).await.expect("get"), Some(alice));
    contact(&s, "bob").await;
    drop(s);
    drop(db);
}

/// Two stores on one SQLite file (as the server and the CLI would be) do not
/// share the in-process writer queue: their writers meet at SQLite's lock,
/// and `BEGIN IMMEDIATE` with the busy timeout still lets every one through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_writers_of_two_stores_on_one_file_all_succeed() {
    let (db, first) = open(Backend::Sqlite).await;
    let url = db.url.clone();
    let second: S = tokio::task::spawn_blocking(move || {
        Arc::new(SqliteStore::open(&url).expect("open again")) as S
    })
    .await
    .expect("join");
    let alice = contact(&first, "alice").await;
    let bob = contact(&second, "bob").await;
    let c = direct(&first, &alice, &bob, at(1)).await;

    let mut tasks = Vec::new();
    for w in 0..8_i64 {
        for (store, sender) in [(&first, &alice), (&second, &bob)] {
            let (s, c, sender) = (store.clone(), c.clone(), sender.clone());
            tasks.push(tokio::spawn(async move {
                for i in 0..10 {
                    s.append_message(new_message(&c, &sender, "x", at_us(2, w * 100 + i)))
                        .await
                        .unwrap_or_else(|e| panic!("writer {w}: {e}"));
                }
            }));
        }
    }
    for t in tasks {
        t.await.expect("writer");
    }
    let first_page = second
        .list_messages(alice.id, Some(c.id), page(100, None))
        .await
        .expect("list");
    assert!(first_page.has_more);
    let last = first_page.items.last().map(|m| m.id).expect("messages");
    let rest = first
        .list_messages(bob.id, Some(c.id), page(100, Some(Cursor::After(last))))
        .await
        .expect("list");
    assert!(!rest.has_more);
    let mut ids = msg_ids(&first_page);
    ids.extend(msg_ids(&rest));
    assert_eq!(ids.len(), 160);
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 160, "each message once");
    drop((first, second));
    drop(db);
}

// ---------------------------------------------------------------------------
// Query cost: a page is a fixed number of statements (no N+1)
// ---------------------------------------------------------------------------

/// The fewest statements one `list_messages` call of `limit` cost over three
/// tries (the pool may open a connection in the background during one).
async fn statements_for_page(
    s: &S,
    viewer: &Contact,
    conv: Option<ConversationId>,
    limit: i64,
    statements: &(dyn Fn() -> u64 + Sync),
) -> (u64, Paged<Message>) {
    let mut best = None;
    for _ in 0..3 {
        let before = statements();
        let got = s
            .list_messages(viewer.id, conv, page(limit, None))
            .await
            .expect("list messages");
        let cost = statements() - before;
        if best.as_ref().is_none_or(|(c, _)| cost < *c) {
            best = Some((cost, got));
        }
    }
    best.expect("three tries")
}

async fn page_of_messages_costs_a_fixed_number_of_statements(
    s: S,
    statements: &(dyn Fn() -> u64 + Sync),
) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let g = group(&s, &alice, &[&bob, &carol], at(0)).await;
    let conv = group_conversation(&s, &alice, g.id, at(1)).await;
    send(&s, &conv, &alice, "first", at(2)).await;

    let (one, page1) = statements_for_page(&s, &bob, Some(conv.id), 50, statements).await;
    assert_eq!(page1.items.len(), 1);
    let (one_all, _) = statements_for_page(&s, &bob, None, 50, statements).await;

    // 49 more, from three senders, each with two attachments and reactions
    // by everyone under two names.
    let people = [&alice, &bob, &carol];
    for i in 0..49_i64 {
        let sender = people[(i % 3) as usize];
        let mut m = new_message(&conv, sender, "more", at(3 + i));
        m.attachments = vec![attachment(2 * i), attachment(2 * i + 1)];
        let m = s.append_message(m).await.expect("append");
        for who in people {
            let mut c = change(who, at(3 + i));
            c.add_reactions = vec![rn("like"), rn("heart")];
            s.update_message(m.id, c).await.expect("react");
        }
    }

    let (many, page50) = statements_for_page(&s, &bob, Some(conv.id), 50, statements).await;
    let (many_all, _) = statements_for_page(&s, &bob, None, 50, statements).await;
    assert_eq!(page50.items.len(), 50);
    let loaded = &page50.items[0];
    assert_eq!(loaded.attachments.len(), 2, "attachments loaded");
    assert_eq!(reactions_of(loaded).len(), 2, "reactions loaded");
    assert_eq!(loaded.reactions[0].reactors.len(), 3, "all reactors loaded");
    println!(
        "statements per page: 1 message {one}, 50 messages {many}; feed {one_all} / {many_all}"
    );
    assert!(one > 0, "the counter counts");
    assert_eq!(
        one, many,
        "a page of 1 message cost {one} statements, a page of 50 cost {many}"
    );
    assert_eq!(
        one_all, many_all,
        "the all-conversations feed: 1 message cost {one_all}, 50 cost {many_all}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_page_of_messages_costs_a_fixed_number_of_statements() {
    let (db, store) = tokio::task::spawn_blocking(|| {
        let db = TestDb::postgres();
        let store = PgStore::connect(&db.url).expect("connect");
        (db, store)
    })
    .await
    .expect("join");
    let counter = store.clone();
    page_of_messages_costs_a_fixed_number_of_statements(Arc::new(store), &move || {
        counter.statements_run()
    })
    .await;
    drop(db);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_page_of_messages_costs_a_fixed_number_of_statements() {
    let (db, store) = tokio::task::spawn_blocking(|| {
        let db = TestDb::sqlite();
        let store = SqliteStore::open(&db.url).expect("open");
        (db, store)
    })
    .await
    .expect("join");
    let counter = store.clone();
    page_of_messages_costs_a_fixed_number_of_statements(Arc::new(store), &move || {
        counter.statements_run()
    })
    .await;
    drop(db);
}
