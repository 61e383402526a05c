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
    /// The precision of InfluxDB 1.x's `/write?precision=`: `ns` or `n`, `u`, `us` or `µ`, `ms`,
    /// `s`, `m`, `h`; `None` for anything else (an absent parameter means nanoseconds).
    pub fn from_v1(s: &str) -> Option<Precision> {
        Some(match s {
            "ns" | "n" => Precision::Nanoseconds,
            "u" | "us" | "µ" => Precision::Microseconds,
            "ms" => Precision::Milliseconds,
            "s" => Precision::Seconds,
            "m" => Precision::Minutes,
            "h" => Precision::Hours,
            _ => return None,
        })
    }

    /// The precision of InfluxDB 2.x's `/api/v2/write?precision=`: `ns`, `us`, `ms`, `s`;
    /// `None` for anything else (an absent parameter means nanoseconds).
    pub fn from_v2(s: &str) -> Option<Precision> {
        match s {
            "ns" | "us" | "ms" | "s" => Precision::from_v1(s),
            _ => None,
        }
    }

    /// Parses a v1 `precision` query parameter ([`Precision::from_v1`]); the empty string
    /// (an absent parameter) means nanoseconds.
    pub fn parse(s: &str) -> Result<Precision, PrecisionError> {
        if s.is_empty() {
            return Ok(Precision::Nanoseconds);
        }
        Precision::from_v1(s).ok_or_else(|| PrecisionError {
            given: s.chars().take(32).collect(),
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

    /// The tables of the write endpoints (moved from the server, where v1 and v2 were
    /// matched separately).
    #[test]
    fn v1_and_v2_spellings() {
        use Precision::*;
        for (s, p) in [
            ("ns", Nanoseconds),
            ("n", Nanoseconds),
            ("u", Microseconds),
            ("us", Microseconds),
            ("µ", Microseconds),
            ("ms", Milliseconds),
            ("s", Seconds),
            ("m", Minutes),
            ("h", Hours),
        ] {
            assert_eq!(Precision::from_v1(s), Some(p), "{s}");
        }
        for bad in ["", "x", "d", "NS", "µs", "1s"] {
            assert_eq!(Precision::from_v1(bad), None, "{bad}");
        }
        for (s, p) in [
            ("ns", Nanoseconds),
            ("us", Microseconds),
            ("ms", Milliseconds),
            ("s", Seconds),
        ] {
            assert_eq!(Precision::from_v2(s), Some(p), "{s}");
        }
        for bad in ["", "n", "u", "µ", "m", "h", "x"] {
            assert_eq!(Precision::from_v2(bad), None, "{bad}");
        }
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
