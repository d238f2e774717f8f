//! `/v1/groups`: the members group conversations are shared by.

use actix_web::{web, HttpResponse};
use confab_domain::{AvatarUrl, GroupDescription, GroupId, GroupName};
use confab_service::{Confab, GroupUpdate, NewGroupRequest};

use super::{created, no_content, ok, path_id, resource};
use crate::auth::Caller;
use crate::dto::{GroupDto, ListDto};
use crate::error::ApiError;
use crate::params::Params;

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

/// `description` and `avatar_url`, shared by create and update.
fn details(params: &mut Params) -> Result<(Option<GroupDescription>, Option<AvatarUrl>), ApiError> {
    let description = params
        .optional_str("description")?
        .map(GroupDescription::new)
        .transpose()?;
    let avatar_url = params
        .optional_str("avatar_url")?
        .map(AvatarUrl::new)
        .transpose()?;
    Ok((description, avatar_url))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn list(
    service: web::Data<Confab>,
    caller: Caller,
    mut params: Params,
) -> Result<HttpResponse, ApiError> {
    params.allow(&["limit", "starting_after", "ending_before"])?;
    let page = params.page::<GroupId>()?;
    params.finish()?;
    let groups = service.list_groups(&caller.0, page).await?;
    Ok(ok(&ListDto::from_paged(groups, |g| GroupDto::from(&g))))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn create(
    service: web::Data<Confab>,
    caller: Caller,
    mut params: Params,
) -> Result<HttpResponse, ApiError> {
    params.allow(&["name", "description", "avatar_url", "contact_ids"])?;
    let name = GroupName::new(params.required_str("name")?)?;
    let (description, avatar_url) = details(&mut params)?;
    let contact_ids = params.id_list("contact_ids")?;
    params.finish()?;
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
    params: Params,
) -> Result<HttpResponse, ApiError> {
    params.finish()?;
    let id: GroupId = path_id(&path)?;
    let group = service.group(&caller.0, id).await?;
    Ok(ok(&GroupDto::from(&group)))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn update(
    service: web::Data<Confab>,
    caller: Caller,
    path: web::Path<String>,
    mut params: Params,
) -> Result<HttpResponse, ApiError> {
    params.allow(&[
        "name",
        "description",
        "avatar_url",
        "add_contact_ids",
        "remove_contact_ids",
    ])?;
    let name = params
        .optional_str("name")?
        .map(GroupName::new)
        .transpose()?;
    let (description, avatar_url) = details(&mut params)?;
    let add_contact_ids = params.id_list("add_contact_ids")?;
    let remove_contact_ids = params.id_list("remove_contact_ids")?;
    params.finish()?;
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
    params: Params,
) -> Result<HttpResponse, ApiError> {
    params.finish()?;
    let id: GroupId = path_id(&path)?;
    service.delete_group(&caller.0, id).await?;
    Ok(no_content())
}
