use std::fmt;

/// A point in time, in microseconds since the Unix epoch.
///
/// The API speaks whole seconds; storage keeps microseconds so that the order
/// of events within one second is kept exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    pub const fn from_micros(micros: i64) -> Self {
        Self(micros)
    }
    pub const fn from_secs(secs: i64) -> Self {
        Self(secs.saturating_mul(1_000_000))
    }
    pub const fn micros(self) -> i64 {
        self.0
    }
    /// Whole Unix seconds (floor), the unit of the wire format.
    pub const fn secs(self) -> i64 {
        self.0.div_euclid(1_000_000)
    }
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
