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
/// caught up statement by statement, each bounded like any query). Lazy: a range of 10^11
/// one-nanosecond windows is never held as a list, only walked as far as a pass goes.
pub fn slices(
    start: i64,
    end: i64,
    interval: i64,
    windows: i64,
) -> impl Iterator<Item = (i64, i64)> {
    let step = interval.max(1).saturating_mul(windows.max(1));
    let mut s = start;
    std::iter::from_fn(move || {
        if s >= end {
            return None;
        }
        let e = s.saturating_add(step).min(end);
        let slice = (s, e);
        s = e;
        Some(slice)
    })
}

/// The statements one pass runs of a due run's `range`: it resumes where the earlier passes
/// of the same run stopped (`progress`: the end of the last statement that completed; the
/// run's start does not move while it is pending, because its last run is kept until it is
/// done) and takes at most `budget` of them. The run is done once a pass reaches the range's
/// end; until then its windows are computed in time order, each once.
pub fn pass(
    range: (i64, i64),
    progress: Option<i64>,
    interval: i64,
    windows: i64,
    budget: usize,
) -> impl Iterator<Item = (i64, i64)> {
    let from = progress.map_or(range.0, |p| p.max(range.0));
    slices(from, range.1, interval, windows).take(budget)
}

/// Where a run stands after a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// Its whole range is computed: this last run is kept, the progress forgotten.
    Done(i64),
    /// Not yet: the next pass resumes at this progress (`None`: at the range's start).
    Pending(Option<i64>),
}

/// Where `run` stands after a pass that resumed at `progress` and computed up to `reached`
/// (the end of its last statement that completed; `None`: none did).
pub fn after(run: Run, progress: Option<i64>, reached: Option<i64>) -> After {
    let reached = reached.or(progress);
    match run.range {
        Some((_, end)) if reached.is_none_or(|r| r < end) => After::Pending(reached),
        _ => After::Done(run.last_run),
    }
}

/// Windows one run computes at most, counted as `GROUP BY time()` counts buckets: the span a
/// run covers (`RESAMPLE FOR`, as [`due`] defaults it, plus what a loop that looks every
/// `tick` adds when `EVERY` is shorter than the tick: such a query runs once per tick, over
/// everything since its last run) in intervals, rounded up, plus one for a span that does not
/// start on a window boundary. `0` for a query that never runs (no interval).
pub fn buckets_per_run(t: Timing, tick: i64) -> u64 {
    if t.interval <= 0 {
        return 0;
    }
    let interval = i128::from(t.interval);
    let every = i128::from(t.every.filter(|e| *e > 0).unwrap_or(t.interval));
    let resample_for = t
        .for_
        .filter(|f| *f > 0)
        .map_or(interval.max(every), i128::from);
    let span = resample_for + (i128::from(tick) - every).max(0);
    let buckets = (span + interval - 1) / interval + 1;
    u64::try_from(buckets).unwrap_or(u64::MAX)
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
            slices(600 * M, 610 * M, M, 4).collect::<Vec<_>>(),
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

    #[test]
    fn slices_are_cut_lazily_however_many_windows_the_range_holds() {
        // 1000 weeks of 1-ns windows: 6·10^17 windows, 6·10^14 statements; only the first
        // two are ever built (a list of them all would need petabytes).
        let week = 7 * 24 * 60 * M;
        let mut all = slices(0, 1_000 * week, 1, 1_000);
        assert_eq!(all.next(), Some((0, 1_000)));
        assert_eq!(all.next(), Some((1_000, 2_000)));
        // The last slice ends at the range's end, even next to i64::MAX.
        let near_max: Vec<_> = slices(i64::MAX - 5, i64::MAX, 2, 2).collect();
        assert_eq!(
            near_max,
            vec![(i64::MAX - 5, i64::MAX - 1), (i64::MAX - 1, i64::MAX)]
        );
    }

    #[test]
    fn a_long_catch_up_is_worked_off_over_bounded_passes_each_window_once() {
        // A 1-s query last run a day ago, 10 statements of 1000 windows per pass, one pass
        // a second: the day (87 statements) is computed in 9 passes, in time order, each
        // window exactly once, then the query runs as usual.
        let s = 1_000_000_000;
        let cq = t(s, None, None);
        let day = 86_400 * s;
        let t0 = 1_000 * day;
        let (mut last_run, mut progress) = (Some(t0), None);
        let mut computed: Vec<(i64, i64)> = Vec::new();
        let mut now = t0 + day;
        let mut passes = 0;
        loop {
            let run = due(cq, last_run, now).unwrap();
            let range = run.range.unwrap();
            assert_eq!(range.0, t0, "a pending run keeps its start");
            let done: Vec<_> = pass(range, progress, s, 1_000, 10).collect();
            assert!(done.len() <= 10, "bounded");
            computed.extend(&done);
            passes += 1;
            match after(run, progress, done.last().map(|d| d.1)) {
                After::Done(l) => {
                    last_run = Some(l);
                    progress = None;
                    break;
                }
                After::Pending(p) => progress = p,
            }
            now += s;
        }
        assert_eq!(passes, 9);
        assert_eq!(last_run, Some(t0 + day + 8 * s), "the last pass's boundary");
        assert_eq!(computed.first().unwrap().0, t0);
        assert!(
            computed.windows(2).all(|w| w[0].1 == w[1].0),
            "contiguous, no window twice"
        );
        let end = computed.last().unwrap().1;
        assert_eq!(end, t0 + day + 8 * s);
        // The next run starts where the catch-up ended: nothing lost, nothing twice.
        let next = due(cq, last_run, now + s).unwrap();
        assert_eq!(next.range, Some((end, end + s)));
        assert_eq!(progress, None);
    }

    #[test]
    fn a_pass_resumes_at_the_progress_kept_and_a_failed_pass_keeps_what_it_did() {
        let cq = t(M, None, None);
        let run = due(cq, Some(600 * M), 700 * M).unwrap();
        let range = run.range.unwrap();
        let resumed: Vec<_> = pass(range, Some(650 * M), M, 20, 2).collect();
        assert_eq!(resumed, vec![(650 * M, 670 * M), (670 * M, 690 * M)]);
        // A failure before any statement completed keeps the progress as it was.
        assert_eq!(
            after(run, Some(650 * M), None),
            After::Pending(Some(650 * M))
        );
        assert_eq!(after(run, None, None), After::Pending(None));
        assert_eq!(
            after(run, None, Some(620 * M)),
            After::Pending(Some(620 * M))
        );
        assert_eq!(
            after(run, Some(650 * M), Some(700 * M)),
            After::Done(700 * M)
        );
        // Progress past the range (a clock set back): the run is done.
        assert_eq!(pass(range, Some(800 * M), M, 20, 2).count(), 0);
        assert_eq!(after(run, Some(800 * M), None), After::Done(700 * M));
    }

    #[test]
    fn buckets_per_run_count_the_resample_span_and_the_tick() {
        let s = 1_000_000_000;
        // EVERY 1s FOR 2m over 1-ns windows: 1.2·10^11 windows (+1), as the query.
        assert_eq!(
            buckets_per_run(t(1, Some(s), Some(120 * s)), s),
            120_000_000_001
        );
        let week = 7 * 86_400 * s;
        assert_eq!(
            buckets_per_run(t(1, Some(s), Some(1_000 * week)), s),
            604_800_000_000_000_001
        );
        // Without RESAMPLE a 1-ns query runs once a tick, over the whole second.
        assert_eq!(buckets_per_run(t(1, None, None), s), 1_000_000_001);
        // Usual queries: a few windows.
        assert_eq!(buckets_per_run(t(M, None, None), s), 2);
        assert_eq!(buckets_per_run(t(M, Some(2 * M), Some(10 * M)), s), 11);
        assert_eq!(buckets_per_run(t(30 * M, Some(60 * M), None), s), 3);
        // A span that is not a whole number of windows rounds up.
        assert_eq!(buckets_per_run(t(M, None, Some(90 * s)), s), 3);
        assert_eq!(buckets_per_run(t(0, None, None), s), 0);
    }
}
