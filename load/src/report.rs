//! Markdown and JSON output: one file set per run (`<name>.md`, `<name>.json`,
//! `<name>.svg`) and the every-layer report assembled from all results.
//!
//! The every-layer report reads whatever is there and says "not measured" for
//! whatever is not, so it can always be regenerated.

use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::chart::{ramp_svg, si};
use crate::error::{Error, Result};
use crate::host::Host;
use crate::summary::{RunResult, StepResult};

/// The end-to-end sustainable target of issue #7, points/s.
pub const TARGET_SUSTAINABLE: f64 = 1_000_000.0;
/// The end-to-end sustainable target as a fraction of the engine ceiling.
pub const TARGET_FRACTION_OF_CEILING: f64 = 0.25;

fn ms(us: u64) -> String {
    let v = us as f64 / 1000.0;
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn opt_pct(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.0}")).unwrap_or_else(|| "–".into())
}

fn lat_cells(s: &StepResult) -> String {
    if s.latency.count == 0 {
        "– | – | –".into()
    } else {
        format!(
            "{} | {} | {}",
            ms(s.latency.p50_us),
            ms(s.latency.p95_us),
            ms(s.latency.p99_us)
        )
    }
}

fn failed_cell(s: &StepResult) -> String {
    let mut parts: Vec<String> = s.failed.iter().map(|(k, v)| format!("{v}×{k}")).collect();
    if s.transport_errors > 0 {
        parts.push(format!("{}×conn", s.transport_errors));
    }
    if s.timeouts > 0 {
        parts.push(format!("{}×timeout", s.timeouts));
    }
    if parts.is_empty() {
        "0".into()
    } else {
        parts.join(", ")
    }
}

/// The step table of an open-model run.
pub fn ramp_table(steps: &[StepResult]) -> String {
    let mut o = String::from(
        "| step | offered req/s | offered points/s | achieved points/s | % of offered | p50 ms | p95 ms | p99 ms | dropped | 429 | 503 | failed | server CPU % | client CPU % |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|\n",
    );
    for s in steps {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            s.index,
            s.offered_rps.map(|r| format!("{r}")).unwrap_or_default(),
            s.offered_points_per_sec.map(si).unwrap_or_default(),
            si(s.achieved_points_per_sec),
            s.pct_of_offered
                .map(|p| format!("{p:.1}"))
                .unwrap_or_default(),
            lat_cells(s),
            s.dropped,
            s.shed_429,
            s.shed_503,
            failed_cell(s),
            opt_pct(s.server_cpu_pct),
            opt_pct(s.client_cpu_pct),
        );
    }
    o
}

/// The step table of a closed-model run.
pub fn closed_table(steps: &[StepResult]) -> String {
    let mut o = String::from(
        "| users | requests | achieved points/s | p50 ms | p95 ms | p99 ms | 429 | 503 | failed | server CPU % | client CPU % |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|\n",
    );
    for s in steps {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            s.vus.unwrap_or(0),
            s.started,
            si(s.achieved_points_per_sec),
            lat_cells(s),
            s.shed_429,
            s.shed_503,
            failed_cell(s),
            opt_pct(s.server_cpu_pct),
            opt_pct(s.client_cpu_pct),
        );
    }
    o
}

/// Scheduler lateness above which the client, not the server, may be the limit.
const LATE_START_US: u64 = 10_000;

/// A warning when the load generator itself started requests late.
fn client_lag_line(steps: &[StepResult]) -> Option<String> {
    let late: Vec<String> = steps
        .iter()
        .filter_map(|s| {
            s.sched_lag_p99_us
                .filter(|l| *l > LATE_START_US)
                .map(|l| format!("step {} ({} ms)", s.index, ms(l)))
        })
        .collect();
    (!late.is_empty()).then(|| {
        format!(
            "**Client warning:** the load generator started requests late (p99 scheduler lag over {} ms) in {}: those steps may measure the client, not the server.\n",
            LATE_START_US / 1000,
            late.join(", ")
        )
    })
}

fn retry_after_line(steps: &[StepResult]) -> Option<String> {
    let mut all = std::collections::BTreeMap::<&str, u64>::new();
    for s in steps {
        for (k, v) in &s.retry_after {
            *all.entry(k.as_str()).or_default() += v;
        }
    }
    (!all.is_empty()).then(|| {
        let parts: Vec<String> = all.iter().map(|(k, v)| format!("`{k}` ×{v}")).collect();
        format!(
            "Retry-After values received (recorded, not obeyed): {}.\n",
            parts.join(", ")
        )
    })
}

fn short_stage(k: &str) -> String {
    let k = k.strip_prefix("chingest_").unwrap_or(k);
    match k.split_once('{') {
        Some((name, labels)) => format!("{}{{{labels}", name.trim_end_matches("_seconds")),
        None => k.trim_end_matches("_seconds").to_string(),
    }
}

/// Per-step server stage time (busy seconds per wall second) for the stages
/// with the most total time; `None` when no step has stage data.
pub fn stage_step_table(steps: &[StepResult]) -> Option<String> {
    let mut totals = std::collections::BTreeMap::<&str, f64>::new();
    for s in steps {
        for (k, t) in &s.stages {
            *totals.entry(k.as_str()).or_default() += t.seconds;
        }
    }
    if totals.is_empty() {
        return None;
    }
    let mut keys: Vec<(&str, f64)> = totals.into_iter().collect();
    keys.sort_by(|a, b| b.1.total_cmp(&a.1));
    keys.truncate(6);
    let mut o = String::from(
        "Server stage time per step, from `/metrics` scraped around each step: seconds spent in the stage per second of wall clock (1.0 = one thread busy all the time; mean ms per observation in brackets).\n\n| step | offered points/s |",
    );
    for (k, _) in &keys {
        let _ = write!(o, " `{}` |", short_stage(k));
    }
    o.push_str("\n|---:|---:|");
    o.push_str(&"---:|".repeat(keys.len()));
    o.push('\n');
    for s in steps {
        let _ = write!(
            o,
            "| {} | {} |",
            s.index,
            s.offered_points_per_sec.map(si).unwrap_or_default()
        );
        for (k, _) in &keys {
            match s.stages.get(*k) {
                Some(t) if s.duration_secs > 0.0 && t.count > 0.0 => {
                    let _ = write!(
                        o,
                        " {:.2} ({:.1}) |",
                        t.seconds / s.duration_secs,
                        t.seconds / t.count * 1000.0
                    );
                }
                _ => o.push_str(" – |"),
            }
        }
        o.push('\n');
    }
    Some(o)
}

/// Which resource and stages hold the server back, read off the first step
/// that missed the sustainable rule: the server's CPU against the cores, and
/// the working (not waiting) stages with the most thread-time there.
pub fn limit_verdict(steps: &[StepResult], cores: usize, budget_ms: f64) -> Option<String> {
    let step = steps
        .iter()
        .find(|s| s.pct_of_offered.unwrap_or(100.0) < 99.0 || s.p95_ms() > budget_ms)?;
    let mut o = format!(
        "**What holds it back.** The first step past the sustainable rate is step {} ({} points/s offered, {:.1}% achieved, p95 {:.0} ms).",
        step.index,
        step.offered_points_per_sec.map(si).unwrap_or_default(),
        step.pct_of_offered.unwrap_or(0.0),
        step.p95_ms()
    );
    if let Some(cpu) = step.server_cpu_pct {
        let of = (cores.max(1) * 100) as f64;
        let _ = write!(
            o,
            " The server used {cpu:.0}% CPU of the {of:.0}% that {cores} cores allow{}.",
            if cpu >= 0.85 * of {
                " (with the load generator's share, the machine is CPU-bound)"
            } else {
                ""
            }
        );
    }
    let mut work: Vec<(&String, f64)> = step
        .stages
        .iter()
        .filter(|(k, t)| {
            !k.contains("http_request_duration") && !k.contains("wait") && t.count > 0.0
        })
        .map(|(k, t)| (k, t.seconds / step.duration_secs.max(1e-9)))
        .collect();
    work.sort_by(|a, b| b.1.total_cmp(&a.1));
    if !work.is_empty() {
        o.push_str(" Busiest working stages there (wall seconds in the stage per second, including time waiting for a core; `flush_batch` contains `chdb_insert`): ");
        let parts: Vec<String> = work
            .iter()
            .take(4)
            .map(|(k, v)| format!("`{}` {v:.2}", short_stage(k)))
            .collect();
        o.push_str(&parts.join(", "));
        o.push_str(
            ". Waiting stages (queue and WAL waits) grow on top of these once the cores are busy.",
        );
    }
    Some(o)
}

/// A markdown page for one run.
pub fn run_markdown(r: &RunResult) -> String {
    let mut o = String::new();
    let open = r.kind == "ramp";
    let _ = writeln!(
        o,
        "# chingest-load {}: {}\n",
        r.kind,
        if open {
            "open model (constant arrival rate)"
        } else {
            "closed model (back-to-back users)"
        }
    );
    let _ = writeln!(
        o,
        "- Target: `{}`\n- Payloads: {}\n- Tool: {}",
        r.url, r.payloads, r.tool
    );
    let _ = writeln!(o, "- Config: `{}`\n", r.config);
    let s = &r.summary;
    let _ = writeln!(
        o,
        "**Sustainable** (achieved ≥ 99% of offered, p95 ≤ {} ms): {}  \n**Peak** (highest achieved): {}\n",
        s.budget_ms,
        s.sustainable
            .as_ref()
            .map(|p| format!("{} points/s (step {}, p95 {:.1} ms)", si(p.achieved_points_per_sec), p.step, p.p95_ms))
            .unwrap_or_else(|| "none — no step qualifies".into()),
        s.peak
            .as_ref()
            .map(|p| format!("{} points/s (step {}, p95 {:.1} ms)", si(p.achieved_points_per_sec), p.step, p.p95_ms))
            .unwrap_or_else(|| "none — nothing succeeded".into()),
    );
    o.push_str(&if open {
        ramp_table(&r.steps)
    } else {
        closed_table(&r.steps)
    });
    o.push('\n');
    if let Some(t) = stage_step_table(&r.steps) {
        o.push_str(&t);
        o.push('\n');
    }
    for l in [retry_after_line(&r.steps), client_lag_line(&r.steps)]
        .into_iter()
        .flatten()
    {
        o.push_str(&l);
        o.push('\n');
    }
    o.push_str("Latency columns are for successful (2xx) writes, measured from the moment each request was sent; CPU % is user+system time from `/proc` (100 = one core).\n\n## Host\n\n");
    o.push_str(&r.host.markdown());
    o
}

fn write(path: &Path, data: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    std::fs::write(path, data).map_err(|e| Error::io(path, e))
}

/// Writes `DIR/NAME.json`, `DIR/NAME.md` and, for a ramp, `DIR/NAME.svg`. Returns the paths.
pub fn write_run(dir: &Path, name: &str, r: &RunResult) -> Result<Vec<PathBuf>> {
    let json_path = dir.join(format!("{name}.json"));
    let json = serde_json::to_vec_pretty(r).map_err(|source| Error::Json {
        path: json_path.clone(),
        source,
    })?;
    write(&json_path, &json)?;
    let md_path = dir.join(format!("{name}.md"));
    let mut md = run_markdown(r);
    let mut paths = vec![json_path, md_path.clone()];
    if r.kind == "ramp" {
        let svg_path = dir.join(format!("{name}.svg"));
        let title = format!("chingest-load ramp: {}", r.url);
        write(&svg_path, ramp_svg(&title, &r.steps, &r.summary).as_bytes())?;
        let _ = write!(md, "\n![ramp chart]({name}.svg)\n");
        paths.push(svg_path);
    }
    write(&md_path, md.as_bytes())?;
    Ok(paths)
}

/// Reads a JSON file; `None` when it is missing or unreadable (the caller says "not measured").
fn read_json(path: &Path) -> Option<Value> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn is_rate_key(k: &str) -> bool {
    let k = k.to_ascii_lowercase();
    (k.contains("rows") || k.contains("points"))
        && (k.contains("per_s") || k.ends_with("/s") || k.ends_with("_s") || k.ends_with("ps"))
        && !k.contains("mb")
        && !k.contains("byte")
        && !k.contains("ratio")
}

fn label_of(obj: &serde_json::Map<String, Value>, path: &str) -> String {
    let label = ["variant", "name", "scenario", "id", "bench"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(|v| v.as_str()).map(String::from))
        .unwrap_or_else(|| path.to_string());
    // Benches that sweep connection counts repeat the variant name per count.
    match obj.get("connections").and_then(|c| c.as_u64()) {
        Some(c) => format!("{label}, {c} conn"),
        None => label,
    }
}

/// Every (label, rows-or-points per second) found anywhere in a bench JSON,
/// whatever its exact layout: any numeric member named like `rows_per_sec`.
pub fn find_rates(v: &Value) -> Vec<(String, f64)> {
    fn walk(v: &Value, path: &str, out: &mut Vec<(String, f64)>) {
        match v {
            Value::Object(map) => {
                // A variant whose result failed its own verification is no ceiling.
                if map.get("verified").and_then(|v| v.as_bool()) == Some(false) {
                    return;
                }
                for (k, child) in map {
                    if let Some(x) = child.as_f64().filter(|_| is_rate_key(k)) {
                        if x.is_finite() && x > 0.0 {
                            out.push((label_of(map, path), x));
                        }
                    } else {
                        walk(child, &format!("{path}/{k}"), out);
                    }
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    walk(child, &format!("{path}[{i}]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, "", &mut out);
    out
}

fn best(rates: Vec<(String, f64)>) -> Option<(String, f64)> {
    rates.into_iter().max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The engine ceiling: the fastest variant that inserts data handed over from
/// outside; variants where the engine generates its own rows (`INSERT … SELECT
/// FROM numbers(N)`, labelled "internal") skip the hand-off and are no ceiling for ingest.
fn best_engine(v: &Value) -> Option<(String, f64)> {
    best(
        find_rates(v)
            .into_iter()
            .filter(|(l, _)| {
                let l = l.to_ascii_lowercase();
                !l.contains("internal") && !l.contains("numbers(")
            })
            .collect(),
    )
}

/// The flush number: prefer entries labelled as the flush path over the
/// `chdb_raw` reference the flush bench may carry alongside.
fn best_flush(v: &Value) -> Option<(String, f64)> {
    let all = find_rates(v);
    let flush: Vec<_> = all
        .iter()
        .filter(|(l, _)| l.to_ascii_lowercase().contains("flush"))
        .cloned()
        .collect();
    let raw_free: Vec<_> = all
        .iter()
        .filter(|(l, _)| !l.to_ascii_lowercase().contains("raw"))
        .cloned()
        .collect();
    best(flush).or_else(|| best(raw_free)).or_else(|| best(all))
}

/// `to` relative to directory `from` (both relative to the current directory or absolute).
pub fn relative_path(from: &Path, to: &Path) -> PathBuf {
    let abs = |p: &Path| -> Vec<String> {
        let p = if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir().unwrap_or_default().join(p)
        };
        let mut parts: Vec<String> = Vec::new();
        for c in p.components() {
            match c {
                Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
                Component::ParentDir => {
                    parts.pop();
                }
                _ => {}
            }
        }
        parts
    };
    let (f, t) = (abs(from), abs(to));
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..f.len() {
        out.push("..");
    }
    for p in &t[common..] {
        out.push(p);
    }
    out
}

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

fn cpu_by_thread_section(dir: &Path) -> String {
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

fn stage_section(dir: &Path) -> String {
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
    for (k, c, s) in stages.iter().take(20) {
        let _ = writeln!(o, "| `{k}` | {c:.0} | {:.3} | {s:.2} |", s / c * 1000.0);
    }
    o
}

/// Inputs of the every-layer report.
#[derive(Debug, Clone)]
pub struct ReportInputs {
    /// Directory holding `chdb_raw.json`, `flush.json`, `ramp.json`, `closed.json`,
    /// `ramp.svg`, and optionally `client_ceiling.json` and `server-metrics.txt`.
    pub results_dir: PathBuf,
    /// The markdown file to write (e.g. `docs/benchmarks.md`).
    pub out: PathBuf,
    /// Base name of the ramp results. Default `ramp`.
    pub ramp_name: String,
    /// Base name of the closed results. Default `closed`.
    pub closed_name: String,
}

fn ratio(v: f64, ceiling: Option<f64>) -> String {
    match ceiling {
        Some(c) if c > 0.0 => format!("{:.1}%", v / c * 100.0),
        _ => "–".into(),
    }
}

fn load_run(path: &Path) -> Option<RunResult> {
    serde_json::from_value(read_json(path)?).ok()
}

/// Builds the every-layer markdown from whatever results exist.
pub fn every_layer_markdown(inp: &ReportInputs) -> String {
    let dir = &inp.results_dir;
    let raw_json = read_json(&dir.join("chdb_raw.json"));
    let engine = raw_json.as_ref().and_then(best_engine);
    let flush = read_json(&dir.join("flush.json")).and_then(|v| best_flush(&v));
    let ramp = load_run(&dir.join(format!("{}.json", inp.ramp_name)));
    let closed = load_run(&dir.join(format!("{}.json", inp.closed_name)));
    // `soak_1.json`, `soak_2.json`, ...: the sustainable rate held for minutes,
    // then lower rates while it does not hold.
    let soaks: Vec<RunResult> = (1..=9)
        .map_while(|i| load_run(&dir.join(format!("soak_{i}.json"))))
        .collect();
    let ceiling = engine.as_ref().map(|e| e.1);
    let nm = "not measured";

    let mut o = String::from("# chingest end-to-end benchmarks: every layer\n\n");
    let _ = writeln!(
        o,
        "_Generated by `chingest-load report` from `{}` on {}. Do not edit by hand: rerun `scripts/bench.sh`._\n",
        dir.display(),
        crate::host::now_rfc3339()
    );
    o.push_str("## Every layer\n\nEach row adds work on top of the one above; the ratio is to the engine ceiling measured on the same machine.\n\n");
    o.push_str(
        "| layer | points/s | vs engine ceiling | includes | excludes |\n|---|---:|---:|---|---|\n",
    );
    let row = |o: &mut String, layer: String, v: Option<f64>, inc: &str, exc: &str| {
        let _ = writeln!(
            o,
            "| {layer} | {} | {} | {inc} | {exc} |",
            v.map(si).unwrap_or_else(|| nm.into()),
            v.map(|v| ratio(v, ceiling)).unwrap_or_else(|| "–".into())
        );
    };
    row(
        &mut o,
        format!(
            "engine ceiling (`chdb_raw`{})",
            engine
                .as_ref()
                .map(|e| format!(", {}", e.0))
                .unwrap_or_default()
        ),
        ceiling,
        "pre-built Arrow batches inserted into a chDB MergeTree table through the FFI (rows/s; fastest verified variant, in-engine generation excluded)",
        "HTTP, parsing, series identity, WAL, fsync",
    );
    row(
        &mut o,
        format!(
            "flush{}",
            flush
                .as_ref()
                .map(|f| format!(" ({})", f.0))
                .unwrap_or_default()
        ),
        flush.as_ref().map(|f| f.1),
        "WAL entries → coalesced Arrow batches → chDB through pooled connections",
        "HTTP, parsing, WAL group commit",
    );
    let peak = ramp.as_ref().and_then(|r| r.summary.peak.clone());
    let sust = ramp.as_ref().and_then(|r| r.summary.sustainable.clone());
    let budget = ramp.as_ref().map(|r| r.summary.budget_ms).unwrap_or(250.0);
    row(
        &mut o,
        format!(
            "end-to-end peak (open model{})",
            peak.as_ref().map(|p| format!(", p95 {:.0} ms", p.p95_ms)).unwrap_or_default()
        ),
        peak.as_ref().map(|p| p.achieved_points_per_sec),
        "HTTP on loopback, parse, series + schema, Arrow, WAL commit with fsync before the 204, flush to chDB; load generator on the same cores",
        "any latency bound: the highest achieved rate, however slow",
    );
    row(
        &mut o,
        format!("**end-to-end sustainable** (≥ 99% of offered, p95 ≤ {budget:.0} ms)"),
        sust.as_ref().map(|p| p.achieved_points_per_sec),
        "as above, within the latency budget and without loss",
        "network between machines (loopback only)",
    );
    for (i, r) in soaks.iter().enumerate() {
        let Some(step) = r.steps.first() else {
            continue;
        };
        let held = r.summary.sustainable.is_some();
        row(
            &mut o,
            format!(
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
            Some(step.achieved_points_per_sec),
            "as above, for minutes: the engine's background merges grow with the data",
            "hours-long effects (merges of ever larger parts, disk filling)",
        );
    }
    let closed_best = closed.as_ref().and_then(|c| {
        c.steps
            .iter()
            .max_by(|a, b| {
                a.achieved_points_per_sec
                    .total_cmp(&b.achieved_points_per_sec)
            })
            .cloned()
    });
    row(
        &mut o,
        format!(
            "closed-model max (contrast{})",
            closed_best
                .as_ref()
                .map(|s| format!(", {} users, p95 {:.0} ms", s.vus.unwrap_or(0), s.p95_ms()))
                .unwrap_or_default()
        ),
        closed_best
            .as_ref()
            .map(|s| s.achieved_points_per_sec)
            .filter(|v| *v > 0.0),
        "back-to-back users: throughput is the server's pace",
        "an arrival rate: latency is hidden as fewer requests, so this is not a capacity",
    );
    let client_run = load_run(&dir.join("client_ceiling.json"));
    let client = client_run.as_ref().and_then(|r| r.summary.peak.clone());
    // If the client kept up with its highest rate, its true ceiling lies above.
    let lower_bound = client_run.as_ref().is_some_and(|r| {
        r.steps
            .last()
            .is_some_and(|s| s.pct_of_offered.unwrap_or(0.0) >= 99.0)
    });
    row(
        &mut o,
        format!(
            "load generator ceiling (null server, for reference{})",
            if lower_bound {
                "; kept up with every rate tried, so a lower bound"
            } else {
                ""
            }
        ),
        client.as_ref().map(|p| p.achieved_points_per_sec),
        "`chingest-load ramp` against `chingest-load sink` (204 to everything) on the same machine",
        "the server: if end-to-end comes close to this, the client is the limit",
    );

    o.push_str("\n## Targets (issue #7)\n\n");
    match &sust {
        Some(p) => {
            let v = p.achieved_points_per_sec;
            let _ = writeln!(
                o,
                "- Sustainable ≥ {} points/s at p95 ≤ {budget:.0} ms: **{}** ({} points/s).",
                si(TARGET_SUSTAINABLE),
                if v >= TARGET_SUSTAINABLE {
                    "met"
                } else {
                    "not met"
                },
                si(v)
            );
            let _ = writeln!(
                o,
                "- Sustainable ≥ {:.0}% of the engine ceiling: {}.",
                TARGET_FRACTION_OF_CEILING * 100.0,
                match ceiling {
                    Some(c) => format!(
                        "**{}** ({})",
                        if v >= TARGET_FRACTION_OF_CEILING * c {
                            "met"
                        } else {
                            "not met"
                        },
                        ratio(v, Some(c))
                    ),
                    None => "engine ceiling not measured".into(),
                }
            );
        }
        None => {
            let _ = writeln!(
                o,
                "- Sustainable: {}.",
                if ramp.is_some() {
                    "no step qualified — lower the first rates"
                } else {
                    nm
                }
            );
        }
    }

    if let Some(step) = soaks.first().and_then(|r| r.steps.first()) {
        let _ = writeln!(
            o,
            "- The sustainable rate held for {:.0} s (soak): **{}** ({} points/s achieved, p95 {:.0} ms).",
            step.duration_secs,
            if soaks[0].summary.sustainable.is_some() { "yes" } else { "no" },
            si(step.achieved_points_per_sec),
            step.p95_ms()
        );
        let held = soaks.iter().find_map(|r| {
            r.summary.sustainable.as_ref()?;
            r.steps.first()
        });
        let _ = writeln!(
            o,
            "- Capacity that held for {:.0} s: {}.",
            step.duration_secs,
            match held {
                Some(h) => format!(
                    "**{} points/s** (p95 {:.0} ms)",
                    si(h.achieved_points_per_sec),
                    h.p95_ms()
                ),
                None => "none of the rates soaked held".into(),
            }
        );
    }

    o.push_str("\n## Open-model ramp\n\n");
    match &ramp {
        Some(r) => {
            let _ = writeln!(
                o,
                "Target `{}`; payloads: {}; config `{}`.\n",
                r.url, r.payloads, r.config
            );
            o.push_str(&ramp_table(&r.steps));
            for l in [retry_after_line(&r.steps), client_lag_line(&r.steps)]
                .into_iter()
                .flatten()
            {
                o.push('\n');
                o.push_str(&l);
            }
            let svg = dir.join(format!("{}.svg", inp.ramp_name));
            if svg.exists() {
                let from = inp.out.parent().unwrap_or(Path::new("."));
                let rel = relative_path(from, &svg);
                let _ = writeln!(
                    o,
                    "\n![ramp: achieved vs offered, p95 vs offered]({})",
                    rel.display()
                );
            }
        }
        None => {
            let _ = writeln!(o, "{nm}.");
        }
    }
    if !soaks.is_empty() {
        o.push_str("\n## Soak at the sustainable rate\n\n");
        o.push_str(
            "The ramp's sustainable rate offered again for minutes, after the ramp (so on a server that already holds its data): short steps can hide work the server defers, the engine's background merges above all. When it does not hold, the next lower ramp rate is soaked.\n",
        );
        for (i, r) in soaks.iter().enumerate() {
            let _ = writeln!(o, "\n### Soak {}\n", i + 1);
            o.push_str(&ramp_table(&r.steps));
            if let Some(l) = client_lag_line(&r.steps) {
                o.push('\n');
                o.push_str(&l);
            }
            if let Some(t) = stage_step_table(&r.steps) {
                o.push('\n');
                o.push_str(&t);
            }
        }
    }
    o.push_str("\n## Where the time goes\n\n");
    if let Some(v) = ramp
        .as_ref()
        .and_then(|r| limit_verdict(&r.steps, r.host.cores, r.summary.budget_ms))
    {
        o.push_str(&v);
        o.push_str("\n\n");
    }
    if let Some(t) = ramp.as_ref().and_then(|r| stage_step_table(&r.steps)) {
        o.push_str(&t);
        o.push('\n');
    }
    o.push_str(&cpu_by_thread_section(dir));
    o.push_str(&stage_section(dir));
    o.push_str("\n## Closed-model contrast\n\n");
    match &closed {
        Some(c) => {
            o.push_str(&closed_table(&c.steps));
            o.push_str("\nThe closed model never drops a request: past saturation its users simply wait, so its throughput looks healthy while latency grows without bound. Compare its p95 with the ramp's at the same achieved rate.\n");
        }
        None => {
            let _ = writeln!(o, "{nm}.");
        }
    }

    o.push_str(
        "\n## Method\n\n\
         - `chingest-load gen` pre-encodes the request bodies (50,000 points per request by default, 1,000 hosts × cpu/mem/disk/net, mixed float/integer/bool/string fields, deterministic seed); the client never encodes during a run and shares each body (`bytes::Bytes`) across requests without copying.\n\
         - `chingest-load ramp` (open model): each step offers a constant request rate for a fixed window; request *k* starts at `k / rate` whether or not earlier ones finished. When the in-flight cap is reached at a due time the request is counted as **dropped**, never sent late. 429 and 503 answers are counted as shed, apart from failures; `Retry-After` is recorded and not obeyed, because the server's shedding is part of what is measured.\n\
         - Each request is credited to the step that started it; achieved = points acknowledged with 2xx ÷ step window. Latency is measured from the actual send to the end of the response, in an HDR histogram (µs resolution, 3 significant digits), over successful writes only.\n\
         - **Sustainable** = the highest step with achieved ≥ 99% of offered and p95 ≤ the budget; **peak** = the highest achieved.\n\
         - CPU % per step is user+system time of the server (`/proc/<pid>/stat`) and of the load generator over the step window (100 = one core).\n\
         \n## Honesty notes\n\n\
         - The load generator runs on the same machine as the server and competes for the same cores; its own CPU % is in the table. A separate client machine would raise the end-to-end numbers, not lower them.\n\
         - Traffic is loopback HTTP/1.1; there is no network latency or bandwidth limit.\n\
         - The engine ceiling counts rows of its own bench tables (narrow or 4-field rows); end-to-end counts points (one row of several fields each). The ratio compares rows with points of the payload's shape.\n\
         - Durability is real end to end: a 204 is sent only after the WAL group commit is fsynced. The engine ceiling has no WAL.\n\
         - A short step window favours bursts a server can absorb in queues; latency percentiles show it when that happens.\n",
    );
    o.push_str(&components_section(dir));
    o.push_str("\n## Host\n\n");
    let host: Option<Host> = ramp
        .as_ref()
        .map(|r| r.host.clone())
        .or_else(|| closed.as_ref().map(|c| c.host.clone()));
    match host {
        Some(h) => o.push_str(&h.markdown()),
        None => {
            o.push_str(&crate::host::collect().markdown());
            o.push_str(
                "\n(collected when the report was generated: no end-to-end run was found)\n",
            );
        }
    }
    if let Some(h) = raw_json.as_ref().and_then(|v| v.get("host")) {
        let date = h
            .get("date")
            .and_then(|d| d.as_str())
            .unwrap_or("unknown date");
        let _ = writeln!(
            o,
            "\nThe engine ceiling was measured on {date} (see `chdb_raw.json`)."
        );
    }
    o
}

/// The component benchmarks' own tables (`chdb_raw.md`, `flush.md`,
/// `merge_cost.md`, `wal_commit.md`, `ingest_stages.md` in the results dir), embedded with their headings demoted,
/// so one page carries every figure of the run.
fn components_section(dir: &Path) -> String {
    let mut o = String::from("\n## Component benchmarks of this run\n");
    for (file, title) in [
        (
            "chdb_raw.md",
            "Engine ceiling (`cargo bench -p flush --bench chdb_raw`)",
        ),
        ("flush.md", "Flush (`cargo bench -p flush --bench flush`)"),
        (
            "merge_cost.md",
            "Engine merges (`cargo bench -p flush --bench merge_cost`)",
        ),
        (
            "wal_commit.md",
            "WAL durable commits (`cargo bench -p wal --bench wal_commit`)",
        ),
        (
            "ingest_stages.md",
            "Front door, per stage (`cargo run --release -p ingest --example stage_cpu`)",
        ),
    ] {
        let _ = writeln!(o, "\n### {title}\n");
        match std::fs::read_to_string(dir.join(file)) {
            Ok(text) => {
                for line in text.lines() {
                    // The file's own title is replaced by the heading above.
                    if line.starts_with("# ") {
                        continue;
                    }
                    if line.starts_with('#') {
                        let _ = writeln!(o, "##{line}");
                    } else {
                        let _ = writeln!(o, "{line}");
                    }
                }
            }
            Err(_) => o.push_str("not measured.\n"),
        }
    }
    o.push_str(
        "\nCriterion medians, instruction counts and the history of the front door's optimisations: \
         [ingest/benches/RESULTS.md](../ingest/benches/RESULTS.md) (`cargo bench -p ingest`; not regenerated by this script).\n",
    );
    o
}

/// Regenerates the every-layer report file.
pub fn regenerate(inp: &ReportInputs) -> Result<()> {
    write(&inp.out, every_layer_markdown(inp).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_rates_in_unknown_layouts() {
        let v = json!({
            "host": {"cpu": "x"},
            "results": [
                {"variant": "narrow", "rows": 1000, "rows_per_sec": 9.9e7, "mb_per_sec": 800.0},
                {"variant": "4 fields", "rows/s": 4.5e7},
                {"name": "other", "seconds": 2.0}
            ]
        });
        let r = find_rates(&v);
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(best(r), Some(("narrow".into(), 9.9e7)));
        let raw = json!({"results": [
            {"variant": "1 connection, narrow", "rows_per_s": 3e7, "verified": true},
            {"variant": "2 connections", "rows_per_s": 5e7, "verified": false},
            {"variant": "engine internal: INSERT … SELECT FROM numbers(N)", "rows_per_s": 2e8, "verified": true}
        ]});
        assert_eq!(
            best_engine(&raw),
            Some(("1 connection, narrow".into(), 3e7))
        );
        let flush = json!({"variants": [
            {"name": "chdb_raw 1 conn", "rows_per_s": 5e7},
            {"name": "flush 1 conn", "rows_per_s": 3e7}
        ]});
        assert_eq!(best_flush(&flush), Some(("flush 1 conn".into(), 3e7)));
        // The layout of flush/benches/flush.rs.
        let flush = json!({"results": [
            {"variant": "raw insert of the same rows (chdb_raw recipe)", "connections": 2, "points_per_s": 9e6, "ratio_to_raw": null},
            {"variant": "flusher: entries → coalesce → insert", "connections": 2, "points_per_s": 7e6, "ratio_to_raw": 0.78}
        ]});
        assert_eq!(
            best_flush(&flush),
            Some(("flusher: entries → coalesce → insert, 2 conn".into(), 7e6))
        );
    }

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

    #[test]
    fn late_client_is_flagged() {
        let mut t = crate::stats::Tally::default();
        t.record(
            &crate::stats::Outcome::Ok,
            std::time::Duration::from_millis(1),
            1,
        );
        let mut a = StepResult::from_tally(0, Some(1.0), None, 1.0, 1, 1, 0, Some(1), &t);
        a.sched_lag_p99_us = Some(500);
        assert_eq!(client_lag_line(std::slice::from_ref(&a)), None);
        let mut b = a.clone();
        b.index = 1;
        b.sched_lag_p99_us = Some(25_000);
        let line = client_lag_line(&[a, b]).unwrap();
        assert!(line.contains("step 1 (25.0 ms)"), "{line}");
    }

    #[test]
    fn relative_paths() {
        assert_eq!(
            relative_path(Path::new("docs"), Path::new("test_results/ramp.svg")),
            PathBuf::from("../test_results/ramp.svg")
        );
        assert_eq!(
            relative_path(Path::new("/a/b"), Path::new("/a/b/c.svg")),
            PathBuf::from("c.svg")
        );
    }

    #[test]
    fn missing_inputs_say_not_measured() {
        let d = tempfile::tempdir().unwrap();
        let inp = ReportInputs {
            results_dir: d.path().join("nothing-here"),
            out: d.path().join("docs/e2e.md"),
            ramp_name: "ramp".into(),
            closed_name: "closed".into(),
        };
        regenerate(&inp).unwrap();
        let md = std::fs::read_to_string(&inp.out).unwrap();
        assert!(md.contains("| not measured |"));
        assert!(md.contains("## Host"));
        assert!(!md.contains("NaN"));
    }

    #[test]
    fn a_soak_that_misses_the_budget_says_it_did_not_hold() {
        let d = tempfile::tempdir().unwrap();
        let soak_run = |n: usize, points: f64, p95_ms: u64| {
            let steps = vec![crate::summary::tests::step(0, points, points, p95_ms)];
            let r = RunResult {
                kind: "ramp".into(),
                tool: "test".into(),
                url: "http://127.0.0.1/write".into(),
                payloads: "test".into(),
                config: serde_json::json!({}),
                host: crate::host::collect(),
                summary: crate::summary::summarize(&steps, 250.0),
                steps,
            };
            let path = d.path().join(format!("soak_{n}.json"));
            std::fs::write(path, serde_json::to_vec(&r).unwrap()).unwrap();
        };
        let soak = |p95_ms: u64| {
            soak_run(1, 800_000.0, p95_ms);
            every_layer_markdown(&ReportInputs {
                results_dir: d.path().into(),
                out: d.path().join("e2e.md"),
                ramp_name: "ramp".into(),
                closed_name: "closed".into(),
            })
        };
        let md = soak(400);
        assert!(
            md.contains("**end-to-end soak** (the sustainable rate for 10 s, 800k offered: **did not hold**, p95 400 ms) | 800k |"),
            "{md}"
        );
        assert!(md.contains("held for 10 s (soak): **no**"), "{md}");
        assert!(
            md.contains("Capacity that held for 10 s: none of the rates soaked held."),
            "{md}"
        );
        assert!(md.contains("## Soak at the sustainable rate"), "{md}");
        let md = soak(200);
        assert!(
            md.contains("800k offered: held, p95 200 ms) | 800k |"),
            "{md}"
        );
        assert!(md.contains("held for 10 s (soak): **yes**"), "{md}");
        assert!(
            md.contains("Capacity that held for 10 s: **800k points/s** (p95 200 ms)."),
            "{md}"
        );
        // The sustainable rate fails, the next lower one holds.
        soak_run(2, 600_000.0, 120);
        let md = soak(400);
        assert!(
            md.contains("a lower ramp rate for 10 s, 600k offered: held, p95 120 ms) | 600k |"),
            "{md}"
        );
        assert!(
            md.contains("Capacity that held for 10 s: **600k points/s** (p95 120 ms)."),
            "{md}"
        );
        assert!(md.contains("### Soak 2"), "{md}");
    }

    #[test]
    fn engine_ceiling_ratio_appears() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("chdb_raw.json"),
            r#"{"variants":[{"variant":"narrow","rows_per_sec":4000000}],"host":{"date":"2026-11-22"}}"#,
        )
        .unwrap();
        std::fs::write(d.path().join("flush.json"), "not json").unwrap();
        let inp = ReportInputs {
            results_dir: d.path().into(),
            out: d.path().join("e2e.md"),
            ramp_name: "ramp".into(),
            closed_name: "closed".into(),
        };
        let md = every_layer_markdown(&inp);
        assert!(
            md.contains("engine ceiling (`chdb_raw`, narrow) | 4M | 100.0%"),
            "{md}"
        );
        assert!(md.contains("| flush | not measured |"), "{md}");
        assert!(md.contains("measured on 2026-11-22"));
    }

    #[test]
    fn the_limit_verdict_names_the_first_failing_step_and_the_cpu() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../test_results/ramp.json");
        let run: RunResult = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut steps: Vec<StepResult> = run.steps.into_iter().take(3).collect();
        for s in &mut steps {
            s.pct_of_offered = Some(100.0);
            s.latency.p95_us = 10_000;
        }
        assert_eq!(
            limit_verdict(&steps, 2, 250.0),
            None,
            "every step sustainable"
        );
        steps[1].pct_of_offered = Some(80.0);
        steps[1].server_cpu_pct = Some(190.0);
        let v = limit_verdict(&steps, 2, 250.0).unwrap();
        assert!(v.contains("is step 1 ("), "{v}");
        assert!(v.contains("190% CPU of the 200%"), "{v}");
        assert!(v.contains("CPU-bound"), "{v}");
    }
}
