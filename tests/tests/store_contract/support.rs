//! Shared helpers of the contract suite: opening a store per backend and
//! building contacts, conversations, groups and messages.

use std::future::Future;
use std::sync::Arc;

use confab_domain::{
    AddAttachment, AttachmentId, AvatarUrl, Contact, ContactId, ContactParts, Conversation,
    ConversationId, ConversationView, Cursor, FileSize, FileType, FileUrl, Filename, Group,
    GroupDescription, GroupId, GroupName, Message, MessageId, MessageText, NewAttachment, Page,
    PageLimit, Paged, PhoneNumber, ReactionName, Timestamp, Username,
};
use confab_ports::{ConversationFilter, MessageChange, NewGroup, NewMessage, Outbox, Store};
use confab_server::payloads::WirePayloads;
use confab_store_postgres::PgStore;
use confab_store_sqlite::SqliteStore;
use confab_tests::db::{Backend, TestDb};
use uuid::Uuid;

pub(crate) type S = Arc<dyn Store>;

pub(crate) async fn open(backend: Backend) -> (TestDb, S) {
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

/// Runs `test` on a fresh store of `backend`, then drops its database
/// (the runner `on_both_stores!` calls for each backend).
pub(crate) async fn on_store<F, Fut>(backend: Backend, test: F)
where
    F: FnOnce(S) -> Fut,
    Fut: Future<Output = ()>,
{
    let (db, store) = open(backend).await;
    test(store).await;
    drop(db);
}

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
pub(crate) use assert_err;

/// An outbox without events, for writes whose events a test does not look at.
pub(crate) fn no_events() -> Outbox {
    Outbox::new(Vec::new(), Arc::new(WirePayloads::default()))
}

pub(crate) const T0: i64 = 1_700_000_000;

/// `secs` seconds after the suite's epoch.
pub(crate) fn at(secs: i64) -> Timestamp {
    Timestamp::from_secs(T0 + secs)
}

/// `secs` seconds and `micros` microseconds after the suite's epoch.
pub(crate) fn at_us(secs: i64, micros: i64) -> Timestamp {
    Timestamp::from_micros((T0 + secs) * 1_000_000 + micros)
}

pub(crate) fn new_id() -> Uuid {
    Uuid::now_v7()
}

pub(crate) fn page<Id>(limit: i64, cursor: Option<Cursor<Id>>) -> Page<Id> {
    Page {
        limit: PageLimit::new(limit).expect("limit"),
        cursor,
    }
}

pub(crate) fn no_filter() -> ConversationFilter {
    ConversationFilter::default()
}

pub(crate) async fn contact(s: &S, username: &str) -> Contact {
    s.create_contact(
        Contact::new(ContactParts {
            id: ContactId::from_uuid(new_id()),
            username: Username::new(username.into()).expect("username"),
            phone_number: PhoneNumber::new("+15550100".into()).expect("phone"),
            avatar_url: AvatarUrl::none(),
            last_active_at: at(0),
            created_at: at(0),
        })
        .expect("contact"),
        no_events(),
    )
    .await
    .expect("create contact")
}

pub(crate) async fn direct(
    s: &S,
    creator: &Contact,
    peer: &Contact,
    created: Timestamp,
) -> Conversation {
    let c = Conversation::new_direct(
        ConversationId::from_uuid(new_id()),
        creator.id(),
        peer.id(),
        created,
    )
    .expect("direct");
    s.create_conversation(c.clone(), no_events(), None)
        .await
        .expect("create direct");
    c
}

pub(crate) async fn group_conversation(
    s: &S,
    creator: &Contact,
    group: GroupId,
    created: Timestamp,
) -> Conversation {
    let c = Conversation::new_group(
        ConversationId::from_uuid(new_id()),
        creator.id(),
        group,
        created,
    );
    s.create_conversation(c.clone(), no_events(), None)
        .await
        .expect("create group conversation");
    c
}

pub(crate) async fn group(
    s: &S,
    owner: &Contact,
    members: &[&Contact],
    created: Timestamp,
) -> Group {
    s.create_group(
        NewGroup {
            id: GroupId::from_uuid(new_id()),
            name: GroupName::new("Team".into()).expect("name"),
            description: GroupDescription::empty(),
            avatar_url: AvatarUrl::none(),
            created_by: owner.id(),
            member_ids: members.iter().map(|m| m.id()).collect(),
            created_at: created,
            max_members: confab_domain::DEFAULT_MAX_GROUP_MEMBERS,
        },
        created,
        no_events(),
        None,
    )
    .await
    .expect("create group")
}

pub(crate) fn text(s: &str) -> MessageText {
    MessageText::new(s.into()).expect("text")
}

pub(crate) fn new_message(
    conv: &Conversation,
    sender: &Contact,
    body: &str,
    created: Timestamp,
) -> NewMessage {
    NewMessage {
        id: MessageId::from_uuid(new_id()),
        conversation_id: conv.id(),
        sender: sender.clone(),
        text: text(body),
        attachments: Vec::new(),
        created_at: created,
        reply_to: None,
        parent_id: None,
        mentions: confab_domain::Mentions::none(),
    }
}

pub(crate) async fn send(
    s: &S,
    conv: &Conversation,
    sender: &Contact,
    body: &str,
    created: Timestamp,
) -> Message {
    s.append_message(new_message(conv, sender, body, created), no_events(), None)
        .await
        .expect("append message")
}

pub(crate) fn attachment(n: i64) -> AddAttachment {
    AddAttachment::Link(
        AttachmentId::from_uuid(new_id()),
        NewAttachment {
            filename: Filename::new(format!("file{n}.txt")).expect("filename"),
            file_url: FileUrl::new(format!("https://files.example/{n}")).expect("url"),
            file_type: FileType::new("text/plain".into()).expect("type"),
            file_size: Some(FileSize::new(n).expect("size")),
        },
    )
}

/// A new attachment by URL taken apart.
pub(crate) fn pair(a: &AddAttachment) -> (AttachmentId, NewAttachment) {
    match a {
        AddAttachment::Link(id, a) => (*id, a.clone()),
        AddAttachment::Upload(_) => panic!("an upload is not a new attachment by URL"),
    }
}

/// A new attachment by URL put together.
pub(crate) fn link((id, a): (AttachmentId, NewAttachment)) -> AddAttachment {
    AddAttachment::Link(id, a)
}

/// The URL of a new attachment by URL.
pub(crate) fn link_url(a: &AddAttachment) -> String {
    match a {
        AddAttachment::Link(_, a) => a.file_url.as_str().to_owned(),
        AddAttachment::Upload(_) => panic!("an upload has no URL of its own"),
    }
}

pub(crate) fn rn(name: &str) -> ReactionName {
    ReactionName::new(name.into()).expect("reaction name")
}

pub(crate) fn change(by: &Contact, when: Timestamp) -> MessageChange {
    MessageChange {
        text: None,
        add_reactions: Vec::new(),
        reactor: by.id(),
        add_attachments: Vec::new(),
        mentions: None,
        edit_id: confab_domain::EditId::from_uuid(new_id()),
        at: when,
    }
}

/// Reactions as `name -> usernames`, in order.
pub(crate) fn reactions_of(m: &Message) -> Vec<(String, Vec<String>)> {
    m.reactions()
        .iter()
        .map(|r| {
            (
                r.name().as_str().to_owned(),
                r.reactors()
                    .iter()
                    .map(|x| x.username.as_str().to_owned())
                    .collect(),
            )
        })
        .collect()
}

pub(crate) fn conv_ids(p: &Paged<ConversationView>) -> Vec<ConversationId> {
    p.items.iter().map(|v| v.conversation.id()).collect()
}

pub(crate) fn msg_ids(p: &Paged<Message>) -> Vec<MessageId> {
    p.items.iter().map(|m| m.id()).collect()
}

pub(crate) fn group_ids(p: &Paged<Group>) -> Vec<GroupId> {
    p.items.iter().map(|g| g.id()).collect()
}

pub(crate) async fn list_convs(
    s: &S,
    viewer: &Contact,
    filter: ConversationFilter,
) -> Vec<ConversationId> {
    conv_ids(
        &s.list_conversations(viewer.id(), filter, page(100, None))
            .await
            .expect("list conversations"),
    )
}

pub(crate) async fn all_messages(
    s: &S,
    viewer: &Contact,
    conv: Option<ConversationId>,
) -> Vec<MessageId> {
    msg_ids(
        &s.list_messages(viewer.id(), conv.into(), page(100, None))
            .await
            .expect("list messages"),
    )
}
