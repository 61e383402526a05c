//! The open model: requests start at a constant arrival rate, on schedule,
//! whatever the server does.
//!
//! A closed-loop client waits for an answer before sending again, so a slow
//! server slows the client down and the test reports the server's pace as if it
//! were the demand ("coordinated omission"). Here request `k` of a step is due at
//! `step start + k / rate`; when it is due and the in-flight cap is reached, it
//! is **dropped** (counted, never sent late), so the offered load stays what was
//! asked for and overload shows up as drops, shed answers and latency.
//!
//! Steps run back to back with no pause. Each request's outcome is credited to
//! the step that started it, even when it completes during a later step; the run
//! ends after every request has completed or timed out.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use std::collections::BTreeMap;

use hyper::Uri;

use crate::client::{Sender, Target};
use crate::cpu::CpuMark;
use crate::error::{Error, Result};
use crate::refusals;
use crate::stages::{self, StageTotal, MAX_METRICS_BYTES};
use crate::stats::{LatencyHist, Outcome, Tally};
use crate::summary::StepResult;

/// Most requests one step may schedule (keeps a typo like `--rates 1e9` bounded).
pub const MAX_REQUESTS_PER_STEP: u64 = 10_000_000;

/// One constant-rate step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// Requests per second.
    pub rate: f64,
    /// Step length.
    pub duration: Duration,
}

impl Step {
    /// A step, checked: positive finite rate, non-zero duration, bounded request count.
    pub fn new(rate: f64, duration: Duration) -> Result<Step> {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(Error::InvalidArgument(format!(
                "rate {rate} must be positive"
            )));
        }
        if duration.is_zero() {
            return Err(Error::InvalidArgument(
                "step duration must be positive".into(),
            ));
        }
        let s = Step { rate, duration };
        if s.count() > MAX_REQUESTS_PER_STEP {
            return Err(Error::InvalidArgument(format!(
                "rate {rate}/s for {:?} is more than {MAX_REQUESTS_PER_STEP} requests",
                duration
            )));
        }
        Ok(s)
    }

    /// Requests in the step: the due times `k / rate` that fall inside
    /// `[0, duration)`, i.e. `ceil(rate × seconds)`.
    pub fn count(&self) -> u64 {
        let n = self.rate * self.duration.as_secs_f64();
        // Guard against 19.999999 → 20 style float noise before the ceiling.
        let r = n.round();
        if (n - r).abs() < 1e-9 {
            r as u64
        } else {
            n.ceil() as u64
        }
    }

    /// When request `k` is due, relative to the step start.
    pub fn offset(&self, k: u64) -> Duration {
        Duration::from_secs_f64(k as f64 / self.rate)
    }
}

/// The in-flight cap. A permit is held for the life of a request.
#[derive(Debug)]
pub struct InFlight {
    cap: usize,
    current: AtomicUsize,
}

/// Proof of one in-flight slot; frees it on drop.
#[derive(Debug)]
pub struct Permit(Arc<InFlight>);

impl Drop for Permit {
    fn drop(&mut self) {
        self.0.current.fetch_sub(1, Ordering::AcqRel);
    }
}

impl InFlight {
    /// A cap of `cap` concurrent requests (at least 1).
    pub fn new(cap: usize) -> Arc<InFlight> {
        Arc::new(InFlight {
            cap: cap.max(1),
            current: AtomicUsize::new(0),
        })
    }

    /// Takes a slot if one is free; never waits.
    pub fn try_acquire(self: &Arc<Self>) -> Option<Permit> {
        self.current
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| {
                (c < self.cap).then_some(c + 1)
            })
            .ok()
            .map(|_| Permit(self.clone()))
    }

    /// Requests in flight now.
    pub fn current(&self) -> usize {
        self.current.load(Ordering::Acquire)
    }
}

/// One due request handed to the launcher.
#[derive(Debug)]
pub struct Tick {
    /// Position in the step.
    pub k: u64,
    /// How late the scheduler got to it.
    pub lag: Duration,
    /// The in-flight slot, or `None` when the cap was reached (the request is dropped).
    pub permit: Option<Permit>,
}

/// What the scheduler itself counted in a step.
#[derive(Debug, Default)]
pub struct ScheduleTally {
    /// Requests due.
    pub scheduled: u64,
    /// Requests started (a permit was free).
    pub started: u64,
    /// Requests dropped at the cap.
    pub dropped: u64,
    /// Scheduler lateness.
    pub lag: LatencyHist,
}

/// Runs one step: at each due time, offers a [`Tick`] to `launch`, which must
/// start the request (and keep the permit until it completes) when it got one.
pub async fn run_step(
    step: &Step,
    inflight: &Arc<InFlight>,
    mut launch: impl FnMut(Tick),
) -> ScheduleTally {
    let start = Instant::now();
    let mut t = ScheduleTally::default();
    for k in 0..step.count() {
        let due = start + step.offset(k);
        tokio::time::sleep_until(due).await;
        let lag = Instant::now().saturating_duration_since(due);
        t.lag.record(lag);
        t.scheduled += 1;
        let permit = inflight.try_acquire();
        if permit.is_some() {
            t.started += 1;
        } else {
            t.dropped += 1;
        }
        launch(Tick { k, lag, permit });
    }
    // The step lasts its full window even when the last request is due early.
    tokio::time::sleep_until(start + step.duration).await;
    t
}

/// Parameters of an open-model ramp.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RampConfig {
    /// Offered requests per second, one step each, in order.
    pub rates: Vec<f64>,
    /// Length of each step, seconds.
    pub step_secs: f64,
    /// In-flight cap; a request due while it is reached is dropped.
    pub max_in_flight: usize,
    /// p95 budget for the sustainable rule, ms.
    pub budget_ms: f64,
    /// Server process to sample CPU time from.
    pub server_pid: Option<u32>,
    /// The server's Prometheus endpoint, scraped before and after each step
    /// for per-stage time (`chingest_*_seconds` histograms). The step-end scrape
    /// runs beside the next step, so work right at a boundary may land in either step.
    #[serde(default)]
    pub metrics_url: Option<String>,
}

impl RampConfig {
    /// The steps, checked.
    pub fn steps(&self) -> Result<Vec<Step>> {
        if self.rates.is_empty() {
            return Err(Error::InvalidArgument("no rates given".into()));
        }
        if !(self.step_secs.is_finite() && self.step_secs > 0.0 && self.step_secs <= 86_400.0) {
            return Err(Error::InvalidArgument(
                "step seconds must be in (0, 86400]".into(),
            ));
        }
        let d = Duration::from_secs_f64(self.step_secs);
        self.rates.iter().map(|&r| Step::new(r, d)).collect()
    }
}

/// What a run needs besides its steps: the in-flight cap, the server process
/// to sample CPU time from, and its Prometheus endpoint.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunOptions {
    /// In-flight cap; a request due while it is reached is dropped.
    pub max_in_flight: usize,
    /// Server process to sample CPU time from.
    pub server_pid: Option<u32>,
    /// The server's Prometheus endpoint, scraped before the run and after each step.
    pub metrics_url: Option<String>,
}

impl RampConfig {
    /// The options of a run of this ramp.
    pub fn options(&self) -> RunOptions {
        RunOptions {
            max_in_flight: self.max_in_flight,
            server_pid: self.server_pid,
            metrics_url: self.metrics_url.clone(),
        }
    }
}

/// Sees every finished request: when it was sent (from the run's start), how
/// it ended, how long it took and how many points it carried.
pub type Observer = Arc<dyn Fn(Duration, &Outcome, Duration, u64) + Send + Sync>;

/// One finished step of a ramp, before its requests have all answered.
struct OpenStep {
    offered_points: u64,
    sched: ScheduleTally,
    tally: Arc<Mutex<Tally>>,
    cpu: (Option<f64>, Option<f64>),
    server_write_bytes: Option<u64>,
}

impl OpenStep {
    /// The step's result, once every request it started has ended.
    fn result(self, i: usize, step: &Step, before: &Scrape, after: &Scrape) -> StepResult {
        // A poisoned lock only means a request task panicked; keep its counts.
        let t = self.tally.lock().unwrap_or_else(|p| p.into_inner());
        let mut r = StepResult::from_tally(
            i,
            Some(step.rate),
            None,
            step.duration.as_secs_f64(),
            self.sched.scheduled,
            self.sched.started,
            self.sched.dropped,
            Some(self.offered_points),
            &t,
        );
        r.sched_lag_p99_us = Some(self.sched.lag.summary().p99_us);
        (r.server_cpu_pct, r.client_cpu_pct) = self.cpu;
        r.server_write_bytes = self.server_write_bytes;
        r.stages = stages::delta(&before.stages, &after.stages);
        r.refused_by_limit = refusals::delta(&before.refusals, &after.refusals);
        r
    }
}

/// One scrape of the server's `/metrics`: stage totals and refusals by limit.
#[derive(Debug, Clone, Default)]
struct Scrape {
    stages: BTreeMap<String, StageTotal>,
    refusals: BTreeMap<String, f64>,
}

/// Scrapes the server; empty when there is no URL or it fails.
async fn scrape(sender: &Sender, uri: Option<&Uri>) -> Scrape {
    let Some(uri) = uri else {
        return Scrape::default();
    };
    match sender.get_text(uri, MAX_METRICS_BYTES).await {
        Some(text) => Scrape {
            stages: stages::parse(&text),
            refusals: refusals::parse(&text),
        },
        None => Scrape::default(),
    }
}

/// Runs the ramp and returns one result per step.
pub async fn run_ramp(cfg: &RampConfig, sender: Arc<Sender>) -> Result<Vec<StepResult>> {
    run_steps(&cfg.steps()?, &cfg.options(), sender, None).await
}

/// Runs `steps` back to back (each at its own rate and length) and returns one
/// result per step; `observer`, when given, sees every finished request.
pub async fn run_steps(
    steps: &[Step],
    opts: &RunOptions,
    sender: Arc<Sender>,
    observer: Option<Observer>,
) -> Result<Vec<StepResult>> {
    let metrics = opts
        .metrics_url
        .as_deref()
        .map(Target::parse_uri)
        .transpose()?;
    let first_scrape = scrape(&sender, metrics.as_ref()).await;
    // Scrapes at step ends run beside the load, so a slow /metrics never
    // opens a gap between steps.
    let mut scrapes = Vec::with_capacity(steps.len());
    let inflight = InFlight::new(opts.max_in_flight);
    let run = Run {
        seq: AtomicU64::new(0),
        start: Instant::now(),
        observer,
    };
    let mut done = Vec::with_capacity(steps.len());
    for (i, step) in steps.iter().enumerate() {
        let s = open_step(step, &inflight, &run, &sender, opts.server_pid).await;
        let (s2, m2) = (sender.clone(), metrics.clone());
        scrapes.push(tokio::spawn(async move { scrape(&s2, m2.as_ref()).await }));
        eprintln!(
            "step {i}: {:.1} req/s for {}s: started {}, dropped {}, in flight {}",
            step.rate,
            step.duration.as_secs_f64(),
            s.sched.started,
            s.sched.dropped,
            inflight.current()
        );
        done.push(s);
    }
    // Every request ends (answer or its own timeout), so this wait is bounded.
    while inflight.current() > 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut prev = first_scrape;
    let mut results = Vec::with_capacity(steps.len());
    for (i, ((s, step), h)) in done.into_iter().zip(steps).zip(scrapes).enumerate() {
        let cur = h.await.unwrap_or_default();
        results.push(s.result(i, step, &prev, &cur));
        prev = cur;
    }
    Ok(results)
}

/// What every step of one run shares: the request counter (request `n` of
/// the run sends payload `n`), the run's start and the observer.
struct Run {
    seq: AtomicU64,
    start: Instant,
    observer: Option<Observer>,
}

/// Runs one step of a ramp: every due request that gets a slot is sent on a
/// task of its own.
async fn open_step(
    step: &Step,
    inflight: &Arc<InFlight>,
    run: &Run,
    sender: &Arc<Sender>,
    server_pid: Option<u32>,
) -> OpenStep {
    let tally = Arc::new(Mutex::new(Tally::default()));
    let mut offered_points = 0u64;
    let before = CpuMark::now(server_pid);
    let sched = run_step(step, inflight, |tick| {
        let n = run.seq.fetch_add(1, Ordering::Relaxed);
        let points = sender.payloads().get(n).points;
        offered_points += points;
        let Some(permit) = tick.permit else { return };
        let sender = sender.clone();
        let tally = tally.clone();
        let observer = run.observer.clone();
        let run_start = run.start;
        tokio::spawn(async move {
            let t0 = Instant::now();
            let outcome = sender.send(n).await;
            let latency = t0.elapsed();
            if let Ok(mut t) = tally.lock() {
                t.record(&outcome, latency, points);
            }
            if let Some(o) = observer {
                o(t0.duration_since(run_start), &outcome, latency, points);
            }
            drop(permit);
        });
    })
    .await;
    let after = CpuMark::now(server_pid);
    OpenStep {
        offered_points,
        sched,
        tally,
        cpu: before.percent_until(&after),
        server_write_bytes: before.server_bytes_written_until(&after),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_counts_and_offsets() {
        let s = Step::new(10.0, Duration::from_secs(2)).unwrap();
        assert_eq!(s.count(), 20);
        assert_eq!(s.offset(0), Duration::ZERO);
        assert_eq!(s.offset(5), Duration::from_millis(500));
        assert_eq!(s.offset(19), Duration::from_millis(1900));
        // Fractional rates: 2.5/s over 1 s is due at 0, 0.4, 0.8 s.
        let s = Step::new(2.5, Duration::from_secs(1)).unwrap();
        assert_eq!(s.count(), 3);
        assert_eq!(s.offset(2), Duration::from_millis(800));
        // 0.1 × 30 is 3.0000000000000004 in floating point: still 3.
        assert_eq!(Step::new(0.1, Duration::from_secs(30)).unwrap().count(), 3);
        // A slow rate still offers its first request at t = 0.
        assert_eq!(Step::new(0.5, Duration::from_secs(1)).unwrap().count(), 1);
    }

    #[test]
    fn step_rejects_nonsense() {
        let d = Duration::from_secs(1);
        assert!(Step::new(0.0, d).is_err());
        assert!(Step::new(-1.0, d).is_err());
        assert!(Step::new(f64::NAN, d).is_err());
        assert!(Step::new(1.0, Duration::ZERO).is_err());
        assert!(Step::new(1e12, d).is_err());
    }

    #[test]
    fn in_flight_cap() {
        let f = InFlight::new(2);
        let a = f.try_acquire().unwrap();
        let _b = f.try_acquire().unwrap();
        assert!(f.try_acquire().is_none());
        assert_eq!(f.current(), 2);
        drop(a);
        assert!(f.try_acquire().is_some());
    }

    /// Paused tokio time makes this exact: every 10 ms a request is due, each
    /// takes 45 ms, the cap is 2. In every 50 ms window two start and three are
    /// dropped, so 100 due requests give 40 started and 60 dropped.
    #[tokio::test(start_paused = true)]
    async fn drops_at_the_cap_and_never_delays() {
        let step = Step::new(100.0, Duration::from_secs(1)).unwrap();
        let inflight = InFlight::new(2);
        let starts = Arc::new(Mutex::new(Vec::new()));
        let t0 = Instant::now();
        let tally = run_step(&step, &inflight, |tick| {
            if let Some(permit) = tick.permit {
                starts.lock().unwrap().push((tick.k, t0.elapsed()));
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(45)).await;
                    drop(permit);
                });
            }
        })
        .await;
        assert_eq!(tally.scheduled, 100);
        assert_eq!(tally.started, 40);
        assert_eq!(tally.dropped, 60);
        assert_eq!(
            tally.lag.summary().max_us,
            1,
            "paused clock: nothing is late"
        );
        // Started requests went out exactly on their due time, never later.
        for (k, at) in starts.lock().unwrap().iter() {
            assert_eq!(*at, step.offset(*k));
            assert!(k % 5 < 2, "request {k} should have been dropped");
        }
        // The step lasts its window.
        assert_eq!(t0.elapsed(), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn no_drops_when_the_server_keeps_up() {
        let step = Step::new(50.0, Duration::from_secs(2)).unwrap();
        let inflight = InFlight::new(1);
        let tally = run_step(&step, &inflight, |tick| {
            if let Some(permit) = tick.permit {
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(15)).await;
                    drop(permit);
                });
            }
        })
        .await;
        assert_eq!(
            (tally.scheduled, tally.started, tally.dropped),
            (100, 100, 0)
        );
    }
}
