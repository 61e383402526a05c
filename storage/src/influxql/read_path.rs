//! Which path answered a statement's reads: the hot store (`hot/`), the
//! flusher's last points (`last_point.rs`) or an engine statement. Counted and
//! timed per path in `/metrics`, and told to the caller (the server's
//! `X-Chingest-Read-Path` header) through [`take`] on the thread that ran the
//! statement.

use std::cell::Cell;
use std::time::Duration;

/// Reads per path.
pub(crate) const READS: &str = "chingest_influxql_reads_total";
/// Seconds per read, per path.
pub(crate) const READ_SECONDS: &str = "chingest_influxql_read_seconds";

/// Where one measurement's rows came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// The hot store, computed in Rust.
    Hot,
    /// The flusher's last points.
    LastPoint,
    /// An engine statement.
    Engine,
}

impl Path {
    const ALL: [Path; 3] = [Path::Hot, Path::LastPoint, Path::Engine];

    /// The label and header value.
    pub fn as_str(self) -> &'static str {
        match self {
            Path::Hot => "hot",
            Path::LastPoint => "last_point",
            Path::Engine => "engine",
        }
    }
}

/// The paths of the reads this thread ran since the last [`take`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Paths {
    /// Reads answered from the hot store.
    pub hot: u32,
    /// Reads answered from the last points.
    pub last_point: u32,
    /// Reads answered by the engine.
    pub engine: u32,
}

impl Paths {
    /// Adds `other`'s counts.
    pub fn add(&mut self, other: Paths) {
        self.hot += other.hot;
        self.last_point += other.last_point;
        self.engine += other.engine;
    }

    /// One word for all of them: the path when every read took the same one,
    /// `mixed` when they differ, `None` without reads.
    pub fn summary(&self) -> Option<&'static str> {
        let counts = [self.hot, self.last_point, self.engine];
        match counts.iter().filter(|&&n| n > 0).count() {
            0 => None,
            1 => Path::ALL
                .iter()
                .zip(counts)
                .find(|(_, n)| *n > 0)
                .map(|(p, _)| p.as_str()),
            _ => Some("mixed"),
        }
    }
}

thread_local! {
    static SEEN: Cell<Paths> = const { Cell::new(Paths { hot: 0, last_point: 0, engine: 0 }) };
}

/// The paths this thread's reads took since the last call, forgotten.
pub fn take() -> Paths {
    SEEN.with(|s| s.take())
}

pub(crate) fn record(path: Path, took: Duration) {
    SEEN.with(|s| {
        let mut p = s.get();
        match path {
            Path::Hot => p.hot += 1,
            Path::LastPoint => p.last_point += 1,
            Path::Engine => p.engine += 1,
        }
        s.set(p);
    });
    metrics::counter!(READS, "path" => path.as_str()).increment(1);
    metrics::histogram!(READ_SECONDS, "path" => path.as_str()).record(took.as_secs_f64());
}

pub(crate) fn register_metrics() {
    for p in Path::ALL {
        metrics::counter!(READS, "path" => p.as_str()).increment(0);
    }
}
