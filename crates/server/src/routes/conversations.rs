//! `/v1/conversations`: list, create, open, update, delete.

use actix_web::{web, HttpResponse};
use confab_domain::ConversationId;
use confab_service::{Confab, ConversationFilter};

use super::{created, no_content, ok, path_id, resource};
use crate::auth::Caller;
use crate::dto::{ConversationDto, ListDto};
use crate::error::ApiError;
use crate::requests::conversations::{
    CreateConversationIn, ListConversationsIn, UpdateConversationIn,
};
use crate::requests::{Input, NoParams};

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
    Input(req): Input<ListConversationsIn>,
) -> Result<HttpResponse, ApiError> {
    let ListConversationsIn {
        muted,
        archived,
        pinned,
        group_id,
        page,
    } = req;
    let filter = ConversationFilter {
        muted,
        archived,
        pinned,
        group_id,
    };
    let conversations = service.list_conversations(&caller.0, filter, page).await?;
    Ok(ok(&ListDto::from_paged(conversations, |c| {
        ConversationDto::from(&c)
    })))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn create(
    service: web::Data<Confab>,
    caller: Caller,
    Input(req): Input<CreateConversationIn>,
) -> Result<HttpResponse, ApiError> {
    let CreateConversationIn { target } = req;
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
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: ConversationId = path_id(&path)?;
    let view = service.open_conversation(&caller.0, id).await?;
    Ok(ok(&ConversationDto::from(&view)))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn update(
    service: web::Data<Confab>,
    caller: Caller,
    path: web::Path<String>,
    Input(req): Input<UpdateConversationIn>,
) -> Result<HttpResponse, ApiError> {
    let UpdateConversationIn {
        pinned_message_id,
        is_pinned,
        is_muted,
        archived_at,
    } = req;
    let id: ConversationId = path_id(&path)?;
    let view = service
        .update_conversation(
            &caller.0,
            id,
            pinned_message_id,
            is_pinned,
            is_muted,
            archived_at,
        )
        .await?;
    Ok(ok(&ConversationDto::from(&view)))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn delete(
    service: web::Data<Confab>,
    caller: Caller,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: ConversationId = path_id(&path)?;
    service.delete_conversation(&caller.0, id).await?;
    Ok(no_content())
}
