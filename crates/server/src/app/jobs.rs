//! The background runner of jobs (docs/api.md, "Jobs"): work that goes on
//! after its request answered, such as the rest of a big erase. Each server
//! looks for jobs no server runs (their lease free or run out: a job cut
//! short by a restart or a crash resumes), and runs each in short slices of
//! batches, pausing between slices so that others' writes go first.

use std::time::Duration;

use confab_service::Confab;
use uuid::Uuid;

/// How often the runner looks for jobs when it has none.
const IDLE: Duration = Duration::from_millis(500);
/// How long a job runs before the runner pauses.
const SLICE: Duration = Duration::from_millis(250);
/// The pause between two slices while there is work.
const BETWEEN_SLICES: Duration = Duration::from_millis(20);

/// Runs due jobs from now on, as the server `owner` names in its leases.
pub fn spawn_job_runner(service: Confab) {
    let owner = Uuid::now_v7();
    tokio::spawn(async move {
        loop {
            let pause = match service.run_due_jobs(owner, SLICE).await {
                Ok(true) => BETWEEN_SLICES,
                Ok(false) => IDLE,
                Err(error) => {
                    tracing::warn!(%error, "a job stopped; it is tried again");
                    IDLE
                }
            };
            tokio::time::sleep(pause).await;
        }
    });
}
