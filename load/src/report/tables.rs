//! The step tables: open-model ramp, closed model, and server stage time per step.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::cells::{failed_cell, lat_cells, opt_pct, short_stage};
use crate::chart::si;
use crate::summary::StepResult;

/// Stages shown in the per-step stage table (those with the most total time).
const STAGE_COLUMNS: usize = 6;

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

/// Per-step server stage time (busy seconds per wall second) for the stages
/// with the most total time; `None` when no step has stage data.
pub fn stage_step_table(steps: &[StepResult]) -> Option<String> {
    let keys = busiest_stages(steps);
    if keys.is_empty() {
        return None;
    }
    let mut o = String::from(
        "Server stage time per step, from `/metrics` scraped around each step: seconds spent in the stage per second of wall clock (1.0 = one thread busy all the time; mean ms per observation in brackets).\n\n| step | offered points/s |",
    );
    for k in &keys {
        let _ = write!(o, " `{}` |", short_stage(k));
    }
    o.push_str("\n|---:|---:|");
    o.push_str(&"---:|".repeat(keys.len()));
    o.push('\n');
    for s in steps {
        stage_row(&mut o, s, &keys);
    }
    Some(o)
}

/// The stages with the most seconds over all steps, most first, at most [`STAGE_COLUMNS`].
fn busiest_stages(steps: &[StepResult]) -> Vec<&str> {
    let mut totals = BTreeMap::<&str, f64>::new();
    for s in steps {
        for (k, t) in &s.stages {
            *totals.entry(k.as_str()).or_default() += t.seconds;
        }
    }
    let mut keys: Vec<(&str, f64)> = totals.into_iter().collect();
    keys.sort_by(|a, b| b.1.total_cmp(&a.1));
    keys.truncate(STAGE_COLUMNS);
    keys.into_iter().map(|(k, _)| k).collect()
}

/// One step's row: busy seconds per wall second and mean ms per observation, per stage.
fn stage_row(o: &mut String, s: &StepResult, keys: &[&str]) {
    let _ = write!(
        o,
        "| {} | {} |",
        s.index,
        s.offered_points_per_sec.map(si).unwrap_or_default()
    );
    for k in keys {
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
