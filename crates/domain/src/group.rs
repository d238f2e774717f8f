use crate::{
    has_repeats, AvatarUrl, Contact, ContactId, DomainError, Field, GroupDescription, GroupId,
    GroupName, Rule, Timestamp,
};

/// How many members a [`Group`] carries itself ([`Group::first_members`]):
/// the rest are counted ([`Group::member_count`]) and paged through by
/// whoever needs them.
pub const FIRST_MEMBERS: usize = 100;

/// The default most members a group may have (a deployment may choose
/// another: [`Rule::TooManyMembers`]).
pub const DEFAULT_MAX_GROUP_MEMBERS: u64 = 10_000;

/// A member's role in a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupRole {
    /// May change the group and delete it, and makes and unmakes its
    /// admins; a group always keeps one.
    Owner,
    /// Adds and removes plain members and deletes any message of the
    /// group's conversations; made by the owner.
    Admin,
    /// Shares the group's conversations; may change the group only by
    /// leaving it.
    Member,
}

impl GroupRole {
    /// The role's name, as stores keep it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Owner => "owner",
            Self::Admin => "admin",
            Self::Member => "member",
        }
    }
    /// Whether the role may delete any message of the group's
    /// conversations (the owner and admins).
    pub const fn moderates(self) -> bool {
        matches!(self, Self::Owner | Self::Admin)
    }
    /// The role [`GroupRole::as_str`] names; `None` for any other string.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "owner" => Some(Self::Owner),
            "admin" => Some(Self::Admin),
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
    /// When the member joined (the group's creation, for its first members).
    pub joined_at: Timestamp,
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
    /// See [`Group::first_members`].
    pub first_members: Vec<GroupMember>,
    /// See [`Group::member_count`].
    pub member_count: u64,
    /// See [`Group::owners`].
    pub owners: Vec<ContactId>,
}

/// A named set of contacts whose conversations all its members share.
///
/// A group may hold thousands of members, so it carries only its first
/// [`FIRST_MEMBERS`], their count, and its owners (whom its rules need).
///
/// Built only through [`Group::new`]: each contact is a member once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    parts: GroupParts,
}

impl Group {
    /// The group `parts` describe, when each contact in `first_members`
    /// and in `owners` is there once, `first_members` holds at most
    /// [`FIRST_MEMBERS`], and `member_count` counts at least them.
    ///
    /// (That a group keeps an owner is a rule of each change,
    /// [`Group::check_update`], not checked here.)
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::Members`]: with
    /// [`Rule::DuplicateMember`] when a contact is a member (or an owner)
    /// twice, [`Rule::TooManyMembers`] when `first_members` holds more than
    /// [`FIRST_MEMBERS`] or more than `member_count`.
    pub fn new(parts: GroupParts) -> Result<Self, DomainError> {
        if has_repeats(parts.first_members.iter().map(|m| m.contact.id()).collect())
            || has_repeats(parts.owners.clone())
        {
            return Err(DomainError::breaks(Field::Members, Rule::DuplicateMember));
        }
        let listed = parts.first_members.len() as u64;
        if parts.first_members.len() > FIRST_MEMBERS || listed > parts.member_count {
            let max = parts.member_count.min(FIRST_MEMBERS as u64);
            return Err(DomainError::breaks(
                Field::Members,
                Rule::TooManyMembers { max },
            ));
        }
        Ok(Self { parts })
    }

    /// Its attributes, for a caller that takes the group apart (and may
    /// build another through [`Group::new`]).
    pub fn into_parts(self) -> GroupParts {
        self.parts
    }

    /// Never changes.
    pub fn id(&self) -> GroupId {
        self.parts.id
    }

    /// Owners may change it.
    pub fn name(&self) -> &GroupName {
        &self.parts.name
    }

    /// Owners may change it; may be empty.
    pub fn description(&self) -> &GroupDescription {
        &self.parts.description
    }

    /// Empty when the group has none; owners may change it.
    pub fn avatar_url(&self) -> &AvatarUrl {
        &self.parts.avatar_url
    }

    /// Who created it (whether or not still a member).
    pub fn created_by(&self) -> ContactId {
        self.parts.created_by
    }

    /// When it was created.
    pub fn created_at(&self) -> Timestamp {
        self.parts.created_at
    }

    /// Its first members (at most [`FIRST_MEMBERS`]) in the order they
    /// joined, each once.
    pub fn first_members(&self) -> &[GroupMember] {
        &self.parts.first_members
    }

    /// How many members it has.
    pub fn member_count(&self) -> u64 {
        self.parts.member_count
    }

    /// Its owners, each once.
    pub fn owners(&self) -> &[ContactId] {
        &self.parts.owners
    }

    /// Whether `contact` is an owner of the group.
    pub fn is_owner(&self, contact: ContactId) -> bool {
        self.parts.owners.contains(&contact)
    }

    /// Checks a change of the group by `by`, `role_of` giving the current
    /// role of each member it names (`None`: not a member):
    ///
    /// - the owner may change anything, and alone changes the details and
    ///   the admins;
    /// - an admin may add contacts, and remove plain members and themself;
    /// - any other member may only remove themself;
    /// - admins made or unmade must be members after the change, never the
    ///   owner; nobody is both added and removed;
    /// - the last owner cannot leave (they delete the group instead).
    ///
    /// # Errors
    ///
    /// [`DomainError::Forbidden`] when `by`'s role does not allow the
    /// change; [`DomainError::Invalid`] on the list that breaks a rule.
    pub fn check_update(
        &self,
        by: ContactId,
        edit: &GroupEdit<'_>,
        role_of: impl Fn(ContactId) -> Option<GroupRole>,
    ) -> Result<(), DomainError> {
        check_list(Field::AddedMembers, edit.adds)?;
        check_list(Field::RemovedMembers, edit.removes)?;
        check_list(Field::AddedAdmins, edit.add_admins)?;
        check_list(Field::RemovedAdmins, edit.remove_admins)?;
        let both = |a: &[ContactId], b: &[ContactId]| b.iter().any(|x| a.contains(x));
        if both(edit.adds, edit.removes) {
            return Err(DomainError::breaks(
                Field::RemovedMembers,
                Rule::AddedAndRemoved,
            ));
        }
        if both(edit.add_admins, edit.remove_admins) {
            return Err(DomainError::breaks(
                Field::RemovedAdmins,
                Rule::AddedAndRemoved,
            ));
        }
        let changes_admins = !edit.add_admins.is_empty() || !edit.remove_admins.is_empty();
        match role_of(by) {
            Some(GroupRole::Owner) => {}
            Some(GroupRole::Admin) => {
                if edit.changes_details || changes_admins {
                    return Err(DomainError::Forbidden(
                        "only the group's owner may change its details or its admins",
                    ));
                }
                let above = |c: &ContactId| {
                    *c != by && matches!(role_of(*c), Some(GroupRole::Owner | GroupRole::Admin))
                };
                if edit.removes.iter().any(above) {
                    return Err(DomainError::Forbidden(
                        "an admin may remove members, not the owner or other admins",
                    ));
                }
            }
            Some(GroupRole::Member) | None => {
                if edit.changes_details
                    || changes_admins
                    || !edit.adds.is_empty()
                    || edit.removes.iter().any(|c| *c != by)
                {
                    return Err(DomainError::Forbidden(
                        "only the group's owner or an admin may change the group; a member \
                         may only remove themself",
                    ));
                }
            }
        }
        let member_after = |c: &ContactId| {
            edit.adds.contains(c) || (role_of(*c).is_some() && !edit.removes.contains(c))
        };
        for (field, list) in [
            (Field::AddedAdmins, edit.add_admins),
            (Field::RemovedAdmins, edit.remove_admins),
        ] {
            if list.iter().any(|c| role_of(*c) == Some(GroupRole::Owner)) {
                return Err(DomainError::breaks(field, Rule::IsOwner));
            }
            if !list.iter().all(member_after) {
                return Err(DomainError::breaks(field, Rule::NotMember));
            }
        }
        let owners_left = self
            .parts
            .owners
            .iter()
            .filter(|o| !edit.removes.contains(o))
            .count();
        if owners_left == 0 {
            return Err(DomainError::breaks(
                Field::RemovedMembers,
                Rule::LastOwnerRemoved,
            ));
        }
        Ok(())
    }

    /// Checks that a group of `count` members stays within `max`
    /// members (a deployment's choice; [`DEFAULT_MAX_GROUP_MEMBERS`] by
    /// default), `field` naming the list that would take it past.
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] with [`Rule::TooManyMembers`].
    pub fn check_size(field: Field, count: u64, max: u64) -> Result<(), DomainError> {
        if count > max {
            return Err(DomainError::breaks(field, Rule::TooManyMembers { max }));
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

/// A change of a group's members and admins, as [`Group::check_update`]
/// checks it.
///
/// A plain carrier (public fields): the rules are between its lists and the
/// group, checked there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupEdit<'a> {
    /// Whether the name, description or avatar changes.
    pub changes_details: bool,
    /// Contacts to add as members.
    pub adds: &'a [ContactId],
    /// Members to remove.
    pub removes: &'a [ContactId],
    /// Members to make admins.
    pub add_admins: &'a [ContactId],
    /// Admins to make plain members again.
    pub remove_admins: &'a [ContactId],
}

impl GroupEdit<'_> {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        !self.changes_details
            && self.adds.is_empty()
            && self.removes.is_empty()
            && self.add_admins.is_empty()
            && self.remove_admins.is_empty()
    }
}

/// A change of a group's details (the owner's). `None` leaves one as it
/// is.
///
/// A plain carrier (public fields): each value is checked where it is
/// made, and any combination is a valid change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupDetailsPatch {
    /// A new name.
    pub name: Option<GroupName>,
    /// A new description.
    pub description: Option<GroupDescription>,
    /// A new avatar (an empty one removes it).
    pub avatar_url: Option<AvatarUrl>,
}

impl GroupDetailsPatch {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.name.is_none() && self.description.is_none() && self.avatar_url.is_none()
    }

    /// The part of the patch that changes `group`: a detail submitted with
    /// the value the group already has is left out, so that a rename to
    /// the same name [`is_empty`](Self::is_empty) (no write, no event).
    pub fn against(self, group: &Group) -> Self {
        Self {
            name: self.name.filter(|n| n != group.name()),
            description: self.description.filter(|d| d != group.description()),
            avatar_url: self.avatar_url.filter(|a| a != group.avatar_url()),
        }
    }
}

/// Checks a list of contacts to add to (or remove from) a group: each
/// contact once.
///
/// # Errors
///
/// [`DomainError::Invalid`] on `field` with [`Rule::DuplicateMember`].
pub fn check_list(field: Field, contacts: &[ContactId]) -> Result<(), DomainError> {
    if has_repeats(contacts.to_vec()) {
        return Err(DomainError::breaks(field, Rule::DuplicateMember));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
