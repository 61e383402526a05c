//! Issue #43: `stddev()` of an integer or unsigned field from the shards' sums (two real
//! 18.16 shards): each statement answers what the embedded engine answers on the same
//! writes, bit for bit (the JSON carries every float's shortest exact form), and takes the
//! path `chingest_cluster_reads_total{path}` says — the shards' sums (`pushdown`) or every
//! raw row (`rows`: a float field, or sums past 2⁵³) — with points written twice on the
//! shards, then with undelivered rewrites and a new series held on the node.

use serde_json::Value;

use crate::cluster::statement_at;
use crate::cluster_oracle::{delivered_then_held, reads};
use crate::util::*;

/// Points of `m`: hosts h0..h5 in dc0, dc1 every 10 s from 0 s to 590 s, none from 200 s to
/// 299 s (empty windows); float `v`, integer `n` (negative ones too, large ones on h3),
/// unsigned `u`. Host h4 has no `u`. Measurement `big`: integers whose squares add past 2⁵³.
fn points() -> String {
    let mut out = String::new();
    for i in (0..60i64).filter(|i| !(20..30).contains(i)) {
        for h in 0..6i64 {
            let t = i * 10_000_000_000 + h * 1_234_567_891;
            let scale = if h == 3 { 100_003 } else { 1 };
            let mut fields = vec![
                format!("v={:?}", i as f64 * 1.1 / 3.0 - h as f64 * 0.7),
                format!("n={}i", ((i * 7 + h * 13) % 50 - 20) * scale),
            ];
            if h != 4 {
                fields.push(format!("u={}u", (i * 3 + h) % 17));
            }
            out.push_str(&format!(
                "m,host=h{h},dc=dc{} {} {t}\n",
                h % 2,
                fields.join(",")
            ));
        }
        out.push_str(&format!(
            "big,host=h0 n={}i {}\n",
            (i % 5) * 40_000_000 - 90_000_000,
            i * 10_000_000_000
        ));
    }
    out
}

/// `n` and `u` of hosts h1 and h2 written again every seventh interval (`v` stays), scaled
/// by `k` so a second round differs from the first.
fn rewrites(k: i64) -> String {
    let mut out = String::new();
    for i in (0..60i64).filter(|i| i % 7 == 0 && !(20..30).contains(i)) {
        for h in [1i64, 2] {
            let t = i * 10_000_000_000 + h * 1_234_567_891;
            out.push_str(&format!(
                "m,host=h{h},dc=dc{} n={}i,u={}u {t}\n",
                h % 2,
                -i * k - 3,
                (i * k) as u64 + 100
            ));
        }
    }
    out
}

/// Statements, and whether the shards' sums answer them.
const STATEMENTS: &[(&str, bool)] = &[
    ("SELECT stddev(n) FROM m", true),
    (
        "SELECT stddev(n), stddev(u), mean(n), count(u) FROM m GROUP BY dc",
        true,
    ),
    (
        "SELECT stddev(n), mean(n), count(n) FROM m WHERE time >= 0s AND time < 600s \
         GROUP BY time(1m) fill(0)",
        true,
    ),
    (
        "SELECT stddev(u) AS sd, sum(u) FROM m WHERE time >= 15s AND time < 600s \
         GROUP BY time(45s, 10s), dc fill(previous)",
        true,
    ),
    // One point per group and window: null.
    (
        "SELECT stddev(n), count(n) FROM m WHERE time >= 0s AND time < 600s \
         GROUP BY time(10s), host fill(none) SLIMIT 3",
        true,
    ),
    (
        "SELECT stddev(n) FROM m WHERE host =~ /h[1-3]/ AND time >= 100s AND time < 400s \
         GROUP BY time(30s), *",
        true,
    ),
    ("SELECT stddev(n) * 2 FROM m GROUP BY host", true),
    // A float field, or sums of squares past 2⁵³: the rows (a float's sums there in the
    // order the shards send the rows: equal to the embedded engine's to 1e-12 only).
    ("SELECT stddev(v) FROM m", false),
    ("SELECT stddev(v), stddev(n) FROM m GROUP BY dc", false),
    ("SELECT stddev(n) FROM big", false),
];

fn on_d(s: &Server, q: &str) -> Value {
    statement_at(s, "/query?db=d", q)
}

/// `chingest_cluster_pushdown_combined_total{by="rows"}` on `s`: partials read, then rows.
fn combined_as_rows(s: &Server) -> u64 {
    let text = s.get("/metrics").text().unwrap();
    let prefix = "chingest_cluster_pushdown_combined_total{by=\"rows\"} ";
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .map_or(0, |v| v.trim().parse::<f64>().unwrap() as u64)
}

/// `a` and `b` equal but for floats within a relative 1e-12.
fn close(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            (x - y).abs() <= 1e-12 * x.abs().max(y.abs())
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| close(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| close(v, w)))
        }
        _ => a == b,
    }
}

/// Every statement of [`STATEMENTS`] answers on `node` as on `embedded`, by the path listed.
fn check(node: &Server, embedded: &Server) {
    for (q, pushed) in STATEMENTS {
        let want = on_d(embedded, q);
        assert!(want["results"][0].get("error").is_none(), "{q}: {want}");
        assert!(want["results"][0]["series"].is_array(), "{q}: {want}");
        let before = (reads(node, "pushdown"), reads(node, "rows"));
        let refused = combined_as_rows(node);
        let got = on_d(node, q);
        let after = (reads(node, "pushdown"), reads(node, "rows"));
        // `big`'s sums are read from the shards, then refused as not exact.
        let inexact = u64::from(q.ends_with("FROM big"));
        assert_eq!(combined_as_rows(node) - refused, inexact, "{q}");
        if q.contains("stddev(v)") {
            assert!(close(&got, &want), "{q}: {got} != {want}");
        } else {
            assert_eq!(got, want, "{q}");
        }
        let path = if *pushed { "pushdown" } else { "rows" };
        assert_eq!(
            (after.0 - before.0, after.1 - before.1),
            if *pushed { (1, 0) } else { (0, 1) },
            "{q} should take the {path} path"
        );
    }
}

#[test]
fn stddev_of_integers_is_computed_from_the_shards_sums_bit_for_bit() {
    // Then rewrites of points the shards hold, a new series and a new point of a known one,
    // undelivered.
    let more = "m,host=h9,dc=dc1 v=100.3,n=-11i,u=3u 15000000000\n\
                m,host=h9,dc=dc1 v=-7.7,n=4i,u=1u 47000000000\n\
                m,host=h0,dc=dc0 n=-50i,u=0u 5000000000\n";
    delivered_then_held(
        "stddev_of_integers_is_computed_from_the_shards_sums_bit_for_bit",
        &[points(), rewrites(1)],
        &[rewrites(3), more.to_string()],
        10,
        check,
    );
}
