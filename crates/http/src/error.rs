//! The one error type of the HTTP layer. It alone knows status codes, the
//! error body of the contract (`{"type", "code", "message", "param"}`) and
//! the request parameter each domain [`Field`] is read from.

use std::borrow::Cow;
use std::error::Error;
use std::fmt;

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use confab_domain::{Field, Rule};
use confab_service::EVENT_TTL_SECS;

pub use from::param;
use serde::Serialize;
use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Schema, SchemaType, Type};
use utoipa::openapi::RefOr;

/// An error answer. Build it with the constructors below or `From` a
/// service or domain error; actix turns it into the response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    param: Option<String>,
    /// For 405: the methods the path takes.
    allow: Option<&'static str>,
    /// `Retry-After`, in seconds, for a refusal that ends at a known time
    /// (32 bits: this type stays small enough to return by value).
    retry_after: Option<u32>,
    /// For 401: a token came and was refused (unknown, malformed, revoked,
    /// expired): the challenge says `error="invalid_token"` (RFC 6750
    /// section 3.1). Without it the challenge is a bare `Bearer`.
    invalid_token: bool,
    /// For 5xx: the cause with its chain of sources, for the request's log
    /// line only (never in the body).
    cause: Option<String>,
}

#[derive(Serialize)]
pub struct ErrorBody<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    code: &'static str,
    message: &'a str,
    param: Option<&'a str>,
}

/// Every `code` an error body can carry.
pub const CODES: &[&str] = &[
    "body_invalid",
    "parameter_missing",
    "parameter_invalid",
    "parameter_unknown",
    "unauthorized",
    "token_expired",
    "forbidden",
    "not_found",
    "method_not_allowed",
    "conflict",
    "payload_too_large",
    "unsupported_media_type",
    "idempotency_key_reused",
    "rate_limited",
    "too_many_streams",
    "too_many_connections",
    "too_many_uploads",
    "storage_quota",
    "insufficient_storage",
    "too_many_searches",
    "contact_blocked",
    "idempotency_quota",
    "report_quota",
    "request_timeout",
    "range_not_satisfiable",
    "internal_error",
    "unavailable",
    // What `for_status` gives a 4xx status the contract does not list.
    "invalid_request",
];

/// The schema of the error body, named `Error` in the OpenAPI document.
impl utoipa::PartialSchema for ErrorBody<'_> {
    fn schema() -> RefOr<Schema> {
        let string = || ObjectBuilder::new().schema_type(Type::String);
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .property(
                "type",
                string()
                    .enum_values(Some(["invalid_request", "api_error"]))
                    .description(Some("invalid_request for 4xx, api_error for 5xx")),
            )
            .required("type")
            .property(
                "code",
                string()
                    .enum_values(Some(CODES.iter().copied()))
                    .description(Some("for programs")),
            )
            .required("code")
            .property("message", string().description(Some("for humans")))
            .required("message")
            .property(
                "param",
                ObjectBuilder::new()
                    .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
                    .description(Some("the offending parameter, or null")),
            )
            .required("param")
            .additional_properties(Some(AdditionalProperties::FreeForm(false)))
            .into()
    }
}

impl utoipa::ToSchema for ErrorBody<'_> {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Error")
    }
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            param: None,
            allow: None,
            retry_after: None,
            invalid_token: false,
            cause: None,
        }
    }

    fn with_param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    /// This error, naming `param` as its cause.
    pub fn on(self, param: &str) -> Self {
        self.with_param(param)
    }

    pub fn body_invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "body_invalid", message)
    }

    pub fn missing(param: &str) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "parameter_missing",
            format!("{param} is required"),
        )
        .with_param(param)
    }

    /// `message` is the whole sentence, usually starting with the param.
    pub fn invalid(param: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "parameter_invalid", message).with_param(param)
    }

    pub fn unknown(param: &str) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "parameter_unknown",
            format!("{param} is not a parameter of this operation"),
        )
        .with_param(param)
    }

    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a valid access token is required: Authorization: Bearer <token>",
        )
    }

    /// 401 `unauthorized` for a credential that came and was refused
    /// (unknown, malformed, revoked): a new token is needed, not a fresh
    /// copy of this one.
    pub fn invalid_token() -> Self {
        Self {
            invalid_token: true,
            ..Self::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "the access token is unknown, malformed or revoked",
            )
        }
    }

    /// 401 `unauthorized` for a refused credential, with its own
    /// explanation (an event ticket).
    pub fn invalid_token_because(message: impl Into<String>) -> Self {
        Self {
            invalid_token: true,
            ..Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
        }
    }

    /// 401 `token_expired`: the credential was good and has expired; the
    /// client gets a new one (from its app's backend) and tries again.
    pub fn token_expired(message: impl Into<String>) -> Self {
        Self {
            invalid_token: true,
            ..Self::new(StatusCode::UNAUTHORIZED, "token_expired", message)
        }
    }

    /// 401 with its own explanation (a server key without
    /// `Confab-Contact`, a contact it cannot act for).
    pub fn unauthorized_because(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    /// 403 `contact_blocked`: a block between the caller and another
    /// contact refused it (docs/api.md "Blocks and reports"); `param` names the input
    /// that brought the other contact in, if one did.
    pub fn contact_blocked(by_caller: bool, param: Option<&str>) -> Self {
        let message = if by_caller {
            "you blocked this contact; unblock them first"
        } else {
            "this contact does not accept this from you"
        };
        let e = Self::new(StatusCode::FORBIDDEN, "contact_blocked", message);
        match param {
            Some(p) => e.with_param(p),
            None => e,
        }
    }

    /// Nothing there, or nothing the caller may see (the same answer).
    pub fn not_found(param: Option<&str>) -> Self {
        match param {
            None => Self::new(StatusCode::NOT_FOUND, "not_found", "no such resource"),
            Some(p) => Self::new(
                StatusCode::NOT_FOUND,
                "not_found",
                format!("{p} does not name anything you can see"),
            )
            .with_param(p),
        }
    }

    pub fn route_not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", "no such route")
    }

    pub fn method_not_allowed(allow: &'static str) -> Self {
        let mut error = Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            format!("this path takes only {allow}"),
        );
        error.allow = Some(allow);
        error
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", message)
    }

    /// 416: a `Range` that starts past the end of a file of `size` bytes.
    pub fn range_not_satisfiable(size: u64) -> Self {
        Self::new(
            StatusCode::RANGE_NOT_SATISFIABLE,
            "range_not_satisfiable",
            format!("the range lies beyond the file's {size} bytes"),
        )
    }

    /// 413: an upload past `CONFAB_MAX_UPLOAD_BYTES`.
    pub fn upload_too_large(max: u64) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("the file must be at most {max} bytes"),
        )
        .with_param("file")
    }

    pub fn payload_too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("the request body must be at most {} KiB", limit / 1024),
        )
    }

    pub fn unsupported_media_type() -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send the body as application/x-www-form-urlencoded or application/json",
        )
    }

    /// 503; the cause, with its whole chain of sources, goes to the
    /// request's log line only (see `telemetry`).
    pub fn unavailable(cause: &(dyn Error + 'static)) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "the service is temporarily unavailable; try again shortly",
        )
        .with_cause(Chain(cause))
    }

    /// 500. The cause goes to the request's log line only.
    pub fn internal(cause: &dyn fmt::Display) -> Self {
        Self::internal_response().with_cause(cause)
    }

    /// 500; the cause, with its whole chain of sources, goes to the
    /// request's log line only.
    pub fn internal_error(cause: &(dyn Error + 'static)) -> Self {
        Self::internal_response().with_cause(Chain(cause))
    }

    /// Keeps `cause` for the log (not the body).
    pub fn with_cause(mut self, cause: impl fmt::Display) -> Self {
        self.cause = Some(cause.to_string());
        self
    }

    /// What the log says about a server error.
    pub fn cause(&self) -> Option<&str> {
        self.cause.as_deref()
    }

    /// The contract's `code`.
    pub fn code(&self) -> &'static str {
        self.code
    }

    fn internal_response() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            "an internal error occurred",
        )
    }

    /// 400 `parameter_invalid` for an input that breaks a rule. The domain
    /// states the rule in its own words; where a client also needs to know
    /// how the value is written or what to do next, the API's words are
    /// added here, since only the server knows them.
    fn breaks(field: Field, rule: Rule) -> Self {
        let param = param(field);
        let message = match rule {
            Rule::TooFarInFuture { tolerance_secs } => format!(
                "{param} must be Unix seconds not more than {tolerance_secs} seconds in the future"
            ),
            Rule::EventNotKept => format!(
                "{param} must be the id of an event of the last {} days (older ones are pruned); \
                 resync with GET requests and stream without it",
                EVENT_TTL_SECS / 86_400
            ),
            rule => format!("{param} {rule}"),
        };
        Self::invalid(&param, message)
    }

    /// The same shape for a status produced outside our handlers (actix's
    /// own errors), so that no response ever has a non-JSON error body.
    pub fn for_status(status: StatusCode) -> Self {
        let code = match status.as_u16() {
            400 => "body_invalid",
            401 => return Self::unauthorized(),
            403 => "forbidden",
            404 => return Self::route_not_found(),
            405 => "method_not_allowed",
            408 => return Self::request_timeout(),
            409 => "conflict",
            413 => return Self::payload_too_large(crate::limits::BODY_LIMIT),
            415 => return Self::unsupported_media_type(),
            429 => "rate_limited",
            503 => "unavailable",
            s if s >= 500 => "internal_error",
            _ => "invalid_request",
        };
        let message = status
            .canonical_reason()
            .unwrap_or("the request failed")
            .to_owned();
        Self::new(status, code, message)
    }

    /// The same error with another human message.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    /// Prefixes the param for nested attributes: `file_url` inside
    /// `attachments[0]` becomes `attachments[0][file_url]`.
    pub fn nested_in(mut self, prefix: Option<&str>) -> Self {
        if let (Some(prefix), Some(param)) = (prefix, self.param.as_ref()) {
            let full = format!("{prefix}[{param}]");
            self.message = self.message.replacen(param.as_str(), &full, 1);
            self.param = Some(full);
        }
        self
    }

    #[cfg(test)]
    pub fn param(&self) -> Option<&str> {
        self.param.as_deref()
    }

    /// The JSON body this error is answered with.
    fn body(&self) -> ErrorBody<'_> {
        let kind = if self.status.is_server_error() {
            "api_error"
        } else {
            "invalid_request"
        };
        ErrorBody {
            kind,
            code: self.code,
            message: &self.message,
            param: self.param.as_deref(),
        }
    }

    /// The body as text, as an idempotency key keeps it.
    pub fn body_text(&self) -> String {
        serde_json::to_string(&self.body()).unwrap_or_default()
    }

    /// 409: another run of this request holds its idempotency key.
    pub fn idempotency_in_flight() -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "conflict",
            "a request with this Idempotency-Key is still in flight; retry it shortly",
        )
        .with_param(IDEMPOTENCY_KEY)
    }

    /// 422: the idempotency key was used for another request.
    pub fn idempotency_key_reused() -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "idempotency_key_reused",
            "this Idempotency-Key was used for a different request; send a new key",
        )
        .with_param(IDEMPOTENCY_KEY)
    }
}

impl ApiError {
    /// The `WWW-Authenticate` value of a 401: `Bearer`, and for a refused
    /// credential `error="invalid_token"` with the message as the
    /// description (only the characters RFC 6750 allows in it).
    fn challenge(&self) -> HeaderValue {
        if !self.invalid_token {
            return HeaderValue::from_static("Bearer");
        }
        let description: String = self
            .message
            .chars()
            .filter(|c| matches!(c, ' '..='~') && *c != '"' && *c != '\\')
            .collect();
        HeaderValue::from_str(&format!(
            "Bearer error=\"invalid_token\", error_description=\"{description}\""
        ))
        .unwrap_or_else(|_| HeaderValue::from_static("Bearer error=\"invalid_token\""))
    }
}

/// The header a POST's idempotency key comes in, named as `param`.
pub const IDEMPOTENCY_KEY: &str = "Idempotency-Key";

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ApiError {}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status);
        if self.status == StatusCode::UNAUTHORIZED {
            response.insert_header((header::WWW_AUTHENTICATE, self.challenge()));
        }
        if let Some(allow) = self.allow {
            response.insert_header((header::ALLOW, HeaderValue::from_static(allow)));
        }
        if let Some(secs) = self.retry_after {
            response.insert_header((header::RETRY_AFTER, HeaderValue::from(secs)));
        }
        // The rest of a body we refuse is never read (docs/api.md "Limits"
        // "Hostile load"): the connection closes after the answer instead
        // of draining whatever the client still sends.
        if closes_connection(self.status) {
            response.force_close();
        }
        response.json(self.body())
    }
}

/// The refusals after which the request's body is not read on: no or a
/// bad token, a body too slow, too large or of the wrong type.
pub fn closes_connection(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::UNAUTHORIZED
            | StatusCode::REQUEST_TIMEOUT
            | StatusCode::PAYLOAD_TOO_LARGE
            | StatusCode::UNSUPPORTED_MEDIA_TYPE
    )
}

/// Writes an error and each of its sources: `a: b: c`.
struct Chain<'a>(&'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        for cause in std::iter::successors(self.0.source(), |&e| e.source()) {
            write!(f, ": {cause}")?;
        }
        Ok(())
    }
}

mod from;
mod load;
#[cfg(test)]
mod tests;
