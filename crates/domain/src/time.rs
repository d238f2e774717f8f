use std::fmt;

/// A point in time, in microseconds since the Unix epoch (UTC).
///
/// Microseconds keep the order of changes within one second exactly;
/// [`Timestamp::secs`] gives the whole seconds people and rules count in.
/// Callers pass `now` in: the domain reads no clock.
///
/// ```
/// use confab_domain::Timestamp;
///
/// let t = Timestamp::from_micros(1_700_000_000_999_999);
/// assert_eq!(t.secs(), 1_700_000_000); // floor, not rounding
/// assert_eq!(t.to_string(), "1700000000");
/// assert_eq!(Timestamp::from_secs(5).plus_secs(60), Timestamp::from_secs(65));
/// assert!(Timestamp::from_secs(1) < t);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The time `micros` microseconds after the epoch (before, if negative).
    pub const fn from_micros(micros: i64) -> Self {
        Self(micros)
    }
    /// The start of Unix second `secs`; saturates instead of overflowing.
    pub const fn from_secs(secs: i64) -> Self {
        Self(secs.saturating_mul(1_000_000))
    }
    /// Microseconds since the epoch: what stores keep.
    pub const fn micros(self) -> i64 {
        self.0
    }
    /// Whole Unix seconds (floor, also before the epoch).
    pub const fn secs(self) -> i64 {
        self.0.div_euclid(1_000_000)
    }
    /// The time `secs` seconds later (earlier, if negative); saturates.
    pub const fn plus_secs(self, secs: i64) -> Self {
        Self(self.0.saturating_add(secs.saturating_mul(1_000_000)))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.secs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_floor_and_roundtrip() {
        assert_eq!(Timestamp::from_micros(1_999_999).secs(), 1);
        assert_eq!(Timestamp::from_micros(-1).secs(), -1);
        assert_eq!(Timestamp::from_secs(5).micros(), 5_000_000);
        assert_eq!(Timestamp::from_secs(5).plus_secs(60).secs(), 65);
    }
}
