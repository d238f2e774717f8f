//! One request type per operation: the parameters it takes, each named once.
//!
//! [`request!`] declares the struct and derives from its field list both the
//! keys the operation knows and the order their values are judged in, so the
//! two cannot disagree. [`Params::into_request`] refuses every unknown key
//! before [`FromParams::take`] judges any value, then refuses leftovers.
//! Handlers receive the finished request through the [`Input`] extractor
//! and destructure it whole, so that a key accepted but never passed on to
//! the service is a compile error.
//!
//! The same readers describe the wire shape of each parameter ([`Shape`]),
//! from which the OpenAPI document takes the request schemas: what is
//! documented is what is decoded.

pub mod admin;
pub mod attachments;
pub mod contacts;
pub mod conversations;
pub mod events;
pub mod groups;
pub mod messages;
pub mod reports;
mod shape;

pub use shape::Shape;

use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};
use confab_domain::{Cursor, DomainError, Page, PageLimit, Timestamp};

use utoipa::openapi::schema::Schema;

use crate::error::ApiError;
use crate::params::{Malformed, Params};

impl Params {
    /// The request `R`: every key `R` does not know is refused before any
    /// value is judged, so that an unknown parameter is reported ahead of a
    /// missing or invalid one; then `R` takes its values; then whatever it
    /// left is refused.
    pub fn into_request<R: FromParams>(mut self) -> Result<R, ApiError> {
        self.allow(R::knows)?;
        let request = R::take(&mut self)?;
        self.finish()?;
        Ok(request)
    }
}

/// A request built from the attributes of one level of [`Params`].
pub trait FromParams: Sized {
    /// Whether `key` is a parameter of this request.
    fn knows(key: &str) -> bool;

    /// Takes and judges the values, in the order the contract reports
    /// errors in. Only [`Params::into_request`] (or an enclosing request)
    /// calls it, after every unknown key has been refused.
    fn take(p: &mut Params) -> Result<Self, ApiError>;

    /// Adds the wire shape of every parameter, in field order.
    fn describe(shape: &mut Shape);
}

/// How one field of a request is read from the parameter named like it.
pub trait Field<T> {
    /// Whether `key` belongs to the field `name`: the field's own name,
    /// except for [`Flatten`], whose keys are those of its type.
    fn knows(&self, name: &str, key: &str) -> bool {
        name == key
    }

    fn take(self, p: &mut Params, name: &'static str) -> Result<T, ApiError>;

    /// Adds the wire shape of the parameter `name` to `shape`.
    fn describe(&self, name: &'static str, shape: &mut Shape);
}

/// A reading function with the wire shape of what it reads.
pub struct Reader<F> {
    read: F,
    wire: fn() -> Schema,
    required: bool,
}

/// A field read by `read` (`fn(&mut Params, name) -> Result<T, _>`), whose
/// value on the wire is `wire`; `required` says whether it may be absent.
pub fn reader<T, F>(wire: fn() -> Schema, required: bool, read: F) -> Reader<F>
where
    F: FnOnce(&mut Params, &'static str) -> Result<T, ApiError>,
{
    Reader {
        read,
        wire,
        required,
    }
}

impl<T, F> Field<T> for Reader<F>
where
    F: FnOnce(&mut Params, &'static str) -> Result<T, ApiError>,
{
    fn take(self, p: &mut Params, name: &'static str) -> Result<T, ApiError> {
        (self.read)(p, name)
    }

    fn describe(&self, name: &'static str, shape: &mut Shape) {
        shape.add(name, (self.wire)(), self.required);
    }
}

/// A field that may be absent.
pub struct Optional<F>(F);

impl<T, F: Field<T>> Field<Option<T>> for Optional<F> {
    fn take(self, p: &mut Params, name: &'static str) -> Result<Option<T>, ApiError> {
        if p.has(name) {
            self.0.take(p, name).map(Some)
        } else {
            Ok(None)
        }
    }

    fn describe(&self, name: &'static str, shape: &mut Shape) {
        self.0.describe(name, shape);
        shape.make_optional(name);
    }
}

/// A field whose type is itself a request over several keys of the same
/// level (a page: `limit`, `starting_after`, `ending_before`).
pub struct Flatten;

impl<R: FromParams> Field<R> for Flatten {
    fn knows(&self, _name: &str, key: &str) -> bool {
        R::knows(key)
    }

    fn take(self, p: &mut Params, _name: &'static str) -> Result<R, ApiError> {
        R::take(p)
    }

    fn describe(&self, _name: &'static str, shape: &mut Shape) {
        R::describe(shape)
    }
}

/// A field read from a key other than its name: the service's command
/// says `text` where the wire says `message`.
pub struct Keyed<F> {
    key: &'static str,
    field: F,
}

/// The field read by `field` from the parameter `key`.
pub fn keyed<T>(key: &'static str, field: impl Field<T>) -> Keyed<impl Field<T>> {
    Keyed { key, field }
}

impl<T, F: Field<T>> Field<T> for Keyed<F> {
    fn knows(&self, _name: &str, key: &str) -> bool {
        self.field.knows(self.key, key)
    }

    fn take(self, p: &mut Params, _name: &'static str) -> Result<T, ApiError> {
        self.field.take(p, self.key)
    }

    fn describe(&self, _name: &'static str, shape: &mut Shape) {
        self.field.describe(self.key, shape);
    }
}

/// A field that may be absent, `absent()` standing in for it then.
pub struct OrElse<F, T> {
    field: Optional<F>,
    absent: fn() -> T,
}

/// `field` when given, else `absent()`.
pub fn or_else<T>(field: impl Field<T>, absent: fn() -> T) -> impl Field<T> {
    OrElse {
        field: Optional(field),
        absent,
    }
}

impl<T, F: Field<T>> Field<T> for OrElse<F, T> {
    fn take(self, p: &mut Params, name: &'static str) -> Result<T, ApiError> {
        Ok(self.field.take(p, name)?.unwrap_or_else(self.absent))
    }

    fn describe(&self, name: &'static str, shape: &mut Shape) {
        self.field.describe(name, shape);
    }
}

/// Declares a request struct and its [`FromParams`]: each field is named
/// once, as `key: Type = reader`, and its name is its key (unless its
/// reader is [`keyed`]). Values are judged in field order.
///
/// `pub struct Name(Command) { ... } then check;` reads the fields straight
/// into the service's command `Command` (whose fields they are, all of
/// them), then `check`s what no single field can judge alone.
macro_rules! request {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$field_meta:meta])* $field:ident : $ty:ty = $read:expr ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug)]
        pub struct $name {
            $( $(#[$field_meta])* pub $field: $ty, )+
        }

        $crate::requests::request!(@read $name [ $( $field: $ty = $read ),+ ] {
            Ok(Self { $( $field, )+ })
        });
    };
    (
        $(#[$meta:meta])*
        pub struct $name:ident($command:ident) {
            $( $(#[$field_meta:meta])* $field:ident : $ty:ty = $read:expr ),+ $(,)?
        }
        then $check:expr;
    ) => {
        $(#[$meta])*
        #[derive(Debug)]
        pub struct $name(pub $command);

        $crate::requests::request!(@read $name [ $( $field: $ty = $read ),+ ] {
            let command = $command { $( $field, )+ };
            $check(&command)?;
            Ok(Self(command))
        });
    };
    // The keys, the values in field order (each read into a local named
    // like its field, from which `$build` makes the request) and the shape.
    (@read $name:ident [ $( $field:ident : $ty:ty = $read:expr ),+ ] $build:block) => {
        impl $crate::requests::FromParams for $name {
            fn knows(key: &str) -> bool {
                false $( || $crate::requests::Field::<$ty>::knows(&$read, stringify!($field), key) )+
            }

            fn take(
                p: &mut $crate::params::Params,
            ) -> ::std::result::Result<Self, $crate::error::ApiError> {
                $( let $field: $ty = $crate::requests::Field::<$ty>::take($read, p, stringify!($field))?; )+
                $build
            }

            fn describe(shape: &mut $crate::requests::Shape) {
                $( $crate::requests::Field::<$ty>::describe(&$read, stringify!($field), shape); )+
            }
        }

        $crate::requests::documented!($name);
    };
}
pub(crate) use request;

/// The OpenAPI view of a request type, from its [`FromParams::describe`]:
/// the schema of its body, and its query parameters.
macro_rules! documented {
    ($name:ident) => {
        impl ::utoipa::PartialSchema for $name {
            fn schema() -> ::utoipa::openapi::RefOr<::utoipa::openapi::schema::Schema> {
                $crate::requests::Shape::of::<Self>().into_schema().into()
            }
        }

        impl ::utoipa::ToSchema for $name {}

        impl ::utoipa::IntoParams for $name {
            fn into_params(
                _: impl Fn() -> Option<::utoipa::openapi::path::ParameterIn>,
            ) -> Vec<::utoipa::openapi::path::Parameter> {
                $crate::requests::Shape::of::<Self>().into_query()
            }
        }
    };
}
pub(crate) use documented;

/// The request of an operation that takes no parameters (GET and DELETE by
/// id, `/contacts/me`, removing a reaction): every key is unknown.
#[derive(Debug)]
pub struct NoParams;

impl FromParams for NoParams {
    fn knows(_key: &str) -> bool {
        false
    }

    fn take(_p: &mut Params) -> Result<Self, ApiError> {
        Ok(Self)
    }

    fn describe(_shape: &mut Shape) {}
}

documented!(NoParams);

/// A handler's finished request: decoded, unknown keys refused, values
/// judged (see [`Params::into_request`]).
#[derive(Debug)]
pub struct Input<R>(pub R);

impl<R: FromParams + 'static> FromRequest for Input<R> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let params = Params::from_request(req, payload);
        Box::pin(async move { params.await?.into_request().map(Input) })
    }
}

// ------------------------------------------------------------------ readers

/// A required string whose wire rules `wire` states, parsed by a domain
/// constructor (which enforces them).
pub fn text<T>(
    wire: fn() -> Schema,
    parse: impl FnOnce(String) -> Result<T, DomainError>,
) -> impl Field<T> {
    reader(wire, true, move |p: &mut Params, name: &'static str| {
        let raw = p.required_str(name)?;
        parse(raw).map_err(|e| p.domain(e))
    })
}

/// A required integer whose wire rules `wire` states, parsed by a domain
/// constructor (or the service, which enforces them).
pub fn int<T>(
    wire: fn() -> Schema,
    parse: impl FnOnce(i64) -> Result<T, DomainError>,
) -> impl Field<T> {
    reader(wire, true, move |p: &mut Params, name: &'static str| {
        let n = p.required_int(name)?;
        parse(n).map_err(|e| p.domain(e))
    })
}

/// A required boolean.
pub fn boolean() -> impl Field<bool> {
    reader(
        shape::boolean,
        true,
        |p: &mut Params, name: &'static str| p.required_bool(name),
    )
}

/// A required id; `malformed` says what a malformed one means.
pub fn id<T: FromStr>(malformed: Malformed) -> impl Field<T> {
    reader(
        shape::id,
        true,
        move |p: &mut Params, name: &'static str| p.required_id::<T>(name, malformed),
    )
}

/// The field if its key is given, else `None`.
pub fn optional<T>(field: impl Field<T>) -> impl Field<Option<T>> {
    Optional(field)
}

/// An optional id; empty or `null` clears it (`Some(None)`).
pub fn clearable_id<T: FromStr>(malformed: Malformed) -> impl Field<Option<Option<T>>> {
    reader(
        shape::clearable_id,
        false,
        move |p: &mut Params, name: &'static str| p.optional_clearable_id::<T>(name, malformed),
    )
}

/// Optional Unix seconds; empty or `null` clears them (`Some(None)`).
pub fn clearable_time() -> impl Field<Option<Option<Timestamp>>> {
    reader(
        shape::clearable_time,
        false,
        |p: &mut Params, name: &'static str| {
            Ok(p.optional_clearable_int(name)?
                .map(|at| at.map(Timestamp::from_secs)))
        },
    )
}

/// A list of strings (`key[]=<text>`); absent is empty.
pub fn strings() -> impl Field<Vec<String>> {
    reader(
        shape::strings,
        false,
        |p: &mut Params, name: &'static str| p.string_list(name),
    )
}

/// A list of ids (`key[]=<id>`); absent is empty, a malformed one is 400.
pub fn ids<T: FromStr>() -> impl Field<Vec<T>> {
    reader(shape::ids, false, |p: &mut Params, name: &'static str| {
        p.id_list::<T>(name)
    })
}

// -------------------------------------------------------------------- pages

const LIMIT: &str = "limit";
const STARTING_AFTER: &str = "starting_after";
const ENDING_BEFORE: &str = "ending_before";

/// `limit`, `starting_after` and `ending_before` of a list.
impl<Id: FromStr> FromParams for Page<Id> {
    fn knows(key: &str) -> bool {
        [LIMIT, STARTING_AFTER, ENDING_BEFORE].contains(&key)
    }

    fn take(p: &mut Params) -> Result<Self, ApiError> {
        let limit = match p.optional_int(LIMIT) {
            Ok(None) => PageLimit::default(),
            Ok(Some(n)) => PageLimit::new(n).map_err(|e| p.domain(e))?,
            // Keep the one message the contract shows for every bad limit.
            Err(_) => PageLimit::new(0).map_err(|e| p.domain(e))?,
        };
        if p.has(STARTING_AFTER) && p.has(ENDING_BEFORE) {
            return Err(ApiError::invalid(
                ENDING_BEFORE,
                "give at most one of starting_after and ending_before",
            ));
        }
        let after = p.optional_id(STARTING_AFTER, Malformed::Invalid)?;
        let before = p.optional_id(ENDING_BEFORE, Malformed::Invalid)?;
        let cursor = after.map(Cursor::After).or(before.map(Cursor::Before));
        Ok(Page { limit, cursor })
    }

    fn describe(shape: &mut Shape) {
        shape.add(LIMIT, shape::limit(), false);
        shape.add(STARTING_AFTER, shape::id(), false);
        shape.add(ENDING_BEFORE, shape::id(), false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use confab_domain::MessageId;

    fn form(s: &str) -> Params {
        Params::from_body(Some("application/x-www-form-urlencoded"), s.as_bytes()).expect("form")
    }

    const ID: &str = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";

    request! {
        /// Three keys, judged in this order.
        pub struct Sample {
            name: String = text(shape::string, Ok),
            page: Page<MessageId> = Flatten,
            muted: Option<bool> = optional(boolean()),
        }
    }

    #[test]
    fn keys_come_from_the_field_list() {
        for key in ["name", "limit", "starting_after", "ending_before", "muted"] {
            assert!(Sample::knows(key), "{key}");
        }
        for key in ["page", "Name", "names", ""] {
            assert!(!Sample::knows(key), "{key}");
        }
        let sample: Sample = form("muted=1&name=x&limit=5").into_request().expect("ok");
        assert_eq!(sample.name, "x");
        assert_eq!(sample.page.limit.get(), 5);
        assert_eq!(sample.muted, Some(true));
        let none: Sample = form("name=x").into_request().expect("ok");
        assert_eq!(none.muted, None);
    }

    #[test]
    fn unknown_keys_come_first_then_values_in_field_order() {
        let e = form("muted=maybe&limit=0&colour=blue")
            .into_request::<Sample>()
            .expect_err("unknown");
        assert_eq!((e.code(), e.param()), ("parameter_unknown", Some("colour")));
        let e = form("muted=maybe&limit=0")
            .into_request::<Sample>()
            .expect_err("missing");
        assert_eq!((e.code(), e.param()), ("parameter_missing", Some("name")));
        let e = form("muted=maybe&limit=0&name=x")
            .into_request::<Sample>()
            .expect_err("limit");
        assert_eq!(e.param(), Some("limit"));
        let e = form("muted=maybe&name=x")
            .into_request::<Sample>()
            .expect_err("muted");
        assert_eq!((e.code(), e.param()), ("parameter_invalid", Some("muted")));
    }

    #[test]
    fn no_params_refuses_every_key() {
        assert!(form("").into_request::<NoParams>().is_ok());
        let e = form("id=1").into_request::<NoParams>().expect_err("id");
        assert_eq!((e.code(), e.param()), ("parameter_unknown", Some("id")));
    }

    #[test]
    fn pages() {
        let page: Page<MessageId> = form("").into_request().expect("default");
        assert_eq!((page.limit.get(), page.cursor), (10, None));
        let page: Page<MessageId> = form(&format!("limit=100&ending_before={ID}"))
            .into_request()
            .expect("page");
        assert_eq!(page.limit.get(), 100);
        assert!(matches!(page.cursor, Some(Cursor::Before(_))));
        for bad in ["limit=0", "limit=101", "limit=x", "limit=", "limit=-1"] {
            let e = form(bad).into_request::<Page<MessageId>>().expect_err(bad);
            assert_eq!(e.param(), Some("limit"), "{bad}");
            assert_eq!(e.to_string(), "limit must be an integer from 1 to 100");
        }
        let e = form(&format!("starting_after={ID}&ending_before={ID}"))
            .into_request::<Page<MessageId>>()
            .expect_err("both");
        assert_eq!(
            (e.code(), e.param()),
            ("parameter_invalid", Some("ending_before"))
        );
        let e = form("starting_after=x")
            .into_request::<Page<MessageId>>()
            .expect_err("malformed");
        assert_eq!(
            (e.code(), e.param()),
            ("parameter_invalid", Some("starting_after"))
        );
    }
}
