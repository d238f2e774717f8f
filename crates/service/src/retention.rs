//! Retention: what the service keeps only for a while.

use crate::{Confab, ServiceError};

/// Events are kept at least this long (docs/api.md "Listen for events"): 7 days.
pub const EVENT_TTL_SECS: i64 = 7 * 24 * 3600;

impl Confab {
    /// Deletes at most `batch` events older than [`EVENT_TTL_SECS`];
    /// returns how many. A caller prunes in batches until fewer than
    /// `batch` go, so that no transaction holds its locks for long.
    pub async fn prune_events(&self, batch: u32) -> Result<u64, ServiceError> {
        let before = self.now().plus_secs(-EVENT_TTL_SECS);
        Ok(self.ports.events.prune_events(before, batch).await?)
    }

    /// Deletes at most `batch` records of webhook attempts older than
    /// [`EVENT_TTL_SECS`] (kept as long as the events); returns how many.
    pub async fn prune_deliveries(&self, batch: u32) -> Result<u64, ServiceError> {
        let before = self.now().plus_secs(-EVENT_TTL_SECS);
        Ok(self.ports.webhooks.prune_deliveries(before, batch).await?)
    }

    /// Deletes at most `batch` jobs that finished over [`EVENT_TTL_SECS`]
    /// ago (kept as long as the events, for `GET /v1/admin/jobs/{id}`);
    /// returns how many.
    pub async fn prune_jobs(&self, batch: u32) -> Result<u64, ServiceError> {
        let before = self.now().plus_secs(-EVENT_TTL_SECS);
        Ok(self.ports.jobs.prune_jobs(before, batch).await?)
    }
}
