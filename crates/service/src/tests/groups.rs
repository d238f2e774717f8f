//! Groups: who may change their members.
use confab_domain::Field;

use crate::ServiceError;

use super::*;

#[tokio::test]
async fn a_member_may_only_remove_themself_from_a_group() {
    let mut m = Mocks::new();
    let g = group_with(&alice(), &bob());
    group_seen(&mut m, &g);
    let update = crate::GroupUpdate {
        remove_contact_ids: vec![alice().id()],
        ..Default::default()
    };
    assert!(matches!(
        m.service()
            .update_group(&bob(), GroupId::from_uuid(Uuid::from_u128(7)), update)
            .await,
        Err(ServiceError::Forbidden(_))
    ));
}

#[tokio::test]
async fn details_already_set_write_nothing_but_still_need_the_right() {
    let gid = GroupId::from_uuid(Uuid::from_u128(7));
    let same = || crate::GroupUpdate {
        name: Some(GroupName::new("team".into()).expect("valid")),
        description: Some(GroupDescription::empty()),
        avatar_url: Some(AvatarUrl::none()),
        ..Default::default()
    };
    let mut m = Mocks::new();
    let g = group_with(&alice(), &bob());
    group_seen(&mut m, &g);
    m.groups.expect_update_group().never();
    let mut signal = MockEventSignal::new();
    signal.expect_committed().never();
    m.signal = Some(signal);
    let svc = m.service();
    // The owner renaming to the same name: the group as it is.
    assert_eq!(
        svc.update_group(&alice(), gid, same()).await.expect("200"),
        g
    );
    // A plain member may not change the details, the same or not.
    assert!(matches!(
        svc.update_group(&bob(), gid, same()).await,
        Err(ServiceError::Forbidden(_))
    ));
}

#[tokio::test]
async fn only_the_details_that_differ_reach_the_store() {
    let gid = GroupId::from_uuid(Uuid::from_u128(7));
    let mut m = Mocks::new();
    let g = group_with(&alice(), &bob());
    group_seen(&mut m, &g);
    m.groups
        .expect_update_group()
        .withf(|_, change, _, _| {
            change.name.is_none()
                && change.avatar_url.is_none()
                && change.description.as_ref().map(|d| d.as_str()) == Some("new")
        })
        .times(1)
        .returning(move |_, _, _, _| Ok(g.clone()));
    let update = crate::GroupUpdate {
        name: Some(GroupName::new("team".into()).expect("valid")),
        description: Some(GroupDescription::new("new".into()).expect("valid")),
        avatar_url: Some(AvatarUrl::none()),
        ..Default::default()
    };
    m.service()
        .update_group(&alice(), gid, update)
        .await
        .expect("200");
}

/// A group of `owner`, `admin` (an admin) and `member`.
fn group_with_admin(owner: &Contact, admin: &Contact, member: &Contact) -> Group {
    let mut parts = group_with(owner, member).into_parts();
    parts.first_members.push(GroupMember {
        contact: admin.clone(),
        role: GroupRole::Admin,
        joined_at: Timestamp::from_secs(NOW - 900),
    });
    parts.member_count = 3;
    Group::new(parts).expect("valid")
}

#[tokio::test]
async fn an_admin_removes_plain_members_but_not_the_owner() {
    let carol = contact(3, "carol");
    for (removed, allowed) in [(bob().id(), true), (alice().id(), false)] {
        let mut m = Mocks::new();
        let g = group_with_admin(&alice(), &carol, &bob());
        group_seen(&mut m, &g);
        if allowed {
            let after = group_with_admin(&alice(), &carol, &bob());
            m.groups
                .expect_update_group()
                .withf(move |_, change, _, _| change.remove == vec![removed])
                .times(1)
                .returning(move |_, _, _, _| Ok(after.clone()));
        }
        let update = crate::GroupUpdate {
            remove_contact_ids: vec![removed],
            ..Default::default()
        };
        let got = m
            .service()
            .update_group(&carol, GroupId::from_uuid(Uuid::from_u128(7)), update)
            .await;
        assert_eq!(got.is_ok(), allowed, "{got:?}");
        if !allowed {
            assert!(matches!(got, Err(ServiceError::Forbidden(_))));
        }
    }
}

#[tokio::test]
async fn nobody_adds_to_a_group_someone_who_blocked_them() {
    let carol = contact(3, "carol");
    let mut m = Mocks::new();
    let g = group_with(&alice(), &bob());
    group_seen(&mut m, &g);
    let mut moderation = MockModerationStore::new();
    let who = carol.id();
    moderation
        .expect_blockers_of()
        .withf(move |caller, among| *caller == alice().id() && among == &[who])
        .returning(move |_, _| Ok(vec![who]));
    m.moderation = moderation;
    // No expectation on update_group: reaching it fails the test.
    let update = crate::GroupUpdate {
        add_contact_ids: vec![carol.id()],
        ..Default::default()
    };
    assert!(matches!(
        m.service()
            .update_group(&alice(), GroupId::from_uuid(Uuid::from_u128(7)), update)
            .await,
        Err(ServiceError::Blocked {
            field: Some(Field::AddedMembers),
            by_caller: false
        })
    ));
}
