//! When a continuous query runs and over which time range: InfluxDB 1.x's rule
//! (`services/continuous_querier`), with the last run kept durably so that runs missed
//! while the server was down are caught up on start.
//!
//! A query with `GROUP BY time(interval[, offset])` and `RESAMPLE EVERY every FOR for`
//! (each defaulting to the interval; `FOR` to `every` when `every` is longer than the
//! interval) runs at each `every` boundary. A run at time `now` that follows a run at
//! `last` covers the windows from the one holding `last + every + interval - for` up to the
//! window that `now` completes; the first run of a new query starts from `now`. So without
//! `RESAMPLE` each run computes the interval that just ended; with `FOR` it recomputes the
//! last `for` of windows; and after a pause it computes everything since the last run.
//! Windows align on the epoch plus the offset, as `GROUP BY time()` does.

/// A continuous query's timing, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// `GROUP BY time(interval)`.
    pub interval: i64,
    /// `GROUP BY time(…, offset)`.
    pub offset: i64,
    /// `RESAMPLE EVERY`.
    pub every: Option<i64>,
    /// `RESAMPLE FOR`.
    pub for_: Option<i64>,
}

/// One run: the range to compute (`None`: nothing completed yet) and the last-run time to
/// keep once it succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// `[start, end)`, ns.
    pub range: Option<(i64, i64)>,
    /// The time this run counts as (the `every` boundary at or before `now`).
    pub last_run: i64,
}

fn floor(t: i64, step: i64) -> i64 {
    t - t.rem_euclid(step)
}

/// The run due at `now` after a last run at `last_run` (`None`: never ran), if any.
pub fn due(t: Timing, last_run: Option<i64>, now: i64) -> Option<Run> {
    if t.interval <= 0 {
        return None;
    }
    let every = t.every.filter(|e| *e > 0).unwrap_or(t.interval);
    let next_run = match last_run {
        None => now,
        Some(last) => {
            let next = last.saturating_add(every);
            if next > now {
                return None;
            }
            next
        }
    };
    let resample_for = t.for_.filter(|f| *f > 0).unwrap_or(t.interval.max(every));
    let end_every = every.min(t.interval);
    let start = floor(
        next_run + t.interval - resample_for - t.offset - 1,
        t.interval,
    ) + t.offset;
    let end = floor(now + t.interval - end_every - t.offset, t.interval) + t.offset;
    Some(Run {
        range: (end > start).then_some((start, end)),
        last_run: floor(now - t.offset, every) + t.offset,
    })
}

/// `[start, end)` cut into ranges of at most `windows` intervals each (a long pause is
/// caught up statement by statement, each bounded like any query).
pub fn slices(start: i64, end: i64, interval: i64, windows: i64) -> Vec<(i64, i64)> {
    let step = interval.saturating_mul(windows.max(1));
    let mut out = Vec::new();
    let mut s = start;
    while s < end {
        let e = s.saturating_add(step).min(end);
        out.push((s, e));
        s = e;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: i64 = 60_000_000_000;

    fn t(interval: i64, every: Option<i64>, for_: Option<i64>) -> Timing {
        Timing {
            interval,
            offset: 0,
            every,
            for_,
        }
    }

    #[test]
    fn without_resample_each_run_computes_the_interval_that_just_ended() {
        let cq = t(M, None, None);
        // A new query's first check (at 10:00:30, minutes as units) only notes the boundary,
        // as in InfluxDB: its first window is the one that ends next.
        let first = due(cq, None, 600 * M + M / 2).unwrap();
        assert_eq!(first.range, None);
        assert_eq!(first.last_run, 600 * M);
        assert_eq!(
            due(cq, Some(600 * M), 600 * M + 59 * M / 60),
            None,
            "not yet"
        );
        let next = due(cq, Some(600 * M), 601 * M).unwrap();
        assert_eq!(next.range, Some((600 * M, 601 * M)));
        assert_eq!(next.last_run, 601 * M);
    }

    #[test]
    fn a_pause_is_caught_up_from_the_last_run() {
        let cq = t(M, None, None);
        let run = due(cq, Some(600 * M), 610 * M + 5).unwrap();
        assert_eq!(run.range, Some((600 * M, 610 * M)));
        assert_eq!(run.last_run, 610 * M);
        assert_eq!(
            slices(600 * M, 610 * M, M, 4),
            vec![(600 * M, 604 * M), (604 * M, 608 * M), (608 * M, 610 * M)]
        );
    }

    #[test]
    fn resample_every_and_for_follow_influxdb() {
        // EVERY 2m FOR 10m over 1m windows: every 2 minutes, the last 10 windows.
        let cq = t(M, Some(2 * M), Some(10 * M));
        let run = due(cq, Some(600 * M), 602 * M).unwrap();
        assert_eq!(run.range, Some((592 * M, 602 * M)));
        assert_eq!(run.last_run, 602 * M);
        assert_eq!(due(cq, Some(602 * M), 603 * M), None);
        // FOR 1h over 30m windows, every 30m: the last two windows.
        let cq = t(30 * M, None, Some(60 * M));
        let run = due(cq, Some(600 * M), 630 * M).unwrap();
        assert_eq!(run.range, Some((570 * M, 630 * M)));
        // EVERY 1h over 30m windows: FOR defaults to EVERY, the windows of the last hour.
        let cq = t(30 * M, Some(60 * M), None);
        let run = due(cq, Some(600 * M), 660 * M).unwrap();
        assert_eq!(run.range, Some((600 * M, 660 * M)));
    }

    #[test]
    fn offsets_shift_the_windows() {
        let cq = Timing {
            interval: 30 * M,
            offset: 5 * M,
            every: None,
            for_: None,
        };
        let run = due(cq, Some(605 * M), 635 * M).unwrap();
        assert_eq!(run.range, Some((605 * M, 635 * M)));
        assert_eq!(run.last_run, 635 * M);
    }
}
