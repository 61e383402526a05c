//! The server's resident memory, sampled from `/proc/<pid>/status` (`VmRSS`)
//! at a fixed interval beside the load, and summarised per phase.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

/// `VmRSS` in bytes from the text of a `/proc/<pid>/status` file.
pub fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let mut f = line.split_whitespace().skip(1);
    let n: u64 = f.next()?.parse().ok()?;
    match f.next() {
        Some("kB") | None => Some(n * 1024),
        _ => None,
    }
}

/// Resident bytes of `pid` now; `None` when the process is gone or unreadable.
pub fn read_rss(pid: u32) -> Option<u64> {
    parse_vm_rss(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
}

/// Percentiles of the samples taken during a phase, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RssSummary {
    /// Samples taken.
    pub samples: usize,
    /// Median.
    pub p50_bytes: u64,
    /// 99th percentile (nearest rank).
    pub p99_bytes: u64,
    /// Highest sample.
    pub peak_bytes: u64,
}

impl RssSummary {
    /// The summary of `samples`; `None` when there are none.
    pub fn of(samples: &[u64]) -> Option<RssSummary> {
        let mut v = samples.to_vec();
        v.sort_unstable();
        let rank = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        (!v.is_empty()).then(|| RssSummary {
            samples: v.len(),
            p50_bytes: rank(0.50),
            p99_bytes: rank(0.99),
            peak_bytes: v[v.len() - 1],
        })
    }
}

/// Samples taken so far: (time since the sampler started, resident bytes).
pub type Samples = Arc<Mutex<Vec<(Duration, u64)>>>;

/// Samples `pid` every `every` until the returned handle is aborted. Ticks the
/// runtime could not serve on time are skipped, not bunched up.
pub fn spawn_sampler(
    pid: u32,
    every: Duration,
    start: Instant,
) -> (Samples, tokio::task::JoinHandle<()>) {
    let samples: Samples = Arc::default();
    let out = samples.clone();
    let task = tokio::spawn(async move {
        let mut tick = tokio::time::interval_at(start, every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tick.tick().await;
            let Some(rss) = read_rss(pid) else { continue };
            if let Ok(mut s) = out.lock() {
                s.push((start.elapsed(), rss));
            }
        }
    });
    (samples, task)
}

/// The samples whose time falls in `[from, to)`.
pub fn window(samples: &[(Duration, u64)], from: Duration, to: Duration) -> Vec<u64> {
    samples
        .iter()
        .filter(|(t, _)| *t >= from && *t < to)
        .map(|(_, b)| *b)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vm_rss_in_bytes() {
        let status = "Name:\tchingest\nVmPeak:\t 999 kB\nVmRSS:\t  123456 kB\nThreads:\t40\n";
        assert_eq!(parse_vm_rss(status), Some(123_456 * 1024));
        assert_eq!(parse_vm_rss("Name: x\n"), None);
        assert_eq!(parse_vm_rss("VmRSS: 12 MB\n"), None);
        // This process has a resident set.
        assert!(read_rss(std::process::id()).unwrap() > 1 << 20);
    }

    #[test]
    fn percentiles_and_windows() {
        let v: Vec<u64> = (1..=200).collect();
        let s = RssSummary::of(&v).unwrap();
        assert_eq!(
            (s.samples, s.p50_bytes, s.p99_bytes, s.peak_bytes),
            (200, 100, 198, 200)
        );
        assert_eq!(RssSummary::of(&[7]).unwrap().p99_bytes, 7);
        assert_eq!(RssSummary::of(&[]), None);
        let ms = Duration::from_millis;
        let samples = [(ms(0), 1), (ms(250), 2), (ms(500), 3), (ms(750), 4)];
        assert_eq!(window(&samples, ms(250), ms(750)), [2, 3]);
    }

    #[tokio::test]
    async fn samples_a_live_process() {
        let (samples, task) = spawn_sampler(
            std::process::id(),
            Duration::from_millis(10),
            Instant::now(),
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        task.abort();
        let s = samples.lock().unwrap();
        assert!(s.len() >= 3, "{s:?}");
        assert!(s.windows(2).all(|w| w[0].0 <= w[1].0));
    }
}
