//! Messages read back: append and get, order, visibility, paging and
//! whole relations (reactions, attachments) everywhere.

use confab_domain::{
    AddAttachment, AttachmentId, ContactId, Conversation, ConversationId, Cursor, DomainError,
    Field, FileSource, FileType, FileUrl, Filename, MessageId, NewAttachment,
};
use confab_ports::{GroupChange, MessageChange, StoreError};
use uuid::Uuid;

use crate::support::no_events;
use crate::support::{
    all_messages, assert_err, at, at_us, attachment, change, contact, direct, group,
    group_conversation, link, msg_ids, new_id, new_message, page, pair, reactions_of, rn, send, S,
};

async fn messages_append_and_get(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let mut new = new_message(&c, &alice, "hello\nworld", at_us(2, 123_456));
    new.attachments = vec![attachment(1), attachment(2), attachment(3)];
    let wanted: Vec<(AttachmentId, NewAttachment)> = new.attachments.iter().map(pair).collect();
    let m = s
        .append_message(new.clone(), no_events(), None)
        .await
        .expect("append");

    assert_eq!(m.id(), new.id);
    assert_eq!(m.conversation_id(), c.id());
    assert_eq!(*m.sender(), alice);
    assert_eq!(m.text().as_str(), "hello\nworld");
    assert_eq!(m.reactions(), vec![]);
    assert_eq!(m.read_at(), None);
    assert_eq!(m.updated_at(), None);
    assert_eq!(m.created_at(), at_us(2, 123_456));
    assert_eq!(m.attachments().len(), 3);
    for (got, (id, a)) in m.attachments().iter().zip(&wanted) {
        assert_eq!(got.id, *id);
        assert_eq!(got.message_id, Some(m.id()));
        assert_eq!(got.filename, a.filename);
        assert_eq!(got.source, FileSource::Link(a.file_url.clone()));
        assert_eq!(got.file_type, a.file_type);
        assert_eq!(got.file_size, a.file_size);
        assert_eq!(got.created_at, m.created_at());
    }
    assert_eq!(
        s.message_for(alice.id(), m.id()).await.expect("get"),
        Some(m.clone())
    );
    assert_eq!(
        s.message_for(alice.id(), MessageId::from_uuid(new_id()))
            .await
            .expect("get"),
        None
    );

    // A file without type and size.
    let mut plain = new_message(&c, &bob, "file", at(3));
    plain.attachments = vec![AddAttachment::Link(
        AttachmentId::from_uuid(new_id()),
        NewAttachment {
            filename: Filename::new("blob".into()).expect("filename"),
            file_url: FileUrl::new("http://files.example/blob".into()).expect("url"),
            file_type: FileType::octet_stream(),
            file_size: None,
        },
    )];
    let p = s
        .append_message(plain, no_events(), None)
        .await
        .expect("append");
    assert_eq!(p.attachments()[0].file_size, None);
    assert_eq!(
        p.attachments()[0].file_type.as_str(),
        "application/octet-stream"
    );

    let v = s
        .conversation_for(bob.id(), c.id())
        .await
        .expect("get")
        .expect("some");
    assert_eq!(v.conversation.last_active_at(), Some(at(3)));

    // The conversation must exist.
    let ghost = Conversation::new_direct(
        ConversationId::from_uuid(new_id()),
        alice.id(),
        bob.id(),
        at(1),
    )
    .expect("direct");
    assert_err!(
        s.append_message(
            new_message(&ghost, &alice, "into the void", at(4)),
            no_events(),
            None
        )
        .await,
        StoreError::NotFound
    );
    // So must the sender's membership, checked in the write: nothing is
    // stored and the conversation's activity does not move.
    let carol = contact(&s, "carol").await;
    let intruder = new_message(&c, &carol, "let me in", at(4));
    let refused = intruder.id;
    assert_err!(
        s.append_message(intruder, no_events(), None).await,
        StoreError::NotFound
    );
    assert_eq!(s.message_for(alice.id(), refused).await.expect("get"), None);
    let v = s
        .conversation_for(bob.id(), c.id())
        .await
        .expect("get")
        .expect("some");
    assert_eq!(v.conversation.last_active_at(), Some(at(3)));
    // At most 10 attachments, and nothing is stored when refused.
    let mut too_many = new_message(&c, &alice, "eleven", at(5));
    too_many.attachments = (0..11).map(attachment).collect();
    let refused = too_many.id;
    assert_err!(
        s.append_message(too_many, no_events(), None).await,
        StoreError::Rule(DomainError::Invalid {
            field: Field::Attachments,
            ..
        })
    );
    assert_eq!(s.message_for(alice.id(), refused).await.expect("get"), None);
    let mut ten = new_message(&c, &alice, "ten", at(6));
    ten.attachments = (0..10).map(attachment).collect();
    assert_eq!(
        s.append_message(ten, no_events(), None)
            .await
            .expect("ten")
            .attachments()
            .len(),
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
        s.append_message(m.clone(), no_events(), None)
            .await
            .expect("append");
    }
    let id = |n: u128| MessageId::from_uuid(Uuid::from_u128(n));
    let want = vec![id(0x20), id(0x10), id(0x50), id(0x40), id(0x30), id(0x60)];
    assert_eq!(all_messages(&s, &alice, Some(c.id())).await, want);
    assert_eq!(all_messages(&s, &bob, None).await, want);
    // Last activity is the latest message, not the last appended one.
    let v = s
        .conversation_for(alice.id(), c.id())
        .await
        .expect("get")
        .expect("some");
    assert_eq!(v.conversation.last_active_at(), Some(at_us(5, 999_999)));
}

async fn messages_list_only_visible_conversations(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let ab = direct(&s, &alice, &bob, at(1)).await;
    let ac = direct(&s, &carol, &alice, at(1)).await;
    let bc = direct(&s, &bob, &carol, at(1)).await;
    let g = group(&s, &bob, &[&carol], at(1)).await;
    let gc = group_conversation(&s, &carol, g.id(), at(1)).await;
    let m1 = send(&s, &ab, &alice, "1", at(2)).await;
    let m2 = send(&s, &ac, &carol, "2", at(3)).await;
    let m3 = send(&s, &bc, &bob, "3", at(4)).await;
    let m4 = send(&s, &gc, &bob, "4", at(5)).await;
    let m5 = send(&s, &ab, &bob, "5", at(6)).await;

    assert_eq!(
        all_messages(&s, &alice, None).await,
        vec![m5.id(), m2.id(), m1.id()]
    );
    assert_eq!(
        all_messages(&s, &bob, None).await,
        vec![m5.id(), m4.id(), m3.id(), m1.id()]
    );
    assert_eq!(
        all_messages(&s, &carol, None).await,
        vec![m4.id(), m3.id(), m2.id()]
    );
    assert_eq!(
        all_messages(&s, &alice, Some(ab.id())).await,
        vec![m5.id(), m1.id()]
    );
    assert_eq!(all_messages(&s, &carol, Some(gc.id())).await, vec![m4.id()]);
    // Scoped to the viewer: a foreign conversation is not found, exactly
    // like one that does not exist (checked in the page's own statement).
    for foreign in [bc.id(), gc.id(), ConversationId::from_uuid(new_id())] {
        assert_err!(
            s.list_messages(alice.id(), Some(foreign).into(), page(100, None))
                .await,
            StoreError::NotFound
        );
    }
    let nobody = contact(&s, "dave").await;
    assert_eq!(all_messages(&s, &nobody, None).await, vec![]);

    // One message: visible to the members of its conversation only, and to
    // a group's members only while they belong to it.
    let seen = |viewer: ContactId, id: MessageId| {
        let s = s.clone();
        async move {
            s.message_for(viewer, id)
                .await
                .expect("get")
                .map(|m| m.id())
        }
    };
    assert_eq!(seen(alice.id(), m1.id()).await, Some(m1.id()));
    assert_eq!(seen(bob.id(), m1.id()).await, Some(m1.id()));
    assert_eq!(seen(carol.id(), m1.id()).await, None);
    assert_eq!(seen(nobody.id(), m4.id()).await, None);
    assert_eq!(seen(carol.id(), m4.id()).await, Some(m4.id()));
    assert_eq!(seen(alice.id(), MessageId::from_uuid(new_id())).await, None);
    let removed = GroupChange {
        remove: vec![carol.id()],
        ..Default::default()
    };
    s.update_group(g.id(), removed, at(7), no_events())
        .await
        .expect("remove");
    assert_eq!(
        seen(carol.id(), m4.id()).await,
        None,
        "the conversation's creator left the group"
    );
    let added = GroupChange {
        add: vec![nobody.id()],
        ..Default::default()
    };
    s.update_group(g.id(), added, at(8), no_events())
        .await
        .expect("add");
    assert_eq!(seen(nobody.id(), m4.id()).await, Some(m4.id()));
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
        m.push(send(&s, conv, &alice, "x", at_us(10, i)).await.id());
    }
    let h = send(&s, &hidden, &bob, "not alice's", at(11)).await;

    let list = |conv: Option<ConversationId>, limit: i64, cursor: Option<Cursor<MessageId>>| {
        let s = s.clone();
        let alice = alice.id();
        async move {
            let p = s
                .list_messages(alice, conv.into(), page(limit, cursor))
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
    assert_eq!(list(Some(c1.id()), 2, None).await, (vec![m[6], m[4]], true));
    assert_eq!(
        list(Some(c1.id()), 2, Some(Cursor::After(m[4]))).await,
        (vec![m[2], m[0]], false)
    );
    assert_eq!(
        list(Some(c1.id()), 2, Some(Cursor::Before(m[0]))).await,
        (vec![m[4], m[2]], true)
    );
    assert_eq!(
        list(Some(c1.id()), 2, Some(Cursor::Before(m[4]))).await,
        (vec![m[6]], false)
    );

    // Cursors outside the list being paged.
    for (conv, cursor) in [
        (Some(c1.id()), Cursor::After(m[1])),
        (Some(c1.id()), Cursor::Before(m[3])),
        (None, Cursor::After(h.id())),
        (None, Cursor::Before(h.id())),
        (None, Cursor::After(MessageId::from_uuid(new_id()))),
    ] {
        assert_err!(
            s.list_messages(alice.id(), conv.into(), page(3, Some(cursor)))
                .await,
            StoreError::CursorNotFound
        );
    }
    // A conversation the viewer cannot see is not found, whatever the cursor.
    assert_err!(
        s.list_messages(
            alice.id(),
            Some(hidden.id()).into(),
            page(3, Some(Cursor::After(h.id())))
        )
        .await,
        StoreError::NotFound
    );
}

/// Every page, of the feed and of each conversation, at any size and in
/// either direction, is a slice of the merged order of what the viewer
/// sees: more conversations than a page holds, one of them busy, a group
/// conversation, timestamps shared across conversations (ids out of time
/// order break the ties), and others' messages in between.
async fn messages_pages_follow_the_merged_order(s: S) {
    let alice = contact(&s, "alice").await;
    let mut peers = Vec::new();
    for i in 0..12 {
        peers.push(contact(&s, &format!("peer{i}")).await);
    }
    let mut convs = Vec::new();
    for (i, peer) in peers.iter().enumerate() {
        // Alice creates half of them, and is the peer of the others.
        convs.push(if i % 2 == 0 {
            direct(&s, &alice, peer, at(1)).await
        } else {
            direct(&s, peer, &alice, at(1)).await
        });
    }
    let g = group(&s, &peers[0], &[&alice, &peers[1]], at(1)).await;
    convs.push(group_conversation(&s, &peers[0], g.id(), at(1)).await);
    let hidden = direct(&s, &peers[2], &peers[3], at(1)).await;

    // (microsecond, id, conversation) of each of alice's messages.
    let mut sent = Vec::new();
    for n in 0..90_u32 {
        // Every other message in the first conversation, the rest spread
        // unevenly over the others.
        let conv = if n % 2 == 0 {
            &convs[0]
        } else {
            &convs[(n as usize * 7 / 3) % convs.len()]
        };
        // Three messages per microsecond; ids a permutation of 1..=90.
        let micros = i64::from(n / 3);
        let id = MessageId::from_uuid(Uuid::from_u128(u128::from((n * 37) % 90 + 1)));
        let mut m = new_message(conv, &alice, "x", at_us(10, micros));
        m.id = id;
        s.append_message(m, no_events(), None)
            .await
            .expect("append");
        sent.push((micros, id, conv.id()));
        if n % 10 == 0 {
            let mut other = new_message(&hidden, &peers[2], "not alice's", at_us(10, micros));
            other.id = MessageId::from_uuid(Uuid::from_u128(1000 + u128::from(n)));
            s.append_message(other, no_events(), None)
                .await
                .expect("append");
        }
    }
    sent.sort_by_key(|m| std::cmp::Reverse((m.0, m.1)));

    let lists = std::iter::once(None).chain(convs.iter().map(|c| Some(c.id())));
    let viewer = alice.id();
    for conv in lists {
        let want: Vec<MessageId> = sent
            .iter()
            .filter(|m| conv.is_none_or(|c| m.2 == c))
            .map(|m| m.1)
            .collect();
        assert!(!want.is_empty());
        for limit in [1, 2, 3, 5, 8, 13] {
            let list = |cursor: Option<Cursor<MessageId>>| {
                let s = s.clone();
                async move {
                    let p = s
                        .list_messages(viewer, conv.into(), page(limit, cursor))
                        .await
                        .expect("list");
                    (msg_ids(&p), p.has_more)
                }
            };
            // Forwards from the newest.
            let (mut got, mut more) = list(None).await;
            while more {
                let last = *got.last().expect("a full page");
                let (next, next_more) = list(Some(Cursor::After(last))).await;
                got.extend(next);
                more = next_more;
            }
            assert_eq!(got, want, "forwards, {conv:?}, limit {limit}");
            // Backwards from the oldest.
            let oldest = *want.last().expect("not empty");
            let mut got = vec![oldest];
            let mut cursor = oldest;
            loop {
                let (mut prev, more) = list(Some(Cursor::Before(cursor))).await;
                if let Some(first) = prev.first() {
                    cursor = *first;
                }
                prev.extend(got);
                got = prev;
                if !more {
                    break;
                }
            }
            assert_eq!(got, want, "backwards, {conv:?}, limit {limit}");
        }
    }
}

/// A page, a single get, a backwards page and the all-conversations feed
/// give each message its own reactions (grouped by name in the order of
/// their first reaction, reactors in the order they reacted, however the
/// reactions to several messages interleave) and attachments (by position,
/// every field as written: quotes, backslashes and non-ASCII text, an
/// absent size, a size beyond 2^53), and nothing of its neighbours'.
async fn messages_relations_read_whole_everywhere(s: S) {
    use confab_domain::{FileSize, Message};

    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol.x-1").await;
    let g = group(&s, &alice, &[&bob, &carol], at(0)).await;
    let c = group_conversation(&s, &alice, g.id(), at(1)).await;
    let bare = send(&s, &c, &alice, "bare", at(2)).await;

    let odd = (
        AttachmentId::from_uuid(new_id()),
        NewAttachment {
            filename: Filename::new(r#"a "quoted" \ name, ünï 😀 [1].txt"#.into())
                .expect("filename"),
            file_url: FileUrl::new("https://files.example/x?a=1&b=%22q%22#\"f\"".into())
                .expect("url"),
            file_type: FileType::new("application/vnd.api+json".into()).expect("type"),
            file_size: Some(FileSize::new(9_007_199_254_740_993).expect("size")),
        },
    );
    let one = pair(&attachment(1));
    let mut no_size = pair(&attachment(7));
    no_size.1.file_size = None;
    let mut new = new_message(&c, &bob, "rich", at_us(3, 7));
    new.attachments = vec![link(odd.clone()), link(one.clone()), link(no_size.clone())];
    let rich = s
        .append_message(new, no_events(), None)
        .await
        .expect("append");
    let mid = send(&s, &c, &carol, "between", at(4)).await;

    // Reactions to both messages, interleaved.
    let react = |who: &confab_domain::Contact, m: MessageId, names: &[&str], t: i64| {
        let s = s.clone();
        let c = MessageChange {
            add_reactions: names.iter().map(|n| rn(n)).collect(),
            ..change(who, at(t))
        };
        async move { s.update_message(m, c, no_events()).await.expect("react") }
    };
    react(&bob, rich.id(), &["like"], 5).await;
    react(&carol, mid.id(), &["+1"], 6).await;
    react(&carol, rich.id(), &["heart"], 7).await;
    react(&alice, rich.id(), &["party", "like"], 8).await;
    react(&alice, mid.id(), &["+1"], 9).await;
    react(&carol, rich.id(), &["like"], 10).await;
    react(&bob, rich.id(), &["heart"], 11).await;
    let extra = pair(&attachment(2));
    s.update_message(
        rich.id(),
        MessageChange {
            add_attachments: vec![link(extra.clone())],
            ..change(&bob, at(12))
        },
        no_events(),
    )
    .await
    .expect("attach");
    let last = send(&s, &c, &alice, "last", at(13)).await;

    let names = |m: &Message| -> Vec<(String, Vec<String>)> { reactions_of(m) };
    let owned = |list: &[(&str, &[&str])]| -> Vec<(String, Vec<String>)> {
        list.iter()
            .map(|(n, who)| {
                (
                    (*n).to_owned(),
                    who.iter().map(|w| (*w).to_owned()).collect(),
                )
            })
            .collect()
    };
    let people = [&alice, &bob, &carol];
    let check = |m: &Message, label: &str| {
        // Every reactor is the contact of that username.
        for r in m.reactions() {
            for x in r.reactors() {
                let who = people
                    .iter()
                    .find(|p| *p.username() == x.username)
                    .expect("a known reactor");
                assert_eq!(x.contact_id, who.id(), "{label}: reactor id");
            }
        }
        let (reactions, attachments): (Vec<(String, Vec<String>)>, Vec<_>) = if m.id() == rich.id()
        {
            (
                owned(&[
                    ("like", &["bob", "alice", "carol.x-1"]),
                    ("heart", &["carol.x-1", "bob"]),
                    ("party", &["alice"]),
                ]),
                vec![
                    (odd.clone(), at_us(3, 7)),
                    (one.clone(), at_us(3, 7)),
                    (no_size.clone(), at_us(3, 7)),
                    (extra.clone(), at(12)),
                ],
            )
        } else if m.id() == mid.id() {
            (owned(&[("+1", &["carol.x-1", "alice"])]), vec![])
        } else {
            (vec![], vec![])
        };
        assert_eq!(
            names(m),
            reactions,
            "{label}: reactions of {}",
            m.text().as_str()
        );
        assert_eq!(
            m.attachments().len(),
            attachments.len(),
            "{label}: attachments of {}",
            m.text().as_str()
        );
        for (got, ((id, a), created)) in m.attachments().iter().zip(&attachments) {
            assert_eq!(got.id, *id, "{label}: attachment id");
            assert_eq!(
                got.message_id,
                Some(m.id()),
                "{label}: attachment's message"
            );
            assert_eq!(got.filename, a.filename, "{label}: filename");
            assert_eq!(
                got.source,
                FileSource::Link(a.file_url.clone()),
                "{label}: file_url"
            );
            assert_eq!(got.file_type, a.file_type, "{label}: file_type");
            assert_eq!(got.file_size, a.file_size, "{label}: file_size");
            assert_eq!(got.created_at, *created, "{label}: attachment created_at");
        }
    };

    // A page of the conversation, newest first.
    let first = s
        .list_messages(bob.id(), Some(c.id()).into(), page(10, None))
        .await
        .expect("page");
    assert_eq!(
        msg_ids(&first),
        vec![last.id(), mid.id(), rich.id(), bare.id()]
    );
    for m in &first.items {
        check(m, "page");
    }
    // Each message alone: the same as in the page.
    for m in &first.items {
        let got = s
            .message_for(carol.id(), m.id())
            .await
            .expect("get")
            .expect("visible");
        check(&got, "message_for");
        assert_eq!(&got, m, "message_for equals the page's");
    }
    // Backwards from the oldest, then forwards past the newest.
    let back = s
        .list_messages(
            alice.id(),
            Some(c.id()).into(),
            page(2, Some(Cursor::Before(bare.id()))),
        )
        .await
        .expect("backwards page");
    assert_eq!(msg_ids(&back), vec![mid.id(), rich.id()]);
    assert!(back.has_more);
    for m in &back.items {
        check(m, "backwards page");
    }
    assert_eq!(back.items[..], first.items[1..3]);
    let next = s
        .list_messages(
            alice.id(),
            Some(c.id()).into(),
            page(1, Some(Cursor::After(mid.id()))),
        )
        .await
        .expect("next page");
    assert_eq!(next.items[..], first.items[2..3]);
    // The all-conversations feed reads the same messages.
    let feed = s
        .list_messages(bob.id(), None.into(), page(10, None))
        .await
        .expect("feed");
    assert_eq!(feed.items, first.items);
}

confab_tests::on_both_stores!(
    crate::support::on_store;
    messages_append_and_get,
    messages_order_is_exact_within_a_second,
    messages_list_only_visible_conversations,
    messages_paging_both_ways,
    messages_pages_follow_the_merged_order,
    messages_relations_read_whole_everywhere,
);
