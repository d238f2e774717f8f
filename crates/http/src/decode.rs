//! Request attributes, form-encoded or JSON, decoded into one tree (a JSON
//! object) so that every endpoint reads its parameters the same way.
//!
//! Form keys use bracket notation, raw or percent-encoded:
//! - `a=1`: a scalar (given twice: an error);
//! - `a[]=1&a[]=2`: an array of strings, in the order given;
//! - `a[x][]=1`, `a[x]=1`: objects, keys in the order first seen;
//! - `a[0][x]=1&a[1][x]=2`: an array of objects; the indices only group
//!   fields and order the items: they must be `0, 1, 2, ...` without gaps
//!   (in any order), written without leading zeros.
//!
//! `[]` may only be the last segment. Form values are always strings; the
//! typed accessors of [`crate::params`] parse them.

use std::collections::BTreeMap;

use indexmap::IndexMap;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Why attributes could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The bytes are not a valid body at all (400 `body_invalid`).
    Body(String),
    /// One parameter is given in conflicting ways (400 `parameter_invalid`).
    Param { param: String, message: String },
}

fn body_err(message: impl Into<String>) -> DecodeError {
    DecodeError::Body(message.into())
}

/// Decodes `application/x-www-form-urlencoded` bytes (a body or a query
/// string) into a tree of strings, arrays and objects.
pub fn decode_form(input: &[u8]) -> Result<Map<String, Value>, DecodeError> {
    decode_pairs(input, false)
}

/// [`decode_form`] for a query string: there a value that is not UTF-8
/// names its parameter (400 `parameter_invalid`), as any other bad value
/// does; in a body it is a body that cannot be decoded (`body_invalid`,
/// docs/api.md "Requests and answers").
pub fn decode_query(input: &[u8]) -> Result<Map<String, Value>, DecodeError> {
    decode_pairs(input, true)
}

fn decode_pairs(input: &[u8], name_bad_values: bool) -> Result<Map<String, Value>, DecodeError> {
    let mut root = Node::Map(Box::default());
    for pair in input.split(|b| *b == b'&').filter(|p| !p.is_empty()) {
        let (raw_key, raw_value) = match pair.iter().position(|b| *b == b'=') {
            Some(i) => (&pair[..i], &pair[i + 1..]),
            None => (pair, &b""[..]),
        };
        let key = percent_decode(raw_key)?;
        // In a query string, a value that is not text names its
        // parameter: the client sees which input to fix (a search query
        // of Latin-1 bytes, say).
        let value = percent_decode(raw_value).map_err(|e| match e {
            DecodeError::Body(why) if name_bad_values && why == NOT_UTF8 && !key.is_empty() => {
                let param: String = key.chars().take(100).collect();
                DecodeError::Param {
                    message: format!("{param} must be text: {why}"),
                    param,
                }
            }
            e => e,
        })?;
        let mut path = parse_key(key)?;
        root.fill(&mut path, 0, value)?;
    }
    match root.into_value() {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Ok(Map::new()),
        Err(mut path) => {
            path.reverse();
            let here = name_of(&path);
            Err(DecodeError::Param {
                message: format!("{here} indices must run 0, 1, 2, ... without gaps"),
                param: here,
            })
        }
    }
}

/// Decodes a JSON body, which must be an object. A key repeated within one
/// object is refused rather than silently keeping the last value.
pub fn decode_json(input: &[u8]) -> Result<Map<String, Value>, DecodeError> {
    let Strict(value) = serde_json::from_slice(input)
        .map_err(|e| body_err(format!("the body is not valid JSON: {e}")))?;
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(body_err("the JSON body must be an object")),
    }
}

const NOT_UTF8: &str = "form data is not valid UTF-8";

/// `+` is a space, `%XX` a byte; the result must be UTF-8. A `%` not
/// followed by two hex digits is bad encoding.
fn percent_decode(raw: &[u8]) -> Result<String, DecodeError> {
    fn hex(b: u8) -> Option<u8> {
        match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' => Some(b - b'a' + 10),
            b'A'..=b'F' => Some(b - b'A' + 10),
            _ => None,
        }
    }
    // Most keys and values need no decoding: validate and copy at once.
    if !raw.iter().any(|b| matches!(b, b'%' | b'+')) {
        return std::str::from_utf8(raw)
            .map(str::to_owned)
            .map_err(|_| body_err(NOT_UTF8));
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hi = raw.get(i + 1).copied().and_then(hex);
                let lo = raw.get(i + 2).copied().and_then(hex);
                match (hi, lo) {
                    (Some(h), Some(l)) => out.push(h * 16 + l),
                    _ => return Err(body_err("bad percent-encoding in form data")),
                }
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| body_err(NOT_UTF8))
}

/// One step of a bracket path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(usize),
    Push,
}

/// How many bracket segments a parameter name may have. The deepest the API
/// takes is `attachments[0][file_url]`; the bound keeps a hostile name of
/// thousands of segments from costing deep recursion and quadratic names.
const MAX_SEGMENTS: usize = 8;

/// How many distinct keys (or indices) one object may have. The widest the
/// API takes is an operation's handful of parameters, 32 reaction names or
/// 10 attachments; refusing a wider object at once keeps a hostile body of
/// thousands of distinct keys from costing a map that large.
pub const MAX_KEYS: usize = 256;

fn too_many_keys() -> DecodeError {
    body_err(format!(
        "an object has more than {MAX_KEYS} distinct parameters"
    ))
}

/// `name[a][0][]` -> `[Key(name), Key(a), Index(0), Push]`.
fn parse_key(key: String) -> Result<Vec<Seg>, DecodeError> {
    // The common plain name becomes its segment without a copy.
    if !key.is_empty() && !key.contains(['[', ']']) {
        return Ok(vec![Seg::Key(key)]);
    }
    parse_bracketed_key(&key)
}

fn parse_bracketed_key(key: &str) -> Result<Vec<Seg>, DecodeError> {
    let malformed = || body_err(format!("malformed parameter name {key:?}"));
    let (name, mut rest) = match key.find(['[', ']']) {
        Some(i) => key.split_at(i),
        None => (key, ""),
    };
    if name.is_empty() {
        return Err(malformed());
    }
    let mut path = vec![Seg::Key(name.to_owned())];
    while !rest.is_empty() {
        let inner_rest = rest.strip_prefix('[').ok_or_else(malformed)?;
        let end = inner_rest.find(']').ok_or_else(malformed)?;
        let inner = &inner_rest[..end];
        if inner.contains('[') || path.last() == Some(&Seg::Push) {
            return Err(malformed());
        }
        let seg = if inner.is_empty() {
            Seg::Push
        } else if inner.bytes().all(|b| b.is_ascii_digit()) {
            if inner.len() > 1 && inner.starts_with('0') {
                return Err(malformed());
            }
            Seg::Index(inner.parse().map_err(|_| malformed())?)
        } else {
            Seg::Key(inner.to_owned())
        };
        path.push(seg);
        if path.len() > MAX_SEGMENTS {
            return Err(body_err(format!(
                "parameter names nest at most {MAX_SEGMENTS} levels deep"
            )));
        }
        rest = &inner_rest[end + 1..];
    }
    Ok(path)
}

/// The tree while it is being built.
#[derive(Debug)]
enum Node {
    /// A slot made for a child that is being filled.
    Empty,
    Leaf(String),
    List(Vec<String>),
    /// Keys in the order first seen, found by hash: a linear search per
    /// pair made thousands of distinct keys cost quadratic time.
    /// Boxed: it is the largest variant, and a small node keeps a map of
    /// thousands of entries small (less memory to fault in and copy).
    Map(Box<IndexMap<String, Node>>),
    Indexed(BTreeMap<usize, Node>),
}

/// The parameter name `path` spells, as the client wrote it:
/// `attachments[0][file_url]`. Built only for an error: naming every node
/// on the way down cost an allocation per pair and level.
fn name_of(path: &[Seg]) -> String {
    let mut name = String::new();
    for seg in path {
        let part = match seg {
            Seg::Key(key) => key.clone(),
            Seg::Index(index) => index.to_string(),
            Seg::Push => continue,
        };
        if name.is_empty() {
            name = part;
        } else {
            name = format!("{name}[{part}]");
        }
    }
    name
}

fn given_twice(here: String) -> DecodeError {
    DecodeError::Param {
        message: format!("{here} is given more than once or in conflicting forms"),
        param: here,
    }
}

impl Node {
    /// Puts `value` at `path[depth..]` below this node, which `path[..depth]`
    /// names.
    ///
    /// A key that makes a new entry is moved out of `path` rather than
    /// copied: below a new (empty) node nothing can conflict, so no error
    /// will ever need that segment's name.
    fn fill(&mut self, path: &mut [Seg], depth: usize, value: String) -> Result<(), DecodeError> {
        let (above, below) = path.split_at_mut(depth);
        let here = || name_of(above);
        let Some(seg) = below.first_mut() else {
            return match self {
                Node::Empty => {
                    *self = Node::Leaf(value);
                    Ok(())
                }
                _ => Err(given_twice(here())),
            };
        };
        match seg {
            Seg::Push => match self {
                Node::Empty => {
                    *self = Node::List(vec![value]);
                    Ok(())
                }
                Node::List(items) => {
                    items.push(value);
                    Ok(())
                }
                _ => Err(given_twice(here())),
            },
            Seg::Key(key) => {
                if matches!(self, Node::Empty) {
                    *self = Node::Map(Box::default());
                }
                let Node::Map(entries) = self else {
                    return Err(given_twice(here()));
                };
                let child = match entries.get_index_of(key.as_str()) {
                    Some(i) => &mut entries[i],
                    None if entries.len() >= MAX_KEYS => return Err(too_many_keys()),
                    None => entries.entry(std::mem::take(key)).or_insert(Node::Empty),
                };
                child.fill(path, depth + 1, value)
            }
            Seg::Index(index) => {
                if matches!(self, Node::Empty) {
                    *self = Node::Indexed(BTreeMap::new());
                }
                let Node::Indexed(items) = self else {
                    return Err(given_twice(here()));
                };
                if items.len() >= MAX_KEYS && !items.contains_key(index) {
                    return Err(too_many_keys());
                }
                items
                    .entry(*index)
                    .or_insert(Node::Empty)
                    .fill(path, depth + 1, value)
            }
        }
    }

    /// The finished value. An error is the path, leaf first, of a list of
    /// objects whose indices have a gap (each level adds its own segment on
    /// the way up, so naming costs nothing unless there is an error).
    fn into_value(self) -> Result<Value, Vec<Seg>> {
        Ok(match self {
            Node::Empty => Value::Null,
            Node::Leaf(s) => Value::String(s),
            Node::List(items) => Value::Array(items.into_iter().map(Value::String).collect()),
            Node::Map(entries) => {
                let mut map = Map::with_capacity(entries.len());
                for (key, node) in *entries {
                    match node.into_value() {
                        Ok(value) => {
                            map.insert(key, value);
                        }
                        Err(mut path) => {
                            path.push(Seg::Key(key));
                            return Err(path);
                        }
                    }
                }
                Value::Object(map)
            }
            Node::Indexed(items) => {
                if items.keys().enumerate().any(|(i, k)| i != *k) {
                    return Err(Vec::new());
                }
                let mut list = Vec::with_capacity(items.len());
                for (index, node) in items {
                    list.push(node.into_value().map_err(|mut path| {
                        path.push(Seg::Index(index));
                        path
                    })?);
                }
                Value::Array(list)
            }
        })
    }
}

/// A JSON value whose objects have no repeated keys.
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Strict;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Strict, E> {
        Ok(Strict(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Strict, E> {
        Ok(Strict(Value::Number(v.into())))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Strict, E> {
        Ok(Strict(Value::Number(v.into())))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Strict, E> {
        Ok(Strict(
            Number::from_f64(v).map_or(Value::Null, Value::Number),
        ))
    }
    fn visit_str<E>(self, v: &str) -> Result<Strict, E> {
        Ok(Strict(Value::String(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Strict, E> {
        Ok(Strict(Value::String(v)))
    }
    fn visit_unit<E>(self) -> Result<Strict, E> {
        Ok(Strict(Value::Null))
    }
    fn visit_none<E>(self) -> Result<Strict, E> {
        Ok(Strict(Value::Null))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Strict, D::Error> {
        Strict::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Strict, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Strict(Value::Array(items)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Strict, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                return Err(de::Error::custom(format!("duplicate key {key:?}")));
            }
            if map.len() >= MAX_KEYS {
                return Err(de::Error::custom(format!(
                    "an object has more than {MAX_KEYS} keys"
                )));
            }
            let Strict(value) = access.next_value()?;
            map.insert(key, value);
        }
        Ok(Strict(Value::Object(map)))
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
