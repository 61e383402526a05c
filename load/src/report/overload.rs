//! The overload run's markdown: its own page (`NAME.md`, with the timeline)
//! and the section of the every-layer page: the verdicts against issue #15's
//! targets, one row per phase, refusals by server limit, the memory budget,
//! how busy the machine was, and the host.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::cells::{failed_cell, lat_cells, ms, opt_pct};
use super::files::{read_json, write, write_json};
use super::notes::client_lag_line;
use crate::chart::si;
use crate::error::Result;
use crate::overload::result::{OverloadResult, PhaseResult};
use crate::stats::Latency;

/// The base name of the overload results the every-layer page reads.
pub const OVERLOAD_NAME: &str = "overload";

/// Seconds per row of the timeline table.
const TIMELINE_ROW_SECS: usize = 5;

/// What the budget and the numbers leave out (chingest's settings: the page is chingest's).
const NOTES: &str = "What the numbers include and exclude:\n\n\
    - Accepted = points in requests answered 2xx ÷ the phase's window, each request credited to the phase that sent it; offered counts every request due, dropped ones included.\n\
    - Acknowledged latency is over 2xx answers; refusal latency over 429 and 503 answers (whatever limit refused), both from the actual send to the end of the answer, so a refusal's time includes sending its body as far as the server read it. Requests the load generator dropped at its own in-flight cap were never sent and have no latency.\n\
    - RSS is the server's `VmRSS` (`/proc/<pid>/status`), sampled at a fixed interval over each phase's window: it includes the engine (chDB runs in the server's process), RocksDB and the allocator's retained pages.\n\
    - The budget sums the memory-bounding settings on top of the idle server's measured baseline. It does not contain the engine's working memory for inserts and merges (chingest does not cap the engine's memory; chDB's own server limit applies) nor the parsed form of in-flight requests (bounded by `limits.max_inflight_points`, not by bytes): the verdict compares the peak with the budget, it does not prove the budget is a hard ceiling.\n\
    - The load generator shares the machine's cores with the server unless the run pinned them (the host block counts the load generator's cores), and other processes may share them too: the load average before and after the run says how busy the machine was. docs/reliability.md (Overload) has runs with smaller requests and with a core for each program.\n";

/// Writes `DIR/NAME.json` and `DIR/NAME.md`. Returns the paths.
pub fn write_overload(dir: &Path, name: &str, r: &OverloadResult) -> Result<Vec<PathBuf>> {
    let json_path = write_json(dir, name, r)?;
    let md_path = dir.join(format!("{name}.md"));
    write(&md_path, overload_markdown(r).as_bytes())?;
    Ok(vec![json_path, md_path])
}

/// The overload run's own page.
pub fn overload_markdown(r: &OverloadResult) -> String {
    let mut o = String::from("# chingest-load overload: 1×, 2×, 1× the sustainable rate\n\n");
    let _ = writeln!(
        o,
        "- Target: `{}`\n- Payloads: {}\n- Tool: {}\n- Config: `{}`\n",
        r.url, r.payloads, r.tool, r.config
    );
    o.push_str(&body(r, "##"));
    o.push_str("\n## Timeline\n\n");
    o.push_str(&timeline_table(r));
    o
}

/// The every-layer page's section: from `overload.json` in `dir`, or "not measured".
pub(super) fn section(dir: &Path) -> String {
    let mut o = String::from("\n## Overload: twice the sustainable rate (issue #15)\n\n");
    let run = read_json(&dir.join(format!("{OVERLOAD_NAME}.json")))
        .and_then(|v| serde_json::from_value::<OverloadResult>(v).ok());
    match run {
        Some(r) => o.push_str(&body(&r, "###")),
        None => {
            o.push_str("not measured (`ONLY=overload scripts/bench.sh` writes `overload.json`).\n")
        }
    }
    o
}

/// Everything but the title: method, verdicts, phases, limits, memory, machine, host.
fn body(r: &OverloadResult, h: &str) -> String {
    let mut o = method(r);
    o.push_str(&verdicts(r));
    o.push('\n');
    o.push_str(&phase_table(&r.phases));
    o.push('\n');
    o.push_str(&limits_line(&r.phases));
    o.push_str(&budget_line(r));
    o.push_str(&machine_line(r));
    let steps: Vec<_> = r.phases.iter().map(|p| p.step.clone()).collect();
    if let Some(l) = client_lag_line(&steps) {
        o.push('\n');
        o.push_str(&l);
    }
    o.push('\n');
    o.push_str(NOTES);
    let _ = writeln!(o, "\n{h} Host of the overload run\n");
    o.push_str(&r.host.markdown());
    o
}

/// How the run was made: the base rate, its source, the phases.
fn method(r: &OverloadResult) -> String {
    let c = &r.config;
    let num = |k: &str| c.get(k).and_then(|v| v.as_f64()).unwrap_or(f64::NAN);
    let phases: Vec<String> = r
        .phases
        .iter()
        .map(|p| format!("{} for {:.0} s", p.name, p.step.duration_secs))
        .collect();
    let base_points = r
        .phases
        .first()
        .and_then(|p| p.step.offered_points_per_sec)
        .map(si)
        .unwrap_or_else(|| "?".into());
    format!(
        "Open model against a fresh server, requests of {}: the sustainable rate (1× = {} req/s, {base_points} points/s; from {}), then {}: {}, back to back. Requests start on schedule whatever the server does; one due while {} are in flight is dropped, never sent late. `Retry-After` is recorded, not obeyed.\n\n",
        r.payloads,
        num("base_rps"),
        c.get("base_source").and_then(|v| v.as_str()).unwrap_or("?"),
        phases.get(1).cloned().unwrap_or_default(),
        phases.join(", "),
        num("max_in_flight"),
    )
}

/// `met` / `not met` / `not measured`.
fn met(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "**met**",
        Some(false) => "**not met**",
        None => "not measured",
    }
}

/// The three verdicts, with their numbers.
fn verdicts(r: &OverloadResult) -> String {
    let (v, t) = (&r.verdicts, &r.targets);
    let mut o = String::new();
    let refusals: u64 = r.refusal_latency.values().map(|l| l.count).sum();
    let by_status: Vec<String> = r
        .refusal_latency
        .iter()
        .map(|(s, l)| format!("{s}: {} (n = {})", p50_p99(l), l.count))
        .collect();
    let _ = writeln!(
        o,
        "- Refusals answered within {:.0} ms at p99: {} ({}).",
        t.refusal_p99_ms,
        met(v.refusals_fast),
        match v.refusal_p99_ms {
            Some(p) => format!(
                "p99 {} ms over {refusals} refusals; p50 / p99 ms by status: {}",
                ms((p * 1000.0) as u64),
                by_status.join(", ")
            ),
            None => "the server refused nothing".into(),
        }
    );
    let _ = writeln!(
        o,
        "- Resident memory under the configured budget: {} (peak {} MiB, budget {} MiB).",
        met(v.rss_within_budget),
        opt_mib(v.rss_peak_bytes),
        opt_mib(r.memory_budget.total_bytes)
    );
    let (first, last) = (r.phases.first(), r.phases.last());
    let _ = writeln!(
        o,
        "- Full throughput back at 1× (≥ {:.0}% of the first 1× phase): {} ({}; {}).",
        t.recovery_fraction * 100.0,
        met(v.recovered),
        match (v.recovery, first, last) {
            (Some(x), Some(a), Some(b)) => format!(
                "the last phase accepted {} points/s, {:.1}% of the first's {}",
                si(b.step.achieved_points_per_sec),
                x * 100.0,
                si(a.step.achieved_points_per_sec)
            ),
            _ => "no accepted points to compare".into(),
        },
        back_text(v)
    );
    let _ = writeln!(
        o,
        "- Requests without an answer (connection errors, timeouts): {}.",
        v.unanswered
    );
    o
}

/// When throughput came back and refusals stopped after the load dropped back.
fn back_text(v: &crate::overload::result::Verdicts) -> String {
    let back = match v.throughput_back_after_drop_secs {
        Some(s) => format!(
            "throughput back {s} s after the load dropped back (first {}-s window at the target rate)",
            crate::overload::timeline::WINDOW_SECS
        ),
        None => "no window after the drop reached the target rate".into(),
    };
    let refusals = match v.last_refusal_after_drop_secs {
        Some(s) => format!("the last refused request was sent {s} s after the drop"),
        None => "nothing refused after the drop".into(),
    };
    format!("{back}; {refusals}")
}

/// `p50 / p99` in ms.
fn p50_p99(l: &Latency) -> String {
    format!("{} / {}", ms(l.p50_us), ms(l.p99_us))
}

fn mib(bytes: u64) -> String {
    format!("{:.0}", bytes as f64 / (1u64 << 20) as f64)
}

fn opt_mib(bytes: Option<u64>) -> String {
    bytes.map(mib).unwrap_or_else(|| "?".into())
}

/// One row per phase.
fn phase_table(phases: &[PhaseResult]) -> String {
    let mut o = String::from(
        "| phase | offered req/s | offered points/s | accepted points/s | % of offered | ack p50 ms | ack p95 ms | ack p99 ms | 503 | 503 p50 / p99 ms | 429 | 429 p50 / p99 ms | dropped | failed | RSS p99 MiB | RSS peak MiB | server CPU % | client CPU % |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|\n",
    );
    for p in phases {
        let s = &p.step;
        let refusal = |status: u16| {
            s.shed_latency
                .get(&status)
                .filter(|l| l.count > 0)
                .map(p50_p99)
                .unwrap_or_else(|| "–".into())
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            p.name,
            s.offered_rps.map(|r| format!("{r}")).unwrap_or_default(),
            s.offered_points_per_sec.map(si).unwrap_or_default(),
            si(s.achieved_points_per_sec),
            s.pct_of_offered
                .map(|v| format!("{v:.1}"))
                .unwrap_or_default(),
            lat_cells(s),
            s.shed_503,
            refusal(503),
            s.shed_429,
            refusal(429),
            s.dropped,
            failed_cell(s),
            opt_mib(p.rss.map(|r| r.p99_bytes)),
            opt_mib(p.rss.map(|r| r.peak_bytes)),
            opt_pct(s.server_cpu_pct),
            opt_pct(s.client_cpu_pct),
        );
    }
    o
}

/// Which server limits refused, per phase (from `/metrics`).
fn limits_line(phases: &[PhaseResult]) -> String {
    let parts: Vec<String> = phases
        .iter()
        .filter(|p| !p.step.refused_by_limit.is_empty())
        .map(|p| {
            let l: Vec<String> = p
                .step
                .refused_by_limit
                .iter()
                .map(|(k, v)| format!("`{k}` ×{v}"))
                .collect();
            format!("{}: {}", p.name, l.join(", "))
        })
        .collect();
    if parts.is_empty() {
        return "Refusals by server limit (`chingest_backpressure_rejections_total`, connection cap): none counted (or `/metrics` not scraped).\n".into();
    }
    format!(
        "Refusals by server limit (`chingest_backpressure_rejections_total` by `limit`, and the connection cap; from `/metrics` around each phase): {}.\n",
        parts.join("; ")
    )
}

/// The memory budget, term by term.
fn budget_line(r: &OverloadResult) -> String {
    let b = &r.memory_budget;
    let mut terms = vec![format!(
        "the idle server's resident set before the load {} MiB (engine, catalog, pools)",
        opt_mib(b.baseline_rss_bytes)
    )];
    terms.extend(
        b.parts
            .iter()
            .map(|p| format!("`{}` {} MiB", p.name, mib(p.bytes))),
    );
    format!(
        "\n**Memory budget** {} MiB = {}.\n",
        opt_mib(b.total_bytes),
        terms.join(" + ")
    )
}

/// How busy the machine was.
fn machine_line(r: &OverloadResult) -> String {
    let or_q = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
    format!(
        "\nMachine load (`/proc/loadavg`, 1 / 5 / 15 min): {} before the run, {} after it, on {} cores.\n",
        or_q(&r.loadavg_before),
        or_q(&r.loadavg_after),
        r.host.cores
    )
}

/// Every [`TIMELINE_ROW_SECS`] seconds by send time: accepted points/s, refusals, failures.
fn timeline_table(r: &OverloadResult) -> String {
    let mut o = format!(
        "Requests by send time, {TIMELINE_ROW_SECS} s per row: accepted points/s over the row, requests refused (429/503) and failed.\n\n\
         | from s | phase | accepted points/s | refused | failed |\n|---:|---|---:|---:|---:|\n"
    );
    let mut bounds = Vec::new();
    let mut t = 0.0;
    for p in &r.phases {
        t += p.step.duration_secs;
        bounds.push((t, p.name.as_str()));
    }
    for (row, chunk) in r.timeline.chunks(TIMELINE_ROW_SECS).enumerate() {
        let from = row * TIMELINE_ROW_SECS;
        let phase = bounds
            .iter()
            .find(|(end, _)| (from as f64) < *end)
            .map_or("(answers after the end)", |(_, n)| *n);
        let points: u64 = chunk.iter().map(|s| s.ok_points).sum();
        let _ = writeln!(
            o,
            "| {from} | {phase} | {} | {} | {} |",
            si(points as f64 / chunk.len() as f64),
            chunk.iter().map(|s| s.refused).sum::<u64>(),
            chunk.iter().map(|s| s.failed).sum::<u64>(),
        );
    }
    o
}
