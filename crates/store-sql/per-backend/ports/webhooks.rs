//! The [`confab_ports::WebhookStore`] implementation of both SQL stores,
//! written once like [`crate::ports`]: each method runs one query function
//! through the door. Leases and cursor moves are writes (one transaction
//! each); reading a webhook's events is one statement after the horizon's.

use async_trait::async_trait;
use confab_domain::{EventId, EventType, Page, Paged, Timestamp};
use confab_ports::{
    CursorMove, DeliveryAttempt, EventBatch, LeasedRetry, RetryOutcome, StoreError, Webhook,
    WebhookBacklog, WebhookId, WebhookLease, WebhookSecret, WebhookStore,
};
use uuid::Uuid;

use crate::Store;
use confab_store_sql::door::{query, write};
use confab_store_sql::queries::webhooks as q;

#[async_trait]
impl WebhookStore for Store {
    async fn create_webhook(
        &self,
        id: WebhookId,
        url: String,
        events: Vec<EventType>,
        secret: WebhookSecret,
        created_at: Timestamp,
    ) -> Result<Webhook, StoreError> {
        write(self, move |c| {
            q::create_webhook::<Store>(c, id, url, events, secret, created_at)
        })
        .await
    }

    async fn list_webhooks(&self) -> Result<Vec<Webhook>, StoreError> {
        query(self, q::list_webhooks::<Store>).await
    }

    async fn delete_webhook(&self, id: WebhookId) -> Result<(), StoreError> {
        write(self, move |c| q::delete_webhook::<Store>(c, id)).await
    }

    async fn lease_webhook(
        &self,
        holder: Uuid,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<Option<WebhookLease>, StoreError> {
        // Idle polls only read; the lease itself is a write.
        if !query(self, move |c| q::webhook_work_waiting::<Store>(c, now)).await? {
            return Ok(None);
        }
        write(self, move |c| {
            q::lease_webhook::<Store>(c, holder, now, until)
        })
        .await
    }

    async fn webhook_events(
        &self,
        types: Vec<EventType>,
        after: i64,
        limit: u32,
    ) -> Result<EventBatch, StoreError> {
        query(self, move |c| {
            q::webhook_events::<Store>(c, types, after, limit)
        })
        .await
    }

    async fn move_cursor(&self, change: CursorMove) -> Result<bool, StoreError> {
        write(self, move |c| q::move_cursor::<Store>(c, change)).await
    }

    async fn release_webhook(
        &self,
        id: WebhookId,
        holder: Uuid,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        write(self, move |c| {
            q::release_webhook::<Store>(c, id, holder, now)
        })
        .await
    }

    async fn lease_retries(
        &self,
        holder: Uuid,
        now: Timestamp,
        until: Timestamp,
        limit: u32,
    ) -> Result<Vec<LeasedRetry>, StoreError> {
        if !query(self, move |c| q::retry_due::<Store>(c, now)).await? {
            return Ok(Vec::new());
        }
        write(self, move |c| {
            q::lease_retries::<Store>(c, holder, now, until, limit)
        })
        .await
    }

    async fn settle_retry(
        &self,
        webhook: WebhookId,
        event: EventId,
        holder: Uuid,
        outcome: RetryOutcome,
        attempt: DeliveryAttempt,
    ) -> Result<bool, StoreError> {
        write(self, move |c| {
            q::settle_retry::<Store>(c, webhook, event, holder, outcome, attempt)
        })
        .await
    }

    async fn list_deliveries(
        &self,
        webhook: WebhookId,
        page: Page<Uuid>,
    ) -> Result<Option<Paged<DeliveryAttempt>>, StoreError> {
        query(self, move |c| q::list_deliveries::<Store>(c, webhook, page)).await
    }

    async fn webhook_backlog(&self) -> Result<WebhookBacklog, StoreError> {
        query(self, q::webhook_backlog::<Store>).await
    }

    async fn prune_deliveries(&self, before: Timestamp, batch: u32) -> Result<u64, StoreError> {
        write(self, move |c| {
            q::prune_deliveries::<Store>(c, before, batch)
        })
        .await
    }
}
