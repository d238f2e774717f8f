//! Blocks, reports and group roles (`ModerationStore`, `GroupStore`,
//! migration `moderation`): the same answers on both stores.

use confab_domain::{
    Cursor, GroupRole, Report, ReportDescription, ReportId, ReportReason, ReportStatus,
};
use confab_ports::{GroupChange, StoreError};

use crate::support::{
    assert_err, at, contact, direct, group, group_conversation, new_id, new_message, no_events,
    page, S,
};

fn blocked_names(p: &confab_domain::Paged<confab_domain::Block>) -> Vec<String> {
    p.items
        .iter()
        .map(|b| b.contact.username().as_str().to_owned())
        .collect()
}

async fn blocks_are_listed_newest_first_and_stop_writes_in_direct_conversations(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let dave = contact(&s, "dave").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let g = group(&s, &alice, &[&bob], at(1)).await;
    let gc = group_conversation(&s, &alice, g.id(), at(2)).await;

    let first = s
        .block(alice.id(), bob.id(), at(10), None)
        .await
        .expect("block");
    assert!(first.created);
    assert_eq!(first.item.contact.id(), bob.id());
    assert_eq!(first.item.created_at, at(10));
    // Again: the first block, unchanged.
    let again = s
        .block(alice.id(), bob.id(), at(20), None)
        .await
        .expect("again");
    assert!(!again.created);
    assert_eq!(again.item.created_at, at(10));
    assert_err!(
        s.block(
            alice.id(),
            confab_domain::ContactId::from_uuid(new_id()),
            at(11),
            None
        )
        .await,
        StoreError::NotFound
    );
    s.block(alice.id(), carol.id(), at(12), None)
        .await
        .expect("carol");
    s.block(alice.id(), dave.id(), at(12), None)
        .await
        .expect("dave");

    // Newest first (same second: by id), paged both ways.
    let all = s.blocks(alice.id(), page(10, None)).await.expect("list");
    assert_eq!(all.items.len(), 3);
    assert_eq!(blocked_names(&all)[2], "bob");
    let one = s.blocks(alice.id(), page(1, None)).await.expect("one");
    assert!(one.has_more);
    let next = s
        .blocks(
            alice.id(),
            page(5, Some(Cursor::After(one.items[0].contact.id()))),
        )
        .await
        .expect("next");
    assert_eq!(blocked_names(&next), blocked_names(&all)[1..].to_vec());
    assert!(!next.has_more);
    let back = s
        .blocks(alice.id(), page(5, Some(Cursor::Before(bob.id()))))
        .await
        .expect("back");
    assert_eq!(blocked_names(&back), blocked_names(&all)[..2].to_vec());
    assert_err!(
        s.blocks(bob.id(), page(5, Some(Cursor::After(carol.id()))))
            .await,
        StoreError::CursorNotFound
    );

    // Who blocked whom, either way.
    assert_eq!(
        s.block_between(bob.id(), alice.id()).await.expect("b"),
        Some(alice.id())
    );
    assert_eq!(
        s.block_between(alice.id(), bob.id()).await.expect("b"),
        Some(alice.id())
    );
    assert_eq!(
        s.block_between(bob.id(), carol.id()).await.expect("b"),
        None
    );
    let mut blockers = s
        .blockers_of(bob.id(), vec![alice.id(), carol.id()])
        .await
        .expect("blockers");
    blockers.sort();
    assert_eq!(blockers, vec![alice.id()]);
    assert_eq!(
        s.conversation_blocker(c.id(), bob.id()).await.expect("c"),
        Some(alice.id())
    );
    // Not a member of it: nothing to learn.
    assert_eq!(
        s.conversation_blocker(c.id(), carol.id()).await.expect("c"),
        None
    );
    assert_eq!(
        s.conversation_blocker(gc.id(), bob.id()).await.expect("g"),
        None
    );

    // Neither writes in their direct conversation; the group is as before.
    for (from, conv) in [(&bob, &c), (&alice, &c)] {
        assert_err!(
            s.append_message(new_message(conv, from, "hi", at(30)), no_events(), None)
                .await,
            StoreError::NotFound
        );
    }
    s.append_message(new_message(&gc, &bob, "hi all", at(31)), no_events(), None)
        .await
        .expect("a group is unaffected");

    // Unblocked: writes again.
    assert!(s.unblock(alice.id(), bob.id()).await.expect("unblock"));
    assert!(!s.unblock(alice.id(), bob.id()).await.expect("twice"));
    assert_eq!(s.block_of(alice.id(), bob.id()).await.expect("gone"), None);
    s.append_message(new_message(&c, &bob, "hi", at(32)), no_events(), None)
        .await
        .expect("unblocked");
}

fn report(reporter: &confab_domain::Contact, about: &confab_domain::Contact, t: i64) -> Report {
    Report {
        id: ReportId::from_uuid(new_id()),
        reporter: reporter.id(),
        message_id: None,
        contact_id: about.id(),
        reason: ReportReason::Harassment,
        description: ReportDescription::new("mean".into()).expect("text"),
        status: ReportStatus::Open,
        created_at: at(t),
        updated_at: at(t),
    }
}

async fn a_reporter_has_one_open_report_of_a_target(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let c = direct(&s, &alice, &bob, at(1)).await;
    let m = s
        .append_message(new_message(&c, &bob, "spam", at(2)), no_events(), None)
        .await
        .expect("send");

    let first = s
        .file_report(report(&alice, &bob, 10), None, no_events(), None)
        .await
        .expect("file")
        .expect("no limit");
    assert!(first.created);
    // The same target again: the first, unchanged.
    let again = s
        .file_report(report(&alice, &bob, 11), None, no_events(), None)
        .await
        .expect("again")
        .expect("no limit");
    assert!(!again.created);
    assert_eq!(again.item, first.item);
    // The message is another target; another reporter, another report.
    let of_message = Report {
        message_id: Some(m.id()),
        ..report(&alice, &bob, 12)
    };
    assert!(
        s.file_report(of_message, None, no_events(), None)
            .await
            .expect("message")
            .expect("no limit")
            .created
    );
    assert!(
        s.file_report(report(&carol, &bob, 13), None, no_events(), None)
            .await
            .expect("carol")
            .expect("no limit")
            .created
    );

    // Each reporter's own, oldest first, paged.
    let alices = s.reports_by(alice.id(), page(10, None)).await.expect("by");
    assert_eq!(alices.items.len(), 2);
    assert_eq!(alices.items[0], first.item);
    assert!(alices.items.iter().all(|r| r.reporter == alice.id()));
    let rest = s
        .reports_by(alice.id(), page(10, Some(Cursor::After(first.item.id))))
        .await
        .expect("rest");
    assert_eq!(rest.items, alices.items[1..].to_vec());
    assert_err!(
        s.reports_by(carol.id(), page(10, Some(Cursor::After(first.item.id))))
            .await,
        StoreError::CursorNotFound
    );

    // Oldest first; by status.
    let all = s.list_reports(None, page(10, None)).await.expect("all");
    assert_eq!(all.items.len(), 3);
    assert_eq!(all.items[0], first.item);
    let resolved = s
        .set_report_status(first.item.id, ReportStatus::Resolved, at(20))
        .await
        .expect("resolve")
        .expect("there");
    assert_eq!(resolved.status, ReportStatus::Resolved);
    assert_eq!(resolved.updated_at, at(20));
    assert_eq!(resolved.created_at, at(10));
    let open = s
        .list_reports(Some(ReportStatus::Open), page(10, None))
        .await
        .expect("open");
    assert_eq!(open.items.len(), 2);
    assert!(open.items.iter().all(|r| r.status == ReportStatus::Open));
    assert_err!(
        s.list_reports(
            Some(ReportStatus::Open),
            page(10, Some(Cursor::After(first.item.id)))
        )
        .await,
        StoreError::CursorNotFound
    );
    let second = s
        .list_reports(None, page(1, Some(Cursor::After(first.item.id))))
        .await
        .expect("after");
    assert_eq!(second.items[0].id, all.items[1].id);
    assert!(second.has_more);

    // Closed, the target may be reported again.
    let anew = s
        .file_report(report(&alice, &bob, 30), None, no_events(), None)
        .await
        .expect("anew")
        .expect("no limit");
    assert!(anew.created);
    assert_ne!(anew.item.id, first.item.id);
    // Reopening the first now would make two open ones: refused.
    assert!(matches!(
        s.set_report_status(first.item.id, ReportStatus::Open, at(31))
            .await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(
        s.set_report_status(ReportId::from_uuid(new_id()), ReportStatus::Open, at(31))
            .await
            .expect("none"),
        None
    );
}

async fn admins_are_made_unmade_and_inherit_ownership(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let carol = contact(&s, "carol").await;
    let g = group(&s, &alice, &[&bob, &carol], at(1)).await;
    let change = GroupChange {
        // The owner is never made an admin.
        add_admins: vec![carol.id(), alice.id()],
        ..GroupChange::default()
    };
    s.update_group(g.id(), change, at(2), no_events())
        .await
        .expect("promote");
    let mut roles = s
        .member_roles(g.id(), vec![alice.id(), bob.id(), carol.id()])
        .await
        .expect("roles");
    roles.sort_by_key(|(c, _)| *c);
    let mut want = vec![
        (alice.id(), GroupRole::Owner),
        (bob.id(), GroupRole::Member),
        (carol.id(), GroupRole::Admin),
    ];
    want.sort_by_key(|(c, _)| *c);
    assert_eq!(roles, want);
    let members = s
        .group_members(bob.id(), g.id(), page(10, None))
        .await
        .expect("page")
        .expect("member");
    let listed: Vec<GroupRole> = members.items.iter().map(|m| m.role).collect();
    assert_eq!(
        listed,
        vec![GroupRole::Owner, GroupRole::Member, GroupRole::Admin]
    );

    // The owner erased: the oldest admin (carol), not the oldest member
    // (bob), owns the group.
    let plan = s.erase_plan(alice.id()).await.expect("plan").expect("some");
    let groups = plan
        .groups_left
        .iter()
        .chain(&plan.groups_deleted)
        .map(|g| (*g, no_events()))
        .collect();
    s.erase_contact(confab_ports::Erasure {
        contact: alice.id(),
        plan,
        outbox: no_events(),
        groups,
        at: at(3),
    })
    .await
    .expect("erase");
    let roles = s
        .member_roles(g.id(), vec![carol.id()])
        .await
        .expect("roles");
    assert_eq!(roles, vec![(carol.id(), GroupRole::Owner)]);

    // Unmade: a plain member again.
    let g2 = group(&s, &bob, &[&carol], at(4)).await;
    for list in [vec![carol.id()], vec![]] {
        let change = GroupChange {
            add_admins: list.clone(),
            remove_admins: if list.is_empty() {
                vec![carol.id()]
            } else {
                vec![]
            },
            ..GroupChange::default()
        };
        s.update_group(g2.id(), change, at(5), no_events())
            .await
            .expect("change");
    }
    assert_eq!(
        s.member_roles(g2.id(), vec![carol.id()]).await.expect("r"),
        vec![(carol.id(), GroupRole::Member)]
    );
}

confab_tests::on_both_stores!(
    crate::support::on_store;
    blocks_are_listed_newest_first_and_stop_writes_in_direct_conversations,
    a_reporter_has_one_open_report_of_a_target,
    admins_are_made_unmade_and_inherit_ownership,
);
