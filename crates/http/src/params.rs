//! The raw attributes of a request: [`Params`], extracted from the body
//! (POST, PUT) or the query string (GET, DELETE), read with typed accessors.
//! Handlers never read them key by key: [`Params::into_request`] turns them
//! into an operation's request type (see `crate::requests`), refusing every
//! unknown key first and every key left over last, so nothing is ever
//! mass-assigned.

use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;

use actix_web::dev::Payload;
use actix_web::http::{header, Method};
use actix_web::{web, FromRequest, HttpMessage as _, HttpRequest, ResponseError as _};
use confab_domain::DomainError;
use futures_util::StreamExt as _;
use serde_json::{Map, Value};

use crate::decode::{decode_form, decode_json, decode_query, DecodeError};
use crate::error::{closes_connection, ApiError};
use crate::idempotency::BodyDigest;
pub use crate::limits::{BODY_LIMIT, BODY_TIMEOUT};

/// Where the attributes came from: form values are all strings and are
/// parsed; JSON values must have the natural type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Form,
    Json,
}

/// What a malformed id means for a parameter: the same as an unknown id of
/// that parameter, which is 404 for ids of things to act on or in
/// (`contact_id`, `group_id`, `conversation_id`) and 400 for the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    NotFound,
    Invalid,
}

/// A name with its list of values (`reactions[like][]=alice`).
pub type NamedList = (String, Vec<String>);

/// Request attributes not yet taken by the handler.
#[derive(Debug)]
pub struct Params {
    source: Source,
    /// For the items of a nested list: `attachments[0]`.
    prefix: Option<String>,
    entries: Map<String, Value>,
}

impl From<DecodeError> for ApiError {
    fn from(e: DecodeError) -> Self {
        match e {
            DecodeError::Body(message) => ApiError::body_invalid(message),
            DecodeError::Param { param, message } => ApiError::invalid(&param, message),
        }
    }
}

impl Params {
    pub fn new(source: Source, entries: Map<String, Value>) -> Self {
        Self {
            source,
            prefix: None,
            entries,
        }
    }

    /// Decodes a body of the given content type (`None`: header absent).
    pub fn from_body(content_type: Option<&str>, body: &[u8]) -> Result<Self, ApiError> {
        if body.is_empty() {
            return Ok(Self::new(Source::Form, Map::new()));
        }
        match source_of(content_type) {
            Some(Source::Form) if is_json_document(body) => Err(ApiError::body_invalid(
                "the body is a JSON document sent as a form \
                 (Content-Type: application/x-www-form-urlencoded, curl -d's default): \
                 send it with Content-Type: application/json",
            )),
            Some(Source::Form) => Ok(Self::new(Source::Form, decode_form(body)?)),
            Some(Source::Json) => Ok(Self::new(Source::Json, decode_json(body)?)),
            None => Err(ApiError::unsupported_media_type()),
        }
    }

    /// Decodes a raw (still percent-encoded) query string.
    pub fn from_query(query: &str) -> Result<Self, ApiError> {
        Ok(Self::new(Source::Form, decode_query(query.as_bytes())?))
    }

    /// The full name of `key` as the client wrote it.
    fn name(&self, key: &str) -> String {
        echo(&match &self.prefix {
            Some(prefix) => format!("{prefix}[{key}]"),
            None => key.to_owned(),
        })
    }

    fn invalid(&self, key: &str, what: &str) -> ApiError {
        let name = self.name(key);
        ApiError::invalid(&name, format!("{name} {what}"))
    }

    /// A domain rule's refusal, its field named as this level's params are.
    pub fn domain(&self, e: DomainError) -> ApiError {
        ApiError::from(e).nested_in(self.prefix.as_deref())
    }

    pub fn has(&self, key: &str) -> bool {
        self.entries.contains_key(key)
    }

    fn take(&mut self, key: &str) -> Option<Value> {
        self.entries.shift_remove(key)
    }

    pub fn optional_str(&mut self, key: &str) -> Result<Option<String>, ApiError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.invalid(key, "must be a string")),
        }
    }

    pub fn required_str(&mut self, key: &str) -> Result<String, ApiError> {
        self.optional_str(key)?
            .ok_or_else(|| ApiError::missing(&self.name(key)))
    }

    /// `true` or `false` in any letter case, or `1` or `0` (docs/api.md
    /// "Requests and answers": Python's `requests` sends `True`): in a form or query string as
    /// text, in JSON as a boolean or the number 1 or 0.
    pub fn optional_bool(&mut self, key: &str) -> Result<Option<bool>, ApiError> {
        let value = match self.take(key) {
            None => return Ok(None),
            Some(v) => v,
        };
        let parsed = match (self.source, &value) {
            (Source::Json, Value::Bool(b)) => Some(*b),
            (Source::Json, Value::Number(n)) => match n.as_u64() {
                Some(1) => Some(true),
                Some(0) => Some(false),
                _ => None,
            },
            (Source::Form, Value::String(s)) => bool_text(s),
            _ => None,
        };
        parsed
            .map(Some)
            .ok_or_else(|| self.invalid(key, "must be a boolean: true or false (or 1 or 0)"))
    }

    pub fn required_bool(&mut self, key: &str) -> Result<bool, ApiError> {
        self.optional_bool(key)?
            .ok_or_else(|| ApiError::missing(&self.name(key)))
    }

    fn int_of(&self, key: &str, value: &Value) -> Result<i64, ApiError> {
        let parsed = match (self.source, value) {
            (Source::Json, Value::Number(n)) => n.as_i64(),
            (Source::Form, Value::String(s)) => s.parse().ok(),
            _ => None,
        };
        parsed.ok_or_else(|| self.invalid(key, "must be an integer"))
    }

    pub fn optional_int(&mut self, key: &str) -> Result<Option<i64>, ApiError> {
        match self.take(key) {
            None => Ok(None),
            Some(v) => self.int_of(key, &v).map(Some),
        }
    }

    pub fn required_int(&mut self, key: &str) -> Result<i64, ApiError> {
        self.optional_int(key)?
            .ok_or_else(|| ApiError::missing(&self.name(key)))
    }

    /// `Some(None)` for an empty string or JSON `null` (clears the value).
    pub fn optional_clearable_int(&mut self, key: &str) -> Result<Option<Option<i64>>, ApiError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Null) => Ok(Some(None)),
            Some(Value::String(s)) if s.is_empty() => Ok(Some(None)),
            Some(v) => self
                .int_of(key, &v)
                .map_err(|_| self.invalid(key, "must be an integer, or empty to clear it"))
                .map(|n| Some(Some(n))),
        }
    }

    fn id_of<T: FromStr>(&self, key: &str, raw: &str, malformed: Malformed) -> Result<T, ApiError> {
        raw.parse().map_err(|_| match malformed {
            Malformed::NotFound => ApiError::not_found(Some(&self.name(key))),
            Malformed::Invalid => self.invalid(key, "is not a valid id"),
        })
    }

    pub fn optional_id<T: FromStr>(
        &mut self,
        key: &str,
        malformed: Malformed,
    ) -> Result<Option<T>, ApiError> {
        match self.optional_str(key)? {
            None => Ok(None),
            Some(raw) => self.id_of(key, &raw, malformed).map(Some),
        }
    }

    pub fn required_id<T: FromStr>(
        &mut self,
        key: &str,
        malformed: Malformed,
    ) -> Result<T, ApiError> {
        let raw = self.required_str(key)?;
        self.id_of(key, &raw, malformed)
    }

    /// `Some(None)` for an empty string or JSON `null` (clears the value).
    pub fn optional_clearable_id<T: FromStr>(
        &mut self,
        key: &str,
        malformed: Malformed,
    ) -> Result<Option<Option<T>>, ApiError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Null) => Ok(Some(None)),
            Some(Value::String(s)) if s.is_empty() => Ok(Some(None)),
            Some(Value::String(s)) => self.id_of(key, &s, malformed).map(|id| Some(Some(id))),
            Some(_) => Err(self.invalid(key, "must be an id, or empty to clear it")),
        }
    }

    /// A list of strings: `key[]=a&key[]=b`, or a JSON array. Absent: empty.
    pub fn string_list(&mut self, key: &str) -> Result<Vec<String>, ApiError> {
        match self.take(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .into_iter()
                .map(|item| match item {
                    Value::String(s) => Ok(s),
                    _ => Err(self.invalid(key, "must be a list of strings")),
                })
                .collect(),
            Some(_) => Err(self.invalid(
                key,
                &format!(
                    "must be a list: send {}[]=<value> for each item",
                    self.name(key)
                ),
            )),
        }
    }

    /// A list of ids; a malformed one is a 400 naming the list.
    pub fn id_list<T: FromStr>(&mut self, key: &str) -> Result<Vec<T>, ApiError> {
        self.string_list(key)?
            .iter()
            .map(|raw| {
                raw.parse()
                    .map_err(|_| self.invalid(key, "must list valid ids only"))
            })
            .collect()
    }

    /// A list of objects (`key[0][field]=...`, or a JSON array of objects),
    /// each as its own `Params` whose names are prefixed `key[i]`.
    pub fn optional_objects(&mut self, key: &str) -> Result<Option<Vec<Params>>, ApiError> {
        let items = match self.take(key) {
            None => return Ok(None),
            Some(Value::Array(items)) => items,
            Some(_) => {
                return Err(self.invalid(
                    key,
                    &format!(
                        "must be a list of objects: {}[0][<field>]=<value>",
                        self.name(key)
                    ),
                ))
            }
        };
        let base = self.name(key);
        items
            .into_iter()
            .enumerate()
            .map(|(i, item)| {
                let name = format!("{base}[{i}]");
                match item {
                    Value::Object(entries) => Ok(Params {
                        source: self.source,
                        prefix: Some(name),
                        entries,
                    }),
                    _ => Err(ApiError::invalid(
                        &name,
                        format!("{name} must be an object"),
                    )),
                }
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// Named lists of strings: `key[name][]=value` in forms; in JSON
    /// `{"name": ["value"]}` or `[{"name": ["value"]}, ...]` (the shape the
    /// API answers with). Names in the order given. Any shape error names
    /// `key` itself.
    pub fn optional_named_lists(&mut self, key: &str) -> Result<Option<Vec<NamedList>>, ApiError> {
        let name = self.name(key);
        let shape_error = || {
            ApiError::invalid(
                &name,
                format!("{name} must map names to lists of strings: {name}[<name>][]=<value>"),
            )
        };
        let objects = match self.take(key) {
            None => return Ok(None),
            Some(Value::Object(map)) => vec![map],
            Some(Value::Array(items)) if self.source == Source::Json => items
                .into_iter()
                .map(|item| match item {
                    Value::Object(map) => Ok(map),
                    _ => Err(shape_error()),
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(_) => return Err(shape_error()),
        };
        let mut out = Vec::new();
        for (name, values) in objects.into_iter().flatten() {
            let Value::Array(values) = values else {
                return Err(shape_error());
            };
            let values = values
                .into_iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s),
                    _ => Err(shape_error()),
                })
                .collect::<Result<Vec<_>, _>>()?;
            out.push((name, values));
        }
        Ok(Some(out))
    }

    /// Refuses, before anything is read, the first key (in the client's
    /// order) that `knows` does not know (`Params::into_request`, in
    /// `requests`).
    pub fn allow(&self, knows: impl Fn(&str) -> bool) -> Result<(), ApiError> {
        match self.entries.keys().find(|k| !knows(k.as_str())) {
            Some(key) => Err(ApiError::unknown(&self.name(key))),
            None => Ok(()),
        }
    }

    /// Refuses whatever the request did not take (a safety net behind
    /// [`Params::allow`]).
    pub fn finish(self) -> Result<(), ApiError> {
        match self.entries.keys().next() {
            Some(key) => Err(ApiError::unknown(&self.name(key))),
            None => Ok(()),
        }
    }
}

/// Whether a body is a JSON object or array (the `curl -d '{...}'` mistake:
/// no form has a key starting with `{` or `[` that parses whole as JSON).
fn is_json_document(body: &[u8]) -> bool {
    let start = body.iter().position(|b| !b.is_ascii_whitespace());
    start.is_some_and(|i| matches!(body[i], b'{' | b'['))
        && serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok()
}

/// A boolean written as text: `true`/`false` in any letter case, `1`/`0`.
fn bool_text(s: &str) -> Option<bool> {
    if s.eq_ignore_ascii_case("true") || s == "1" {
        Some(true)
    } else if s.eq_ignore_ascii_case("false") || s == "0" {
        Some(false)
    } else {
        None
    }
}

/// At most this many characters of a client's input are echoed in an
/// error's `param` or `message` (docs/api.md "Requests and answers").
pub const ECHO_MAX: usize = 100;

/// `text` cut to [`ECHO_MAX`] characters (then `...`), for an error that
/// names what the client sent.
pub fn echo(text: &str) -> String {
    match text.char_indices().nth(ECHO_MAX) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}...", &text[..cut]),
    }
}

/// Whether the request says a body follows: a `Content-Length` above 0, or
/// any `Transfer-Encoding` (chunked).
fn declares_body(req: &HttpRequest) -> bool {
    let headers = req.headers();
    headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim() != "0")
}

/// How a non-empty body of this media type is decoded (only the type
/// before `;` counts, in any case); `None`: it is not (415).
fn source_of(content_type: Option<&str>) -> Option<Source> {
    let essence = content_type?.split(';').next()?.trim();
    if essence.eq_ignore_ascii_case("application/x-www-form-urlencoded") {
        Some(Source::Form)
    } else if essence.eq_ignore_ascii_case("application/json") {
        Some(Source::Json)
    } else {
        None
    }
}

/// Reads the body as at most [`BODY_LIMIT`] bytes, whatever the framing,
/// within [`BODY_TIMEOUT`]. On a refusal `payload` is left to the caller
/// with the rest of the body unread (see `unread_body`).
async fn read_body(req: &HttpRequest, payload: &mut Payload) -> Result<web::Bytes, ApiError> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > BODY_LIMIT as u64) {
        return Err(ApiError::payload_too_large(BODY_LIMIT));
    }
    let capacity = declared.map_or(0, |n| usize::try_from(n).unwrap_or(BODY_LIMIT));
    let read = async {
        let mut body = web::BytesMut::with_capacity(capacity);
        while let Some(chunk) = payload.next().await {
            let chunk = chunk
                .map_err(|e| ApiError::body_invalid(format!("the body could not be read: {e}")))?;
            if body.len() + chunk.len() > BODY_LIMIT {
                return Err(ApiError::payload_too_large(BODY_LIMIT));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body.freeze())
    };
    tokio::time::timeout(BODY_TIMEOUT, read)
        .await
        .unwrap_or_else(|_| Err(ApiError::request_timeout()))
}

/// Attributes of a request: the query string for GET and DELETE (their body
/// is ignored); the body for POST and PUT, which take no query parameters.
impl FromRequest for Params {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let req = req.clone();
        let mut payload = payload.take();
        Box::pin(async move {
            let params = Params::read(&req, &mut payload).await;
            if let Err(e) = &params {
                if closes_connection(e.status_code()) {
                    // The rest of the body is not read (`unread_body`).
                    crate::unread_body::hold(&req, payload);
                }
            }
            params
        })
    }
}

impl Params {
    async fn read(req: &HttpRequest, payload: &mut Payload) -> Result<Self, ApiError> {
        let query = Params::from_query(req.query_string())?;
        if req.method() == Method::GET || req.method() == Method::DELETE {
            return Ok(query);
        }
        query.finish()?;
        // Compressed request bodies are not decoded: refuse them rather
        // than misreading the bytes.
        let encoded = req
            .headers()
            .get(header::CONTENT_ENCODING)
            .is_some_and(|e| !e.as_bytes().eq_ignore_ascii_case(b"identity"));
        if encoded {
            return Err(ApiError::unsupported_media_type()
                .with_message("compressed bodies are not accepted: drop Content-Encoding"));
        }
        let content_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap_or("invalid"));
        // A body of a type we do not take is refused before a byte of it is
        // read (the connection then closes: docs/api.md "Limits").
        if declares_body(req) && source_of(content_type).is_none() {
            return Err(ApiError::unsupported_media_type());
        }
        let body = read_body(req, payload).await?;
        let params = Params::from_body(content_type, &body)?;
        // What an idempotency key compares a retry by: its parameters, not
        // their bytes.
        req.extensions_mut()
            .insert(BodyDigest::of_params(&params.entries));
        Ok(params)
    }
}

#[cfg(test)]
mod tests;
