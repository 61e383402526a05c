//! Server stage time from its Prometheus `/metrics` text: for every
//! `chingest_*_seconds` histogram (or summary), the observation count and the
//! summed seconds. Differences between two scrapes show where a step's time went.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Largest `/metrics` body read (a scrape is a few hundred KiB at most).
pub const MAX_METRICS_BYTES: usize = 16 << 20;

/// Count and total seconds of one stage series.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StageTotal {
    /// Observations.
    pub count: f64,
    /// Sum of the observed durations, seconds.
    pub seconds: f64,
}

/// Parses every `chingest_*_seconds_{sum,count}` sample; the key is the metric
/// name without the suffix, plus its labels (`chingest_wal_commit_seconds{db="x"}`).
pub fn parse(prometheus_text: &str) -> BTreeMap<String, StageTotal> {
    let mut out = BTreeMap::<String, StageTotal>::new();
    for line in prometheus_text.lines() {
        if line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.trim_end().rsplit_once(' ') else {
            continue;
        };
        let Ok(v) = value.parse::<f64>() else {
            continue;
        };
        let (name, labels) = match key.find('{') {
            Some(i) => (&key[..i], &key[i..]),
            None => (key, ""),
        };
        if !name.starts_with("chingest_") || !v.is_finite() {
            continue;
        }
        let (base, is_sum) = if let Some(b) = name.strip_suffix("_seconds_sum") {
            (b, true)
        } else if let Some(b) = name.strip_suffix("_seconds_count") {
            (b, false)
        } else {
            continue;
        };
        let e = out.entry(format!("{base}_seconds{labels}")).or_default();
        if is_sum {
            e.seconds = v;
        } else {
            e.count = v;
        }
    }
    out
}

/// `after − before` per series, keeping the series with new observations
/// (a series absent before counts from zero; a restarted counter is skipped).
pub fn delta(
    before: &BTreeMap<String, StageTotal>,
    after: &BTreeMap<String, StageTotal>,
) -> BTreeMap<String, StageTotal> {
    after
        .iter()
        .filter_map(|(k, a)| {
            let b = before.get(k).copied().unwrap_or_default();
            let d = StageTotal {
                count: a.count - b.count,
                seconds: a.seconds - b.seconds,
            };
            (d.count > 0.0 && d.seconds >= 0.0).then(|| (k.clone(), d))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# TYPE chingest_wal_commit_seconds histogram\n\
        chingest_wal_commit_seconds_bucket{le=\"0.01\"} 3\n\
        chingest_wal_commit_seconds_sum 1.5\n\
        chingest_wal_commit_seconds_count 3\n\
        chingest_parse_seconds_sum{format=\"lp\"} 4\n\
        chingest_parse_seconds_count{format=\"lp\"} 8\n\
        other_seconds_sum 9\nother_seconds_count 1\n\
        chingest_bytes_total 77\n";

    #[test]
    fn parses_sums_and_counts() {
        let p = parse(TEXT);
        assert_eq!(p.len(), 2);
        assert_eq!(
            p["chingest_wal_commit_seconds"],
            StageTotal {
                count: 3.0,
                seconds: 1.5
            }
        );
        assert_eq!(
            p["chingest_parse_seconds{format=\"lp\"}"],
            StageTotal {
                count: 8.0,
                seconds: 4.0
            }
        );
    }

    #[test]
    fn deltas_between_scrapes() {
        let before = parse(TEXT);
        let after = parse(
            "chingest_wal_commit_seconds_sum 2.5\nchingest_wal_commit_seconds_count 5\n\
             chingest_parse_seconds_sum{format=\"lp\"} 4\nchingest_parse_seconds_count{format=\"lp\"} 8\n\
             chingest_flush_seconds_sum 0.5\nchingest_flush_seconds_count 1\n",
        );
        let d = delta(&before, &after);
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(
            d["chingest_wal_commit_seconds"],
            StageTotal {
                count: 2.0,
                seconds: 1.0
            }
        );
        assert_eq!(
            d["chingest_flush_seconds"],
            StageTotal {
                count: 1.0,
                seconds: 0.5
            }
        );
    }
}
