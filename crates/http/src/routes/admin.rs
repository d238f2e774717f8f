//! `/v1/admin`: the server API (docs/api.md "Server API: from an app's backend"). An app's backend, with
//! a server key, provisions contacts, mints and revokes their tokens and
//! manages webhooks. Authentication (`crate::auth`) lets only server
//! keys in here; each handler takes the [`Server`] key to say so.

use std::sync::Arc;

use actix_web::http::header;
use actix_web::{web, HttpResponse};
use confab_domain::{ContactId, ContactProfilePatch, ConversationId, EventType, Viewer};
use confab_service::{
    AddressPolicy, ConversationMember, Finished, ServiceError, WebhookError, WebhookId,
};
use uuid::Uuid;

use super::{endpoint, no_content, ok, ok_json, page_json, path_id, Endpoint};
use crate::auth::Server;
use crate::dto::{
    ContactDto, ConversationMemberDto, DeliveryDto, JobDto, ListDto, MintedTokenDto, TokenDto,
    WebhookDto,
};
use crate::error::ApiError;
use crate::export::Export;
use crate::requests::admin::{
    CreateContactIn, CreateWebhookIn, ListContactsIn, ListConversationMembersIn, ListDeliveriesIn,
    ListTokensIn, MintTokenIn, UpdateContactIn,
};
use crate::requests::{Input, NoParams};
use crate::service::Service;
use crate::wire;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        endpoint!(create_contact, __path_create_contact),
        endpoint!(list_contacts, __path_list_contacts),
        endpoint!(get_contact, __path_get_contact),
        endpoint!(update_contact, __path_update_contact),
        endpoint!(erase_contact, __path_erase_contact),
        endpoint!(get_job, __path_get_job),
        endpoint!(export_contact, __path_export_contact),
        endpoint!(mint_token, __path_mint_token),
        endpoint!(list_tokens, __path_list_tokens),
        endpoint!(revoke_tokens, __path_revoke_tokens),
        endpoint!(revoke_token, __path_revoke_token),
        endpoint!(conversation_members, __path_conversation_members),
        endpoint!(create_webhook, __path_create_webhook),
        endpoint!(list_webhooks, __path_list_webhooks),
        endpoint!(delete_webhook, __path_delete_webhook),
        endpoint!(list_deliveries, __path_list_deliveries),
    ]
}

/// Which addresses webhooks made over HTTP may go to: the server's
/// `CONFAB_WEBHOOK_ALLOW_PRIVATE`, as for the CLI.
#[derive(Clone)]
pub struct WebhookPolicy(pub AddressPolicy);

impl WebhookPolicy {
    pub fn new(allow_private: bool) -> Self {
        Self(AddressPolicy {
            allow_private,
            resolver: Arc::new(confab_delivery::webhooks::SystemResolver),
        })
    }
}

/// A 201 with `Location` and this JSON.
fn created(location: String, body: serde_json::Result<Vec<u8>>) -> Result<HttpResponse, ApiError> {
    let body = body.map_err(|e| ApiError::internal(&e))?;
    Ok(HttpResponse::Created()
        .insert_header((header::LOCATION, location))
        .content_type(header::ContentType::json())
        .body(body))
}

/// Create a contact.
#[utoipa::path(
    post, path = "/v1/admin/contacts", tag = "admin", operation_id = "admin_create_contact",
    request_body(content(
        (CreateContactIn = "application/x-www-form-urlencoded"),
        (CreateContactIn = "application/json"),
    )),
    responses(
        (
            status = 201, description = "the contact", body = ContactDto,
            headers(("Location" = String, description = "the contact's URL in the server API")),
        ),
        (
            status = 409, description = "the username is taken in some letter case (`param`: `username`)",
            body = crate::error::ErrorBody,
        ),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn create_contact(
    service: Service,
    _: Server,
    Input(req): Input<CreateContactIn>,
) -> Result<HttpResponse, ApiError> {
    let CreateContactIn {
        username,
        phone_number,
        avatar_url,
    } = req;
    let contact = service
        .create_contact(
            username.as_str(),
            phone_number.as_str(),
            avatar_url.as_ref().map(|a| a.as_str()),
        )
        .await
        .map_err(|e| match e {
            ServiceError::Conflict(why) => ApiError::conflict(why).on("username"),
            e => e.into(),
        })?;
    created(
        format!("/v1/admin/contacts/{}", contact.id()),
        wire::contact(&contact, Viewer::Operator),
    )
}

/// Page through every contact, newest first; `username` finds one.
#[utoipa::path(
    get, path = "/v1/admin/contacts", tag = "admin", operation_id = "admin_list_contacts",
    params(ListContactsIn),
    responses((status = 200, description = "a page of contacts", body = ListDto<ContactDto>)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn list_contacts(
    service: Service,
    _: Server,
    Input(req): Input<ListContactsIn>,
) -> Result<HttpResponse, ApiError> {
    let ListContactsIn { username, page } = req;
    let contacts = service
        .list_contacts(username.as_ref().map(|u| u.as_str()), page)
        .await?;
    Ok(page_json(&contacts, |out, c| {
        wire::write_contact(out, c, Viewer::Operator)
    }))
}

/// Get one contact.
#[utoipa::path(
    get, path = "/v1/admin/contacts/{id}", tag = "admin", operation_id = "admin_get_contact",
    params(("id" = String, Path, description = "the contact id")),
    responses((status = 200, description = "the contact", body = ContactDto)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn get_contact(
    service: Service,
    _: Server,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: ContactId = path_id(&path)?;
    let contact = service.contact_by_id(id).await?;
    Ok(ok_json(wire::contact(&contact, Viewer::Operator)))
}

/// Change a contact's phone number or avatar.
#[utoipa::path(
    put, path = "/v1/admin/contacts/{id}", tag = "admin", operation_id = "admin_update_contact",
    params(("id" = String, Path, description = "the contact id")),
    request_body(content(
        (UpdateContactIn = "application/x-www-form-urlencoded"),
        (UpdateContactIn = "application/json"),
    )),
    responses((status = 200, description = "the contact", body = ContactDto)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn update_contact(
    service: Service,
    _: Server,
    path: web::Path<String>,
    Input(req): Input<UpdateContactIn>,
) -> Result<HttpResponse, ApiError> {
    let id: ContactId = path_id(&path)?;
    let UpdateContactIn {
        phone_number,
        avatar_url,
    } = req;
    let patch = ContactProfilePatch {
        phone_number,
        avatar_url,
    };
    let contact = service.update_contact(id, patch).await?;
    Ok(ok_json(wire::contact(&contact, Viewer::Operator)))
}

/// How long an erase runs within its request before it answers 202 and
/// goes on in the background.
const ERASE_BUDGET: std::time::Duration = std::time::Duration::from_secs(1);

/// Erase a contact (the right to be forgotten): at once, in one small
/// transaction, its tokens stop (open streams end within 5 s) and nothing
/// can act as it or find it; then its direct conversations are deleted,
/// its messages in groups deleted, it leaves every group (a group it was
/// alone in is deleted; one whose last owner it was passes to its oldest
/// admin, else member), and nothing of it remains but what others wrote.
/// 204 when all that is done within about a second; else 202 with the job
/// that finishes it in the background (`Location`: the job to poll).
#[utoipa::path(
    delete, path = "/v1/admin/contacts/{id}", tag = "admin", operation_id = "admin_erase_contact",
    params(("id" = String, Path, description = "the contact id")),
    responses(
        (status = 204, description = "erased"),
        (
            status = 202, description = "locked out; the rest of the erase runs as this job",
            body = JobDto,
            headers(("Location" = String, description = "the job's URL in the server API")),
        ),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn erase_contact(
    service: Service,
    _: Server,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: ContactId = path_id(&path)?;
    match service.erase_contact(id, ERASE_BUDGET).await? {
        Finished::Done => Ok(no_content()),
        Finished::Running(job) => {
            let body =
                serde_json::to_vec(&JobDto::from(&job)).map_err(|e| ApiError::internal(&e))?;
            Ok(HttpResponse::Accepted()
                .insert_header((header::LOCATION, format!("/v1/admin/jobs/{}", job.id)))
                .content_type(header::ContentType::json())
                .body(body))
        }
    }
}

/// Get a job: whether the work it does in the background is done.
#[utoipa::path(
    get, path = "/v1/admin/jobs/{id}", tag = "admin", operation_id = "admin_get_job",
    params(("id" = String, Path, description = "the job id")),
    responses((status = 200, description = "the job", body = JobDto)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn get_job(
    service: Service,
    _: Server,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let job = service.job(&path).await?;
    Ok(ok(&JobDto::from(&job)))
}

/// Everything stored about a contact, as NDJSON (one object a line, each
/// with a `kind`: `contact`, `token` without its secret, `conversation`
/// with the contact's own state, `group`, `message` it sent, `reaction` it
/// made; then `end`), streamed: the server holds one page at a time.
#[utoipa::path(
    get, path = "/v1/admin/contacts/{id}/export", tag = "admin", operation_id = "admin_export_contact",
    params(("id" = String, Path, description = "the contact id")),
    responses((
        status = 200,
        description = "NDJSON lines; the last is `{\"kind\":\"end\"}` (or `error` when the export stopped early)",
        content_type = "application/x-ndjson", body = String,
    )),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn export_contact(
    service: Service,
    unbudgeted: web::Data<confab_service::Confab>,
    _: Server,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: ContactId = path_id(&path)?;
    // Before the answer begins: an unknown contact is a 404.
    let contact = service.contact_by_id(id).await?;
    let confab = unbudgeted.get_ref().clone();
    let lines = futures_util::stream::unfold(Export::of(contact), move |export| {
        let confab = confab.clone();
        async move { export.next(&confab).await }
    });
    Ok(HttpResponse::Ok()
        .content_type("application/x-ndjson")
        .streaming(lines))
}

/// Mint a token for a contact (a device's sign-in); the token is in this
/// answer only.
#[utoipa::path(
    post, path = "/v1/admin/contacts/{id}/tokens", tag = "admin", operation_id = "admin_mint_token",
    params(("id" = String, Path, description = "the contact id")),
    request_body(content(
        (MintTokenIn = "application/x-www-form-urlencoded"),
        (MintTokenIn = "application/json"),
    )),
    responses((
        status = 201, description = "the token, with its secret", body = MintedTokenDto,
        headers(("Location" = String, description = "the token's URL (to revoke it)")),
    )),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn mint_token(
    service: Service,
    _: Server,
    path: web::Path<String>,
    Input(req): Input<MintTokenIn>,
) -> Result<HttpResponse, ApiError> {
    let id: ContactId = path_id(&path)?;
    let MintTokenIn { expires_in } = req;
    let minted = service.mint_token(id, expires_in).await?;
    created(
        format!("/v1/admin/tokens/{}", minted.id),
        serde_json::to_vec(&MintedTokenDto::from(&minted)),
    )
}

/// Page through a contact's live tokens, newest first, without secrets.
#[utoipa::path(
    get, path = "/v1/admin/contacts/{id}/tokens", tag = "admin", operation_id = "admin_list_tokens",
    params(("id" = String, Path, description = "the contact id"), ListTokensIn),
    responses((status = 200, description = "a page of tokens", body = ListDto<TokenDto>)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn list_tokens(
    service: Service,
    _: Server,
    path: web::Path<String>,
    Input(req): Input<ListTokensIn>,
) -> Result<HttpResponse, ApiError> {
    let id: ContactId = path_id(&path)?;
    let ListTokensIn { page } = req;
    let tokens = service.list_tokens(id, page).await?;
    Ok(page_json(&tokens, |out, t| {
        serde_json::to_writer(out, &TokenDto::from(t))
    }))
}

/// Revoke every token of a contact (signs out every device); their open
/// event streams end within 5 s.
#[utoipa::path(
    delete, path = "/v1/admin/contacts/{id}/tokens", tag = "admin", operation_id = "admin_revoke_tokens",
    params(("id" = String, Path, description = "the contact id")),
    responses((status = 204, description = "revoked")),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn revoke_tokens(
    service: Service,
    _: Server,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: ContactId = path_id(&path)?;
    service.revoke_all_tokens(id).await?;
    Ok(no_content())
}

/// Revoke one token (signs out one device); its open event streams end
/// within 5 s.
#[utoipa::path(
    delete, path = "/v1/admin/tokens/{id}", tag = "admin", operation_id = "admin_revoke_token",
    params(("id" = String, Path, description = "the token id")),
    responses((status = 204, description = "revoked")),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn revoke_token(
    service: Service,
    _: Server,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: Uuid = path_id(&path)?;
    service.revoke_token(id).await?;
    Ok(no_content())
}

/// Page through a conversation's members, each with whether they muted it
/// and their unread count: whom to notify of a message, and the badge
/// (see "Push notifications" in docs/api.md).
#[utoipa::path(
    get, path = "/v1/admin/conversations/{id}/members", tag = "admin",
    operation_id = "admin_list_conversation_members",
    params(("id" = String, Path, description = "the conversation id"), ListConversationMembersIn),
    responses((status = 200, description = "a page of members", body = ListDto<ConversationMemberDto>)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn conversation_members(
    service: Service,
    _: Server,
    path: web::Path<String>,
    Input(req): Input<ListConversationMembersIn>,
) -> Result<HttpResponse, ApiError> {
    let id: ConversationId = path_id(&path)?;
    let ListConversationMembersIn { page } = req;
    let members = service.conversation_members(id, page).await?;
    Ok(page_json(&members, write_conversation_member))
}

/// `{"contact": {...}, "is_muted": bool, "unread_count": n}`.
fn write_conversation_member(out: &mut Vec<u8>, m: &ConversationMember) -> serde_json::Result<()> {
    out.extend_from_slice(br#"{"contact":"#);
    wire::write_contact(out, &m.contact, Viewer::Operator)?;
    out.extend_from_slice(
        format!(
            r#","is_muted":{},"unread_count":{}}}"#,
            m.is_muted, m.unread_count
        )
        .as_bytes(),
    );
    Ok(())
}

/// Create a webhook; its signing secret is in this answer only.
#[utoipa::path(
    post, path = "/v1/admin/webhooks", tag = "admin", operation_id = "admin_create_webhook",
    request_body(content(
        (CreateWebhookIn = "application/x-www-form-urlencoded"),
        (CreateWebhookIn = "application/json"),
    )),
    responses((
        status = 201, description = "the webhook, with its secret", body = WebhookDto,
        headers(("Location" = String, description = "the webhook's URL")),
    )),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn create_webhook(
    service: Service,
    _: Server,
    policy: web::Data<WebhookPolicy>,
    Input(req): Input<CreateWebhookIn>,
) -> Result<HttpResponse, ApiError> {
    let CreateWebhookIn { url, events } = req;
    let events = parse_events(&events)?;
    let target = confab_delivery::webhooks::parse_url(&url)
        .map_err(|e| ApiError::invalid("url", e.to_string()))?;
    let webhook = service
        .create_webhook(target, events, &policy.0)
        .await
        .map_err(|e| match e {
            WebhookError::Service(e) => ApiError::from(e),
            refused => ApiError::invalid("url", refused.to_string()),
        })?;
    created(
        format!("/v1/admin/webhooks/{}", webhook.id),
        serde_json::to_vec(&WebhookDto::of(&webhook, true)),
    )
}

/// `events[]` as event types: each known, duplicates dropped.
fn parse_events(names: &[String]) -> Result<Vec<EventType>, ApiError> {
    let mut types = Vec::with_capacity(names.len());
    for name in names {
        let t: EventType = name.trim().parse().map_err(|_| {
            let known: Vec<&str> = EventType::ALL.iter().map(|t| t.name()).collect();
            ApiError::invalid(
                "events",
                format!(
                    "events has an unknown event type {:?}; known: {}",
                    crate::params::echo(name),
                    known.join(", ")
                ),
            )
        })?;
        if !types.contains(&t) {
            types.push(t);
        }
    }
    Ok(types)
}

/// Every webhook, oldest first, without secrets.
#[utoipa::path(
    get, path = "/v1/admin/webhooks", tag = "admin", operation_id = "admin_list_webhooks",
    responses((status = 200, description = "every webhook (`has_more` is false)", body = ListDto<WebhookDto>)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn list_webhooks(
    service: Service,
    _: Server,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let webhooks = service.list_webhooks().await?;
    let data: Vec<WebhookDto> = webhooks.iter().map(|w| WebhookDto::of(w, false)).collect();
    Ok(ok(&serde_json::json!({ "has_more": false, "data": data })))
}

/// Delete a webhook: no attempt of it starts after this.
#[utoipa::path(
    delete, path = "/v1/admin/webhooks/{id}", tag = "admin", operation_id = "admin_delete_webhook",
    params(("id" = String, Path, description = "the webhook id")),
    responses((status = 204, description = "deleted")),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn delete_webhook(
    service: Service,
    _: Server,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    service.delete_webhook(&path).await.map_err(|e| match e {
        WebhookError::NotFound(_) => ApiError::not_found(None),
        WebhookError::Service(e) => ApiError::from(e),
        other => ApiError::internal(&other),
    })?;
    Ok(no_content())
}

/// Page through a webhook's recent attempts, newest first: the event, the
/// attempt's number, the answer's status or why there was none, and when.
/// Kept 7 days, as events are.
#[utoipa::path(
    get, path = "/v1/admin/webhooks/{id}/deliveries", tag = "admin",
    operation_id = "admin_list_webhook_deliveries",
    params(("id" = String, Path, description = "the webhook id"), ListDeliveriesIn),
    responses((status = 200, description = "a page of attempts", body = ListDto<DeliveryDto>)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn list_deliveries(
    service: Service,
    _: Server,
    path: web::Path<String>,
    Input(req): Input<ListDeliveriesIn>,
) -> Result<HttpResponse, ApiError> {
    let id: Uuid = path_id(&path)?;
    let ListDeliveriesIn { page } = req;
    let attempts = service
        .list_deliveries(WebhookId::from_uuid(id), page)
        .await?;
    Ok(page_json(&attempts, |out, d| {
        serde_json::to_writer(out, &DeliveryDto::from(d))
    }))
}
