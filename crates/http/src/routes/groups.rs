//! `/v1/groups`: the members group conversations are shared by.

use crate::service::Service;
use actix_web::{web, HttpRequest, HttpResponse};
use confab_domain::{Group, GroupId, Viewer};
use confab_service::{GroupUpdate, NewGroupRequest, StoredResponse};

use super::{created_json, endpoint, no_content, ok_json, page_json, path_id, Endpoint};
use crate::auth::Caller;
use crate::dto::{GroupDto, GroupMemberDto, ListDto};
use crate::error::{ApiError, ErrorBody};
use crate::idempotency;
use crate::requests::groups::{CreateGroupIn, ListGroupsIn, ListMembersIn, UpdateGroupIn};
use crate::requests::{Input, NoParams};
use crate::wire;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        endpoint!(list, __path_list),
        endpoint!(create, __path_create),
        endpoint!(get, __path_get),
        endpoint!(members, __path_members),
        endpoint!(update, __path_update),
        endpoint!(delete, __path_delete),
    ]
}

/// List the caller's groups.
#[utoipa::path(
    get, path = "/v1/groups", tag = "groups", operation_id = "list_groups",
    params(ListGroupsIn),
    responses((status = 200, description = "a page of groups", body = ListDto<GroupDto>)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn list(
    service: Service,
    caller: Caller,
    Input(req): Input<ListGroupsIn>,
) -> Result<HttpResponse, ApiError> {
    let ListGroupsIn { page } = req;
    let groups = service.list_groups(&caller.0, page).await?;
    let viewer = caller.viewer();
    Ok(page_json(&groups, |out, g| {
        wire::write_group(out, g, viewer)
    }))
}

/// Create a group; the caller becomes its owner and a member.
#[utoipa::path(
    post, path = "/v1/groups", tag = "groups", operation_id = "create_group",
    params(crate::idempotency::IdempotencyKeyHeader),
    request_body(content(
        (CreateGroupIn = "application/x-www-form-urlencoded"),
        (CreateGroupIn = "application/json"),
    )),
    responses(
        (
            status = 201, description = "the group", body = GroupDto,
            headers(("Location" = String, description = "the group's URL")),
        ),
        (
            status = 403,
            description = "`contact_blocked`: one of contact_ids blocked the caller",
            body = ErrorBody,
        ),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn create(
    service: Service,
    caller: Caller,
    http: HttpRequest,
    Input(req): Input<CreateGroupIn>,
) -> Result<HttpResponse, ApiError> {
    let CreateGroupIn {
        name,
        description,
        avatar_url,
        contact_ids,
    } = req;
    let request = NewGroupRequest {
        name,
        description,
        avatar_url,
        contact_ids,
    };
    let viewer = caller.viewer();
    let answer = move |group: &Group| founded(group, viewer);
    idempotency::post(&service, &caller.0, &http, answer, |completion| {
        service.create_group(&caller.0, request, completion)
    })
    .await
}

/// The answer to a new group, for its creator `viewer`.
fn founded(group: &Group, viewer: Viewer) -> StoredResponse {
    created_json(
        format!("/v1/groups/{}", group.id()),
        wire::group(group, viewer),
    )
}

/// Get one group.
#[utoipa::path(
    get, path = "/v1/groups/{id}", tag = "groups", operation_id = "get_group",
    params(("id" = String, Path, description = "the group id")),
    responses((status = 200, description = "the group", body = GroupDto)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn get(
    service: Service,
    caller: Caller,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: GroupId = path_id(&path)?;
    let group = service.group(&caller.0, id).await?;
    Ok(ok_json(wire::group(&group, caller.viewer())))
}

/// Page through the group's members, oldest first (members only).
#[utoipa::path(
    get, path = "/v1/groups/{id}/members", tag = "groups", operation_id = "list_group_members",
    params(("id" = String, Path, description = "the group id"), ListMembersIn),
    responses((status = 200, description = "a page of members", body = ListDto<GroupMemberDto>)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn members(
    service: Service,
    caller: Caller,
    path: web::Path<String>,
    Input(req): Input<ListMembersIn>,
) -> Result<HttpResponse, ApiError> {
    let id: GroupId = path_id(&path)?;
    let ListMembersIn { page } = req;
    let members = service.group_members(&caller.0, id, page).await?;
    let viewer = caller.viewer();
    Ok(page_json(&members, |out, m| {
        wire::write_member(out, m, viewer)
    }))
}

/// Rename, describe, make or unmake admins (owner); add members and
/// remove plain ones (owner and admins); any member may remove themself.
#[utoipa::path(
    put, path = "/v1/groups/{id}", tag = "groups", operation_id = "update_group",
    params(("id" = String, Path, description = "the group id")),
    request_body(content(
        (UpdateGroupIn = "application/x-www-form-urlencoded"),
        (UpdateGroupIn = "application/json"),
    )),
    responses(
        (status = 200, description = "the group", body = GroupDto),
        (status = 403, description = "the caller's role does not allow the change \
            (forbidden), or one added blocked the caller (contact_blocked)", body = ErrorBody),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn update(
    service: Service,
    caller: Caller,
    path: web::Path<String>,
    Input(req): Input<UpdateGroupIn>,
) -> Result<HttpResponse, ApiError> {
    let UpdateGroupIn {
        name,
        description,
        avatar_url,
        add_contact_ids,
        remove_contact_ids,
        add_admin_ids,
        remove_admin_ids,
    } = req;
    let id: GroupId = path_id(&path)?;
    let update = GroupUpdate {
        name,
        description,
        avatar_url,
        add_contact_ids,
        remove_contact_ids,
        add_admin_ids,
        remove_admin_ids,
    };
    let group = service.update_group(&caller.0, id, update).await?;
    Ok(ok_json(wire::group(&group, caller.viewer())))
}

/// Delete a group and its conversations (owner).
#[utoipa::path(
    delete, path = "/v1/groups/{id}", tag = "groups", operation_id = "delete_group",
    params(("id" = String, Path, description = "the group id")),
    responses(
        (status = 204, description = "deleted"),
        (status = 403, description = "only an owner may delete the group", body = ErrorBody),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn delete(
    service: Service,
    caller: Caller,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: GroupId = path_id(&path)?;
    service.delete_group(&caller.0, id).await?;
    Ok(no_content())
}
