//! Duration literals (`10s`, `1h30m`, `5ns`, `2w`) and the two ways InfluxDB
//! prints durations: as InfluxQL literals (`1h`, `90s`) and as Go's
//! `time.Duration` (`168h0m0s`, how `SHOW RETENTION POLICIES` prints them).

use std::fmt::Write as _;

/// Why a duration literal does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not `<digits><unit>...`.
    #[error("invalid duration")]
    Invalid,
    /// Larger than an `i64` of nanoseconds (about 292 years).
    #[error("overflowed duration {0}: choose a smaller duration or INF")]
    Overflow(String),
}

const NS: i64 = 1;
const US: i64 = 1_000;
const MS: i64 = 1_000_000;
const SEC: i64 = 1_000_000_000;
const MIN: i64 = 60 * SEC;
const HOUR: i64 = 60 * MIN;
const DAY: i64 = 24 * HOUR;
const WEEK: i64 = 7 * DAY;

/// Parses an InfluxQL duration (`1h30m`, `10s`, `5ns`, `100u`/`100µ`, `15ms`,
/// `3d`, `2w`; a leading `-` negates) into nanoseconds.
pub fn parse_duration(s: &str) -> Result<i64, DurationError> {
    let (negative, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    if s.chars().count() < 2 {
        return Err(DurationError::Invalid);
    }
    let mut total: i64 = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits == rest.len() {
            return Err(DurationError::Invalid);
        }
        let n: i64 = rest[..digits].parse().map_err(|_| DurationError::Invalid)?;
        rest = &rest[digits..];
        let (unit, len) = unit_of(rest).ok_or(DurationError::Invalid)?;
        let term = n
            .checked_mul(unit)
            .and_then(|t| total.checked_add(t))
            .ok_or_else(|| DurationError::Overflow(format!("{n}{}", &rest[..len])))?;
        total = term;
        rest = &rest[len..];
    }
    Ok(if negative { -total } else { total })
}

/// The unit at the start of `s`: its length in nanoseconds and in bytes.
fn unit_of(s: &str) -> Option<(i64, usize)> {
    let two = |u: &str| s.starts_with(u);
    if two("ns") {
        Some((NS, 2))
    } else if two("ms") {
        Some((MS, 2))
    } else if two("µ") {
        Some((US, 'µ'.len_utf8()))
    } else {
        let unit = match s.as_bytes()[0] {
            b'u' => US,
            b's' => SEC,
            b'm' => MIN,
            b'h' => HOUR,
            b'd' => DAY,
            b'w' => WEEK,
            _ => return None,
        };
        Some((unit, 1))
    }
}

/// A duration as an InfluxQL literal, in its largest whole unit: `0s`, `2w`,
/// `1d`, `90m`, `1500ms`, `10u`, `7ns` (InfluxDB's `FormatDuration`).
pub fn format_duration_literal(ns: i64) -> String {
    if ns == 0 {
        return "0s".into();
    }
    for (unit, name) in [
        (WEEK, "w"),
        (DAY, "d"),
        (HOUR, "h"),
        (MIN, "m"),
        (SEC, "s"),
        (MS, "ms"),
        (US, "u"),
    ] {
        if ns % unit == 0 {
            return format!("{}{name}", ns / unit);
        }
    }
    format!("{ns}ns")
}

/// A duration as Go's `time.Duration` prints it, which is how InfluxDB shows
/// retention: `0s`, `1h0m0s`, `168h0m0s`, `1m30s`, `1.5s`, `250ms`, `-5m0s`.
pub fn format_duration(ns: i64) -> String {
    if ns == 0 {
        return "0s".into();
    }
    let sign = if ns < 0 { "-" } else { "" };
    let u = ns.unsigned_abs();
    if u < SEC as u64 {
        // Sub-second: one unit with a decimal fraction (`1.5ms`, `250ns`).
        let (unit, name) = if u < US as u64 {
            return format!("{sign}{u}ns");
        } else if u < MS as u64 {
            (US as u64, "µs")
        } else {
            (MS as u64, "ms")
        };
        return format!("{sign}{}{name}", with_fraction(u / unit, u % unit, unit));
    }
    let secs = u / SEC as u64;
    let frac = u % SEC as u64;
    let mut out = String::from(sign);
    let (h, m, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    if h > 0 {
        let _ = write!(out, "{h}h");
    }
    if h > 0 || m > 0 {
        let _ = write!(out, "{m}m");
    }
    let _ = write!(out, "{}s", with_fraction(s, frac, SEC as u64));
    out
}

/// `whole` plus `frac/unit` as a decimal without trailing zeros (`1`, `1.5`).
fn with_fraction(whole: u64, frac: u64, unit: u64) -> String {
    if frac == 0 {
        return whole.to_string();
    }
    let width = unit.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_parse_to_nanoseconds() {
        for (lit, ns) in [
            ("1h30m", 90 * MIN),
            ("10s", 10 * SEC),
            ("5ns", 5),
            ("7u", 7 * US),
            ("7µ", 7 * US),
            ("15ms", 15 * MS),
            ("2m", 2 * MIN),
            ("3d", 3 * DAY),
            ("2w", 2 * WEEK),
            ("1d12h", 36 * HOUR),
            ("-5s", -5 * SEC),
            ("1600000000000ms", 1_600_000_000 * SEC),
        ] {
            assert_eq!(parse_duration(lit), Ok(ns), "{lit}");
        }
        for bad in [
            "", "1", "s", "1x", "1h30", "h1", "1.5h", "--1s", "1n", "1us",
        ] {
            assert_eq!(parse_duration(bad), Err(DurationError::Invalid), "{bad}");
        }
        assert_eq!(
            parse_duration("99999999999w").unwrap_err().to_string(),
            "overflowed duration 99999999999w: choose a smaller duration or INF"
        );
        assert!(parse_duration("9223372036854775807ns").is_ok());
        assert_eq!(
            parse_duration("99999999999999999999s"),
            Err(DurationError::Invalid)
        );
    }

    #[test]
    fn literal_format_uses_the_largest_whole_unit() {
        for (ns, lit) in [
            (0, "0s"),
            (2 * WEEK, "2w"),
            (DAY, "1d"),
            (90 * MIN, "90m"),
            (HOUR, "1h"),
            (1500 * MS, "1500ms"),
            (10 * US, "10u"),
            (7, "7ns"),
            (-5 * MIN, "-5m"),
        ] {
            assert_eq!(format_duration_literal(ns), lit);
            assert_eq!(parse_duration(lit), Ok(ns));
        }
    }

    #[test]
    fn go_format_matches_retention_output() {
        for (ns, s) in [
            (0, "0s"),
            (HOUR, "1h0m0s"),
            (WEEK, "168h0m0s"),
            (90 * SEC, "1m30s"),
            (1500 * MS, "1.5s"),
            (250 * MS, "250ms"),
            (1500 * US, "1.5ms"),
            (12, "12ns"),
            (-5 * MIN, "-5m0s"),
            (30 * DAY, "720h0m0s"),
        ] {
            assert_eq!(format_duration(ns), s, "{ns}");
        }
    }
}
