//! Which server limit refused: chingest counts every overload refusal by the
//! limit that tripped (`chingest_backpressure_rejections_total{limit="…"}`)
//! and every connection past `server.max_connections`
//! (`chingest_http_connections_refused_total`). Differences between two
//! `/metrics` scrapes say which limits answered a step's 429s and 503s.

use std::collections::BTreeMap;

/// The per-limit rejection counter.
const REJECTIONS: &str = "chingest_backpressure_rejections_total";
/// Connections refused at the connection cap.
const CONNECTIONS_REFUSED: &str = "chingest_http_connections_refused_total";
/// The key the connection cap is reported under.
pub const CONNECTION_CAP: &str = "max_connections";

/// Refusals so far by limit (`bytes_budget`, `cpu_queue`, `unflushed_points`,
/// …, and [`CONNECTION_CAP`]), from a Prometheus text dump.
pub fn parse(prometheus_text: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in prometheus_text.lines() {
        let Some((key, value)) = line.trim_end().rsplit_once(' ') else {
            continue;
        };
        let Ok(v) = value.parse::<f64>() else {
            continue;
        };
        if !v.is_finite() {
            continue;
        }
        if key == CONNECTIONS_REFUSED {
            out.insert(CONNECTION_CAP.to_string(), v);
        } else if let Some(labels) = key.strip_prefix(REJECTIONS) {
            if let Some(limit) = label(labels, "limit") {
                *out.entry(limit.to_string()).or_default() += v;
            }
        }
    }
    out
}

/// The value of label `name` in `{a="x",name="y"}`.
fn label<'a>(labels: &'a str, name: &str) -> Option<&'a str> {
    let inner = labels.strip_prefix('{')?.strip_suffix('}')?;
    inner.split(',').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k.trim() == name).then(|| v.trim().trim_matches('"'))
    })
}

/// `after − before` per limit, keeping the limits that refused in between
/// (a limit absent before counts from zero; a restarted counter is skipped).
pub fn delta(
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
) -> BTreeMap<String, u64> {
    after
        .iter()
        .filter_map(|(k, a)| {
            let d = a - before.get(k).copied().unwrap_or(0.0);
            (d >= 1.0).then(|| (k.clone(), d.round() as u64))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_by_limit_and_their_difference() {
        let before = parse(
            "# TYPE chingest_backpressure_rejections_total counter\n\
             chingest_backpressure_rejections_total{limit=\"cpu_wait\"} 3\n\
             chingest_http_connections_refused_total 0\n\
             chingest_http_requests_total{method=\"POST\"} 99\n",
        );
        assert_eq!(before.get("cpu_wait"), Some(&3.0));
        assert_eq!(before.get(CONNECTION_CAP), Some(&0.0));
        assert_eq!(before.len(), 2);
        let after = parse(
            "chingest_backpressure_rejections_total{limit=\"cpu_wait\"} 10\n\
             chingest_backpressure_rejections_total{limit=\"unflushed_points\"} 4\n\
             chingest_http_connections_refused_total 2\n",
        );
        let d = delta(&before, &after);
        assert_eq!(
            d.into_iter().collect::<Vec<_>>(),
            [
                ("cpu_wait".to_string(), 7),
                (CONNECTION_CAP.to_string(), 2),
                ("unflushed_points".to_string(), 4)
            ]
        );
        assert!(
            delta(&after, &before).is_empty(),
            "restarted counters are skipped"
        );
    }
}
