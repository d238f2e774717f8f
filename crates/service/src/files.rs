//! Files (docs/api.md "Files and attachments"): uploads streamed to the file storage, their
//! lists, renames and deletions, reading their bytes, and the sweeper that
//! deletes the files whose deletion is due (`confab_ports::AttachmentStore`
//! tells a stored file's whole life).

use async_trait::async_trait;
use confab_domain::{
    attachment_changed, Attachment, AttachmentId, Change, Contact, ContentDigest, EventType, Field,
    FileSize, FileSource, FileType, Filename, Page, Paged, Rule,
};
use confab_ports::{
    AttachmentFilter, ByteRange, Completion, FileReader, FileStorage, FileWriter, StoreError,
    Uploaded,
};
use sha2::{Digest as _, Sha256};

use crate::error::page_error;
use crate::file_type::{detect, SNIFF_BYTES};
use crate::upload_limits::{Admission, UploadSlot};
use crate::{Confab, ServiceError};

/// An upload never attached is deleted this long after it began.
pub const UPLOAD_TTL_SECS: i64 = 24 * 3600;
/// The largest upload by default (`CONFAB_MAX_UPLOAD_BYTES`): 25 MiB.
pub const DEFAULT_MAX_UPLOAD_BYTES: u64 = 25 * 1024 * 1024;
/// The name of the shared secret that signs file links.
const FILE_LINK_SECRET: &str = "file_links";

/// Why an uploader who left (or was removed from) the conversation of
/// their attachment cannot rename it.
const NOT_A_MEMBER_TO_RENAME: &str =
    "only a member of its conversation may rename an attachment of it";
/// Due file deletions handled per sweep call.
const SWEEP_BATCH: u32 = 100;
/// An upload looks at the disk's free space again after this many bytes
/// (uploads let in together may fill it between their admissions).
const FREE_SPACE_EVERY: u64 = 4 * 1024 * 1024;

/// The storage of a service built without one: every call is refused as
/// unavailable.
pub(crate) struct NoFiles;

fn no_storage() -> StoreError {
    StoreError::Unavailable("no file storage is configured".into())
}

#[async_trait]
impl FileStorage for NoFiles {
    async fn create(&self, _: AttachmentId) -> Result<Box<dyn FileWriter>, StoreError> {
        Err(no_storage())
    }
    async fn open(
        &self,
        _: AttachmentId,
        _: Option<ByteRange>,
    ) -> Result<Box<dyn FileReader>, StoreError> {
        Err(no_storage())
    }
    async fn delete(&self, _: AttachmentId) -> Result<(), StoreError> {
        Err(no_storage())
    }
    async fn free_space(&self) -> Result<Option<u64>, StoreError> {
        Ok(None)
    }
}

/// An upload's name also refuses `\\` (a by-URL name keeps the rule it
/// always had): no name of a stored file reads as a path anywhere.
fn check_upload_name(filename: &Filename) -> Result<(), ServiceError> {
    if filename.has_backslash() {
        return Err(ServiceError::invalid(
            Field::Filename,
            Rule::Invariant("must not contain / or \\ or control characters"),
        ));
    }
    Ok(())
}

/// An upload under way: feed it the bytes in order ([`Upload::write`]),
/// then [`Upload::finish`] it with its name, or [`Upload::abort`] it.
/// Dropped unfinished, it leaves no attachment, and its file (if any part
/// of it was stored) is deleted by the sweeper within
/// [`UPLOAD_TTL_SECS`].
pub struct Upload {
    service: Confab,
    id: AttachmentId,
    uploader: Contact,
    writer: Box<dyn FileWriter>,
    digest: Sha256,
    size: u64,
    /// The first bytes, for the type.
    head: Vec<u8>,
    /// The uploader's stored bytes when it was let in: the quota's room
    /// is what is left above them. `None`: not metered while it streams
    /// (a retry to be replayed); its insert still checks the quota.
    used: Option<u64>,
    /// Where the disk's free space is next looked at.
    check_free_at: u64,
    /// Its place among the uploader's uploads under way, until it ends.
    _slot: UploadSlot,
}

impl std::fmt::Debug for Upload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upload")
            .field("id", &self.id)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl Upload {
    /// The attachment id the upload will have.
    pub fn id(&self) -> AttachmentId {
        self.id
    }

    /// Appends `chunk`.
    /// # Errors
    /// [`ServiceError::TooLarge`] once the bytes pass the limit,
    /// [`ServiceError::UploadQuota`] once they pass what is left of the
    /// uploader's quota, [`ServiceError::StorageFull`] when the disk
    /// reaches its floor (the upload should then be aborted);
    /// `Unavailable` when the storage fails.
    pub async fn write(&mut self, chunk: Vec<u8>) -> Result<(), ServiceError> {
        let max = self.service.max_upload_bytes;
        self.size = self.size.saturating_add(chunk.len() as u64);
        if self.size > max {
            return Err(ServiceError::TooLarge { max });
        }
        if let (Some(limit), Some(used)) = (self.service.upload_limits().quota_bytes, self.used) {
            if used.saturating_add(self.size) > limit {
                return Err(ServiceError::UploadQuota { used, limit });
            }
        }
        if self.size >= self.check_free_at {
            self.check_free_at = self.size.saturating_add(FREE_SPACE_EVERY);
            self.service.check_free_space(0).await?;
        }
        if self.head.len() < SNIFF_BYTES {
            let take = (SNIFF_BYTES - self.head.len()).min(chunk.len());
            self.head.extend_from_slice(&chunk[..take]);
        }
        self.digest.update(&chunk);
        self.writer.write(chunk).await?;
        Ok(())
    }

    /// Stores the file whole and records it as an upload of its uploader's
    /// named `filename`, its type detected from its first bytes, counted
    /// in the uploader's stored bytes.
    /// # Errors
    /// `Invalid` on [`Field::Filename`] for a name with a `\`;
    /// [`ServiceError::UploadQuota`] when uploads that finished meanwhile
    /// left no room for it: the file is then given up.
    pub async fn finish(self, filename: Filename) -> Result<Attachment, ServiceError> {
        self.finish_with(filename, None).await
    }

    /// The SHA-256 of the bytes written so far (all of them once the body
    /// is read): with the parameters, what tells a retry of an upload from
    /// another request with its idempotency key.
    pub fn content_digest(&self) -> [u8; 32] {
        self.digest.clone().finalize().into()
    }

    /// [`Upload::finish`], completing the idempotency key `completion`
    /// holds in the same transaction as the upload's row.
    pub async fn finish_with(
        self,
        filename: Filename,
        completion: Option<Completion<Attachment>>,
    ) -> Result<Attachment, ServiceError> {
        if let Err(e) = check_upload_name(&filename) {
            self.abort().await;
            return Err(e);
        }
        let Upload {
            service,
            id,
            uploader,
            writer,
            digest,
            size,
            head,
            used: _,
            check_free_at: _,
            _slot,
        } = self;
        writer.finish().await?;
        let digest = ContentDigest::new(digest.finalize().into());
        let file_type =
            FileType::new(detect(&head).to_owned()).unwrap_or_else(|_| FileType::octet_stream());
        let now = service.now();
        let upload = Attachment {
            id,
            message_id: None,
            conversation_id: None,
            uploader: uploader.id(),
            filename,
            source: FileSource::Stored(digest),
            file_type,
            file_size: Some(FileSize::new(i64::try_from(size).unwrap_or(i64::MAX))?),
            created_at: now,
        };
        let events = attachment_changed(
            Change::new(uploader.id(), now),
            service.event_ids(),
            EventType::AttachmentCreated,
            &upload,
        );
        let quota = service.upload_limits().quota_bytes;
        let stored = match service
            .ports
            .attachments
            .insert_upload(upload, quota, service.outbox(events), completion)
            .await?
        {
            Uploaded::Stored(stored) => stored,
            Uploaded::OverQuota { used } => {
                // Its deletion stays scheduled if this fails.
                if let Err(e) = service.files.delete(id).await {
                    tracing::warn!(attachment = %id, error = %e, "a refused upload's file is left to the sweeper");
                }
                return Err(ServiceError::UploadQuota {
                    used,
                    limit: quota.unwrap_or(u64::MAX),
                });
            }
        };
        service.committed();
        Ok(stored)
    }

    /// Gives the upload up: nothing of it stays (what the storage kept,
    /// if its abort fails, goes with the sweeper).
    pub async fn abort(self) {
        if let Err(e) = self.writer.abort().await {
            tracing::warn!(attachment = %self.id, error = %e, "an upload's abort failed; the sweeper deletes what is left");
        }
    }
}

impl Confab {
    /// Lets in ([`Confab::admit_upload`]) and starts an upload by
    /// `caller`.
    pub async fn begin_upload(&self, caller: &Contact) -> Result<Upload, ServiceError> {
        let admission = self.admit_upload(caller, None).await?;
        self.start_upload(admission).await
    }

    /// Starts an upload let in: its file's deletion is scheduled
    /// (cancelled when attached) before any byte is stored.
    pub async fn start_upload(&self, admission: Admission) -> Result<Upload, ServiceError> {
        let Admission { caller, slot, used } = admission;
        let id = AttachmentId::from_uuid(self.new_uuid());
        let due = self.now().plus_secs(UPLOAD_TTL_SECS);
        self.ports.attachments.expect_file(id, due).await?;
        let writer = self.files.create(id).await?;
        Ok(Upload {
            service: self.clone(),
            id,
            uploader: caller,
            writer,
            digest: Sha256::new(),
            size: 0,
            head: Vec::with_capacity(SNIFF_BYTES),
            used,
            check_free_at: FREE_SPACE_EVERY,
            _slot: slot,
        })
    }

    /// The largest upload, in bytes.
    pub fn max_upload_bytes(&self) -> u64 {
        self.max_upload_bytes
    }

    /// The attachment, when the caller may see it.
    pub async fn attachment(
        &self,
        caller: &Contact,
        id: AttachmentId,
    ) -> Result<Attachment, ServiceError> {
        self.ports
            .attachments
            .attachment_for(caller.id(), id)
            .await?
            .ok_or(ServiceError::not_found())
    }

    /// The attachment whoever asks: for a link whose signature the caller
    /// checked.
    pub async fn linked_attachment(
        &self,
        id: AttachmentId,
    ) -> Result<Option<Attachment>, ServiceError> {
        Ok(self.ports.attachments.attachment(id).await?)
    }

    /// The attachments the caller may see, newest first.
    pub async fn list_attachments(
        &self,
        caller: &Contact,
        filter: AttachmentFilter,
        page: Page<AttachmentId>,
    ) -> Result<Paged<Attachment>, ServiceError> {
        self.ports
            .attachments
            .list_attachments(caller.id(), filter, page)
            .await
            .map_err(|e| match e {
                StoreError::NotFound => ServiceError::NotFound {
                    of: Some(if filter.conversation.is_some() {
                        Field::Conversation
                    } else {
                        Field::Attachments
                    }),
                },
                e => page_error(&page, e),
            })
    }

    /// The caller's attachment `id`: `NotFound` when they cannot see it,
    /// `Forbidden` when they can but did not add it.
    async fn own_attachment(
        &self,
        caller: &Contact,
        id: AttachmentId,
        what: &'static str,
    ) -> Result<Attachment, ServiceError> {
        let attachment = self.attachment(caller, id).await?;
        if attachment.uploader != caller.id() {
            return Err(ServiceError::Forbidden(what));
        }
        Ok(attachment)
    }

    /// Renames the caller's attachment: theirs, and, once attached, only
    /// while they are a member of its conversation and not in a block with
    /// its other member.
    pub async fn rename_attachment(
        &self,
        caller: &Contact,
        id: AttachmentId,
        filename: Filename,
    ) -> Result<Attachment, ServiceError> {
        let current = self
            .own_attachment(caller, id, "only the uploader may rename an attachment")
            .await?;
        if current.is_stored() {
            check_upload_name(&filename)?;
        }
        if current.filename == filename {
            return Ok(current);
        }
        // An attached file's new name reaches its conversation's members:
        // only a member may send it there (a removed uploader keeps their
        // file, not a voice in the conversation), and not across a block,
        // as for a message's text.
        if let Some(conversation) = current.conversation_id {
            if !self.is_member(caller, conversation).await? {
                return Err(ServiceError::Forbidden(NOT_A_MEMBER_TO_RENAME));
            }
            if let Some(blocked) = self
                .conversation_blocked(caller, conversation, None)
                .await?
            {
                return Err(blocked);
            }
        }
        let now = self.now();
        let events = attachment_changed(
            Change::new(caller.id(), now),
            self.event_ids(),
            EventType::AttachmentUpdated,
            &current,
        );
        let renamed = self
            .ports
            .attachments
            .rename_attachment(id, caller.id(), filename, self.outbox(events))
            .await?;
        self.committed();
        Ok(renamed)
    }

    /// Deletes the caller's attachment, from its message too; a stored
    /// file is deleted at once when the storage answers (else by the
    /// sweeper).
    pub async fn delete_attachment(
        &self,
        caller: &Contact,
        id: AttachmentId,
    ) -> Result<(), ServiceError> {
        let current = self
            .own_attachment(caller, id, "only the uploader may delete an attachment")
            .await?;
        let events = attachment_changed(
            Change::new(caller.id(), self.now()),
            self.event_ids(),
            EventType::AttachmentDeleted,
            &current,
        );
        self.ports
            .attachments
            .delete_attachment(id, caller.id(), self.outbox(events))
            .await?;
        self.committed();
        if current.is_stored() {
            // Best effort now; the deletion stays scheduled until done.
            if let Err(e) = self.delete_file(id, None).await {
                tracing::warn!(attachment = %id, error = %e, "a deleted attachment's file is left to the sweeper");
            }
        }
        Ok(())
    }

    /// The bytes of `attachment` (one the caller may read), whole or
    /// `range` of them.
    pub async fn open_attachment(
        &self,
        attachment: &Attachment,
        range: Option<ByteRange>,
    ) -> Result<Box<dyn FileReader>, ServiceError> {
        if !attachment.is_stored() {
            return Err(ServiceError::not_found());
        }
        self.files
            .open(attachment.id, range)
            .await
            .map_err(|e| match e {
                StoreError::NotFound => ServiceError::not_found(),
                e => e.into(),
            })
    }

    /// One due deletion: `upload`'s row if still not attached (the
    /// attachment as read before, if any), then the file, then the
    /// deletion's row.
    async fn delete_file(
        &self,
        id: AttachmentId,
        upload: Option<&Attachment>,
    ) -> Result<(), ServiceError> {
        // The event is only written if the row was still an upload; its
        // audience is then its uploader.
        let events = match upload {
            Some(a) if a.message_id.is_none() => attachment_changed(
                Change::new(a.uploader, self.now()),
                self.event_ids(),
                EventType::AttachmentDeleted,
                a,
            ),
            _ => Vec::new(),
        };
        let still = self
            .ports
            .attachments
            .release_file(id, self.outbox(events))
            .await?;
        if still {
            self.files.delete(id).await?;
            self.ports.attachments.forget_file_deletion(id).await?;
        }
        Ok(())
    }

    /// Deletes the files whose deletion is due: uploads never attached
    /// after [`UPLOAD_TTL_SECS`], files of deleted attachments at once.
    /// Returns how many were handled; stops at the first failure (the
    /// rest stay due).
    pub async fn sweep_files(&self) -> Result<usize, ServiceError> {
        let mut done = 0;
        loop {
            let due = self
                .ports
                .attachments
                .due_file_deletions(self.now(), SWEEP_BATCH)
                .await?;
            let n = due.len();
            for id in due {
                let upload = self.ports.attachments.attachment(id).await?;
                self.delete_file(id, upload.as_ref()).await?;
                done += 1;
            }
            if n < SWEEP_BATCH as usize {
                return Ok(done);
            }
        }
    }

    /// The key that signs links to files' content: 32 random bytes in
    /// hex, shared by every instance on the database (made by the first).
    pub async fn file_link_key(&self) -> Result<String, ServiceError> {
        let fresh = crate::auth::random_hex("no randomness for the file link key")?;
        Ok(self
            .ports
            .attachments
            .shared_secret(FILE_LINK_SECRET, fresh)
            .await?)
    }
}
