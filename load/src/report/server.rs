//! The server's own account of where its time went: stage histograms from its
//! `/metrics` dump, and CPU by thread role from a `perf report`.

use std::fmt::Write as _;
use std::path::Path;

/// Stage histograms listed in the whole-session table.
const STAGE_ROWS: usize = 20;

/// Time spent per server stage, from a Prometheus text dump: every
/// `chingest_*_seconds` series as (series with labels, count, sum seconds),
/// largest total first.
pub fn stage_times(prometheus_text: &str) -> Vec<(String, f64, f64)> {
    let mut out: Vec<(String, f64, f64)> = crate::stages::parse(prometheus_text)
        .into_iter()
        .filter(|(_, t)| t.count > 0.0)
        .map(|(k, t)| (k, t.count, t.seconds))
        .collect();
    out.sort_by(|a, b| b.2.total_cmp(&a.2));
    out
}

/// What a server thread (its Linux `comm`, as `perf report --sort comm`
/// prints it) does for chingest.
pub fn thread_role(comm: &str) -> &'static str {
    let c = comm.trim();
    if c.starts_with("MergeMutate") {
        "engine: background merges"
    } else if c.starts_with("QueryCompPipeEx") || c.starts_with("QueryPipelineEx") {
        "engine: INSERT (sort, compress, write parts)"
    } else if c.starts_with("tokio-") {
        "front door: HTTP, body read, parse, series, Arrow build, WAL encode"
    } else if c.starts_with("chingest-parse") {
        "front door: parallel line-protocol parse"
    } else if c.starts_with("chingest-wal") || c.starts_with("rocksdb") {
        "WAL: group commit and RocksDB"
    } else if c.starts_with("chingest-flush") {
        "flusher: coalesce and hand batches to the engine"
    } else {
        "other (engine housekeeping, unnamed threads)"
    }
}

/// Parses `perf report --sort comm --stdio` lines (`  12.34%  name`) into
/// (role, share %) sorted by share, roles summed.
pub fn cpu_by_role(perf_text: &str) -> Vec<(&'static str, f64)> {
    let mut roles: Vec<(&'static str, f64)> = Vec::new();
    for line in perf_text.lines() {
        let line = line.trim();
        let Some((pct, comm)) = line.split_once('%') else {
            continue;
        };
        let Ok(pct) = pct.trim().parse::<f64>() else {
            continue;
        };
        let role = thread_role(comm);
        match roles.iter_mut().find(|(r, _)| *r == role) {
            Some((_, v)) => *v += pct,
            None => roles.push((role, pct)),
        }
    }
    roles.sort_by(|a, b| b.1.total_cmp(&a.1));
    roles
}

/// The CPU-by-thread table from `server-cpu-by-thread.txt`, or why there is none.
pub(super) fn cpu_by_thread_section(dir: &Path) -> String {
    let Ok(text) = std::fs::read_to_string(dir.join("server-cpu-by-thread.txt")) else {
        return "Server CPU by thread: not measured (no `server-cpu-by-thread.txt`: perf unavailable).\n\n".into();
    };
    let roles = cpu_by_role(&text);
    if roles.is_empty() {
        return "Server CPU by thread: perf recorded no samples.\n\n".into();
    }
    let mut o = String::from(
        "**Server CPU by thread** during the last soak (`perf record -F 99` on the server process, samples grouped by thread name): the share of the server's CPU time, not of the machine.\n\n\
         | role | share of server CPU |\n|---|---:|\n",
    );
    for (role, pct) in &roles {
        let _ = writeln!(o, "| {role} | {pct:.1}% |");
    }
    o.push('\n');
    o
}

/// The whole-session stage table from `server-metrics.txt`, or why there is none.
pub(super) fn stage_section(dir: &Path) -> String {
    let path = dir.join("server-metrics.txt");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return "Stage histograms: not measured (no `server-metrics.txt`).\n".into();
    };
    let stages = stage_times(&text);
    if stages.is_empty() {
        return "Stage histograms: the server exposed no `chingest_*_seconds` histograms.\n".into();
    }
    let mut o = String::from(
        "Server stage histograms over the whole session (warm-up, ramp and closed runs), from `/metrics` at the end, sorted by total time: the top stages are where the box is spent (stages overlap in time, so totals do not add up to the wall clock).\n\n\
         | stage | observations | mean ms | total s |\n|---|---:|---:|---:|\n",
    );
    for (k, c, s) in stages.iter().take(STAGE_ROWS) {
        let _ = writeln!(o, "| `{k}` | {c:.0} | {:.3} | {s:.2} |", s / c * 1000.0);
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_times_from_prometheus_text() {
        let text = "# TYPE chingest_wal_commit_seconds histogram\n\
            chingest_wal_commit_seconds_bucket{le=\"0.01\"} 3\n\
            chingest_wal_commit_seconds_sum 1.5\n\
            chingest_wal_commit_seconds_count 3\n\
            chingest_parse_seconds_sum{format=\"lp\"} 4\n\
            chingest_parse_seconds_count{format=\"lp\"} 8\n\
            other_seconds_sum 9\nother_seconds_count 1\n\
            chingest_idle_seconds_count 0\nchingest_idle_seconds_sum 0\n";
        let st = stage_times(text);
        assert_eq!(
            st,
            vec![
                (
                    "chingest_parse_seconds{format=\"lp\"}".to_string(),
                    8.0,
                    4.0
                ),
                ("chingest_wal_commit_seconds".to_string(), 3.0, 1.5),
            ]
        );
    }

    #[test]
    fn cpu_is_grouped_by_thread_role() {
        let perf = "    41.39%  MergeMutate    \n    23.07%  tokio-rt-worker\n    15.68%  QueryCompPipeEx\n     \
                    9.56%  chingest-wal-wr\n     3.56%  rocksdb:high   \n     0.01%  QueryPipelineEx\n     \
                    2.00%  chingest-parse-\n     0.5%  :15700\nnot a sample line\n";
        let roles = cpu_by_role(perf);
        assert_eq!(roles[0], ("engine: background merges", 41.39));
        assert_eq!(roles[1].0, thread_role("tokio-rt-worker"));
        let insert = roles
            .iter()
            .find(|r| r.0.starts_with("engine: INSERT"))
            .unwrap();
        assert!((insert.1 - 15.69).abs() < 1e-9);
        let wal = roles.iter().find(|r| r.0.starts_with("WAL")).unwrap();
        assert!((wal.1 - 13.12).abs() < 1e-9);
        assert_eq!(roles.len(), 6);
        assert_eq!(
            thread_role(":15700"),
            "other (engine housekeeping, unnamed threads)"
        );
    }
}
