//! Groups and their members.

use async_trait::async_trait;
use confab_domain::{
    AvatarUrl, ContactId, Group, GroupDescription, GroupId, GroupMember, GroupName, GroupRole,
    Page, Paged, Timestamp,
};

use crate::{Completion, Outbox, StoreError};

/// A group to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewGroup {
    /// The new group's id.
    pub id: GroupId,
    /// Its name.
    pub name: GroupName,
    /// Its description.
    pub description: GroupDescription,
    /// Its picture.
    pub avatar_url: AvatarUrl,
    /// Becomes the owner and first member.
    pub created_by: ContactId,
    /// Further members (duplicates and the creator are ignored).
    pub member_ids: Vec<ContactId>,
    /// When it was created: the group's `created_at`, by which the
    /// viewer's groups are listed.
    pub created_at: Timestamp,
    /// The most members the group may have.
    pub max_members: u64,
}

/// Changes to a group, applied together. Its default changes nothing,
/// within the default limit of members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupChange {
    /// The new name; `None` keeps it.
    pub name: Option<GroupName>,
    /// The new description; `None` keeps it.
    pub description: Option<GroupDescription>,
    /// The new picture; `None` keeps it.
    pub avatar_url: Option<AvatarUrl>,
    /// Added as members (ones already in are skipped).
    pub add: Vec<ContactId>,
    /// Removed (ones not in are skipped).
    pub remove: Vec<ContactId>,
    /// Members made admins (after `add` and `remove`; admins already and
    /// the owner are skipped).
    pub add_admins: Vec<ContactId>,
    /// Admins made plain members again (others are skipped).
    pub remove_admins: Vec<ContactId>,
    /// The most members the group may have after the change.
    pub max_members: u64,
}

impl Default for GroupChange {
    fn default() -> Self {
        Self {
            name: None,
            description: None,
            avatar_url: None,
            add: Vec::new(),
            remove: Vec::new(),
            add_admins: Vec::new(),
            remove_admins: Vec::new(),
            max_members: confab_domain::DEFAULT_MAX_GROUP_MEMBERS,
        }
    }
}

/// Groups and their members.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait GroupStore: Send + Sync {
    /// Stores a new group with the `outbox`'s events (`group.created`,
    /// payload the group returned); with a `completion`, stores its
    /// response in the same transaction. Its members (the creator first,
    /// as owner, then `member_ids` in their order) joined at `at`. Returns
    /// the group as stored, with its members.
    /// # Errors
    /// - MUST return `Rule(Invalid { field: Members, rule: UnknownContacts })`
    ///   when a member id is not an existing contact.
    /// - MUST return `Rule(Invalid { field: Members, rule: TooManyMembers
    ///   })`, writing nothing, when the group would have more than
    ///   `max_members` members.
    /// - MUST return `ClaimLost`, writing nothing, when the completion's
    ///   claim is no longer held.
    async fn create_group(
        &self,
        group: NewGroup,
        at: Timestamp,
        outbox: Outbox,
        completion: Option<Completion<Group>>,
    ) -> Result<Group, StoreError>;
    /// The group with its first members (in the order they joined),
    /// their count and its owners, when `viewer` is a member; else
    /// `None`. Its cost does not grow with the group's size.
    async fn group_for(&self, viewer: ContactId, id: GroupId) -> Result<Option<Group>, StoreError>;
    /// A page of the group's members, in the order they joined (oldest
    /// first; a cursor names a member), when `viewer` is a member; else
    /// `None`.
    /// # Errors
    /// - MUST return `CursorNotFound` when the cursor is not a member.
    async fn group_members(
        &self,
        viewer: ContactId,
        id: GroupId,
        page: Page<ContactId>,
    ) -> Result<Option<Paged<GroupMember>>, StoreError>;
    /// The roles in group `id` of those of `contacts` who are its
    /// members, in no order (a non-member is left out).
    async fn member_roles(
        &self,
        id: GroupId,
        contacts: Vec<ContactId>,
    ) -> Result<Vec<(ContactId, GroupRole)>, StoreError>;
    /// The viewer's groups, newest first (`created_at` desc, id desc).
    /// # Errors
    /// - MUST return `CursorNotFound` when the cursor is not in this list.
    async fn list_groups(
        &self,
        viewer: ContactId,
        page: Page<GroupId>,
    ) -> Result<Paged<Group>, StoreError>;
    /// Applies `change` in one transaction (contacts added join at `at`,
    /// after the members already in; details written only where they
    /// differ from the group's); returns the group as it is after.
    /// Writes the `outbox`'s events (`group.updated`, payload the group
    /// returned) when anything changed, for the members after it and, of
    /// the audience's `also`, only those it removed.
    /// # Errors
    /// - MUST return `NotFound` when the group does not exist.
    /// - MUST return `Rule(Invalid { field: AddedMembers, rule:
    ///   UnknownContacts })` when an added id is not an existing contact.
    /// - MUST return `Rule(Invalid { field: AddedMembers, rule:
    ///   TooManyMembers })`, writing nothing, when the group would have
    ///   more than `max_members` members after it.
    async fn update_group(
        &self,
        id: GroupId,
        change: GroupChange,
        at: Timestamp,
        outbox: Outbox,
    ) -> Result<Group, StoreError>;
    /// Deletes the group with its conversations and their messages, with
    /// the `outbox`'s events (`group.deleted`) for the members it had.
    /// # Errors
    /// - MUST return `NotFound` when it does not exist.
    async fn delete_group(&self, id: GroupId, outbox: Outbox) -> Result<(), StoreError>;
}
