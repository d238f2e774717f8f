//! The all-conversations feed (`list_messages` without a conversation): a
//! merge of the viewer's direct messages as creator, as peer, and of the
//! groups the viewer belongs to now. Every page, in either direction, is a
//! slice of the order the viewer's per-conversation listings give; group
//! membership is live; a cursor the viewer cannot see is `CursorNotFound`;
//! a deleted conversation's messages leave it.

use std::sync::Arc;

use confab_domain::{
    message_sent, Change, Contact, Conversation, ConversationId, Cursor, EventId, MessageId,
    Timestamp,
};
use confab_ports::{GroupChange, Outbox, StoreError};
use confab_server::payloads::WirePayloads;
use uuid::Uuid;

use crate::support::{
    assert_err, at, at_us, contact, direct, group, group_conversation, msg_ids, new_message,
    no_events, page, S,
};

/// Sends a message; every other one with its `message.created` event, so
/// that PostgreSQL's one-statement send and the statement-by-statement one
/// both write messages the feed must find.
async fn post(
    s: &S,
    conv: &Conversation,
    sender: &Contact,
    when: Timestamp,
    with_event: bool,
) -> MessageId {
    let m = new_message(conv, sender, "x", when);
    let outbox = if with_event {
        let events = message_sent(
            Change::new(sender.id(), when),
            || EventId::from_uuid(Uuid::now_v7()),
            m.id,
            conv.id(),
        );
        Outbox::new(events, Arc::new(WirePayloads::default()))
    } else {
        no_events()
    };
    s.append_message(m, outbox, None)
        .await
        .expect("append")
        .id()
}

/// Every page of `viewer`'s listing (`conv`, or the feed), followed forwards
/// from the newest with `starting_after`.
async fn forwards(
    s: &S,
    viewer: &Contact,
    conv: Option<ConversationId>,
    limit: i64,
) -> Vec<MessageId> {
    let list = |cursor: Option<Cursor<MessageId>>| {
        let s = s.clone();
        let viewer = viewer.id();
        async move {
            s.list_messages(viewer, conv.into(), page(limit, cursor))
                .await
                .expect("list")
        }
    };
    let first = list(None).await;
    let (mut got, mut more) = (msg_ids(&first), first.has_more);
    while more {
        let last = *got.last().expect("a full page");
        let next = list(Some(Cursor::After(last))).await;
        assert!(next.items.len() <= usize::try_from(limit).expect("limit"));
        got.extend(msg_ids(&next));
        more = next.has_more;
    }
    got
}

/// The feed followed backwards from its oldest message with
/// `ending_before`, page by page, in list order.
async fn backwards(s: &S, viewer: &Contact, oldest: MessageId, limit: i64) -> Vec<MessageId> {
    let mut got = vec![oldest];
    let mut cursor = oldest;
    loop {
        let p = s
            .list_messages(
                viewer.id(),
                None.into(),
                page(limit, Some(Cursor::Before(cursor))),
            )
            .await
            .expect("list");
        let mut prev = msg_ids(&p);
        if let Some(first) = prev.first() {
            cursor = *first;
        }
        prev.extend(got);
        got = prev;
        if !p.has_more {
            break;
        }
    }
    got
}

/// The feed as the viewer's per-conversation listings give it: every
/// message of each conversation, merged newest first (ties by id).
async fn reference(s: &S, viewer: &Contact, convs: &[&Conversation]) -> Vec<MessageId> {
    let mut all = Vec::new();
    for c in convs {
        let mut cursor = None;
        loop {
            let p = s
                .list_messages(viewer.id(), Some(c.id()).into(), page(7, cursor))
                .await
                .expect("list conversation");
            all.extend(p.items.iter().map(|m| (m.created_at(), m.id())));
            match p.items.last() {
                Some(last) if p.has_more => cursor = Some(Cursor::After(last.id())),
                _ => break,
            }
        }
    }
    all.sort_by_key(|k| std::cmp::Reverse(*k));
    all.into_iter().map(|(_, id)| id).collect()
}

async fn feed_is_the_merged_order_of_the_viewers_conversations(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let dave = contact(&s, "dave").await;
    let erin = contact(&s, "erin").await;
    // Alice as creator, as peer, and in two groups (one with two
    // conversations); others' conversations and a group without her.
    let ab = direct(&s, &alice, &bob, at(1)).await;
    let ac = direct(&s, &alice, &carol, at(1)).await;
    let da = direct(&s, &dave, &alice, at(1)).await;
    let ea = direct(&s, &erin, &alice, at(1)).await;
    let g1 = group(&s, &bob, &[&alice, &carol], at(1)).await;
    let g2 = group(&s, &alice, &[&dave], at(1)).await;
    let g3 = group(&s, &bob, &[&carol, &erin], at(1)).await;
    let g1a = group_conversation(&s, &bob, g1.id(), at(1)).await;
    let g1b = group_conversation(&s, &carol, g1.id(), at(1)).await;
    let g2a = group_conversation(&s, &dave, g2.id(), at(1)).await;
    let hidden_group = group_conversation(&s, &erin, g3.id(), at(1)).await;
    let bc = direct(&s, &bob, &carol, at(1)).await;
    let de = direct(&s, &dave, &erin, at(1)).await;

    let mine = [&ab, &ac, &da, &ea, &g1a, &g1b, &g2a];
    // (conversation, a member who sends there)
    let rota: [(&Conversation, &Contact); 11] = [
        (&ab, &bob),
        (&g1a, &carol),
        (&ab, &alice),
        (&da, &dave),
        (&bc, &bob),
        (&ea, &alice),
        (&g2a, &dave),
        (&ac, &carol),
        (&hidden_group, &erin),
        (&g1b, &alice),
        (&de, &erin),
    ];
    for n in 0..120_i64 {
        // Uneven: some conversations get runs, and three messages share
        // each microsecond (their ids break the tie).
        let (conv, sender) = rota[usize::try_from((n * n / 7 + n) % 11).expect("index")];
        post(&s, conv, sender, at_us(10, n / 3), n % 2 == 0).await;
    }

    let want = reference(&s, &alice, &mine).await;
    assert!(want.len() > 60, "alice sees most of them: {}", want.len());
    assert_eq!(forwards(&s, &alice, None, 100).await, want, "one page");
    for limit in [1, 2, 3, 7, 10, 16] {
        assert_eq!(
            forwards(&s, &alice, None, limit).await,
            want,
            "forwards, limit {limit}"
        );
        assert_eq!(
            backwards(&s, &alice, *want.last().expect("some"), limit).await,
            want,
            "backwards, limit {limit}"
        );
    }
    // Every other viewer's feed is its own merge too.
    let theirs: [(&Contact, Vec<&Conversation>); 4] = [
        (&bob, vec![&ab, &bc, &g1a, &g1b, &hidden_group]),
        (&carol, vec![&ac, &bc, &g1a, &g1b, &hidden_group]),
        (&dave, vec![&da, &de, &g2a]),
        (&erin, vec![&ea, &de, &hidden_group]),
    ];
    for (viewer, convs) in theirs {
        let want = reference(&s, viewer, &convs).await;
        assert!(!want.is_empty());
        assert_eq!(
            forwards(&s, viewer, None, 4).await,
            want,
            "{}",
            viewer.username().as_str()
        );
        assert_eq!(
            backwards(&s, viewer, *want.last().expect("some"), 4).await,
            want,
            "{} backwards",
            viewer.username().as_str()
        );
    }
}

async fn feed_follows_group_membership_at_each_request(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let g = group(&s, &alice, &[&bob], at(1)).await;
    let gc = group_conversation(&s, &alice, g.id(), at(1)).await;
    let cb = direct(&s, &carol, &bob, at(1)).await;
    let old1 = post(&s, &gc, &alice, at(2), true).await;
    let direct1 = post(&s, &cb, &bob, at(3), false).await;
    let old2 = post(&s, &gc, &bob, at(4), false).await;
    assert_eq!(forwards(&s, &carol, None, 2).await, vec![direct1]);

    // Added: the group's older messages are in the feed at once.
    let added = GroupChange {
        add: vec![carol.id()],
        ..Default::default()
    };
    s.update_group(g.id(), added, at(5), no_events())
        .await
        .expect("add");
    assert_eq!(
        forwards(&s, &carol, None, 2).await,
        vec![old2, direct1, old1]
    );
    let p = s
        .list_messages(carol.id(), None.into(), page(5, Some(Cursor::After(old2))))
        .await
        .expect("a group message is a cursor now");
    assert_eq!(msg_ids(&p), vec![direct1, old1]);

    // Removed: none of the group's messages, not even as a cursor.
    let removed = GroupChange {
        remove: vec![carol.id()],
        ..Default::default()
    };
    s.update_group(g.id(), removed, at(6), no_events())
        .await
        .expect("remove");
    assert_eq!(forwards(&s, &carol, None, 2).await, vec![direct1]);
    for cursor in [Cursor::After(old2), Cursor::Before(old1)] {
        assert_err!(
            s.list_messages(carol.id(), None.into(), page(5, Some(cursor)))
                .await,
            StoreError::CursorNotFound
        );
    }
    // The members who stayed still see them.
    assert_eq!(forwards(&s, &bob, None, 2).await, vec![old2, direct1, old1]);
}

async fn feed_cursor_must_be_a_message_the_viewer_sees(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let ab = direct(&s, &alice, &bob, at(1)).await;
    let bc = direct(&s, &bob, &carol, at(1)).await;
    let g = group(&s, &bob, &[&carol], at(1)).await;
    let gc = group_conversation(&s, &bob, g.id(), at(1)).await;
    let mine = post(&s, &ab, &bob, at(2), false).await;
    let others_direct = post(&s, &bc, &carol, at(3), true).await;
    let others_group = post(&s, &gc, &carol, at(4), false).await;
    for id in [
        others_direct,
        others_group,
        MessageId::from_uuid(Uuid::now_v7()),
    ] {
        for cursor in [Cursor::After(id), Cursor::Before(id)] {
            assert_err!(
                s.list_messages(alice.id(), None.into(), page(3, Some(cursor)))
                    .await,
                StoreError::CursorNotFound
            );
        }
    }
    // Its own message is a cursor, even with nothing beyond it.
    for cursor in [Cursor::After(mine), Cursor::Before(mine)] {
        let p = s
            .list_messages(alice.id(), None.into(), page(3, Some(cursor)))
            .await
            .expect("list");
        assert!(p.items.is_empty() && !p.has_more);
    }
}

async fn feed_drops_a_deleted_conversations_messages(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let ab = direct(&s, &alice, &bob, at(1)).await;
    let ba = direct(&s, &bob, &alice, at(1)).await;
    let g = group(&s, &alice, &[&bob], at(1)).await;
    let gc = group_conversation(&s, &bob, g.id(), at(1)).await;
    let a1 = post(&s, &ab, &alice, at(2), true).await;
    let b1 = post(&s, &ba, &bob, at(3), false).await;
    let g1 = post(&s, &gc, &bob, at(4), true).await;
    let a2 = post(&s, &ab, &bob, at(5), false).await;
    assert_eq!(forwards(&s, &alice, None, 2).await, vec![a2, g1, b1, a1]);

    s.delete_conversation(ab.id(), bob.id(), no_events())
        .await
        .expect("delete direct");
    assert_eq!(forwards(&s, &alice, None, 2).await, vec![g1, b1]);
    assert_eq!(forwards(&s, &bob, None, 2).await, vec![g1, b1]);
    assert_err!(
        s.list_messages(alice.id(), None.into(), page(2, Some(Cursor::After(a2))))
            .await,
        StoreError::CursorNotFound
    );

    s.delete_conversation(gc.id(), alice.id(), no_events())
        .await
        .expect("delete group conversation");
    assert_eq!(forwards(&s, &alice, None, 2).await, vec![b1]);
    assert_eq!(forwards(&s, &bob, None, 2).await, vec![b1]);
}

confab_tests::on_both_stores!(
    crate::support::on_store;
    feed_is_the_merged_order_of_the_viewers_conversations,
    feed_follows_group_membership_at_each_request,
    feed_cursor_must_be_a_message_the_viewer_sees,
    feed_drops_a_deleted_conversations_messages,
);
