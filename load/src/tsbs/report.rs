//! The TSBS benchmark's markdown: its own page (`tsbs_bench.md`) and its
//! section of the every-layer page, both from `tsbs_bench.json`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::run::{Order, TsbsBench, TsbsPhase, TypeResult};
use crate::error::Result;
use crate::host::rfc3339;
use crate::report::cells::ms;
use crate::report::files::{load_or_default, write, write_json};

/// The base name of the TSBS benchmark's results.
pub const TSBS_BENCH_NAME: &str = "tsbs_bench";

const NOTES: &str = "What each latency includes and excludes:\n\n\
    - One `GET /query?db=…&epoch=ns&q=…` from the request's first byte to the answer's last, read whole: the HTTP round trip on loopback (keep-alive), parsing and planning the InfluxQL, the storage read (for chingest the engine's SQL with InfluxDB's point identity: a point written twice reads as one, last write wins field by field) and the JSON encoding. Not the client's JSON decoding (done after the clock stops), not TLS or authentication (both run without).\n\
    - One query at a time (one client). Each phase says in what order: each server's queries of a type back to back, in two runs per server, servers in turn, each run after that server's warm-up (TSBS's runner sends one database's queries back to back; since 2026-11-30; answers compared between runs since stop 59: compared between one server's queries, they left the server listed last idle while the client parsed two answers, and it paid the wake-up, 1.4–1.9× on `lastpoint` at 1,000 hosts in a same-build A/B), or per query each server once, which goes first alternating (before): there each server's query waited idle for the other's, and on this 2-core box a query after 10 ms or more idle took chingest's sub-millisecond types 1.3–1.6× as long (`test_results/latest/tsbs_order_ab.md`). The client runs on one thread since stop 60: a body is read where it is awaited, as TSBS's Go runner reads it on its worker's goroutine; on a static 451 KB answer (`lastpoint` at 1,000 hosts, from a Go file server) it takes 0.57 ms p50, against 0.92–1.08 with the connection on another of two threads before, and TSBS's own read (net/http, 8 KB reads) 0.35–0.43. The load generator and every server share the machine's cores.\n\
    - Every answer of every timed query is compared value by value with the first server's (times exactly, numbers to a relative 1e-9): `answers` says how many differed.\n\
    - Windows and hosts are drawn from the seed inside the data set, at whole seconds (so a window's first and last intervals are partial, as in TSBS). Warm-up queries (other draws of the same type) run untimed first.\n\
    - Both servers hold their data in the page cache: warm-cache numbers.\n";

/// Writes `DIR/NAME.json` and `DIR/NAME.md`. Returns the paths.
pub fn write_tsbs_bench(dir: &Path, name: &str, b: &TsbsBench) -> Result<Vec<PathBuf>> {
    let json_path = write_json(dir, name, b)?;
    let md_path = dir.join(format!("{name}.md"));
    write(&md_path, tsbs_markdown(b, "#").as_bytes())?;
    Ok(vec![json_path, md_path])
}

/// Reads `path`; an empty benchmark when it does not exist.
pub fn load_tsbs_bench(path: &Path) -> Result<TsbsBench> {
    load_or_default(path)
}

/// The page (`h` = "#") or a section of another page (`h` = "##").
pub fn tsbs_markdown(b: &TsbsBench, h: &str) -> String {
    let mut o = format!("{h} TSBS `cpu-only` queries: chingest and InfluxDB 1.x (issue #23)\n");
    for p in &b.phases {
        o.push_str(&phase(p, &format!("{h}#")));
    }
    o.push('\n');
    o.push_str(NOTES);
    if let Some(p) = b.phases.last() {
        let _ = writeln!(o, "\n{h}# Host (the last phase)\n");
        o.push_str(&p.host.markdown());
    }
    o
}

/// The every-layer page's section: from `tsbs_bench.json` in `dir`, or "not measured".
pub fn section(dir: &Path) -> String {
    match load_tsbs_bench(&dir.join(format!("{TSBS_BENCH_NAME}.json"))) {
        Ok(b) if !b.phases.is_empty() => format!("\n{}", tsbs_markdown(&b, "##")),
        _ => "\n## TSBS `cpu-only` queries: chingest and InfluxDB 1.x (issue #23)\n\nnot measured (`scripts/tsbs_bench.sh` writes `tsbs_bench.json`).\n".into(),
    }
}

fn phase(p: &TsbsPhase, h: &str) -> String {
    let mut o = String::new();
    let servers: Vec<&str> = p.fills.iter().map(|f| f.server.as_str()).collect();
    let _ = writeln!(o, "\n{h} {}: {}\n", p.name, servers.join(", "));
    let _ = writeln!(
        o,
        "Data: {} points of `cpu` ({} hosts, one point each every 10 s, 10 tags, 10 integer fields) from {} to {}, data seed {}; queries from seed {}, {} warm-up per type and server{}.\n",
        p.data.points(),
        p.data.hosts,
        rfc3339(p.data.start_ns / 1_000_000_000),
        rfc3339(p.data.end_ns / 1_000_000_000),
        p.data.seed,
        p.query_seed,
        p.warmup,
        match p.order {
            Order::Blocks => " before each of its runs; each server's queries of a type back to back (two runs per server, servers in turn; answers compared between runs)",
            Order::Alternate => "; per query each server once, which goes first alternating",
        }
    );
    o.push_str("| server | CREATE DATABASE (GET, as TSBS's loader) | written in | points/s | requests × points | retries |\n|---|---|---:|---:|---:|---:|\n");
    for f in &p.fills {
        let _ = writeln!(
            o,
            "| {} | {} | {:.1} s | {:.0} | {} × {} | {} |",
            f.server,
            f.create_database.replace('|', "\\|"),
            f.secs,
            f.points as f64 / f.secs.max(1e-9),
            f.requests,
            f.batch,
            f.retries
        );
    }
    for n in &p.notes {
        let _ = writeln!(o, "- {n}");
    }
    o.push('\n');
    o.push_str(&table(p));
    for t in &p.types {
        if let Some(f) = &t.failure {
            let _ = writeln!(o, "- `{}` stopped: {f}", t.name);
        }
        if let Some(m) = &t.first_mismatch {
            let _ = writeln!(o, "- `{}` first difference: {m}", t.name);
        }
    }
    let or_q = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
    let _ = writeln!(
        o,
        "\nMachine load (`/proc/loadavg`): {} before the queries, {} after, on {} cores ({}); {} ({}).",
        or_q(&p.loadavg_before),
        or_q(&p.loadavg_after),
        p.host.cores,
        p.host.cpu_model,
        p.host.date,
        p.tool
    );
    o
}

/// Per type: each server's p50 / p95, and the reference's p50 over each other's.
fn table(p: &TsbsPhase) -> String {
    let servers: Vec<String> = p
        .types
        .first()
        .map(|t| t.timings.iter().map(|x| x.server.clone()).collect())
        .unwrap_or_default();
    let mut o = String::from("| query type | queries |");
    for s in &servers {
        let _ = write!(o, " {s} p50 ms | {s} p95 ms |");
    }
    for s in servers.iter().skip(1) {
        let _ = write!(o, " {s} ÷ {} (p50) |", servers[0]);
    }
    o.push_str(" rows per answer | answers |\n|---|---:|");
    for _ in &servers {
        o.push_str("---:|---:|");
    }
    for _ in servers.iter().skip(1) {
        o.push_str("---:|");
    }
    o.push_str("---:|---|\n");
    for t in &p.types {
        o.push_str(&row(t, &servers));
    }
    o
}

fn row(t: &TypeResult, servers: &[String]) -> String {
    let mut o = format!("| `{}` | {} |", t.name, t.queries);
    let p50 = |s: &str| {
        t.timings
            .iter()
            .find(|x| x.server == s)
            .map(|x| x.latency.p50_us)
    };
    for s in servers {
        match t.timings.iter().find(|x| &x.server == s) {
            Some(x) if x.latency.count > 0 => {
                let _ = write!(o, " {} | {} |", ms(x.latency.p50_us), ms(x.latency.p95_us));
            }
            _ => o.push_str(" – | – |"),
        }
    }
    for s in servers.iter().skip(1) {
        match (p50(&servers[0]), p50(s)) {
            (Some(a), Some(b)) if a > 0 && b > 0 => {
                let _ = write!(o, " {:.2}× |", b as f64 / a as f64);
            }
            _ => o.push_str(" – |"),
        }
    }
    let rows = t.shape.rows.checked_div(t.queries as u64).unwrap_or(0);
    let answers = match (t.failure.is_some(), t.mismatches) {
        (true, _) => "stopped".to_string(),
        (false, 0) => "all equal".to_string(),
        (false, m) => format!("{m} differ"),
    };
    let _ = writeln!(o, " {rows} | {answers} |");
    o
}
