//! The `EventStore` implementation of both SQL stores, written once: each
//! method is one read (or one bounded delete) through the door.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use confab_domain::{ContactId, EventId, Timestamp};
use confab_ports::{EventStore, FanOutBatch, FanOutLimits, StoreError, StoredEvent};

use crate::queries as q;
use confab_store_sql::door::{query, write};

use crate::Store;

#[async_trait]
impl EventStore for Store {
    async fn event_position(&self, id: EventId) -> Result<Option<i64>, StoreError> {
        query(self, move |c| q::event_position(c, id)).await
    }

    async fn event_start(&self) -> Result<i64, StoreError> {
        query(self, q::event_start).await
    }

    async fn events_for(
        &self,
        recipient: ContactId,
        after: i64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        query(self, move |c| q::events_for(c, recipient, after, limit)).await
    }

    async fn recent_events(
        &self,
        after: i64,
        limits: FanOutLimits,
        to: Arc<HashSet<ContactId>>,
    ) -> Result<FanOutBatch, StoreError> {
        query(self, move |c| q::recent_events(c, after, limits, &to)).await
    }

    async fn live_token_hashes(
        &self,
        hashes: Vec<String>,
        now: Timestamp,
    ) -> Result<Vec<String>, StoreError> {
        query(self, move |c| q::live_token_hashes(c, hashes, now)).await
    }

    async fn prune_events(&self, before: Timestamp, batch: u32) -> Result<u64, StoreError> {
        write(self, move |c| q::prune_events(c, before, batch)).await
    }
}
