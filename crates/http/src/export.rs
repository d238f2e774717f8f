//! A contact's export (`GET /v1/admin/contacts/{id}/export`, docs/api.md
//! "Server API: from an app's backend"): everything stored about it as NDJSON, one object a line with a
//! `kind`: `contact`, `token` (never its secret), `conversation` (with the
//! contact's own state in it), `group`, `message` (those it sent),
//! `reaction` (those it made).
//!
//! Streamed: each part is read a page at a time and written as one chunk
//! when the client has taken the one before, so memory holds one page,
//! whatever the contact's history. The stream's store calls have their own
//! deadlines (not the request's 2 s budget: an export may take longer).
//! A failure after the answer began ends the stream with a line of kind
//! `error`; a complete export ends with a line of kind `end`.

use actix_web::web::Bytes;
use confab_domain::{
    Contact, ContactId, ConversationId, Cursor, GroupId, MessageId, Page, PageLimit, ReportId,
    Viewer,
};
use confab_service::{Confab, ConversationFilter, ServiceError};
use uuid::Uuid;

use crate::dto::{ConversationDto, TokenDto};
use crate::wire;

/// Messages read per page (each with its reactions and attachments).
const MESSAGES_PER_PAGE: u32 = 200;
/// Reactions read per page.
const REACTIONS_PER_PAGE: u32 = 500;

/// Where an export stands: the part it writes next, and how far into it.
pub enum Export {
    Contact(Contact),
    Tokens(Contact, Option<Uuid>),
    Conversations(Contact, Option<ConversationId>),
    Groups(Contact, Option<GroupId>),
    Messages(Contact, Option<MessageId>),
    Reactions(Contact, i64),
    Blocks(Contact, Option<ContactId>),
    Reports(Contact, Option<ReportId>),
    End,
    Done,
}

/// A page of the lists the service pages (100 items).
fn page<Id>(after: Option<Id>) -> Page<Id> {
    Page {
        limit: PageLimit::new(100).unwrap_or_default(),
        cursor: after.map(Cursor::After),
    }
}

/// `{"kind":"<kind>", ...the object's fields}` and a newline.
fn line(out: &mut Vec<u8>, kind: &str, object: &[u8]) {
    out.extend_from_slice(br#"{"kind":""#);
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\"");
    match object {
        [b'{', b'}'] => out.push(b'}'),
        [b'{', rest @ ..] => {
            out.push(b',');
            out.extend_from_slice(rest);
        }
        _ => out.push(b'}'),
    }
    out.push(b'\n');
}

impl Export {
    pub fn of(contact: Contact) -> Self {
        Self::Contact(contact)
    }

    /// The next chunk and what follows it; `None` once done.
    pub async fn next(self, service: &Confab) -> Option<(Result<Bytes, actix_web::Error>, Self)> {
        if matches!(self, Self::Done) {
            return None;
        }
        let mut out = Vec::with_capacity(16 * 1024);
        let next = match self.write(service, &mut out).await {
            Ok(next) => next,
            Err(e) => {
                tracing::warn!(error = %e, "an export stopped before its end");
                out.clear();
                line(
                    &mut out,
                    "error",
                    br#"{"message":"the export stopped before its end: the database could not answer; ask again"}"#,
                );
                Self::Done
            }
        };
        Some((Ok(Bytes::from(out)), next))
    }

    /// Writes one page of the current part; returns where to go on. Every
    /// object is as the contact sees it (their own phone number, nobody
    /// else's): an export is theirs to be handed.
    async fn write(self, service: &Confab, out: &mut Vec<u8>) -> Result<Self, ServiceError> {
        let json = |e: serde_json::Error| ServiceError::Internal {
            what: "an export line cannot be written",
            source: e.into(),
        };
        Ok(match self {
            Self::Contact(contact) => {
                line(
                    out,
                    "contact",
                    &wire::contact(&contact, Viewer::Contact(contact.id())).map_err(json)?,
                );
                Self::Tokens(contact, None)
            }
            Self::Tokens(contact, after) => {
                let tokens = service.list_tokens(contact.id(), page(after)).await?;
                for t in &tokens.items {
                    line(
                        out,
                        "token",
                        &serde_json::to_vec(&TokenDto::from(t)).map_err(json)?,
                    );
                }
                match tokens.items.last() {
                    Some(last) if tokens.has_more => Self::Tokens(contact, Some(last.id)),
                    _ => Self::Conversations(contact, None),
                }
            }
            Self::Conversations(contact, after) => {
                let views = service
                    .list_conversations(&contact, ConversationFilter::default(), page(after))
                    .await?;
                for v in &views.items {
                    let dto = ConversationDto::from(v);
                    line(
                        out,
                        "conversation",
                        &serde_json::to_vec(&dto).map_err(json)?,
                    );
                }
                match views.items.last() {
                    Some(last) if views.has_more => {
                        Self::Conversations(contact, Some(last.conversation.id()))
                    }
                    _ => Self::Groups(contact, None),
                }
            }
            Self::Groups(contact, after) => {
                let groups = service.list_groups(&contact, page(after)).await?;
                for g in &groups.items {
                    line(
                        out,
                        "group",
                        &wire::group(g, Viewer::Contact(contact.id())).map_err(json)?,
                    );
                }
                match groups.items.last() {
                    Some(last) if groups.has_more => Self::Groups(contact, Some(last.id())),
                    _ => Self::Messages(contact, None),
                }
            }
            Self::Messages(contact, after) => {
                let sent = service
                    .export_messages(contact.id(), after, MESSAGES_PER_PAGE)
                    .await?;
                for m in &sent {
                    // An upload's `file_url` is its content's path, unsigned:
                    // an export outlives any signed link, and the server
                    // key that exports reads the content with its token.
                    line(
                        out,
                        "message",
                        &wire::message(
                            m,
                            &wire::FileLinks::default(),
                            Viewer::Contact(contact.id()),
                        )
                        .map_err(json)?,
                    );
                }
                match sent.last() {
                    Some(last) if sent.len() == MESSAGES_PER_PAGE as usize => {
                        Self::Messages(contact, Some(last.id()))
                    }
                    _ => Self::Reactions(contact, 0),
                }
            }
            Self::Reactions(contact, after) => {
                let made = service
                    .export_reactions(contact.id(), after, REACTIONS_PER_PAGE)
                    .await?;
                for r in &made {
                    let object = serde_json::json!({
                        "message_id": r.message_id.to_string(),
                        "name": r.name,
                        "created_at": r.created_at.secs(),
                    });
                    line(out, "reaction", &serde_json::to_vec(&object).map_err(json)?);
                }
                match made.last() {
                    Some(last) if made.len() == REACTIONS_PER_PAGE as usize => {
                        Self::Reactions(contact, last.seq)
                    }
                    _ => Self::Blocks(contact, None),
                }
            }
            Self::Blocks(contact, after) => {
                let blocks = service.blocks(&contact, page(after)).await?;
                for b in &blocks.items {
                    let viewer = Viewer::Contact(contact.id());
                    line(out, "block", &wire::block(b, viewer).map_err(json)?);
                }
                match blocks.items.last() {
                    Some(last) if blocks.has_more => Self::Blocks(contact, Some(last.contact.id())),
                    _ => Self::Reports(contact, None),
                }
            }
            Self::Reports(contact, after) => {
                let filed = service.reports_filed(contact.id(), page(after)).await?;
                for r in &filed.items {
                    // As its reporter reads it.
                    line(out, "report", &wire::report(r, false).map_err(json)?);
                }
                match filed.items.last() {
                    Some(last) if filed.has_more => Self::Reports(contact, Some(last.id)),
                    _ => Self::End,
                }
            }
            Self::End => {
                line(out, "end", b"{}");
                Self::Done
            }
            Self::Done => Self::Done,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::line;

    #[test]
    fn a_line_is_the_object_with_its_kind_first() {
        let mut out = Vec::new();
        line(&mut out, "token", br#"{"id":"t"}"#);
        line(&mut out, "end", b"{}");
        assert_eq!(
            String::from_utf8(out).expect("utf-8"),
            "{\"kind\":\"token\",\"id\":\"t\"}\n{\"kind\":\"end\"}\n"
        );
    }
}
