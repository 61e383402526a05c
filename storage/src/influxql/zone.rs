//! `tz('Area/City')`: a time zone's UTC offset at any instant, read from the
//! system's zoneinfo (TZif) files as Go's `time.LoadLocation` reads them,
//! for InfluxDB's local-time `GROUP BY time` windows ([`super::fill`]) and
//! its `+hh:mm` times in answers.
//!
//! A TZif file lists the zone's transitions; after the last one, its footer
//! rule (POSIX `TZ` syntax, e.g. `CST6CDT,M3.2.0,M11.1.0`) applies, as in Go's
//! `tzset` (so "slim" zoneinfo files, which stop their transitions early, give
//! the same offsets as "fat" ones).

use std::path::Path;

/// Where Go's `LoadLocation` looks for zoneinfo files on Unix (after
/// `$ZONEINFO`).
const ZONEINFO_DIRS: [&str; 3] = [
    "/usr/share/zoneinfo/",
    "/usr/share/lib/zoneinfo/",
    "/usr/lib/locale/TZ/",
];

/// A zone name Go cannot load: InfluxDB's wording.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unable to find time zone {0}")]
pub struct UnknownZone(pub String);

/// A time zone: its UTC offset at any instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeZone {
    /// The name as given.
    pub name: String,
    /// (UTC second a transition happens, offset in seconds east from then).
    transitions: Vec<(i64, i32)>,
    /// The offset before the first transition (or always, without any).
    initial: i32,
    /// The rule after the last transition (the TZif footer).
    rule: Option<Rule>,
}

impl TimeZone {
    /// UTC.
    pub fn utc() -> TimeZone {
        TimeZone {
            name: "UTC".into(),
            transitions: Vec::new(),
            initial: 0,
            rule: None,
        }
    }

    /// The zone `name` (`America/Chicago`; `UTC` or empty is UTC), from
    /// `$ZONEINFO` or the system's zoneinfo directories, as Go loads it.
    pub fn load(name: &str) -> Result<TimeZone, UnknownZone> {
        let unknown = || UnknownZone(name.to_string());
        if name.is_empty() || name == "UTC" {
            return Ok(TimeZone::utc());
        }
        // Go refuses names that could leave the zoneinfo directory.
        if name.contains("..") || name.starts_with('/') || name.contains('\\') {
            return Err(unknown());
        }
        let env = std::env::var("ZONEINFO").ok();
        let dirs = env.iter().map(String::as_str).chain(ZONEINFO_DIRS);
        for dir in dirs {
            if let Ok(bytes) = std::fs::read(Path::new(dir).join(name)) {
                let mut zone = TimeZone::parse(&bytes).ok_or_else(unknown)?;
                zone.name = name.to_string();
                return Ok(zone);
            }
        }
        Err(unknown())
    }

    /// A TZif file's zone (version 1, or the 64-bit data and footer of 2+).
    fn parse(bytes: &[u8]) -> Option<TimeZone> {
        let header = Header::read(bytes)?;
        let (header, data, wide) = if header.version >= b'2' {
            let rest = bytes.get(44 + header.data_len(4)..)?;
            (Header::read(rest)?, rest.get(44..)?, true)
        } else {
            (header, bytes.get(44..)?, false)
        };
        let width = if wide { 8 } else { 4 };
        let times_len = header.timecnt * width;
        let types_at = times_len;
        let infos_at = types_at + header.timecnt;
        let infos = data.get(infos_at..infos_at + header.typecnt * 6)?;
        let offset_of = |i: usize| -> Option<i32> {
            let b = infos.get(i * 6..i * 6 + 4)?;
            Some(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        };
        let mut transitions = Vec::with_capacity(header.timecnt);
        for i in 0..header.timecnt {
            let at = &data[i * width..(i + 1) * width];
            let t = if wide {
                i64::from_be_bytes(at.try_into().ok()?)
            } else {
                i64::from(i32::from_be_bytes(at.try_into().ok()?))
            };
            let kind = usize::from(*data.get(types_at + i)?);
            transitions.push((t, offset_of(kind)?));
        }
        let rule = if wide {
            let footer = data.get(header.data_len(8)..)?;
            let text = std::str::from_utf8(footer).ok()?;
            Rule::parse(text.trim_matches('\n'))
        } else {
            None
        };
        Some(TimeZone {
            name: String::new(),
            transitions,
            initial: offset_of(0)?,
            rule,
        })
    }

    /// The instant (ns) of a wall-clock time in this zone, given as if it
    /// were UTC (`wall`), as Go's `time.Date` resolves it: the offset at the
    /// wall time read as UTC, or, if the instant that gives is under another
    /// offset (near a transition), that one.
    pub fn instant_of_wall(&self, wall: i64) -> i64 {
        let off = |s: i32| i64::from(s) * 1_000_000_000;
        let first = self.offset_at(wall);
        let utc = wall.saturating_sub(off(first));
        let second = self.offset_at(utc);
        if second == first {
            utc
        } else {
            wall.saturating_sub(off(second))
        }
    }

    /// The offset from UTC, in seconds east, at `ns` since the epoch.
    pub fn offset_at(&self, ns: i64) -> i32 {
        let sec = ns.div_euclid(1_000_000_000);
        match self.transitions.last() {
            Some(&(last, _)) if sec >= last => self
                .rule
                .as_ref()
                .map_or(self.transitions_offset(sec), |r| r.offset_at(sec)),
            None => self
                .rule
                .as_ref()
                .map_or(self.initial, |r| r.offset_at(sec)),
            _ => self.transitions_offset(sec),
        }
    }

    /// Whether every offset this zone is at between `min` and `max` (ns) and
    /// every instant it changes offset there are whole multiples of `quantum`
    /// seconds: what a cluster read's `tz()` grid needs of every instant of its
    /// range, not only of its two ends (a historical local mean time of a few
    /// years may lie between two whole offsets).
    pub fn changes_whole_between(&self, min: i64, max: i64, quantum: i64) -> bool {
        let whole = |s: i64| s.rem_euclid(quantum) == 0;
        let (lo, hi) = (min.div_euclid(1_000_000_000), max.div_euclid(1_000_000_000));
        if !whole(i64::from(self.offset_at(min))) {
            return false;
        }
        let from = self.transitions.partition_point(|&(t, _)| t <= lo);
        let table = self.transitions[from..]
            .iter()
            .take_while(|&&(t, _)| t <= hi)
            .all(|&(t, off)| whole(t) && whole(i64::from(off)));
        // Past the table's last transition the footer's rule decides: its
        // offsets and the local times it changes at (a change's instant is a
        // day's start plus that time less an offset).
        let past_table = self.transitions.last().is_none_or(|&(last, _)| hi >= last);
        let rule = match (&self.rule, past_table) {
            (Some(r), true) => {
                whole(i64::from(r.std))
                    && r.dst.is_none_or(|(dst, _, start, _, end)| {
                        whole(i64::from(dst)) && whole(i64::from(start)) && whole(i64::from(end))
                    })
            }
            _ => true,
        };
        table && rule
    }

    /// The offset the transitions give at `sec`.
    fn transitions_offset(&self, sec: i64) -> i32 {
        match self.transitions.partition_point(|&(t, _)| t <= sec) {
            0 => self.initial,
            i => self.transitions[i - 1].1,
        }
    }
}

/// A TZif header's counts.
struct Header {
    version: u8,
    isutcnt: usize,
    isstdcnt: usize,
    leapcnt: usize,
    timecnt: usize,
    typecnt: usize,
    charcnt: usize,
}

impl Header {
    fn read(bytes: &[u8]) -> Option<Header> {
        if bytes.get(..4)? != b"TZif" {
            return None;
        }
        let count = |i: usize| -> Option<usize> {
            let b = bytes.get(20 + i * 4..24 + i * 4)?;
            usize::try_from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])).ok()
        };
        Some(Header {
            version: *bytes.get(4)?,
            isutcnt: count(0)?,
            isstdcnt: count(1)?,
            leapcnt: count(2)?,
            timecnt: count(3)?,
            typecnt: count(4)?,
            charcnt: count(5)?,
        })
    }

    /// The data block's length with `width`-byte times.
    fn data_len(&self, width: usize) -> usize {
        self.timecnt * width
            + self.timecnt
            + self.typecnt * 6
            + self.charcnt
            + self.leapcnt * (width + 4)
            + self.isstdcnt
            + self.isutcnt
    }
}

/// A POSIX `TZ` rule: `std offset [dst [offset] [,start[/time],end[/time]]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    /// Standard time's offset, seconds east.
    std: i32,
    /// Daylight time's offset and when it starts and ends (local times).
    dst: Option<(i32, Day, i32, Day, i32)>,
}

/// The day a rule changes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Day {
    /// `Jn`: day 1..=365, February 29 never counted.
    Julian(i64),
    /// `n`: day 0..=365 of the year.
    OfYear(i64),
    /// `Mm.w.d`: day `d` (0 = Sunday) of week `w` (5 = last) of month `m`.
    Weekday(i64, i64, i64),
}

impl Rule {
    fn parse(s: &str) -> Option<Rule> {
        let mut p = RuleParser { s };
        let _std_name = p.name()?;
        let std = -p.offset()?;
        if p.s.is_empty() {
            return Some(Rule { std, dst: None });
        }
        let _dst_name = p.name()?;
        let dst = if p.s.is_empty() || p.s.starts_with(',') {
            std + 3600
        } else {
            -p.offset()?
        };
        // Go's default when the rule has no dates: the US rules.
        let (start, start_time, end, end_time) = if p.s.is_empty() {
            (Day::Weekday(3, 2, 0), 7200, Day::Weekday(11, 1, 0), 7200)
        } else {
            p.s = p.s.strip_prefix(',')?;
            let (start, start_time) = p.day_time()?;
            p.s = p.s.strip_prefix(',')?;
            let (end, end_time) = p.day_time()?;
            (start, start_time, end, end_time)
        };
        p.s.is_empty().then_some(Rule {
            std,
            dst: Some((dst, start, start_time, end, end_time)),
        })
    }

    /// The offset at `sec` (UTC), as Go's `tzset` computes it.
    fn offset_at(&self, sec: i64) -> i32 {
        let Some((dst, start, start_time, end, end_time)) = self.dst else {
            return self.std;
        };
        let days = sec.div_euclid(86_400);
        let (year, _, _) = civil_from_days(days);
        let year_start = days_from_civil(year, 1, 1) * 86_400;
        let ysec = sec - year_start;
        let mut on = day_start(year, start) + i64::from(start_time) - i64::from(self.std);
        let mut off = day_start(year, end) + i64::from(end_time) - i64::from(dst);
        let (mut inside, mut outside) = (dst, self.std);
        if off < on {
            // Southern hemisphere: daylight time spans the new year.
            std::mem::swap(&mut on, &mut off);
            std::mem::swap(&mut inside, &mut outside);
        }
        if ysec < on || ysec >= off {
            outside
        } else {
            inside
        }
    }
}

/// Seconds from the start of `year` to the start of `day` (Go's `tzruleTime`
/// without the time of day).
fn day_start(year: i64, day: Day) -> i64 {
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let d = match day {
        Day::Julian(n) => n - 1 + i64::from(leap && n >= 60),
        Day::OfYear(n) => n,
        Day::Weekday(m, w, wd) => {
            let first = days_from_civil(year, m as u32, 1);
            // 1970-01-01 was a Thursday (4).
            let dow = (first + 4).rem_euclid(7);
            let mut d = (wd - dow).rem_euclid(7);
            let month_len =
                days_from_civil(year + i64::from(m == 12), (m % 12 + 1) as u32, 1) - first;
            for _ in 1..w {
                if d + 7 >= month_len {
                    break;
                }
                d += 7;
            }
            first - days_from_civil(year, 1, 1) + d
        }
    };
    d * 86_400
}

/// Reads a POSIX `TZ` string piece by piece.
struct RuleParser<'a> {
    s: &'a str,
}

impl<'a> RuleParser<'a> {
    /// `<...>` or letters.
    fn name(&mut self) -> Option<&'a str> {
        let s = self.s;
        let (name, rest) = if let Some(quoted) = s.strip_prefix('<') {
            let end = quoted.find('>')?;
            (&quoted[..end], &quoted[end + 1..])
        } else {
            let end = s
                .find(|c: char| c.is_ascii_digit() || matches!(c, ',' | '-' | '+'))
                .unwrap_or(s.len());
            (&s[..end], &s[end..])
        };
        self.s = rest;
        (name.len() >= 3).then_some(name)
    }

    /// `[+-]hh[:mm[:ss]]` in seconds (as written: POSIX west-positive).
    fn offset(&mut self) -> Option<i32> {
        let (sign, rest) = match self.s.as_bytes().first() {
            Some(b'-') => (-1, &self.s[1..]),
            Some(b'+') => (1, &self.s[1..]),
            _ => (1, self.s),
        };
        self.s = rest;
        Some(sign * self.hms()?)
    }

    /// `hh[:mm[:ss]]` in seconds.
    fn hms(&mut self) -> Option<i32> {
        let mut total = 0;
        for (i, unit) in [3600, 60, 1].into_iter().enumerate() {
            if i > 0 {
                match self.s.strip_prefix(':') {
                    Some(rest) => self.s = rest,
                    None => break,
                }
            }
            total += unit * self.number()?;
        }
        Some(total)
    }

    fn number(&mut self) -> Option<i32> {
        let end = self
            .s
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(self.s.len());
        let n = self.s[..end].parse().ok()?;
        self.s = &self.s[end..];
        Some(n)
    }

    /// `day[/time]`; the time defaults to 02:00 and may be negative.
    fn day_time(&mut self) -> Option<(Day, i32)> {
        let day = if let Some(rest) = self.s.strip_prefix('J') {
            self.s = rest;
            Day::Julian(i64::from(self.number()?))
        } else if let Some(rest) = self.s.strip_prefix('M') {
            self.s = rest;
            let m = self.number()?;
            self.s = self.s.strip_prefix('.')?;
            let w = self.number()?;
            self.s = self.s.strip_prefix('.')?;
            let d = self.number()?;
            Day::Weekday(i64::from(m), i64::from(w), i64::from(d))
        } else {
            Day::OfYear(i64::from(self.number()?))
        };
        let time = match self.s.strip_prefix('/') {
            Some(rest) => {
                self.s = rest;
                self.offset()?
            }
            None => 7200,
        };
        Some((day, time))
    }
}

/// (year, month, day) of a day count since 1970-01-01 in the proleptic
/// Gregorian calendar (Howard Hinnant's `civil_from_days`).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Days since 1970-01-01 of a date (proleptic Gregorian).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = year - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    //! Offsets as Go (and so influxd 1.6.7, whose answers show them as
    //! `+hh:mm`) gives them. Loading a zone needs the system's tzdata.
    use super::*;

    #[test]
    fn an_odd_offset_between_whole_ones_is_seen_inside_the_range() {
        const Q: i64 = 900;
        let s = |sec: i64| sec * 1_000_000_000;
        // Whole until 9,000 s, 19 min 32 s east until 18,000 s, whole again.
        let zone = TimeZone {
            name: "test".into(),
            transitions: vec![(9_000, 1_172), (18_000, 3_600)],
            initial: 0,
            rule: None,
        };
        assert!(zone.changes_whole_between(s(0), s(8_999), Q));
        assert!(zone.changes_whole_between(s(18_000), s(90_000), Q));
        assert!(zone.offset_at(s(0)) % 900 == 0 && zone.offset_at(s(20_000)) % 900 == 0);
        assert!(!zone.changes_whole_between(s(0), s(20_000), Q));
        assert!(!zone.changes_whole_between(s(10_000), s(10_001), Q));
        // A change at an instant off the quarter hour, between whole offsets.
        let zone = TimeZone {
            transitions: vec![(9_001, 3_600)],
            ..TimeZone::utc()
        };
        assert!(!zone.changes_whole_between(s(0), s(10_000), Q));
        assert!(zone.changes_whole_between(s(9_001), s(10_000), Q));
        // Today's zones are whole everywhere a dashboard reads.
        let paris = TimeZone::load("Europe/Paris").expect("Europe/Paris");
        let y2020 = s(1_577_836_800);
        assert!(paris.changes_whole_between(y2020, y2020 + s(3 * 365 * 86_400), Q));
        assert!(!paris.changes_whole_between(s(-2_500_000_000), y2020, Q));
    }

    const S: i64 = 1_000_000_000;

    /// `2020-11-01T05:00:00Z` etc. as ns.
    fn at(rfc: &str) -> i64 {
        let (date, time) = rfc.trim_end_matches('Z').split_once('T').unwrap();
        let d: Vec<u32> = date.split('-').map(|x| x.parse().unwrap()).collect();
        let t: Vec<i64> = time.split(':').map(|x| x.parse().unwrap()).collect();
        let days = days_from_civil(i64::from(d[0]), d[1], d[2]);
        (days * 86_400 + t[0] * 3600 + t[1] * 60 + t[2]) * S
    }

    fn load(name: &str) -> TimeZone {
        TimeZone::load(name)
            .unwrap_or_else(|e| panic!("{e}: tzdata (/usr/share/zoneinfo) is needed"))
    }

    #[test]
    fn offsets_from_zoneinfo() {
        // influxd: SELECT v FROM dst ... tz('America/Chicago'):
        // 2020-11-01T00:00:00-05:00, then 2020-11-01T04:00:00-06:00.
        let chicago = load("America/Chicago");
        assert_eq!(chicago.offset_at(at("2020-11-01T05:00:00Z")), -5 * 3600);
        assert_eq!(chicago.offset_at(at("2020-11-01T06:59:59Z")), -5 * 3600);
        assert_eq!(chicago.offset_at(at("2020-11-01T07:00:00Z")), -6 * 3600);
        assert_eq!(chicago.offset_at(at("2020-11-01T10:00:00Z")), -6 * 3600);
        // +05:30, +05:45, and Europe/London's +01:00 of 1968-1971 (influxd:
        // SELECT v FROM frac WHERE time < 0 tz('Europe/London') → +01:00).
        assert_eq!(load("Asia/Kolkata").offset_at(0), 19_800);
        assert_eq!(
            load("Asia/Kathmandu").offset_at(at("2020-11-01T05:00:00Z")),
            20_700
        );
        assert_eq!(load("Europe/London").offset_at(-1_500_000_000), 3600);
        assert_eq!(
            load("Europe/Berlin").offset_at(at("2020-09-13T12:00:05Z")),
            7200
        );
        assert_eq!(load("UTC").offset_at(0), 0);
        // Far after the last transition of any file: the footer rule.
        assert_eq!(chicago.offset_at(at("2100-07-01T00:00:00Z")), -5 * 3600);
        assert_eq!(chicago.offset_at(at("2100-01-01T00:00:00Z")), -6 * 3600);
    }

    #[test]
    fn unknown_zones_in_influxdb_words() {
        let e = TimeZone::load("Mars/Olympus").unwrap_err();
        assert_eq!(e.to_string(), "unable to find time zone Mars/Olympus");
        assert!(TimeZone::load("../etc/passwd").is_err());
        assert!(TimeZone::load("/etc/passwd").is_err());
    }

    #[test]
    fn posix_rules() {
        let us = Rule::parse("CST6CDT,M3.2.0,M11.1.0").unwrap();
        // 2040-03-11 is the second Sunday of March; 02:00 CST is 08:00Z.
        assert_eq!(us.offset_at(at("2040-03-11T07:59:59Z") / S), -6 * 3600);
        assert_eq!(us.offset_at(at("2040-03-11T08:00:00Z") / S), -5 * 3600);
        // 2040-11-04 is the first Sunday of November; 02:00 CDT is 07:00Z.
        assert_eq!(us.offset_at(at("2040-11-04T06:59:59Z") / S), -5 * 3600);
        assert_eq!(us.offset_at(at("2040-11-04T07:00:00Z") / S), -6 * 3600);
        // Southern hemisphere: daylight time across the new year.
        let sydney = Rule::parse("AEST-10AEDT,M10.1.0,M4.1.0/3").unwrap();
        assert_eq!(sydney.offset_at(at("2040-01-15T00:00:00Z") / S), 11 * 3600);
        assert_eq!(sydney.offset_at(at("2040-07-15T00:00:00Z") / S), 10 * 3600);
        // Quoted names, minutes, no daylight time.
        let nepal = Rule::parse("<+0545>-5:45").unwrap();
        assert_eq!(nepal.offset_at(0), 20_700);
        // A rule-only zone agrees with the transitions it replaces.
        let chicago = load("America/Chicago");
        for t in [
            "2020-03-08T07:59:59Z",
            "2020-03-08T08:00:00Z",
            "2020-07-01T00:00:00Z",
            "2020-12-01T00:00:00Z",
        ] {
            assert_eq!(us.offset_at(at(t) / S), chicago.offset_at(at(t)), "{t}");
        }
    }
}
