//! `/v1/messages`: list, send, get, edit / react / attach, unreact, delete.

use std::sync::Arc;

use actix_web::{web, HttpRequest, HttpResponse};
use confab_domain::{Cursor, Page, Timestamp};
use confab_domain::{Message, MessageId, ReactionName};
use confab_service::{MessageList, MessageUpdate, SearchFilter, StoredResponse};

use super::{created_text, endpoint, no_content, ok_json, ok_text, path_id, Endpoint};
use crate::auth::Caller;
use crate::dto::{EditDto, ListDto, MessageDto};
use crate::error::{ApiError, ErrorBody};
use crate::idempotency;
use crate::links::{links_of, FileLinks};
use crate::payloads::RenderedOnce;
use crate::requests::messages::{
    ListEditsIn, ListMessagesIn, SearchMessagesIn, SendMessageIn, UpdateMessageIn,
};
use crate::requests::{Input, NoParams};
use crate::service::Service;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        endpoint!(list, __path_list),
        endpoint!(send, __path_send),
        // Before `get`: `/v1/messages/search` is not a message's id.
        endpoint!(search, __path_search),
        endpoint!(get, __path_get),
        endpoint!(update, __path_update),
        endpoint!(delete, __path_delete),
        endpoint!(unreact, __path_unreact),
        endpoint!(edits, __path_edits),
    ]
}

/// List messages, newest first: of all the caller's conversations (thread
/// replies included), of one with `conversation_id` (thread replies only
/// with `include_replies=true`), or the replies of one thread with
/// `parent_id`.
#[utoipa::path(
    get, path = "/v1/messages", tag = "messages", operation_id = "list_messages",
    params(ListMessagesIn),
    responses(
        (status = 200, description = "a page of messages", body = ListDto<MessageDto>),
        (status = 404, description = "no such conversation (`conversation_id`) or thread \
            (`parent_id`) among the caller's", body = ErrorBody),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn list(
    service: Service,
    caller: Caller,
    links: FileLinks,
    Input(req): Input<ListMessagesIn>,
) -> Result<HttpResponse, ApiError> {
    let ListMessagesIn {
        conversation_id,
        parent_id,
        include_replies,
        page,
    } = req;
    let list = match (conversation_id, parent_id) {
        (Some(_), Some(_)) => {
            return Err(ApiError::invalid(
                "parent_id",
                "lists one thread, whose conversation it knows: give either parent_id or \
                 conversation_id, not both",
            ))
        }
        (Some(id), None) => MessageList::Conversation {
            id,
            include_replies: include_replies.unwrap_or(false),
        },
        (None, _) if include_replies.is_some() => {
            return Err(ApiError::invalid(
                "include_replies",
                "applies to one conversation's list: give it with conversation_id",
            ))
        }
        (None, Some(parent)) => MessageList::Thread(parent),
        (None, None) => MessageList::Feed,
    };
    let messages = service.list_messages(&caller.0, list, page).await?;
    Ok(ok_json(crate::wire::message_page(
        &messages,
        &links,
        caller.viewer(),
    )))
}

/// Search the caller's conversations: the messages whose text contains
/// every term of `query` (ignoring case, any script), newest first. A
/// contact runs at most `CONFAB_MAX_SEARCHES_PER_CONTACT` (default 2)
/// searches at once; a search that does not answer within the server's
/// time limit is 503.
#[utoipa::path(
    get, path = "/v1/messages/search", tag = "messages", operation_id = "search_messages",
    params(SearchMessagesIn),
    responses(
        (status = 200, description = "a page of messages", body = ListDto<MessageDto>),
        (status = 400, description = "`parameter_invalid` on `query`: a term under 3 \
            characters, or no term with 3 letters or digits in a row (punctuation alone \
            cannot be searched); or another parameter", body = ErrorBody),
        (status = 404, description = "no such conversation (`conversation_id`) among the \
            caller's", body = ErrorBody),
        (
            status = 429,
            description = "`too_many_searches`: the caller's contact already runs as many \
                searches at once as it may (default 2); or `rate_limited`",
            body = ErrorBody,
            headers(("Retry-After" = String, description = "seconds to wait")),
        ),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn search(
    service: Service,
    caller: Caller,
    links: FileLinks,
    Input(req): Input<SearchMessagesIn>,
) -> Result<HttpResponse, ApiError> {
    let SearchMessagesIn {
        query,
        conversation_id,
        sender_id,
        created_after,
        created_before,
        limit,
        starting_after,
    } = req;
    let filter = SearchFilter {
        conversation: conversation_id,
        sender: sender_id,
        // After second `s`: from the start of the next one.
        created_from: created_after.map(|s| Timestamp::from_secs(s.saturating_add(1))),
        created_until: created_before.map(Timestamp::from_secs),
    };
    let page = Page {
        limit: limit.unwrap_or_default(),
        cursor: starting_after.map(Cursor::After),
    };
    let messages = service
        .search_messages(&caller.0, query, filter, page)
        .await?;
    Ok(ok_json(crate::wire::message_page(
        &messages,
        &links,
        caller.viewer(),
    )))
}

/// Send a message to a conversation; the caller is the sender.
#[utoipa::path(
    post, path = "/v1/messages", tag = "messages", operation_id = "send_message",
    params(crate::idempotency::IdempotencyKeyHeader),
    request_body(content(
        (SendMessageIn = "application/x-www-form-urlencoded"),
        (SendMessageIn = "application/json"),
    )),
    responses(
        (
            status = 201, description = "the message", body = MessageDto,
            headers(("Location" = String, description = "the message's URL")),
        ),
        (
            status = 403,
            description = "`contact_blocked`: a direct conversation whose two members are in a \
                block",
            body = ErrorBody,
        ),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn send(
    service: Service,
    caller: Caller,
    http: HttpRequest,
    Input(SendMessageIn(send)): Input<SendMessageIn>,
) -> Result<HttpResponse, ApiError> {
    // The message's JSON is written once, for its event, and is also the
    // answer (kept for the idempotency key, and sent).
    let once = Arc::new(RenderedOnce::new(links_of(&http)));
    let answer = {
        let once = once.clone();
        let viewer = caller.viewer();
        move |message: &Message| sent(message, once.answer_json(message, viewer))
    };
    idempotency::post(&service, &caller.0, &http, answer, |completion| {
        service.send_message_rendered_by(&caller.0, send, completion, once)
    })
    .await
}

/// The answer to a send: 201 with the message's JSON.
fn sent(message: &Message, json: String) -> StoredResponse {
    created_text(format!("/v1/messages/{}", message.id()), json)
}

/// Get one message.
#[utoipa::path(
    get, path = "/v1/messages/{id}", tag = "messages", operation_id = "get_message",
    params(("id" = String, Path, description = "the message id")),
    responses((status = 200, description = "the message", body = MessageDto)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn get(
    service: Service,
    caller: Caller,
    links: FileLinks,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: MessageId = path_id(&path)?;
    let message = service.message(&caller.0, id).await?;
    Ok(ok_json(crate::wire::message(
        &message,
        &links,
        caller.viewer(),
    )))
}

/// Edit the text (sender only), add the caller's reactions, append
/// attachments (sender only). Only the submitted attributes change.
#[utoipa::path(
    put, path = "/v1/messages/{id}", tag = "messages", operation_id = "update_message",
    params(("id" = String, Path, description = "the message id")),
    request_body(content(
        (UpdateMessageIn = "application/x-www-form-urlencoded"),
        (UpdateMessageIn = "application/json"),
    )),
    responses(
        (status = 200, description = "the message", body = MessageDto),
        (status = 403, description = "only the sender may edit, mention or attach; nobody \
            reacts in someone else's name", body = ErrorBody),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn update(
    service: Service,
    caller: Caller,
    links: FileLinks,
    path: web::Path<String>,
    Input(req): Input<UpdateMessageIn>,
) -> Result<HttpResponse, ApiError> {
    let UpdateMessageIn {
        message: text,
        reactions,
        attachments,
        mentions,
    } = req;
    let id: MessageId = path_id(&path)?;
    let update = MessageUpdate {
        text,
        reactions,
        attachments,
        mentions,
    };
    // Written once, for the event (if anything changed) and the answer.
    let once = Arc::new(RenderedOnce::new(links));
    let message = service
        .update_message_rendered_by(&caller.0, id, update, once.clone())
        .await?;
    Ok(ok_text(once.answer_json(&message, caller.viewer())))
}

/// Delete a message for good, with its reactions and attachments (the
/// sender, or in a group's conversation its owner or an admin).
#[utoipa::path(
    delete, path = "/v1/messages/{id}", tag = "messages", operation_id = "delete_message",
    params(("id" = String, Path, description = "the message id")),
    responses(
        (status = 204, description = "deleted"),
        (status = 403, description = "only the sender, or the group's owner or an admin, may \
            delete", body = ErrorBody),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn delete(
    service: Service,
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
#[utoipa::path(
    delete, path = "/v1/messages/{id}/reactions/{name}", tag = "messages",
    operation_id = "remove_reaction",
    params(
        ("id" = String, Path, description = "the message id"),
        ("name" = String, Path, description = "the reaction name"),
    ),
    responses((status = 200, description = "the message", body = MessageDto)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn unreact(
    service: Service,
    caller: Caller,
    links: FileLinks,
    path: web::Path<(String, String)>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let (id, name) = path.into_inner();
    let id: MessageId = path_id(&id)?;
    let name = ReactionName::new(name).map_err(|_| ApiError::not_found(None))?;
    // Written once, for the event (if anything changed) and the answer.
    let once = Arc::new(RenderedOnce::new(links));
    let message = service
        .remove_reaction_rendered_by(&caller.0, id, name, once.clone())
        .await?;
    Ok(ok_text(once.answer_json(&message, caller.viewer())))
}

/// A message's earlier texts, newest first, to any member of its
/// conversation; they go with the message.
#[utoipa::path(
    get, path = "/v1/messages/{id}/edits", tag = "messages", operation_id = "list_message_edits",
    params(("id" = String, Path, description = "the message id"), ListEditsIn),
    responses((status = 200, description = "a page of earlier texts", body = ListDto<EditDto>)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn edits(
    service: Service,
    caller: Caller,
    path: web::Path<String>,
    Input(req): Input<ListEditsIn>,
) -> Result<HttpResponse, ApiError> {
    let id: MessageId = path_id(&path)?;
    let page = service.message_edits(&caller.0, id, req.page).await?;
    Ok(ok_json(crate::wire::edit_page(&page)))
}
