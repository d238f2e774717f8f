use crate::{
    AvatarUrl, Contact, ContactId, DomainError, Field, GroupDescription, GroupId, GroupName, Rule,
    Timestamp,
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMember {
    /// The member.
    pub contact: Contact,
    /// What the member may do to the group.
    pub role: GroupRole,
}

/// A named set of contacts whose conversations all its members share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// Never changes.
    pub id: GroupId,
    /// Owners may change it.
    pub name: GroupName,
    /// Owners may change it; may be empty.
    pub description: GroupDescription,
    /// Empty when the group has none; owners may change it.
    pub avatar_url: AvatarUrl,
    /// Who created it.
    pub created_by: ContactId,
    /// When it was created.
    pub created_at: Timestamp,
    /// Members in the order they joined.
    pub members: Vec<GroupMember>,
}

impl Group {
    /// `contact`'s role; `None` when not a member.
    pub fn role_of(&self, contact: ContactId) -> Option<GroupRole> {
        self.members
            .iter()
            .find(|m| m.contact.id == contact)
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
            .filter(|m| m.role == GroupRole::Owner && !removes.contains(&m.contact.id))
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
    use crate::{PhoneNumber, Username};
    use uuid::Uuid;

    fn member(n: u128, role: GroupRole) -> GroupMember {
        GroupMember {
            contact: Contact {
                id: ContactId::from_uuid(Uuid::from_u128(n)),
                username: Username::new(format!("u{n}")).expect("valid"),
                phone_number: PhoneNumber::new("+15550100".into()).expect("valid"),
                avatar_url: AvatarUrl::none(),
                last_active_at: Timestamp::from_secs(0),
                created_at: Timestamp::from_secs(0),
            },
            role,
        }
    }

    fn group() -> Group {
        Group {
            id: GroupId::from_uuid(Uuid::from_u128(50)),
            name: GroupName::new("g".into()).expect("valid"),
            description: GroupDescription::empty(),
            avatar_url: AvatarUrl::none(),
            created_by: ContactId::from_uuid(Uuid::from_u128(1)),
            created_at: Timestamp::from_secs(0),
            members: vec![member(1, GroupRole::Owner), member(2, GroupRole::Member)],
        }
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
