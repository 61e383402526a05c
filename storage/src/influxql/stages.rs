//! Where a statement's time went, stage by stage (issue #44: dashboards under
//! a millisecond need to know which microseconds to cut). Added up per thread
//! as the statements run and handed to the server through [`take`] on the
//! thread that ran them (as `read_path.rs` hands the path), which sends them
//! as a `Server-Timing` header. Cheap enough to be always on: a clock read at
//! each stage's ends (about 25 ns each), nothing allocated.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// A stage of a `SELECT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Checks, time range, schema resolution and the plan of each measurement.
    Plan,
    /// Waiting for the hot store's applier (and its lock), or for the
    /// flusher to have received every acknowledged write (last points).
    Wait,
    /// The hot store's choice of series (tag conditions, the decode budget).
    Series,
    /// Reading a ClickHouse cluster's shards (and the node's undelivered
    /// rows) for a measurement: listings, kept last points, partials, rows.
    Shards,
    /// Computing the rows from memory: decoding, conditions, accumulating
    /// (hot store), or the last points' merge.
    Eval,
    /// An engine statement (rendered, run, its answer parsed).
    Engine,
    /// Rows cut into series, filled, transformed, paged.
    Build,
}

impl Stage {
    /// Every stage, in the order a statement passes them.
    pub const ALL: [Stage; 7] = [
        Stage::Plan,
        Stage::Wait,
        Stage::Series,
        Stage::Shards,
        Stage::Eval,
        Stage::Engine,
        Stage::Build,
    ];

    /// Its name in `Server-Timing`.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Plan => "plan",
            Stage::Wait => "wait",
            Stage::Series => "series",
            Stage::Shards => "shards",
            Stage::Eval => "eval",
            Stage::Engine => "engine",
            Stage::Build => "build",
        }
    }
}

/// Nanoseconds per stage (indexed as [`Stage::ALL`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stages([u64; 7]);

impl Stages {
    /// The time spent in `stage`.
    pub fn get(&self, stage: Stage) -> Duration {
        Duration::from_nanos(self.0[stage as usize])
    }

    /// Adds `other`'s times.
    pub fn add(&mut self, other: Stages) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a = a.saturating_add(b);
        }
    }

    /// The stages that took any time, in order.
    pub fn spent(&self) -> impl Iterator<Item = (Stage, Duration)> + '_ {
        Stage::ALL
            .into_iter()
            .map(|s| (s, self.get(s)))
            .filter(|(_, d)| !d.is_zero())
    }
}

thread_local! {
    static SPENT: Cell<Stages> = const { Cell::new(Stages([0; 7])) };
}

/// The stages' times of this thread's statements since the last call, forgotten.
pub fn take() -> Stages {
    SPENT.with(|s| s.take())
}

/// Adds `took` to `stage`.
pub(crate) fn add(stage: Stage, took: Duration) {
    SPENT.with(|s| {
        let mut t = s.get();
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        t.0[stage as usize] = t.0[stage as usize].saturating_add(ns);
        s.set(t);
    });
}

/// Adds the time since `since` to `stage` and returns now (the next stage's start).
pub(crate) fn lap(stage: Stage, since: Instant) -> Instant {
    let now = Instant::now();
    add(stage, now.duration_since(since));
    now
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_add_up_per_thread_until_taken() {
        take();
        add(Stage::Eval, Duration::from_micros(3));
        add(Stage::Eval, Duration::from_micros(4));
        add(Stage::Plan, Duration::from_micros(1));
        let t = take();
        assert_eq!(t.get(Stage::Eval), Duration::from_micros(7));
        let named: Vec<_> = t.spent().map(|(s, _)| s.as_str()).collect();
        assert_eq!(named, ["plan", "eval"]);
        assert_eq!(take(), Stages::default());
        // Another thread's stages are its own.
        std::thread::spawn(|| add(Stage::Build, Duration::from_micros(9)))
            .join()
            .unwrap();
        assert_eq!(take(), Stages::default());
    }
}
