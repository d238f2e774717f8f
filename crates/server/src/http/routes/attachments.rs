//! `/v1/attachments` (docs/api.md "Files and attachments"): upload, list, get, rename,
//! delete, and the content itself.

use std::cell::{Cell, RefCell};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use actix_multipart::Multipart;
use actix_web::dev::Payload;
use actix_web::error::PayloadError;
use actix_web::http::header::{self, ContentEncoding, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::web::Bytes;
use actix_web::{web, HttpMessage as _, HttpRequest, HttpResponse};
use confab_domain::{Attachment, AttachmentId, FileSource, Filename};
use confab_service::{
    AttachmentFilter, ByteRange, Completion, FileReader, ServiceError, StoredResponse,
};
use futures_util::{Stream, StreamExt as _};

use super::{created_json, endpoint, no_content, ok_json, path_id, Endpoint};
use crate::http::auth::Caller;
use crate::http::content::{self, Ranged};
use crate::http::dto::{AttachmentDto, ListDto, UploadForm};
use crate::http::error::ApiError;
use crate::http::error::ErrorBody;
use crate::http::idempotency::{self, respond, Begun, BodyDigest};
use crate::http::links::{unix_now, FileLinks, LinkConfig};
use crate::http::requests::attachments::{ListAttachmentsIn, UpdateAttachmentIn};
use crate::http::requests::{Input, NoParams};
use crate::http::service::Service;
use crate::http::wire;

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

/// What a multipart body may hold beyond its file: the part headers, the
/// boundaries and a `filename` part.
const FORM_OVERHEAD: u64 = 64 * 1024;
/// The least an upload's body must bring in each [`RATE_WINDOW`] of the
/// client's time (then 408): 8 KiB in 10 s, about 6.5 kbit/s, which a slow
/// mobile network passes (2G's GPRS carries 20 to 40 kbit/s; a stall of a
/// few seconds is averaged over the window), and a trickle does not.
const MIN_BYTES_PER_WINDOW: u64 = 8 * 1024;
/// The window of [`MIN_BYTES_PER_WINDOW`].
const RATE_WINDOW: Duration = Duration::from_secs(10);
/// The longest an upload may take in all (then 408).
const UPLOAD_DEADLINE: Duration = Duration::from_secs(600);
/// The longest `filename` part, in bytes.
const FILENAME_PART_MAX: usize = 1024;

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
    params(crate::http::idempotency::IdempotencyKeyHeader),
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
                crate::http::unread_body::hold(&req, rest);
            }
            Err(e)
        }
    }
}

/// Reads the form and stores its file; on any refusal the upload is given
/// up (nothing is kept).
///
/// With an `Idempotency-Key`, the key is claimed once the whole body is
/// read, its fingerprint made of the parts (the file by the SHA-256 of its
/// bytes, computed as they stream): a retry of an answered upload is
/// replayed and its bytes given up, another request with the key is 422,
/// one still running 409. A retry of an answered upload is let in without
/// looking at the quota (it will not be stored); a new one completes its
/// key in the transaction that writes its row.
async fn receive(
    service: &Service,
    caller: &Caller,
    links: &FileLinks,
    req: &HttpRequest,
    body: Rc<RefCell<Option<Payload>>>,
) -> Result<HttpResponse, ApiError> {
    let essence = req.mime_type().ok().flatten();
    if essence.is_none_or(|m| m.essence_str() != "multipart/form-data") {
        return Err(ApiError::unsupported_media_type());
    }
    let key = idempotency::key_of(req)?;
    let max = service.max_upload_bytes();
    let allowance = max.saturating_add(FORM_OVERHEAD);
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > allowance) {
        return Err(ApiError::upload_too_large(max));
    }
    // A place among the caller's uploads under way, room in its quota and
    // on the disk, before a byte of the body is read.
    let answered = match &key {
        Some(key) => service.key_answered(&caller.0, key).await?,
        None => false,
    };
    let admitted = if answered {
        service.admit_upload_retry(&caller.0, declared).await?
    } else {
        service.admit_upload(&caller.0, declared).await?
    };
    let mut admission = Some(admitted);
    let cut = Rc::new(Cell::new(None));
    let stream = Limited {
        body,
        left: allowance,
        rate: Rate::new(declared),
        cut: cut.clone(),
    };
    let mut form = Multipart::new(req.headers(), stream);
    let mut file: Option<(confab_service::Upload, Option<String>)> = None;
    let mut named: Option<String> = None;
    let read = async {
        while let Some(part) = form.next().await {
            let mut part = part.map_err(|e| multipart_error(e, max, cut.get()))?;
            match part.name() {
                Some("file") => {
                    let Some(admitted) = admission.take() else {
                        return Err(ApiError::invalid("file", "file must be given once"));
                    };
                    let own_name = part
                        .content_disposition()
                        .and_then(|d| d.get_filename())
                        .map(str::to_owned);
                    let mut upload = service.start_upload(admitted).await?;
                    while let Some(chunk) = part.next().await {
                        let written = match chunk {
                            Ok(chunk) => upload.write(chunk.to_vec()).await.map_err(ApiError::from),
                            Err(e) => Err(multipart_error(e, max, cut.get())),
                        };
                        if let Err(e) = written {
                            upload.abort().await;
                            return Err(e);
                        }
                    }
                    file = Some((upload, own_name));
                }
                Some("filename") => {
                    if named.is_some() {
                        return Err(ApiError::invalid("filename", "filename must be given once"));
                    }
                    let mut text = Vec::new();
                    while let Some(chunk) = part.next().await {
                        let chunk = chunk.map_err(|e| multipart_error(e, max, cut.get()))?;
                        if text.len() + chunk.len() > FILENAME_PART_MAX {
                            return Err(ApiError::invalid(
                                "filename",
                                "filename must be 1 to 255 characters without / or control characters",
                            ));
                        }
                        text.extend_from_slice(&chunk);
                    }
                    named = Some(String::from_utf8(text).map_err(|_| {
                        ApiError::invalid("filename", "filename must be UTF-8 text")
                    })?);
                }
                Some(other) => return Err(ApiError::unknown(&crate::http::params::echo(other))),
                None => return Err(ApiError::body_invalid("every part needs a name")),
            }
        }
        Ok(())
    };
    let outcome = match tokio::time::timeout(UPLOAD_DEADLINE, read).await {
        Ok(outcome) => outcome,
        Err(_) => Err(ApiError::request_timeout()),
    };
    drop(form);
    if let Err(e) = outcome {
        if let Some((upload, _)) = file {
            upload.abort().await;
        }
        return Err(e);
    }
    let Some((upload, own_name)) = file else {
        return Err(ApiError::missing("file"));
    };
    let params = upload_params(&upload, named.as_deref(), own_name.as_deref());
    let Some(name) = named.or(own_name) else {
        upload.abort().await;
        return Err(ApiError::missing("filename"));
    };
    let filename = match Filename::new(name) {
        Ok(f) => f,
        Err(e) => {
            upload.abort().await;
            return Err(e.into());
        }
    };
    // Rendered once, in the write's transaction when a key is kept: the
    // answer sent and the one kept are the same bytes (its link's expiry
    // included).
    let rendered = Arc::new(Mutex::new(None::<StoredResponse>));
    let render = {
        let (links, rendered) = (links.clone(), rendered.clone());
        move |a: &Attachment| {
            let answer = created_json(
                format!("/v1/attachments/{}", a.id),
                wire::attachment(a, &links),
            );
            *rendered.lock().unwrap_or_else(PoisonError::into_inner) = Some(answer.clone());
            answer
        }
    };
    let Some(key) = key else {
        let attachment = upload.finish(filename).await?;
        return Ok(respond(render(&attachment)));
    };
    let fingerprint = idempotency::fingerprint_of(req, BodyDigest::of_params(&params));
    let claim = match idempotency::begin(service, &caller.0, key, fingerprint).await {
        Ok(Begun::Run(claim)) => claim,
        Ok(Begun::Answered(answer)) => {
            upload.abort().await;
            return Ok(answer);
        }
        Err(e) => {
            upload.abort().await;
            return Err(e);
        }
    };
    let completion = Completion::new(claim.clone(), render.clone());
    let outcome = upload.finish_with(filename, Some(completion)).await;
    let attachment = idempotency::finish(service, claim, outcome).await?;
    let kept = rendered
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    Ok(respond(kept.unwrap_or_else(|| render(&attachment))))
}

/// An upload's parameters, as its idempotency fingerprint counts them: the
/// file's bytes (by their SHA-256), its part's own name and the `filename`
/// part, each as sent (absent: `null`).
fn upload_params(
    upload: &confab_service::Upload,
    named: Option<&str>,
    own_name: Option<&str>,
) -> serde_json::Map<String, serde_json::Value> {
    let digest: String = upload
        .content_digest()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let text = |v: Option<&str>| v.map_or(serde_json::Value::Null, |v| v.into());
    let mut params = serde_json::Map::new();
    params.insert("file".into(), digest.into());
    params.insert("file_part_name".into(), text(own_name));
    params.insert("filename".into(), text(named));
    params
}

/// Why [`Limited`] cut a body short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// It passed the allowance.
    Overflow,
    /// It came slower than [`MIN_BYTES_PER_WINDOW`] per [`RATE_WINDOW`].
    TooSlow,
}

/// A multipart error as the contract's: a body over the allowance is 413,
/// one that comes too slowly 408, any other malformed body 400 (a part's
/// headers longer than the parser's buffer among them: that overflow is
/// the parser's, not the body's).
fn multipart_error(e: actix_multipart::MultipartError, max: u64, cut: Option<Cut>) -> ApiError {
    use actix_multipart::MultipartError as M;
    match (e, cut) {
        (M::Payload(_), Some(Cut::Overflow)) => ApiError::upload_too_large(max),
        (M::Payload(_), Some(Cut::TooSlow)) => {
            ApiError::body_too_slow(MIN_BYTES_PER_WINDOW, RATE_WINDOW.as_secs())
        }
        (M::Payload(PayloadError::Overflow), None) => {
            ApiError::body_invalid("a part's headers are too long")
        }
        (e, _) => ApiError::body_invalid(format!("the multipart body cannot be read: {e}")),
    }
}

/// An upload body's pace: at least [`MIN_BYTES_PER_WINDOW`] in each
/// [`RATE_WINDOW`] of the time spent waiting for the client (time this
/// server spends storing what came does not count: a slow storage never
/// cuts a client short), or all that is left of a body whose length was
/// declared, when that is less.
struct Rate {
    /// When the current window ends.
    deadline: Pin<Box<tokio::time::Sleep>>,
    /// Bytes received in it.
    got: u64,
    /// What the declared length leaves, if one was declared.
    left: Option<u64>,
    /// Since when the body is not being read (a chunk was handed on).
    handed_on: Option<tokio::time::Instant>,
}

impl Rate {
    fn new(declared: Option<u64>) -> Self {
        Self {
            deadline: Box::pin(tokio::time::sleep(RATE_WINDOW)),
            got: 0,
            left: declared,
            handed_on: None,
        }
    }

    /// What this window must bring.
    fn needed(&self) -> u64 {
        self.left
            .map_or(MIN_BYTES_PER_WINDOW, |left| left.min(MIN_BYTES_PER_WINDOW))
    }

    /// The reader is back: the time it spent elsewhere moves the
    /// window's end.
    fn resume(&mut self) {
        if let Some(at) = self.handed_on.take() {
            let end = self.deadline.deadline() + at.elapsed();
            self.deadline.as_mut().reset(end);
        }
    }

    fn received(&mut self, n: u64) {
        self.got += n;
        self.left = self.left.map(|left| left.saturating_sub(n));
        self.handed_on = Some(tokio::time::Instant::now());
    }

    /// Whether the window ended short; else a new window begins.
    fn poll_short(&mut self, cx: &mut Context<'_>) -> bool {
        if self.deadline.as_mut().poll(cx).is_pending() {
            return false;
        }
        if self.got < self.needed() {
            return true;
        }
        self.got = 0;
        let next = tokio::time::Instant::now() + RATE_WINDOW;
        self.deadline.as_mut().reset(next);
        // Registers the new window's wake-up.
        let _ = self.deadline.as_mut().poll(cx);
        false
    }
}

/// The request body, at most `left` bytes more (then an overflow), at
/// its [`Rate`] (then a time-out); why it was cut goes in `cut`. The body
/// stays in the shared cell, so that a refusal can keep it unread.
struct Limited {
    body: Rc<RefCell<Option<Payload>>>,
    left: u64,
    rate: Rate,
    cut: Rc<Cell<Option<Cut>>>,
}

impl Stream for Limited {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        this.rate.resume();
        let polled = match this.body.borrow_mut().as_mut() {
            Some(body) => Pin::new(body).poll_next(cx),
            None => return Poll::Ready(None),
        };
        match polled {
            Poll::Ready(Some(Ok(chunk))) => {
                let n = chunk.len() as u64;
                if n > this.left {
                    this.cut.set(Some(Cut::Overflow));
                    return Poll::Ready(Some(Err(PayloadError::Overflow)));
                }
                this.left -= n;
                this.rate.received(n);
                Poll::Ready(Some(Ok(chunk)))
            }
            Poll::Pending => {
                if this.rate.poll_short(cx) {
                    this.cut.set(Some(Cut::TooSlow));
                    return Poll::Ready(Some(Err(PayloadError::Io(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "the body came too slowly",
                    )))));
                }
                Poll::Pending
            }
            other => other,
        }
    }
}

use std::future::Future as _;

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
