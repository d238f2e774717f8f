//! The wire shape of a request's parameters, as the readers of
//! `crate::requests` describe them: a JSON schema for bodies (form or JSON)
//! and query parameters for GET and DELETE.

use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{
    AdditionalProperties, ArrayBuilder, Object, ObjectBuilder, Schema, SchemaFormat, SchemaType,
    Type,
};
use utoipa::openapi::{RefOr, Required};

use super::FromParams;

/// One parameter: its name, its schema, whether it must be given.
struct Prop {
    name: &'static str,
    schema: Schema,
    required: bool,
}

/// The parameters of one request level, in field order.
#[derive(Default)]
pub struct Shape {
    props: Vec<Prop>,
}

impl Shape {
    /// The shape of the request `R`.
    pub fn of<R: FromParams>() -> Self {
        let mut shape = Shape::default();
        R::describe(&mut shape);
        shape
    }

    pub fn add(&mut self, name: &'static str, schema: Schema, required: bool) {
        self.props.push(Prop {
            name,
            schema,
            required,
        });
    }

    pub fn make_optional(&mut self, name: &str) {
        for prop in self.props.iter_mut().filter(|p| p.name == name) {
            prop.required = false;
        }
    }

    /// An object of these properties and no others: unknown parameters are
    /// refused.
    pub fn into_schema(self) -> Schema {
        let mut object = ObjectBuilder::new()
            .schema_type(Type::Object)
            .additional_properties(Some(AdditionalProperties::FreeForm(false)));
        for prop in self.props {
            if prop.required {
                object = object.required(prop.name);
            }
            object = object.property(prop.name, prop.schema);
        }
        object.build().into()
    }

    /// The same parameters in the query string.
    pub fn into_query(self) -> Vec<Parameter> {
        self.props
            .into_iter()
            .map(|prop| {
                ParameterBuilder::new()
                    .name(prop.name)
                    .parameter_in(ParameterIn::Query)
                    .required(if prop.required {
                        Required::True
                    } else {
                        Required::False
                    })
                    .schema(Some(prop.schema))
                    .build()
            })
            .collect()
    }
}

fn typed(t: Type) -> ObjectBuilder {
    ObjectBuilder::new().schema_type(t)
}

fn described(object: ObjectBuilder, description: &str) -> Schema {
    object.description(Some(description)).build().into()
}

#[cfg(test)]
pub fn string() -> Schema {
    typed(Type::String).build().into()
}

/// A string with these bounds, in characters (JSON Schema counts code
/// points, as the rules here do), and a description.
fn bounded(min: Option<usize>, max: usize, description: &str) -> ObjectBuilder {
    typed(Type::String)
        .min_length(min)
        .max_length(Some(max))
        .description(Some(description))
}

/// `Username` (domain): 1 to 32 of `A-Z a-z 0-9 _ . -`.
pub fn username() -> Schema {
    bounded(
        Some(1),
        32,
        "1 to 32 of A-Z a-z 0-9 _ . - (unique in any letter case)",
    )
    .pattern(Some("^[A-Za-z0-9_.-]{1,32}$"))
    .build()
    .into()
}

/// `PhoneNumber` (domain): E.164.
pub fn phone_number() -> Schema {
    typed(Type::String)
        .pattern(Some("^\\+[0-9]{2,15}$"))
        .max_length(Some(16))
        .description(Some("E.164: + then 2 to 15 digits"))
        .build()
        .into()
}

/// `AvatarUrl` (domain): empty, or an http(s) URL.
pub fn avatar_url() -> Schema {
    bounded(
        None,
        2048,
        "an http or https URL of at most 2048 characters; empty: no avatar",
    )
    .pattern(Some("^$|^[Hh][Tt][Tt][Pp][Ss]?://[^\\s]+$"))
    .build()
    .into()
}

/// `FileUrl` (domain), and a webhook's URL: an http(s) URL.
pub fn http_url() -> Schema {
    bounded(
        Some(8),
        2048,
        "an http or https URL of at most 2048 characters",
    )
    .pattern(Some("^[Hh][Tt][Tt][Pp][Ss]?://[^\\s]+$"))
    .build()
    .into()
}

/// `MessageText` (domain).
pub fn message_text() -> Schema {
    bounded(
        Some(1),
        4096,
        "1 to 4096 characters, at least one of them visible (not white space or \
         an invisible format character)",
    )
    .build()
    .into()
}

/// `SearchQuery` (domain): 1 to 200 characters of terms (separated by
/// white space) of at least 3 characters each, without NUL.
pub fn search_query() -> Schema {
    bounded(
        Some(3),
        confab_domain::MAX_QUERY_CHARS,
        "at most 200 characters: terms separated by white space, each at least 3 characters, \
         at least one with 3 letters or digits in a row (punctuation alone cannot be \
         searched); a message matches when its text contains every term, ignoring case. \
         Every character is literal (`%`, `_`, `\\` and quotes included)",
    )
    .pattern(Some(r"^\s*[^\s\x00]{3,}(\s+[^\s\x00]{3,})*\s*$"))
    .build()
    .into()
}

/// Whole Unix seconds (a search's time filters).
pub fn unix_seconds() -> Schema {
    described(typed(Type::Integer), "Unix seconds")
}

/// `Filename` (domain).
pub fn filename() -> Schema {
    bounded(
        Some(1),
        255,
        "1 to 255 characters without / or control characters",
    )
    .pattern(Some("^[^/\\x00-\\x1f\\x7f-\\x9f]+$"))
    .build()
    .into()
}

/// `FileType` (domain): a MIME type.
pub fn file_type() -> Schema {
    bounded(
        Some(3),
        255,
        "a MIME type type/subtype; default application/octet-stream",
    )
    .pattern(Some(
        "^[!#$%&'*+.^_`|~0-9A-Za-z-]+/[!#$%&'*+.^_`|~0-9A-Za-z-]+$",
    ))
    .build()
    .into()
}

/// `GroupName` (domain).
pub fn group_name() -> Schema {
    bounded(Some(1), 100, "1 to 100 characters, not only white space")
        .build()
        .into()
}

/// One of `names` (an enum of the domain: a report's reason or status).
pub fn one_of(names: &[&str], description: &str) -> Schema {
    typed(Type::String)
        .enum_values(Some(names.iter().copied()))
        .description(Some(description))
        .build()
        .into()
}

/// `ReportReason` (domain).
pub fn report_reason() -> Schema {
    one_of(
        &["spam", "harassment", "inappropriate", "other"],
        "why the report is made",
    )
}

/// `TypingState` (domain).
pub fn typing_state() -> Schema {
    one_of(
        &["start", "stop"],
        "started (the default) or stopped typing",
    )
}

/// `ReportStatus` (domain).
pub fn report_status() -> Schema {
    one_of(
        &["open", "resolved", "dismissed"],
        "where the report stands",
    )
}

/// `ReportDescription` (domain).
pub fn report_description() -> Schema {
    bounded(None, 1000, "at most 1000 characters, no NUL")
        .build()
        .into()
}

/// `GroupDescription` (domain).
pub fn group_description() -> Schema {
    bounded(None, 1000, "at most 1000 characters, no NUL")
        .build()
        .into()
}

/// A token's lifetime when minted.
pub fn expires_in() -> Schema {
    described(
        typed(Type::Integer)
            .minimum(Some(60))
            .maximum(Some(31_536_000)),
        "seconds, 60 to 31536000 (a year); absent: the token never expires",
    )
}

/// A file's size.
pub fn file_size() -> Schema {
    described(typed(Type::Integer).minimum(Some(0)), "bytes")
}

/// An event ticket: `cft_` and 64 lowercase hex characters.
pub fn ticket() -> Schema {
    typed(Type::String)
        .pattern(Some("^cft_[0-9a-f]{64}$"))
        .description(Some(
            "an event ticket (`POST /v1/events/tickets`), for a browser's `EventSource`, \
             which cannot send `Authorization`; only the stream takes it",
        ))
        .build()
        .into()
}

pub fn boolean() -> Schema {
    described(
        typed(Type::Boolean),
        "true or false (in a form or query string also 1 or 0, in any letter case)",
    )
}

fn uuid() -> ObjectBuilder {
    typed(Type::String).format(Some(SchemaFormat::Custom("uuid".to_owned())))
}

pub fn id() -> Schema {
    described(uuid(), "an id (UUIDv7, lowercase, hyphenated)")
}

pub fn described_id(description: &str) -> Schema {
    described(uuid(), description)
}

pub fn limit() -> Schema {
    described(
        typed(Type::Integer)
            .minimum(Some(1))
            .maximum(Some(100))
            .default(Some(10.into())),
        "page size, 1 to 100",
    )
}

pub fn clearable_id() -> Schema {
    described(
        ObjectBuilder::new().schema_type(SchemaType::from_iter([Type::String, Type::Null])),
        "an id; an empty string or null clears it",
    )
}

pub fn clearable_time() -> Schema {
    described(
        ObjectBuilder::new().schema_type(SchemaType::from_iter([
            Type::Integer,
            Type::String,
            Type::Null,
        ])),
        "Unix seconds; an empty string or null clears it",
    )
}

pub fn strings() -> Schema {
    ArrayBuilder::new()
        .items(typed(Type::String))
        .description(Some("strings; in a form `key[]=<text>` for each"))
        .build()
        .into()
}

pub fn ids() -> Schema {
    ArrayBuilder::new()
        .items(uuid())
        .description(Some("ids; in a form `key[]=<id>` for each"))
        .build()
        .into()
}

/// `attachments[i][...]`: the objects of [`crate::requests::messages`].
pub fn attachments() -> Schema {
    let link: Object = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("file_url", http_url())
        .required("file_url")
        .property("filename", filename())
        .required("filename")
        .property("file_type", file_type())
        .property("file_size", file_size())
        .additional_properties(Some(AdditionalProperties::FreeForm(false)))
        .build();
    let upload: Object = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property(
            "id",
            described_id("an upload of the caller's not attached yet (POST /v1/attachments)"),
        )
        .required("id")
        .additional_properties(Some(AdditionalProperties::FreeForm(false)))
        .build();
    let item: Schema = utoipa::openapi::schema::OneOfBuilder::new()
        .item(upload)
        .item(link)
        .build()
        .into();
    ArrayBuilder::new()
        .items(RefOr::T(item))
        .max_items(Some(10))
        .description(Some(
            "attachments to add: an upload by id, or a file at a URL; in a form \
             `attachments[0][id]=...` or `attachments[0][file_url]=...`",
        ))
        .build()
        .into()
}

/// `reactions[<name>][]=<username>`.
pub fn reactions() -> Schema {
    let usernames = ArrayBuilder::new().items(RefOr::T(username()));
    described(
        typed(Type::Object).additional_properties(Some(usernames)),
        "reactions to add: a reaction name (1 to 64 of a-z 0-9 _ + -) to the caller's own \
         username; in a form `reactions[<name>][]=<username>`",
    )
}
