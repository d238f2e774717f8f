//! Attachments: the files a message carries, or uploaded and not attached
//! yet, and the rule on how many one message carries.

use crate::{
    AttachmentId, ContactId, ConversationId, DomainError, Field, FileSize, FileType, FileUrl,
    Filename, MessageId, Rule, Timestamp,
};

/// At most this many attachments on one message.
pub const MAX_ATTACHMENTS: usize = 10;

/// Where an attachment's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileSource {
    /// At a URL the sender gave; confab never fetches it.
    Link(FileUrl),
    /// Uploaded to confab, which keeps the bytes under the attachment's id
    /// and knows their SHA-256.
    Stored(ContentDigest),
}

/// The SHA-256 of a stored file's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ContentDigest([u8; 32]);

impl ContentDigest {
    /// The digest whose bytes are `bytes`.
    pub const fn new(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The digest written as 64 lower-case hex digits, if `hex` is one.
    ///
    /// ```
    /// use confab_domain::ContentDigest;
    ///
    /// let d = ContentDigest::new([0xab; 32]);
    /// assert_eq!(ContentDigest::from_hex(&d.to_hex()), Some(d));
    /// assert_eq!(ContentDigest::from_hex("ab"), None);
    /// ```
    pub fn from_hex(hex: &str) -> Option<Self> {
        if hex.len() != 64 || !hex.is_ascii() {
            return None;
        }
        let mut out = [0_u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Self(out))
    }

    /// 64 lower-case hex digits.
    pub fn to_hex(&self) -> String {
        use std::fmt::Write as _;
        self.0.iter().fold(String::with_capacity(64), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
    }

    /// The digest's bytes.
    pub const fn bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

/// A file: attached to a message, or uploaded and not attached yet.
///
/// Its fields are public: each is a validated value or an id, and no rule
/// ties them to each other. That it belongs to the message carrying it is
/// the message's rule, checked by [`Message::new`](crate::Message::new).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// Never changes.
    pub id: AttachmentId,
    /// The message it belongs to; `None` for an upload not attached yet.
    pub message_id: Option<MessageId>,
    /// The conversation of that message; `None` with it.
    pub conversation_id: Option<ConversationId>,
    /// Who added it: the uploader, or the sender who attached it by URL.
    /// Only they may rename or delete it.
    pub uploader: ContactId,
    /// The file's name, as the sender gave it.
    pub filename: Filename,
    /// Where the bytes are.
    pub source: FileSource,
    /// The file's MIME type: as the sender gave it for a link, detected
    /// from the bytes for an upload.
    pub file_type: FileType,
    /// The file's size: when the sender gave it for a link, always for an
    /// upload.
    pub file_size: Option<FileSize>,
    /// When it was added.
    pub created_at: Timestamp,
}

impl Attachment {
    /// Whether confab stores its bytes (an upload).
    pub fn is_stored(&self) -> bool {
        matches!(self.source, FileSource::Stored(_))
    }
}

/// An attachment as submitted, before it has an id.
///
/// A plain carrier of validated values (public fields): no rule ties them
/// to each other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAttachment {
    /// See [`Attachment::filename`].
    pub filename: Filename,
    /// Where the bytes live; confab never fetches them.
    pub file_url: FileUrl,
    /// See [`Attachment::file_type`].
    pub file_type: FileType,
    /// See [`Attachment::file_size`].
    pub file_size: Option<FileSize>,
}

impl NewAttachment {
    /// The attachment this becomes once `sender` attaches it to message
    /// `message_id` of `conversation_id` as `id`, at `at`.
    #[must_use]
    pub fn attach(
        self,
        id: AttachmentId,
        (message_id, conversation_id): (MessageId, ConversationId),
        sender: ContactId,
        at: Timestamp,
    ) -> Attachment {
        Attachment {
            id,
            message_id: Some(message_id),
            conversation_id: Some(conversation_id),
            uploader: sender,
            filename: self.filename,
            source: FileSource::Link(self.file_url),
            file_type: self.file_type,
            file_size: self.file_size,
            created_at: at,
        }
    }
}

/// One of the attachments a send or an edit adds, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddAttachment {
    /// A new attachment by URL, with the id it gets.
    Link(AttachmentId, NewAttachment),
    /// The caller's own upload, not attached yet.
    Upload(AttachmentId),
}

impl AddAttachment {
    /// The attachment's id.
    pub fn id(&self) -> AttachmentId {
        match self {
            Self::Link(id, _) | Self::Upload(id) => *id,
        }
    }
}

/// The rule on attachments: a message carries at most [`MAX_ATTACHMENTS`].
/// [`Message::new`](crate::Message::new) and [`Message::check_attach`](crate::Message::check_attach) apply it; an adapter that
/// counts attachments without a message at hand (a request's list before
/// reading its items, a stored message's rows under a lock) asks it here.
///
/// # Errors
///
/// [`DomainError::Invalid`] on [`Field::Attachments`] with
/// [`Rule::TooManyAttachments`] when `total` is over the limit.
///
/// ```
/// use confab_domain::{check_attachment_count, MAX_ATTACHMENTS};
///
/// assert!(check_attachment_count(MAX_ATTACHMENTS).is_ok());
/// assert!(check_attachment_count(MAX_ATTACHMENTS + 1).is_err());
/// ```
pub fn check_attachment_count(total: usize) -> Result<(), DomainError> {
    if total > MAX_ATTACHMENTS {
        return Err(DomainError::breaks(
            Field::Attachments,
            Rule::TooManyAttachments {
                max: MAX_ATTACHMENTS,
            },
        ));
    }
    Ok(())
}
