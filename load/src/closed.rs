//! The closed model, for contrast: N virtual users each send, wait for the
//! answer, and send again. Throughput here is the server's pace, not a demand,
//! and latency grows with the user count without any drop ever being recorded —
//! which is exactly why the ramp, not this, decides capacity.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::client::Sender;
use crate::cpu::CpuMark;
use crate::error::{Error, Result};
use crate::stats::Tally;
use crate::summary::StepResult;

/// Most virtual users in one step.
pub const MAX_VUS: usize = 100_000;

/// Parameters of a closed-model run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClosedConfig {
    /// Virtual users, one step each, in order.
    pub vus: Vec<usize>,
    /// Length of each step, seconds (users stop starting new requests after it).
    pub step_secs: f64,
    /// p95 budget for the summary, ms.
    pub budget_ms: f64,
    /// Server process to sample CPU time from.
    pub server_pid: Option<u32>,
}

impl ClosedConfig {
    fn validate(&self) -> Result<()> {
        if self.vus.is_empty() || self.vus.iter().any(|&v| v == 0 || v > MAX_VUS) {
            return Err(Error::InvalidArgument(format!(
                "virtual users must be a non-empty list of 1..={MAX_VUS}"
            )));
        }
        if !(self.step_secs.is_finite() && self.step_secs > 0.0 && self.step_secs <= 86_400.0) {
            return Err(Error::InvalidArgument(
                "step seconds must be in (0, 86400]".into(),
            ));
        }
        Ok(())
    }
}

/// Runs the steps and returns one result per user count. A step's duration is
/// from its start until its last answer.
pub async fn run_closed(cfg: &ClosedConfig, sender: Arc<Sender>) -> Result<Vec<StepResult>> {
    cfg.validate()?;
    let seq = Arc::new(AtomicU64::new(0));
    let window = Duration::from_secs_f64(cfg.step_secs);
    let mut results = Vec::with_capacity(cfg.vus.len());
    for (i, &vus) in cfg.vus.iter().enumerate() {
        let tally = Arc::new(Mutex::new(Tally::default()));
        let before = CpuMark::now(cfg.server_pid);
        let start = Instant::now();
        let deadline = start + window;
        let users: Vec<_> = (0..vus)
            .map(|_| {
                let (sender, tally, seq) = (sender.clone(), tally.clone(), seq.clone());
                tokio::spawn(async move {
                    let mut sent = 0u64;
                    while Instant::now() < deadline {
                        let n = seq.fetch_add(1, Ordering::Relaxed);
                        let points = sender.payloads().get(n).points;
                        let t0 = Instant::now();
                        let outcome = sender.send(n).await;
                        let latency = t0.elapsed();
                        if let Ok(mut t) = tally.lock() {
                            t.record(&outcome, latency, points);
                        }
                        sent += 1;
                    }
                    sent
                })
            })
            .collect();
        let mut sent = 0;
        for u in users {
            // A user task only ends by returning; a join error would be a panic in it.
            sent += u.await.unwrap_or(0);
        }
        let elapsed = start.elapsed().as_secs_f64();
        let after = CpuMark::now(cfg.server_pid);
        let (server, client) = before.percent_until(&after);
        let t = tally.lock().unwrap_or_else(|p| p.into_inner());
        let mut r = StepResult::from_tally(i, None, Some(vus), elapsed, sent, sent, 0, None, &t);
        r.server_cpu_pct = server;
        r.client_cpu_pct = client;
        r.server_write_bytes = before.server_bytes_written_until(&after);
        eprintln!(
            "closed step {i}: {vus} users: {} requests, {:.0} points/s, p95 {:.1} ms",
            sent,
            r.achieved_points_per_sec,
            r.p95_ms()
        );
        results.push(r);
    }
    Ok(results)
}
