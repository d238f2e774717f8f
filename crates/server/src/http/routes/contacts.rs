//! `/v1/contacts`: oneself, another contact, and finding one by username.

use crate::http::service::Service;
use actix_web::{web, HttpResponse};
use confab_domain::{ContactId, ContactProfilePatch};

use super::{endpoint, ok_json, path_id, Endpoint};
use crate::http::auth::Caller;
use crate::http::dto::{ContactDto, ListDto};
use crate::http::error::ApiError;
use crate::http::requests::contacts::{FindContactsIn, UpdateMeIn};
use crate::http::requests::{Input, NoParams};
use crate::http::wire;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        endpoint!(find, __path_find),
        endpoint!(me, __path_me),
        endpoint!(update_me, __path_update_me),
        endpoint!(get, __path_get),
    ]
}

/// `?username=<name>` (required): a list of zero or one, case-insensitive.
#[utoipa::path(
    get, path = "/v1/contacts", tag = "contacts", operation_id = "find_contacts",
    params(FindContactsIn),
    responses((status = 200, description = "the contact with that username, if any", body = ListDto<ContactDto>)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn find(
    service: Service,
    caller: Caller,
    Input(req): Input<FindContactsIn>,
) -> Result<HttpResponse, ApiError> {
    let FindContactsIn { username } = req;
    let found = service.find_contacts(&caller.0, username.as_str()).await?;
    Ok(ok_json(wire::list(false, &found, wire::write_contact)))
}

/// The caller.
#[utoipa::path(
    get, path = "/v1/contacts/me", tag = "contacts", operation_id = "get_me",
    responses((status = 200, description = "the caller", body = ContactDto)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn me(caller: Caller, _: Input<NoParams>) -> Result<HttpResponse, ApiError> {
    Ok(ok_json(wire::contact(&caller.0)))
}

/// Change the caller's phone number or avatar.
#[utoipa::path(
    put, path = "/v1/contacts/me", tag = "contacts", operation_id = "update_me",
    request_body(content(
        (UpdateMeIn = "application/x-www-form-urlencoded"),
        (UpdateMeIn = "application/json"),
    )),
    responses((status = 200, description = "the caller", body = ContactDto)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn update_me(
    service: Service,
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
    Ok(ok_json(wire::contact(&contact)))
}

/// Get one contact.
#[utoipa::path(
    get, path = "/v1/contacts/{id}", tag = "contacts", operation_id = "get_contact",
    params(("id" = String, Path, description = "the contact id")),
    responses((status = 200, description = "the contact", body = ContactDto)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn get(
    service: Service,
    caller: Caller,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: ContactId = path_id(&path)?;
    let contact = service.contact(&caller.0, id).await?;
    Ok(ok_json(wire::contact(&contact)))
}
