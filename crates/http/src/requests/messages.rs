//! Requests of `/v1/messages`.

use confab_domain::{
    check_attachment_count, AttachmentId, ContactId, ConversationId, DomainError, EditId, FileSize,
    FileType, FileUrl, Filename, MessageId, MessageText, NewAttachment, Page, PageLimit,
    ReactionName, SearchQuery,
};
use confab_service::{is_public_address, AttachmentInput, SendMessage, UrlHost};

use super::{
    boolean, id, ids, int, keyed, optional, or_else, reader, request, shape, text, Field, Flatten,
};
use crate::error::ApiError;
use crate::params::{Malformed, Params};

request! {
    /// `GET /v1/messages`.
    pub struct ListMessagesIn {
        conversation_id: Option<ConversationId> = optional(id(Malformed::NotFound)),
        /// A thread: the replies to this message (not with
        /// `conversation_id`).
        parent_id: Option<MessageId> = optional(id(Malformed::NotFound)),
        /// With `conversation_id`: thread replies too.
        include_replies: Option<bool> = optional(boolean()),
        page: Page<MessageId> = Flatten,
    }
}

request! {
    /// `GET /v1/messages/search`: pages go forward only (`starting_after`).
    pub struct SearchMessagesIn {
        query: SearchQuery = text(shape::search_query, |raw| SearchQuery::parse(&raw)),
        /// Only this conversation's messages (one of the caller's).
        conversation_id: Option<ConversationId> = optional(id(Malformed::Invalid)),
        /// Only the messages this contact sent.
        sender_id: Option<ContactId> = optional(id(Malformed::Invalid)),
        /// Only messages created after this second (Unix seconds).
        created_after: Option<i64> = optional(int(shape::unix_seconds, Ok)),
        /// Only messages created before this second (Unix seconds).
        created_before: Option<i64> = optional(int(shape::unix_seconds, Ok)),
        limit: Option<PageLimit> = optional(int(shape::limit, PageLimit::new)),
        starting_after: Option<MessageId> = optional(id(Malformed::Invalid)),
    }
}

request! {
    /// `GET /v1/messages/{id}/edits`.
    pub struct ListEditsIn {
        page: Page<EditId> = Flatten,
    }
}

request! {
    /// `POST /v1/messages`: read straight into the service's command.
    pub struct SendMessageIn(SendMessage) {
        conversation_id: ConversationId = id(Malformed::NotFound),
        /// `message` on the wire; absent: a message that is only its
        /// attachments (at least one).
        text: MessageText = keyed(
            "message",
            or_else(text(shape::message_text, MessageText::new), MessageText::none),
        ),
        attachments: Vec<AttachmentInput> = attachments(),
        /// The message it quotes (of the same conversation).
        reply_to_id: Option<MessageId> = optional(id(Malformed::Invalid)),
        /// The message whose thread it replies in (a top-level message of
        /// the same conversation).
        parent_id: Option<MessageId> = optional(id(Malformed::Invalid)),
        /// Members of the conversation it mentions (at most 50).
        mentions: Vec<ContactId> = ids(),
    }
    then text_or_attachment;
}

/// A message without text needs an attachment (docs/api.md "Files and
/// attachments"): without either, the text is what is missing.
fn text_or_attachment(send: &SendMessage) -> Result<(), ApiError> {
    if send.text.is_none() && send.attachments.is_empty() {
        return Err(ApiError::missing("message"));
    }
    Ok(())
}

request! {
    /// `PUT /v1/messages/{id}`: edit, react, attach.
    pub struct UpdateMessageIn {
        message: Option<MessageText> = optional(text(shape::message_text, MessageText::new)),
        reactions: Vec<(ReactionName, Vec<String>)> = reactions(),
        attachments: Vec<AttachmentInput> = attachments(),
        /// The members it mentions from now on (sender only).
        mentions: Option<Vec<ContactId>> = optional(ids()),
    }
}

request! {
    /// One of `attachments[i]` naming an upload: `attachments[i][id]`.
    pub struct AttachUploadIn {
        id: AttachmentId = id(Malformed::Invalid),
    }
}

request! {
    /// One of `attachments[i]`, its params named `attachments[i][<key>]`.
    pub struct AttachmentIn {
        file_url: FileUrl = text(shape::http_url, public_file_url),
        filename: Filename = text(shape::filename, Filename::new),
        /// Absent: `application/octet-stream`.
        file_type: Option<FileType> = optional(text(shape::file_type, FileType::new)),
        file_size: Option<FileSize> = optional(int(shape::file_size, FileSize::new)),
    }
}

impl From<AttachmentIn> for NewAttachment {
    fn from(a: AttachmentIn) -> Self {
        NewAttachment {
            filename: a.filename,
            file_url: a.file_url,
            file_type: a.file_type.unwrap_or_else(FileType::octet_stream),
            file_size: a.file_size,
        }
    }
}

/// `attachments[i][...]`; absent is none.
fn attachments() -> impl Field<Vec<AttachmentInput>> {
    reader(shape::attachments, false, read_attachments)
}

/// A file URL whose host is not a private, loopback, link-local or
/// otherwise reserved address literal (docs/api.md "Files and attachments"; the rule of
/// webhooks, `confab_service::is_public_address`), as a browser's URL
/// parser reads it (`http://2130706433/` is 127.0.0.1). A name is not
/// resolved: it may point anywhere later.
fn public_file_url(raw: String) -> Result<FileUrl, DomainError> {
    let url = FileUrl::new(raw)?;
    // The webhooks' parse: the address in its one normal form, whatever
    // spelling the URL used.
    let private = match confab_delivery::webhooks::parse_url(url.as_str()).map(|t| t.host) {
        Ok(UrlHost::Address(ip)) => !is_public_address(ip),
        Ok(UrlHost::Name(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
        Err(_) => true,
    };
    if private {
        return Err(DomainError::breaks(
            confab_domain::Field::FileUrl,
            confab_domain::Rule::PrivateAddress,
        ));
    }
    Ok(url)
}

/// At most `MAX_ATTACHMENTS`, counted by the domain's rule before any item
/// is judged (a long list costs nothing, and is refused before the message
/// is looked up); each item refuses its own unknown keys before its values
/// are judged.
fn read_attachments(p: &mut Params, name: &'static str) -> Result<Vec<AttachmentInput>, ApiError> {
    let Some(items) = p.optional_objects(name)? else {
        return Ok(Vec::new());
    };
    check_attachment_count(items.len()).map_err(|e| p.domain(e))?;
    items
        .into_iter()
        .map(|item| {
            // An upload by id, or a file at a URL: `id` says which.
            if item.has("id") {
                item.into_request::<AttachUploadIn>()
                    .map(|a| AttachmentInput::Upload(a.id))
            } else {
                item.into_request::<AttachmentIn>()
                    .map(|a| AttachmentInput::Link(a.into()))
            }
        })
        .collect()
}

/// `reactions[<name>][]=<username>`; absent is none.
fn reactions() -> impl Field<Vec<(ReactionName, Vec<String>)>> {
    reader(shape::reactions, false, read_reactions)
}

/// A bad name is a 400 on `reactions`.
fn read_reactions(
    p: &mut Params,
    name: &'static str,
) -> Result<Vec<(ReactionName, Vec<String>)>, ApiError> {
    p.optional_named_lists(name)?
        .unwrap_or_default()
        .into_iter()
        .map(|(reaction, usernames)| {
            let reaction = ReactionName::new(reaction).map_err(|e| p.domain(e))?;
            Ok((reaction, usernames))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";

    fn send(body: &str) -> Result<SendMessageIn, ApiError> {
        Params::from_body(Some("application/x-www-form-urlencoded"), body.as_bytes())
            .expect("form")
            .into_request()
    }

    #[test]
    fn attachments_are_requests_of_their_own() {
        let req = send(&format!(
            "conversation_id={ID}&message=hi&attachments[0][file_url]=https://x.test/a&attachments[0][filename]=a.txt"
        ))
        .expect("ok")
        .0;
        assert_eq!(req.attachments.len(), 1);
        let AttachmentInput::Link(a) = &req.attachments[0] else {
            panic!("a link");
        };
        assert_eq!(a.file_type, FileType::octet_stream());
        assert_eq!(a.file_size, None);
        // An upload by id.
        let req = send(&format!(
            "conversation_id={ID}&attachments[0][id]={ID}&attachments[1][file_url]=https://x.test/a&attachments[1][filename]=a"
        ))
        .expect("ok")
        .0;
        assert!(req.text.is_none());
        assert!(matches!(req.attachments[0], AttachmentInput::Upload(_)));
        assert!(matches!(req.attachments[1], AttachmentInput::Link(_)));
    }

    #[test]
    fn each_level_refuses_unknown_keys_before_judging_values() {
        // Top level first, whatever the items hold.
        let e = send("message=&attachments[0][x]=1&colour=blue").expect_err("top");
        assert_eq!((e.code(), e.param()), ("parameter_unknown", Some("colour")));
        // An item's unknown key before its own missing values...
        let e = send(&format!(
            "conversation_id={ID}&message=hi&attachments[0][x]=1"
        ))
        .expect_err("item");
        assert_eq!(
            (e.code(), e.param()),
            ("parameter_unknown", Some("attachments[0][x]"))
        );
        // ...but after the values of the fields before `attachments`.
        let e = send("message=hi&attachments[0][x]=1").expect_err("order");
        assert_eq!(
            (e.code(), e.param()),
            ("parameter_missing", Some("conversation_id"))
        );
        // Items are judged one after another.
        let e = send(&format!(
            "conversation_id={ID}&message=hi&attachments[0][filename]=a&attachments[1][x]=1"
        ))
        .expect_err("first item");
        assert_eq!(
            (e.code(), e.param()),
            ("parameter_missing", Some("attachments[0][file_url]"))
        );
    }
}
