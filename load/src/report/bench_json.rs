//! The component benchmarks' JSON (`chdb_raw.json`, `flush.json`), read without
//! knowing its exact layout: every numeric member named like a rate of rows or
//! points, labelled by the object holding it.

use serde_json::{Map, Value};

/// Every (label, rows-or-points per second) found anywhere in a bench JSON,
/// whatever its exact layout: any numeric member named like `rows_per_sec`.
pub fn find_rates(v: &Value) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    walk(v, "", &mut out);
    out
}

/// The engine ceiling: the fastest variant that inserts data handed over from
/// outside; variants where the engine generates its own rows (`INSERT … SELECT
/// FROM numbers(N)`, labelled "internal") skip the hand-off and are no ceiling for ingest.
pub(super) fn best_engine(v: &Value) -> Option<(String, f64)> {
    best(
        find_rates(v)
            .into_iter()
            .filter(|(l, _)| {
                let l = l.to_ascii_lowercase();
                !l.contains("internal") && !l.contains("numbers(")
            })
            .collect(),
    )
}

/// The flush number: prefer entries labelled as the flush path over the
/// `chdb_raw` reference the flush bench may carry alongside.
pub(super) fn best_flush(v: &Value) -> Option<(String, f64)> {
    let all = find_rates(v);
    let labelled = |keep: fn(&str) -> bool| -> Vec<(String, f64)> {
        all.iter()
            .filter(|(l, _)| keep(&l.to_ascii_lowercase()))
            .cloned()
            .collect()
    };
    let flush = labelled(|l| l.contains("flush"));
    let raw_free = labelled(|l| !l.contains("raw"));
    best(flush).or_else(|| best(raw_free)).or_else(|| best(all))
}

fn best(rates: Vec<(String, f64)>) -> Option<(String, f64)> {
    rates.into_iter().max_by(|a, b| a.1.total_cmp(&b.1))
}

fn walk(v: &Value, path: &str, out: &mut Vec<(String, f64)>) {
    match v {
        Value::Object(map) => {
            // A variant whose result failed its own verification is no ceiling.
            if map.get("verified").and_then(|v| v.as_bool()) == Some(false) {
                return;
            }
            for (k, child) in map {
                if let Some(x) = child.as_f64().filter(|_| is_rate_key(k)) {
                    if x.is_finite() && x > 0.0 {
                        out.push((label_of(map, path), x));
                    }
                } else {
                    walk(child, &format!("{path}/{k}"), out);
                }
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                walk(child, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

fn is_rate_key(k: &str) -> bool {
    let k = k.to_ascii_lowercase();
    (k.contains("rows") || k.contains("points"))
        && (k.contains("per_s") || k.ends_with("/s") || k.ends_with("_s") || k.ends_with("ps"))
        && !k.contains("mb")
        && !k.contains("byte")
        && !k.contains("ratio")
}

fn label_of(obj: &Map<String, Value>, path: &str) -> String {
    let label = ["variant", "name", "scenario", "id", "bench"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(|v| v.as_str()).map(String::from))
        .unwrap_or_else(|| path.to_string());
    // Benches that sweep connection counts repeat the variant name per count.
    match obj.get("connections").and_then(|c| c.as_u64()) {
        Some(c) => format!("{label}, {c} conn"),
        None => label,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_rates_in_unknown_layouts() {
        let v = json!({
            "host": {"cpu": "x"},
            "results": [
                {"variant": "narrow", "rows": 1000, "rows_per_sec": 9.9e7, "mb_per_sec": 800.0},
                {"variant": "4 fields", "rows/s": 4.5e7},
                {"name": "other", "seconds": 2.0}
            ]
        });
        let r = find_rates(&v);
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(best(r), Some(("narrow".into(), 9.9e7)));
        let raw = json!({"results": [
            {"variant": "1 connection, narrow", "rows_per_s": 3e7, "verified": true},
            {"variant": "2 connections", "rows_per_s": 5e7, "verified": false},
            {"variant": "engine internal: INSERT … SELECT FROM numbers(N)", "rows_per_s": 2e8, "verified": true}
        ]});
        assert_eq!(
            best_engine(&raw),
            Some(("1 connection, narrow".into(), 3e7))
        );
        let flush = json!({"variants": [
            {"name": "chdb_raw 1 conn", "rows_per_s": 5e7},
            {"name": "flush 1 conn", "rows_per_s": 3e7}
        ]});
        assert_eq!(best_flush(&flush), Some(("flush 1 conn".into(), 3e7)));
        // The layout of flush/benches/flush.rs.
        let flush = json!({"results": [
            {"variant": "raw insert of the same rows (chdb_raw recipe)", "connections": 2, "points_per_s": 9e6, "ratio_to_raw": null},
            {"variant": "flusher: entries → coalesce → insert", "connections": 2, "points_per_s": 7e6, "ratio_to_raw": 0.78}
        ]});
        assert_eq!(
            best_flush(&flush),
            Some(("flusher: entries → coalesce → insert, 2 conn".into(), 7e6))
        );
    }
}
