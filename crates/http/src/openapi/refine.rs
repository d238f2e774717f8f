//! What the document says beyond what the route descriptions give it, so
//! that clients generated from it work as generated:
//! - a list's items are the very schema of the object (`$ref`), so that a
//!   generated client reads an object the same way alone and in a page (the
//!   same class, the same id type);
//! - every id is `format: uuid` (path `{id}`s, and the ids of the wire
//!   objects: `id`, `*_id`, the items of `*_ids` and of `mentions`);
//! - a request body is described once, as JSON. The server also reads the
//!   same parameters as a form, which the body's description says; a second
//!   media type would make generators offer two models for one body (and
//!   openapi-python-client 0.29 then writes modules that do not import);
//! - a body is `required` unless the request is whole without one (every
//!   parameter optional);
//! - the strings that take one of a few values list them (`enum`): event
//!   types, a member's role.

use confab_domain::{EventType, GroupRole};
use serde_json::{json, Value};

const FORM: &str = "application/x-www-form-urlencoded";

/// Applies every refinement to the document, as JSON.
pub(super) fn refine(doc: &mut Value) {
    list_items_by_ref(doc);
    uuid_path_ids(doc);
    uuid_object_ids(doc);
    enums(doc);
    json_bodies(doc);
}

/// The prefix of a page's schema (`ListDto_MessageDto`), whose `data` items
/// are written inline by the description.
const LIST: &str = "ListDto_";

/// A page's items become a `$ref` to their object's schema, when that schema
/// is the same as the inline one (it always is: both come from one type).
fn list_items_by_ref(doc: &mut Value) {
    let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let named = schemas.clone();
    for (name, schema) in schemas.iter_mut() {
        let Some(item) = name.strip_prefix(LIST) else {
            continue;
        };
        let Some(items) = schema.pointer_mut("/properties/data/items") else {
            continue;
        };
        if named.get(item) == Some(&*items) {
            *items = json!({ "$ref": format!("#/components/schemas/{item}") });
        }
    }
}

/// The strings that take one of a few values say which (before the form
/// schemas are derived, which keep them).
fn enums(doc: &mut Value) {
    let event_types: Vec<Value> = EventType::ALL
        .iter()
        .map(|t| Value::String(t.name().to_owned()))
        .collect();
    let roles: Vec<Value> = [GroupRole::Owner, GroupRole::Member]
        .iter()
        .map(|r| Value::String(r.as_str().to_owned()))
        .collect();
    let targets = [
        ("/components/schemas/EventDto/properties/type", &event_types),
        (
            "/components/schemas/WebhookDto/properties/events/items",
            &event_types,
        ),
        (
            "/components/schemas/CreateWebhookIn/properties/events/items",
            &event_types,
        ),
        ("/components/schemas/GroupMemberDto/properties/role", &roles),
    ];
    for (pointer, values) in targets {
        if let Some(schema) = doc.pointer_mut(pointer).and_then(Value::as_object_mut) {
            schema.insert("enum".to_owned(), Value::Array(values.clone()));
        }
    }
}

fn uuid() -> Value {
    json!("uuid")
}

/// Calls `f` with every operation of the document.
fn for_each_operation(doc: &mut Value, mut f: impl FnMut(&mut Value)) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for item in paths.values_mut().filter_map(Value::as_object_mut) {
        item.values_mut().for_each(&mut f);
    }
}

/// `{id}` in a path names an object by its id: a UUID.
fn uuid_path_ids(doc: &mut Value) {
    for_each_operation(doc, |operation| {
        let Some(params) = operation
            .get_mut("parameters")
            .and_then(Value::as_array_mut)
        else {
            return;
        };
        for param in params {
            if param["in"] == "path" && param["name"] == "id" {
                if let Some(schema) = param.get_mut("schema").and_then(Value::as_object_mut) {
                    schema.insert("format".to_owned(), uuid());
                }
            }
        }
    });
}

/// Whether a property of this name holds an id.
fn names_an_id(name: &str) -> bool {
    name == "id" || name.ends_with("_id")
}

/// Whether a property of this name holds a list of ids.
fn names_ids(name: &str) -> bool {
    name.ends_with("_ids") || name == "mentions"
}

/// The wire objects (components `*Dto`) say which of their strings are
/// ids.
fn uuid_object_ids(doc: &mut Value) {
    let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for (name, schema) in schemas.iter_mut() {
        if !name.ends_with("Dto") {
            continue;
        }
        let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
            continue;
        };
        for (prop, value) in props.iter_mut() {
            let target = if names_an_id(prop) {
                Some(value)
            } else if names_ids(prop) {
                value.get_mut("items")
            } else {
                None
            };
            if let Some(target) = target.and_then(Value::as_object_mut) {
                let is_string = match target.get("type") {
                    Some(Value::String(t)) => t == "string",
                    Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
                    _ => false,
                };
                if is_string {
                    target.insert("format".to_owned(), uuid());
                }
            }
        }
    }
}

/// The request bodies whose parameters are each optional but one of them
/// must be given (`contact_id` or `group_id`): no body is a 400.
const NEEDS_ONE: &[&str] = &["CreateConversationIn"];

/// What a body's description adds when the server also reads it as a form.
const AS_A_FORM: &str = "The same parameters may be sent as a form \
    (application/x-www-form-urlencoded) instead: a list as `key[]=<value>` for each item, \
    an object in bracket notation (`reactions[like][]=alice`, \
    `attachments[0][file_url]=...`).";

/// Each request body is described as JSON alone (see the module's text),
/// `required` when the request is incomplete without it.
fn json_bodies(doc: &mut Value) {
    let components = doc
        .pointer("/components/schemas")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for_each_operation(doc, |operation| {
        let Some(body) = operation
            .get_mut("requestBody")
            .and_then(Value::as_object_mut)
        else {
            return;
        };
        let Some(content) = body.get_mut("content").and_then(Value::as_object_mut) else {
            return;
        };
        let form = content.remove(FORM).is_some();
        let Some(reference) = content
            .values()
            .next()
            .and_then(|media| media.pointer("/schema/$ref"))
            .and_then(Value::as_str)
        else {
            return;
        };
        let name = reference.trim_start_matches("#/components/schemas/");
        let schema = components.get(name);
        let needs_some = schema
            .and_then(|schema| schema.get("required"))
            .and_then(Value::as_array)
            .is_some_and(|required| !required.is_empty());
        let required = needs_some || NEEDS_ONE.contains(&name);
        body.insert("required".to_owned(), Value::Bool(required));
        let has_params = schema
            .and_then(|schema| schema.get("properties"))
            .and_then(Value::as_object)
            .is_some_and(|props| !props.is_empty());
        if form && has_params {
            let description = match body.get("description").and_then(Value::as_str) {
                Some(own) => format!("{own}. {AS_A_FORM}"),
                None => AS_A_FORM.to_owned(),
            };
            body.insert("description".to_owned(), Value::String(description));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const JSON: &str = "application/json";

    #[test]
    fn a_body_is_json_alone_and_required_when_incomplete_without_it() {
        let body = |name: &str| {
            json!({"requestBody": {"content": {
                FORM: {"schema": {"$ref": format!("#/components/schemas/{name}")}},
                JSON: {"schema": {"$ref": format!("#/components/schemas/{name}")}},
            }}})
        };
        let mut doc = json!({
            "paths": {
                "/v1/groups": {"post": body("CreateGroupIn")},
                "/v1/groups/{id}": {"put": body("UpdateGroupIn")},
                "/v1/conversations": {"post": body("CreateConversationIn")},
                "/v1/events/tickets": {"post": body("NoParams")},
            },
            "components": {"schemas": {
                "CreateGroupIn": {"required": ["name"], "properties": {"name": {}}},
                "UpdateGroupIn": {"properties": {"name": {}}},
                "CreateConversationIn": {"properties": {"contact_id": {}, "group_id": {}}},
                "NoParams": {"properties": {}},
            }},
        });
        refine(&mut doc);
        let body = |path: &str, method: &str| doc["paths"][path][method]["requestBody"].clone();
        for (path, method, required) in [
            ("/v1/groups", "post", true),
            ("/v1/groups/{id}", "put", false),
            ("/v1/conversations", "post", true),
            ("/v1/events/tickets", "post", false),
        ] {
            let body = body(path, method);
            let types: Vec<&String> = body["content"]
                .as_object()
                .expect("content")
                .keys()
                .collect();
            assert_eq!(types, [JSON], "{method} {path}");
            assert_eq!(body["required"], required, "{method} {path}");
        }
        let described = body("/v1/groups", "post")["description"].clone();
        assert!(
            described.as_str().is_some_and(|d| d.contains("as a form")),
            "{described}"
        );
        assert!(body("/v1/events/tickets", "post")
            .get("description")
            .is_none());
    }

    #[test]
    fn a_pages_items_are_their_objects_schema() {
        let message = json!({"type": "object", "properties": {"id": {"type": "string"}}});
        let mut doc = json!({"components": {"schemas": {
            "MessageDto": message,
            "ListDto_MessageDto": {"properties": {"data": {"type": "array", "items": message}}},
        }}});
        refine(&mut doc);
        let schemas = &doc["components"]["schemas"];
        assert_eq!(
            schemas["ListDto_MessageDto"]["properties"]["data"]["items"],
            json!({"$ref": "#/components/schemas/MessageDto"})
        );
        assert_eq!(schemas["MessageDto"]["properties"]["id"]["format"], "uuid");
    }

    #[test]
    fn event_types_and_roles_are_enums() {
        let mut doc = json!({"components": {"schemas": {
            "EventDto": {"properties": {"type": {"type": "string"}}},
            "CreateWebhookIn": {"properties": {"events": {"type": "array", "items": {"type": "string"}}}},
            "GroupMemberDto": {"properties": {"role": {"type": "string"}}},
        }}});
        refine(&mut doc);
        let schemas = &doc["components"]["schemas"];
        let types = schemas["EventDto"]["properties"]["type"]["enum"]
            .as_array()
            .expect("enum");
        assert_eq!(types.len(), EventType::ALL.len());
        assert!(types.contains(&json!("message.created")));
        assert_eq!(
            schemas["CreateWebhookIn"]["properties"]["events"]["items"]["enum"],
            schemas["EventDto"]["properties"]["type"]["enum"]
        );
        assert_eq!(
            schemas["GroupMemberDto"]["properties"]["role"]["enum"],
            json!(["owner", "member"])
        );
    }

    #[test]
    fn ids_are_uuids() {
        let mut doc = json!({
            "paths": {"/v1/messages/{id}": {"get": {"parameters": [
                {"in": "path", "name": "id", "schema": {"type": "string"}},
            ]}}},
            "components": {"schemas": {"MessageDto": {"properties": {
                "id": {"type": "string"},
                "conversation_id": {"type": "string"},
                "group_id": {"type": ["string", "null"]},
                "contact_ids": {"type": "array", "items": {"type": "string"}},
                "mentions": {"type": "array", "items": {"type": "string"}},
                "message": {"type": "string"},
            }}}},
        });
        refine(&mut doc);
        assert_eq!(
            doc["paths"]["/v1/messages/{id}"]["get"]["parameters"][0]["schema"]["format"],
            "uuid"
        );
        let props = &doc["components"]["schemas"]["MessageDto"]["properties"];
        for key in ["id", "conversation_id", "group_id"] {
            assert_eq!(props[key]["format"], "uuid", "{key}");
        }
        assert_eq!(props["contact_ids"]["items"]["format"], "uuid");
        assert_eq!(props["mentions"]["items"]["format"], "uuid");
        assert!(props["message"].get("format").is_none());
    }
}
