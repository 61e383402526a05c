//! The run sections of the page: the open-model ramp, the soaks, where the
//! server's time goes, and the closed-model contrast.

use std::fmt::Write as _;
use std::path::Path;

use super::inputs::{ramp_svg_link, ReportInputs, Results};
use super::NOT_MEASURED;
use crate::report::notes::{client_lag_line, disk_line, notes};
use crate::report::server::{cpu_by_thread_section, stage_section};
use crate::report::tables::{closed_table, ramp_table, stage_step_table};
use crate::report::verdict::limit_verdict;
use crate::summary::RunResult;

/// The ramp's table, its notes and a link to its chart.
pub(super) fn ramp(r: &Results, inp: &ReportInputs) -> String {
    let mut o = String::from("\n## Open-model ramp\n\n");
    let Some(run) = &r.ramp else {
        let _ = writeln!(o, "{NOT_MEASURED}.");
        return o;
    };
    let _ = writeln!(
        o,
        "Target `{}`; payloads: {}; config `{}`.\n",
        run.url, run.payloads, run.config
    );
    o.push_str(&ramp_table(&run.steps));
    for l in notes(&run.steps) {
        o.push('\n');
        o.push_str(&l);
    }
    if let Some(rel) = ramp_svg_link(inp) {
        let _ = writeln!(
            o,
            "\n![ramp: achieved vs offered, p95 vs offered]({})",
            rel.display()
        );
    }
    o
}

/// Each soak's table, client warning and stage table; empty without soaks.
pub(super) fn soaks(soaks: &[RunResult]) -> String {
    if soaks.is_empty() {
        return String::new();
    }
    let mut o = String::from("\n## Soak at the sustainable rate\n\n");
    o.push_str(
        "The ramp's sustainable rate offered again for minutes, after the ramp (so on a server that already holds its data): short steps can hide work the server defers, the engine's background merges above all. When it does not hold, the next lower ramp rate is soaked.\n",
    );
    for (i, r) in soaks.iter().enumerate() {
        let _ = writeln!(o, "\n### Soak {}\n", i + 1);
        o.push_str(&ramp_table(&r.steps));
        for l in [client_lag_line(&r.steps), disk_line(&r.steps)]
            .into_iter()
            .flatten()
        {
            o.push('\n');
            o.push_str(&l);
        }
        if let Some(t) = stage_step_table(&r.steps) {
            o.push('\n');
            o.push_str(&t);
        }
    }
    o
}

/// The verdict and the ramp's stage table, then the server's CPU by thread and stage histograms.
pub(super) fn time(r: &Results, dir: &Path) -> String {
    let mut o = String::from("\n## Where the time goes\n\n");
    if let Some(run) = &r.ramp {
        if let Some(v) = limit_verdict(&run.steps, run.host.cores, run.summary.budget_ms) {
            o.push_str(&v);
            o.push_str("\n\n");
        }
        if let Some(t) = stage_step_table(&run.steps) {
            o.push_str(&t);
            o.push('\n');
        }
    }
    o.push_str(&cpu_by_thread_section(dir));
    o.push_str(&stage_section(dir));
    o
}

/// The closed model's table and why it is no capacity.
pub(super) fn closed(r: &Results) -> String {
    let mut o = String::from("\n## Closed-model contrast\n\n");
    match &r.closed {
        Some(c) => {
            o.push_str(&closed_table(&c.steps));
            o.push_str("\nThe closed model never drops a request: past saturation its users simply wait, so its throughput looks healthy while latency grows without bound. Compare its p95 with the ramp's at the same achieved rate.\n");
        }
        None => {
            let _ = writeln!(o, "{NOT_MEASURED}.");
        }
    }
    o
}
