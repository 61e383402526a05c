//! Per-step accounting: request outcomes and an HDR latency histogram.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest latency the histogram tracks exactly: one hour, in microseconds.
/// Slower requests are recorded as one hour (saturating), never dropped.
const MAX_LATENCY_US: u64 = 3_600_000_000;
/// At most this many distinct `Retry-After` values are kept per step; further
/// distinct values are counted under `"other"` so a misbehaving server cannot grow memory.
const MAX_RETRY_AFTER_VALUES: usize = 32;

/// How one request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A 2xx answer: the points were accepted.
    Ok,
    /// 429 or 503: the server shed the request (counted apart from failures).
    Shed {
        /// 429 or 503.
        status: u16,
        /// The `Retry-After` header, if any (recorded, never obeyed).
        retry_after: Option<String>,
    },
    /// Any other non-2xx status.
    Failed {
        /// The HTTP status.
        status: u16,
        /// The `Retry-After` header, if any.
        retry_after: Option<String>,
    },
    /// Connecting, sending or receiving failed.
    Transport,
    /// No complete answer within the request timeout.
    Timeout,
}

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Number of recorded requests.
    pub count: u64,
    /// Median.
    pub p50_us: u64,
    /// 95th percentile.
    pub p95_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// Maximum.
    pub max_us: u64,
    /// Arithmetic mean.
    pub mean_us: f64,
}

/// A microsecond-resolution HDR histogram (3 significant digits: ≤ 0.1% error).
#[derive(Debug, Clone)]
pub struct LatencyHist(Histogram<u64>);

impl Default for LatencyHist {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHist {
    /// An empty histogram covering 1 µs to 1 h.
    pub fn new() -> Self {
        // The bounds are constants within hdrhistogram's limits, so this cannot fail.
        LatencyHist(
            Histogram::new_with_bounds(1, MAX_LATENCY_US, 3)
                .expect("constant histogram bounds are valid"),
        )
    }

    /// Records one latency (saturating at one hour, floor of 1 µs).
    pub fn record(&mut self, d: Duration) {
        self.record_us(d.as_micros().min(u64::MAX as u128) as u64);
    }

    /// Records one latency given in microseconds.
    pub fn record_us(&mut self, us: u64) {
        self.0.saturating_record(us.clamp(1, MAX_LATENCY_US));
    }

    /// Percentiles; all zero when nothing was recorded.
    pub fn summary(&self) -> Latency {
        let h = &self.0;
        if h.is_empty() {
            return Latency::default();
        }
        Latency {
            count: h.len(),
            p50_us: h.value_at_quantile(0.50),
            p95_us: h.value_at_quantile(0.95),
            p99_us: h.value_at_quantile(0.99),
            max_us: h.max(),
            mean_us: h.mean(),
        }
    }
}

/// Counts for one step, shared by the request tasks through a mutex
/// (a few hundred updates a second: contention is negligible).
#[derive(Debug, Default)]
pub struct Tally {
    /// Latency of successful requests only: shed answers are fast and would flatter p95.
    pub ok_latency: LatencyHist,
    /// Latency of every completed request (any status).
    pub all_latency: LatencyHist,
    /// Requests answered 2xx.
    pub ok: u64,
    /// Points in requests answered 2xx.
    pub ok_points: u64,
    /// Requests answered 429.
    pub shed_429: u64,
    /// Requests answered 503.
    pub shed_503: u64,
    /// Other non-2xx answers by status.
    pub failed: BTreeMap<u16, u64>,
    /// Transport errors.
    pub transport_errors: u64,
    /// Timeouts.
    pub timeouts: u64,
    /// `Retry-After` values seen, by value.
    pub retry_after: BTreeMap<String, u64>,
    /// Latency of shed answers by status (429, 503): how fast a refusal comes back.
    pub shed_latency: BTreeMap<u16, LatencyHist>,
}

impl Tally {
    /// Adds one finished request.
    pub fn record(&mut self, outcome: &Outcome, latency: Duration, points: u64) {
        if !matches!(outcome, Outcome::Transport | Outcome::Timeout) {
            self.all_latency.record(latency);
        }
        match outcome {
            Outcome::Ok => {
                self.ok += 1;
                self.ok_points += points;
                self.ok_latency.record(latency);
            }
            Outcome::Shed {
                status,
                retry_after,
            } => {
                if *status == 429 {
                    self.shed_429 += 1;
                } else {
                    self.shed_503 += 1;
                }
                self.shed_latency
                    .entry(*status)
                    .or_default()
                    .record(latency);
                self.note_retry_after(retry_after.as_deref());
            }
            Outcome::Failed {
                status,
                retry_after,
            } => {
                *self.failed.entry(*status).or_default() += 1;
                self.note_retry_after(retry_after.as_deref());
            }
            Outcome::Transport => self.transport_errors += 1,
            Outcome::Timeout => self.timeouts += 1,
        }
    }

    fn note_retry_after(&mut self, v: Option<&str>) {
        let Some(v) = v else { return };
        let key = if self.retry_after.contains_key(v)
            || self.retry_after.len() < MAX_RETRY_AFTER_VALUES
        {
            v.chars().take(64).collect()
        } else {
            "other".to_string()
        };
        *self.retry_after.entry(key).or_default() += 1;
    }

    /// Requests that finished, whatever their outcome.
    pub fn completed(&self) -> u64 {
        self.ok
            + self.shed_429
            + self.shed_503
            + self.failed.values().sum::<u64>()
            + self.transport_errors
            + self.timeouts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn within(actual: u64, expected: u64, rel: f64) -> bool {
        (actual as f64 - expected as f64).abs() <= expected as f64 * rel
    }

    #[test]
    fn percentiles_of_a_uniform_distribution() {
        let mut h = LatencyHist::new();
        for us in 1..=10_000 {
            h.record_us(us);
        }
        let s = h.summary();
        assert_eq!(s.count, 10_000);
        // Three significant digits: each percentile within 0.1% of the exact rank value.
        assert!(within(s.p50_us, 5_000, 0.001), "{s:?}");
        assert!(within(s.p95_us, 9_500, 0.001), "{s:?}");
        assert!(within(s.p99_us, 9_900, 0.001), "{s:?}");
        assert!(within(s.max_us, 10_000, 0.001), "{s:?}");
        assert!((s.mean_us - 5_000.5).abs() < 10.0, "{s:?}");
    }

    #[test]
    fn percentiles_of_a_skewed_distribution() {
        // 94 fast requests at 1 ms, 6 slow ones at 2 s: p50 is fast, p95 lands in the slow tail.
        let mut h = LatencyHist::new();
        for _ in 0..94 {
            h.record(Duration::from_millis(1));
        }
        for _ in 0..6 {
            h.record(Duration::from_secs(2));
        }
        let s = h.summary();
        assert!(within(s.p50_us, 1_000, 0.001), "{s:?}");
        assert!(within(s.p95_us, 2_000_000, 0.001), "{s:?}");
        assert!(within(s.p99_us, 2_000_000, 0.001), "{s:?}");
    }

    #[test]
    fn empty_and_saturating() {
        assert_eq!(LatencyHist::new().summary(), Latency::default());
        let mut h = LatencyHist::new();
        h.record(Duration::from_secs(10 * 3600));
        h.record(Duration::ZERO);
        let s = h.summary();
        assert_eq!(s.count, 2);
        assert!(within(s.max_us, MAX_LATENCY_US, 0.001));
    }

    #[test]
    fn tally_counts_each_class() {
        let mut t = Tally::default();
        let ms = Duration::from_millis(3);
        t.record(&Outcome::Ok, ms, 10);
        t.record(&Outcome::Ok, ms, 10);
        t.record(
            &Outcome::Shed {
                status: 429,
                retry_after: Some("2".into()),
            },
            ms,
            10,
        );
        t.record(
            &Outcome::Shed {
                status: 503,
                retry_after: Some("1".into()),
            },
            ms,
            10,
        );
        t.record(
            &Outcome::Shed {
                status: 503,
                retry_after: Some("1".into()),
            },
            ms,
            10,
        );
        t.record(
            &Outcome::Failed {
                status: 400,
                retry_after: None,
            },
            ms,
            10,
        );
        t.record(&Outcome::Transport, ms, 10);
        t.record(&Outcome::Timeout, ms, 10);
        assert_eq!((t.ok, t.ok_points, t.shed_429, t.shed_503), (2, 20, 1, 2));
        assert_eq!(t.failed.get(&400), Some(&1));
        assert_eq!((t.transport_errors, t.timeouts), (1, 1));
        assert_eq!(t.retry_after.get("1"), Some(&2));
        assert_eq!(t.retry_after.get("2"), Some(&1));
        assert_eq!(t.completed(), 8);
        assert_eq!(t.ok_latency.summary().count, 2);
        assert_eq!(t.all_latency.summary().count, 6);
        assert_eq!(t.shed_latency[&429].summary().count, 1);
        assert_eq!(t.shed_latency[&503].summary().count, 2);
        assert!(!t.shed_latency.contains_key(&400));
    }

    #[test]
    fn retry_after_values_are_bounded() {
        let mut t = Tally::default();
        for i in 0..1000 {
            t.record(
                &Outcome::Shed {
                    status: 503,
                    retry_after: Some(i.to_string()),
                },
                Duration::ZERO,
                1,
            );
        }
        assert_eq!(t.retry_after.len(), MAX_RETRY_AFTER_VALUES + 1);
        assert_eq!(t.retry_after.values().sum::<u64>(), 1000);
    }
}
