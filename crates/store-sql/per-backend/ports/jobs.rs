//! The `JobStore` implementation of both SQL stores, written once: each
//! method is one short transaction through the door.

use async_trait::async_trait;
use confab_domain::{ContactId, ConversationId, MessageId, Timestamp};
use confab_ports::{Job, JobStore, Outbox, StoreError};
use uuid::Uuid;

use crate::queries as q;
use confab_store_sql::door::{query, write};

use crate::Store;

#[async_trait]
impl JobStore for Store {
    async fn start_erase(
        &self,
        contact: ContactId,
        job: Uuid,
        at: Timestamp,
    ) -> Result<Option<Job>, StoreError> {
        write(self, move |c| q::start_erase(c, contact, job, at)).await
    }

    async fn start_conversation_delete(
        &self,
        job: Uuid,
        conversation: ConversationId,
        by: ContactId,
        outbox: Outbox,
        at: Timestamp,
    ) -> Result<Job, StoreError> {
        write(self, move |c| {
            q::start_conversation_delete(c, job, conversation, by, &outbox, at)
        })
        .await
    }

    async fn finish_conversation_delete(
        &self,
        conversation: ConversationId,
    ) -> Result<bool, StoreError> {
        write(self, move |c| {
            q::finish_conversation_delete(c, conversation)
        })
        .await
    }

    async fn purge_conversation_batch(
        &self,
        conversation: ConversationId,
        limit: u32,
    ) -> Result<u64, StoreError> {
        write(self, move |c| {
            q::purge_conversation_batch(c, conversation, limit)
        })
        .await
    }

    async fn job(&self, id: Uuid) -> Result<Option<Job>, StoreError> {
        query(self, move |c| q::job(c, id)).await
    }

    async fn lease_job(
        &self,
        id: Uuid,
        owner: Uuid,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<bool, StoreError> {
        write(self, move |c| q::lease_job(c, id, owner, now, until)).await
    }

    async fn release_job(&self, id: Uuid, owner: Uuid, batches: i64) -> Result<(), StoreError> {
        write(self, move |c| q::release_job(c, id, owner, batches)).await
    }

    async fn finish_job(&self, id: Uuid, at: Timestamp, batches: i64) -> Result<(), StoreError> {
        write(self, move |c| q::finish_job(c, id, at, batches)).await
    }

    async fn due_jobs(&self, now: Timestamp, limit: u32) -> Result<Vec<Job>, StoreError> {
        query(self, move |c| q::due_jobs(c, now, limit)).await
    }

    async fn erase_next_group_messages(
        &self,
        contact: ContactId,
        limit: u32,
    ) -> Result<Vec<(MessageId, ConversationId)>, StoreError> {
        query(self, move |c| {
            q::erase_next_group_messages(c, contact, limit)
        })
        .await
    }

    async fn erase_group_messages(
        &self,
        contact: ContactId,
        messages: Vec<(MessageId, Outbox)>,
    ) -> Result<(), StoreError> {
        write(self, move |c| q::erase_group_messages(c, contact, messages)).await
    }

    async fn erase_direct_batch(
        &self,
        contact: ContactId,
        limit: u32,
    ) -> Result<Option<(ConversationId, u64)>, StoreError> {
        write(self, move |c| q::erase_direct_batch(c, contact, limit)).await
    }

    async fn erase_redact_batch(
        &self,
        contact: ContactId,
        job: Uuid,
        limit: u32,
    ) -> Result<bool, StoreError> {
        write(self, move |c| q::erase_redact_batch(c, contact, job, limit)).await
    }

    async fn prune_jobs(&self, before: Timestamp, batch: u32) -> Result<u64, StoreError> {
        write(self, move |c| q::prune_jobs(c, before, batch)).await
    }
}
