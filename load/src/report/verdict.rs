//! The verdict: what holds the server back, read off the first step that
//! missed the sustainable rule.

use super::cells::short_stage;
use crate::chart::si;
use crate::summary::StepResult;

/// Server CPU above this share of the cores reads as CPU-bound.
const CPU_BOUND: f64 = 0.85;
/// Working stages named in the verdict.
const STAGES_NAMED: usize = 4;

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
        o.push_str(&cpu_sentence(cpu, cores));
    }
    o.push_str(&stages_sentence(step));
    Some(o)
}

/// The server's CPU against what the cores allow.
fn cpu_sentence(cpu: f64, cores: usize) -> String {
    let of = (cores.max(1) * 100) as f64;
    format!(
        " The server used {cpu:.0}% CPU of the {of:.0}% that {cores} cores allow{}.",
        if cpu >= CPU_BOUND * of {
            " (with the load generator's share, the machine is CPU-bound)"
        } else {
            ""
        }
    )
}

/// The busiest working stages of `step` (HTTP totals and waits left out); empty without any.
fn stages_sentence(step: &StepResult) -> String {
    let mut work: Vec<(&String, f64)> = step
        .stages
        .iter()
        .filter(|(k, t)| {
            !k.contains("http_request_duration") && !k.contains("wait") && t.count > 0.0
        })
        .map(|(k, t)| (k, t.seconds / step.duration_secs.max(1e-9)))
        .collect();
    if work.is_empty() {
        return String::new();
    }
    work.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut o = String::from(" Busiest working stages there (wall seconds in the stage per second, including time waiting for a core; `flush_batch` contains `chdb_insert`): ");
    let parts: Vec<String> = work
        .iter()
        .take(STAGES_NAMED)
        .map(|(k, v)| format!("`{}` {v:.2}", short_stage(k)))
        .collect();
    o.push_str(&parts.join(", "));
    o.push_str(
        ". Waiting stages (queue and WAL waits) grow on top of these once the cores are busy.",
    );
    o
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::summary::RunResult;

    #[test]
    fn the_limit_verdict_names_the_first_failing_step_and_the_cpu() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report/full/ramp.json");
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
