//! Reading events (docs/api.md "Listen for events"): a recipient's events after a
//! position, the events of the recipients with a stream in a process (its
//! fan-out, in batches bounded in events, payload bytes and recipient rows:
//! docs/api.md "Limits"), and pruning.
//!
//! Only readable events are read: positions below the backend's horizon
//! ([`crate::SqlBackend::EVENT_HORIZON_SQL`]), which no event that commits
//! later can lie under. A reader that has read up to a position therefore
//! never misses an event behind it.

/// Recipients whose own payloads one statement looks up (a bind each):
/// under every database's limit on binds.
pub const OWNERS_PER_QUERY: usize = 500;

/// A size the database answered, in bytes (none below zero).
pub fn size(octets: i64) -> u64 {
    u64::try_from(octets).unwrap_or(0)
}

/// How many of the first items fit in `budget` together: at least one
/// when there is any, so that a read always makes progress.
pub fn prefix_within(costs: impl Iterator<Item = u64>, budget: u64) -> usize {
    let mut total = 0u64;
    let mut n = 0;
    for cost in costs {
        total = total.saturating_add(cost);
        if n > 0 && total > budget {
            break;
        }
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::prefix_within;

    #[test]
    fn a_prefix_fits_the_budget_and_holds_at_least_one_item() {
        let fit = |costs: &[u64], budget| prefix_within(costs.iter().copied(), budget);
        assert_eq!(fit(&[], 10), 0);
        assert_eq!(fit(&[50], 10), 1, "the first item always");
        assert_eq!(fit(&[50, 1], 10), 1);
        assert_eq!(fit(&[3, 3, 3, 3], 10), 3);
        assert_eq!(fit(&[5, 5, 5], 10), 2, "up to the budget itself");
        assert_eq!(fit(&[1, 2, 3], 100), 3);
        assert_eq!(fit(&[u64::MAX, u64::MAX], 1), 1, "no overflow");
    }
}
