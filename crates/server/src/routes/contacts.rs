//! `/v1/contacts`: oneself, another contact, and finding one by username.

use actix_web::{web, HttpResponse};
use confab_domain::{AvatarUrl, ContactId, ContactProfilePatch, PhoneNumber, Username};
use confab_service::Confab;

use super::{ok, path_id, resource};
use crate::auth::Caller;
use crate::dto::{ContactDto, ListDto};
use crate::error::ApiError;
use crate::params::Params;

pub fn routes(cfg: &mut web::ServiceConfig) {
    // `/contacts/me` before `/contacts/{id}`, which would match it too.
    cfg.service(resource("/contacts", "GET").route(web::get().to(find)))
        .service(
            resource("/contacts/me", "GET, PUT")
                .route(web::get().to(me))
                .route(web::put().to(update_me)),
        )
        .service(resource("/contacts/{id}", "GET").route(web::get().to(get)));
}

/// `?username=<name>` (required): a list of zero or one, case-insensitive.
#[tracing::instrument(level = "debug", skip_all)]
async fn find(
    service: web::Data<Confab>,
    caller: Caller,
    mut params: Params,
) -> Result<HttpResponse, ApiError> {
    params.allow(&["username"])?;
    let username = Username::new(params.required_str("username")?)?;
    params.finish()?;
    let found = service.find_contacts(&caller.0, username.as_str()).await?;
    Ok(ok(&ListDto {
        has_more: false,
        data: found.iter().map(ContactDto::from).collect(),
    }))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn me(caller: Caller, params: Params) -> Result<HttpResponse, ApiError> {
    params.finish()?;
    Ok(ok(&ContactDto::from(&caller.0)))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn update_me(
    service: web::Data<Confab>,
    caller: Caller,
    mut params: Params,
) -> Result<HttpResponse, ApiError> {
    params.allow(&["phone_number", "avatar_url"])?;
    let patch = ContactProfilePatch {
        phone_number: params
            .optional_str("phone_number")?
            .map(PhoneNumber::new)
            .transpose()?,
        avatar_url: params
            .optional_str("avatar_url")?
            .map(AvatarUrl::new)
            .transpose()?,
    };
    params.finish()?;
    let contact = service.update_me(&caller.0, patch).await?;
    Ok(ok(&ContactDto::from(&contact)))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn get(
    service: web::Data<Confab>,
    caller: Caller,
    path: web::Path<String>,
    params: Params,
) -> Result<HttpResponse, ApiError> {
    params.finish()?;
    let id: ContactId = path_id(&path)?;
    let contact = service.contact(&caller.0, id).await?;
    Ok(ok(&ContactDto::from(&contact)))
}
