//! What an overload run writes to `test_results/<name>.json`: the phases, the
//! server's memory against its configured budget, the timeline, and the
//! verdicts against issue #15's targets.

use serde::{Deserialize, Serialize};

use super::rss::RssSummary;
use super::timeline::{last_refusal_after, throughput_back_after, Second};
use crate::host::Host;
use crate::stats::Latency;
use crate::summary::StepResult;

/// One memory-bounding server setting, e.g. `limits.max_inflight_bytes`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetPart {
    /// The setting (or an expression of settings) it comes from.
    pub name: String,
    /// Bytes it allows.
    pub bytes: u64,
}

impl std::str::FromStr for BudgetPart {
    type Err = String;

    /// `NAME=BYTES`, e.g. `limits.max_unflushed_bytes=1073741824`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, bytes) = s
            .rsplit_once('=')
            .ok_or_else(|| format!("{s:?}: expected NAME=BYTES"))?;
        let bytes = bytes
            .trim()
            .parse()
            .map_err(|_| format!("{s:?}: {bytes:?} is not a byte count"))?;
        Ok(BudgetPart {
            name: name.trim().to_string(),
            bytes,
        })
    }
}

/// The memory the server may use by its configuration: its idle baseline
/// (measured before the load) plus what each memory-bounding setting allows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryBudget {
    /// Resident bytes of the idle server before the first phase (median of a
    /// second of samples): engine, catalog, pools, allocator.
    pub baseline_rss_bytes: Option<u64>,
    /// The settings summed on top of the baseline.
    pub parts: Vec<BudgetPart>,
    /// Baseline plus parts; `None` without a baseline or without parts.
    pub total_bytes: Option<u64>,
}

impl MemoryBudget {
    /// The budget of `parts` on top of `baseline`.
    pub fn new(baseline_rss_bytes: Option<u64>, parts: Vec<BudgetPart>) -> MemoryBudget {
        let total_bytes = baseline_rss_bytes
            .filter(|_| !parts.is_empty())
            .map(|b| b + parts.iter().map(|p| p.bytes).sum::<u64>());
        MemoryBudget {
            baseline_rss_bytes,
            parts,
            total_bytes,
        }
    }
}

/// Issue #15's targets for the overload test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Targets {
    /// Refusals answered within this, at p99, ms.
    pub refusal_p99_ms: f64,
    /// The final 1× phase must accept at least this fraction of the first's rate.
    pub recovery_fraction: f64,
}

impl Default for Targets {
    fn default() -> Self {
        Targets {
            refusal_p99_ms: 100.0,
            recovery_fraction: 0.95,
        }
    }
}

/// One phase: a constant offered rate for a while.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseResult {
    /// `1× (warm)`, `2× (overload)`, `1× (after)`.
    pub name: String,
    /// Multiple of the base rate.
    pub factor: f64,
    /// Offered and accepted rates, latency of acknowledged writes and of
    /// refusals by status, refusal counts, refusals by server limit, CPU.
    pub step: StepResult,
    /// The server's resident memory during the phase's window.
    pub rss: Option<RssSummary>,
}

/// The verdicts, each `None` when it could not be measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdicts {
    /// The slowest status's p99 refusal latency over the run, ms (`None`: no refusal).
    pub refusal_p99_ms: Option<f64>,
    /// Refusal p99 within the target.
    pub refusals_fast: Option<bool>,
    /// Requests without an answer (connection errors, timeouts) over the run.
    pub unanswered: u64,
    /// Highest RSS sample of the run, bytes.
    pub rss_peak_bytes: Option<u64>,
    /// Peak RSS within the memory budget.
    pub rss_within_budget: Option<bool>,
    /// Accepted rate of the last phase ÷ that of the first.
    pub recovery: Option<f64>,
    /// Recovery at or above the target.
    pub recovered: Option<bool>,
    /// Seconds from the load dropping back to the end of the last second
    /// whose requests were refused (`None`: no refusal after the drop).
    pub last_refusal_after_drop_secs: Option<u64>,
    /// Seconds from the load dropping back until a 5-second window accepts
    /// the recovery fraction of the first phase's rate (`None`: never).
    #[serde(default)]
    pub throughput_back_after_drop_secs: Option<u64>,
}

impl Verdicts {
    /// Judges `phases` (the first and last are the 1× phases) against `targets`.
    pub fn judge(
        phases: &[PhaseResult],
        refusal_latency: &std::collections::BTreeMap<u16, Latency>,
        budget: &MemoryBudget,
        seconds: &[Second],
        targets: &Targets,
    ) -> Verdicts {
        let refusal_p99_ms = refusal_latency
            .values()
            .filter(|l| l.count > 0)
            .map(|l| l.p99_us as f64 / 1000.0)
            .max_by(f64::total_cmp);
        let rss_peak_bytes = phases
            .iter()
            .filter_map(|p| p.rss.map(|r| r.peak_bytes))
            .max();
        let recovery = match (phases.first(), phases.last()) {
            (Some(a), Some(b)) if phases.len() > 1 && a.step.achieved_points_per_sec > 0.0 => {
                Some(b.step.achieved_points_per_sec / a.step.achieved_points_per_sec)
            }
            _ => None,
        };
        let drop_at = phases
            .iter()
            .take(phases.len().saturating_sub(1))
            .map(|p| p.step.duration_secs)
            .sum::<f64>()
            .round() as usize;
        let wanted = phases
            .first()
            .map(|p| p.step.achieved_points_per_sec * targets.recovery_fraction)
            .filter(|r| *r > 0.0);
        Verdicts {
            refusal_p99_ms,
            refusals_fast: refusal_p99_ms.map(|p| p <= targets.refusal_p99_ms),
            unanswered: phases
                .iter()
                .map(|p| p.step.transport_errors + p.step.timeouts)
                .sum(),
            rss_peak_bytes,
            rss_within_budget: rss_peak_bytes
                .zip(budget.total_bytes)
                .map(|(peak, total)| peak <= total),
            recovery,
            recovered: recovery.map(|r| r >= targets.recovery_fraction),
            last_refusal_after_drop_secs: last_refusal_after(seconds, drop_at),
            throughput_back_after_drop_secs: wanted
                .and_then(|r| throughput_back_after(seconds, drop_at, r)),
        }
    }
}

/// A whole overload run as written to `test_results/<name>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverloadResult {
    /// Always `overload`.
    pub kind: String,
    /// `chingest-load <version>`.
    pub tool: String,
    /// Target URL, credentials redacted.
    pub url: String,
    /// What was sent.
    pub payloads: String,
    /// Run parameters.
    pub config: serde_json::Value,
    /// Where it ran.
    pub host: Host,
    /// `/proc/loadavg` (1, 5, 15 min) just before the first phase: how busy
    /// the machine already was.
    pub loadavg_before: Option<String>,
    /// `/proc/loadavg` right after the last phase.
    pub loadavg_after: Option<String>,
    /// The server's configured memory budget.
    pub memory_budget: MemoryBudget,
    /// The phases in order.
    pub phases: Vec<PhaseResult>,
    /// Refusal latency over the whole run, by status.
    pub refusal_latency: std::collections::BTreeMap<u16, Latency>,
    /// Second by second, by send time.
    pub timeline: Vec<Second>,
    /// The targets judged.
    pub targets: Targets,
    /// The verdicts.
    pub verdicts: Verdicts,
}

/// The first three fields of `/proc/loadavg`.
pub fn loadavg() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let f: Vec<&str> = text.split_whitespace().take(3).collect();
    (f.len() == 3).then(|| f.join(" "))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::summary::tests::step;

    fn phase(name: &str, factor: f64, achieved: f64, peak: u64) -> PhaseResult {
        PhaseResult {
            name: name.into(),
            factor,
            step: step(0, 1000.0 * factor, achieved, 10),
            rss: RssSummary::of(&[peak / 2, peak]),
        }
    }

    #[test]
    fn budget_parts_parse_and_sum() {
        let p: BudgetPart = "limits.max_inflight_bytes=268435456".parse().unwrap();
        assert_eq!(
            (p.name.as_str(), p.bytes),
            ("limits.max_inflight_bytes", 268_435_456)
        );
        assert!("no-equals".parse::<BudgetPart>().is_err());
        assert!("x=lots".parse::<BudgetPart>().is_err());
        let b = MemoryBudget::new(Some(100), vec![p.clone()]);
        assert_eq!(b.total_bytes, Some(268_435_556));
        assert_eq!(MemoryBudget::new(None, vec![p]).total_bytes, None);
        assert_eq!(MemoryBudget::new(Some(100), vec![]).total_bytes, None);
    }

    #[test]
    fn verdicts_against_the_targets() {
        let phases = [
            phase("1×", 1.0, 1000.0, 500),
            phase("2×", 2.0, 1200.0, 900),
            phase("1×", 1.0, 960.0, 600),
        ];
        let mut lat = BTreeMap::new();
        lat.insert(
            503,
            Latency {
                count: 10,
                p99_us: 80_000,
                ..Latency::default()
            },
        );
        // Each phase lasts 10 s: the drop is at second 20; refusals until
        // second 22, 950 points/s from second 23 on.
        let mut seconds = vec![Second::default(); 30];
        seconds[15].refused = 3;
        seconds[21].refused = 1;
        for s in &mut seconds[23..] {
            s.ok_points = 950;
        }
        let budget = MemoryBudget::new(
            Some(100),
            vec![BudgetPart {
                name: "x".into(),
                bytes: 800,
            }],
        );
        let t = Targets::default();
        let v = Verdicts::judge(&phases, &lat, &budget, &seconds, &t);
        assert_eq!(v.refusal_p99_ms, Some(80.0));
        assert_eq!(v.refusals_fast, Some(true));
        assert_eq!(
            (v.rss_peak_bytes, v.rss_within_budget),
            (Some(900), Some(true))
        );
        assert_eq!(v.recovery, Some(0.96));
        assert_eq!(v.recovered, Some(true));
        assert_eq!(v.last_refusal_after_drop_secs, Some(2));
        assert_eq!(v.throughput_back_after_drop_secs, Some(3));
        // Slow refusals, memory over the budget, a slow recovery.
        lat.get_mut(&503).unwrap().p99_us = 150_000;
        let small = MemoryBudget::new(
            Some(100),
            vec![BudgetPart {
                name: "x".into(),
                bytes: 700,
            }],
        );
        let mut slow = phases.clone();
        slow[2].step.achieved_points_per_sec = 900.0;
        let v = Verdicts::judge(&slow, &lat, &small, &seconds, &t);
        assert_eq!(
            (v.refusals_fast, v.rss_within_budget, v.recovered),
            (Some(false), Some(false), Some(false))
        );
        // Nothing refused, no budget: not measured rather than met.
        let v = Verdicts::judge(
            &phases,
            &BTreeMap::new(),
            &MemoryBudget::new(None, vec![]),
            &[],
            &t,
        );
        assert_eq!(
            (v.refusal_p99_ms, v.refusals_fast, v.rss_within_budget),
            (None, None, None)
        );
        assert_eq!(v.last_refusal_after_drop_secs, None);
        assert_eq!(v.throughput_back_after_drop_secs, None);
    }
}
