//! Work too big for one request's transaction (docs/api.md, "Jobs"): a
//! contact's erase. The request does the part that must hold at once in one
//! small transaction and records a job; the rest runs in bounded batches,
//! each its own short transaction, under a lease that says which server
//! runs it, and resumes after a restart.

use async_trait::async_trait;
use confab_domain::{ContactId, ConversationId, MessageId, Timestamp};
use uuid::Uuid;

use crate::{Outbox, StoreError};

/// What a job does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    /// Erases a contact (the right to be forgotten).
    ContactErase,
    /// Deletes a conversation too big for one request.
    ConversationDelete,
}

impl JobKind {
    /// Its name, as stored and shown (`contact.erase`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ContactErase => "contact.erase",
            Self::ConversationDelete => "conversation.delete",
        }
    }

    /// The kind of this name.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "contact.erase" => Some(Self::ContactErase),
            "conversation.delete" => Some(Self::ConversationDelete),
            _ => None,
        }
    }
}

/// A job's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    /// Not done yet (running, or waiting for a server to take it on).
    Running,
    /// Done.
    Succeeded,
}

impl JobState {
    /// Its name, as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Succeeded => "succeeded",
        }
    }
}

/// A job as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// Its id.
    pub id: Uuid,
    /// What it does.
    pub kind: JobKind,
    /// What it works on (the contact erased); `None` once an erase is
    /// done: the erased contact's id is not kept.
    pub subject: Option<Uuid>,
    /// Who asked: the contact deleting a conversation; `None` for the
    /// server API.
    pub actor: Option<Uuid>,
    /// Whether it is done.
    pub state: JobState,
    /// When it was recorded.
    pub created_at: Timestamp,
    /// When it was done.
    pub finished_at: Option<Timestamp>,
    /// The batches done so far.
    pub progress: i64,
}

/// The store's side of jobs, and the batches of an erase.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait JobStore: Send + Sync {
    /// Locks contact `contact` out and records its erase as job `job`, in
    /// one transaction: its tokens go, it is marked as being erased (no
    /// longer found, so nothing can act as it). A contact already being
    /// erased answers the job erasing it. `None` when there is no such
    /// contact.
    async fn start_erase(
        &self,
        contact: ContactId,
        job: Uuid,
        at: Timestamp,
    ) -> Result<Option<Job>, StoreError>;
    /// Starts the deletion of conversation `conversation` by `by` as job
    /// `job`, in one transaction: `outbox` (its `conversation.deleted`) is
    /// written to its members, it is marked as being deleted (from then
    /// on no one sees it: every membership check leaves it out) and the
    /// job is recorded. `NotFound` when `by` no longer sees it.
    async fn start_conversation_delete(
        &self,
        job: Uuid,
        conversation: ConversationId,
        by: ContactId,
        outbox: Outbox,
        at: Timestamp,
    ) -> Result<Job, StoreError>;
    /// Deletes conversation `conversation` once its job emptied it, if it
    /// is marked as being deleted (its earlier events scrubbed, no event
    /// of its own: its members were told when it was marked): whether it
    /// was.
    async fn finish_conversation_delete(
        &self,
        conversation: ConversationId,
    ) -> Result<bool, StoreError>;
    /// The job of this id.
    async fn job(&self, id: Uuid) -> Result<Option<Job>, StoreError>;
    /// Takes (or extends) the lease of unfinished job `id` for `owner`
    /// until `until`: `false` when the job is finished or another owner
    /// holds a lease that has not run out at `now`.
    async fn lease_job(
        &self,
        id: Uuid,
        owner: Uuid,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<bool, StoreError>;
    /// Gives up `owner`'s lease of job `id`, counting `batches` more done.
    async fn release_job(&self, id: Uuid, owner: Uuid, batches: i64) -> Result<(), StoreError>;
    /// Marks job `id` done at `at`.
    async fn finish_job(&self, id: Uuid, at: Timestamp, batches: i64) -> Result<(), StoreError>;
    /// At most `limit` unfinished jobs whose lease is free or ran out at
    /// `now`, oldest first.
    async fn due_jobs(&self, now: Timestamp, limit: u32) -> Result<Vec<Job>, StoreError>;
    /// At most `limit` of the messages `contact` sent in group
    /// conversations, oldest first, each with its conversation: the next
    /// batch its erase deletes with events.
    async fn erase_next_group_messages(
        &self,
        contact: ContactId,
        limit: u32,
    ) -> Result<Vec<(MessageId, ConversationId)>, StoreError>;
    /// Deletes these messages of `contact` as their sender deleting them
    /// would (each with its own events, in `outboxes`' order), in one
    /// transaction; one already gone is passed over.
    async fn erase_group_messages(
        &self,
        contact: ContactId,
        messages: Vec<(MessageId, Outbox)>,
    ) -> Result<(), StoreError>;
    /// Deletes at most `limit` of the oldest messages of conversation
    /// `conversation` (their events scrubbed; reactions, attachments and
    /// their files' rows go with them): how many went. The conversation
    /// itself, once empty, goes as its deletion by a member does.
    async fn purge_conversation_batch(
        &self,
        conversation: ConversationId,
        limit: u32,
    ) -> Result<u64, StoreError>;
    /// Deletes at most `limit` messages of `contact`'s first direct
    /// conversation (their events scrubbed; the conversation itself, once
    /// empty, goes as its deletion by the contact would): that
    /// conversation and how many went; `None` when it has none left.
    async fn erase_direct_batch(
        &self,
        contact: ContactId,
        limit: u32,
    ) -> Result<Option<(ConversationId, u64)>, StoreError>;
    /// One batch of the last pass of `contact`'s erase (its job `job`):
    /// of the kept events (first) and stored answers (then) created since
    /// the contact was, the next `limit` past the pass's mark keep nothing
    /// of it, and the mark moves on (kept with the job, so that a restart
    /// resumes there). Each batch reads about `limit` rows, by index.
    /// `false` once both passes have reached the newest row: the erase's
    /// last transaction then reads only what was written since.
    async fn erase_redact_batch(
        &self,
        contact: ContactId,
        job: Uuid,
        limit: u32,
    ) -> Result<bool, StoreError>;
    /// Deletes jobs finished before `before`, at most `batch` of them:
    /// how many went.
    async fn prune_jobs(&self, before: Timestamp, batch: u32) -> Result<u64, StoreError>;
}
