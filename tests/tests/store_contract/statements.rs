//! Query cost: a page is a fixed number of statements (no N+1).

use std::sync::Arc;

use confab_domain::{Contact, ConversationId, Message, Paged};
use confab_store_postgres::PgStore;
use confab_store_sqlite::SqliteStore;
use confab_tests::db::{Backend, TestDb};

use crate::support::no_events;
use crate::support::{
    at, attachment, change, contact, group, group_conversation, new_message, page, reactions_of,
    rn, send, S,
};

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
            .list_messages(viewer.id(), conv.into(), page(limit, None))
            .await
            .expect("list messages");
        let cost = statements() - before;
        if best.as_ref().is_none_or(|(c, _)| cost < *c) {
            best = Some((cost, got));
        }
    }
    best.expect("three tries")
}

/// The statements a store has sent so far.
type Counter = Box<dyn Fn() -> u64 + Send + Sync>;

/// A store on a fresh database of `backend`, with its statement counter.
async fn counted_store(backend: Backend) -> (TestDb, S, Counter) {
    tokio::task::spawn_blocking(move || match backend {
        Backend::Postgres => {
            let db = TestDb::postgres();
            let store = PgStore::connect(&db.url).expect("connect");
            let counter = store.clone();
            let statements: Counter = Box::new(move || counter.statements_run());
            (db, Arc::new(store) as S, statements)
        }
        Backend::Sqlite => {
            let db = TestDb::sqlite();
            let store = SqliteStore::open(&db.url).expect("open");
            let counter = store.clone();
            let statements: Counter = Box::new(move || counter.statements_run());
            (db, Arc::new(store) as S, statements)
        }
    })
    .await
    .expect("join")
}

async fn page_of_messages_costs_a_fixed_number_of_statements(
    s: S,
    statements: &(dyn Fn() -> u64 + Sync),
) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let g = group(&s, &alice, &[&bob, &carol], at(0)).await;
    let conv = group_conversation(&s, &alice, g.id(), at(1)).await;
    send(&s, &conv, &alice, "first", at(2)).await;

    let (one, page1) = statements_for_page(&s, &bob, Some(conv.id()), 50, statements).await;
    assert_eq!(page1.items.len(), 1);
    let (one_all, _) = statements_for_page(&s, &bob, None, 50, statements).await;

    // 49 more, from three senders, each with two attachments and reactions
    // by everyone under two names.
    let people = [&alice, &bob, &carol];
    for i in 0..49_i64 {
        let sender = people[(i % 3) as usize];
        let mut m = new_message(&conv, sender, "more", at(3 + i));
        m.attachments = vec![attachment(2 * i), attachment(2 * i + 1)];
        let m = s
            .append_message(m, no_events(), None)
            .await
            .expect("append");
        for who in people {
            let mut c = change(who, at(3 + i));
            c.add_reactions = vec![rn("like"), rn("heart")];
            s.update_message(m.id(), c, no_events())
                .await
                .expect("react");
        }
    }

    let (many, page50) = statements_for_page(&s, &bob, Some(conv.id()), 50, statements).await;
    let (many_all, _) = statements_for_page(&s, &bob, None, 50, statements).await;
    assert_eq!(page50.items.len(), 50);
    let loaded = &page50.items[0];
    assert_eq!(loaded.attachments().len(), 2, "attachments loaded");
    assert_eq!(reactions_of(loaded).len(), 2, "reactions loaded");
    assert_eq!(
        loaded.reactions()[0].reactors().len(),
        3,
        "all reactors loaded"
    );
    println!(
        "statements per page: 1 message {one}, 50 messages {many}; feed {one_all} / {many_all}"
    );
    assert!(one > 0, "the counter counts");
    assert_eq!(
        one, many,
        "a page of 1 message cost {one} statements, a page of 50 cost {many}"
    );
    assert_eq!(
        many, 1,
        "a page of one conversation, senders, reactions and attachments included"
    );
    assert_eq!(
        one_all, many_all,
        "the all-conversations feed: 1 message cost {one_all}, 50 cost {many_all}"
    );
    assert_eq!(many_all, 1, "the feed, relations included");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_page_of_messages_costs_a_fixed_number_of_statements() {
    let (db, store, statements) = counted_store(Backend::Postgres).await;
    page_of_messages_costs_a_fixed_number_of_statements(store, &*statements).await;
    drop(db);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_page_of_messages_costs_a_fixed_number_of_statements() {
    let (db, store, statements) = counted_store(Backend::Sqlite).await;
    page_of_messages_costs_a_fixed_number_of_statements(store, &*statements).await;
    drop(db);
}

/// What every operation of the API costs in SQL statements, as the service
/// runs it on a store (the HTTP layer adds none): one row per endpoint.
/// Transactions count their `BEGIN` and `COMMIT`.
mod per_endpoint {
    use std::future::Future;
    use std::time::Duration;

    use confab_domain::{
        Contact, Cursor, FileType, FileUrl, Filename, GroupName, MessageText, NewAttachment, Page,
        PageLimit, ReactionName,
    };
    use confab_ports::ConversationFilter;
    use confab_service::{
        Confab, ConversationTarget, GroupUpdate, MessageUpdate, NewGroupRequest, Ports, SendMessage,
    };

    type Counter = Box<dyn Fn() -> u64 + Send + Sync>;

    /// Statements `op` sent.
    async fn cost<T>(count: &Counter, op: impl Future<Output = T>) -> (u64, T) {
        let before = count();
        let out = op.await;
        (count() - before, out)
    }

    fn page<Id>(limit: i64, cursor: Option<Cursor<Id>>) -> Page<Id> {
        Page {
            limit: PageLimit::new(limit).expect("limit"),
            cursor,
        }
    }

    fn text(s: &str) -> MessageText {
        MessageText::new(s.into()).expect("text")
    }

    fn file(n: u32) -> NewAttachment {
        NewAttachment {
            filename: Filename::new(format!("f{n}.txt")).expect("filename"),
            file_url: FileUrl::new(format!("https://files.example/{n}")).expect("url"),
            file_type: FileType::new("text/plain".into()).expect("type"),
            file_size: None,
        }
    }

    async fn user(svc: &Confab, name: &str) -> (Contact, String) {
        svc.create_contact(name, "+15550100", None)
            .await
            .expect("contact");
        let token = svc.issue_token(name, None).await.expect("token");
        let me = svc.authenticate(&token).await.expect("authenticate");
        (me, token)
    }

    /// Runs every operation once on a warm store; returns (endpoint, statements).
    pub(super) async fn measure(svc: Confab, count: Counter) -> Vec<(&'static str, u64)> {
        let mut rows = Vec::new();
        let (alice, _) = user(&svc, "alice").await;
        let (bob, _) = user(&svc, "bob").await;
        let (carol, _) = user(&svc, "carol").await;
        let conv = svc
            .create_conversation(&alice, ConversationTarget::Contact(bob.id()), None)
            .await
            .expect("conversation")
            .conversation;
        for i in 0..3 {
            svc.send_message(
                &bob,
                SendMessage {
                    conversation_id: conv.id(),
                    text: text(&format!("warm {i}")),
                    attachments: vec![],
                    reply_to_id: None,
                    parent_id: None,
                    mentions: Vec::new(),
                },
                None,
            )
            .await
            .expect("send");
        }
        // Let the pool settle (it opens its idle connections in the background).
        tokio::time::sleep(Duration::from_millis(500)).await;

        let token = svc.issue_token("carol", None).await.expect("token");
        let (n, _) = cost(&count, svc.authenticate(&token)).await;
        rows.push(("any /v1 request: token lookup (first use)", n));
        let (n, _) = cost(&count, svc.authenticate(&token)).await;
        rows.push(("any /v1 request: token lookup (again)", n));

        let (n, _) = cost(&count, svc.contact(&alice, bob.id())).await;
        rows.push(("GET /v1/contacts/:id", n));
        let (n, _) = cost(&count, svc.find_contacts(&alice, "bob")).await;
        rows.push(("GET /v1/contacts?username=", n));
        let patch = confab_domain::ContactProfilePatch {
            phone_number: Some(confab_domain::PhoneNumber::new("+15550199".into()).expect("phone")),
            avatar_url: None,
        };
        let (n, _) = cost(&count, svc.update_me(&alice, patch)).await;
        rows.push(("PUT /v1/contacts/me", n));

        let (n, r) = cost(
            &count,
            svc.create_conversation(&alice, ConversationTarget::Contact(carol.id()), None),
        )
        .await;
        let spare = r.expect("create conversation").conversation;
        rows.push(("POST /v1/conversations", n));
        let (n, _) = cost(
            &count,
            svc.list_conversations(&alice, ConversationFilter::default(), page(10, None)),
        )
        .await;
        rows.push(("GET /v1/conversations", n));
        let (n, _) = cost(&count, svc.open_conversation(&alice, conv.id())).await;
        rows.push(("GET /v1/conversations/:id", n));
        let (n, _) = cost(
            &count,
            svc.update_conversation(&alice, conv.id(), None, None, Some(true), None),
        )
        .await;
        rows.push(("PUT /v1/conversations/:id (is_muted)", n));

        let (n, sent) = cost(
            &count,
            svc.send_message(
                &alice,
                SendMessage {
                    conversation_id: conv.id(),
                    text: text("hello"),
                    attachments: vec![],
                    reply_to_id: None,
                    parent_id: None,
                    mentions: Vec::new(),
                },
                None,
            ),
        )
        .await;
        let sent = sent.expect("send");
        rows.push(("POST /v1/messages", n));
        let (n, with_files) = cost(
            &count,
            svc.send_message(
                &alice,
                SendMessage {
                    conversation_id: conv.id(),
                    text: text("files"),
                    attachments: vec![
                        confab_service::AttachmentInput::Link(file(1)),
                        confab_service::AttachmentInput::Link(file(2)),
                    ],
                    reply_to_id: None,
                    parent_id: None,
                    mentions: Vec::new(),
                },
                None,
            ),
        )
        .await;
        let with_files = with_files.expect("send with attachments");
        assert_eq!(with_files.attachments().len(), 2);
        rows.push(("POST /v1/messages (2 attachments)", n));
        let (n, r) = cost(
            &count,
            svc.send_message(
                &carol,
                SendMessage {
                    conversation_id: conv.id(),
                    text: text("not mine"),
                    attachments: vec![],
                    reply_to_id: None,
                    parent_id: None,
                    mentions: Vec::new(),
                },
                None,
            ),
        )
        .await;
        assert!(r.is_err(), "a non-member cannot post");
        rows.push(("POST /v1/messages (not a member: 404)", n));

        // With an Idempotency-Key: the claim of a new key (counted against
        // the contact's quota of the day in the same statement or
        // transaction), the send completing it, and a replay.
        let key = confab_service::IdempotencyKey::parse("statements").expect("key");
        let (n, begun) = cost(
            &count,
            svc.begin_idempotent(&alice, key.clone(), "digest".into()),
        )
        .await;
        let Ok(confab_service::Idempotent::Run(claim)) = begun else {
            panic!("a new key runs: {begun:?}");
        };
        rows.push(("POST /v1/messages (Idempotency-Key: claim a new key)", n));
        let completion = confab_service::Completion::new(claim, |m: &confab_domain::Message| {
            confab_service::StoredResponse {
                code: 201,
                location: None,
                body: m.id().to_string(),
            }
        });
        let (n, r) = cost(
            &count,
            svc.send_message(
                &alice,
                SendMessage {
                    conversation_id: conv.id(),
                    text: text("keyed"),
                    attachments: vec![],
                    reply_to_id: None,
                    parent_id: None,
                    mentions: Vec::new(),
                },
                Some(completion),
            ),
        )
        .await;
        r.expect("keyed send");
        rows.push(("POST /v1/messages (Idempotency-Key: the send)", n));
        let (n, replay) = cost(&count, svc.begin_idempotent(&alice, key, "digest".into())).await;
        assert!(
            matches!(replay, Ok(confab_service::Idempotent::Replay(_))),
            "{replay:?}"
        );
        rows.push(("POST /v1/messages (Idempotency-Key: a replay)", n));

        let (n, _) = cost(
            &count,
            svc.update_conversation(&alice, conv.id(), Some(Some(sent.id())), None, None, None),
        )
        .await;
        rows.push(("PUT /v1/conversations/:id (pinned_message_id)", n));
        let (n, _) = cost(
            &count,
            svc.update_conversation(&alice, conv.id(), Some(Some(sent.id())), None, None, None),
        )
        .await;
        rows.push(("PUT /v1/conversations/:id (the same pinned_message_id)", n));

        let (n, p) = cost(
            &count,
            svc.list_messages(&bob, Some(conv.id()).into(), page(10, None)),
        )
        .await;
        let first = p.expect("page");
        assert!(!first.items.is_empty());
        rows.push(("GET /v1/messages?conversation_id=", n));
        let (n, _) = cost(&count, svc.list_messages(&bob, None.into(), page(10, None))).await;
        rows.push(("GET /v1/messages (all conversations)", n));
        let after = Some(Cursor::After(first.items[0].id()));
        let (n, _) = cost(
            &count,
            svc.list_messages(&bob, Some(conv.id()).into(), page(2, after)),
        )
        .await;
        rows.push(("GET /v1/messages?conversation_id=&starting_after=", n));
        let last = first.items.last().map(|m| m.id()).expect("a message");
        let (n, r) = cost(
            &count,
            svc.list_messages(
                &bob,
                Some(conv.id()).into(),
                page(2, Some(Cursor::After(last))),
            ),
        )
        .await;
        assert!(r.expect("empty page").items.is_empty());
        rows.push(("GET /v1/messages (empty page after the last)", n));
        let (n, r) = cost(
            &count,
            svc.list_messages(&carol, Some(conv.id()).into(), page(2, None)),
        )
        .await;
        assert!(r.is_err(), "a non-member cannot list");
        rows.push(("GET /v1/messages?conversation_id= (not a member: 404)", n));

        let (n, _) = cost(&count, svc.message(&bob, sent.id())).await;
        rows.push(("GET /v1/messages/:id", n));
        let (n, _) = cost(
            &count,
            svc.update_message(
                &alice,
                sent.id(),
                MessageUpdate {
                    text: Some(text("edited")),
                    ..Default::default()
                },
            ),
        )
        .await;
        rows.push(("PUT /v1/messages/:id (message)", n));
        let like = ReactionName::new("like".into()).expect("name");
        let (n, _) = cost(
            &count,
            svc.update_message(
                &bob,
                sent.id(),
                MessageUpdate {
                    reactions: vec![(like.clone(), vec!["bob".into()])],
                    ..Default::default()
                },
            ),
        )
        .await;
        rows.push(("PUT /v1/messages/:id (reactions)", n));
        let (n, _) = cost(
            &count,
            svc.update_message(
                &alice,
                sent.id(),
                MessageUpdate {
                    attachments: vec![confab_service::AttachmentInput::Link(file(3))],
                    ..Default::default()
                },
            ),
        )
        .await;
        rows.push(("PUT /v1/messages/:id (attachments)", n));
        let (n, _) = cost(&count, svc.remove_reaction(&bob, sent.id(), like)).await;
        rows.push(("DELETE /v1/messages/:id/reactions/:name", n));
        let (n, _) = cost(&count, svc.delete_message(&alice, with_files.id())).await;
        rows.push(("DELETE /v1/messages/:id", n));

        let (n, g) = cost(
            &count,
            svc.create_group(
                &alice,
                NewGroupRequest {
                    name: GroupName::new("Team".into()).expect("name"),
                    description: None,
                    avatar_url: None,
                    contact_ids: vec![bob.id()],
                },
                None,
            ),
        )
        .await;
        let g = g.expect("group");
        rows.push(("POST /v1/groups", n));
        let (n, _) = cost(&count, svc.list_groups(&alice, page(10, None))).await;
        rows.push(("GET /v1/groups", n));
        let (n, _) = cost(&count, svc.group(&alice, g.id())).await;
        rows.push(("GET /v1/groups/:id", n));
        let (n, _) = cost(
            &count,
            svc.update_group(
                &alice,
                g.id(),
                GroupUpdate {
                    add_contact_ids: vec![carol.id()],
                    ..Default::default()
                },
            ),
        )
        .await;
        rows.push(("PUT /v1/groups/:id (add_contact_ids)", n));
        let group_conv = svc
            .create_conversation(&alice, ConversationTarget::Group(g.id()), None)
            .await
            .expect("group conversation")
            .conversation;
        let (n, team) = cost(
            &count,
            svc.send_message(
                &carol,
                SendMessage {
                    conversation_id: group_conv.id(),
                    text: text("hi team"),
                    attachments: vec![],
                    reply_to_id: None,
                    parent_id: None,
                    mentions: Vec::new(),
                },
                None,
            ),
        )
        .await;
        rows.push(("POST /v1/messages (group)", n));
        let team_message = team.as_ref().expect("group message").id();
        let (n, _) = cost(
            &count,
            svc.update_conversation(
                &carol,
                group_conv.id(),
                Some(Some(team_message)),
                None,
                None,
                None,
            ),
        )
        .await;
        rows.push(("PUT /v1/conversations/:id (pinned_message_id, group)", n));
        let (n, _) = cost(
            &count,
            svc.update_group(
                &alice,
                g.id(),
                GroupUpdate {
                    name: Some(GroupName::new("Team".into()).expect("name")),
                    ..Default::default()
                },
            ),
        )
        .await;
        rows.push(("PUT /v1/groups/:id (the same name)", n));
        let (n, _) = cost(
            &count,
            svc.list_messages(&carol, Some(group_conv.id()).into(), page(10, None)),
        )
        .await;
        rows.push(("GET /v1/messages?conversation_id= (group)", n));
        let team = team.expect("group message");
        let (n, reply) = cost(
            &count,
            svc.send_message(
                &carol,
                SendMessage {
                    conversation_id: group_conv.id(),
                    text: text("on it"),
                    attachments: vec![],
                    reply_to_id: Some(team.id()),
                    parent_id: Some(team.id()),
                    mentions: vec![alice.id()],
                },
                None,
            ),
        )
        .await;
        rows.push((
            "POST /v1/messages (group: quoting, in a thread, a mention)",
            n,
        ));
        let reply = reply.expect("thread reply");
        let (n, _) = cost(
            &count,
            svc.list_messages(
                &alice,
                confab_service::MessageList::Thread(team.id()),
                page(10, None),
            ),
        )
        .await;
        rows.push(("GET /v1/messages?parent_id=", n));
        let (n, _) = cost(
            &count,
            svc.update_message(
                &carol,
                reply.id(),
                MessageUpdate {
                    mentions: Some(Vec::new()),
                    ..MessageUpdate::default()
                },
            ),
        )
        .await;
        rows.push(("PUT /v1/messages/:id (mentions)", n));
        let (n, _) = cost(&count, svc.message_edits(&alice, team.id(), page(10, None))).await;
        rows.push(("GET /v1/messages/:id/edits", n));
        let (n, _) = cost(&count, svc.delete_conversation(&alice, group_conv.id())).await;
        rows.push(("DELETE /v1/conversations/:id (group)", n));
        let (n, _) = cost(&count, svc.delete_conversation(&alice, spare.id())).await;
        rows.push(("DELETE /v1/conversations/:id (direct)", n));
        let (n, _) = cost(&count, svc.delete_group(&alice, g.id())).await;
        rows.push(("DELETE /v1/groups/:id", n));
        rows
    }

    pub(super) fn service<St: confab_ports::Store + 'static>(store: St) -> Confab {
        Confab::new(Ports::from_store(
            store,
            std::sync::Arc::new(confab_server::payloads::WirePayloads::default()),
            std::sync::Arc::new(confab_service::NoSignal),
        ))
    }
}

/// (endpoint, PostgreSQL, SQLite): what each operation costs today. A
/// change here is a change of the API's cost: update it on purpose.
///
/// Every write with events (docs/api.md "Listen for events") costs 2 more than before
/// the outbox: one `INSERT INTO events ... RETURNING` and one `INSERT INTO
/// event_recipients ... SELECT` resolving the audience, whatever the number
/// of events and recipients. Two writes cost more: opening a conversation
/// that marks messages read loads those messages for their
/// `message.updated` payloads (+1, so 6 -> 9), and a pinned-message change
/// of a direct conversation loads its two members' own views of it (+1, so
/// 8 -> 11; a group's carries the shared attributes alone).
///
/// A message is read whole in one statement: its sender, reactions (with
/// their reactors' usernames) and attachments come with it, as columns of
/// the same row. So a page of one conversation costs 1, as does getting one
/// message, and a write that reads its message back reads it in 1 (a page
/// with nothing in it costs 1 more to tell why: an unknown conversation, a
/// cursor not in the list). The all-conversations feed too: one statement
/// merges its index ranges and reads each message whole.
/// So does getting one message, on both stores, and the service's read of
/// the message before an edit, a reaction, a deletion or a pin.
///
/// A deletion scrubs the earlier events of what it deletes (docs/api.md
/// "Limits", `outbox::scrub`): a message's in 1 statement (+1), a conversation's
/// and a group's conversations' in 2 (+2: their recipients' own payloads,
/// then the events).
///
/// Big groups (docs/api.md "Groups", migration `big_groups`) add a few, none
/// of which grows with a group's size: the outbox's `INSERT INTO
/// event_groups ... SELECT`, for every write whose events may go to a
/// group's members (a conversation's, a contact's; one row per group,
/// none for a direct conversation): +1 on SQLite, none on PostgreSQL,
/// where it rides on the recipients' statement as a `WITH`; a
/// deletion's gap and its conversation's count (+2); opening reads the
/// conversation's number (+1), a pin change its numbers for the
/// members' views (+1); a group is read with its first 100 members and,
/// apart, its owners (+1 per group); creating and changing a group reads
/// the position its members' view starts at (+1) and counts its members
/// (+1 for a change).
///
/// The server API (docs/api.md "Server API: from an app's backend") records a token's `last_used_at`
/// once a minute per token and process: a token's first request here adds
/// that one `UPDATE` (+1 on PostgreSQL, run alone; +3 on SQLite, where it
/// queues with the writers in their `BEGIN` ... `COMMIT`), and a request
/// within the minute adds nothing.
///
/// A send on PostgreSQL is one data-modifying `WITH` statement in a
/// transaction of its own, no `BEGIN`, no `COMMIT` (conversation, message,
/// attachments, the sender's own count, event, recipients or group row and the idempotency
/// answer; it decides itself whether it commits), so 1 whatever it carries;
/// SQLite runs them one by one.
const EXPECTED: &[(&str, u64, u64)] = &[
    ("any /v1 request: token lookup (first use)", 2, 4),
    ("any /v1 request: token lookup (again)", 0, 0),
    ("GET /v1/contacts/:id", 1, 1),
    ("GET /v1/contacts?username=", 1, 1),
    ("PUT /v1/contacts/me", 6, 7),
    // A direct one asks first whether the two are in a block (one
    // lookup by the blocks' key, docs/api.md "Blocks and reports").
    ("POST /v1/conversations", 9, 9),
    ("GET /v1/conversations", 1, 1),
    ("GET /v1/conversations/:id", 10, 11),
    ("PUT /v1/conversations/:id (is_muted)", 8, 8),
    ("POST /v1/messages", 1, 8),
    ("POST /v1/messages (2 attachments)", 1, 9),
    // The send pays nothing for blocks (its statement refuses a blocked
    // direct conversation itself); only a refused one asks why.
    ("POST /v1/messages (not a member: 404)", 2, 4),
    // SQLite claims a new key in a transaction (the key, then its count
    // under the quota), queued with the other writers so that it never
    // waits for the database's lock in the busy handler: the queue's
    // `BEGIN IMMEDIATE`, `SAVEPOINT`, `RELEASE` and `COMMIT` around the
    // claim's own savepoint. PostgreSQL claims in one `WITH` statement.
    ("POST /v1/messages (Idempotency-Key: claim a new key)", 1, 6),
    ("POST /v1/messages (Idempotency-Key: the send)", 1, 9),
    ("POST /v1/messages (Idempotency-Key: a replay)", 3, 7),
    // A direct conversation's pin reaches the other member: whether the two
    // are in a block first (+1).
    ("PUT /v1/conversations/:id (pinned_message_id)", 13, 13),
    // Changes nothing: the conversation as the caller sees it, no more.
    (
        "PUT /v1/conversations/:id (the same pinned_message_id)",
        1,
        1,
    ),
    ("GET /v1/messages?conversation_id=", 1, 1),
    ("GET /v1/messages (all conversations)", 1, 1),
    ("GET /v1/messages?conversation_id=&starting_after=", 1, 1),
    ("GET /v1/messages (empty page after the last)", 2, 2),
    (
        "GET /v1/messages?conversation_id= (not a member: 404)",
        2,
        2,
    ),
    ("GET /v1/messages/:id", 1, 1),
    // Each change of a message first asks, in one statement, whether its
    // conversation is a direct one in a block. A new text keeps the one it
    // replaces as an edit: one more row.
    ("PUT /v1/messages/:id (message)", 10, 11),
    ("PUT /v1/messages/:id (reactions)", 11, 14),
    ("PUT /v1/messages/:id (attachments)", 11, 12),
    ("DELETE /v1/messages/:id/reactions/:name", 9, 10),
    // The replies quoting it lose the quote from their events' payloads:
    // one statement, whatever their number.
    ("DELETE /v1/messages/:id", 11, 12),
    // Whether one of the members blocked the creator: one statement.
    ("POST /v1/groups", 12, 15),
    ("GET /v1/groups", 3, 3),
    ("GET /v1/groups/:id", 3, 3),
    // The roles of the caller and of those named, and whether one added
    // blocked the caller: two statements, whatever the lists' length.
    ("PUT /v1/groups/:id (add_contact_ids)", 19, 21),
    ("POST /v1/messages (group)", 1, 8),
    // A group's pin: its row, one event read by the group and the actor's
    // own view beside it, whatever the group's size; no block to ask of.
    (
        "PUT /v1/conversations/:id (pinned_message_id, group)",
        11,
        11,
    ),
    // Changes nothing: the group and the caller's right to change it, no
    // write.
    ("PUT /v1/groups/:id (the same name)", 4, 4),
    ("GET /v1/messages?conversation_id= (group)", 1, 1),
    // The quoted message and the thread's first message read, and the
    // caller's and the mentioned's membership in one statement (3); then
    // the send: on PostgreSQL still its one statement (the thread's count
    // and the mentioned's unread mentions are two more parts of it), on
    // SQLite two more statements.
    (
        "POST /v1/messages (group: quoting, in a thread, a mention)",
        4,
        13,
    ),
    ("GET /v1/messages?parent_id=", 1, 1),
    // Mentions replaced (here by none: no membership to read); the
    // change reads the message's number and takes the dropped mention
    // back from its member's unread count.
    ("PUT /v1/messages/:id (mentions)", 11, 12),
    ("GET /v1/messages/:id/edits", 2, 2),
    ("DELETE /v1/conversations/:id (group)", 11, 12),
    ("DELETE /v1/conversations/:id (direct)", 8, 9),
    ("DELETE /v1/groups/:id", 11, 11),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_per_endpoint_on_both_stores() {
    let (pg_db, pg, lite_db, lite) = tokio::task::spawn_blocking(|| {
        let pg_db = TestDb::postgres();
        let pg = PgStore::connect(&pg_db.url).expect("connect");
        let lite_db = TestDb::sqlite();
        let lite = SqliteStore::open(&lite_db.url).expect("open");
        (pg_db, pg, lite_db, lite)
    })
    .await
    .expect("join");
    let counter = pg.clone();
    let pg_rows = per_endpoint::measure(
        per_endpoint::service(pg),
        Box::new(move || counter.statements_run()),
    )
    .await;
    let counter = lite.clone();
    let lite_rows = per_endpoint::measure(
        per_endpoint::service(lite),
        Box::new(move || counter.statements_run()),
    )
    .await;
    println!("{:<56} {:>3} {:>6}", "endpoint", "pg", "sqlite");
    for ((name, pg), (_, lite)) in pg_rows.iter().zip(&lite_rows) {
        println!("{name:<56} {pg:>3} {lite:>6}");
    }
    let got: Vec<(&str, u64, u64)> = pg_rows
        .iter()
        .zip(&lite_rows)
        .map(|((name, pg), (_, lite))| (*name, *pg, *lite))
        .collect();
    assert_eq!(got, EXPECTED);
    drop((pg_db, lite_db));
}

/// The inbox (the conversation list) of a contact with 500 conversations,
/// many messages in them, costs what it costs with 5.
async fn inbox_cost_ignores_conversation_and_message_counts(
    s: S,
    statements: &(dyn Fn() -> u64 + Sync),
) {
    use confab_domain::Cursor;

    use crate::support::{direct, no_filter};

    let alice = contact(&s, "alice").await;
    let mut peers = Vec::new();
    for i in 0..10 {
        peers.push(contact(&s, &format!("peer{i}")).await);
    }
    let mut convs = Vec::new();
    for i in 0..5_i64 {
        convs.push(direct(&s, &alice, &peers[i as usize % 10], at(i)).await);
    }
    let inbox = |cursor: Option<Cursor<ConversationId>>| {
        let s = s.clone();
        let id = alice.id();
        async move {
            let before = statements();
            let p = s
                .list_conversations(id, no_filter(), crate::support::page(10, cursor))
                .await
                .expect("inbox");
            (statements() - before, p)
        }
    };
    let (few, p) = inbox(None).await;
    assert_eq!(p.items.len(), 5);
    let (few_next, _) = inbox(Some(Cursor::After(p.items[1].conversation.id()))).await;

    for i in 5..500_i64 {
        convs.push(direct(&s, &alice, &peers[i as usize % 10], at(i)).await);
    }
    for (i, c) in convs.iter().enumerate().step_by(25) {
        for j in 0..10_i64 {
            send(&s, c, &alice, "busy", at(1000 + i as i64 * 10 + j)).await;
        }
    }
    let (many, p) = inbox(None).await;
    assert_eq!(p.items.len(), 10);
    assert!(p.has_more);
    let (many_next, _) = inbox(Some(Cursor::After(p.items[5].conversation.id()))).await;
    println!("inbox statements: 5 conversations {few} / next page {few_next}; 500 conversations {many} / next page {many_next}");
    assert_eq!(
        few, many,
        "first page: 5 conversations cost {few}, 500 cost {many}"
    );
    assert_eq!(
        few_next, many_next,
        "next page: 5 conversations cost {few_next}, 500 cost {many_next}"
    );
    assert_eq!((few, few_next), (1, 2), "one statement, two with a cursor");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_inbox_cost_ignores_conversation_and_message_counts() {
    let (db, store, statements) = counted_store(Backend::Postgres).await;
    inbox_cost_ignores_conversation_and_message_counts(store, &*statements).await;
    drop(db);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_inbox_cost_ignores_conversation_and_message_counts() {
    let (db, store, statements) = counted_store(Backend::Sqlite).await;
    inbox_cost_ignores_conversation_and_message_counts(store, &*statements).await;
    drop(db);
}
