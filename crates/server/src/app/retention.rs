//! The background pruning of what is kept only for a while: idempotency
//! keys (24 h), events (7 days), expired event tickets (10 minutes).

use std::time::Duration;

use confab_service::Confab;

/// How often expired rows are looked for.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);
/// Events deleted per transaction: small enough that a write never waits
/// on pruning for long.
const EVENT_BATCH: u32 = 1000;
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
            prune_events(&service).await;
            prune_deliveries(&service).await;
            prune_tickets(&service).await;
        }
    });
}

async fn prune_events(service: &Confab) {
    let mut total = 0;
    loop {
        match service.prune_events(EVENT_BATCH).await {
            Ok(pruned) => {
                total += pruned;
                if pruned < u64::from(EVENT_BATCH) {
                    break;
                }
                tokio::time::sleep(BETWEEN_BATCHES).await;
            }
            Err(error) => {
                tracing::warn!(%error, "could not delete old events");
                break;
            }
        }
    }
    tracing::debug!(pruned = total, "events older than 7 days deleted");
}

/// The records of webhook attempts go with the events (7 days).
async fn prune_deliveries(service: &Confab) {
    loop {
        match service.prune_deliveries(EVENT_BATCH).await {
            Ok(pruned) if pruned < u64::from(EVENT_BATCH) => break,
            Ok(_) => tokio::time::sleep(BETWEEN_BATCHES).await,
            Err(error) => {
                tracing::warn!(%error, "could not delete old webhook attempts");
                break;
            }
        }
    }
}

/// Event tickets that expired (10 minutes after they were made).
async fn prune_tickets(service: &Confab) {
    loop {
        match service.prune_tickets(EVENT_BATCH).await {
            Ok(pruned) if pruned < u64::from(EVENT_BATCH) => break,
            Ok(_) => tokio::time::sleep(BETWEEN_BATCHES).await,
            Err(error) => {
                tracing::warn!(%error, "could not delete expired event tickets");
                break;
            }
        }
    }
}
