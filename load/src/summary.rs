//! Step results, run results and the summary rule.
//!
//! * **sustainable** = the highest offered step whose achieved rate is ≥ 99% of
//!   the offered rate **and** whose p95 latency (successful requests) is ≤ the budget;
//! * **peak** = the step with the highest achieved rate, whatever its latency.
//!
//! A closed-model step has no offered rate; it qualifies as sustainable when it
//! had no shed, failed, timed-out or transport-failed request and p95 ≤ budget.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::host::Host;
use crate::stages::StageTotal;
use crate::stats::{Latency, Tally};

/// Achieved must be at least this fraction of offered for a step to be sustainable.
pub const SUSTAINABLE_FRACTION: f64 = 0.99;

/// One step of a ramp (one offered rate) or of a closed run (one user count).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepResult {
    /// Position in the run, from 0.
    pub index: usize,
    /// Offered requests per second (open model only).
    pub offered_rps: Option<f64>,
    /// Virtual users (closed model only).
    pub vus: Option<usize>,
    /// Step length in seconds (the schedule window; closed: until the last answer).
    pub duration_secs: f64,
    /// Requests the schedule called for (open model) or sent (closed model).
    pub scheduled: u64,
    /// Requests actually started.
    pub started: u64,
    /// Scheduled requests not started because the in-flight cap was reached.
    pub dropped: u64,
    /// Offered points per second: points of every scheduled request ÷ duration (open model only).
    pub offered_points_per_sec: Option<f64>,
    /// Points of requests answered 2xx ÷ duration.
    pub achieved_points_per_sec: f64,
    /// Achieved ÷ offered × 100 (open model only).
    pub pct_of_offered: Option<f64>,
    /// Requests answered 2xx.
    pub ok: u64,
    /// Points in requests answered 2xx.
    pub ok_points: u64,
    /// Requests answered 429 (shed).
    pub shed_429: u64,
    /// Requests answered 503 (shed).
    pub shed_503: u64,
    /// Other non-2xx answers, by status.
    pub failed: BTreeMap<u16, u64>,
    /// Connection / protocol errors.
    pub transport_errors: u64,
    /// Requests without an answer within the timeout.
    pub timeouts: u64,
    /// `Retry-After` values received (recorded, not obeyed), by value.
    pub retry_after: BTreeMap<String, u64>,
    /// Latency of requests answered 2xx, measured from the actual send.
    pub latency: Latency,
    /// Latency of every answered request (including shed and failed ones).
    pub latency_all: Latency,
    /// Latency of shed answers by status (429, 503), from the actual send.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub shed_latency: BTreeMap<u16, Latency>,
    /// 99th percentile of how late the scheduler started requests (client health; open model).
    pub sched_lag_p99_us: Option<u64>,
    /// Server CPU % during the step (100 = one core), from `/proc/<pid>/stat`.
    pub server_cpu_pct: Option<f64>,
    /// Load generator CPU % during the step.
    pub client_cpu_pct: Option<f64>,
    /// Bytes the server wrote to storage during the step (`/proc/<pid>/io`
    /// `write_bytes`: WAL, RocksDB flushes and compactions, engine parts and
    /// merges, of this step's points and of earlier ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_write_bytes: Option<u64>,
    /// Server stage time during the step (from `/metrics` scrapes before and
    /// after it, when a metrics URL was given): observations and seconds per series.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stages: BTreeMap<String, StageTotal>,
    /// Server refusals during the step by the limit that tripped (from the
    /// same scrapes): `cpu_queue`, `bytes_budget`, `unflushed_points`, ….
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub refused_by_limit: BTreeMap<String, u64>,
}

impl StepResult {
    /// Builds a step from its counters. `offered_points` is `None` in the closed model.
    #[allow(clippy::too_many_arguments)]
    pub fn from_tally(
        index: usize,
        offered_rps: Option<f64>,
        vus: Option<usize>,
        duration_secs: f64,
        scheduled: u64,
        started: u64,
        dropped: u64,
        offered_points: Option<u64>,
        t: &Tally,
    ) -> StepResult {
        let secs = if duration_secs > 0.0 {
            duration_secs
        } else {
            f64::NAN
        };
        let achieved = if secs.is_nan() {
            0.0
        } else {
            t.ok_points as f64 / secs
        };
        let offered = offered_points.map(|p| if secs.is_nan() { 0.0 } else { p as f64 / secs });
        StepResult {
            index,
            offered_rps,
            vus,
            duration_secs,
            scheduled,
            started,
            dropped,
            offered_points_per_sec: offered,
            achieved_points_per_sec: achieved,
            pct_of_offered: offered.filter(|o| *o > 0.0).map(|o| achieved / o * 100.0),
            ok: t.ok,
            ok_points: t.ok_points,
            shed_429: t.shed_429,
            shed_503: t.shed_503,
            failed: t.failed.clone(),
            transport_errors: t.transport_errors,
            timeouts: t.timeouts,
            retry_after: t.retry_after.clone(),
            latency: t.ok_latency.summary(),
            latency_all: t.all_latency.summary(),
            shed_latency: t
                .shed_latency
                .iter()
                .map(|(s, h)| (*s, h.summary()))
                .collect(),
            sched_lag_p99_us: None,
            server_cpu_pct: None,
            client_cpu_pct: None,
            server_write_bytes: None,
            stages: BTreeMap::new(),
            refused_by_limit: BTreeMap::new(),
        }
    }

    /// Failed + transport + timeouts (shed answers are counted apart).
    pub fn failures(&self) -> u64 {
        self.failed.values().sum::<u64>() + self.transport_errors + self.timeouts
    }

    /// p95 of successful requests in milliseconds.
    pub fn p95_ms(&self) -> f64 {
        self.latency.p95_us as f64 / 1000.0
    }

    fn qualifies(&self, budget_ms: f64) -> bool {
        if self.latency.count == 0 || self.p95_ms() > budget_ms {
            return false;
        }
        match self.offered_points_per_sec {
            Some(offered) => {
                offered > 0.0 && self.achieved_points_per_sec >= SUSTAINABLE_FRACTION * offered
            }
            None => self.shed_429 + self.shed_503 + self.failures() == 0,
        }
    }

    fn order_key(&self) -> f64 {
        self.offered_points_per_sec
            .or(self.vus.map(|v| v as f64))
            .unwrap_or(self.index as f64)
    }
}

/// A step picked by the summary rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pick {
    /// Index of the step in the run.
    pub step: usize,
    /// Its offered points/s (open model).
    pub offered_points_per_sec: Option<f64>,
    /// Its achieved points/s.
    pub achieved_points_per_sec: f64,
    /// Its p95 latency in milliseconds.
    pub p95_ms: f64,
}

impl Pick {
    fn of(s: &StepResult) -> Pick {
        Pick {
            step: s.index,
            offered_points_per_sec: s.offered_points_per_sec,
            achieved_points_per_sec: s.achieved_points_per_sec,
            p95_ms: s.p95_ms(),
        }
    }
}

/// The two numbers a run reduces to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The latency budget applied to p95, ms.
    pub budget_ms: f64,
    /// Highest qualifying step, or `None` when no step qualifies.
    pub sustainable: Option<Pick>,
    /// Step with the highest achieved rate, or `None` when nothing succeeded.
    pub peak: Option<Pick>,
}

/// Applies the summary rule (see the module docs).
pub fn summarize(steps: &[StepResult], budget_ms: f64) -> Summary {
    let sustainable = steps
        .iter()
        .filter(|s| s.qualifies(budget_ms))
        // Highest step by offered rate (or users); ties go to the later step.
        .max_by(|a, b| a.order_key().total_cmp(&b.order_key()))
        .map(Pick::of);
    let peak = steps
        .iter()
        .filter(|s| s.achieved_points_per_sec > 0.0)
        .max_by(|a, b| {
            a.achieved_points_per_sec
                .total_cmp(&b.achieved_points_per_sec)
        })
        .map(Pick::of);
    Summary {
        budget_ms,
        sustainable,
        peak,
    }
}

/// A whole run as written to `test_results/<name>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// `ramp` (open model) or `closed`.
    pub kind: String,
    /// `chingest-load <version>`.
    pub tool: String,
    /// Target URL, credentials redacted.
    pub url: String,
    /// What was sent.
    pub payloads: String,
    /// Run parameters (rates, step length, caps, ...).
    pub config: serde_json::Value,
    /// Where it ran.
    pub host: Host,
    /// The steps, in order.
    pub steps: Vec<StepResult>,
    /// Sustainable and peak.
    pub summary: Summary,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::stats::Latency;

    pub(crate) fn step(i: usize, offered: f64, achieved: f64, p95_ms: u64) -> StepResult {
        StepResult {
            index: i,
            offered_rps: Some(offered / 1000.0),
            vus: None,
            duration_secs: 10.0,
            scheduled: 0,
            started: 0,
            dropped: 0,
            offered_points_per_sec: Some(offered),
            achieved_points_per_sec: achieved,
            pct_of_offered: Some(achieved / offered * 100.0),
            ok: 1,
            ok_points: 1,
            shed_429: 0,
            shed_503: 0,
            failed: BTreeMap::new(),
            transport_errors: 0,
            timeouts: 0,
            retry_after: BTreeMap::new(),
            latency: Latency {
                count: 10,
                p95_us: p95_ms * 1000,
                ..Latency::default()
            },
            latency_all: Latency::default(),
            shed_latency: BTreeMap::new(),
            sched_lag_p99_us: None,
            server_cpu_pct: None,
            client_cpu_pct: None,
            server_write_bytes: None,
            stages: BTreeMap::new(),
            refused_by_limit: BTreeMap::new(),
        }
    }

    #[test]
    fn sustainable_is_highest_qualifying_and_peak_is_highest_achieved() {
        let steps = [
            step(0, 100.0, 100.0, 10),
            step(1, 200.0, 199.0, 20),  // exactly 99.5%: qualifies
            step(2, 300.0, 296.0, 300), // achieved ok but p95 over budget
            step(3, 400.0, 350.0, 100), // 87.5%: short of 99%
            step(4, 500.0, 320.0, 900),
        ];
        let s = summarize(&steps, 250.0);
        assert_eq!(s.sustainable.as_ref().map(|p| p.step), Some(1));
        assert_eq!(s.peak.as_ref().map(|p| p.step), Some(3));
        assert_eq!(s.peak.unwrap().achieved_points_per_sec, 350.0);
    }

    #[test]
    fn boundaries_are_inclusive() {
        // Exactly 99% and exactly the budget both qualify.
        let s = summarize(&[step(0, 1000.0, 990.0, 250)], 250.0);
        assert_eq!(s.sustainable.map(|p| p.step), Some(0));
        let s = summarize(&[step(0, 1000.0, 989.9, 250)], 250.0);
        assert_eq!(s.sustainable, None);
        let s = summarize(&[step(0, 1000.0, 1000.0, 251)], 250.0);
        assert_eq!(s.sustainable, None);
    }

    #[test]
    fn no_step_qualifies() {
        let steps = [step(0, 100.0, 50.0, 10), step(1, 200.0, 199.0, 5000)];
        let s = summarize(&steps, 250.0);
        assert_eq!(s.sustainable, None);
        assert_eq!(s.peak.map(|p| p.step), Some(1));
    }

    #[test]
    fn empty_and_all_failed_runs() {
        let s = summarize(&[], 250.0);
        assert_eq!((s.sustainable, s.peak), (None, None));
        let mut dead = step(0, 100.0, 0.0, 0);
        dead.latency = Latency::default();
        let s = summarize(&[dead], 250.0);
        assert_eq!((s.sustainable, s.peak), (None, None));
    }

    #[test]
    fn a_noisy_low_step_does_not_hide_a_higher_qualifying_one() {
        let steps = [step(0, 100.0, 90.0, 10), step(1, 200.0, 200.0, 10)];
        assert_eq!(
            summarize(&steps, 250.0).sustainable.map(|p| p.step),
            Some(1)
        );
    }

    #[test]
    fn closed_steps_qualify_without_errors_only() {
        let mut a = step(0, 1.0, 100.0, 10);
        a.offered_points_per_sec = None;
        a.vus = Some(4);
        let mut b = a.clone();
        b.index = 1;
        b.vus = Some(16);
        b.shed_503 = 1;
        let s = summarize(&[a, b], 250.0);
        assert_eq!(s.sustainable.map(|p| p.step), Some(0));
    }

    #[test]
    fn from_tally_computes_rates() {
        let mut t = Tally::default();
        t.record(
            &crate::stats::Outcome::Ok,
            std::time::Duration::from_millis(5),
            500,
        );
        let s = StepResult::from_tally(0, Some(2.0), None, 2.0, 4, 1, 3, Some(2000), &t);
        assert_eq!(s.offered_points_per_sec, Some(1000.0));
        assert_eq!(s.achieved_points_per_sec, 250.0);
        assert_eq!(s.pct_of_offered, Some(25.0));
        assert_eq!(s.latency.count, 1);
    }
}
