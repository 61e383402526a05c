//! The windows of a `GROUP BY time(interval, offset)` answer, in UTC or a
//! `tz()` zone, as InfluxDB's `Window` computes them, and the walk from one
//! window to the next that fill follows.

use super::TimeZone;

/// The time grid of a `GROUP BY time(interval, offset)` answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    /// The interval, ns (> 0).
    pub interval: i64,
    /// The `GROUP BY time(_, offset)` offset, ns (may be negative).
    pub offset: i64,
    /// The query's lower time bound, ns inclusive; `None` when the `WHERE`
    /// clause has none.
    pub start: Option<i64>,
    /// The query's upper time bound, ns inclusive (`time < t` is `t - 1`;
    /// without one, InfluxDB uses `now()`).
    pub end: i64,
    /// `ORDER BY time DESC`.
    pub descending: bool,
}

impl Grid {
    /// The start of the interval holding `t`: InfluxDB's
    /// `IteratorOptions.Window` in UTC (intervals are aligned on the epoch plus
    /// the offset).
    pub fn window(&self, t: i64) -> i64 {
        window_start(t, self.interval, self.offset)
    }

    pub(super) fn step(&self) -> i64 {
        if self.descending {
            -self.interval
        } else {
            self.interval
        }
    }

    /// Whether `t` comes strictly before `u` in output order.
    pub(super) fn before(&self, t: i64, u: i64) -> bool {
        if self.descending {
            t > u
        } else {
            t < u
        }
    }
}

/// The start of the `interval`-long window (aligned on the epoch plus
/// `offset`) that holds `t`, as InfluxDB computes it in UTC.
pub fn window_start(t: i64, interval: i64, offset: i64) -> i64 {
    window_start_in(t, interval, offset, None)
}

/// [`window_start`] in a `tz()` zone, as InfluxDB's `Window` computes it:
/// windows are aligned on local time (a `1d` window starts at local
/// midnight), the zone's offset taken at `t` and then at the window's start
/// when the two differ by less than the interval.
pub fn window_start_in(t: i64, interval: i64, offset: i64, zone: Option<&TimeZone>) -> i64 {
    let t = t.saturating_sub(offset);
    let local = zone_ns(zone, t);
    let start = t - t.saturating_add(local).rem_euclid(interval);
    let shift = local - zone_ns(zone, start);
    let start = if shift != 0 && shift.abs() < interval {
        start + shift
    } else {
        start
    };
    start + offset
}

/// The zone's offset at `t`, ns (0 without a zone).
pub(super) fn zone_ns(zone: Option<&TimeZone>, t: i64) -> i64 {
    zone.map_or(0, |z| i64::from(z.offset_at(t)) * 1_000_000_000)
}

/// A grid's windows in a zone: where they start and how the fill iterator
/// steps from one to the next (a step across an offset change is shifted by
/// it, unless the change is as long as the interval).
#[derive(Debug, Clone, Copy)]
pub(super) struct Walk<'a> {
    pub(super) grid: &'a Grid,
    pub(super) zone: Option<&'a TimeZone>,
}

impl Walk<'_> {
    /// The start of the window holding `t`.
    pub(super) fn window(&self, t: i64) -> i64 {
        window_start_in(t, self.grid.interval, self.grid.offset, self.zone)
    }

    /// The window after `t` in output order; `at` is the zone offset the walk
    /// is at (InfluxDB's `window.offset`), updated.
    pub(super) fn next(&self, t: i64, at: &mut i64) -> Option<i64> {
        let mut n = t.checked_add(self.grid.step())?;
        if self.zone.is_some() {
            let now = zone_ns(self.zone, n - 1);
            if now != *at {
                let diff = *at - now;
                if diff.abs() < self.grid.interval {
                    n += diff;
                }
                *at = now;
            }
        }
        Some(n)
    }
}
