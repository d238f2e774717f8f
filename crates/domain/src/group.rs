use crate::{
    has_repeats, AvatarUrl, Contact, ContactId, DomainError, Field, GroupDescription, GroupId,
    GroupName, Rule, Timestamp,
};

/// A member's role in a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupRole {
    /// May change the group and delete it; a group always keeps one.
    Owner,
    /// Shares the group's conversations; may change the group only by
    /// leaving it.
    Member,
}

impl GroupRole {
    /// The role's name, as stores keep it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Owner => "owner",
            Self::Member => "member",
        }
    }
    /// The role [`GroupRole::as_str`] names; `None` for any other string.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "owner" => Some(Self::Owner),
            "member" => Some(Self::Member),
            _ => None,
        }
    }
}

/// A contact in a group, with its role there.
///
/// A plain pair (public fields): any contact may hold any role. What a
/// group's members must be together is the group's rule ([`Group::new`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMember {
    /// The member.
    pub contact: Contact,
    /// What the member may do to the group.
    pub role: GroupRole,
}

/// The attributes of a [`Group`], unchecked: what [`Group::new`] takes and
/// [`Group::into_parts`] gives back. Its fields are public because it holds
/// no invariant; a `Group` built from it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupParts {
    /// See [`Group::id`].
    pub id: GroupId,
    /// See [`Group::name`].
    pub name: GroupName,
    /// See [`Group::description`].
    pub description: GroupDescription,
    /// See [`Group::avatar_url`].
    pub avatar_url: AvatarUrl,
    /// See [`Group::created_by`].
    pub created_by: ContactId,
    /// See [`Group::created_at`].
    pub created_at: Timestamp,
    /// See [`Group::members`].
    pub members: Vec<GroupMember>,
}

/// A named set of contacts whose conversations all its members share.
///
/// Built only through [`Group::new`]: each contact is a member once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    id: GroupId,
    name: GroupName,
    description: GroupDescription,
    avatar_url: AvatarUrl,
    created_by: ContactId,
    created_at: Timestamp,
    members: Vec<GroupMember>,
}

impl Group {
    /// The group `parts` describe, when each contact in `members` is there
    /// once.
    ///
    /// (That a group keeps an owner is a rule of each change,
    /// [`Group::check_update`], not checked here.)
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::Members`] with
    /// [`Rule::DuplicateMember`] when a contact is a member twice.
    pub fn new(parts: GroupParts) -> Result<Self, DomainError> {
        let GroupParts {
            id,
            name,
            description,
            avatar_url,
            created_by,
            created_at,
            members,
        } = parts;
        if has_repeats(members.iter().map(|m| m.contact.id()).collect()) {
            return Err(DomainError::breaks(Field::Members, Rule::DuplicateMember));
        }
        Ok(Self {
            id,
            name,
            description,
            avatar_url,
            created_by,
            created_at,
            members,
        })
    }

    /// Its attributes, for a caller that takes the group apart (and may
    /// build another through [`Group::new`]).
    pub fn into_parts(self) -> GroupParts {
        GroupParts {
            id: self.id,
            name: self.name,
            description: self.description,
            avatar_url: self.avatar_url,
            created_by: self.created_by,
            created_at: self.created_at,
            members: self.members,
        }
    }

    /// Never changes.
    pub fn id(&self) -> GroupId {
        self.id
    }

    /// Owners may change it.
    pub fn name(&self) -> &GroupName {
        &self.name
    }

    /// Owners may change it; may be empty.
    pub fn description(&self) -> &GroupDescription {
        &self.description
    }

    /// Empty when the group has none; owners may change it.
    pub fn avatar_url(&self) -> &AvatarUrl {
        &self.avatar_url
    }

    /// Who created it (whether or not still a member).
    pub fn created_by(&self) -> ContactId {
        self.created_by
    }

    /// When it was created.
    pub fn created_at(&self) -> Timestamp {
        self.created_at
    }

    /// Members in the order they joined, each once.
    pub fn members(&self) -> &[GroupMember] {
        &self.members
    }

    /// `contact`'s role; `None` when not a member.
    pub fn role_of(&self, contact: ContactId) -> Option<GroupRole> {
        self.members
            .iter()
            .find(|m| m.contact.id() == contact)
            .map(|m| m.role)
    }

    /// Whether `contact` is an owner of the group.
    pub fn is_owner(&self, contact: ContactId) -> bool {
        self.role_of(contact) == Some(GroupRole::Owner)
    }

    /// Checks a change of the group by `by`: an owner may change anything;
    /// any other member may only remove themself. The last owner cannot
    /// leave (they delete the group instead).
    pub fn check_update(
        &self,
        by: ContactId,
        changes_details: bool,
        adds: &[ContactId],
        removes: &[ContactId],
    ) -> Result<(), DomainError> {
        let owner = self.is_owner(by);
        if !owner && (changes_details || !adds.is_empty() || removes.iter().any(|c| *c != by)) {
            return Err(DomainError::Forbidden(
                "only a group owner may change the group; a member may only remove themself",
            ));
        }
        let owners_left = self
            .members
            .iter()
            .filter(|m| m.role == GroupRole::Owner && !removes.contains(&m.contact.id()))
            .count();
        if owners_left == 0 {
            return Err(DomainError::breaks(
                Field::RemovedMembers,
                Rule::LastOwnerRemoved,
            ));
        }
        Ok(())
    }

    /// Only an owner may delete the group.
    ///
    /// # Errors
    ///
    /// [`DomainError::Forbidden`] when `by` is not an owner.
    pub fn check_delete(&self, by: ContactId) -> Result<(), DomainError> {
        if self.is_owner(by) {
            Ok(())
        } else {
            Err(DomainError::Forbidden(
                "only a group owner may delete the group",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
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
        }
    }

    fn parts(members: Vec<GroupMember>) -> GroupParts {
        GroupParts {
            id: GroupId::from_uuid(Uuid::from_u128(50)),
            name: GroupName::new("g".into()).expect("valid"),
            description: GroupDescription::empty(),
            avatar_url: AvatarUrl::none(),
            created_by: ContactId::from_uuid(Uuid::from_u128(1)),
            created_at: Timestamp::from_secs(0),
            members,
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

    fn c(n: u128) -> ContactId {
        ContactId::from_uuid(Uuid::from_u128(n))
    }

    #[test]
    fn owner_may_change_everything() {
        let g = group();
        assert!(g.check_update(c(1), true, &[c(3)], &[c(2)]).is_ok());
        assert!(g.check_delete(c(1)).is_ok());
    }

    #[test]
    fn member_may_only_leave() {
        let g = group();
        assert!(g.check_update(c(2), false, &[], &[c(2)]).is_ok());
        for (details, adds, removes) in [
            (true, vec![], vec![]),
            (false, vec![c(3)], vec![]),
            (false, vec![], vec![c(1)]),
        ] {
            assert!(matches!(
                g.check_update(c(2), details, &adds, &removes),
                Err(DomainError::Forbidden(_))
            ));
        }
        assert!(matches!(
            g.check_delete(c(2)),
            Err(DomainError::Forbidden(_))
        ));
    }

    #[test]
    fn last_owner_cannot_leave() {
        let g = group();
        assert!(matches!(
            g.check_update(c(1), false, &[], &[c(1)]),
            Err(DomainError::Invalid {
                field: Field::RemovedMembers,
                rule: Rule::LastOwnerRemoved
            })
        ));
    }
}
