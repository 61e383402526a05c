//! The "Every layer" table: the engine ceiling, then each layer of work on top
//! of it up to end to end, each row with its ratio to the ceiling.

use std::fmt::Write as _;

use super::inputs::Results;
use super::NOT_MEASURED;
use crate::chart::si;
use crate::report::cells::ratio;
use crate::summary::RunResult;

/// One row of the table.
struct Layer {
    name: String,
    points_per_sec: Option<f64>,
    includes: &'static str,
    excludes: &'static str,
}

/// The section: heading, table head and one row per layer.
pub(super) fn section(r: &Results) -> String {
    let mut o = String::from("## Every layer\n\nEach row adds work on top of the one above; the ratio is to the engine ceiling measured on the same machine.\n\n");
    o.push_str(
        "| layer | points/s | vs engine ceiling | includes | excludes |\n|---|---:|---:|---|---|\n",
    );
    let ceiling = r.ceiling();
    for l in layers(r) {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} |",
            l.name,
            l.points_per_sec
                .map(si)
                .unwrap_or_else(|| NOT_MEASURED.into()),
            l.points_per_sec
                .map(|v| ratio(v, ceiling))
                .unwrap_or_else(|| "–".into()),
            l.includes,
            l.excludes
        );
    }
    o
}

/// The rows, bottom layer first; a soak row per soak run.
fn layers(r: &Results) -> Vec<Layer> {
    let mut rows = vec![engine(r), flush(r), peak(r), sustainable(r)];
    rows.extend(r.soaks.iter().enumerate().filter_map(|(i, s)| soak(i, s)));
    rows.push(closed(r));
    rows.push(client(r));
    rows
}

fn engine(r: &Results) -> Layer {
    Layer {
        name: format!(
            "engine ceiling (`chdb_raw`{})",
            r.engine
                .as_ref()
                .map(|e| format!(", {}", e.0))
                .unwrap_or_default()
        ),
        points_per_sec: r.ceiling(),
        includes: "pre-built Arrow batches inserted into a chDB MergeTree table through the FFI (rows/s; fastest verified variant, in-engine generation excluded)",
        excludes: "HTTP, parsing, series identity, WAL, fsync",
    }
}

fn flush(r: &Results) -> Layer {
    Layer {
        name: format!(
            "flush{}",
            r.flush
                .as_ref()
                .map(|f| format!(" ({})", f.0))
                .unwrap_or_default()
        ),
        points_per_sec: r.flush.as_ref().map(|f| f.1),
        includes: "WAL entries → coalesced Arrow batches → chDB through pooled connections",
        excludes: "HTTP, parsing, WAL group commit",
    }
}

fn peak(r: &Results) -> Layer {
    let peak = r.peak();
    Layer {
        name: format!(
            "end-to-end peak (open model{})",
            peak.map(|p| format!(", p95 {:.0} ms", p.p95_ms))
                .unwrap_or_default()
        ),
        points_per_sec: peak.map(|p| p.achieved_points_per_sec),
        includes: "HTTP on loopback, parse, series + schema, Arrow, WAL commit with fsync before the 204, flush to chDB; load generator on the same cores",
        excludes: "any latency bound: the highest achieved rate, however slow",
    }
}

fn sustainable(r: &Results) -> Layer {
    Layer {
        name: format!(
            "**end-to-end sustainable** (≥ 99% of offered, p95 ≤ {:.0} ms)",
            r.budget_ms()
        ),
        points_per_sec: r.sustainable().map(|p| p.achieved_points_per_sec),
        includes: "as above, within the latency budget and without loss",
        excludes: "network between machines (loopback only)",
    }
}

/// Soak `i` (0: the sustainable rate; later: a lower ramp rate); `None` without a step.
fn soak(i: usize, run: &RunResult) -> Option<Layer> {
    let step = run.steps.first()?;
    let held = run.summary.sustainable.is_some();
    Some(Layer {
        name: format!(
            "**end-to-end soak** ({} for {:.0} s, {} offered: {}, p95 {:.0} ms)",
            if i == 0 {
                "the sustainable rate"
            } else {
                "a lower ramp rate"
            },
            step.duration_secs,
            step.offered_points_per_sec
                .map(si)
                .unwrap_or_else(|| "?".into()),
            if held { "held" } else { "**did not hold**" },
            step.p95_ms()
        ),
        points_per_sec: Some(step.achieved_points_per_sec),
        includes: "as above, for minutes: the engine's background merges grow with the data",
        excludes: "hours-long effects (merges of ever larger parts, disk filling)",
    })
}

/// The closed model's best step, for contrast.
fn closed(r: &Results) -> Layer {
    let best = r.closed.as_ref().and_then(|c| {
        c.steps.iter().max_by(|a, b| {
            a.achieved_points_per_sec
                .total_cmp(&b.achieved_points_per_sec)
        })
    });
    Layer {
        name: format!(
            "closed-model max (contrast{})",
            best.map(|s| format!(", {} users, p95 {:.0} ms", s.vus.unwrap_or(0), s.p95_ms()))
                .unwrap_or_default()
        ),
        points_per_sec: best.map(|s| s.achieved_points_per_sec).filter(|v| *v > 0.0),
        includes: "back-to-back users: throughput is the server's pace",
        excludes: "an arrival rate: latency is hidden as fewer requests, so this is not a capacity",
    }
}

/// The load generator's own ceiling against the null sink.
fn client(r: &Results) -> Layer {
    let run = r.client.as_ref();
    // If the client kept up with its highest rate, its true ceiling lies above.
    let lower_bound = run.is_some_and(|r| {
        r.steps
            .last()
            .is_some_and(|s| s.pct_of_offered.unwrap_or(0.0) >= 99.0)
    });
    Layer {
        name: format!(
            "load generator ceiling (null server, for reference{})",
            if lower_bound {
                "; kept up with every rate tried, so a lower bound"
            } else {
                ""
            }
        ),
        points_per_sec: run
            .and_then(|r| r.summary.peak.as_ref())
            .map(|p| p.achieved_points_per_sec),
        includes: "`chingest-load ramp` against `chingest-load sink` (204 to everything) on the same machine",
        excludes: "the server: if end-to-end comes close to this, the client is the limit",
    }
}
