//! `/v1/attachments` (docs/api.md "Files and attachments"): upload, list, get, rename,
//! delete, and the content itself.

use std::cell::RefCell;
use std::rc::Rc;

use actix_web::http::header::{self, ContentEncoding, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::web::Bytes;
use actix_web::{web, HttpMessage as _, HttpRequest, HttpResponse};
use confab_domain::{AttachmentId, FileSource};
use confab_service::{AttachmentFilter, ByteRange, FileReader, ServiceError};
use futures_util::Stream;

use super::{endpoint, no_content, ok_json, path_id, Endpoint};
use crate::auth::Caller;
use crate::content::{self, Ranged};
use crate::dto::{AttachmentDto, ListDto, UploadForm};
use crate::error::ApiError;
use crate::error::ErrorBody;
use crate::links::{unix_now, FileLinks, LinkConfig};
use crate::requests::attachments::{ListAttachmentsIn, UpdateAttachmentIn};
use crate::requests::{Input, NoParams};
use crate::service::Service;
use crate::wire;

mod receive;

use receive::receive;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        endpoint!(list, __path_list),
        endpoint!(upload, __path_upload),
        endpoint!(get, __path_get),
        endpoint!(update, __path_update),
        endpoint!(delete, __path_delete),
        endpoint!(content_of, __path_content_of),
    ]
}

/// List the attachments the caller can see, newest first: their own
/// uploads and the attachments of the messages of their conversations.
#[utoipa::path(
    get, path = "/v1/attachments", tag = "attachments", operation_id = "list_attachments",
    params(ListAttachmentsIn),
    responses((status = 200, description = "a page of attachments", body = ListDto<AttachmentDto>)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn list(
    service: Service,
    caller: Caller,
    links: FileLinks,
    Input(req): Input<ListAttachmentsIn>,
) -> Result<HttpResponse, ApiError> {
    let ListAttachmentsIn {
        message_id,
        conversation_id,
        page,
    } = req;
    let filter = AttachmentFilter {
        message: message_id,
        conversation: conversation_id,
    };
    let found = service
        .list_attachments(&caller.0, filter, page)
        .await
        .map_err(|e| match e {
            // The filter that names nothing visible.
            ServiceError::NotFound { .. } if message_id.is_some() && conversation_id.is_none() => {
                ApiError::not_found(Some("message_id"))
            }
            e => e.into(),
        })?;
    Ok(ok_json(wire::attachment_page(&found, &links)))
}

/// Upload a file (`multipart/form-data`: a part `file`, and optionally a
/// part `filename`, else the file part's own name). Its type is detected
/// from its bytes. It is the caller's until attached to a message
/// (`attachments[i][id]`), and deleted after 24 h if never attached. It
/// counts in the caller's quota of stored bytes until deleted.
#[utoipa::path(
    post, path = "/v1/attachments", tag = "attachments", operation_id = "upload_attachment",
    params(crate::idempotency::IdempotencyKeyHeader),
    request_body(content((UploadForm = "multipart/form-data"))),
    responses(
        (
            status = 201, description = "the upload", body = AttachmentDto,
            headers(("Location" = String, description = "the attachment's URL")),
        ),
        (status = 408, description = "the body came slower than 8 KiB in 10 s, or took over 10 minutes", body = ErrorBody),
        (status = 413, description = "the file is over CONFAB_MAX_UPLOAD_BYTES (`payload_too_large`), or past what is left of the caller's quota of stored bytes (`storage_quota`, with their use in the message); `param` `file`", body = ErrorBody),
        (status = 429, description = "too many requests (`rate_limited`, `Retry-After`), or as many uploads under way as a contact may have (`too_many_uploads`)", body = ErrorBody),
        (status = 415, description = "the body is not multipart/form-data", body = ErrorBody),
        (status = 507, description = "the server's disk is short of space for files (`insufficient_storage`)", body = ErrorBody),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn upload(
    service: Service,
    caller: Caller,
    links: FileLinks,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = Rc::new(RefCell::new(Some(payload.into_inner())));
    match receive(&service, &caller, &links, &req, body.clone()).await {
        Ok(response) => Ok(response),
        Err(e) => {
            // The rest of the body is not read: the connection closes
            // after the answer (`unread_body`).
            if let Some(rest) = body.borrow_mut().take() {
                crate::unread_body::hold(&req, rest);
            }
            Err(e)
        }
    }
}

/// Get one attachment.
#[utoipa::path(
    get, path = "/v1/attachments/{id}", tag = "attachments", operation_id = "get_attachment",
    params(("id" = String, Path, description = "the attachment id")),
    responses((status = 200, description = "the attachment", body = AttachmentDto)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn get(
    service: Service,
    caller: Caller,
    links: FileLinks,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: AttachmentId = path_id(&path)?;
    let attachment = service.attachment(&caller.0, id).await?;
    Ok(ok_json(wire::attachment(&attachment, &links)))
}

/// Rename an attachment (its uploader only).
#[utoipa::path(
    put, path = "/v1/attachments/{id}", tag = "attachments", operation_id = "update_attachment",
    params(("id" = String, Path, description = "the attachment id")),
    request_body(content(
        (UpdateAttachmentIn = "application/x-www-form-urlencoded"),
        (UpdateAttachmentIn = "application/json"),
    )),
    responses(
        (status = 200, description = "the attachment", body = AttachmentDto),
        (status = 403, description = "only the uploader may rename it, while a member of its \
            conversation (`forbidden`); in a direct conversation whose two members are in a \
            block, `contact_blocked`", body = ErrorBody),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn update(
    service: Service,
    caller: Caller,
    links: FileLinks,
    path: web::Path<String>,
    Input(req): Input<UpdateAttachmentIn>,
) -> Result<HttpResponse, ApiError> {
    let UpdateAttachmentIn { filename } = req;
    let id: AttachmentId = path_id(&path)?;
    let attachment = match filename {
        Some(filename) => service.rename_attachment(&caller.0, id, filename).await?,
        None => service.attachment(&caller.0, id).await?,
    };
    Ok(ok_json(wire::attachment(&attachment, &links)))
}

/// Delete an attachment (its uploader only): from its message, and its
/// bytes from the storage.
#[utoipa::path(
    delete, path = "/v1/attachments/{id}", tag = "attachments", operation_id = "delete_attachment",
    params(("id" = String, Path, description = "the attachment id")),
    responses(
        (status = 204, description = "deleted"),
        (status = 403, description = "only the uploader may delete it", body = ErrorBody),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn delete(
    service: Service,
    caller: Caller,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: AttachmentId = path_id(&path)?;
    service.delete_attachment(&caller.0, id).await?;
    Ok(no_content())
}

/// An uploaded file's bytes: with a Bearer token of someone who may see
/// it, or through its signed link (`file_url`: `expires` and `signature`,
/// valid for about an hour). `Range` (one range) gets 206; `ETag` and
/// `If-None-Match` work. Served as its detected type, `nosniff`, in a
/// sandbox, and as a download unless an image (PNG, JPEG, GIF, WebP),
/// audio or video. Anything else (a bad or expired signature, a link to
/// an attachment by URL): 404.
#[utoipa::path(
    get, path = "/v1/attachments/{id}/content", tag = "attachments",
    operation_id = "get_attachment_content",
    params(
        ("id" = String, Path, description = "the attachment id"),
        ("expires" = Option<i64>, Query, description = "a signed link's expiry (Unix seconds)"),
        ("signature" = Option<String>, Query, description = "a signed link's signature"),
        ("Range" = Option<String>, Header, description = "one byte range, e.g. bytes=0-1023"),
        ("If-None-Match" = Option<String>, Header, description = "an ETag the client holds"),
    ),
    responses(
        (status = 200, description = "the bytes, as their detected type", content_type = "*/*"),
        (status = 206, description = "the range asked for", content_type = "*/*"),
        (status = 304, description = "the client's copy is current"),
        (status = 416, description = "the range lies beyond the file", body = ErrorBody),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn content_of(
    service: Service,
    req: HttpRequest,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let not_found = || ApiError::not_found(None);
    let id: AttachmentId = path_id(&path)?;
    let caller = req.extensions().get::<Caller>().cloned();
    let (attachment, signed_until) = match caller {
        Some(caller) => (service.attachment(&caller.0, id).await?, None),
        None => {
            let (expires, signature) = link_params(req.query_string()).ok_or_else(not_found)?;
            let config = req
                .app_data::<web::Data<LinkConfig>>()
                .ok_or_else(not_found)?;
            let now = unix_now();
            if !config
                .signer
                .verify(*id.as_uuid(), expires, &signature, now)
            {
                return Err(not_found());
            }
            let attachment = service.linked_attachment(id).await?.ok_or_else(not_found)?;
            (attachment, Some(expires - now))
        }
    };
    let FileSource::Stored(digest) = &attachment.source else {
        return Err(not_found());
    };
    let size = attachment
        .file_size
        .map_or(0, |s| u64::try_from(s.bytes()).unwrap_or(0));
    let etag = content::etag(&digest.to_hex());
    let headers = req.headers();
    let cache = match signed_until {
        Some(left) => format!("private, max-age={}", left.max(0)),
        None => "private, no-cache".to_owned(),
    };
    let answer = |status: StatusCode| {
        let mut b = HttpResponse::build(status);
        b.insert_header((header::ETAG, etag.clone()))
            .insert_header((header::CACHE_CONTROL, cache.clone()))
            .insert_header((header::ACCEPT_RANGES, "bytes"))
            .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
            .insert_header((header::CONTENT_SECURITY_POLICY, "sandbox"))
            // Bytes go as they are: never compressed (a range would no
            // longer match), never re-encoded.
            .insert_header(ContentEncoding::Identity);
        b
    };
    let if_none_match = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok());
    if content::none_match(if_none_match, &etag) {
        return Ok(answer(StatusCode::NOT_MODIFIED).finish());
    }
    let range_header = headers.get(header::RANGE).and_then(|v| v.to_str().ok());
    let (status, range) = match content::range(range_header, size) {
        Ranged::Whole => (StatusCode::OK, None),
        Ranged::Part { start, end } => {
            (StatusCode::PARTIAL_CONTENT, Some(ByteRange { start, end }))
        }
        Ranged::Unsatisfiable => {
            let mut refusal = HttpResponse::from_error(ApiError::range_not_satisfiable(size));
            refusal.headers_mut().insert(
                header::CONTENT_RANGE,
                HeaderValue::from_str(&format!("bytes */{size}"))
                    .map_err(|e| ApiError::internal(&e))?,
            );
            return Ok(refusal);
        }
    };
    let reader = service.open_attachment(&attachment, range).await?;
    let inline = content::inline(attachment.file_type.as_str());
    let mut b = answer(status);
    b.insert_header((header::CONTENT_TYPE, attachment.file_type.as_str()))
        .insert_header((
            header::CONTENT_DISPOSITION,
            content::disposition(attachment.filename.as_str(), inline),
        ));
    let length = match range {
        Some(r) => {
            b.insert_header((
                header::CONTENT_RANGE,
                format!("bytes {}-{}/{size}", r.start, r.end - 1),
            ));
            r.end - r.start
        }
        None => size,
    };
    b.no_chunking(length);
    Ok(b.streaming(chunks(reader)))
}

/// `expires` and `signature` of a signed link's query; `None` unless both
/// are there, once each, well formed.
fn link_params(query: &str) -> Option<(i64, String)> {
    let mut expires = None;
    let mut signature = None;
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=')?;
        let slot = match key {
            "expires" => &mut expires,
            "signature" => &mut signature,
            _ => continue,
        };
        if slot.replace(value).is_some() {
            return None;
        }
    }
    let expires = expires?.parse::<i64>().ok()?;
    let signature = signature?;
    (signature.len() == 64).then(|| (expires, signature.to_owned()))
}

/// The file's bytes as a response body; a storage failure mid-way ends the
/// body short, which the client sees as a broken download.
fn chunks(reader: Box<dyn FileReader>) -> impl Stream<Item = Result<Bytes, actix_web::Error>> {
    futures_util::stream::unfold(Some(reader), |reader| async move {
        let mut reader = reader?;
        match reader.next_chunk().await {
            Ok(Some(chunk)) => Some((Ok(Bytes::from(chunk)), Some(reader))),
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(error = %e, "a file's bytes stopped coming from the storage");
                Some((
                    Err(actix_web::error::ErrorInternalServerError("storage failed")),
                    None,
                ))
            }
        }
    })
}
