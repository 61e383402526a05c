//! Table cells: milliseconds, CPU percentages, latency triples, failure lists,
//! ratios and stage names, each formatted the one way every table uses.

use crate::summary::StepResult;

/// Microseconds as milliseconds, three significant digits or so: `623`, `52.0`, `4.46`.
pub(crate) fn ms(us: u64) -> String {
    let v = us as f64 / 1000.0;
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A CPU percentage, or `–` when it was not sampled.
pub(super) fn opt_pct(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.0}")).unwrap_or_else(|| "–".into())
}

/// The `p50 | p95 | p99` cells (ms) of the successful writes; dashes when there were none.
pub(super) fn lat_cells(s: &StepResult) -> String {
    if s.latency.count == 0 {
        "– | – | –".into()
    } else {
        format!(
            "{} | {} | {}",
            ms(s.latency.p50_us),
            ms(s.latency.p95_us),
            ms(s.latency.p99_us)
        )
    }
}

/// Failures by kind (`3×500, 2×conn, 1×timeout`), or `0`.
pub(super) fn failed_cell(s: &StepResult) -> String {
    let mut parts: Vec<String> = s.failed.iter().map(|(k, v)| format!("{v}×{k}")).collect();
    if s.transport_errors > 0 {
        parts.push(format!("{}×conn", s.transport_errors));
    }
    if s.timeouts > 0 {
        parts.push(format!("{}×timeout", s.timeouts));
    }
    if parts.is_empty() {
        "0".into()
    } else {
        parts.join(", ")
    }
}

/// `v` as a percentage of the engine ceiling, or `–` without one.
pub(super) fn ratio(v: f64, ceiling: Option<f64>) -> String {
    match ceiling {
        Some(c) if c > 0.0 => format!("{:.1}%", v / c * 100.0),
        _ => "–".into(),
    }
}

/// A stage series without the `chingest_` prefix and `_seconds` suffix:
/// `chingest_parse_seconds{format="lp"}` reads `parse{format="lp"}`.
pub(super) fn short_stage(k: &str) -> String {
    let k = k.strip_prefix("chingest_").unwrap_or(k);
    match k.split_once('{') {
        Some((name, labels)) => format!("{}{{{labels}", name.trim_end_matches("_seconds")),
        None => k.trim_end_matches("_seconds").to_string(),
    }
}
