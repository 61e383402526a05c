//! Time literals: the strings InfluxDB accepts where a query compares `time`
//! with a string (`time >= '2020-01-01T00:00:00Z'`).

/// Parses a time literal to nanoseconds since the Unix epoch, as InfluxDB
/// does for a string compared with `time`:
/// - RFC3339 / RFC3339Nano with `Z` or an offset: `2006-01-02T15:04:05.999999999Z07:00`;
/// - `2006-01-02 15:04:05[.fraction]` (UTC);
/// - `2006-01-02` (UTC midnight).
///
/// `None` when the string is none of these, names an impossible date or time,
/// or lies outside what `i64` nanoseconds hold (years 1677–2262).
pub fn parse_time_literal(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let date = (num(b, 0, 4)?, num(b, 5, 2)?, num(b, 8, 2)?);
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let days = days_from_civil(date.0, date.1, date.2)?;
    if b.len() == 10 {
        return to_nanos(days, 0, 0);
    }
    let sep = b[10];
    let (h, m, sec) = (num(b, 11, 2)?, num(b, 14, 2)?, num(b, 17, 2)?);
    if b.len() < 19 || b[13] != b':' || b[16] != b':' || h > 23 || m > 59 || sec > 59 {
        return None;
    }
    let (nanos, rest) = fraction(&b[19..])?;
    let secs_of_day = h * 3600 + m * 60 + sec;
    let offset_secs = match (sep, rest) {
        (b' ', []) => 0,
        (b'T', [b'Z']) => 0,
        (b'T', [sign @ (b'+' | b'-'), _, _, b':', _, _]) => {
            let (oh, om) = (num(rest, 1, 2)?, num(rest, 4, 2)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let off = oh * 3600 + om * 60;
            if *sign == b'+' {
                off
            } else {
                -off
            }
        }
        _ => return None,
    };
    to_nanos(days, secs_of_day - offset_secs, nanos)
}

/// `len` ASCII digits at `at`.
fn num(b: &[u8], at: usize, len: usize) -> Option<i64> {
    let digits = b.get(at..at + len)?;
    digits.iter().try_fold(0i64, |acc, &d| {
        d.is_ascii_digit().then(|| acc * 10 + i64::from(d - b'0'))
    })
}

/// An optional `.digits` (1 to 9) as nanoseconds, and what follows it.
fn fraction(b: &[u8]) -> Option<(i64, &[u8])> {
    let Some(rest) = b.strip_prefix(b".") else {
        return Some((0, b));
    };
    let n = rest.iter().take_while(|d| d.is_ascii_digit()).count();
    if n == 0 || n > 9 {
        return None;
    }
    let value = num(rest, 0, n)? * 10i64.pow((9 - n) as u32);
    Some((value, &rest[n..]))
}

/// Days since 1970-01-01 of a proleptic Gregorian date, `None` if it does not exist.
fn days_from_civil(y: i64, m: i64, d: i64) -> Option<i64> {
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&m) || d < 1 || d > month_days[(m - 1) as usize] {
        return None;
    }
    // Howard Hinnant's days_from_civil.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468)
}

fn to_nanos(days: i64, secs: i64, nanos: i64) -> Option<i64> {
    days.checked_mul(86_400)?
        .checked_add(secs)?
        .checked_mul(1_000_000_000)?
        .checked_add(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    #[test]
    fn accepted_forms() {
        for (lit, ns) in [
            ("1970-01-01", 0),
            ("2020-09-13T12:26:40Z", 1_600_000_000 * S),
            ("2020-09-13T12:26:40.5Z", 1_600_000_000 * S + S / 2),
            (
                "2020-09-13T12:26:40.123456789Z",
                1_600_000_000 * S + 123_456_789,
            ),
            ("2020-09-13T14:26:40+02:00", 1_600_000_000 * S),
            ("2020-09-13T07:26:40-05:00", 1_600_000_000 * S),
            ("2020-09-13 12:26:40", 1_600_000_000 * S),
            ("2020-09-13 12:26:40.000001", 1_600_000_000 * S + 1_000),
            ("2020-09-13", 1_599_955_200 * S),
            ("2000-02-29", 951_782_400 * S),
            ("1969-12-31T23:59:59Z", -S),
            ("2262-04-11T23:47:16.854775807Z", i64::MAX),
        ] {
            assert_eq!(parse_time_literal(lit), Some(ns), "{lit}");
        }
    }

    #[test]
    fn rejected_forms() {
        for lit in [
            "",
            "now()",
            "2020-9-13",
            "2020-02-30",
            "2019-02-29",
            "2020-13-01",
            "2020-09-13T12:26:40",
            "2020-09-13 12:26:40Z",
            "2020-09-13T24:00:00Z",
            "2020-09-13T12:60:00Z",
            "2020-09-13T12:26:40.Z",
            "2020-09-13T12:26:40.1234567890Z",
            "2020-09-13T12:26:40+0200",
            "2020-09-13x",
            "2262-04-11T23:47:16.854775808Z",
            "1600000000",
        ] {
            assert_eq!(parse_time_literal(lit), None, "{lit}");
        }
    }
}
