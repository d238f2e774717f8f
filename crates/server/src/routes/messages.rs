//! `/v1/messages`: list, send, get, edit / react / attach, unreact, delete.

use actix_web::{web, HttpResponse};
use confab_domain::{
    check_attachment_count, ConversationId, FileSize, FileType, FileUrl, Filename, MessageId,
    MessageText, NewAttachment, ReactionName,
};
use confab_service::{Confab, MessageUpdate, SendMessage};

use super::{created, no_content, ok, path_id, resource};
use crate::auth::Caller;
use crate::dto::{ListDto, MessageDto};
use crate::error::ApiError;
use crate::params::{Malformed, Params};

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

/// `attachments[i][file_url|filename|file_type|file_size]`, at most 10.
fn attachments(params: &mut Params) -> Result<Vec<NewAttachment>, ApiError> {
    let Some(items) = params.optional_objects("attachments")? else {
        return Ok(Vec::new());
    };
    check_attachment_count(items.len())?;
    items
        .into_iter()
        .map(|mut item| {
            item.allow(&["file_url", "filename", "file_type", "file_size"])?;
            let file_url = item.required_str("file_url")?;
            let file_url = FileUrl::new(file_url).map_err(|e| item.domain(e))?;
            let filename = item.required_str("filename")?;
            let filename = Filename::new(filename).map_err(|e| item.domain(e))?;
            let file_type = match item.optional_str("file_type")? {
                Some(t) => FileType::new(t).map_err(|e| item.domain(e))?,
                None => FileType::octet_stream(),
            };
            let file_size = match item.optional_int("file_size")? {
                Some(n) => Some(FileSize::new(n).map_err(|e| item.domain(e))?),
                None => None,
            };
            item.finish()?;
            Ok(NewAttachment {
                filename,
                file_url,
                file_type,
                file_size,
            })
        })
        .collect()
}

/// `reactions[<name>][]=<username>`; a bad name is a 400 on `reactions`.
fn reactions(params: &mut Params) -> Result<Vec<(ReactionName, Vec<String>)>, ApiError> {
    params
        .optional_named_lists("reactions")?
        .unwrap_or_default()
        .into_iter()
        .map(|(name, usernames)| Ok((ReactionName::new(name)?, usernames)))
        .collect()
}

#[tracing::instrument(level = "debug", skip_all)]
async fn list(
    service: web::Data<Confab>,
    caller: Caller,
    mut params: Params,
) -> Result<HttpResponse, ApiError> {
    params.allow(&[
        "conversation_id",
        "limit",
        "starting_after",
        "ending_before",
    ])?;
    let conversation_id: Option<ConversationId> =
        params.optional_id("conversation_id", Malformed::NotFound)?;
    let page = params.page::<MessageId>()?;
    params.finish()?;
    let messages = service
        .list_messages(&caller.0, conversation_id, page)
        .await?;
    Ok(ok(&ListDto::from_paged(messages, |m| MessageDto::from(&m))))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn send(
    service: web::Data<Confab>,
    caller: Caller,
    mut params: Params,
) -> Result<HttpResponse, ApiError> {
    params.allow(&["conversation_id", "message", "attachments"])?;
    let conversation_id = params.required_id("conversation_id", Malformed::NotFound)?;
    let text = MessageText::new(params.required_str("message")?)?;
    let attachments = attachments(&mut params)?;
    params.finish()?;
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
    params: Params,
) -> Result<HttpResponse, ApiError> {
    params.finish()?;
    let id: MessageId = path_id(&path)?;
    let message = service.message(&caller.0, id).await?;
    Ok(ok(&MessageDto::from(&message)))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn update(
    service: web::Data<Confab>,
    caller: Caller,
    path: web::Path<String>,
    mut params: Params,
) -> Result<HttpResponse, ApiError> {
    params.allow(&["message", "reactions", "attachments"])?;
    let text = params
        .optional_str("message")?
        .map(MessageText::new)
        .transpose()?;
    let reactions = reactions(&mut params)?;
    let attachments = attachments(&mut params)?;
    params.finish()?;
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
    params: Params,
) -> Result<HttpResponse, ApiError> {
    params.finish()?;
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
    params: Params,
) -> Result<HttpResponse, ApiError> {
    params.finish()?;
    let (id, name) = path.into_inner();
    let id: MessageId = path_id(&id)?;
    let name = ReactionName::new(name).map_err(|_| ApiError::not_found(None))?;
    let message = service.remove_reaction(&caller.0, id, name).await?;
    Ok(ok(&MessageDto::from(&message)))
}
