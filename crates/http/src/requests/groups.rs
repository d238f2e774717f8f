//! Requests of `/v1/groups`.

use confab_domain::{AvatarUrl, ContactId, GroupDescription, GroupId, GroupName, Page};

use super::{ids, optional, request, shape, text, Flatten};

request! {
    /// `GET /v1/groups`.
    pub struct ListGroupsIn {
        page: Page<GroupId> = Flatten,
    }
}

request! {
    /// `GET /v1/groups/{id}/members`.
    pub struct ListMembersIn {
        page: Page<ContactId> = Flatten,
    }
}

request! {
    /// `POST /v1/groups`.
    pub struct CreateGroupIn {
        name: GroupName = text(shape::group_name, GroupName::new),
        description: Option<GroupDescription> = optional(text(shape::group_description, GroupDescription::new)),
        avatar_url: Option<AvatarUrl> = optional(text(shape::avatar_url, AvatarUrl::new)),
        contact_ids: Vec<ContactId> = ids(),
    }
}

request! {
    /// `PUT /v1/groups/{id}`.
    pub struct UpdateGroupIn {
        name: Option<GroupName> = optional(text(shape::group_name, GroupName::new)),
        description: Option<GroupDescription> = optional(text(shape::group_description, GroupDescription::new)),
        avatar_url: Option<AvatarUrl> = optional(text(shape::avatar_url, AvatarUrl::new)),
        add_contact_ids: Vec<ContactId> = ids(),
        remove_contact_ids: Vec<ContactId> = ids(),
        add_admin_ids: Vec<ContactId> = ids(),
        remove_admin_ids: Vec<ContactId> = ids(),
    }
}
