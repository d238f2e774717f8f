//! `/v1/contacts`: oneself, another contact, and finding one by username.

use actix_web::{web, HttpResponse};
use confab_domain::{ContactId, ContactProfilePatch};
use confab_service::Confab;

use super::{ok, path_id, resource};
use crate::auth::Caller;
use crate::dto::{ContactDto, ListDto};
use crate::error::ApiError;
use crate::requests::contacts::{FindContactsIn, UpdateMeIn};
use crate::requests::{Input, NoParams};

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
    Input(req): Input<FindContactsIn>,
) -> Result<HttpResponse, ApiError> {
    let FindContactsIn { username } = req;
    let found = service.find_contacts(&caller.0, username.as_str()).await?;
    Ok(ok(&ListDto {
        has_more: false,
        data: found.iter().map(ContactDto::from).collect(),
    }))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn me(caller: Caller, _: Input<NoParams>) -> Result<HttpResponse, ApiError> {
    Ok(ok(&ContactDto::from(&caller.0)))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn update_me(
    service: web::Data<Confab>,
    caller: Caller,
    Input(req): Input<UpdateMeIn>,
) -> Result<HttpResponse, ApiError> {
    let UpdateMeIn {
        phone_number,
        avatar_url,
    } = req;
    let patch = ContactProfilePatch {
        phone_number,
        avatar_url,
    };
    let contact = service.update_me(&caller.0, patch).await?;
    Ok(ok(&ContactDto::from(&contact)))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn get(
    service: web::Data<Confab>,
    caller: Caller,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: ContactId = path_id(&path)?;
    let contact = service.contact(&caller.0, id).await?;
    Ok(ok(&ContactDto::from(&contact)))
}
