//! `Idempotency-Key` on POST (docs/api.md "Retry safely: idempotency keys"), the HTTP side: reading and
//! checking the header, the request's fingerprint, answering a replay, and
//! keeping the answer of a run. The rules (claims, leases, 24 h) are the
//! service's; the answer of a successful run is stored by the write itself,
//! in its transaction.

use std::future::Future;

use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{HttpMessage as _, HttpRequest, HttpResponse, ResponseError as _};
use confab_domain::Contact;
use confab_service::{
    Completion, Confab, IdempotencyKey, Idempotent, KeyClaim, ServiceError, StoredResponse,
};
use sha2::{Digest as _, Sha256};

use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::Required;
use utoipa::IntoParams;

use crate::error::{ApiError, IDEMPOTENCY_KEY};

/// The header on a replayed answer.
pub const REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// SHA-256 of the request's parameters, left in the request's extensions
/// by the body reader so that the fingerprint needs no second copy of the
/// body.
#[derive(Debug, Clone, Copy)]
pub struct BodyDigest(pub [u8; 32]);

impl BodyDigest {
    /// The digest of raw bytes (a request without a body: none).
    pub fn of(body: &[u8]) -> Self {
        Self(Sha256::digest(body).into())
    }

    /// The digest of decoded parameters: the same whatever they were sent
    /// as (a form or JSON), in whatever key order and spacing (docs/api.md
    /// "Requests and answers": a mobile retry that serializes its body again is the
    /// same request). Every value counts as its text (`true`, `3600`; JSON
    /// `null` as the empty text a form clears with); objects by sorted
    /// key; lists in order; each piece tagged and length-prefixed, so that
    /// no two different trees share a digest input.
    pub fn of_params(params: &serde_json::Map<String, serde_json::Value>) -> Self {
        let mut hash = Sha256::new();
        canonical_object(&mut hash, params);
        Self(hash.finalize().into())
    }
}

fn canonical_object(hash: &mut Sha256, map: &serde_json::Map<String, serde_json::Value>) {
    hash.update(b"o");
    hash.update((map.len() as u64).to_be_bytes());
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    for key in keys {
        canonical_text(hash, key);
        canonical(hash, &map[key.as_str()]);
    }
}

fn canonical(hash: &mut Sha256, value: &serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Object(map) => canonical_object(hash, map),
        Value::Array(items) => {
            hash.update(b"a");
            hash.update((items.len() as u64).to_be_bytes());
            for item in items {
                canonical(hash, item);
            }
        }
        Value::String(s) => canonical_text(hash, s),
        Value::Bool(b) => canonical_text(hash, if *b { "true" } else { "false" }),
        Value::Number(n) => canonical_text(hash, &n.to_string()),
        Value::Null => canonical_text(hash, ""),
    }
}

fn canonical_text(hash: &mut Sha256, text: &str) {
    hash.update(b"s");
    hash.update((text.len() as u64).to_be_bytes());
    hash.update(text.as_bytes());
}

/// What makes two requests "the same request": method, path and
/// parameters.
fn fingerprint(req: &HttpRequest) -> String {
    let body = req
        .extensions()
        .get::<BodyDigest>()
        .copied()
        .unwrap_or_else(|| BodyDigest::of(b""));
    fingerprint_of(req, body)
}

/// The fingerprint of a request whose parameters have the digest `body`
/// (an upload's: its parts, the file's bytes by their SHA-256).
pub fn fingerprint_of(req: &HttpRequest, body: BodyDigest) -> String {
    let mut hash = Sha256::new();
    hash.update(req.method().as_str());
    hash.update([0]);
    hash.update(req.path());
    hash.update([0]);
    hash.update(body.0);
    format!("{:x}", hash.finalize())
}

/// The answer kept for an idempotency key, as an HTTP response.
pub fn respond(stored: StoredResponse) -> HttpResponse {
    let status = StatusCode::from_u16(stored.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = HttpResponse::build(status);
    response.content_type(mime_json());
    if let Some(location) = &stored.location {
        response.insert_header((header::LOCATION, location.as_str()));
    }
    response.body(stored.body)
}

/// 429 `idempotency_quota` with `Retry-After`: the caller's new keys are
/// spent until the next UTC day (a request without a key still runs).
fn quota_spent(max: u32, retry_after_secs: u64) -> HttpResponse {
    let mut response = HttpResponse::from_error(ApiError::idempotency_quota(max, retry_after_secs));
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
    response
}

fn mime_json() -> HeaderValue {
    HeaderValue::from_static("application/json")
}

/// The `Idempotency-Key` header, in the `params(...)` of the operations
/// that honour it (a retry with the same key and parameters replays the
/// first answer). Only those list it: an operation that would ignore the
/// key must not promise a safe retry. The errors a key can bring (409, 422,
/// the daily quota's 429) are added with it by `add_v1_errors` of the OpenAPI document.
pub struct IdempotencyKeyHeader;

impl IntoParams for IdempotencyKeyHeader {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let key = ParameterBuilder::new()
            .name(IDEMPOTENCY_KEY)
            .parameter_in(ParameterIn::Header)
            .required(Required::False)
            .description(Some(
                "makes retrying safe: the first answer is kept 24 h per caller and key and \
                 replayed to a retry of the same request (with `Idempotent-Replayed: true`)",
            ))
            .schema(Some(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .min_length(Some(1))
                    .max_length(Some(255))
                    .pattern(Some("^[\\x20-\\x7E]+$")),
            ))
            .build();
        vec![key]
    }
}

/// The request's `Idempotency-Key`, when it has one.
///
/// # Errors
/// 400 naming the header for a malformed key.
pub fn key_of(req: &HttpRequest) -> Result<Option<IdempotencyKey>, ApiError> {
    let Some(raw) = req.headers().get(IDEMPOTENCY_KEY) else {
        return Ok(None);
    };
    let key = raw
        .to_str()
        .map_err(|_| {
            ApiError::invalid(
                IDEMPOTENCY_KEY,
                "Idempotency-Key must be 1 to 255 visible ASCII characters",
            )
        })
        .and_then(|k| IdempotencyKey::parse(k).map_err(ApiError::from))?;
    Ok(Some(key))
}

/// What a request with a key does, once its fingerprint is known.
pub enum Begun {
    /// Runs, completing this claim with its answer ([`finish`]).
    Run(KeyClaim),
    /// Is answered at once: a replay (`Idempotent-Replayed: true`), or 429
    /// `idempotency_quota`.
    Answered(HttpResponse),
}

/// Claims `key` for the request of this `fingerprint`.
///
/// # Errors
/// 409 while another run of the request holds the key, 422 for a key used
/// by another request.
pub async fn begin(
    service: &Confab,
    caller: &Contact,
    key: IdempotencyKey,
    fingerprint: String,
) -> Result<Begun, ApiError> {
    match service.begin_idempotent(caller, key, fingerprint).await {
        Ok(Idempotent::Replay(stored)) => {
            let mut response = respond(stored);
            response
                .headers_mut()
                .insert(REPLAYED, HeaderValue::from_static("true"));
            Ok(Begun::Answered(response))
        }
        Ok(Idempotent::Run(claim)) => Ok(Begun::Run(claim)),
        Err(ServiceError::IdempotencyQuota {
            max,
            retry_after_secs,
        }) => Ok(Begun::Answered(quota_spent(max, retry_after_secs))),
        Err(e) => Err(e.into()),
    }
}

/// Ends the run of a claimed key with what it came to: a success was kept
/// by its write; a failure that may pass (5xx, 429, a quota's 413) frees
/// the key for a retry; any other answer the operation decided is kept
/// for retries like a success.
pub async fn finish<T>(
    service: &Confab,
    claim: KeyClaim,
    outcome: Result<T, ServiceError>,
) -> Result<T, ApiError> {
    match outcome {
        // The write kept the answer in its own transaction.
        Ok(done) => Ok(done),
        Err(ServiceError::IdempotencyInFlight) => Err(ApiError::idempotency_in_flight()),
        Err(e) => {
            let passing = matches!(e, ServiceError::UploadQuota { .. });
            let error = ApiError::from(e);
            if passing
                || error.status_code().is_server_error()
                || error.status_code() == StatusCode::TOO_MANY_REQUESTS
            {
                // A failure (5xx: nothing was written), or a quota that
                // refused the write (429, 413 `storage_quota`: a retry
                // later may run), frees the key so that a retry runs
                // again. In the background: the database may be what
                // failed, and the answer must not wait on it a second time
                // (the lease frees the key if this cannot).
                let service = service.clone();
                tokio::spawn(async move { service.end_idempotent(claim, None).await });
            } else {
                // An answer the operation decided (400, 403, 404) is kept
                // like a success; the database just answered.
                let keep = StoredResponse {
                    code: error.status_code().as_u16(),
                    location: None,
                    body: error.body_text(),
                };
                service.end_idempotent(claim, Some(keep)).await;
            }
            Err(error)
        }
    }
}

/// Runs a POST's operation `run`, honouring the request's idempotency key
/// when it has one. `render` makes the answer of a success; it is called
/// inside the write's transaction (to keep the answer) and for the answer
/// sent, so both are the same bytes (a send hands both the one JSON of its
/// message, see [`crate::payloads::RenderedOnce`]).
///
/// # Errors
/// The operation's, plus 400 for a malformed key, 409 while another run of
/// the request holds the key and 422 for a key used by another request.
/// A new key past the caller's quota of the day is answered 429
/// `idempotency_quota` (with `Retry-After`) without running `run`.
pub async fn post<T, R, F, Fut>(
    service: &Confab,
    caller: &Contact,
    req: &HttpRequest,
    render: R,
    run: F,
) -> Result<HttpResponse, ApiError>
where
    T: 'static,
    R: Fn(&T) -> StoredResponse + Clone + Send + 'static,
    F: FnOnce(Option<Completion<T>>) -> Fut,
    Fut: Future<Output = Result<T, ServiceError>>,
{
    let Some(key) = key_of(req)? else {
        let done = run(None).await?;
        return Ok(respond(render(&done)));
    };
    let claim = match begin(service, caller, key, fingerprint(req)).await? {
        Begun::Run(claim) => claim,
        Begun::Answered(response) => return Ok(response),
    };
    let outcome = run(Some(Completion::new(claim.clone(), render.clone()))).await;
    let done = finish(service, claim, outcome).await?;
    Ok(respond(render(&done)))
}
