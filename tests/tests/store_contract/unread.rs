//! Unread counts (docs/api.md "Unread counts"): each member's messages from others
//! after its last open, kept as a counter by the writes themselves.

use confab_domain::{Contact, Conversation};
use confab_ports::GroupChange;

use crate::support::no_events;
use crate::support::{
    at, contact, direct, group, group_conversation, list_convs, no_filter, send, S,
};

async fn unread(s: &S, who: &Contact, c: &Conversation) -> u64 {
    s.conversation_for(who.id(), c.id())
        .await
        .expect("get")
        .expect("visible")
        .state
        .unread_count
}

async fn unread_counts_follow_sends_opens_and_deletes(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    assert_eq!(
        (unread(&s, &alice, &c).await, unread(&s, &bob, &c).await),
        (0, 0)
    );

    let first = send(&s, &c, &alice, "1", at(2)).await;
    send(&s, &c, &alice, "2", at(3)).await;
    send(&s, &c, &bob, "3", at(4)).await;
    // Never opened: every message from the others.
    assert_eq!(
        (unread(&s, &alice, &c).await, unread(&s, &bob, &c).await),
        (1, 2)
    );

    let opened = s
        .open_conversation(bob.id(), c.id(), at(5), no_events())
        .await
        .expect("open");
    assert_eq!(opened.state.unread_count, 0);
    assert_eq!(unread(&s, &alice, &c).await, 1, "only the opener's count");
    let late = send(&s, &c, &alice, "4", at(6)).await;
    assert_eq!(unread(&s, &bob, &c).await, 1);

    // Deleting a message bob had read changes nothing for him; one he had
    // not read is taken back.
    s.delete_message(first.id(), alice.id(), no_events())
        .await
        .expect("delete");
    assert_eq!(unread(&s, &bob, &c).await, 1);
    s.delete_message(late.id(), alice.id(), no_events())
        .await
        .expect("delete");
    assert_eq!(unread(&s, &bob, &c).await, 0);

    // Lists show it too.
    let listed = s
        .list_conversations(bob.id(), no_filter(), crate::support::page(10, None))
        .await
        .expect("list");
    assert_eq!(listed.items[0].state.unread_count, 0);
    let listed = s
        .list_conversations(alice.id(), no_filter(), crate::support::page(10, None))
        .await
        .expect("list");
    assert_eq!(listed.items[0].state.unread_count, 1);
    assert_eq!(list_convs(&s, &alice, no_filter()).await, vec![c.id()]);
}

async fn unread_counts_of_group_members_who_join_late(s: S) {
    let owner = contact(&s, "owner").await;
    let member = contact(&s, "member").await;
    let late = contact(&s, "late").await;
    let g = group(&s, &owner, &[&member], at(1)).await;
    let c = group_conversation(&s, &owner, g.id(), at(2)).await;
    send(&s, &c, &owner, "1", at(3)).await;
    send(&s, &c, &member, "2", at(4)).await;
    assert_eq!(
        (unread(&s, &owner, &c).await, unread(&s, &member, &c).await),
        (1, 1)
    );

    let add = |who: &Contact| GroupChange {
        add: vec![who.id()],
        ..GroupChange::default()
    };
    s.update_group(g.id(), add(&late), at(5), no_events())
        .await
        .expect("add");
    // Joining: everything already there from others is unread.
    assert_eq!(unread(&s, &late, &c).await, 2);
    s.open_conversation(late.id(), c.id(), at(6), no_events())
        .await
        .expect("open");
    send(&s, &c, &owner, "3", at(7)).await;
    assert_eq!(unread(&s, &late, &c).await, 1);

    // Leaving and coming back: counted from the last open, not from zero.
    s.update_group(
        g.id(),
        GroupChange {
            remove: vec![late.id()],
            ..GroupChange::default()
        },
        at(8),
        no_events(),
    )
    .await
    .expect("remove");
    send(&s, &c, &owner, "4 (while away)", at(9)).await;
    send(&s, &c, &member, "5 (while away)", at(10)).await;
    s.update_group(g.id(), add(&late), at(11), no_events())
        .await
        .expect("add again");
    assert_eq!(unread(&s, &late, &c).await, 3);
    assert_eq!(unread(&s, &member, &c).await, 3);
    assert_eq!(unread(&s, &owner, &c).await, 2);
}

confab_tests::on_both_stores!(
    crate::support::on_store;
    unread_counts_follow_sends_opens_and_deletes,
    unread_counts_of_group_members_who_join_late,
);
