//! The query benchmark's markdown (issue #12): its own page
//! (`query_bench.md`) and its section of the every-layer page, both from
//! `query_bench.json`: per phase the data set and its ingest, the answer
//! checks, p50/p95 per query, server and client count, and the machine load.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::cells::ms;
use super::files::{read_json, write, write_json};
use crate::chart::si;
use crate::error::Result;
use crate::host::rfc3339;
use crate::query::fill::FillResult;
use crate::query::result::{Phase, QueryBench, QueryResult};

/// The base name of the query benchmark's results.
pub const QUERY_BENCH_NAME: &str = "query_bench";

/// What a latency includes and excludes.
const NOTES: &str = "What each latency includes and excludes:\n\n\
    - It is one `GET /query?db=…&epoch=ms&q=…` (what Grafana sends) from the request's first byte to the answer's last, read whole by the client: the HTTP round trip on loopback (127.0.0.1, keep-alive connections), parsing and planning the InfluxQL, the storage read, and encoding the JSON answer. For chingest the read is the engine's SQL over the measurement's table with the point-identity merge (a point written twice reads as one, last write wins field by field), so its cost is inside these numbers.\n\
    - It excludes the network between machines, TLS, authentication (both servers run without), Grafana itself, and the client's decoding of the JSON (the answer is checked once before timing, not on every timed run).\n\
    - Both servers hold their whole data set in the page cache (the machine has the memory for it, and the warm-up reads it): these are warm-cache numbers, not cold-disk ones.\n\
    - Percentiles come from an HDR histogram of the timed requests; with fewer than 20 requests, p95 is their maximum.\n\
    - Answers are checked before timing: every server's answer equals the first server's series by series and value by value (times exactly, means to a relative 1e-9), and has the series and rows per series the data set implies; every timed answer is a 200 without an error.\n\
    - With `c` clients, a round sends `c` simultaneous requests to one server and waits for all; rounds alternate between the servers (and which goes first), so noise from the rest of the machine falls on both alike. The load generator, both servers and whatever else runs share the machine's cores: the load average says how busy it was.\n";

/// Writes `DIR/NAME.json` and `DIR/NAME.md`. Returns the paths.
pub fn write_query_bench(dir: &Path, name: &str, b: &QueryBench) -> Result<Vec<PathBuf>> {
    let json_path = write_json(dir, name, b)?;
    let md_path = dir.join(format!("{name}.md"));
    write(&md_path, query_bench_markdown(b).as_bytes())?;
    Ok(vec![json_path, md_path])
}

/// The query benchmark's own page.
pub fn query_bench_markdown(b: &QueryBench) -> String {
    let mut o = String::from("# chingest-load query: InfluxQL read latency (issue #12)\n");
    o.push_str(&body(b, "##"));
    o
}

/// The every-layer page's section: from `query_bench.json` in `dir`, or "not measured".
pub(super) fn section(dir: &Path) -> String {
    let mut o = String::from("\n## Query latency: InfluxQL on `/query` (issue #12)\n");
    let b = read_json(&dir.join(format!("{QUERY_BENCH_NAME}.json")))
        .and_then(|v| serde_json::from_value::<QueryBench>(v).ok())
        .filter(|b| !b.phases.is_empty());
    match b {
        Some(b) => o.push_str(&body(&b, "###")),
        None => {
            o.push_str("\nnot measured (`scripts/query_bench.sh` writes `query_bench.json`).\n")
        }
    }
    o
}

/// Every phase (each names its CPU: phases may come from different
/// machines), then what the numbers include, then the host of the last phase.
fn body(b: &QueryBench, h: &str) -> String {
    let mut o = String::new();
    for p in &b.phases {
        o.push_str(&phase(p, h));
    }
    o.push('\n');
    o.push_str(NOTES);
    if let Some(p) = b.phases.last() {
        let _ = writeln!(o, "\n{h} Host of the query benchmark (its last phase)\n");
        o.push_str(&p.host.markdown());
    }
    o
}

fn phase(p: &Phase, h: &str) -> String {
    let servers: Vec<&str> = p.ingest.iter().map(|f| f.server.as_str()).collect();
    let mut o = String::new();
    let _ = writeln!(o, "\n{h} {} points: {}\n", p.name, servers.join(" and "));
    if let Some(d) = p.ingest.first() {
        o.push_str(&dataset_line(d));
    }
    o.push_str(&ingest_table(&p.ingest));
    for n in &p.notes {
        let _ = writeln!(o, "- {n}");
    }
    o.push('\n');
    o.push_str(&latency_table(&p.queries));
    for q in &p.queries {
        o.push_str(&query_line(q));
    }
    let or_q = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
    let _ = writeln!(
        o,
        "\nMachine load during the queries (`/proc/loadavg`, 1 / 5 / 15 min): {} before, {} after, on {} cores ({}); {} ({}).",
        or_q(&p.loadavg_before),
        or_q(&p.loadavg_after),
        p.host.cores,
        p.host.cpu_model,
        p.host.date,
        p.tool
    );
    o
}

fn dataset_line(d: &FillResult) -> String {
    format!(
        "Data set: {} points of `cpu` ({} fields per point), {} series (one per `host`, each also tagged `region`), from {} to {}, one point per series every {:.3} s, written in time order as line protocol, {} points per request, {} requests in flight.\n\n",
        si(d.points as f64),
        d.fields,
        d.series,
        rfc3339(d.start_ns.div_euclid(1_000_000_000)),
        rfc3339(d.end_ns.div_euclid(1_000_000_000)),
        d.step_ns as f64 / 1e9,
        si(d.batch as f64),
        d.concurrency
    )
}

fn ingest_table(fills: &[FillResult]) -> String {
    let mut o = String::from(
        "| ingest (context) | points | wall s | points/s | retries (429/503) | load avg before → after |\n|---|---:|---:|---:|---:|---|\n",
    );
    let or_q = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
    for f in fills {
        let _ = writeln!(
            o,
            "| {} | {} | {:.1} | {} | {} | {} → {} |",
            f.server,
            si(f.points as f64),
            f.secs,
            si(f.points_per_sec()),
            f.retries,
            or_q(&f.loadavg_before),
            or_q(&f.loadavg_after)
        );
    }
    o.push('\n');
    o
}

fn latency_table(queries: &[QueryResult]) -> String {
    let mut o = String::from(
        "| query | server | clients | requests | p50 ms | p95 ms | max ms | answers/s | answer bytes |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for q in queries {
        for t in &q.timings {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                q.name,
                t.server,
                t.clients,
                t.latency.count,
                ms(t.latency.p50_us),
                ms(t.latency.p95_us),
                ms(t.latency.max_us),
                rate(t.latency.count as f64 / t.wall_secs.max(1e-9)),
                si(t.response_bytes as f64)
            );
        }
    }
    o
}

/// Answers per second with about three significant digits: `534`, `46.7`, `0.0402`.
fn rate(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

fn query_line(q: &QueryResult) -> String {
    let Some(c) = &q.check else {
        return format!(
            "\n`{}` ({}): `{}` — **failed, not timed**: {}\n",
            q.name,
            q.what,
            q.text,
            q.failure.as_deref().unwrap_or("no check recorded")
        );
    };
    let agree = if c.servers.len() > 1 {
        format!("identical answers from {}", c.servers.join(" and "))
    } else {
        format!("answer from {} alone", c.servers.join(""))
    };
    format!(
        "\n`{}` ({}): `{}` — checked before timing: {agree}, {} series × {} rows as the data set implies, {} non-null means; {} warm-up run(s) per server.\n",
        q.name,
        q.what,
        q.text,
        c.shape.series,
        c.expected_rows_per_series,
        si(c.shape.values as f64),
        q.warmup
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_query_says_why_and_has_no_rows() {
        let q = QueryResult {
            name: "all_hosts".into(),
            what: "all hosts".into(),
            text: "SELECT 1".into(),
            warmup: 2,
            check: None,
            timings: Vec::new(),
            failure: Some("check failed: chingest answered 503".into()),
        };
        let line = query_line(&q);
        assert!(line.contains("**failed, not timed**: check failed: chingest answered 503"));
        let table = latency_table(std::slice::from_ref(&q));
        assert_eq!(table.lines().count(), 2, "{table}");
    }
}
