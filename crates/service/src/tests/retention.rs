//! Retention: pruning old events.
use super::*;

#[tokio::test]
async fn prunes_events_older_than_seven_days_in_batches() {
    let mut m = Mocks::new();
    m.events
        .expect_prune_events()
        .withf(|before, batch| {
            *before == Timestamp::from_secs(NOW - 7 * 24 * 3600) && *batch == 500
        })
        .times(1)
        .returning(|_, _| Ok(500));
    assert_eq!(m.service().prune_events(500).await.expect("pruned"), 500);
}
