//! Jobs: a contact's erase runs its batches in order, the redaction of
//! what others were shown in bounded batches before its last transaction;
//! finished jobs are pruned with the events.
use std::sync::atomic::{AtomicU32, Ordering};

use confab_ports::{Job, JobKind, JobState, MockJobStore};

use super::*;

fn running(id: Uuid, subject: Uuid) -> Job {
    Job {
        id,
        kind: JobKind::ContactErase,
        subject: Some(subject),
        actor: None,
        state: JobState::Running,
        created_at: Timestamp::from_secs(NOW),
        finished_at: None,
        progress: 0,
    }
}

fn service(jobs: MockJobStore, contacts: MockContactStore) -> Confab {
    let mut ports = mocked_ports(NOW);
    let mut ids = MockIdGenerator::new();
    ids.expect_new_id().returning(|| Uuid::from_u128(0xABCD));
    let mut signal = MockEventSignal::new();
    signal.expect_committed().returning(|| ());
    ports.ids = Arc::new(ids);
    ports.signal = Arc::new(signal);
    ports.jobs = Arc::new(jobs);
    ports.contacts = Arc::new(contacts);
    Confab::new(ports)
}

#[tokio::test]
async fn an_erase_redacts_what_others_were_shown_in_batches_before_its_last_transaction() {
    let contact = Uuid::from_u128(7);
    let job = Uuid::from_u128(0xABCD);
    let mut jobs = MockJobStore::new();
    jobs.expect_start_erase()
        .times(1)
        .returning(move |_, id, _| Ok(Some(running(id, contact))));
    jobs.expect_lease_job().returning(|_, _, _, _| Ok(true));
    jobs.expect_erase_direct_batch().returning(|_, _| Ok(None));
    jobs.expect_erase_next_group_messages()
        .returning(|_, _| Ok(Vec::new()));
    // Three batches with more to read, then none: the last transaction
    // runs only after the passes are through.
    let redacted = Arc::new(AtomicU32::new(0));
    let seen = redacted.clone();
    jobs.expect_erase_redact_batch()
        .withf(move |c, j, limit| *c.as_uuid() == contact && *j == job && *limit == 2000)
        .times(4)
        .returning(move |_, _, _| Ok(seen.fetch_add(1, Ordering::SeqCst) < 3));
    jobs.expect_finish_job()
        .withf(|_, _, batches| *batches == 4)
        .times(1)
        .returning(|_, _, _| Ok(()));
    let mut contacts = MockContactStore::new();
    let order = redacted.clone();
    contacts.expect_erase_plan().times(1).returning(move |_| {
        assert_eq!(order.load(Ordering::SeqCst), 4, "the passes ran first");
        Ok(None)
    });
    let finished = service(jobs, contacts)
        .erase_contact(
            ContactId::from_uuid(contact),
            std::time::Duration::from_secs(10),
        )
        .await
        .expect("erased");
    assert!(matches!(finished, crate::Finished::Done));
}

#[tokio::test]
async fn an_erase_left_unfinished_at_its_budget_is_a_running_job() {
    let contact = Uuid::from_u128(7);
    let mut jobs = MockJobStore::new();
    jobs.expect_start_erase()
        .returning(move |_, id, _| Ok(Some(running(id, contact))));
    jobs.expect_lease_job().returning(|_, _, _, _| Ok(true));
    jobs.expect_erase_direct_batch().returning(|_, _| Ok(None));
    jobs.expect_erase_next_group_messages()
        .returning(|_, _| Ok(Vec::new()));
    jobs.expect_erase_redact_batch()
        .times(1)
        .returning(|_, _, _| Ok(true));
    jobs.expect_release_job()
        .withf(|_, _, batches| *batches == 1)
        .times(1)
        .returning(|_, _, _| Ok(()));
    jobs.expect_job()
        .returning(move |id| Ok(Some(running(id, contact))));
    let finished = service(jobs, MockContactStore::new())
        .erase_contact(ContactId::from_uuid(contact), std::time::Duration::ZERO)
        .await
        .expect("locked out");
    assert!(matches!(finished, crate::Finished::Running(job) if job.state == JobState::Running));
}

#[tokio::test]
async fn finished_jobs_are_pruned_after_seven_days() {
    let mut jobs = MockJobStore::new();
    jobs.expect_prune_jobs()
        .withf(|before, batch| {
            *before == Timestamp::from_secs(NOW - 7 * 24 * 3600) && *batch == 100
        })
        .times(1)
        .returning(|_, _| Ok(3));
    let pruned = service(jobs, MockContactStore::new())
        .prune_jobs(100)
        .await
        .expect("pruned");
    assert_eq!(pruned, 3);
}
