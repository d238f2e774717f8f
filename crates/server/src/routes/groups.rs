//! `/v1/groups`: the members group conversations are shared by.

use actix_web::{web, HttpResponse};
use confab_domain::GroupId;
use confab_service::{Confab, GroupUpdate, NewGroupRequest};

use super::{created, no_content, ok, path_id, resource};
use crate::auth::Caller;
use crate::dto::{GroupDto, ListDto};
use crate::error::ApiError;
use crate::requests::groups::{CreateGroupIn, ListGroupsIn, UpdateGroupIn};
use crate::requests::{Input, NoParams};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        resource("/groups", "GET, POST")
            .route(web::get().to(list))
            .route(web::post().to(create)),
    )
    .service(
        resource("/groups/{id}", "GET, PUT, DELETE")
            .route(web::get().to(get))
            .route(web::put().to(update))
            .route(web::delete().to(delete)),
    );
}

#[tracing::instrument(level = "debug", skip_all)]
async fn list(
    service: web::Data<Confab>,
    caller: Caller,
    Input(req): Input<ListGroupsIn>,
) -> Result<HttpResponse, ApiError> {
    let ListGroupsIn { page } = req;
    let groups = service.list_groups(&caller.0, page).await?;
    Ok(ok(&ListDto::from_paged(groups, |g| GroupDto::from(&g))))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn create(
    service: web::Data<Confab>,
    caller: Caller,
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
    let group = service.create_group(&caller.0, request).await?;
    Ok(created(
        format!("/v1/groups/{}", group.id),
        &GroupDto::from(&group),
    ))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn get(
    service: web::Data<Confab>,
    caller: Caller,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: GroupId = path_id(&path)?;
    let group = service.group(&caller.0, id).await?;
    Ok(ok(&GroupDto::from(&group)))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn update(
    service: web::Data<Confab>,
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
    } = req;
    let id: GroupId = path_id(&path)?;
    let update = GroupUpdate {
        name,
        description,
        avatar_url,
        add_contact_ids,
        remove_contact_ids,
    };
    let group = service.update_group(&caller.0, id, update).await?;
    Ok(ok(&GroupDto::from(&group)))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn delete(
    service: web::Data<Confab>,
    caller: Caller,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: GroupId = path_id(&path)?;
    service.delete_group(&caller.0, id).await?;
    Ok(no_content())
}
