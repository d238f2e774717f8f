//! A request's budget for waiting on the store, handed to the store
//! explicitly ([`WithBudget`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What one request may still spend waiting on the store, shared by every
/// store call made for it: each call waits at most the smaller of its own
/// deadline and what is left, and what it waited is charged here, so the
/// request as a whole never waits on the store longer than the budget it
/// started with. Clones share the budget.
///
/// ```
/// use std::time::Duration;
/// use confab_ports::DbBudget;
///
/// let budget = DbBudget::new(Duration::from_millis(1800));
/// let call = budget.clone();
/// call.charge(Duration::from_millis(1500));
/// assert_eq!(budget.left(), Duration::from_millis(300));
/// assert_eq!(budget.limit(Duration::from_secs(1)), Duration::from_millis(300));
/// call.charge(Duration::from_secs(1));
/// assert!(budget.left().is_zero());
/// ```
#[derive(Debug, Clone)]
pub struct DbBudget {
    left_micros: Arc<AtomicU64>,
}

impl DbBudget {
    /// A budget of `total`.
    #[must_use]
    pub fn new(total: Duration) -> Self {
        let micros = u64::try_from(total.as_micros()).unwrap_or(u64::MAX);
        Self {
            left_micros: Arc::new(AtomicU64::new(micros)),
        }
    }

    /// What is left.
    #[must_use]
    pub fn left(&self) -> Duration {
        Duration::from_micros(self.left_micros.load(Ordering::Acquire))
    }

    /// The deadline of a call that would take at most `own`: no more than
    /// what is left.
    #[must_use]
    pub fn limit(&self, own: Duration) -> Duration {
        own.min(self.left())
    }

    /// Charges `spent` (never below zero).
    pub fn charge(&self, spent: Duration) {
        let spent = u64::try_from(spent.as_micros()).unwrap_or(u64::MAX);
        let _ = self
            .left_micros
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                Some(left.saturating_sub(spent))
            });
    }
}

/// A store whose calls can share a request's [`DbBudget`].
pub trait WithBudget {
    /// The same store (its pool, its connections), whose calls wait within
    /// `budget`.
    #[must_use]
    fn with_budget(&self, budget: DbBudget) -> Self;
}
