//! An upload's body: the multipart form read as a stream, part by part,
//! against the size, rate and time limits, and its file stored as it
//! comes.

use std::cell::{Cell, RefCell};
use std::future::Future as _;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use actix_multipart::Multipart;
use actix_web::dev::Payload;
use actix_web::error::PayloadError;
use actix_web::http::header::{self};
use actix_web::web::Bytes;
use actix_web::{HttpMessage as _, HttpRequest, HttpResponse};
use confab_domain::{Attachment, Filename};
use confab_service::{Completion, StoredResponse};
use futures_util::{Stream, StreamExt as _};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::idempotency::{self, respond, Begun, BodyDigest};
use crate::links::FileLinks;
use crate::routes::created_json;
use crate::service::Service;
use crate::wire;

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
pub(super) async fn receive(
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
                Some(other) => return Err(ApiError::unknown(&crate::params::echo(other))),
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
