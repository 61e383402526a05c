//! Values as Go's `encoding/json` writes InfluxDB's `interface{}` cells:
//! floats, strings, and times (`time.Time`'s RFC3339Nano, or `epoch=`
//! integers).

use std::cell::RefCell;
use std::io::Write;

use storage::influxql::series::{Value, ValueRef};

use storage::influxql::zone::TimeZone;

/// How times are written.
pub(super) struct Times<'a> {
    pub(super) epoch: Option<i64>,
    pub(super) zone: Option<&'a TimeZone>,
    /// The last time written and its text (RFC3339 or `epoch=`): the rows of
    /// an answer come in time order, many sharing one time (every series'
    /// point of one instant: TSBS `lastpoint`'s 1,000, each 19 digits with
    /// `epoch=ns`). One buffer for the whole answer, rewritten at each new
    /// time.
    pub(super) last: RefCell<(Option<i64>, Vec<u8>)>,
    /// The day (local, days since the epoch) of the last date written, and
    /// its `YYYY-MM-DDT`: consecutive times of an answer share their day
    /// nearly always (a day of 1-minute buckets, 1,440 times).
    day: RefCell<(i64, [u8; 11])>,
}

impl<'a> Times<'a> {
    pub(super) fn new(epoch: Option<i64>, zone: Option<&'a TimeZone>) -> Times<'a> {
        Times {
            epoch,
            zone,
            last: RefCell::new((None, Vec::new())),
            day: RefCell::new((i64::MIN, [0; 11])),
        }
    }
}

/// One cell, as Go's `encoding/json` writes its `interface{}` value.
#[inline]
pub(super) fn json_value(buf: &mut Vec<u8>, v: &Value, times: &Times<'_>) {
    json_cell(buf, v.borrowed(), times);
}

/// [`json_value`] of a borrowed value (a last-point answer's cell, read
/// where it lies).
pub(super) fn json_cell(buf: &mut Vec<u8>, v: ValueRef<'_>, times: &Times<'_>) {
    match v {
        ValueRef::Null => buf.extend_from_slice(b"null"),
        ValueRef::Time(ns) => {
            let mut last = times.last.borrow_mut();
            let (at, text) = &mut *last;
            if *at != Some(ns) {
                text.clear();
                match times.epoch {
                    // Go's integer division truncates toward zero, as Rust's does.
                    Some(divisor) => {
                        text.extend_from_slice(itoa::Buffer::new().format(ns / divisor).as_bytes())
                    }
                    None => {
                        let offset = times.zone.map_or(0, |zone| zone.offset_at(ns));
                        text.push(b'"');
                        rfc3339_nano(text, ns, offset, &mut times.day.borrow_mut());
                        text.push(b'"');
                    }
                }
                *at = Some(ns);
            }
            buf.extend_from_slice(text);
        }
        ValueRef::Float(f) => go_float(buf, f),
        ValueRef::Integer(i) => match u8::try_from(i) {
            Ok(small) => small_int(buf, small),
            Err(_) => buf.extend_from_slice(itoa::Buffer::new().format(i).as_bytes()),
        },
        ValueRef::Unsigned(u) => match u8::try_from(u) {
            Ok(small) => small_int(buf, small),
            Err(_) => buf.extend_from_slice(itoa::Buffer::new().format(u).as_bytes()),
        },
        ValueRef::String(s) => json_string(buf, s),
        ValueRef::Boolean(b) => buf.extend_from_slice(if b { b"true" } else { b"false" }),
    }
}

/// `n` in decimal, its digits pushed: gauges (TSBS's percentages) are mostly
/// small, and `itoa`'s text copied into the buffer is a `memcpy` call for
/// one to three bytes (with the formatting, 8 % of TSBS `high-cpu-1`'s server
/// samples; `lastpoint` writes ten such a row in plain rows).
pub(super) fn small_int(buf: &mut Vec<u8>, n: u8) {
    if n >= 100 {
        buf.push(b'0' + n / 100);
    }
    if n >= 10 {
        buf.push(b'0' + n / 10 % 10);
    }
    buf.push(b'0' + n % 10);
}

/// Per byte: whether a JSON string holds it as it is (see [`json_string`]);
/// 0xE2 starts U+2028 and U+2029, so a string holding it is escaped char
/// by char.
const PLAIN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0x20;
    while b < 256 {
        t[b] = !matches!(b as u8, b'"' | b'\\' | b'<' | b'>' | b'&' | 0xE2);
        b += 1;
    }
    t
};

/// A float as Go's `encoding/json` writes it: the shortest decimal that reads
/// back the same, in exponent form below 1e-6 or from 1e21 on (`1e-7`,
/// `1e+21`), plain otherwise (`100000000000000000000`, `0.000001`).
pub(super) fn go_float(buf: &mut Vec<u8>, f: f64) {
    if !f.is_finite() {
        // See the module documentation: InfluxDB shows NaN as null and fails
        // the whole response on ±Inf.
        buf.extend_from_slice(b"null");
        return;
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Rust: `1e21`, `1.5e300`, `1e-7`; Go: `1e+21`, `1.5e+300`, `1e-7`.
        let s = format!("{f:e}");
        match s.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => {
                buf.extend_from_slice(mantissa.as_bytes());
                buf.extend_from_slice(b"e+");
                buf.extend_from_slice(exp.as_bytes());
            }
            _ => buf.extend_from_slice(s.as_bytes()),
        }
    } else if f.fract() == 0.0 && abs < 1e15 {
        // Whole numbers (counters, TSBS's values): Rust and Go agree (`100`, `-0`
        // aside: Rust writes `-0` too).
        if f == 0.0 && f.is_sign_negative() {
            buf.extend_from_slice(b"-0");
        } else {
            buf.extend_from_slice(itoa::Buffer::new().format(f as i64).as_bytes());
        }
    } else if abs >= 1e-5 && f.fract() != 0.0 {
        // Ryū's shortest digits, in plain form here (a fraction, 1e-5 and
        // up: below, it writes `1e-6`), at a fraction of `write!`'s cost:
        // TSBS `high-cpu-1` renders ten such floats a row. They are
        // `Display`'s but where two tie (the value halfway between): Ryū
        // rounds to even as Go does (InfluxDB: `…623.25` as `…623.2`),
        // `Display` up.
        buf.extend_from_slice(ryu::Buffer::new().format_finite(f).as_bytes());
    } else {
        // Into the buffer, no string in between (Vec's `Write` cannot fail).
        let _ = write!(buf, "{f}");
    }
}

/// A JSON string as Go's `encoding/json` writes it (HTML-safe: `<`, `>`, `&`
/// escaped, as are U+2028 and U+2029; other control characters as `\u00xx`
/// but `\n`, `\r`, `\t`).
pub(super) fn json_string(buf: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    // Most strings (tag values, column names) need no escape: one pass over
    // the bytes finds that, a table lookup a byte ([`PLAIN`]: seven
    // comparisons before), and the string is copied whole, its room
    // reserved once. Decoding each char was the largest rendering cost in a
    // profile of TSBS `high-cpu-1` and `lastpoint` (7.6 % of the server's
    // samples); TSBS `lastpoint` at 1,000 hosts writes ~12,000 strings.
    if bytes.iter().all(|&b| PLAIN[usize::from(b)]) {
        buf.reserve(bytes.len() + 2);
        buf.push(b'"');
        buf.extend_from_slice(bytes);
        buf.push(b'"');
        return;
    }
    escaped(buf, s);
}

/// `strings` as a JSON array of strings (a series' `columns`).
pub(super) fn json_strings(buf: &mut Vec<u8>, strings: &[String]) {
    buf.push(b'[');
    for (i, s) in strings.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        json_string(buf, s);
    }
    buf.push(b']');
}

/// [`json_string`] of a string that holds a byte to escape (or 0xE2).
#[cold]
fn escaped(buf: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    buf.push(b'"');
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let escape: Option<&[u8]> = match c {
            '"' => Some(b"\\\""),
            '\\' => Some(b"\\\\"),
            '\n' => Some(b"\\n"),
            '\r' => Some(b"\\r"),
            '\t' => Some(b"\\t"),
            '\u{2028}' => Some(b"\\u2028"),
            '\u{2029}' => Some(b"\\u2029"),
            c if (c as u32) < 0x20 || c == '<' || c == '>' || c == '&' => Some(b""),
            _ => None,
        };
        let Some(escape) = escape else { continue };
        buf.extend_from_slice(&bytes[start..i]);
        if escape.is_empty() {
            let b = c as u8;
            buf.extend_from_slice(b"\\u00");
            buf.push(HEX[usize::from(b >> 4)]);
            buf.push(HEX[usize::from(b & 0xf)]);
        } else {
            buf.extend_from_slice(escape);
        }
        start = i + c.len_utf8();
    }
    buf.extend_from_slice(&bytes[start..]);
    buf.push(b'"');
}

/// Go's `time.RFC3339Nano` of `ns` at `offset` seconds east of UTC:
/// `2006-01-02T15:04:05.999999999Z07:00` (fraction trimmed of trailing
/// zeros and left out when zero; `Z` for a zero offset). `day`: the last day
/// written and its date (see [`Times`]); the rest is written digit by digit,
/// no formatting machinery (it was most of a 720-row answer's render).
fn rfc3339_nano(buf: &mut Vec<u8>, ns: i64, offset: i32, day: &mut (i64, [u8; 11])) {
    let local = i128::from(ns) + i128::from(offset) * 1_000_000_000;
    let secs = local.div_euclid(1_000_000_000);
    let nanos = local.rem_euclid(1_000_000_000) as u32;
    let days = secs.div_euclid(86_400) as i64;
    let sod = secs.rem_euclid(86_400) as u32;
    if day.0 != days {
        let (y, m, d) = storage::influxql::zone::civil_from_days(days);
        let mut date = Vec::with_capacity(16);
        let _ = write!(date, "{y:04}-{m:02}-{d:02}T");
        match <[u8; 11]>::try_from(date.as_slice()) {
            Ok(text) => *day = (days, text),
            // A year past 9999 (or before 0): no cache, written as before.
            Err(_) => {
                *day = (i64::MIN, [0; 11]);
                buf.extend_from_slice(&date);
            }
        }
    }
    if day.0 == days {
        buf.extend_from_slice(&day.1);
    }
    two_digits(buf, sod / 3600);
    buf.push(b':');
    two_digits(buf, sod / 60 % 60);
    buf.push(b':');
    two_digits(buf, sod % 60);
    if nanos > 0 {
        let mut digits = [b'0'; 9];
        let mut n = nanos;
        for d in digits.iter_mut().rev() {
            *d = b'0' + (n % 10) as u8;
            n /= 10;
        }
        let end = digits.iter().rposition(|d| *d != b'0').map_or(0, |i| i + 1);
        buf.push(b'.');
        buf.extend_from_slice(&digits[..end]);
    }
    if offset == 0 {
        buf.push(b'Z');
    } else {
        buf.push(if offset < 0 { b'-' } else { b'+' });
        let abs = offset.unsigned_abs();
        two_digits(buf, abs / 3600);
        buf.push(b':');
        two_digits(buf, abs / 60 % 60);
    }
}

/// `n` (below 100) as two digits; `{:02}` writes more where it is not, so
/// that is kept.
fn two_digits(buf: &mut Vec<u8>, n: u32) {
    if n < 100 {
        buf.extend_from_slice(&[b'0' + (n / 10) as u8, b'0' + (n % 10) as u8]);
    } else {
        let _ = write!(buf, "{n:02}");
    }
}

/// The time writer against what it replaced (`format!` of every part): the
/// same bytes over random times and offsets.
#[cfg(test)]
mod tests {
    use super::*;

    /// The time writer before the date cache and the digit pairs.
    fn rfc3339_nano_before(buf: &mut Vec<u8>, ns: i64, offset: i32) {
        let local = i128::from(ns) + i128::from(offset) * 1_000_000_000;
        let secs = local.div_euclid(1_000_000_000);
        let nanos = local.rem_euclid(1_000_000_000) as u32;
        let days = secs.div_euclid(86_400) as i64;
        let sod = secs.rem_euclid(86_400) as u32;
        let (y, m, d) = storage::influxql::zone::civil_from_days(days);
        let _ = write!(
            buf,
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
            sod / 3600,
            sod / 60 % 60,
            sod % 60
        );
        if nanos > 0 {
            let mut digits = [b'0'; 9];
            let mut n = nanos;
            for d in digits.iter_mut().rev() {
                *d = b'0' + (n % 10) as u8;
                n /= 10;
            }
            let end = digits.iter().rposition(|d| *d != b'0').map_or(0, |i| i + 1);
            buf.push(b'.');
            buf.extend_from_slice(&digits[..end]);
        }
        if offset == 0 {
            buf.push(b'Z');
        } else {
            let sign = if offset < 0 { '-' } else { '+' };
            let abs = offset.unsigned_abs();
            let _ = write!(buf, "{sign}{:02}:{:02}", abs / 3600, abs / 60 % 60);
        }
    }

    /// xorshift: a failure replays.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// `go_float` as before Ryū: `Display` past the exponent forms.
    fn go_float_before(f: f64) -> String {
        let abs = f.abs();
        let mut buf = Vec::new();
        if abs != 0.0 && !(1e-6..1e21).contains(&abs) || (f.fract() == 0.0 && abs < 1e15) {
            go_float(&mut buf, f);
            return String::from_utf8(buf).unwrap();
        }
        format!("{f}")
    }

    /// Floats as before, but where the shortest digits tie (the value lies
    /// halfway between two): `Display` rounds the last digit up, Go (and so
    /// InfluxDB) and Ryū to even. Go's `encoding/json` (go1.26) wrote these.
    #[test]
    // The exact values are the point: `…623.25` is the float halfway.
    #[allow(clippy::excessive_precision)]
    fn floats_are_written_as_before_and_ties_as_go_writes_them() {
        let go = [
            (596967909447623.25, "596967909447623.2"),
            (596967909447623.75, "596967909447623.8"),
            (1125899906842624.25, "1125899906842624.2"),
            (0.3, "0.3"),
            (90.5, "90.5"),
            (1.5e-6, "0.0000015"),
        ];
        for (f, text) in go {
            let mut now = Vec::new();
            go_float(&mut now, f);
            assert_eq!(String::from_utf8(now).unwrap(), text);
        }
        let mut rng = Rng(0x44_f10a7);
        let edges = [
            1e-5,
            9.999999999999999e-6,
            1.0000000000000001e-5,
            1e-6,
            1.5e-6,
            0.1,
            0.3,
            90.5,
            1e15,
            1e15 + 0.5,
            4503599627370495.5,
            9007199254740993.0,
            1e20,
            1e21 - 1e5,
            f64::MIN_POSITIVE,
            f64::EPSILON,
        ];
        let mut values: Vec<f64> = edges.iter().flat_map(|&f| [f, -f]).collect();
        for k in 0..300_000u64 {
            let bits = rng.next();
            values.push(match k % 3 {
                // Any finite float.
                0 => f64::from_bits(bits),
                // Metrics as TSBS and clients write them: few decimals.
                1 => {
                    (bits % 10_000_000) as f64
                        / [10.0, 100.0, 997.0, 1e6][(bits >> 60) as usize % 4]
                }
                // A random walk's full precision, across magnitudes.
                _ => {
                    (bits >> 11) as f64 / (1u64 << 53) as f64 * 10f64.powi((bits % 40) as i32 - 20)
                }
            });
        }
        let mut ties = 0;
        for f in values.into_iter().filter(|f| f.is_finite()) {
            let mut now = Vec::new();
            go_float(&mut now, f);
            let (now, before) = (String::from_utf8(now).unwrap(), go_float_before(f));
            if now == before {
                continue;
            }
            // A tie: as many digits, both read back as `f`, the last one
            // apart by one, the new one even.
            ties += 1;
            let (a, b) = (now.as_bytes(), before.as_bytes());
            assert_eq!(a.len(), b.len(), "{now} against {before}");
            assert_eq!(a[..a.len() - 1], b[..b.len() - 1], "{now} against {before}");
            assert_eq!(now.parse::<f64>().unwrap(), f, "{now}");
            assert_eq!(before.parse::<f64>().unwrap(), f, "{before}");
            let (x, y) = (a[a.len() - 1] - b'0', b[b.len() - 1] - b'0');
            assert!(x.abs_diff(y) == 1 && x % 2 == 0, "{now} against {before}");
        }
        // Ties are rare (320 of these 300,000): large values of few
        // fraction bits.
        assert!(ties < 1_000, "{ties} ties");
    }

    /// `json_string` before the byte table: seven comparisons a byte.
    fn json_string_before(buf: &mut Vec<u8>, s: &str) {
        let plain = |b: &u8| *b >= 0x20 && !matches!(*b, b'"' | b'\\' | b'<' | b'>' | b'&' | 0xE2);
        if s.as_bytes().iter().all(plain) {
            buf.push(b'"');
            buf.extend_from_slice(s.as_bytes());
            buf.push(b'"');
            return;
        }
        escaped(buf, s);
    }

    /// Strings as before and as Go writes them (`encoding/json`, HTML-safe):
    /// every char of the first planes alone and inside text, the tricky
    /// strings of `shared_tests.rs`, and random runs of the bytes that matter.
    #[test]
    fn strings_are_written_as_before_and_as_go_writes_them() {
        let go = [
            ("", r#""""#),
            ("a\"b\\c", r#""a\"b\\c""#),
            ("<a>&", r#""\u003ca\u003e\u0026""#),
            (
                "\n\r\t\u{1}\u{1f}\u{7f}",
                "\"\\n\\r\\t\\u0001\\u001f\u{7f}\"",
            ),
            ("\u{2028}x\u{2029}\u{2027}", "\"\\u2028x\\u2029\u{2027}\""),
            ("ünï 日本 🙂", "\"ünï 日本 🙂\""),
        ];
        for (text, json) in go {
            let mut now = Vec::new();
            json_string(&mut now, text);
            assert_eq!(String::from_utf8(now).unwrap(), json, "{text:?}");
        }
        let mut texts: Vec<String> = super::super::shared_tests::TRICKY
            .iter()
            .map(|t| t.to_string())
            .collect();
        for c in (0..0x3000u32).filter_map(char::from_u32) {
            texts.push(c.to_string());
            texts.push(format!("host_{c}1234567890{c}"));
        }
        let pieces = [
            "a", "\"", "\\", "<", ">", "&", "\u{2028}", "\u{2029}", "\u{2027}", "\u{e2}", "\u{0}",
            "\u{1f}", " ", "\u{7f}", "é", "🙂", "xxxxxxxx",
        ];
        let mut rng = Rng(0x4a50);
        for _ in 0..20_000 {
            let n = rng.next() % 24;
            texts.push(
                (0..n)
                    .map(|_| pieces[(rng.next() % pieces.len() as u64) as usize])
                    .collect(),
            );
        }
        for t in &texts {
            let (mut now, mut before) = (b"x".to_vec(), b"x".to_vec());
            json_string(&mut now, t);
            json_string_before(&mut before, t);
            assert_eq!(now, before, "{t:?}");
        }
    }

    /// Integers as `itoa` wrote each of them before the small-number path.
    #[test]
    fn integers_are_written_as_before() {
        let times = Times::new(None, None);
        let mut values: Vec<i64> = (-1_100..1_100).collect();
        values.extend([
            i64::MIN,
            i64::MIN + 1,
            i64::MAX,
            255,
            256,
            -255,
            -256,
            99,
            100,
            999,
        ]);
        for i in values {
            let mut now = Vec::new();
            json_value(&mut now, &Value::Integer(i), &times);
            assert_eq!(now, i.to_string().into_bytes(), "{i}");
            if let Ok(u) = u64::try_from(i) {
                let mut now = Vec::new();
                json_value(&mut now, &Value::Unsigned(u), &times);
                assert_eq!(now, u.to_string().into_bytes(), "{u}");
            }
        }
        let mut now = Vec::new();
        json_value(&mut now, &Value::Unsigned(u64::MAX), &times);
        assert_eq!(now, u64::MAX.to_string().into_bytes());
    }

    /// `epoch=` times, each time's text kept for the next cell of that time:
    /// the same integers as written afresh, over repeats, alternations,
    /// negatives and every divisor.
    #[test]
    fn epoch_times_are_their_integers_repeated_or_not() {
        let mut rng = Rng(0xe90c);
        for divisor in [
            1,
            1_000,
            1_000_000,
            1_000_000_000,
            60_000_000_000,
            3_600_000_000_000,
        ] {
            let times = Times::new(Some(divisor), None);
            let mut t: i64 = 1_451_606_400_000_000_000;
            for k in 0..20_000u64 {
                let bits = rng.next();
                t = match bits % 5 {
                    // Repeated: the kept text.
                    0 | 1 => t,
                    2 => t.wrapping_add((bits >> 40) as i64 - (1 << 23)),
                    3 => -((bits >> 2) as i64),
                    _ => bits as i64,
                };
                let ns = if k % 7 == 0 { i64::MIN + (k as i64) } else { t };
                let mut now = Vec::new();
                json_value(&mut now, &Value::Time(ns), &times);
                assert_eq!(
                    now,
                    (ns / divisor).to_string().into_bytes(),
                    "{ns} / {divisor}"
                );
            }
        }
    }

    #[test]
    fn times_are_written_as_before_across_days_and_offsets() {
        let mut rng = Rng(0x1_4444);
        let mut day = (i64::MIN, [0u8; 11]);
        let mut t: i64 = 1_451_606_400_000_000_000;
        for k in 0..200_000u64 {
            let bits = rng.next();
            // Mostly consecutive times (the cache's case), now and then a
            // jump anywhere, before 1970 and past 9999 included.
            t = match k % 97 {
                0 => bits as i64,
                1 => -((bits >> 3) as i64),
                _ => t.saturating_add((bits % (3 * 3_600_000_000_000)) as i64),
            };
            if bits.is_multiple_of(5) {
                t -= t.rem_euclid(1_000_000_000);
            }
            let offset = match bits % 7 {
                0 => -(((bits >> 8) % 50_000) as i32),
                1 => ((bits >> 8) % 50_000) as i32,
                2 => 3600,
                _ => 0,
            };
            let (mut now, mut before) = (Vec::new(), Vec::new());
            rfc3339_nano(&mut now, t, offset, &mut day);
            rfc3339_nano_before(&mut before, t, offset);
            assert_eq!(
                String::from_utf8(now).unwrap(),
                String::from_utf8(before).unwrap(),
                "{t} at {offset}"
            );
        }
    }
}
