//! The OpenAPI 3.1 document of the API (`GET /openapi.json`), built from
//! the very list of endpoints the server routes (see `crate::routes`): each
//! operation's parameters and bodies come from its request type, its
//! responses from its wire objects, and the error responses every `/v1`
//! operation can give are added here, once.

use actix_web::http::Method;
use utoipa::openapi::path::{HttpMethod, Operation, ParameterIn};
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{ComponentsBuilder, ObjectBuilder, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{
    ContentBuilder, Header, InfoBuilder, OpenApi, OpenApiBuilder, Paths, Ref, RefOr, Tag,
};
use utoipa::{PartialSchema, ToSchema};

use crate::error::{ErrorBody, IDEMPOTENCY_KEY};
use crate::routes::{self, V1};

const BEARER: &str = "bearer";
const SERVER_KEY: &str = "server_key";
/// The server API's prefix.
const ADMIN: &str = "/v1/admin";

mod refine;

/// The whole document, with the rules the route descriptions do not state
/// (`refine`).
pub fn document() -> OpenApi {
    let doc = described();
    let refined = serde_json::to_value(&doc).and_then(|mut json| {
        refine::refine(&mut json);
        serde_json::from_value(json)
    });
    match refined {
        Ok(refined) => refined,
        Err(error) => {
            // Cannot happen (the document is plain data); the unrefined one
            // is still true, only less precise.
            tracing::error!(%error, "cannot refine the OpenAPI document");
            doc
        }
    }
}

/// The document as the route descriptions give it.
fn described() -> OpenApi {
    let mut paths = Paths::new();
    let mut schemas = vec![(ErrorBody::name().into_owned(), ErrorBody::schema())];
    for endpoint in routes::endpoints() {
        let path = (endpoint.path)();
        for method in (endpoint.methods)() {
            let mut operation = (endpoint.operation)();
            let tags: Vec<String> = (endpoint.tags)().into_iter().map(str::to_owned).collect();
            if !tags.is_empty() {
                operation.tags = Some(tags);
            }
            let admin = path == ADMIN || path.starts_with("/v1/admin/");
            if path.starts_with(V1) {
                // An upload has its own size limit and body type.
                let upload = path == "/v1/attachments" && method == HttpMethod::Post;
                add_v1_errors(&method, &mut operation, admin, upload);
                let requirement = |scheme| SecurityRequirement::new(scheme, Vec::<String>::new());
                operation.security = Some(if admin {
                    vec![requirement(SERVER_KEY)]
                } else {
                    // A contact's token, or a server key acting for a
                    // contact (`Confab-Contact`).
                    vec![requirement(BEARER), requirement(SERVER_KEY)]
                });
            }
            paths.add_path_operation(&path, vec![method], operation);
        }
        (endpoint.schemas)(&mut schemas);
    }
    let components = ComponentsBuilder::new()
        .schemas_from_iter(schemas)
        .security_scheme(
            BEARER,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "an access token issued with `confab token issue --username <name>`",
                    ))
                    .build(),
            ),
        )
        .security_scheme(
            SERVER_KEY,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("cfb_sk_...")
                    .description(Some(
                        "a server key made with `confab key create --name <name>`: the only \
                         credential of /v1/admin (a contact's token there is 403). On the \
                         other routes it acts for a contact named by the header \
                         `Confab-Contact: <contact id>`, with exactly that contact's rights \
                         (without the header, or with an unknown contact: 401).",
                    ))
                    .build(),
            ),
        )
        .build();
    let tags = [
        "messages",
        "attachments",
        "conversations",
        "groups",
        "contacts",
        "events",
        "reports",
        "admin",
        "health",
        "docs",
    ]
    .map(Tag::new);
    OpenApiBuilder::new()
        .info(
            InfoBuilder::new()
                .title("confab")
                .version(env!("CARGO_PKG_VERSION"))
                .description(Some(
                    "A chat service: contacts, conversations, messages, groups. Bodies are \
                     application/x-www-form-urlencoded (bracket notation) or application/json \
                     with the same names; unknown parameters are refused. Timestamps are Unix \
                     seconds. A method a path does not take answers 405 with `Allow`.",
                ))
                .build(),
        )
        .paths(paths)
        .components(Some(components))
        .tags(Some(tags))
        .build()
}

/// `(method, path)` of every route the server serves, in OpenAPI syntax.
pub fn served_routes() -> Vec<(String, String)> {
    routes::served()
        .into_iter()
        .map(|(method, path)| (method.to_string(), path.to_owned()))
        .collect()
}

/// Whether the operation lists
/// [`IdempotencyKeyHeader`](crate::idempotency::IdempotencyKeyHeader).
fn takes_idempotency_key(operation: &Operation) -> bool {
    operation.parameters.iter().flatten().any(|p| {
        matches!(p, RefOr::T(p) if p.name == IDEMPOTENCY_KEY
            && matches!(p.parameter_in, ParameterIn::Header))
    })
}

/// The errors every operation under `/v1` can answer, as the contract
/// lists them; an operation's own description of a status wins.
fn add_v1_errors(method: &HttpMethod, operation: &mut Operation, admin: bool, upload: bool) {
    let method = routes::http_method(method);
    let has_body = method == Method::POST || method == Method::PUT;
    let mut errors = vec![
        (
            "400",
            "the request is malformed: body_invalid, parameter_missing, parameter_invalid or \
             parameter_unknown, `param` naming the parameter",
        ),
        (
            "401",
            "`token_expired`: the token (or event ticket) has expired, get a new one and \
             retry; `unauthorized`: no valid access token or server key (unknown, malformed \
             or revoked), or a server key without a valid `Confab-Contact`. With \
             `WWW-Authenticate: Bearer` (`error=\"invalid_token\"` when a credential came \
             and was refused)",
        ),
        (
            "404",
            "nothing by that id that the caller can see (also a malformed id)",
        ),
    ];
    if has_body {
        errors.push((
            "408",
            "the body did not arrive within 10 s (`request_timeout`)",
        ));
        if !upload {
            errors.push(("413", "the body is over 64 KiB"));
            errors.push(("415", "the body is neither a form nor JSON"));
        }
    }
    if admin {
        errors.push((
            "403",
            "the server API takes a server key, not a contact's token",
        ));
    }
    if takes_idempotency_key(operation) {
        errors.push((
            "409",
            "a request with this Idempotency-Key is still in flight",
        ));
        errors.push((
            "422",
            "this Idempotency-Key was used for a different request",
        ));
        errors.push((
            "429",
            "too many requests (`rate_limited`), or this contact stored 10,000 new \
             Idempotency-Keys today (`idempotency_quota`); both with `Retry-After`",
        ));
    }
    errors.push(("429", "too many requests (`Retry-After`)"));
    errors.push(("500", "an internal error, without details"));
    errors.push(("503", "the database cannot be reached; retry shortly"));
    for (status, description) in errors {
        operation
            .responses
            .responses
            .entry(status.to_owned())
            .or_insert_with(|| error_response(status, description).into());
    }
}

fn error_response(status: &str, description: &str) -> Response {
    let body = ContentBuilder::new()
        .schema(Some(Ref::from_schema_name(ErrorBody::name())))
        .build();
    let mut response = ResponseBuilder::new()
        .description(description)
        .content("application/json", body);
    let string = || ObjectBuilder::new().schema_type(Type::String).build();
    match status {
        "401" => response = response.header("WWW-Authenticate", Header::new(string())),
        "429" => response = response.header("Retry-After", Header::new(string())),
        _ => {}
    }
    response.build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_served_route_is_documented_and_nothing_else() {
        let doc = serde_json::to_value(document()).expect("json");
        let documented: BTreeSet<(String, String)> = doc["paths"]
            .as_object()
            .expect("paths")
            .iter()
            .flat_map(|(path, item)| {
                item.as_object()
                    .expect("path item")
                    .keys()
                    .map(|m| (m.to_uppercase(), path.clone()))
                    .collect::<Vec<_>>()
            })
            .collect();
        let served: BTreeSet<(String, String)> = served_routes().into_iter().collect();
        assert_eq!(served, documented);
        assert_eq!(doc["openapi"], "3.1.0");
    }
}
