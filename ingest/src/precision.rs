//! Timestamp precision of a write request (`?precision=`).

use crate::error::PrecisionError;

/// Unit of the integer timestamps in a write request.
///
/// InfluxDB 1.x spells microseconds `u`; 2.x spells them `us`. Both are accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Precision {
    /// Nanoseconds (the default).
    #[default]
    Nanoseconds,
    /// Microseconds (`u` or `us`).
    Microseconds,
    /// Milliseconds (`ms`).
    Milliseconds,
    /// Seconds (`s`).
    Seconds,
    /// Minutes (`m`).
    Minutes,
    /// Hours (`h`).
    Hours,
}

/// Smallest timestamp InfluxDB accepts (`models.MinNanoTime`).
pub const MIN_NANO_TIME: i64 = i64::MIN + 2;
/// Largest timestamp InfluxDB accepts (`models.MaxNanoTime`).
pub const MAX_NANO_TIME: i64 = i64::MAX - 1;

impl Precision {
    /// Parses the `precision` query parameter. The empty string and `n`/`ns` mean nanoseconds.
    pub fn parse(s: &str) -> Result<Precision, PrecisionError> {
        Ok(match s {
            "" | "n" | "ns" => Precision::Nanoseconds,
            "u" | "us" | "µ" | "µs" => Precision::Microseconds,
            "ms" => Precision::Milliseconds,
            "s" => Precision::Seconds,
            "m" => Precision::Minutes,
            "h" => Precision::Hours,
            other => {
                return Err(PrecisionError {
                    given: other.chars().take(32).collect(),
                })
            }
        })
    }

    /// Nanoseconds per unit.
    pub const fn multiplier(self) -> i64 {
        match self {
            Precision::Nanoseconds => 1,
            Precision::Microseconds => 1_000,
            Precision::Milliseconds => 1_000_000,
            Precision::Seconds => 1_000_000_000,
            Precision::Minutes => 60_000_000_000,
            Precision::Hours => 3_600_000_000_000,
        }
    }

    /// Converts a timestamp in this unit to nanoseconds, `None` if it leaves InfluxDB's range
    /// (overflow included) — the check of Go's `models.SafeCalcTime`.
    pub fn to_nanos(self, ts: i64) -> Option<i64> {
        let ns = ts.checked_mul(self.multiplier())?;
        (MIN_NANO_TIME..=MAX_NANO_TIME).contains(&ns).then_some(ns)
    }

    /// Truncates a nanosecond time to this precision (the default time of a line without a
    /// timestamp is the request's receive time truncated like this, as Go's `Time.Truncate`).
    pub fn truncate(self, now_ns: i64) -> i64 {
        let m = self.multiplier();
        now_ns - now_ns.rem_euclid(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_all_spellings() {
        for (s, p) in [
            ("", Precision::Nanoseconds),
            ("ns", Precision::Nanoseconds),
            ("n", Precision::Nanoseconds),
            ("u", Precision::Microseconds),
            ("us", Precision::Microseconds),
            ("ms", Precision::Milliseconds),
            ("s", Precision::Seconds),
            ("m", Precision::Minutes),
            ("h", Precision::Hours),
        ] {
            assert_eq!(Precision::parse(s).unwrap(), p, "{s}");
        }
        assert!(Precision::parse("d").is_err());
    }

    #[test]
    fn overflow_and_range() {
        assert_eq!(Precision::Seconds.to_nanos(2), Some(2_000_000_000));
        assert_eq!(Precision::Hours.to_nanos(i64::MAX / 1000), None);
        assert_eq!(Precision::Nanoseconds.to_nanos(i64::MAX), None);
        assert_eq!(Precision::Nanoseconds.to_nanos(i64::MIN), None);
        assert_eq!(
            Precision::Nanoseconds.to_nanos(MAX_NANO_TIME),
            Some(MAX_NANO_TIME)
        );
        assert_eq!(Precision::Seconds.truncate(1_999_999_999), 1_000_000_000);
        assert_eq!(Precision::Minutes.truncate(119_000_000_000), 60_000_000_000);
    }
}
