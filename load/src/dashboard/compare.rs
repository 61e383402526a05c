//! Whether two servers' answers to one panel query agree: the same series
//! (name and tags, in any order), the same columns and rows, numbers equal to
//! a relative 1e-9 (a mean's last bits follow the order of its sum, which
//! differs between engines). Both servers hold the same points (the gathers are
//! deterministic) at the time the comparison asks about. Also: the read paths
//! chingest counts in `/metrics`.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{
    gather, now_ms, panels, query_uri, uri, Comparison, DashboardConfig, Subject, GATHER_MS,
};
use crate::error::Result;
use crate::query::bench::Server;
use crate::query::http::Http;

/// Series of an answer by `name` and tags (as JSON text, keys sorted).
fn series(v: &Value) -> Result<BTreeMap<String, (Value, Vec<Value>)>, String> {
    let r = &v["results"][0];
    if let Some(e) = r.get("error").or(v.get("error")) {
        return Err(format!("error: {e}"));
    }
    let mut out = BTreeMap::new();
    for s in r["series"].as_array().into_iter().flatten() {
        let key = format!("{} {}", s["name"], s["tags"]);
        let rows = s["values"].as_array().cloned().unwrap_or_default();
        out.insert(key, (s["columns"].clone(), rows));
    }
    Ok(out)
}

fn same_cell(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
        _ => a == b,
    }
}

/// `None` when `a` and `b` agree, else the first difference.
pub(super) fn differ(a: &[u8], b: &[u8]) -> Option<String> {
    let parse = |x: &[u8]| serde_json::from_slice::<Value>(x).map_err(|e| format!("not JSON: {e}"));
    let (a, b) = match (
        parse(a).and_then(|v| series(&v)),
        parse(b).and_then(|v| series(&v)),
    ) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) => return Some(format!("first: {e}")),
        (_, Err(e)) => return Some(format!("second: {e}")),
    };
    let (ka, kb): (Vec<&String>, Vec<&String>) = (a.keys().collect(), b.keys().collect());
    if ka != kb {
        return Some(format!("series differ: {ka:?} vs {kb:?}"));
    }
    for (key, (cols, rows)) in &a {
        let (cols_b, rows_b) = &b[key];
        if cols != cols_b {
            return Some(format!("{key}: columns {cols} vs {cols_b}"));
        }
        if rows.len() != rows_b.len() {
            return Some(format!("{key}: {} rows vs {}", rows.len(), rows_b.len()));
        }
        for (i, (x, y)) in rows.iter().zip(rows_b).enumerate() {
            let (xs, ys) = (x.as_array(), y.as_array());
            let same = match (xs, ys) {
                (Some(xs), Some(ys)) => {
                    xs.len() == ys.len() && xs.iter().zip(ys).all(|(p, q)| same_cell(p, q))
                }
                _ => x == y,
            };
            if !same {
                return Some(format!("{key}: row {i}: {x} vs {y}"));
            }
        }
    }
    None
}

/// `chingest_influxql_reads_total` by path and `chingest_hot_fallbacks_total` by reason
/// from `/metrics`; empty where the server has no such metric (InfluxDB).
pub(super) async fn read_paths(http: &Http, server: &Server) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let Ok(u) = uri(&format!("{}/metrics", server.base)) else {
        return out;
    };
    let Ok(r) = http.get(&u).await else {
        return out;
    };
    if r.status != 200 {
        return out;
    }
    // Reads by path, and the reads the hot store could have answered that went to the
    // engine because its applier was behind or its lock busy (`hot fallback: behind`).
    let wanted = [
        ("chingest_influxql_reads_total{path=\"", ""),
        ("chingest_hot_fallbacks_total{reason=\"", "hot fallback: "),
    ];
    for line in String::from_utf8_lossy(&r.body).lines() {
        for (prefix, label) in wanted {
            let Some(rest) = line.strip_prefix(prefix) else {
                continue;
            };
            let Some((name, value)) = rest.split_once("\"} ") else {
                continue;
            };
            if let Ok(v) = value.trim().parse::<f64>() {
                out.insert(format!("{label}{name}"), v);
            }
        }
    }
    out
}

/// Every server gets the gathers up to now; then every panel's query at the last gather's
/// time goes to each, and the first server's answer is compared with the others'.
pub(super) async fn all(
    cfg: &DashboardConfig,
    http: &Http,
    hosts: &[String],
    wall: &[panels::Slot],
    subjects: &mut [Subject],
) -> Result<Vec<Comparison>> {
    let until = now_ms();
    for s in subjects.iter_mut() {
        gather::gather(cfg, http, hosts, s, until).await?;
    }
    let at = until.div_euclid(GATHER_MS) * GATHER_MS;
    let mut out = Vec::new();
    for slot in wall {
        let q = slot.query(hosts, at, GATHER_MS);
        let mut answers = Vec::new();
        for s in subjects.iter() {
            let r = http.get(&query_uri(cfg, &s.server, &q)?).await;
            answers.push(r.map(|r| r.body).map_err(|e| e.to_string()));
        }
        for (k, s) in subjects.iter().enumerate().skip(1) {
            let differs = match (&answers[0], &answers[k]) {
                (Ok(a), Ok(b)) => differ(a, b),
                (Err(e), _) | (_, Err(e)) => Some(e.clone()),
            };
            out.push(Comparison {
                label: slot.label(),
                with: s.server.name.clone(),
                differs: differs.map(|d| format!("{d} (query: {q})")),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_in_any_order_and_near_floats_agree() {
        let a = br#"{"results":[{"statement_id":0,"series":[
            {"name":"m","tags":{"host":"a"},"columns":["time","mean"],"values":[[0,0.1],[10,null]]},
            {"name":"m","tags":{"host":"b"},"columns":["time","mean"],"values":[[0,2]]}]}]}"#;
        let b = br#"{"results":[{"statement_id":0,"series":[
            {"name":"m","tags":{"host":"b"},"columns":["time","mean"],"values":[[0,2.0]]},
            {"name":"m","tags":{"host":"a"},"columns":["time","mean"],"values":[[0,0.10000000000000002],[10,null]]}]}]}"#;
        assert_eq!(differ(a, b), None);
        let c = br#"{"results":[{"statement_id":0,"series":[
            {"name":"m","tags":{"host":"a"},"columns":["time","mean"],"values":[[0,0.1],[10,1]]},
            {"name":"m","tags":{"host":"b"},"columns":["time","mean"],"values":[[0,2]]}]}]}"#;
        assert!(differ(a, c).unwrap().contains("row 1"));
        let d = br#"{"results":[{"statement_id":0}]}"#;
        assert!(differ(a, d).unwrap().contains("series differ"));
    }
}
