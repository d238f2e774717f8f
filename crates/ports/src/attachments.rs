//! What the database knows of attachments (docs/api.md "Files and attachments"): uploads not
//! attached yet, their names and who may see them, and which stored files
//! are still to be deleted from the [`crate::FileStorage`].
//!
//! A stored file's life, so that neither a crash nor a race leaves a file
//! nobody will delete or a row pointing at nothing: before its bytes are
//! written, a deletion is scheduled for it 24 h later
//! ([`AttachmentStore::expect_file`]); attaching it cancels that deletion
//! in the attaching transaction; whenever its row goes (its message,
//! conversation, group or contact deleted, or itself), a deletion due at
//! once is scheduled in that same transaction. A sweeper deletes each due
//! file ([`AttachmentStore::release_file`], the storage's delete, then
//! [`AttachmentStore::forget_file_deletion`]).

use async_trait::async_trait;
use confab_domain::{
    Attachment, AttachmentId, ContactId, ConversationId, Filename, MessageId, Page, Paged,
    Timestamp,
};

use crate::{Completion, Outbox, StoreError};

/// Which attachments a list holds besides being visible to its viewer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AttachmentFilter {
    /// Only this message's.
    pub message: Option<MessageId>,
    /// Only this conversation's.
    pub conversation: Option<ConversationId>,
}

/// What stored files take: their bytes and their number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StorageUse {
    /// The files' sizes added up.
    pub bytes: u64,
    /// How many files.
    pub files: u64,
}

/// What [`AttachmentStore::insert_upload`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Uploaded {
    /// The upload is stored (and counted in its uploader's use).
    Stored(Attachment),
    /// Nothing was written: with it, its uploader's stored files would
    /// pass the quota; they take `used` bytes now.
    OverQuota {
        /// The uploader's stored bytes, without this upload.
        used: u64,
    },
}

/// Attachments and the stored files' deletions.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait AttachmentStore: Send + Sync {
    /// Schedules the deletion of the file of attachment `id` at `due`,
    /// before its bytes are written: a file whose upload never completes,
    /// or that is never attached, goes then.
    async fn expect_file(&self, id: AttachmentId, due: Timestamp) -> Result<(), StoreError>;
    /// Stores `upload` (an upload not attached: `message_id` none, stored
    /// bytes) with the `outbox`'s events (`attachment.created` for its
    /// uploader), and adds its size to its uploader's [`StorageUse`], in
    /// one transaction; when that use would then pass `quota` bytes,
    /// writes nothing and answers [`Uploaded::OverQuota`]. Concurrent
    /// uploads of one contact are counted one after the other: together
    /// they never pass the quota. With a `completion`, the idempotency key
    /// it holds is completed in the same transaction (the write rolls back
    /// with `ClaimLost` when the claim was lost); over the quota it is
    /// left as it was.
    async fn insert_upload(
        &self,
        upload: Attachment,
        quota: Option<u64>,
        outbox: Outbox,
        completion: Option<Completion<Attachment>>,
    ) -> Result<Uploaded, StoreError>;
    /// What `contact`'s stored files take (its uploads, attached or not).
    async fn storage_use(&self, contact: ContactId) -> Result<StorageUse, StoreError>;
    /// What every contact's stored files take together (for the
    /// operator's figures; its cost follows the contacts who uploaded).
    async fn storage_total(&self) -> Result<StorageUse, StoreError>;
    /// The attachment with this id when `viewer` may see it: their own
    /// upload, or an attachment of a message of a conversation they are a
    /// member of (checked in the same query).
    async fn attachment_for(
        &self,
        viewer: ContactId,
        id: AttachmentId,
    ) -> Result<Option<Attachment>, StoreError>;
    /// The attachment with this id, whoever asks (a signed link).
    async fn attachment(&self, id: AttachmentId) -> Result<Option<Attachment>, StoreError>;
    /// The attachments `viewer` may see (see [`Self::attachment_for`]),
    /// newest first (by id), narrowed by `filter`.
    /// # Errors
    /// - MUST return `NotFound` when the filter's message or conversation
    ///   does not exist or the viewer cannot see it.
    /// - MUST return `CursorNotFound` when the cursor is not in this list.
    async fn list_attachments(
        &self,
        viewer: ContactId,
        filter: AttachmentFilter,
        page: Page<AttachmentId>,
    ) -> Result<Paged<Attachment>, StoreError>;
    /// Renames attachment `id`, when `by` added it; writes the `outbox`'s
    /// events (`attachment.updated`) when the name changed.
    /// # Errors
    /// - MUST return `NotFound` when it does not exist or `by` did not add
    ///   it.
    async fn rename_attachment(
        &self,
        id: AttachmentId,
        by: ContactId,
        filename: Filename,
        outbox: Outbox,
    ) -> Result<Attachment, StoreError>;
    /// Deletes attachment `id`, when `by` added it, with the `outbox`'s
    /// events (`attachment.deleted`, resolved before the delete); a stored
    /// file's deletion is scheduled at once in the same transaction.
    /// # Errors
    /// - MUST return `NotFound` when it does not exist or `by` did not add
    ///   it.
    async fn delete_attachment(
        &self,
        id: AttachmentId,
        by: ContactId,
        outbox: Outbox,
    ) -> Result<(), StoreError>;
    /// Up to `limit` files whose deletion is due at `now`, earliest first.
    async fn due_file_deletions(
        &self,
        now: Timestamp,
        limit: u32,
    ) -> Result<Vec<AttachmentId>, StoreError>;
    /// Takes attachment `id`'s row away if it is an upload still not
    /// attached (writing the `outbox`'s events, `attachment.deleted` for its
    /// uploader, only then), and answers whether its file is still to be
    /// deleted: `false` when it was attached meanwhile (the deletion is
    /// cancelled) or already deleted.
    async fn release_file(&self, id: AttachmentId, outbox: Outbox) -> Result<bool, StoreError>;
    /// Forgets the deletion of attachment `id`'s file, once the storage has
    /// deleted it.
    async fn forget_file_deletion(&self, id: AttachmentId) -> Result<(), StoreError>;
    /// The secret named `name` that every server instance shares: the one
    /// stored, or `fresh` when there is none yet (stored now).
    async fn shared_secret(&self, name: &str, fresh: String) -> Result<String, StoreError>;
}
