//! Overload: the sustainable rate, then `factor` × it, then the sustainable
//! rate again (issue #15's "overload test at ~2× the sustainable rate").
//!
//! The phases are open-model steps run back to back ([`crate::schedule`]), so
//! the offered load does not bend to the server. Beside them the server's
//! resident memory is sampled ([`rss`]) and every request is placed on a
//! per-second [`timeline`] by send time. The [`result`] answers the three
//! questions of the issue: are refusals fast (p99 by status), does memory stay
//! under the configured budget, and does full throughput come back when the
//! load drops.

pub mod result;
pub mod rss;
pub mod timeline;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::client::{redact_url, Sender};
use crate::error::{Error, Result};
use crate::schedule::{run_steps, Observer, RunOptions, Step};
use result::{loadavg, BudgetPart, MemoryBudget, OverloadResult, PhaseResult, Targets, Verdicts};
use rss::RssSummary;
use timeline::Timeline;

/// How long the idle server is sampled for its baseline before the load.
const BASELINE: Duration = Duration::from_secs(1);

/// Parameters of an overload run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverloadConfig {
    /// The sustainable rate (1×), requests per second.
    pub base_rps: f64,
    /// Where the base rate comes from (for the report), e.g. `soak_2.json (held 180 s)`.
    pub base_source: String,
    /// The overload multiple of the base rate.
    pub factor: f64,
    /// Seconds at 1× first (warm).
    pub warm_secs: f64,
    /// Seconds at `factor` × the base rate.
    pub overload_secs: f64,
    /// Seconds at 1× after the overload.
    pub recover_secs: f64,
    /// In-flight cap of the load generator; a request due while it is reached is dropped.
    pub max_in_flight: usize,
    /// Server process: CPU time per phase, resident memory.
    pub server_pid: Option<u32>,
    /// The server's Prometheus endpoint: stage time and refusals by limit per phase.
    pub metrics_url: Option<String>,
    /// Resident memory sampling interval, ms.
    pub rss_every_ms: u64,
    /// The memory-bounding settings summed into the budget.
    pub budget_parts: Vec<BudgetPart>,
    /// What is judged.
    pub targets: Targets,
}

impl OverloadConfig {
    /// The three phases: name, factor, seconds.
    pub fn phases(&self) -> Vec<(String, f64, f64)> {
        let x = |f: f64| format!("{}×", (f * 100.0).round() / 100.0);
        vec![
            (format!("{} (warm)", x(1.0)), 1.0, self.warm_secs),
            (
                format!("{} (overload)", x(self.factor)),
                self.factor,
                self.overload_secs,
            ),
            (format!("{} (after)", x(1.0)), 1.0, self.recover_secs),
        ]
    }

    /// The phases as schedule steps, checked.
    pub fn steps(&self) -> Result<Vec<Step>> {
        if !(self.factor.is_finite() && self.factor > 0.0) {
            return Err(Error::InvalidArgument(
                "the overload factor must be positive".into(),
            ));
        }
        if self.rss_every_ms == 0 {
            return Err(Error::InvalidArgument(
                "the RSS interval must be positive".into(),
            ));
        }
        self.phases()
            .into_iter()
            .map(|(_, f, secs)| {
                if !(secs.is_finite() && secs > 0.0 && secs <= 86_400.0) {
                    return Err(Error::InvalidArgument(format!(
                        "phase length {secs} s must be in (0, 86400]"
                    )));
                }
                Step::new(self.base_rps * f, Duration::from_secs_f64(secs))
            })
            .collect()
    }
}

/// Runs the three phases against `sender`'s target and judges them.
pub async fn run_overload(cfg: &OverloadConfig, sender: Arc<Sender>) -> Result<OverloadResult> {
    let steps = cfg.steps()?;
    let every = Duration::from_millis(cfg.rss_every_ms);
    let baseline_rss_bytes = match cfg.server_pid {
        Some(pid) => baseline(pid, every).await,
        None => None,
    };
    let loadavg_before = loadavg();
    let start = Instant::now();
    let sampler = cfg
        .server_pid
        .map(|pid| rss::spawn_sampler(pid, every, start));
    let timeline = Arc::new(Mutex::new(Timeline::default()));
    let t = timeline.clone();
    let observer: Observer = Arc::new(move |at, outcome, latency, points| {
        if let Ok(mut t) = t.lock() {
            t.record(at, outcome, latency, points);
        }
    });
    let opts = RunOptions {
        max_in_flight: cfg.max_in_flight,
        server_pid: cfg.server_pid,
        metrics_url: cfg.metrics_url.clone(),
    };
    let results = run_steps(&steps, &opts, sender.clone(), Some(observer)).await?;
    let samples = match sampler {
        Some((samples, task)) => {
            task.abort();
            let s = samples.lock().unwrap_or_else(|p| p.into_inner());
            s.clone()
        }
        None => Vec::new(),
    };
    let loadavg_after = loadavg();
    let mut phases = Vec::with_capacity(results.len());
    let mut from = Duration::ZERO;
    for ((name, factor, _), (step, result)) in
        cfg.phases().into_iter().zip(steps.iter().zip(results))
    {
        let to = from + step.duration;
        phases.push(PhaseResult {
            name,
            factor,
            step: result,
            rss: RssSummary::of(&rss::window(&samples, from, to)),
        });
        from = to;
    }
    let memory_budget = MemoryBudget::new(baseline_rss_bytes, cfg.budget_parts.clone());
    let t = timeline.lock().unwrap_or_else(|p| p.into_inner());
    let refusal_latency = t.refusal_latency();
    let verdicts = Verdicts::judge(
        &phases,
        &refusal_latency,
        &memory_budget,
        t.seconds(),
        &cfg.targets,
    );
    Ok(OverloadResult {
        kind: "overload".into(),
        tool: format!("chingest-load {}", env!("CARGO_PKG_VERSION")),
        url: redact_url(&sender.url()),
        payloads: sender.payloads().description.clone(),
        config: serde_json::to_value(cfg).unwrap_or_default(),
        host: crate::host::collect(),
        loadavg_before,
        loadavg_after,
        memory_budget,
        phases,
        refusal_latency,
        timeline: t.seconds().to_vec(),
        targets: cfg.targets,
        verdicts,
    })
}

/// The idle server's resident bytes: the median of a second of samples.
async fn baseline(pid: u32, every: Duration) -> Option<u64> {
    let (samples, task) = rss::spawn_sampler(pid, every.min(BASELINE / 4), Instant::now());
    tokio::time::sleep(BASELINE).await;
    task.abort();
    let s = samples.lock().unwrap_or_else(|p| p.into_inner());
    let v: Vec<u64> = s.iter().map(|(_, b)| *b).collect();
    RssSummary::of(&v).map(|r| r.p50_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> OverloadConfig {
        OverloadConfig {
            base_rps: 16.0,
            base_source: "test".into(),
            factor: 2.0,
            warm_secs: 30.0,
            overload_secs: 60.0,
            recover_secs: 60.0,
            max_in_flight: 64,
            server_pid: None,
            metrics_url: None,
            rss_every_ms: 250,
            budget_parts: vec![],
            targets: Targets::default(),
        }
    }

    #[test]
    fn three_phases_at_1x_2x_1x() {
        let c = cfg();
        let names: Vec<String> = c.phases().into_iter().map(|p| p.0).collect();
        assert_eq!(names, ["1× (warm)", "2× (overload)", "1× (after)"]);
        let steps = c.steps().unwrap();
        assert_eq!(
            steps.iter().map(|s| s.rate).collect::<Vec<_>>(),
            [16.0, 32.0, 16.0]
        );
        assert_eq!(steps[1].count(), 32 * 60);
        let mut bad = cfg();
        bad.factor = 0.0;
        assert!(bad.steps().is_err());
        let mut bad = cfg();
        bad.warm_secs = 0.0;
        assert!(bad.steps().is_err());
        let mut bad = cfg();
        bad.rss_every_ms = 0;
        assert!(bad.steps().is_err());
    }
}
