use super::*;
use crate::{ContactParts, PhoneNumber, Username};
use uuid::Uuid;

fn member(n: u128, role: GroupRole) -> GroupMember {
    GroupMember {
        contact: Contact::new(ContactParts {
            id: ContactId::from_uuid(Uuid::from_u128(n)),
            username: Username::new(format!("u{n}")).expect("valid"),
            phone_number: PhoneNumber::new("+15550100".into()).expect("valid"),
            avatar_url: AvatarUrl::none(),
            last_active_at: Timestamp::from_secs(0),
            created_at: Timestamp::from_secs(0),
        })
        .expect("valid"),
        role,
        joined_at: Timestamp::from_secs(0),
    }
}

fn parts(members: Vec<GroupMember>) -> GroupParts {
    let owners = members
        .iter()
        .filter(|m| m.role == GroupRole::Owner)
        .map(|m| m.contact.id())
        .collect();
    GroupParts {
        id: GroupId::from_uuid(Uuid::from_u128(50)),
        name: GroupName::new("g".into()).expect("valid"),
        description: GroupDescription::empty(),
        avatar_url: AvatarUrl::none(),
        created_by: ContactId::from_uuid(Uuid::from_u128(1)),
        created_at: Timestamp::from_secs(0),
        member_count: members.len() as u64,
        first_members: members,
        owners,
    }
}

fn group() -> Group {
    Group::new(parts(vec![
        member(1, GroupRole::Owner),
        member(2, GroupRole::Member),
    ]))
    .expect("valid")
}

#[test]
fn details_already_set_are_no_change() {
    let g = group();
    let same = GroupDetailsPatch {
        name: Some(GroupName::new("g".into()).expect("valid")),
        description: Some(GroupDescription::empty()),
        avatar_url: Some(AvatarUrl::none()),
    };
    assert!(same.clone().against(&g).is_empty());
    let renamed = GroupDetailsPatch {
        name: Some(GroupName::new("h".into()).expect("valid")),
        ..same
    };
    assert_eq!(
        renamed.against(&g),
        GroupDetailsPatch {
            name: Some(GroupName::new("h".into()).expect("valid")),
            ..GroupDetailsPatch::default()
        }
    );
    assert!(GroupDetailsPatch::default().is_empty());
}

#[test]
fn each_contact_is_a_member_once() {
    assert_eq!(
        Group::new(parts(vec![
            member(1, GroupRole::Owner),
            member(2, GroupRole::Member),
            member(1, GroupRole::Member),
        ])),
        Err(DomainError::breaks(Field::Members, Rule::DuplicateMember))
    );
    let g = group();
    assert_eq!(Group::new(g.clone().into_parts()), Ok(g));
}

#[test]
fn carries_at_most_its_first_members() {
    let many: Vec<GroupMember> = (1..=101).map(|n| member(n, GroupRole::Member)).collect();
    assert!(matches!(
        Group::new(parts(many.clone())),
        Err(DomainError::Invalid {
            field: Field::Members,
            rule: Rule::TooManyMembers { .. }
        })
    ));
    let mut first = parts(many[..100].to_vec());
    first.member_count = 10_000;
    let g = Group::new(first).expect("valid");
    assert_eq!((g.first_members().len(), g.member_count()), (100, 10_000));
    let mut undercounted = parts(many[..3].to_vec());
    undercounted.member_count = 2;
    assert!(Group::new(undercounted).is_err());
}

fn c(n: u128) -> ContactId {
    ContactId::from_uuid(Uuid::from_u128(n))
}

/// 1 is the owner, 2 a member, 4 an admin, 5 another admin.
fn role_of(id: ContactId) -> Option<GroupRole> {
    match id.as_uuid().as_u128() {
        1 => Some(GroupRole::Owner),
        2 => Some(GroupRole::Member),
        4 | 5 => Some(GroupRole::Admin),
        _ => None,
    }
}

fn edit<'a>(details: bool, adds: &'a [ContactId], removes: &'a [ContactId]) -> GroupEdit<'a> {
    GroupEdit {
        changes_details: details,
        adds,
        removes,
        ..GroupEdit::default()
    }
}

fn admins<'a>(add: &'a [ContactId], remove: &'a [ContactId]) -> GroupEdit<'a> {
    GroupEdit {
        add_admins: add,
        remove_admins: remove,
        ..GroupEdit::default()
    }
}

fn forbidden(r: Result<(), DomainError>) -> bool {
    matches!(r, Err(DomainError::Forbidden(_)))
}

#[test]
fn owner_may_change_everything() {
    let g = group();
    assert!(g
        .check_update(c(1), &edit(true, &[c(3)], &[c(2), c(4)]), role_of)
        .is_ok());
    assert!(g
        .check_update(c(1), &admins(&[c(2)], &[c(4)]), role_of)
        .is_ok());
    // Made an admin in the change that adds them.
    let add = [c(3)];
    let both = GroupEdit {
        adds: &add,
        add_admins: &add,
        ..GroupEdit::default()
    };
    assert!(g.check_update(c(1), &both, role_of).is_ok());
    assert!(g.check_delete(c(1)).is_ok());
}

#[test]
fn admins_add_and_remove_plain_members_only() {
    let g = group();
    assert!(g
        .check_update(c(4), &edit(false, &[c(3)], &[c(2)]), role_of)
        .is_ok());
    assert!(g
        .check_update(c(4), &edit(false, &[], &[c(4)]), role_of)
        .is_ok());
    for e in [
        edit(true, &[], &[]),
        edit(false, &[], &[c(1)]),
        edit(false, &[], &[c(5)]),
        admins(&[c(2)], &[]),
        admins(&[], &[c(5)]),
    ] {
        assert!(forbidden(g.check_update(c(4), &e, role_of)), "{e:?}");
    }
    assert!(forbidden(g.check_delete(c(4))));
}

#[test]
fn admins_made_and_unmade_are_members_not_the_owner() {
    let g = group();
    for (e, field, rule) in [
        (admins(&[c(3)], &[]), Field::AddedAdmins, Rule::NotMember),
        (admins(&[], &[c(9)]), Field::RemovedAdmins, Rule::NotMember),
        (admins(&[c(1)], &[]), Field::AddedAdmins, Rule::IsOwner),
        (admins(&[], &[c(1)]), Field::RemovedAdmins, Rule::IsOwner),
        (
            admins(&[c(2)], &[c(2)]),
            Field::RemovedAdmins,
            Rule::AddedAndRemoved,
        ),
        (
            admins(&[c(2), c(2)], &[]),
            Field::AddedAdmins,
            Rule::DuplicateMember,
        ),
    ] {
        assert_eq!(
            g.check_update(c(1), &e, role_of),
            Err(DomainError::breaks(field, rule))
        );
    }
    // Removed by the same change: no longer a member to promote.
    let gone = [c(2)];
    let e = GroupEdit {
        removes: &gone,
        add_admins: &gone,
        ..GroupEdit::default()
    };
    assert_eq!(
        g.check_update(c(1), &e, role_of),
        Err(DomainError::breaks(Field::AddedAdmins, Rule::NotMember))
    );
}

#[test]
fn member_may_only_leave() {
    let g = group();
    assert!(g
        .check_update(c(2), &edit(false, &[], &[c(2)]), role_of)
        .is_ok());
    for e in [
        edit(true, &[], &[]),
        edit(false, &[c(3)], &[]),
        edit(false, &[], &[c(1)]),
        admins(&[c(2)], &[]),
    ] {
        assert!(forbidden(g.check_update(c(2), &e, role_of)), "{e:?}");
    }
    assert!(forbidden(g.check_delete(c(2))));
    assert!(GroupRole::Owner.moderates() && GroupRole::Admin.moderates());
    assert!(!GroupRole::Member.moderates());
}

#[test]
fn lists_name_each_contact_once() {
    let g = group();
    for (adds, removes, field, rule) in [
        (
            vec![c(3), c(3)],
            vec![],
            Field::AddedMembers,
            Rule::DuplicateMember,
        ),
        (
            vec![],
            vec![c(2), c(2)],
            Field::RemovedMembers,
            Rule::DuplicateMember,
        ),
        (
            vec![c(2)],
            vec![c(2)],
            Field::RemovedMembers,
            Rule::AddedAndRemoved,
        ),
    ] {
        assert_eq!(
            g.check_update(c(1), &edit(false, &adds, &removes), role_of),
            Err(DomainError::breaks(field, rule))
        );
    }
    assert!(Group::check_size(Field::AddedMembers, 10, 10).is_ok());
    assert_eq!(
        Group::check_size(Field::AddedMembers, 11, 10),
        Err(DomainError::breaks(
            Field::AddedMembers,
            Rule::TooManyMembers { max: 10 }
        ))
    );
}

#[test]
fn last_owner_cannot_leave() {
    let g = group();
    assert!(matches!(
        g.check_update(c(1), &edit(false, &[], &[c(1)]), role_of),
        Err(DomainError::Invalid {
            field: Field::RemovedMembers,
            rule: Rule::LastOwnerRemoved
        })
    ));
}
