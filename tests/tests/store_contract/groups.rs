//! Groups: create and get, paging, members and details, deletion.

use confab_domain::{
    AvatarUrl, ContactId, Cursor, DomainError, Field, Group, GroupDescription, GroupId, GroupName,
    GroupRole,
};
use confab_ports::{GroupChange, NewGroup, StoreError};

use crate::support::no_events;
use crate::support::{
    all_messages, assert_err, at, contact, group, group_conversation, group_ids, list_convs,
    new_id, no_filter, page, send, S,
};

fn members(g: &Group) -> Vec<(ContactId, GroupRole)> {
    g.first_members()
        .iter()
        .map(|m| (m.contact.id(), m.role))
        .collect()
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
        created_by: alice.id(),
        // Duplicates and the creator are ignored.
        member_ids: vec![carol.id(), alice.id(), bob.id(), carol.id()],
        created_at: at(7),
        max_members: confab_domain::DEFAULT_MAX_GROUP_MEMBERS,
    };
    let g = s
        .create_group(new.clone(), at(8), no_events(), None)
        .await
        .expect("create");
    assert_eq!(g.id(), new.id);
    assert_eq!(g.name().as_str(), "Book club");
    assert_eq!(g.description().as_str(), "We read.");
    assert_eq!(*g.avatar_url(), new.avatar_url);
    assert_eq!(g.created_by(), alice.id());
    assert_eq!(g.created_at(), at(7));
    assert_eq!(
        members(&g),
        vec![
            (alice.id(), GroupRole::Owner),
            (carol.id(), GroupRole::Member),
            (bob.id(), GroupRole::Member),
        ]
    );
    assert_eq!(g.first_members()[0].contact, alice);

    for viewer in [&alice, &bob, &carol] {
        assert_eq!(
            s.group_for(viewer.id(), g.id()).await.expect("get"),
            Some(g.clone())
        );
    }
    assert_eq!(s.group_for(dave.id(), g.id()).await.expect("get"), None);
    assert_eq!(
        s.group_for(alice.id(), GroupId::from_uuid(new_id()))
            .await
            .expect("get"),
        None
    );

    // Unknown members: refused, nothing stored.
    let bad = NewGroup {
        id: GroupId::from_uuid(new_id()),
        member_ids: vec![bob.id(), ContactId::from_uuid(new_id())],
        ..new.clone()
    };
    assert_err!(
        s.create_group(bad.clone(), at(9), no_events(), None).await,
        StoreError::Rule(DomainError::Invalid {
            field: Field::Members,
            ..
        })
    );
    assert_eq!(s.group_for(alice.id(), bad.id).await.expect("get"), None);

    // A group of one.
    let solo = s
        .create_group(
            NewGroup {
                id: GroupId::from_uuid(new_id()),
                member_ids: vec![],
                ..new
            },
            at(10),
            no_events(),
            None,
        )
        .await
        .expect("solo");
    assert_eq!(members(&solo), vec![(alice.id(), GroupRole::Owner)]);
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
    let id = |i: usize| g[i - 1].id();

    let list = |cursor: Option<Cursor<GroupId>>| {
        let s = s.clone();
        let alice = alice.id();
        async move { s.list_groups(alice, page(2, cursor)).await.expect("list") }
    };
    let p = list(None).await;
    assert_eq!((group_ids(&p), p.has_more), (vec![id(5), id(4)], true));
    assert_eq!(p.items[0], g[4], "with the members");
    assert_eq!(p.items[1].first_members().len(), 3);
    let p = list(Some(Cursor::After(id(4)))).await;
    assert_eq!((group_ids(&p), p.has_more), (vec![id(3), id(2)], true));
    let p = list(Some(Cursor::After(id(2)))).await;
    assert_eq!((group_ids(&p), p.has_more), (vec![id(1)], false));
    let p = list(Some(Cursor::Before(id(1)))).await;
    assert_eq!((group_ids(&p), p.has_more), (vec![id(3), id(2)], true));
    let p = list(Some(Cursor::Before(id(3)))).await;
    assert_eq!((group_ids(&p), p.has_more), (vec![id(5), id(4)], false));

    let all = s
        .list_groups(carol.id(), page(100, None))
        .await
        .expect("list");
    assert_eq!(
        (group_ids(&all), all.has_more),
        (vec![foreign.id(), id(4), id(2)], false)
    );

    for cursor in [
        Cursor::After(foreign.id()),
        Cursor::Before(foreign.id()),
        Cursor::After(GroupId::from_uuid(new_id())),
    ] {
        assert_err!(
            s.list_groups(alice.id(), page(2, Some(cursor))).await,
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
            g.id(),
            GroupChange {
                name: Some(GroupName::new("Renamed".into()).expect("name")),
                description: Some(GroupDescription::new("new".into()).expect("description")),
                avatar_url: None,
                add: vec![dave.id(), bob.id(), carol.id(), dave.id()],
                remove: vec![],
                ..GroupChange::default()
            },
            at(2),
            no_events(),
        )
        .await
        .expect("update");
    assert_eq!(u.name().as_str(), "Renamed");
    assert_eq!(u.description().as_str(), "new");
    assert_eq!(u.avatar_url(), g.avatar_url());
    assert_eq!(u.created_at(), g.created_at());
    assert_eq!(
        members(&u),
        vec![
            (alice.id(), GroupRole::Owner),
            (bob.id(), GroupRole::Member),
            (dave.id(), GroupRole::Member),
            (carol.id(), GroupRole::Member),
        ]
    );

    // An unknown contact to add: refused, and nothing of the change applied.
    assert_err!(
        s.update_group(
            g.id(),
            GroupChange {
                name: Some(GroupName::new("Nope".into()).expect("name")),
                add: vec![ContactId::from_uuid(new_id())],
                remove: vec![bob.id()],
                ..GroupChange::default()
            },
            at(3),
            no_events()
        )
        .await,
        StoreError::Rule(DomainError::Invalid {
            field: Field::AddedMembers,
            ..
        })
    );
    assert_eq!(
        s.group_for(alice.id(), g.id()).await.expect("get"),
        Some(u.clone())
    );

    let u = s
        .update_group(
            g.id(),
            GroupChange {
                remove: vec![bob.id(), ContactId::from_uuid(new_id())],
                ..GroupChange::default()
            },
            at(4),
            no_events(),
        )
        .await
        .expect("remove");
    assert_eq!(
        members(&u),
        vec![
            (alice.id(), GroupRole::Owner),
            (dave.id(), GroupRole::Member),
            (carol.id(), GroupRole::Member),
        ]
    );
    assert_eq!(s.group_for(bob.id(), g.id()).await.expect("get"), None);
    // Rejoining puts bob last.
    let u = s
        .update_group(
            g.id(),
            GroupChange {
                add: vec![bob.id()],
                avatar_url: Some(
                    AvatarUrl::new("https://img.example/x.png".into()).expect("avatar"),
                ),
                ..GroupChange::default()
            },
            at(5),
            no_events(),
        )
        .await
        .expect("rejoin");
    assert_eq!(
        u.first_members().last().map(|m| m.contact.id()),
        Some(bob.id())
    );
    assert_eq!(u.avatar_url().as_str(), "https://img.example/x.png");
    // An empty change returns the group as it is.
    let same = s
        .update_group(g.id(), GroupChange::default(), at(6), no_events())
        .await
        .expect("empty");
    assert_eq!(same, u);

    assert_err!(
        s.update_group(
            GroupId::from_uuid(new_id()),
            GroupChange::default(),
            at(7),
            no_events()
        )
        .await,
        StoreError::NotFound
    );
}

async fn groups_delete_cascades(s: S) {
    let alice = contact(&s, "alice").await;
    let bob = contact(&s, "bob").await;
    let g = group(&s, &alice, &[&bob], at(1)).await;
    let keep = group(&s, &alice, &[&bob], at(1)).await;
    let gc = group_conversation(&s, &bob, g.id(), at(2)).await;
    let kc = group_conversation(&s, &bob, keep.id(), at(2)).await;
    let m = send(&s, &gc, &alice, "bye", at(3)).await;
    let km = send(&s, &kc, &alice, "stay", at(3)).await;
    s.open_conversation(bob.id(), gc.id(), at(4), no_events())
        .await
        .expect("open");

    s.delete_group(g.id(), no_events()).await.expect("delete");
    assert_eq!(s.group_for(alice.id(), g.id()).await.expect("get"), None);
    assert_eq!(
        s.conversation_for(alice.id(), gc.id()).await.expect("get"),
        None
    );
    assert_eq!(s.message_for(alice.id(), m.id()).await.expect("get"), None);
    assert_eq!(list_convs(&s, &bob, no_filter()).await, vec![kc.id()]);
    assert_eq!(all_messages(&s, &bob, None).await, vec![km.id()]);
    let groups = s.list_groups(bob.id(), page(10, None)).await.expect("list");
    assert_eq!(group_ids(&groups), vec![keep.id()]);
    assert_err!(
        s.delete_group(g.id(), no_events()).await,
        StoreError::NotFound
    );
}

confab_tests::on_both_stores!(
    crate::support::on_store;
    groups_create_and_get,
    groups_list_paging,
    groups_update_members_and_details,
    groups_delete_cascades,
);
