//! `/v1/contacts`: oneself, another contact, finding one by username, and
//! blocking one (docs/api.md "Blocks and reports").

use crate::service::Service;
use actix_web::{web, HttpRequest, HttpResponse};
use confab_domain::{Block, ContactId, ContactProfilePatch, Viewer};
use confab_service::{Made, StoredResponse};

use super::{endpoint, made_json, no_content, ok_json, page_json, path_id, Endpoint};
use crate::auth::Caller;
use crate::dto::{BlockDto, ContactDto, ListDto};
use crate::error::{ApiError, ErrorBody};
use crate::idempotency;
use crate::requests::contacts::{FindContactsIn, ListBlockedIn, UpdateMeIn};
use crate::requests::{Input, NoParams};
use crate::wire;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        endpoint!(find, __path_find),
        endpoint!(me, __path_me),
        endpoint!(update_me, __path_update_me),
        endpoint!(blocked, __path_blocked),
        endpoint!(get, __path_get),
        endpoint!(block, __path_block),
        endpoint!(get_block, __path_get_block),
        endpoint!(unblock, __path_unblock),
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
    let viewer = caller.viewer();
    Ok(ok_json(wire::list(false, &found, |out, c| {
        wire::write_contact(out, c, viewer)
    })))
}

/// The caller.
#[utoipa::path(
    get, path = "/v1/contacts/me", tag = "contacts", operation_id = "get_me",
    responses((status = 200, description = "the caller", body = ContactDto)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn me(caller: Caller, _: Input<NoParams>) -> Result<HttpResponse, ApiError> {
    Ok(ok_json(wire::contact(&caller.0, caller.viewer())))
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
    Ok(ok_json(wire::contact(&contact, caller.viewer())))
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
    Ok(ok_json(wire::contact(&contact, caller.viewer())))
}

/// The caller's blocks, newest first; a cursor is a blocked contact's id.
#[utoipa::path(
    get, path = "/v1/contacts/blocked", tag = "contacts", operation_id = "list_blocked",
    params(ListBlockedIn),
    responses((status = 200, description = "a page of blocks", body = ListDto<BlockDto>)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn blocked(
    service: Service,
    caller: Caller,
    Input(req): Input<ListBlockedIn>,
) -> Result<HttpResponse, ApiError> {
    let ListBlockedIn { page } = req;
    let blocks = service.blocks(&caller.0, page).await?;
    let viewer = caller.viewer();
    Ok(page_json(&blocks, |out, b| {
        wire::write_block(out, b, viewer)
    }))
}

/// Block a contact: neither of you writes to the other in your direct
/// conversations, and they cannot add you to a group. They are not told.
#[utoipa::path(
    post, path = "/v1/contacts/{id}/block", tag = "contacts", operation_id = "block_contact",
    params(
        ("id" = String, Path, description = "the contact to block"),
        crate::idempotency::IdempotencyKeyHeader,
    ),
    request_body(description = "no parameters (an empty body)", content(
        (NoParams = "application/x-www-form-urlencoded"),
        (NoParams = "application/json"),
    )),
    responses(
        (
            status = 201, description = "the block", body = BlockDto,
            headers(("Location" = String, description = "the block's URL")),
        ),
        (status = 200, description = "already blocked: the block as it was", body = BlockDto),
        (status = 400, description = "oneself", body = ErrorBody),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn block(
    service: Service,
    caller: Caller,
    http: HttpRequest,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: ContactId = path_id(&path)?;
    let viewer = caller.viewer();
    let answer = move |made: &Made<Block>| blocked_answer(made, viewer);
    idempotency::post(&service, &caller.0, &http, answer, |completion| {
        service.block(&caller.0, id, completion)
    })
    .await
}

/// 201 with the new block, or 200 with the one there already.
fn blocked_answer(made: &Made<Block>, viewer: Viewer) -> StoredResponse {
    made_json(
        format!("/v1/contacts/{}/block", made.item.contact.id()),
        wire::block(&made.item, viewer),
        made.created,
    )
}

/// The caller's block of a contact (404 when there is none).
#[utoipa::path(
    get, path = "/v1/contacts/{id}/block", tag = "contacts", operation_id = "get_block",
    params(("id" = String, Path, description = "the contact blocked")),
    responses((status = 200, description = "the block", body = BlockDto)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn get_block(
    service: Service,
    caller: Caller,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: ContactId = path_id(&path)?;
    let block = service.block_of(&caller.0, id).await?;
    Ok(ok_json(wire::block(&block, caller.viewer())))
}

/// Unblock a contact (404 when not blocked).
#[utoipa::path(
    delete, path = "/v1/contacts/{id}/block", tag = "contacts", operation_id = "unblock_contact",
    params(("id" = String, Path, description = "the contact blocked")),
    responses((status = 204, description = "unblocked")),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn unblock(
    service: Service,
    caller: Caller,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: ContactId = path_id(&path)?;
    service.unblock(&caller.0, id).await?;
    Ok(no_content())
}
