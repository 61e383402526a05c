//! One-line notes printed under a step table: `Retry-After` values seen, and a
//! warning when the load generator itself fell behind its schedule.

use std::collections::BTreeMap;

use super::cells::ms;
use crate::summary::StepResult;

/// Scheduler lateness above which the client, not the server, may be the limit.
const LATE_START_US: u64 = 10_000;

/// A warning when the load generator itself started requests late.
pub(super) fn client_lag_line(steps: &[StepResult]) -> Option<String> {
    let late: Vec<String> = steps
        .iter()
        .filter_map(|s| {
            s.sched_lag_p99_us
                .filter(|l| *l > LATE_START_US)
                .map(|l| format!("step {} ({} ms)", s.index, ms(l)))
        })
        .collect();
    (!late.is_empty()).then(|| {
        format!(
            "**Client warning:** the load generator started requests late (p99 scheduler lag over {} ms) in {}: those steps may measure the client, not the server.\n",
            LATE_START_US / 1000,
            late.join(", ")
        )
    })
}

/// Bytes the server wrote to storage per acknowledged point, per step and over the run;
/// `None` when the run recorded none (no server pid, or an older result file).
pub(super) fn disk_line(steps: &[StepResult]) -> Option<String> {
    let per_step: Vec<(usize, u64, u64)> = steps
        .iter()
        .filter_map(|s| Some((s.index, s.server_write_bytes?, s.ok_points)))
        .collect();
    if per_step.is_empty() {
        return None;
    }
    let per_point = |b: u64, p: u64| {
        if p == 0 {
            "–".to_string()
        } else {
            format!("{:.0}", b as f64 / p as f64)
        }
    };
    let (bytes, points) = per_step.iter().fold((0, 0), |(b, p), s| (b + s.1, p + s.2));
    let steps_text: Vec<String> = per_step
        .iter()
        .map(|&(i, b, p)| format!("step {i}: {}", per_point(b, p)))
        .collect();
    Some(format!(
        "**Disk:** the server wrote {} bytes to storage per acknowledged point over the run ({}; `/proc/<pid>/io` `write_bytes`: WAL, RocksDB's flushes and compactions, engine parts and merges, which lag the points they belong to).\n",
        per_point(bytes, points),
        steps_text.join(", ")
    ))
}

/// The `Retry-After` values received over all steps, with their counts.
pub(super) fn retry_after_line(steps: &[StepResult]) -> Option<String> {
    let mut all = BTreeMap::<&str, u64>::new();
    for s in steps {
        for (k, v) in &s.retry_after {
            *all.entry(k.as_str()).or_default() += v;
        }
    }
    (!all.is_empty()).then(|| {
        let parts: Vec<String> = all.iter().map(|(k, v)| format!("`{k}` ×{v}")).collect();
        format!(
            "Retry-After values received (recorded, not obeyed): {}.\n",
            parts.join(", ")
        )
    })
}

/// The notes that apply, in print order (Retry-After, client lag, disk).
pub(super) fn notes(steps: &[StepResult]) -> impl Iterator<Item = String> {
    [
        retry_after_line(steps),
        client_lag_line(steps),
        disk_line(steps),
    ]
    .into_iter()
    .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_line_divides_bytes_by_acknowledged_points() {
        let t = crate::stats::Tally::default();
        let mut a = StepResult::from_tally(0, Some(1.0), None, 1.0, 1, 1, 0, Some(1), &t);
        a.ok_points = 1_000;
        a.server_write_bytes = Some(70_000);
        let mut b = a.clone();
        b.index = 1;
        b.ok_points = 3_000;
        b.server_write_bytes = Some(330_000);
        let line = disk_line(&[a.clone(), b]).unwrap();
        assert!(line.contains("wrote 100 bytes"), "{line}");
        assert!(line.contains("step 0: 70, step 1: 110"), "{line}");
        a.server_write_bytes = None;
        assert_eq!(disk_line(&[a]), None);
    }

    #[test]
    fn late_client_is_flagged() {
        let mut t = crate::stats::Tally::default();
        t.record(
            &crate::stats::Outcome::Ok,
            std::time::Duration::from_millis(1),
            1,
        );
        let mut a = StepResult::from_tally(0, Some(1.0), None, 1.0, 1, 1, 0, Some(1), &t);
        a.sched_lag_p99_us = Some(500);
        assert_eq!(client_lag_line(std::slice::from_ref(&a)), None);
        let mut b = a.clone();
        b.index = 1;
        b.sched_lag_p99_us = Some(25_000);
        let line = client_lag_line(&[a, b]).unwrap();
        assert!(line.contains("step 1 (25.0 ms)"), "{line}");
    }
}
