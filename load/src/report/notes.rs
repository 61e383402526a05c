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

/// Both notes that apply, in print order (Retry-After first).
pub(super) fn notes(steps: &[StepResult]) -> impl Iterator<Item = String> {
    [retry_after_line(steps), client_lag_line(steps)]
        .into_iter()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

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
