//! Conversations: visibility, live group membership, listing order,
//! filters, paging, read state, pins, member state and deletion.

use confab_domain::{
    ContactId, Conversation, ConversationId, Cursor, DomainError, Field, GroupId, MemberState,
    MemberStatePatch, MessageId, PinnedMessageChange,
};
use confab_ports::{ConversationFilter, GroupChange, MessageChange, StoreError};

use crate::support::no_events;
use crate::support::{
    all_messages, assert_err, at, at_us, attachment, change, contact, conv_ids, direct, group,
    group_conversation, list_convs, new_id, new_message, no_filter, page, rn, send, S,
};

async fn conversations_create_and_visibility(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let c = direct(&s, &alice, &bob, at(1)).await;

    for (viewer, other) in [(&alice, &bob), (&bob, &alice)] {
        let v = s
            .conversation_for(viewer.id(), c.id())
            .await
            .expect("get")
            .expect("member sees it");
        assert_eq!(v.conversation, c);
        assert_eq!(v.viewer, viewer.id());
        assert_eq!(v.contact_id(), Some(other.id()));
        assert_eq!(v.state, MemberState::default());
        assert_eq!(v.conversation.pinned_message_id(), None);
        assert_eq!(v.conversation.last_active_at(), None);
        assert_eq!(v.conversation.created_at(), at(1));
    }
    assert_eq!(
        s.conversation_for(carol.id(), c.id()).await.expect("get"),
        None,
        "outsider"
    );
    assert_eq!(
        s.conversation_for(alice.id(), ConversationId::from_uuid(new_id()))
            .await
            .expect("get"),
        None
    );
    assert_eq!(list_convs(&s, &carol, no_filter()).await, vec![]);

    // The peer and the group must exist.
    let ghost = ContactId::from_uuid(new_id());
    let bad = Conversation::new_direct(
        ConversationId::from_uuid(new_id()),
        alice.id(),
        ghost,
        at(2),
    )
    .expect("direct");
    assert_err!(
        s.create_conversation(bad, no_events(), None).await,
        StoreError::NotFound
    );
    let bad = Conversation::new_group(
        ConversationId::from_uuid(new_id()),
        alice.id(),
        GroupId::from_uuid(new_id()),
        at(2),
    );
    assert_err!(
        s.create_conversation(bad, no_events(), None).await,
        StoreError::NotFound
    );

    // A group conversation: the group's members see it, nobody else.
    let g = group(&s, &alice, &[&bob], at(3)).await;
    let gc = group_conversation(&s, &bob, g.id(), at(4)).await;
    for viewer in [&alice, &bob] {
        let v = s
            .conversation_for(viewer.id(), gc.id())
            .await
            .expect("get")
            .expect("member sees it");
        assert_eq!(v.conversation, gc);
        assert_eq!(v.contact_id(), None);
        assert_eq!(v.conversation.group_id(), Some(g.id()));
        assert_eq!(v.state, MemberState::default());
    }
    assert_eq!(
        s.conversation_for(carol.id(), gc.id()).await.expect("get"),
        None
    );
    assert_eq!(
        list_convs(&s, &alice, no_filter()).await,
        vec![gc.id(), c.id()]
    );
    assert_eq!(list_convs(&s, &carol, no_filter()).await, vec![]);
}

async fn conversations_group_membership_is_live(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let g = group(&s, &alice, &[&bob], at(1)).await;
    let gc = group_conversation(&s, &alice, g.id(), at(2)).await;
    let m = send(&s, &gc, &alice, "hello team", at(3)).await;

    assert!(s
        .conversation_for(bob.id(), gc.id())
        .await
        .expect("get")
        .is_some());
    assert_eq!(all_messages(&s, &bob, None).await, vec![m.id()]);

    // Removed: bob loses the conversation and its messages at once.
    s.update_group(
        g.id(),
        GroupChange {
            remove: vec![bob.id()],
            ..GroupChange::default()
        },
        at(4),
        no_events(),
    )
    .await
    .expect("remove bob");
    assert_eq!(
        s.conversation_for(bob.id(), gc.id()).await.expect("get"),
        None
    );
    assert_eq!(list_convs(&s, &bob, no_filter()).await, vec![]);
    assert_eq!(all_messages(&s, &bob, None).await, vec![]);
    // Its messages are not found, like the conversation, and he can no
    // longer post into it.
    assert_err!(
        s.list_messages(bob.id(), Some(gc.id()).into(), page(100, None))
            .await,
        StoreError::NotFound
    );
    assert_err!(
        s.append_message(
            new_message(&gc, &bob, "still here?", at(5)),
            no_events(),
            None
        )
        .await,
        StoreError::NotFound
    );
    assert_err!(
        s.open_conversation(bob.id(), gc.id(), at(5), no_events())
            .await,
        StoreError::NotFound
    );
    assert_err!(
        s.update_conversation(
            bob.id(),
            gc.id(),
            None,
            MemberStatePatch::default(),
            no_events()
        )
        .await,
        StoreError::NotFound
    );

    // Added: carol sees it, with the history.
    assert_eq!(
        s.conversation_for(carol.id(), gc.id()).await.expect("get"),
        None
    );
    s.update_group(
        g.id(),
        GroupChange {
            add: vec![carol.id()],
            ..GroupChange::default()
        },
        at(6),
        no_events(),
    )
    .await
    .expect("add carol");
    assert!(s
        .conversation_for(carol.id(), gc.id())
        .await
        .expect("get")
        .is_some());
    assert_eq!(list_convs(&s, &carol, no_filter()).await, vec![gc.id()]);
    assert_eq!(all_messages(&s, &carol, None).await, vec![m.id()]);
}

async fn conversations_list_order_follows_activity(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c1 = direct(&s, &alice, &bob, at(1)).await;
    let c2 = direct(&s, &bob, &alice, at(2)).await;
    let c3 = direct(&s, &alice, &bob, at(3)).await;
    assert_eq!(
        list_convs(&s, &alice, no_filter()).await,
        vec![c3.id(), c2.id(), c1.id()]
    );
    assert_eq!(
        list_convs(&s, &bob, no_filter()).await,
        vec![c3.id(), c2.id(), c1.id()]
    );

    // A new message moves its conversation to the top and sets last_active_at.
    let m = send(&s, &c1, &bob, "ping", at_us(4, 5)).await;
    assert_eq!(
        list_convs(&s, &alice, no_filter()).await,
        vec![c1.id(), c3.id(), c2.id()]
    );
    let v = s
        .conversation_for(alice.id(), c1.id())
        .await
        .expect("get")
        .expect("some");
    assert_eq!(v.conversation.last_active_at(), Some(m.created_at()));
    assert_eq!(v.conversation.last_active_at(), Some(at_us(4, 5)));

    // Activity within one second is ordered exactly.
    send(&s, &c2, &alice, "pong", at_us(4, 6)).await;
    assert_eq!(
        list_convs(&s, &alice, no_filter()).await,
        vec![c2.id(), c1.id(), c3.id()]
    );

    // Same activity time: the larger id first.
    let ca = direct(&s, &alice, &bob, at(10)).await;
    let cb = direct(&s, &alice, &bob, at(10)).await;
    let (hi, lo) = if ca.id() > cb.id() {
        (ca.id(), cb.id())
    } else {
        (cb.id(), ca.id())
    };
    assert_eq!(
        list_convs(&s, &alice, no_filter()).await,
        vec![hi, lo, c2.id(), c1.id(), c3.id()]
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
    let g1 = group_conversation(&s, &bob, g.id(), at(5)).await;

    let set = |patch: MemberStatePatch, c: ConversationId| {
        let s = s.clone();
        let alice = alice.id();
        async move {
            s.update_conversation(alice, c, None, patch, no_events())
                .await
                .expect("update state")
        }
    };
    let v = set(
        MemberStatePatch {
            is_muted: Some(true),
            ..Default::default()
        },
        c1.id(),
    )
    .await;
    assert!(v.state.is_muted);
    set(
        MemberStatePatch {
            is_pinned: Some(true),
            ..Default::default()
        },
        c2.id(),
    )
    .await;
    set(
        MemberStatePatch {
            archived_at: Some(Some(at(10))),
            ..Default::default()
        },
        c3.id(),
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
        vec![g1.id(), c3.id(), c2.id(), c1.id()]
    );
    assert_eq!(
        list_convs(&s, &alice, f(Some(true), None, None)).await,
        vec![c1.id()]
    );
    assert_eq!(
        list_convs(&s, &alice, f(Some(false), None, None)).await,
        vec![g1.id(), c3.id(), c2.id()]
    );
    assert_eq!(
        list_convs(&s, &alice, f(None, None, Some(true))).await,
        vec![c2.id()]
    );
    assert_eq!(
        list_convs(&s, &alice, f(None, None, Some(false))).await,
        vec![g1.id(), c3.id(), c1.id()]
    );
    assert_eq!(
        list_convs(&s, &alice, f(None, Some(true), None)).await,
        vec![c3.id()]
    );
    assert_eq!(
        list_convs(&s, &alice, f(None, Some(false), None)).await,
        vec![g1.id(), c2.id(), c1.id()]
    );
    assert_eq!(
        list_convs(&s, &alice, f(Some(false), Some(false), None)).await,
        vec![g1.id(), c2.id()]
    );
    assert_eq!(
        list_convs(
            &s,
            &alice,
            ConversationFilter {
                group_id: Some(g.id()),
                ..ConversationFilter::default()
            }
        )
        .await,
        vec![g1.id()]
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
        vec![g1.id(), c3.id(), c1.id()]
    );

    // A cursor outside the filtered list.
    assert_err!(
        s.list_conversations(
            alice.id(),
            f(Some(true), None, None),
            page(10, Some(Cursor::After(c2.id())))
        )
        .await,
        StoreError::CursorNotFound
    );
    assert_err!(
        s.list_conversations(
            bob.id(),
            no_filter(),
            page(10, Some(Cursor::Before(c2.id())))
        )
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
        c.push(direct(&s, &alice, &bob, at(i)).await.id());
    }
    let other = direct(&s, &bob, &carol, at(9)).await;
    // List order: c5 c4 c3 c2 c1
    let (c1, c2, c3, c4, c5) = (c[0], c[1], c[2], c[3], c[4]);
    let list = |cursor: Option<Cursor<ConversationId>>| {
        let s = s.clone();
        let alice = alice.id();
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
        Cursor::After(other.id()),
        Cursor::Before(other.id()),
        Cursor::After(ConversationId::from_uuid(new_id())),
        Cursor::Before(ConversationId::from_uuid(new_id())),
    ] {
        assert_err!(
            s.list_conversations(alice.id(), no_filter(), page(2, Some(cursor)))
                .await,
            StoreError::CursorNotFound
        );
    }
}

/// The inbox merges the viewer's direct conversations as creator and as
/// peer and those of each group the viewer is in (read as separate ranges,
/// each cut to the page): pages in both directions walk one order, ties on
/// activity broken by id, filters applied in every range, and nothing of a
/// group the viewer is not in.
async fn conversations_paging_merges_every_audience(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let g1 = group(&s, &carol, &[&alice], at(0)).await;
    let g2 = group(&s, &bob, &[&alice, &carol], at(0)).await;
    let elsewhere = group(&s, &bob, &[&carol], at(0)).await;
    let as_creator = direct(&s, &alice, &bob, at(1)).await.id();
    let as_peer = direct(&s, &carol, &alice, at(2)).await.id();
    let in_g1 = group_conversation(&s, &carol, g1.id(), at(3)).await.id();
    let in_g2 = group_conversation(&s, &bob, g2.id(), at(4)).await.id();
    let in_g2_too = group_conversation(&s, &alice, g2.id(), at(5)).await.id();
    // Three at the same instant, one from each kind of range: the later
    // id comes first.
    let tie_creator = direct(&s, &alice, &carol, at(6)).await.id();
    let tie_group = group_conversation(&s, &carol, g1.id(), at(6)).await.id();
    let tie_peer = direct(&s, &bob, &alice, at(6)).await.id();
    // Never alice's.
    group_conversation(&s, &bob, elsewhere.id(), at(7)).await;
    direct(&s, &bob, &carol, at(8)).await;

    let mut order = vec![
        (at(6), tie_creator),
        (at(6), tie_group),
        (at(6), tie_peer),
        (at(5), in_g2_too),
        (at(4), in_g2),
        (at(3), in_g1),
        (at(2), as_peer),
        (at(1), as_creator),
    ];
    order.sort_by(|a, b| b.cmp(a));
    let order: Vec<ConversationId> = order.into_iter().map(|(_, id)| id).collect();
    assert_eq!(list_convs(&s, &alice, no_filter()).await, order);

    let list = |filter: ConversationFilter, cursor: Option<Cursor<ConversationId>>| {
        let s = s.clone();
        let alice = alice.id();
        async move {
            s.list_conversations(alice, filter, page(3, cursor))
                .await
                .expect("list")
        }
    };
    // Forwards, three at a time, then back from the end.
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let p = list(no_filter(), cursor).await;
        seen.extend(conv_ids(&p));
        if !p.has_more {
            break;
        }
        cursor = Some(Cursor::After(*seen.last().expect("a page")));
    }
    assert_eq!(seen, order);
    let mut back = Vec::new();
    let mut cursor = Cursor::Before(order[order.len() - 1]);
    loop {
        let p = list(no_filter(), Some(cursor)).await;
        let ids = conv_ids(&p);
        back.splice(0..0, ids.iter().copied());
        if !p.has_more {
            break;
        }
        cursor = Cursor::Before(ids[0]);
    }
    assert_eq!(back, order[..order.len() - 1]);

    // A filter holds in every range, pages included.
    for c in [tie_group, as_peer, in_g2, tie_creator] {
        s.update_conversation(
            alice.id(),
            c,
            None,
            MemberStatePatch {
                is_muted: Some(true),
                ..Default::default()
            },
            no_events(),
        )
        .await
        .expect("mute");
    }
    let muted = |on: bool| ConversationFilter {
        muted: Some(on),
        ..ConversationFilter::default()
    };
    let want: Vec<_> = order
        .iter()
        .copied()
        .filter(|c| [tie_group, as_peer, in_g2, tie_creator].contains(c))
        .collect();
    let p = list(muted(true), None).await;
    assert_eq!((conv_ids(&p), p.has_more), (want[..3].to_vec(), true));
    let p = list(muted(true), Some(Cursor::After(want[2]))).await;
    assert_eq!((conv_ids(&p), p.has_more), (want[3..].to_vec(), false));
    let unmuted: Vec<_> = order
        .iter()
        .copied()
        .filter(|c| !want.contains(c))
        .collect();
    assert_eq!(list_convs(&s, &alice, muted(false)).await, unmuted);
    // One group's only.
    let in_group = ConversationFilter {
        group_id: Some(g2.id()),
        ..ConversationFilter::default()
    };
    assert_eq!(
        list_convs(&s, &alice, in_group).await,
        vec![in_g2_too, in_g2]
    );
    let in_group_muted = ConversationFilter {
        group_id: Some(g1.id()),
        muted: Some(false),
        ..ConversationFilter::default()
    };
    assert_eq!(list_convs(&s, &alice, in_group_muted).await, vec![in_g1]);
}

async fn conversations_open_marks_others_messages_read(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let from_alice = send(&s, &c, &alice, "hi bob", at(2)).await;
    let from_bob = send(&s, &c, &bob, "hi alice", at(3)).await;
    assert_eq!(from_alice.read_at(), None);

    let v = s
        .open_conversation(bob.id(), c.id(), at(10), no_events())
        .await
        .expect("open");
    assert_eq!(v.state.last_opened_at, Some(at(10)));
    assert_eq!(v.viewer, bob.id());
    let read = |id: MessageId| {
        let s = s.clone();
        let alice = alice.id();
        async move {
            s.message_for(alice, id)
                .await
                .expect("get")
                .expect("some")
                .read_at()
        }
    };
    assert_eq!(read(from_alice.id()).await, Some(at(10)));
    assert_eq!(read(from_bob.id()).await, None, "own messages stay unread");
    let a = s
        .conversation_for(alice.id(), c.id())
        .await
        .expect("get")
        .expect("some");
    assert_eq!(a.state.last_opened_at, None, "per member");

    // Opening again moves last_opened_at but leaves read_at as it was.
    let v = s
        .open_conversation(bob.id(), c.id(), at(20), no_events())
        .await
        .expect("open");
    assert_eq!(v.state.last_opened_at, Some(at(20)));
    assert_eq!(read(from_alice.id()).await, Some(at(10)));
    s.open_conversation(alice.id(), c.id(), at(30), no_events())
        .await
        .expect("open");
    assert_eq!(read(from_bob.id()).await, Some(at(30)));

    assert_err!(
        s.open_conversation(carol.id(), c.id(), at(40), no_events())
            .await,
        StoreError::NotFound
    );
    assert_err!(
        s.open_conversation(
            alice.id(),
            ConversationId::from_uuid(new_id()),
            at(40),
            no_events()
        )
        .await,
        StoreError::NotFound
    );

    // A group member with no state row yet.
    let g = group(&s, &alice, &[&bob, &carol], at(50)).await;
    let gc = group_conversation(&s, &alice, g.id(), at(51)).await;
    let gm = send(&s, &gc, &alice, "all", at(52)).await;
    let v = s
        .open_conversation(carol.id(), gc.id(), at(60), no_events())
        .await
        .expect("open");
    assert_eq!(v.state.last_opened_at, Some(at(60)));
    assert_eq!(v.state.unread_count, 0);
    assert!(!v.state.is_muted && !v.state.is_pinned);
    assert_eq!(read(gm.id()).await, Some(at(60)));
    let b = s
        .conversation_for(bob.id(), gc.id())
        .await
        .expect("get")
        .expect("some");
    // bob never opened it: alice's message is unread for him.
    assert_eq!(
        b.state,
        MemberState {
            unread_count: 1,
            ..MemberState::default()
        }
    );
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
            alice.id(),
            c.id(),
            Some(PinnedMessageChange::Pin(m.id())),
            MemberStatePatch::default(),
            no_events(),
        )
        .await
        .expect("pin");
    assert_eq!(v.conversation.pinned_message_id(), Some(m.id()));
    assert_eq!(
        v.state,
        MemberState {
            unread_count: 1,
            ..MemberState::default()
        }
    );
    let b = s
        .conversation_for(bob.id(), c.id())
        .await
        .expect("get")
        .expect("some");
    assert_eq!(b.conversation.pinned_message_id(), Some(m.id()));

    for bad in [foreign.id(), MessageId::from_uuid(new_id())] {
        assert_err!(
            s.update_conversation(
                alice.id(),
                c.id(),
                Some(PinnedMessageChange::Pin(bad)),
                MemberStatePatch::default(),
                no_events()
            )
            .await,
            StoreError::Rule(DomainError::Invalid {
                field: Field::PinnedMessage,
                ..
            })
        );
    }
    // A refused update changes nothing, also not the state in the same call.
    assert_err!(
        s.update_conversation(
            alice.id(),
            c.id(),
            Some(PinnedMessageChange::Pin(foreign.id())),
            MemberStatePatch {
                is_muted: Some(true),
                ..Default::default()
            },
            no_events()
        )
        .await,
        StoreError::Rule(_)
    );
    let a = s
        .conversation_for(alice.id(), c.id())
        .await
        .expect("get")
        .expect("some");
    assert_eq!(a.conversation.pinned_message_id(), Some(m.id()));
    assert!(!a.state.is_muted);

    let v = s
        .update_conversation(
            bob.id(),
            c.id(),
            Some(PinnedMessageChange::Unpin),
            MemberStatePatch::default(),
            no_events(),
        )
        .await
        .expect("unpin");
    assert_eq!(v.conversation.pinned_message_id(), None);

    // Per-member state: only the submitted attributes, only for the caller.
    let v = s
        .update_conversation(
            alice.id(),
            c.id(),
            None,
            MemberStatePatch {
                is_pinned: Some(true),
                is_muted: Some(true),
                archived_at: Some(Some(at(5))),
            },
            no_events(),
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
            // bob's message to pin, never opened.
            unread_count: 1,
            unread_mention_count: 0,
        }
    );
    let v = s
        .update_conversation(
            alice.id(),
            c.id(),
            None,
            MemberStatePatch {
                is_muted: Some(false),
                ..Default::default()
            },
            no_events(),
        )
        .await
        .expect("state");
    assert_eq!(
        (v.state.is_pinned, v.state.is_muted, v.state.archived_at),
        (true, false, Some(at(5)))
    );
    let v = s
        .update_conversation(
            alice.id(),
            c.id(),
            None,
            MemberStatePatch {
                archived_at: Some(None),
                ..Default::default()
            },
            no_events(),
        )
        .await
        .expect("unarchive");
    assert_eq!((v.state.is_pinned, v.state.archived_at), (true, None));
    let b = s
        .conversation_for(bob.id(), c.id())
        .await
        .expect("get")
        .expect("some");
    assert_eq!(b.state, MemberState::default());

    // Bob's own state is independent of alice's.
    let v = s
        .update_conversation(
            bob.id(),
            c.id(),
            None,
            MemberStatePatch {
                is_muted: Some(true),
                ..Default::default()
            },
            no_events(),
        )
        .await
        .expect("bob mutes");
    assert_eq!((v.state.is_pinned, v.state.is_muted), (false, true));
    let a = s
        .conversation_for(alice.id(), c.id())
        .await
        .expect("get")
        .expect("some");
    assert_eq!((a.state.is_pinned, a.state.is_muted), (true, false));

    // An empty update returns the view unchanged.
    let same = s
        .update_conversation(
            alice.id(),
            c.id(),
            None,
            MemberStatePatch::default(),
            no_events(),
        )
        .await
        .expect("empty");
    assert_eq!(same, a);

    assert_err!(
        s.update_conversation(
            carol.id(),
            c.id(),
            None,
            MemberStatePatch::default(),
            no_events()
        )
        .await,
        StoreError::NotFound
    );
    assert_err!(
        s.update_conversation(
            carol.id(),
            c.id(),
            Some(PinnedMessageChange::Unpin),
            MemberStatePatch::default(),
            no_events()
        )
        .await,
        StoreError::NotFound
    );
    assert_err!(
        s.update_conversation(
            alice.id(),
            ConversationId::from_uuid(new_id()),
            None,
            MemberStatePatch::default(),
            no_events()
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
    let m = s
        .append_message(m, no_events(), None)
        .await
        .expect("append");
    s.update_message(
        m.id(),
        MessageChange {
            add_reactions: vec![rn("like")],
            ..change(&bob, at(3))
        },
        no_events(),
    )
    .await
    .expect("react");
    s.update_conversation(
        alice.id(),
        c.id(),
        Some(PinnedMessageChange::Pin(m.id())),
        MemberStatePatch {
            is_muted: Some(true),
            ..Default::default()
        },
        no_events(),
    )
    .await
    .expect("pin");
    let kept = send(&s, &keep, &bob, "stays", at(4)).await;

    s.delete_conversation(c.id(), alice.id(), no_events())
        .await
        .expect("delete");
    assert_eq!(
        s.conversation_for(alice.id(), c.id()).await.expect("get"),
        None
    );
    assert_eq!(s.message_for(alice.id(), m.id()).await.expect("get"), None);
    assert_eq!(all_messages(&s, &alice, None).await, vec![kept.id()]);
    assert_eq!(list_convs(&s, &alice, no_filter()).await, vec![keep.id()]);
    assert_err!(
        s.delete_conversation(c.id(), alice.id(), no_events()).await,
        StoreError::NotFound
    );
    assert_err!(
        s.delete_conversation(ConversationId::from_uuid(new_id()), alice.id(), no_events())
            .await,
        StoreError::NotFound
    );
    assert!(s
        .message_for(alice.id(), kept.id())
        .await
        .expect("get")
        .is_some());
}

confab_tests::on_both_stores!(
    crate::support::on_store;
    conversations_create_and_visibility,
    conversations_group_membership_is_live,
    conversations_list_order_follows_activity,
    conversations_list_filters,
    conversations_paging_both_ways,
    conversations_paging_merges_every_audience,
    conversations_open_marks_others_messages_read,
    conversations_update_pin_and_member_state,
    conversations_delete_cascades,
);
