//! `/v1/conversations`: list, create, open, update, delete, and typing in
//! one.

use crate::service::Service;
use actix_web::{web, HttpRequest, HttpResponse};
use confab_domain::{ConversationId, ConversationView};
use confab_service::{ConversationFilter, ConversationTarget, Finished, StoredResponse};

use super::{created, endpoint, no_content, ok, page_json, path_id, Endpoint};
use crate::auth::Caller;
use crate::dto::{ConversationDto, ListDto};
use crate::error::{ApiError, ErrorBody};
use crate::idempotency;
use crate::requests::conversations::{
    CreateConversationIn, ListConversationsIn, TypingIn, UpdateConversationIn,
};
use crate::requests::{Input, NoParams};
use crate::wire;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        endpoint!(list, __path_list),
        endpoint!(create, __path_create),
        endpoint!(open, __path_open),
        endpoint!(update, __path_update),
        endpoint!(delete, __path_delete),
        endpoint!(typing, __path_typing),
    ]
}

/// List the caller's conversations, latest activity first.
#[utoipa::path(
    get, path = "/v1/conversations", tag = "conversations", operation_id = "list_conversations",
    params(ListConversationsIn),
    responses((status = 200, description = "a page of conversations", body = ListDto<ConversationDto>)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn list(
    service: Service,
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
    Ok(page_json(&conversations, |out, view| {
        wire::write_serialized(out, &ConversationDto::from(view))
    }))
}

/// Start a conversation: with `contact_id` (direct) or `group_id` (group),
/// exactly one of them.
#[utoipa::path(
    post, path = "/v1/conversations", tag = "conversations", operation_id = "create_conversation",
    params(crate::idempotency::IdempotencyKeyHeader),
    request_body(content(
        (CreateConversationIn = "application/x-www-form-urlencoded"),
        (CreateConversationIn = "application/json"),
    )),
    responses(
        (
            status = 201, description = "the conversation", body = ConversationDto,
            headers(("Location" = String, description = "the conversation's URL")),
        ),
        (
            status = 200,
            description = "with distinct=true: the caller's existing direct conversation with contact_id",
            body = ConversationDto,
        ),
        (
            status = 403,
            description = "`contact_blocked`: the caller and contact_id are in a block",
            body = ErrorBody,
        ),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn create(
    service: Service,
    caller: Caller,
    http: HttpRequest,
    Input(req): Input<CreateConversationIn>,
) -> Result<HttpResponse, ApiError> {
    let CreateConversationIn { target, distinct } = req;
    if let (true, ConversationTarget::Contact(peer)) = (distinct, &target) {
        if let Some(view) = service.direct_conversation_with(&caller.0, *peer).await? {
            return Ok(ok(&ConversationDto::from(&view)));
        }
    }
    idempotency::post(&service, &caller.0, &http, started, |completion| {
        service.create_conversation(&caller.0, target, completion)
    })
    .await
}

/// The answer to a new conversation.
fn started(view: &ConversationView) -> StoredResponse {
    created(
        format!("/v1/conversations/{}", view.conversation.id()),
        &ConversationDto::from(view),
    )
}

/// Getting a conversation opens it: `last_opened_at` and `read_at` change.
#[utoipa::path(
    get, path = "/v1/conversations/{id}", tag = "conversations", operation_id = "open_conversation",
    params(("id" = String, Path, description = "the conversation id")),
    responses((status = 200, description = "the conversation", body = ConversationDto)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn open(
    service: Service,
    caller: Caller,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: ConversationId = path_id(&path)?;
    let view = service.open_conversation(&caller.0, id).await?;
    Ok(ok(&ConversationDto::from(&view)))
}

/// Pin a message, pin, mute or archive the conversation (the last three
/// for the caller only). Only the submitted attributes change; a request
/// that changes nothing answers the conversation as it is, and writes and
/// tells nothing.
#[utoipa::path(
    put, path = "/v1/conversations/{id}", tag = "conversations", operation_id = "update_conversation",
    params(("id" = String, Path, description = "the conversation id")),
    request_body(content(
        (UpdateConversationIn = "application/x-www-form-urlencoded"),
        (UpdateConversationIn = "application/json"),
    )),
    responses(
        (status = 200, description = "the conversation", body = ConversationDto),
        (status = 403, description = "`contact_blocked`: a new `pinned_message_id` in a direct \
            conversation whose two members are in a block", body = ErrorBody),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn update(
    service: Service,
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

/// How long a conversation's deletion runs within its request before it
/// answers 202 and goes on in the background.
const DELETE_BUDGET: std::time::Duration = std::time::Duration::from_secs(1);

/// Delete a conversation for good, with its messages: 204 when done within
/// about a second; a big one answers 202 with the job that finishes it in
/// the background (its members hear `conversation.deleted` when it goes).
#[utoipa::path(
    delete, path = "/v1/conversations/{id}", tag = "conversations", operation_id = "delete_conversation",
    params(("id" = String, Path, description = "the conversation id")),
    responses(
        (status = 204, description = "deleted"),
        (
            status = 202, description = "its messages are going; this job deletes the rest",
            body = crate::dto::JobDto,
        ),
        (status = 403, description = "a group conversation: only its creator or a group owner", body = ErrorBody),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn delete(
    service: Service,
    caller: Caller,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: ConversationId = path_id(&path)?;
    match service
        .delete_conversation_within(&caller.0, id, DELETE_BUDGET)
        .await?
    {
        Finished::Done => Ok(no_content()),
        Finished::Running(job) => Ok(HttpResponse::Accepted()
            .content_type(actix_web::http::header::ContentType::json())
            .body(
                serde_json::to_vec(&crate::dto::JobDto::from(&job))
                    .map_err(|e| ApiError::internal(&e))?,
            )),
    }
}

/// Tell the conversation's other members that the caller is typing
/// (`state=start`, the default) or stopped (`state=stop`). Their open
/// event streams get a `typing` event at once; it is never stored, listed
/// or sent to webhooks. A start holds 8 s; starts closer than 2 s apart
/// and stops without a start add nothing (still 204); a send stops.
#[utoipa::path(
    post, path = "/v1/conversations/{id}/typing", tag = "conversations", operation_id = "typing",
    params(("id" = String, Path, description = "the conversation id")),
    request_body(content(
        (TypingIn = "application/x-www-form-urlencoded"),
        (TypingIn = "application/json"),
    )),
    responses(
        (status = 204, description = "told (or nothing to tell)"),
        (status = 403, description = "`contact_blocked`: a direct conversation whose two members are in a block", body = ErrorBody),
        (status = 404, description = "not a conversation the caller is a member of", body = ErrorBody),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn typing(
    service: Service,
    caller: Caller,
    path: web::Path<String>,
    Input(req): Input<TypingIn>,
) -> Result<HttpResponse, ApiError> {
    let TypingIn { state } = req;
    let id: ConversationId = path_id(&path)?;
    service
        .typing(&caller.0, id, state.unwrap_or_default())
        .await?;
    Ok(no_content())
}
