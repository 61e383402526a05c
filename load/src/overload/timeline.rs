//! Second by second: what the requests sent in each second of the run got
//! (acknowledged points, refusals), and the latency of every refusal of the
//! run by status. It shows when refusals stopped after the load dropped.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::stats::{Latency, LatencyHist, Outcome};

/// Seconds tracked at most (a typo in a phase length must not grow memory).
const MAX_SECONDS: usize = 86_400;

/// The requests sent during one second of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Second {
    /// Requests acknowledged with 2xx.
    pub ok: u64,
    /// Points in them.
    pub ok_points: u64,
    /// Requests refused with 429 or 503.
    pub refused: u64,
    /// Other answers, connection errors and timeouts.
    pub failed: u64,
}

/// Per-second outcomes by send time, and refusal latency over the whole run.
#[derive(Debug, Default)]
pub struct Timeline {
    seconds: Vec<Second>,
    refusals: BTreeMap<u16, LatencyHist>,
}

impl Timeline {
    /// Adds a request sent `at` after the run's start.
    pub fn record(&mut self, at: Duration, outcome: &Outcome, latency: Duration, points: u64) {
        let i = (at.as_secs() as usize).min(MAX_SECONDS);
        if self.seconds.len() <= i {
            self.seconds.resize(i + 1, Second::default());
        }
        let s = &mut self.seconds[i];
        match outcome {
            Outcome::Ok => {
                s.ok += 1;
                s.ok_points += points;
            }
            Outcome::Shed { status, .. } => {
                s.refused += 1;
                self.refusals.entry(*status).or_default().record(latency);
            }
            _ => s.failed += 1,
        }
    }

    /// The seconds, from the run's start.
    pub fn seconds(&self) -> &[Second] {
        &self.seconds
    }

    /// Refusal latency over the whole run, by status.
    pub fn refusal_latency(&self) -> BTreeMap<u16, Latency> {
        self.refusals
            .iter()
            .map(|(s, h)| (*s, h.summary()))
            .collect()
    }
}

/// Seconds after `from` (a second of the run) until the end of the last second
/// with a refusal, or `None` when nothing sent from `from` on was refused.
pub fn last_refusal_after(seconds: &[Second], from: usize) -> Option<u64> {
    seconds
        .iter()
        .enumerate()
        .skip(from)
        .rfind(|(_, s)| s.refused > 0)
        .map(|(i, _)| (i + 1 - from) as u64)
}

/// Seconds after `from` until the first [`WINDOW_SECS`]-second window whose
/// accepted points/s reach `rate`: how long full throughput took to come back.
/// `None` when no window after `from` reaches it.
pub fn throughput_back_after(seconds: &[Second], from: usize, rate: f64) -> Option<u64> {
    (from..seconds.len().saturating_sub(WINDOW_SECS - 1))
        .find(|&i| {
            let points: u64 = seconds[i..i + WINDOW_SECS]
                .iter()
                .map(|s| s.ok_points)
                .sum();
            points as f64 / WINDOW_SECS as f64 >= rate
        })
        .map(|i| (i - from) as u64)
}

/// The window [`throughput_back_after`] averages over, seconds.
pub const WINDOW_SECS: usize = 5;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_by_send_time_and_refusals_by_status() {
        let mut t = Timeline::default();
        let ms = Duration::from_millis;
        let shed = |status| Outcome::Shed {
            status,
            retry_after: Some("1".into()),
        };
        t.record(ms(100), &Outcome::Ok, ms(30), 10);
        t.record(ms(900), &Outcome::Ok, ms(30), 10);
        t.record(ms(2500), &shed(503), ms(4), 10);
        t.record(ms(2600), &shed(429), ms(6), 10);
        t.record(ms(4100), &Outcome::Timeout, ms(30_000), 10);
        let s = t.seconds();
        assert_eq!(s.len(), 5);
        assert_eq!((s[0].ok, s[0].ok_points), (2, 20));
        assert_eq!(s[1], Second::default());
        assert_eq!(s[2].refused, 2);
        assert_eq!(s[4].failed, 1);
        let lat = t.refusal_latency();
        assert_eq!(lat[&503].count, 1);
        assert_eq!(lat[&429].count, 1);
        assert!(
            lat[&429].p99_us >= 5_990 && lat[&429].p99_us <= 6_010,
            "{lat:?}"
        );
        assert_eq!(last_refusal_after(s, 0), Some(3));
        assert_eq!(last_refusal_after(s, 2), Some(1));
        assert_eq!(last_refusal_after(s, 3), None);
    }

    #[test]
    fn throughput_comes_back_when_a_window_reaches_the_rate() {
        let sec = |ok_points| Second {
            ok_points,
            ..Second::default()
        };
        // 100/s before the drop at second 2, 10/s for three seconds, then 100/s.
        let s: Vec<Second> = [100, 100, 10, 10, 10, 100, 100, 100, 100, 100, 100]
            .into_iter()
            .map(sec)
            .collect();
        assert_eq!(throughput_back_after(&s, 2, 95.0), Some(3));
        assert_eq!(throughput_back_after(&s, 2, 64.0), Some(1));
        assert_eq!(throughput_back_after(&s, 2, 101.0), None);
        assert_eq!(throughput_back_after(&s[..4], 2, 1.0), None);
    }
}
