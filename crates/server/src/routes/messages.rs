//! `/v1/messages`: list, send, get, edit / react / attach, unreact, delete.

use actix_web::{web, HttpResponse};
use confab_domain::{MessageId, ReactionName};
use confab_service::{Confab, MessageUpdate, SendMessage};

use super::{created, no_content, ok, path_id, resource};
use crate::auth::Caller;
use crate::dto::{ListDto, MessageDto};
use crate::error::ApiError;
use crate::requests::messages::{ListMessagesIn, SendMessageIn, UpdateMessageIn};
use crate::requests::{Input, NoParams};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        resource("/messages", "GET, POST")
            .route(web::get().to(list))
            .route(web::post().to(send)),
    )
    .service(
        resource("/messages/{id}", "GET, PUT, DELETE")
            .route(web::get().to(get))
            .route(web::put().to(update))
            .route(web::delete().to(delete)),
    )
    .service(
        resource("/messages/{id}/reactions/{name}", "DELETE").route(web::delete().to(unreact)),
    );
}

#[tracing::instrument(level = "debug", skip_all)]
async fn list(
    service: web::Data<Confab>,
    caller: Caller,
    Input(req): Input<ListMessagesIn>,
) -> Result<HttpResponse, ApiError> {
    let ListMessagesIn {
        conversation_id,
        page,
    } = req;
    let messages = service
        .list_messages(&caller.0, conversation_id, page)
        .await?;
    Ok(ok(&ListDto::from_paged(messages, |m| MessageDto::from(&m))))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn send(
    service: web::Data<Confab>,
    caller: Caller,
    Input(req): Input<SendMessageIn>,
) -> Result<HttpResponse, ApiError> {
    let SendMessageIn {
        conversation_id,
        message: text,
        attachments,
    } = req;
    let message = service
        .send_message(
            &caller.0,
            SendMessage {
                conversation_id,
                text,
                attachments,
            },
        )
        .await?;
    Ok(created(
        format!("/v1/messages/{}", message.id),
        &MessageDto::from(&message),
    ))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn get(
    service: web::Data<Confab>,
    caller: Caller,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: MessageId = path_id(&path)?;
    let message = service.message(&caller.0, id).await?;
    Ok(ok(&MessageDto::from(&message)))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn update(
    service: web::Data<Confab>,
    caller: Caller,
    path: web::Path<String>,
    Input(req): Input<UpdateMessageIn>,
) -> Result<HttpResponse, ApiError> {
    let UpdateMessageIn {
        message: text,
        reactions,
        attachments,
    } = req;
    let id: MessageId = path_id(&path)?;
    let update = MessageUpdate {
        text,
        reactions,
        attachments,
    };
    let message = service.update_message(&caller.0, id, update).await?;
    Ok(ok(&MessageDto::from(&message)))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn delete(
    service: web::Data<Confab>,
    caller: Caller,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: MessageId = path_id(&path)?;
    service.delete_message(&caller.0, id).await?;
    Ok(no_content())
}

/// Takes back the caller's own reaction; a name that cannot exist is 404
/// like any other malformed path segment.
#[tracing::instrument(level = "debug", skip_all)]
async fn unreact(
    service: web::Data<Confab>,
    caller: Caller,
    path: web::Path<(String, String)>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let (id, name) = path.into_inner();
    let id: MessageId = path_id(&id)?;
    let name = ReactionName::new(name).map_err(|_| ApiError::not_found(None))?;
    let message = service.remove_reaction(&caller.0, id, name).await?;
    Ok(ok(&MessageDto::from(&message)))
}
