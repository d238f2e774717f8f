//! Where uploaded files' bytes live (docs/api.md "Files and attachments"): a folder by
//! default, any S3-compatible store in production. The database keeps what
//! is known of a file (its name, type, size, digest, who may see it); the
//! storage keeps its bytes under the attachment's id, nothing else.
//!
//! A file is written in chunks and appears under its id only once the
//! writer is finished: a write that is aborted, or a process that dies
//! half-way, leaves nothing a reader can open (a local file is written
//! aside and renamed; an S3 multipart upload is completed in one call).

use async_trait::async_trait;
use confab_domain::AttachmentId;

use crate::StoreError;

/// The bytes `start..end` of a file (end exclusive); `start < end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRange {
    /// The first byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

/// The files' bytes, by attachment id.
///
/// # Errors
/// Every method answers `StoreError::Unavailable` when the storage cannot
/// be reached and `StoreError::Other` for anything else it refuses.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait FileStorage: Send + Sync {
    /// Starts writing the file of attachment `id`. Nothing can be read
    /// under `id` until [`FileWriter::finish`] returns.
    async fn create(&self, id: AttachmentId) -> Result<Box<dyn FileWriter>, StoreError>;
    /// Reads the file of attachment `id`, whole or `range` of it.
    /// # Errors
    /// - MUST return `NotFound` when there is no such file.
    async fn open(
        &self,
        id: AttachmentId,
        range: Option<ByteRange>,
    ) -> Result<Box<dyn FileReader>, StoreError>;
    /// Deletes the file of attachment `id`. Deleting a file that is not
    /// there is not an error (a deletion is retried until it is known done).
    async fn delete(&self, id: AttachmentId) -> Result<(), StoreError>;
    /// The bytes still free for files, where the storage is a disk of
    /// this machine; `None` where it cannot tell (an S3-compatible
    /// bucket, whose limits are its own).
    async fn free_space(&self) -> Result<Option<u64>, StoreError>;
}

/// A file being written: chunks in order, then `finish` or `abort`.
/// Memory stays bounded whatever the file's size: a writer buffers at most
/// one part before handing it on.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait FileWriter: Send {
    /// Appends `chunk`.
    async fn write(&mut self, chunk: Vec<u8>) -> Result<(), StoreError>;
    /// Makes the file readable, whole, under its id.
    async fn finish(self: Box<Self>) -> Result<(), StoreError>;
    /// Gives the file up: nothing of it stays readable or stored.
    async fn abort(self: Box<Self>) -> Result<(), StoreError>;
}

/// A file (or part of one) being read, in chunks.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait FileReader: Send {
    /// The next chunk; `None` at the end.
    async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, StoreError>;
}
