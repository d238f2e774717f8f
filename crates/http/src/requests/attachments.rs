//! Requests of `/v1/attachments` (the upload itself is multipart, read by
//! its handler).

use confab_domain::{AttachmentId, ConversationId, Filename, MessageId, Page};

use super::{id, optional, request, shape, text, Flatten};
use crate::params::Malformed;

request! {
    /// `GET /v1/attachments`: filters, then the page.
    pub struct ListAttachmentsIn {
        message_id: Option<MessageId> = optional(id(Malformed::NotFound)),
        conversation_id: Option<ConversationId> = optional(id(Malformed::NotFound)),
        page: Page<AttachmentId> = Flatten,
    }
}

request! {
    /// `PUT /v1/attachments/{id}`: a new name.
    pub struct UpdateAttachmentIn {
        filename: Option<Filename> = optional(text(shape::filename, Filename::new)),
    }
}
