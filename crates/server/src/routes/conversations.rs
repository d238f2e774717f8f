//! `/v1/conversations`: list, create, open, update, delete.

use actix_web::{web, HttpResponse};
use confab_domain::{ContactId, ConversationId, GroupId, MessageId, Timestamp};
use confab_service::{Confab, ConversationFilter, ConversationTarget};

use super::{created, no_content, ok, path_id, resource};
use crate::auth::Caller;
use crate::dto::{ConversationDto, ListDto};
use crate::error::ApiError;
use crate::params::{Malformed, Params};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        resource("/conversations", "GET, POST")
            .route(web::get().to(list))
            .route(web::post().to(create)),
    )
    .service(
        resource("/conversations/{id}", "GET, PUT, DELETE")
            .route(web::get().to(open))
            .route(web::put().to(update))
            .route(web::delete().to(delete)),
    );
}

#[tracing::instrument(level = "debug", skip_all)]
async fn list(
    service: web::Data<Confab>,
    caller: Caller,
    mut params: Params,
) -> Result<HttpResponse, ApiError> {
    params.allow(&[
        "muted",
        "archived",
        "pinned",
        "group_id",
        "limit",
        "starting_after",
        "ending_before",
    ])?;
    let filter = ConversationFilter {
        muted: params.optional_bool("muted")?,
        archived: params.optional_bool("archived")?,
        pinned: params.optional_bool("pinned")?,
        group_id: params.optional_id::<GroupId>("group_id", Malformed::NotFound)?,
    };
    let page = params.page::<ConversationId>()?;
    params.finish()?;
    let conversations = service.list_conversations(&caller.0, filter, page).await?;
    Ok(ok(&ListDto::from_paged(conversations, |c| {
        ConversationDto::from(&c)
    })))
}

/// Exactly one of `contact_id` and `group_id`: neither is 400
/// `parameter_missing` on `contact_id`, both is 400 `parameter_invalid` on
/// `group_id`. A malformed id is the same 404 as an unknown one.
#[tracing::instrument(level = "debug", skip_all)]
async fn create(
    service: web::Data<Confab>,
    caller: Caller,
    mut params: Params,
) -> Result<HttpResponse, ApiError> {
    params.allow(&["contact_id", "group_id"])?;
    let target = match (params.has("contact_id"), params.has("group_id")) {
        (true, true) => {
            return Err(ApiError::invalid(
                "group_id",
                "give either contact_id or group_id, not both",
            ))
        }
        (false, false) => {
            return Err(
                ApiError::missing("contact_id").with_message("contact_id or group_id is required")
            )
        }
        (true, false) => ConversationTarget::Contact(
            params.required_id::<ContactId>("contact_id", Malformed::NotFound)?,
        ),
        (false, true) => ConversationTarget::Group(
            params.required_id::<GroupId>("group_id", Malformed::NotFound)?,
        ),
    };
    params.finish()?;
    let view = service.create_conversation(&caller.0, target).await?;
    Ok(created(
        format!("/v1/conversations/{}", view.conversation.id),
        &ConversationDto::from(&view),
    ))
}

/// Getting a conversation opens it: `last_opened_at` and `read_at` change.
#[tracing::instrument(level = "debug", skip_all)]
async fn open(
    service: web::Data<Confab>,
    caller: Caller,
    path: web::Path<String>,
    params: Params,
) -> Result<HttpResponse, ApiError> {
    params.finish()?;
    let id: ConversationId = path_id(&path)?;
    let view = service.open_conversation(&caller.0, id).await?;
    Ok(ok(&ConversationDto::from(&view)))
}

/// `pinned_message_id` (id; empty or null unpins), `is_pinned`, `is_muted`,
/// `archived_at` (Unix seconds; empty or null unarchives).
#[tracing::instrument(level = "debug", skip_all)]
async fn update(
    service: web::Data<Confab>,
    caller: Caller,
    path: web::Path<String>,
    mut params: Params,
) -> Result<HttpResponse, ApiError> {
    params.allow(&["pinned_message_id", "is_pinned", "is_muted", "archived_at"])?;
    let pinned =
        params.optional_clearable_id::<MessageId>("pinned_message_id", Malformed::Invalid)?;
    let is_pinned = params.optional_bool("is_pinned")?;
    let is_muted = params.optional_bool("is_muted")?;
    let archived_at = params
        .optional_clearable_int("archived_at")?
        .map(|at| at.map(Timestamp::from_secs));
    params.finish()?;
    let id: ConversationId = path_id(&path)?;
    let view = service
        .update_conversation(&caller.0, id, pinned, is_pinned, is_muted, archived_at)
        .await?;
    Ok(ok(&ConversationDto::from(&view)))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn delete(
    service: web::Data<Confab>,
    caller: Caller,
    path: web::Path<String>,
    params: Params,
) -> Result<HttpResponse, ApiError> {
    params.finish()?;
    let id: ConversationId = path_id(&path)?;
    service.delete_conversation(&caller.0, id).await?;
    Ok(no_content())
}
