//! The background pruning of what is kept only for a while: idempotency
//! keys (24 h), events and the records of webhook attempts (7 days),
//! expired event tickets (10 minutes).

use std::future::Future;
use std::time::Duration;

use confab_service::{Confab, ServiceError};

/// How often expired rows are looked for.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);
/// Rows deleted per transaction: small enough that a write never waits on
/// pruning for long.
const BATCH: u32 = 1000;
/// The pause between two batches, which lets writes through.
const BETWEEN_BATCHES: Duration = Duration::from_millis(50);

/// Prunes a minute after start, then hourly, without ever blocking a
/// request: each batch is its own short transaction.
pub fn spawn_pruning(service: Confab) {
    tokio::spawn(async move {
        let mut next = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            tokio::time::sleep_until(next).await;
            next += PRUNE_EVERY;
            match service.prune_idempotency_keys().await {
                Ok(pruned) => tracing::debug!(pruned, "expired idempotency keys deleted"),
                Err(error) => tracing::warn!(%error, "could not delete expired idempotency keys"),
            }
            in_batches("events older than 7 days", || service.prune_events(BATCH)).await;
            in_batches("webhook attempts older than 7 days", || {
                service.prune_deliveries(BATCH)
            })
            .await;
            in_batches("expired event tickets", || service.prune_tickets(BATCH)).await;
            in_batches("jobs finished over 7 days ago", || {
                service.prune_jobs(BATCH)
            })
            .await;
        }
    });
}

/// How often the files whose deletion is due are deleted.
const SWEEP_FILES_EVERY: Duration = Duration::from_secs(30);

/// Deletes the files whose deletion is due (docs/api.md "Files and attachments"): uploads
/// never attached after 24 h, and those of deleted attachments, messages,
/// conversations, groups and contacts, every
/// [`SWEEP_FILES_EVERY`]; a deletion that fails stays due and is tried
/// again.
pub fn spawn_file_sweeper(service: Confab) {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(SWEEP_FILES_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            match service.sweep_files().await {
                Ok(0) => {}
                Ok(deleted) => tracing::debug!(deleted, "stored files deleted"),
                Err(error) => tracing::warn!(%error, "could not delete the stored files due"),
            }
        }
    });
}

/// Runs `batch` (which deletes at most [`BATCH`] rows of `what`) until
/// fewer than that go, pausing between batches; logs the total, or why it
/// stopped.
async fn in_batches<F, Fut>(what: &str, mut batch: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<u64, ServiceError>>,
{
    let mut total = 0;
    loop {
        match batch().await {
            Ok(pruned) => {
                total += pruned;
                if pruned < u64::from(BATCH) {
                    break;
                }
                tokio::time::sleep(BETWEEN_BATCHES).await;
            }
            Err(error) => {
                tracing::warn!(%error, "could not delete {what}");
                break;
            }
        }
    }
    tracing::debug!(pruned = total, "{what} deleted");
}
