//! Groups: the members that group conversations are shared by.

use std::collections::HashMap;

use confab_domain::{
    check_list, group_created, group_deleted, group_updated, AvatarUrl, Change, Contact, ContactId,
    Field, Group, GroupDescription, GroupDetailsPatch, GroupEdit, GroupId, GroupMember, GroupName,
    GroupRole, Page, Paged,
};
use confab_ports::{Completion, GroupChange, NewGroup};

use crate::error::page_error;
use crate::{Confab, ServiceError};

/// A group to create, parsed into domain values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewGroupRequest {
    pub name: GroupName,
    pub description: Option<GroupDescription>,
    pub avatar_url: Option<AvatarUrl>,
    pub contact_ids: Vec<ContactId>,
}

/// Changes to a group; empty fields change nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupUpdate {
    pub name: Option<GroupName>,
    pub description: Option<GroupDescription>,
    pub avatar_url: Option<AvatarUrl>,
    pub add_contact_ids: Vec<ContactId>,
    pub remove_contact_ids: Vec<ContactId>,
    pub add_admin_ids: Vec<ContactId>,
    pub remove_admin_ids: Vec<ContactId>,
}

impl Confab {
    async fn visible_group(&self, caller: &Contact, id: GroupId) -> Result<Group, ServiceError> {
        self.ports
            .groups
            .group_for(caller.id(), id)
            .await?
            .ok_or(ServiceError::not_found())
    }

    pub async fn list_groups(
        &self,
        caller: &Contact,
        page: Page<GroupId>,
    ) -> Result<Paged<Group>, ServiceError> {
        self.ports
            .groups
            .list_groups(caller.id(), page)
            .await
            .map_err(|e| page_error(&page, e))
    }

    pub async fn group(&self, caller: &Contact, id: GroupId) -> Result<Group, ServiceError> {
        self.visible_group(caller, id).await
    }

    /// A page of the group's members, oldest first (members only).
    pub async fn group_members(
        &self,
        caller: &Contact,
        id: GroupId,
        page: Page<ContactId>,
    ) -> Result<Paged<GroupMember>, ServiceError> {
        self.ports
            .groups
            .group_members(caller.id(), id, page)
            .await
            .map_err(|e| page_error(&page, e))?
            .ok_or(ServiceError::not_found())
    }

    /// Creates a group; the caller becomes its owner and first member.
    /// With a `completion`, its answer is kept for the caller's idempotency
    /// key in the same transaction.
    pub async fn create_group(
        &self,
        caller: &Contact,
        request: NewGroupRequest,
        completion: Option<Completion<Group>>,
    ) -> Result<Group, ServiceError> {
        // Each contact once, and not past the limit (the store counts
        // again with the creator, and checks the contacts exist).
        check_list(Field::Members, &request.contact_ids)?;
        Group::check_size(
            Field::Members,
            request.contact_ids.len() as u64,
            self.max_group_members,
        )?;
        // Nobody is added by someone they blocked.
        self.check_not_blocked_by_any(caller.id(), &request.contact_ids, Field::Members)
            .await?;
        let now = self.now();
        let group = NewGroup {
            id: GroupId::from_uuid(self.new_uuid()),
            name: request.name,
            description: request.description.unwrap_or_else(GroupDescription::empty),
            avatar_url: request.avatar_url.unwrap_or_else(AvatarUrl::none),
            created_by: caller.id(),
            member_ids: request.contact_ids,
            created_at: now,
            max_members: self.max_group_members,
        };
        let events = group_created(Change::new(caller.id(), now), self.event_ids(), group.id);
        let created = self
            .ports
            .groups
            .create_group(group, now, self.outbox(events), completion)
            .await?;
        self.committed();
        Ok(created)
    }

    /// The owner changes anything; admins add contacts and remove plain
    /// members; a member may only remove themself.
    pub async fn update_group(
        &self,
        caller: &Contact,
        id: GroupId,
        update: GroupUpdate,
    ) -> Result<Group, ServiceError> {
        // Lists that could never be applied are refused before anything
        // is read.
        check_list(Field::AddedMembers, &update.add_contact_ids)?;
        check_list(Field::RemovedMembers, &update.remove_contact_ids)?;
        check_list(Field::AddedAdmins, &update.add_admin_ids)?;
        check_list(Field::RemovedAdmins, &update.remove_admin_ids)?;
        Group::check_size(
            Field::AddedMembers,
            update.add_contact_ids.len() as u64,
            self.max_group_members,
        )?;
        let group = self.visible_group(caller, id).await?;
        let submitted = GroupDetailsPatch {
            name: update.name,
            description: update.description,
            avatar_url: update.avatar_url,
        };
        let edit = GroupEdit {
            changes_details: !submitted.is_empty(),
            adds: &update.add_contact_ids,
            removes: &update.remove_contact_ids,
            add_admins: &update.add_admin_ids,
            remove_admins: &update.remove_admin_ids,
        };
        if edit.is_empty() {
            return Ok(group);
        }
        // The roles the rules need: the caller's, and those of everyone
        // the change removes or whose role it changes.
        let mut named = vec![caller.id()];
        named.extend(
            edit.removes
                .iter()
                .chain(edit.add_admins)
                .chain(edit.remove_admins),
        );
        let roles: HashMap<ContactId, GroupRole> = self
            .ports
            .groups
            .member_roles(id, named)
            .await?
            .into_iter()
            .collect();
        group.check_update(caller.id(), &edit, |c| roles.get(&c).copied())?;
        // A detail given the value it has changes nothing (a rename to the
        // same name): with no member or admin named either, nothing is
        // written and nobody hears of it. (Members named are the store's
        // to judge: one already in, or not in, is skipped there.)
        let details = submitted.against(&group);
        if details.is_empty()
            && edit.adds.is_empty()
            && edit.removes.is_empty()
            && edit.add_admins.is_empty()
            && edit.remove_admins.is_empty()
        {
            return Ok(group);
        }
        // Nobody is added by someone they blocked.
        self.check_not_blocked_by_any(caller.id(), edit.adds, Field::AddedMembers)
            .await?;
        let now = self.now();
        // Those removed hear of it once more (the store keeps only those who
        // really were members).
        let events = group_updated(
            Change::new(caller.id(), now),
            self.event_ids(),
            id,
            &update.remove_contact_ids,
        );
        let change = GroupChange {
            name: details.name,
            description: details.description,
            avatar_url: details.avatar_url,
            add: update.add_contact_ids,
            remove: update.remove_contact_ids,
            add_admins: update.add_admin_ids,
            remove_admins: update.remove_admin_ids,
            max_members: self.max_group_members,
        };
        // A member who removed themself gets the group as it is now, without
        // them: the last view they will have of it.
        let updated = self
            .ports
            .groups
            .update_group(id, change, now, self.outbox(events))
            .await?;
        self.committed();
        Ok(updated)
    }

    /// Deletes the group with its conversations (owner only).
    pub async fn delete_group(&self, caller: &Contact, id: GroupId) -> Result<(), ServiceError> {
        let group = self.visible_group(caller, id).await?;
        group.check_delete(caller.id())?;
        let events = group_deleted(Change::new(caller.id(), self.now()), self.event_ids(), id);
        self.ports
            .groups
            .delete_group(id, self.outbox(events))
            .await?;
        self.committed();
        Ok(())
    }
}
