//! Issue #43: `integral()` computed by the shard holding each series (two real 18.16
//! shards), where every group is one series: each statement answers what the embedded
//! engine answers on the same writes, bit for bit (the JSON carries every float's shortest
//! exact form), and takes the path `chingest_cluster_reads_total{path}` says — the shards'
//! integrals (`pushdown`) or every raw row (`rows`) — with points written twice on the
//! shards, then with undelivered rewrites and a new series held on the node.

use std::time::Duration;

use serde_json::Value;

use crate::cluster::{cluster_config_named, statement_at, two_shard_cluster, wait_delivered};
use crate::cluster_oracle::{delivered_then_held, reads};
use crate::util::*;

/// Points of `m`: hosts h0..h5 in dc0, dc1 every 10 s from 0 s to 590 s, none from 200 s to
/// 299 s (empty windows); float `v` (values whose sums round: thirds), integer `n`,
/// unsigned `u`, string `s`. Host h0's points lie on every 10 s window's start; the
/// others' are off it by a host's odd number of ns. Host h5 has no `v`, h4 no `u`.
fn points() -> String {
    let mut out = String::new();
    for i in (0..60i64).filter(|i| !(20..30).contains(i)) {
        for h in 0..6i64 {
            let t = i * 10_000_000_000 + h * 1_234_567_891;
            let mut fields = Vec::new();
            if h != 5 {
                fields.push(format!("v={:?}", i as f64 * 1.1 / 3.0 - h as f64 * 0.7));
            }
            fields.push(format!("n={}i", (i * 7 + h * 13) % 50 - 20));
            if h != 4 {
                fields.push(format!("u={}u", (i * 3 + h) % 17));
            }
            fields.push(format!("s=\"s{}\"", (i + h) % 9));
            out.push_str(&format!(
                "m,host=h{h},dc=dc{} {} {t}\n",
                h % 2,
                fields.join(",")
            ));
        }
    }
    out
}

/// `v` and `u` of hosts h1 and h2 written again every seventh interval (`n`, `s` stay),
/// scaled by `k` so a second round differs from the first.
fn rewrites(k: i64) -> String {
    let mut out = String::new();
    for i in (0..60i64).filter(|i| i % 7 == 0 && !(20..30).contains(i)) {
        for h in [1i64, 2] {
            let t = i * 10_000_000_000 + h * 1_234_567_891;
            out.push_str(&format!(
                "m,host=h{h},dc=dc{} v={:?},u={}u {t}\n",
                h % 2,
                -(i as f64) * k as f64 / 9.0,
                (i * k) as u64 + 100
            ));
        }
    }
    out
}

/// Statements, and whether the shards integrate them.
const STATEMENTS: &[(&str, bool)] = &[
    ("SELECT integral(v) FROM m GROUP BY *", true),
    // An integer field without windows: at the range's start (0 without a lower bound).
    (
        "SELECT integral(v, 1m), integral(n), integral(u, 7s) FROM m GROUP BY host, dc",
        true,
    ),
    (
        "SELECT integral(n), integral(u) FROM m WHERE time >= 15s AND time < 600s GROUP BY *",
        true,
    ),
    // Windows: pieces split at their ends, carried across the empty ones (200 s–299 s);
    // h0's points on window starts (a last one there closes nothing).
    (
        "SELECT integral(v) FROM m WHERE time >= 0s AND time < 600s GROUP BY time(10s), *",
        true,
    ),
    (
        "SELECT integral(v), integral(n, 1m) AS per_minute FROM m WHERE time >= 0s \
         AND time < 600s GROUP BY time(30s), *",
        true,
    ),
    (
        "SELECT integral(v, 1m) AS a, integral(n, 7s), integral(u) FROM m WHERE time >= 100s \
         AND time < 500s GROUP BY time(45s, 10s), * fill(0)",
        true,
    ),
    (
        "SELECT integral(v) FROM m WHERE dc = 'dc1' AND time >= 0s AND time < 600s \
         GROUP BY time(20s), * fill(none) LIMIT 3 OFFSET 1",
        true,
    ),
    (
        "SELECT integral(u, 2s) FROM m WHERE host =~ /h[0-3]/ AND time >= 0s AND time < 600s \
         GROUP BY time(1m), host, dc SLIMIT 2 SOFFSET 1",
        true,
    ),
    (
        "SELECT integral(v) FROM m WHERE time >= 155s AND time <= 305s GROUP BY time(25s), *",
        true,
    ),
    // Groups of several series, a field condition, a zone's windows: the rows.
    ("SELECT integral(v) FROM m GROUP BY dc", false),
    ("SELECT integral(v, 1m) FROM m", false),
    (
        "SELECT integral(v) FROM m WHERE time >= 0s AND time < 600s GROUP BY time(1m), dc",
        false,
    ),
    ("SELECT integral(v) FROM m WHERE v > 0 GROUP BY *", false),
    (
        "SELECT integral(v) FROM m WHERE time >= 0s AND time < 600s \
         GROUP BY time(1m), * tz('Asia/Kolkata')",
        false,
    ),
];

fn on_d(s: &Server, q: &str) -> Value {
    statement_at(s, "/query?db=d", q)
}

/// Every statement of [`STATEMENTS`] answers on `node` as on `embedded`, by the path listed.
fn check(node: &Server, embedded: &Server) {
    for (q, pushed) in STATEMENTS {
        let want = on_d(embedded, q);
        assert!(want["results"][0].get("error").is_none(), "{q}: {want}");
        assert!(want["results"][0]["series"].is_array(), "{q}: {want}");
        let before = (reads(node, "pushdown"), reads(node, "rows"));
        let got = on_d(node, q);
        let after = (reads(node, "pushdown"), reads(node, "rows"));
        assert_eq!(got, want, "{q}");
        let path = if *pushed { "pushdown" } else { "rows" };
        assert_eq!(
            (after.0 - before.0, after.1 - before.1),
            if *pushed { (1, 0) } else { (0, 1) },
            "{q} should take the {path} path"
        );
    }
    // A string field is InfluxDB's error on both (read as rows).
    let q = "SELECT integral(s) FROM m GROUP BY *";
    let want = on_d(embedded, q);
    assert!(want["results"][0]["error"].is_string(), "{want}");
    assert_eq!(on_d(node, q), want, "{q}");
}

#[test]
fn integral_of_one_series_groups_runs_on_its_shard_bit_for_bit() {
    // Then rewrites of points the shards hold, a new series and a new point of a known one,
    // undelivered.
    let more = "m,host=h9,dc=dc1 v=100.3,n=1i,u=3u,s=\"new\" 15000000000\n\
                m,host=h9,dc=dc1 v=-7.7,n=4i,u=1u 47000000000\n\
                m,host=h0,dc=dc0 v=-50.1,u=0u 5000000000\n";
    delivered_then_held(
        "integral_of_one_series_groups_runs_on_its_shard_bit_for_bit",
        &[points(), rewrites(1)],
        &[rewrites(3), more.to_string()],
        10,
        check,
    );
}

/// Integrated on the shards, an `integral()` over more points than `[sql] max_result_rows`
/// answers (the rows path refuses it): the limit bounds its answer's rows.
#[test]
fn an_integral_over_more_points_than_max_result_rows_answers() {
    const TEST: &str = "an_integral_over_more_points_than_max_result_rows_answers";
    let Some((_dir, shards)) = two_shard_cluster(TEST) else {
        return;
    };
    let (s0, s1) = (&shards[0], &shards[1]);
    let (node_dir, embedded_dir) = (data_dir(), data_dir());
    let limits = "\n[sql]\nmax_result_rows = 1000\n";
    let node = Spawn::new(node_dir.path())
        .config(&(cluster_config_named(&[s0, s1], "n1") + limits))
        .start();
    let embedded = Spawn::new(embedded_dir.path()).start();
    let body: String = (0..5_000i64)
        .map(|i| {
            let v = (i * 37 % 101) as f64 / 3.0;
            format!("cpu,host=h{} v={v:?} {}\n", i % 10, i * 1_000_000_000)
        })
        .collect();
    for s in [&node, &embedded] {
        s.query("CREATE DATABASE d");
        assert_eq!(s.post("/write?db=d", body.clone()).status(), 204);
    }
    wait_delivered(&[&node], Duration::from_secs(60));
    for q in [
        "SELECT integral(v) FROM cpu GROUP BY *",
        "SELECT integral(v, 1m) FROM cpu WHERE time >= 0s AND time < 5000s \
         GROUP BY time(10m), host",
    ] {
        let want = on_d(&embedded, q);
        assert!(want["results"][0]["series"].is_array(), "{q}: {want}");
        assert_eq!(on_d(&node, q), want, "{q}");
    }
    // Grouped otherwise it reads the rows, which the limit refuses.
    let r = on_d(&node, "SELECT integral(v) FROM cpu");
    assert!(
        r["results"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("max_result_rows")),
        "{r}"
    );
}
