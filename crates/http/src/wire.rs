//! The JSON of a message (with its contact, reactions, attachments and the
//! message it quotes), an earlier text of an edited message, a
//! contact, an attachment, a group (with its first members), and the page
//! (`{"has_more", "data"}`) of every list. This module is their only
//! writer: the answers, the event payloads ([`crate::payloads`]),
//! the answers kept for idempotency keys and the CLI's contact
//! ([`ContactDto`](crate::dto::ContactDto)) all come from here. The
//! structs of [`crate::dto`] describe these objects to OpenAPI and
//! write nothing.
//!
//! Not serde's derive: it first copied every string of the message into a
//! wire struct, then escaped every key and every value as it wrote them;
//! for a first page of ten messages that was over a quarter of the
//! instructions confab ran per request (`bench/instructions.sh`,
//! docs/performance.md). Here the keys are written as the literals they
//! are, ids (hex digits and hyphens) as they are, and only the strings
//! people wrote (a text, a username, a file name...) go through
//! serde_json's escaping. The tests below hold each object to JSON built by
//! hand from the same entity.

use confab_domain::{
    Attachment, Block, Contact, FileSource, Group, GroupMember, Message, MessageEdit, Paged, Quote,
    Reaction, Report, Timestamp, Viewer,
};

use crate::links::unix_now;
pub use crate::links::FileLinks;
use serde::{Serialize, Serializer as _};
use uuid::Uuid;

/// What an answer's buffer starts with: most answers fit whole (a page of
/// ten messages is about 5 KB).
pub const BUFFER: usize = 8 * 1024;

/// Members a group object embeds at most (docs/api.md "Groups"): an object's
/// size, and the size of every `group.*` event, stays bounded whatever the
/// group's.
pub const GROUP_EMBEDDED_MEMBERS: usize = 100;

/// Written JSON as a string (an event's payload, a kept 201): `None` only
/// if writing failed, which plain data does not.
pub fn text(json: serde_json::Result<Vec<u8>>) -> Option<String> {
    json.ok().and_then(|bytes| String::from_utf8(bytes).ok())
}

/// `{"has_more": ..., "data": [message, ...]}`, uploads' links made by
/// `links`.
pub fn message_page(
    page: &Paged<Message>,
    links: &FileLinks,
    viewer: Viewer,
) -> serde_json::Result<Vec<u8>> {
    let now = unix_now();
    list(page.has_more, &page.items, |out, m| {
        write_message(out, m, links, now, viewer)
    })
}

/// `{"has_more": ..., "data": [attachment, ...]}`.
pub fn attachment_page(page: &Paged<Attachment>, links: &FileLinks) -> serde_json::Result<Vec<u8>> {
    let now = unix_now();
    list(page.has_more, &page.items, |out, a| {
        write_attachment(out, a, links, now)
    })
}

/// `{"has_more": ..., "data": [item, ...]}`, each item written by `write`:
/// the page of every list the API answers.
pub fn list<T>(
    has_more: bool,
    items: &[T],
    write: impl FnMut(&mut Vec<u8>, &T) -> serde_json::Result<()>,
) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(BUFFER);
    out.extend_from_slice(if has_more {
        br#"{"has_more":true,"data":"#
    } else {
        br#"{"has_more":false,"data":"#
    });
    array(&mut out, items, write)?;
    out.push(b'}');
    Ok(out)
}

/// One message, as `GET /v1/messages/{id}` answers it.
pub fn message(m: &Message, links: &FileLinks, viewer: Viewer) -> serde_json::Result<Vec<u8>> {
    let now = unix_now();
    one(BUFFER / 4, m, |out, m| {
        write_message(out, m, links, now, viewer)
    })
}

/// One contact, as `GET /v1/contacts/{id}` answers it to `viewer`.
pub fn contact(c: &Contact, viewer: Viewer) -> serde_json::Result<Vec<u8>> {
    one(256, c, |out, c| write_contact(out, c, viewer))
}

/// One attachment, as `GET /v1/attachments/{id}` answers it.
pub fn attachment(a: &Attachment, links: &FileLinks) -> serde_json::Result<Vec<u8>> {
    let now = unix_now();
    one(512, a, |out, a| write_attachment(out, a, links, now))
}

/// One group, as `GET /v1/groups/{id}` answers it.
pub fn group(g: &Group, viewer: Viewer) -> serde_json::Result<Vec<u8>> {
    one(BUFFER, g, |out, g| write_group(out, g, viewer))
}

/// `value` alone, written by `write` into a buffer of `capacity` bytes.
fn one<T>(
    capacity: usize,
    value: &T,
    write: impl FnOnce(&mut Vec<u8>, &T) -> serde_json::Result<()>,
) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(capacity);
    write(&mut out, value)?;
    Ok(out)
}

/// An object whose one writer is its serde derive (a conversation), as an
/// item of [`list`].
pub fn write_serialized<T: Serialize>(out: &mut Vec<u8>, value: &T) -> serde_json::Result<()> {
    value.serialize(&mut serde_json::Serializer::new(out))
}

fn write_message(
    out: &mut Vec<u8>,
    m: &Message,
    links: &FileLinks,
    now: i64,
    viewer: Viewer,
) -> serde_json::Result<()> {
    out.extend_from_slice(br#"{"id":"#);
    id(out, m.id().as_uuid());
    out.extend_from_slice(br#","conversation_id":"#);
    id(out, m.conversation_id().as_uuid());
    out.extend_from_slice(br#","contact":"#);
    write_contact(out, m.sender(), viewer)?;
    out.extend_from_slice(br#","message":"#);
    string(out, m.text().as_str())?;
    out.extend_from_slice(br#","reactions":"#);
    array(out, m.reactions(), write_reaction)?;
    out.extend_from_slice(br#","attachments":"#);
    array(out, m.attachments(), |out, a| {
        write_attachment(out, a, links, now)
    })?;
    out.extend_from_slice(br#","read_at":"#);
    opt_secs(out, m.read_at())?;
    out.extend_from_slice(br#","created_at":"#);
    secs(out, m.created_at())?;
    out.extend_from_slice(br#","updated_at":"#);
    opt_secs(out, m.updated_at())?;
    out.extend_from_slice(br#","reply_to":"#);
    nullable(out, m.reply_to(), write_quote)?;
    out.extend_from_slice(br#","parent_id":"#);
    match m.parent_id() {
        Some(p) => id(out, p.as_uuid()),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(br#","reply_count":"#);
    int(out, i64::try_from(m.reply_count()).unwrap_or(i64::MAX))?;
    out.extend_from_slice(br#","last_reply_at":"#);
    opt_secs(out, m.last_reply_at())?;
    out.extend_from_slice(br#","mentions":"#);
    array(out, m.mentions().contacts(), |out, c| {
        id(out, c.as_uuid());
        Ok(())
    })?;
    out.extend_from_slice(br#","edited_at":"#);
    opt_secs(out, m.edited_at())?;
    out.push(b'}');
    Ok(())
}

/// The message a reply quotes: `{"id","contact":{"id","username"},
/// "message"}` as it reads now, or `{"id","deleted":true}` once it is
/// gone (never its text).
fn write_quote(out: &mut Vec<u8>, q: &Quote) -> serde_json::Result<()> {
    out.extend_from_slice(br#"{"id":"#);
    id(out, q.id().as_uuid());
    match q {
        Quote::Deleted(_) => out.extend_from_slice(br#","deleted":true}"#),
        Quote::Message(m) => {
            out.extend_from_slice(br#","contact":{"id":"#);
            id(out, m.sender.as_uuid());
            out.extend_from_slice(br#","username":"#);
            string(out, m.sender_username.as_str())?;
            out.extend_from_slice(br#"},"message":"#);
            string(out, m.text.as_str())?;
            out.push(b'}');
        }
    }
    Ok(())
}

/// An earlier text of an edited message: `{"id","message","edited_at"}`.
fn write_edit(out: &mut Vec<u8>, e: &MessageEdit) -> serde_json::Result<()> {
    out.extend_from_slice(br#"{"id":"#);
    id(out, e.id.as_uuid());
    out.extend_from_slice(br#","message":"#);
    string(out, e.text.as_str())?;
    out.extend_from_slice(br#","edited_at":"#);
    secs(out, e.edited_at)?;
    out.push(b'}');
    Ok(())
}

/// A page of a message's earlier texts.
pub fn edit_page(page: &Paged<MessageEdit>) -> serde_json::Result<Vec<u8>> {
    list(page.has_more, &page.items, write_edit)
}

/// A contact as `viewer` may see it: the phone number only for the
/// contact themself and the operator ([`Contact::phone_number_for`]),
/// `null` for everyone else.
pub fn write_contact(out: &mut Vec<u8>, c: &Contact, viewer: Viewer) -> serde_json::Result<()> {
    out.extend_from_slice(br#"{"id":"#);
    id(out, c.id().as_uuid());
    out.extend_from_slice(br#","username":"#);
    string(out, c.username().as_str())?;
    out.extend_from_slice(br#","phone_number":"#);
    nullable(out, c.phone_number_for(viewer), |out, p| {
        string(out, p.as_str())
    })?;
    out.extend_from_slice(br#","avatar_url":"#);
    string(out, c.avatar_url().as_str())?;
    out.extend_from_slice(br#","last_active_at":"#);
    secs(out, c.last_active_at())?;
    out.extend_from_slice(br#","created_at":"#);
    secs(out, c.created_at())?;
    out.push(b'}');
    Ok(())
}

/// `{"like": ["alice", "bob"]}`.
fn write_reaction(out: &mut Vec<u8>, r: &Reaction) -> serde_json::Result<()> {
    out.push(b'{');
    string(out, r.name().as_str())?;
    out.push(b':');
    array(out, r.reactors(), |out, reactor| {
        string(out, reactor.username.as_str())
    })?;
    out.push(b'}');
    Ok(())
}

/// An attachment; an upload's `file_url` is a fresh signed link to its
/// content ([`FileLinks`]).
fn write_attachment(
    out: &mut Vec<u8>,
    a: &Attachment,
    links: &FileLinks,
    now: i64,
) -> serde_json::Result<()> {
    out.extend_from_slice(br#"{"id":"#);
    id(out, a.id.as_uuid());
    out.extend_from_slice(br#","message_id":"#);
    match a.message_id {
        Some(m) => id(out, m.as_uuid()),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(br#","filename":"#);
    string(out, a.filename.as_str())?;
    out.extend_from_slice(br#","file_url":"#);
    match &a.source {
        FileSource::Link(url) => string(out, url.as_str())?,
        FileSource::Stored(_) => string(out, &links.content_url(a.id.as_uuid(), now))?,
    }
    out.extend_from_slice(br#","file_type":"#);
    string(out, a.file_type.as_str())?;
    out.extend_from_slice(br#","file_size":"#);
    nullable(out, a.file_size, |out, size| int(out, size.bytes()))?;
    out.extend_from_slice(br#","created_at":"#);
    secs(out, a.created_at)?;
    out.push(b'}');
    Ok(())
}

/// The group with its first [`GROUP_EMBEDDED_MEMBERS`] members, in the
/// order they joined, and the count of them all.
pub fn write_group(out: &mut Vec<u8>, g: &Group, viewer: Viewer) -> serde_json::Result<()> {
    out.extend_from_slice(br#"{"id":"#);
    id(out, g.id().as_uuid());
    out.extend_from_slice(br#","name":"#);
    string(out, g.name().as_str())?;
    out.extend_from_slice(br#","description":"#);
    string(out, g.description().as_str())?;
    out.extend_from_slice(br#","avatar_url":"#);
    string(out, g.avatar_url().as_str())?;
    out.extend_from_slice(br#","contacts":"#);
    let first = g.first_members();
    let embedded = &first[..first.len().min(GROUP_EMBEDDED_MEMBERS)];
    array(out, embedded, |out, member| {
        write_contact(out, &member.contact, viewer)
    })?;
    out.extend_from_slice(br#","member_count":"#);
    serde_json::Serializer::new(&mut *out).serialize_u64(g.member_count())?;
    out.extend_from_slice(br#","created_at":"#);
    secs(out, g.created_at())?;
    out.push(b'}');
    Ok(())
}

/// A group member as `GET /v1/groups/{id}/members` lists it:
/// `{"contact", "role", "joined_at"}`.
pub fn write_member(out: &mut Vec<u8>, m: &GroupMember, viewer: Viewer) -> serde_json::Result<()> {
    out.extend_from_slice(br#"{"contact":"#);
    write_contact(out, &m.contact, viewer)?;
    out.extend_from_slice(br#","role":"#);
    string(out, m.role.as_str())?;
    out.extend_from_slice(br#","joined_at":"#);
    secs(out, m.joined_at)?;
    out.push(b'}');
    Ok(())
}

/// A block as its blocker lists it: `{"contact", "created_at"}`.
pub fn write_block(out: &mut Vec<u8>, b: &Block, viewer: Viewer) -> serde_json::Result<()> {
    out.extend_from_slice(br#"{"contact":"#);
    write_contact(out, &b.contact, viewer)?;
    out.extend_from_slice(br#","created_at":"#);
    secs(out, b.created_at)?;
    out.push(b'}');
    Ok(())
}

/// One block.
pub fn block(b: &Block, viewer: Viewer) -> serde_json::Result<Vec<u8>> {
    one(512, b, |out, b| write_block(out, b, viewer))
}

/// A report: as its reporter reads it, or with `reporter_id` and
/// `updated_at` as the operator does (`for_operator`).
pub fn write_report(out: &mut Vec<u8>, r: &Report, for_operator: bool) -> serde_json::Result<()> {
    out.extend_from_slice(br#"{"id":"#);
    id(out, r.id.as_uuid());
    if for_operator {
        out.extend_from_slice(br#","reporter_id":"#);
        id(out, r.reporter.as_uuid());
    }
    out.extend_from_slice(br#","message_id":"#);
    match r.message_id {
        Some(m) => id(out, m.as_uuid()),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(br#","contact_id":"#);
    id(out, r.contact_id.as_uuid());
    out.extend_from_slice(br#","reason":"#);
    string(out, r.reason.as_str())?;
    out.extend_from_slice(br#","description":"#);
    string(out, r.description.as_str())?;
    out.extend_from_slice(br#","status":"#);
    string(out, r.status.as_str())?;
    out.extend_from_slice(br#","created_at":"#);
    secs(out, r.created_at)?;
    if for_operator {
        out.extend_from_slice(br#","updated_at":"#);
        secs(out, r.updated_at)?;
    }
    out.push(b'}');
    Ok(())
}

/// One report (see [`write_report`]).
pub fn report(r: &Report, for_operator: bool) -> serde_json::Result<Vec<u8>> {
    one(512, r, |out, r| write_report(out, r, for_operator))
}

/// `[item, ...]`, each item written by `write`.
fn array<T>(
    out: &mut Vec<u8>,
    items: &[T],
    mut write: impl FnMut(&mut Vec<u8>, &T) -> serde_json::Result<()>,
) -> serde_json::Result<()> {
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write(out, item)?;
    }
    out.push(b']');
    Ok(())
}

/// `null`, or the value written by `write`.
fn nullable<T>(
    out: &mut Vec<u8>,
    value: Option<T>,
    write: impl FnOnce(&mut Vec<u8>, T) -> serde_json::Result<()>,
) -> serde_json::Result<()> {
    match value {
        Some(value) => write(out, value),
        None => {
            out.extend_from_slice(b"null");
            Ok(())
        }
    }
}

/// An id in the API's one spelling (lowercase, hyphenated): nothing in it
/// needs escaping.
fn id(out: &mut Vec<u8>, id: &Uuid) {
    let mut buf = [0u8; uuid::fmt::Hyphenated::LENGTH];
    out.push(b'"');
    out.extend_from_slice(id.hyphenated().encode_lower(&mut buf).as_bytes());
    out.push(b'"');
}

/// A string as serde_json writes it (quoted, escaped).
fn string(out: &mut Vec<u8>, s: &str) -> serde_json::Result<()> {
    serde_json::Serializer::new(out).serialize_str(s)
}

fn int(out: &mut Vec<u8>, n: i64) -> serde_json::Result<()> {
    serde_json::Serializer::new(out).serialize_i64(n)
}

fn secs(out: &mut Vec<u8>, t: Timestamp) -> serde_json::Result<()> {
    int(out, t.secs())
}

fn opt_secs(out: &mut Vec<u8>, t: Option<Timestamp>) -> serde_json::Result<()> {
    nullable(out, t, secs)
}

#[cfg(test)]
mod tests;
