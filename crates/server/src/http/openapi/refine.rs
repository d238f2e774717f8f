//! What the document says beyond what the route descriptions give it, so
//! that clients generated from it work (API.md section 19):
//! - every id is `format: uuid` (path `{id}`s, and the ids of the wire
//!   objects: `id`, `*_id`, the items of `*_ids`);
//! - a request body offered as JSON and as a form gets a schema for each:
//!   the JSON one as the request type describes it, the form one (`<Name>Form`)
//!   with lists under their bracketed keys (`contact_ids[]`) and without the
//!   nested objects a flat form cannot name (`reactions`, `attachments`:
//!   JSON only, as its description says). A generator then sends JSON with
//!   the JSON model, and a form that this server reads with the form model;
//! - the strings that take one of a few values list them (`enum`): event
//!   types, a member's role.

use confab_domain::{EventType, GroupRole};
use serde_json::{json, Map, Value};

const JSON: &str = "application/json";
const FORM: &str = "application/x-www-form-urlencoded";

/// Applies every refinement to the document, as JSON.
pub(super) fn refine(doc: &mut Value) {
    uuid_path_ids(doc);
    uuid_object_ids(doc);
    enums(doc);
    split_form_bodies(doc);
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

/// Whether a property of this name holds an id (or, `*_ids`, a list of
/// them).
fn names_an_id(name: &str) -> bool {
    name == "id" || name.ends_with("_id")
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
            } else if prop.ends_with("_ids") {
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

/// Each body offered both ways with one schema gets a form schema of its
/// own (see the module's text); JSON is listed first.
fn split_form_bodies(doc: &mut Value) {
    let mut forms: Map<String, Value> = Map::new();
    let components = doc
        .pointer("/components/schemas")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for_each_operation(doc, |operation| {
        let Some(content) = operation
            .pointer_mut("/requestBody/content")
            .and_then(Value::as_object_mut)
        else {
            return;
        };
        let schema_ref = |kind: &str| content.get(kind)?.pointer("/schema/$ref").cloned();
        let (Some(json_ref), Some(form_ref)) = (schema_ref(JSON), schema_ref(FORM)) else {
            return;
        };
        if json_ref != form_ref {
            return;
        }
        let Some(name) = json_ref
            .as_str()
            .and_then(|r| r.strip_prefix("#/components/schemas/"))
            .map(str::to_owned)
        else {
            return;
        };
        let Some(schema) = components.get(&name) else {
            return;
        };
        let form_name = format!("{name}Form");
        forms
            .entry(form_name.clone())
            .or_insert_with(|| form_schema(schema));
        // JSON first: a generator that offers one of the two picks
        // the first, and JSON carries every parameter.
        let json_body = content.remove(JSON);
        content.remove(FORM);
        let mut ordered = Map::new();
        if let Some(json_body) = json_body {
            ordered.insert(JSON.to_owned(), json_body);
        }
        ordered.insert(
            FORM.to_owned(),
            json!({ "schema": { "$ref": format!("#/components/schemas/{form_name}") } }),
        );
        *content = ordered;
    });
    if let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    {
        schemas.extend(forms);
    }
}

/// The form schema of a request schema: lists of strings under `key[]`,
/// nested objects (and lists of them) left to JSON.
fn form_schema(schema: &Value) -> Value {
    let mut form = schema.clone();
    let required: Vec<Value> = schema
        .get("required")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut new_required = Vec::new();
    let mut json_only = Vec::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        let mut out = Map::new();
        for (key, value) in props {
            let is_required = required.iter().any(|r| r == key);
            let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
            let items_kind = value
                .pointer("/items/type")
                .and_then(Value::as_str)
                .unwrap_or("");
            let (form_key, keep) = match (kind, items_kind) {
                ("array", "string" | "integer") => (format!("{key}[]"), true),
                ("array", _) | ("object", _) => (key.clone(), false),
                _ => (key.clone(), true),
            };
            if !keep {
                json_only.push(key.clone());
                continue;
            }
            if is_required {
                new_required.push(Value::String(form_key.clone()));
            }
            out.insert(form_key, value.clone());
        }
        form["properties"] = Value::Object(out);
    }
    if new_required.is_empty() {
        if let Some(obj) = form.as_object_mut() {
            obj.remove("required");
        }
    } else {
        form["required"] = Value::Array(new_required);
    }
    let mut description = String::from(
        "The same parameters as a form (application/x-www-form-urlencoded): a list \
         as `key[]=<value>` for each item.",
    );
    if !json_only.is_empty() {
        description.push_str(&format!(
            " {} only in JSON (or in bracket notation, `reactions[like][]=alice`, \
             `attachments[0][file_url]=...`).",
            json_only.join(", ")
        ));
    }
    form["description"] = Value::String(description);
    form
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_body_gets_a_form_schema_of_its_own() {
        let mut doc = json!({
            "paths": {"/v1/groups": {"post": {"requestBody": {"content": {
                FORM: {"schema": {"$ref": "#/components/schemas/CreateGroupIn"}},
                JSON: {"schema": {"$ref": "#/components/schemas/CreateGroupIn"}},
            }}}}},
            "components": {"schemas": {"CreateGroupIn": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string"},
                    "contact_ids": {"type": "array", "items": {"type": "string"}},
                    "reactions": {"type": "object"},
                },
            }}},
        });
        refine(&mut doc);
        let content = &doc["paths"]["/v1/groups"]["post"]["requestBody"]["content"];
        let keys: Vec<&String> = content.as_object().expect("content").keys().collect();
        assert_eq!(keys, [JSON, FORM], "JSON first");
        assert_eq!(
            content[JSON]["schema"]["$ref"],
            "#/components/schemas/CreateGroupIn"
        );
        assert_eq!(
            content[FORM]["schema"]["$ref"],
            "#/components/schemas/CreateGroupInForm"
        );
        let form = &doc["components"]["schemas"]["CreateGroupInForm"];
        assert_eq!(form["required"], json!(["name"]));
        let props = form["properties"].as_object().expect("props");
        assert!(props.contains_key("contact_ids[]") && props.contains_key("name"));
        assert!(!props.contains_key("reactions") && !props.contains_key("contact_ids"));
        assert!(form["description"]
            .as_str()
            .expect("description")
            .contains("reactions only in JSON"));
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
        assert!(props["message"].get("format").is_none());
    }
}
