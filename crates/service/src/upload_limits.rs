//! What one contact may take of the file storage, and what the operator
//! keeps: uploads under way at once per contact (held in this process),
//! the bytes a contact's stored files may add up to (counted by the store
//! with each upload and deletion, see `confab_ports::StorageUse`), and the
//! free disk below which a local storage takes no more uploads.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use confab_domain::{Contact, ContactId};
use confab_ports::StorageUse;

use crate::{Confab, ServiceError};

/// The bytes one contact's stored files may add up to by default
/// (`CONFAB_UPLOAD_QUOTA_BYTES`): 1 GiB.
pub const DEFAULT_UPLOAD_QUOTA_BYTES: u64 = 1024 * 1024 * 1024;
/// The uploads one contact may have under way at once by default
/// (`CONFAB_MAX_UPLOADS_PER_CONTACT`).
pub const DEFAULT_UPLOADS_PER_CONTACT: usize = 4;
/// The free disk a local storage keeps by default
/// (`CONFAB_STORAGE_MIN_FREE_BYTES`): 1 GiB.
pub const DEFAULT_MIN_FREE_BYTES: u64 = 1024 * 1024 * 1024;

/// How much of the file storage one contact may take, and what is kept
/// free for everything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploadLimits {
    /// The bytes a contact's stored files (attached or not) may add up
    /// to; `None`: no quota.
    pub quota_bytes: Option<u64>,
    /// Uploads one contact may have under way at once, in this process.
    pub per_contact: usize,
    /// Below this many free bytes on a local storage's disk, uploads are
    /// refused; 0: no floor. (An S3 bucket tells no free space.)
    pub min_free_bytes: u64,
}

impl Default for UploadLimits {
    fn default() -> Self {
        Self {
            quota_bytes: Some(DEFAULT_UPLOAD_QUOTA_BYTES),
            per_contact: DEFAULT_UPLOADS_PER_CONTACT,
            min_free_bytes: DEFAULT_MIN_FREE_BYTES,
        }
    }
}

/// The limits, and the uploads under way per contact (shared by the
/// service's clones).
#[derive(Debug, Default)]
pub(crate) struct UploadGate {
    limits: UploadLimits,
    under_way: Mutex<HashMap<ContactId, usize>>,
}

impl UploadGate {
    pub(crate) fn new(limits: UploadLimits) -> Self {
        Self {
            limits,
            under_way: Mutex::default(),
        }
    }

    /// A place for one more upload of `contact`, if it has one left.
    fn take(self: &Arc<Self>, contact: ContactId) -> Option<UploadSlot> {
        let mut under_way = self
            .under_way
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = under_way.entry(contact).or_default();
        if *n >= self.limits.per_contact {
            return None;
        }
        *n += 1;
        Some(UploadSlot {
            gate: self.clone(),
            contact,
        })
    }
}

/// One upload's place among its contact's uploads under way; given back
/// when dropped (the upload finished, refused or abandoned).
#[derive(Debug)]
pub struct UploadSlot {
    gate: Arc<UploadGate>,
    contact: ContactId,
}

impl Drop for UploadSlot {
    fn drop(&mut self) {
        let mut under_way = self
            .gate
            .under_way
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = under_way.get_mut(&self.contact) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                // Memory follows the uploads under way, not every uploader.
                under_way.remove(&self.contact);
            }
        }
    }
}

/// An upload let in ([`Confab::admit_upload`]): its slot, and what its
/// uploader's stored files took then. Start it with
/// [`Confab::start_upload`].
#[derive(Debug)]
pub struct Admission {
    pub(crate) caller: Contact,
    pub(crate) slot: UploadSlot,
    /// The uploader's stored bytes when it was let in; `None` when it was
    /// let in as a retry to be replayed, not metered while it streams.
    pub(crate) used: Option<u64>,
}

impl Confab {
    /// Uploads within `limits` (docs/api.md "Files and attachments"; `CONFAB_UPLOAD_QUOTA_BYTES`,
    /// `CONFAB_MAX_UPLOADS_PER_CONTACT`, `CONFAB_STORAGE_MIN_FREE_BYTES`).
    #[must_use]
    pub fn with_upload_limits(mut self, limits: UploadLimits) -> Self {
        self.uploads = Arc::new(UploadGate::new(limits));
        self
    }

    /// The limits uploads are held to.
    pub fn upload_limits(&self) -> UploadLimits {
        self.uploads.limits
    }

    /// Lets in an upload by `caller` of about `declared` bytes (what the
    /// request says it brings, if it does), before any byte of it is
    /// read: the caller has fewer than its share of uploads under way,
    /// room left in its quota, and the storage's disk (when local) keeps
    /// its floor free after it.
    /// # Errors
    /// [`ServiceError::TooManyUploads`], [`ServiceError::UploadQuota`]
    /// (already full), [`ServiceError::StorageFull`]; `Unavailable` when
    /// the store or the storage cannot say.
    pub async fn admit_upload(
        &self,
        caller: &Contact,
        declared: Option<u64>,
    ) -> Result<Admission, ServiceError> {
        self.admit(caller, declared, true).await
    }

    /// [`Confab::admit_upload`] for the retry of an upload already
    /// answered (its idempotency key holds an answer): it will be
    /// replayed (or refused as another request), never stored, so the
    /// caller's quota is not looked at while it streams (a full quota
    /// would refuse the retry of the upload that filled it). Its place
    /// among the caller's uploads and the disk's floor still count; the
    /// quota is checked again should it be stored after all.
    pub async fn admit_upload_retry(
        &self,
        caller: &Contact,
        declared: Option<u64>,
    ) -> Result<Admission, ServiceError> {
        self.admit(caller, declared, false).await
    }

    async fn admit(
        &self,
        caller: &Contact,
        declared: Option<u64>,
        metered: bool,
    ) -> Result<Admission, ServiceError> {
        let limits = self.uploads.limits;
        let slot = self
            .uploads
            .take(caller.id())
            .ok_or(ServiceError::TooManyUploads {
                max: limits.per_contact,
            })?;
        let used = match limits.quota_bytes {
            Some(limit) if metered => {
                let used = self.ports.attachments.storage_use(caller.id()).await?.bytes;
                if used >= limit {
                    return Err(ServiceError::UploadQuota { used, limit });
                }
                Some(used)
            }
            Some(_) => None,
            None => Some(0),
        };
        self.check_free_space(declared.unwrap_or(0)).await?;
        Ok(Admission {
            caller: caller.clone(),
            slot,
            used,
        })
    }

    /// Refuses when the storage's disk would keep less than the floor
    /// after `more` bytes.
    pub(crate) async fn check_free_space(&self, more: u64) -> Result<(), ServiceError> {
        let floor = self.uploads.limits.min_free_bytes;
        if floor == 0 {
            return Ok(());
        }
        match self.files.free_space().await? {
            Some(free) if free < floor.saturating_add(more) => {
                Err(ServiceError::StorageFull { free, floor })
            }
            _ => Ok(()),
        }
    }

    /// What every contact's stored files take together.
    pub async fn stored_files(&self) -> Result<StorageUse, ServiceError> {
        Ok(self.ports.attachments.storage_total().await?)
    }

    /// What `caller`'s stored files take.
    pub async fn storage_use(&self, caller: &Contact) -> Result<StorageUse, ServiceError> {
        Ok(self.ports.attachments.storage_use(caller.id()).await?)
    }

    /// The free bytes of the storage's disk, when it is local.
    pub async fn storage_free_space(&self) -> Result<Option<u64>, ServiceError> {
        Ok(self.files.free_space().await?)
    }
}
