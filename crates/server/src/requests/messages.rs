//! Requests of `/v1/messages`.

use confab_domain::{
    check_attachment_count, ConversationId, FileSize, FileType, FileUrl, Filename, MessageId,
    MessageText, NewAttachment, Page, ReactionName,
};

use super::{id, int, optional, request, text, Flatten};
use crate::error::ApiError;
use crate::params::{Malformed, Params};

request! {
    /// `GET /v1/messages`.
    pub struct ListMessagesIn {
        conversation_id: Option<ConversationId> = optional(id(Malformed::NotFound)),
        page: Page<MessageId> = Flatten,
    }
}

request! {
    /// `POST /v1/messages`.
    pub struct SendMessageIn {
        conversation_id: ConversationId = id(Malformed::NotFound),
        message: MessageText = text(MessageText::new),
        attachments: Vec<NewAttachment> = attachments,
    }
}

request! {
    /// `PUT /v1/messages/{id}`: edit, react, attach.
    pub struct UpdateMessageIn {
        message: Option<MessageText> = optional(text(MessageText::new)),
        reactions: Vec<(ReactionName, Vec<String>)> = reactions,
        attachments: Vec<NewAttachment> = attachments,
    }
}

request! {
    /// One of `attachments[i]`, its params named `attachments[i][<key>]`.
    pub struct AttachmentIn {
        file_url: FileUrl = text(FileUrl::new),
        filename: Filename = text(Filename::new),
        /// Absent: `application/octet-stream`.
        file_type: Option<FileType> = optional(text(FileType::new)),
        file_size: Option<FileSize> = optional(int(FileSize::new)),
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

/// `attachments[i][...]`, at most 10, counted before any item is judged;
/// each item refuses its own unknown keys before its values are judged.
fn attachments(p: &mut Params, name: &'static str) -> Result<Vec<NewAttachment>, ApiError> {
    let Some(items) = p.optional_objects(name)? else {
        return Ok(Vec::new());
    };
    check_attachment_count(items.len()).map_err(|e| p.domain(e))?;
    items
        .into_iter()
        .map(|item| item.into_request::<AttachmentIn>().map(NewAttachment::from))
        .collect()
}

/// `reactions[<name>][]=<username>`; a bad name is a 400 on `reactions`.
fn reactions(
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
