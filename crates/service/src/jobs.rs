//! Jobs (docs/api.md, "Jobs"): work too big for one request's transaction,
//! run in bounded batches, each its own short transaction, under a lease
//! that says which server runs it; recorded in the store, so that a job
//! cut short by a restart resumes: a contact's erase, a big conversation's
//! deletion.

use std::time::{Duration, Instant};

use confab_domain::{
    conversation_deleted, message_deleted, Change, Contact, ContactId, ConversationId, Timestamp,
};
use confab_ports::{Job, JobKind, StoreError};
use uuid::Uuid;

use crate::{Confab, ServiceError};

/// How long a lease holds without being renewed: a server that stops
/// mid-job leaves it to another (or to itself, restarted) after this.
pub const JOB_LEASE: Duration = Duration::from_secs(10);
/// Group messages deleted per batch, each with its `message.deleted`.
const MESSAGES_PER_BATCH: u32 = 200;
/// Messages of a direct conversation deleted per batch (no event each:
/// the conversation's own `conversation.deleted` tells its peer).
const DIRECT_PER_BATCH: u32 = 500;
/// Kept events (or stored answers) an erase's last pass reads per batch.
const REDACT_PER_BATCH: u32 = 2000;
/// Messages of a conversation being deleted that go per batch.
const PURGE_PER_BATCH: u32 = 500;

/// How work went within its request's budget.
#[derive(Debug, Clone)]
pub enum Finished {
    /// All done.
    Done,
    /// What had to hold at once holds (a contact is locked out); the rest
    /// goes on in the background as this job.
    Running(Job),
}

/// What one batch did.
enum Step {
    /// There is more.
    More,
    /// The job is done.
    Done,
}

impl Confab {
    /// Erases a contact (the right to be forgotten, server API). First,
    /// in one small transaction, the contact is locked out: its tokens go
    /// (its open streams end within 5 s, as the hub finds them gone), it
    /// is marked as being erased (nothing finds it or acts as it any more)
    /// and the erase is recorded as a job. Then the job runs here for at
    /// most `budget`: its direct conversations are deleted
    /// (`conversation.deleted` to the peer), its messages in groups
    /// deleted (`message.deleted` to the members), and it leaves every
    /// group (`group.updated`; a group it was alone in is deleted), in
    /// batches; what is left when the budget is spent goes on in the
    /// background ([`Confab::run_due_jobs`]). `NotFound` when there is no
    /// such contact.
    pub async fn erase_contact(
        &self,
        id: ContactId,
        budget: Duration,
    ) -> Result<Finished, ServiceError> {
        let started = Instant::now();
        let job = self
            .ports
            .jobs
            .start_erase(id, self.new_uuid(), self.now())
            .await;
        // Also when the answer was lost (it may have committed).
        self.tokens.forget(id);
        self.keys.forget_contact(id);
        let job = job?.ok_or(ServiceError::not_found())?;
        self.committed();
        let owner = self.new_uuid();
        match self.run_job(&job, owner, started + budget).await {
            Ok(true) => return Ok(Finished::Done),
            Ok(false) => {}
            // Locked out and recorded: a batch that failed here (a
            // database past the request's deadline) is tried again by the
            // background.
            Err(error) => tracing::warn!(%error, "an erase's batch failed; its job goes on"),
        }
        let job = match self.ports.jobs.job(job.id).await {
            Ok(Some(fresh)) => fresh,
            _ => job,
        };
        Ok(Finished::Running(job))
    }

    /// The job of this id (server API).
    pub async fn job(&self, id: &str) -> Result<Job, ServiceError> {
        let id: Uuid = id.trim().parse().map_err(|_| ServiceError::not_found())?;
        self.ports
            .jobs
            .job(id)
            .await?
            .ok_or(ServiceError::not_found())
    }

    /// Runs the jobs that no server runs now (their lease free or run
    /// out), oldest first, each for at most `slice` (a batch at least);
    /// `owner` names this server in the leases. Whether any is left
    /// unfinished (the caller pauses, to let others' writes through, and
    /// calls again).
    pub async fn run_due_jobs(&self, owner: Uuid, slice: Duration) -> Result<bool, ServiceError> {
        let mut left = false;
        for job in self.ports.jobs.due_jobs(self.now(), 16).await? {
            if !self.run_job(&job, owner, Instant::now() + slice).await? {
                left = true;
            }
        }
        Ok(left)
    }

    /// Runs `job` batch by batch under `owner`'s lease until it is done
    /// (`true`) or `deadline` passes, or another server holds it
    /// (`false`; the lease is given back at a deadline, so that the
    /// background takes it on at once).
    async fn run_job(
        &self,
        job: &Job,
        owner: Uuid,
        deadline: Instant,
    ) -> Result<bool, ServiceError> {
        let mut batches = 0;
        loop {
            let now = self.now();
            let until = Timestamp::from_micros(
                now.micros() + i64::try_from(JOB_LEASE.as_micros()).unwrap_or(i64::MAX),
            );
            if !self.ports.jobs.lease_job(job.id, owner, now, until).await? {
                return Ok(false);
            }
            let step = match (job.kind, job.subject) {
                (JobKind::ContactErase, Some(subject)) => {
                    self.erase_step(ContactId::from_uuid(subject), job.id).await
                }
                (JobKind::ConversationDelete, Some(subject)) => {
                    self.delete_conversation_step(ConversationId::from_uuid(subject), job.actor)
                        .await
                }
                (_, None) => Ok(Step::Done),
            };
            let step = match step {
                Ok(step) => step,
                Err(e) => {
                    // Left to the next try (after the lease runs out).
                    let _ = self.ports.jobs.release_job(job.id, owner, batches).await;
                    return Err(e);
                }
            };
            batches += 1;
            if let Step::Done = step {
                self.ports
                    .jobs
                    .finish_job(job.id, self.now(), batches)
                    .await?;
                return Ok(true);
            }
            if Instant::now() >= deadline {
                self.ports.jobs.release_job(job.id, owner, batches).await?;
                return Ok(false);
            }
        }
    }

    /// Deletes a conversation and all its messages (as
    /// [`Confab::delete_conversation`], with its checks): its messages go
    /// in batches, oldest first, each its own short transaction, then the
    /// conversation with its `conversation.deleted`. What is left when
    /// `budget` is spent goes on in the background as a job.
    pub async fn delete_conversation_within(
        &self,
        caller: &Contact,
        id: ConversationId,
        budget: Duration,
    ) -> Result<Finished, ServiceError> {
        let deadline = Instant::now() + budget;
        self.check_may_delete(caller, id).await?;
        loop {
            let purged = self
                .ports
                .jobs
                .purge_conversation_batch(id, PURGE_PER_BATCH)
                .await;
            if let Ok(0) = purged {
                self.delete_conversation(caller, id).await?;
                return Ok(Finished::Done);
            }
            // A batch that failed (a database past the request's deadline)
            // is left to the job, which tries it again.
            if purged.is_err() || Instant::now() >= deadline {
                let events = conversation_deleted(
                    Change::new(caller.id(), self.now()),
                    self.event_ids(),
                    id,
                );
                let job = self
                    .ports
                    .jobs
                    .start_conversation_delete(
                        self.new_uuid(),
                        id,
                        caller.id(),
                        self.outbox(events),
                        self.now(),
                    )
                    .await?;
                self.committed();
                return Ok(Finished::Running(job));
            }
        }
    }

    /// One batch of a conversation's deletion by `actor`: its oldest
    /// messages, else the conversation itself. A deleter who may no longer
    /// delete it (erased, or no longer a group owner) leaves it, emptied.
    async fn delete_conversation_step(
        &self,
        id: ConversationId,
        actor: Option<Uuid>,
    ) -> Result<Step, ServiceError> {
        if self
            .ports
            .jobs
            .purge_conversation_batch(id, PURGE_PER_BATCH)
            .await?
            > 0
        {
            return Ok(Step::More);
        }
        if self.ports.jobs.finish_conversation_delete(id).await? {
            self.committed();
            return Ok(Step::Done);
        }
        // A job recorded before conversations were marked: deleted as
        // its deleter would, if they still may.
        let actor = match actor {
            Some(a) => self.ports.contacts.contact(ContactId::from_uuid(a)).await?,
            None => None,
        };
        if let Some(actor) = actor {
            match self.delete_conversation(&actor, id).await {
                Ok(()) | Err(ServiceError::NotFound { .. } | ServiceError::Forbidden(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Step::Done)
    }

    /// One batch of contact `id`'s erase: its direct conversations first,
    /// their messages in batches, then each (empty by then) with its
    /// `conversation.deleted`; then its group messages, each with its
    /// `message.deleted`; then what others' kept events and stored answers
    /// showed of it, in batches by creation time; then, in one last
    /// transaction over what is left (by then small), the rest
    /// ([`Confab::erase_rest`]).
    async fn erase_step(&self, id: ContactId, job: Uuid) -> Result<Step, ServiceError> {
        match self
            .ports
            .jobs
            .erase_direct_batch(id, DIRECT_PER_BATCH)
            .await?
        {
            Some((_, n)) if n > 0 => return Ok(Step::More),
            Some((c, _)) => {
                let events = conversation_deleted(Change::new(id, self.now()), self.event_ids(), c);
                match self
                    .ports
                    .conversations
                    .delete_conversation(c, id, self.outbox(events))
                    .await
                {
                    Ok(()) | Err(StoreError::NotFound) => {}
                    Err(e) => return Err(e.into()),
                }
                self.committed();
                return Ok(Step::More);
            }
            None => {}
        }
        let next = self
            .ports
            .jobs
            .erase_next_group_messages(id, MESSAGES_PER_BATCH)
            .await?;
        if !next.is_empty() {
            let now = self.now();
            let batch = next
                .into_iter()
                .map(|(m, c)| {
                    let events = message_deleted(Change::new(id, now), self.event_ids(), m, c);
                    (m, self.outbox(events.into_iter().collect()))
                })
                .collect();
            self.ports.jobs.erase_group_messages(id, batch).await?;
            self.committed();
            return Ok(Step::More);
        }
        if self
            .ports
            .jobs
            .erase_redact_batch(id, job, REDACT_PER_BATCH)
            .await?
        {
            return Ok(Step::More);
        }
        self.erase_rest(id).await?;
        Ok(Step::Done)
    }
}
