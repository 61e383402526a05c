//! Issue #43: aggregates a ClickHouse cluster's shards compute (two real 18.16 servers as
//! shards). Each function family answers what the embedded engine answers on the same
//! writes, and takes the path `chingest_cluster_reads_total{path}` says: partial aggregates
//! from the shards (`pushdown`) or every row of the range (`rows`); rewrites of points a
//! shard holds that this node has not delivered yet count; and an aggregate over more
//! points than `[sql] max_result_rows` answers (its answer is what the limit bounds).

use std::time::Duration;

use serde_json::Value;

use crate::cluster::{cluster_config_named, statement_at, two_shard_cluster, wait_delivered};
use crate::cluster_oracle::{delivered_then_held, reads};
use crate::util::*;

/// Points of `cpu` in database d: hosts h0..h7 in dc0..dc2 every 10 s for 50 intervals,
/// float `v`, integer `n`, string `s`; host h7 has `n` only. Times differ per host by its
/// number of ms, except at 0 s and 250 s where every host has a point (ties: `first` and
/// `last` pick the series the embedded engine picks).
fn points() -> String {
    let mut out = String::new();
    for i in 0..50i64 {
        for h in 0..8i64 {
            let t = i * 10_000_000_000 + if i % 25 == 0 { 0 } else { h * 1_000_000 };
            let dc = h % 3;
            if h == 7 {
                out.push_str(&format!("cpu,host=h{h},dc=dc{dc} n={}i {t}\n", i * h));
            } else {
                out.push_str(&format!(
                    "cpu,host=h{h},dc=dc{dc} v={},n={}i,s=\"s{i}\" {t}\n",
                    i as f64 * 1.5 + h as f64,
                    i * h
                ));
            }
        }
    }
    out
}

/// Rewrites of some points: `v` of hosts h1 and h4 at every fifth interval (field by field:
/// `n` and `s` stay), and a point of h2 given `v` where it had none… of its own write.
fn rewrites(scale: f64) -> String {
    let mut out = String::new();
    for i in (0..50i64).step_by(5) {
        for h in [1i64, 4] {
            let t = i * 10_000_000_000 + if i % 25 == 0 { 0 } else { h * 1_000_000 };
            out.push_str(&format!(
                "cpu,host=h{h},dc=dc{} v={} {t}\n",
                h % 3,
                -(i as f64) * scale
            ));
        }
    }
    out
}

/// Statements of each family, and whether the shards compute them.
const STATEMENTS: &[(&str, bool)] = &[
    // count, sum, mean
    ("SELECT count(v), count(n), count(s) FROM cpu", true),
    (
        "SELECT sum(v), sum(n), mean(v), mean(n) FROM cpu GROUP BY dc",
        true,
    ),
    // min, max, spread
    (
        "SELECT min(v), max(v), max(n), spread(v), spread(n) FROM cpu GROUP BY host",
        true,
    ),
    // first, last (with ties between series at 0 s and 250 s)
    (
        "SELECT first(v), last(n), first(s), last(s) FROM cpu GROUP BY dc",
        true,
    ),
    ("SELECT last(v) FROM cpu GROUP BY host", true),
    ("SELECT first(n) FROM cpu", true),
    ("SELECT last(v) FROM cpu WHERE time < 245s", true),
    // grouped by tags and time, with fill, order, limits and tag conditions
    (
        "SELECT count(v), mean(v), max(n) FROM cpu WHERE time >= 0s AND time < 500s \
         GROUP BY time(60s, 20s), dc fill(0)",
        true,
    ),
    (
        "SELECT sum(v), first(v) FROM cpu WHERE time >= 30s AND time <= 300s \
         GROUP BY time(45s) fill(previous) ORDER BY time DESC LIMIT 4",
        true,
    ),
    (
        "SELECT count(n) FROM cpu WHERE (host = 'h1' OR dc =~ /dc[02]/) AND host != 'h6' \
         AND time >= 0s AND time < 500s GROUP BY time(100s), * fill(null) SLIMIT 3 SOFFSET 1",
        true,
    ),
    (
        "SELECT spread(v) FROM cpu WHERE nosuch = '' GROUP BY host",
        false,
    ),
    // Transformations of pushed-down aggregates, run on the node over the combined windows
    // as after the embedded statement (`post.rs`): fill before them, limits on their rows.
    (
        "SELECT derivative(mean(v), 1s) FROM cpu WHERE time >= 0s AND time < 500s \
         GROUP BY time(30s), dc",
        true,
    ),
    (
        "SELECT non_negative_derivative(max(n)), mean(v) FROM cpu WHERE time >= 0s \
         AND time < 500s GROUP BY time(40s) fill(previous)",
        true,
    ),
    (
        "SELECT difference(sum(v)), cumulative_sum(count(v)) FROM cpu WHERE time >= 0s \
         AND time < 500s GROUP BY time(50s), host fill(0) LIMIT 3 OFFSET 1",
        true,
    ),
    (
        "SELECT moving_average(mean(v), 3) FROM cpu WHERE time >= 20s AND time < 480s \
         GROUP BY time(60s, 10s) ORDER BY time DESC",
        true,
    ),
    (
        "SELECT derivative(last(v)) * 8, elapsed(first(n), 1s) FROM cpu WHERE time >= 0s \
         AND time < 500s GROUP BY time(100s), * SLIMIT 2",
        true,
    ),
    (
        "SELECT non_negative_difference(spread(v)) FROM cpu WHERE time >= 0s \
         AND time < 500s GROUP BY time(1m) tz('Asia/Kolkata')",
        true,
    ),
    // Arithmetic of pushed-down aggregates, evaluated on the node.
    (
        "SELECT mean(v) * 8, sum(v) / sum(n), count(v) - 1, (max(n) + min(n)) * 3 \
         FROM cpu GROUP BY dc",
        true,
    ),
    (
        "SELECT sum(n) * 2 + 1, max(v) / 0, 1.5 - mean(n) FROM cpu WHERE time >= 0s \
         AND time < 500s GROUP BY time(100s) fill(none)",
        true,
    ),
    ("SELECT sum(n) % 7 FROM cpu GROUP BY dc", false),
    // mode: each value's points counted on the shards, the reducer's tie rule on the node
    // (`v` is mostly one point per value: ties everywhere).
    ("SELECT mode(v) FROM cpu GROUP BY dc", true),
    ("SELECT mode(n), count(v) FROM cpu GROUP BY host", true),
    (
        "SELECT mode(s) FROM cpu WHERE time >= 0s AND time < 500s \
         GROUP BY time(100s), dc fill(none) LIMIT 3",
        true,
    ),
    ("SELECT mode(n) FROM cpu WHERE host =~ /h[0-3]/", true),
    // In a zone's windows: the shards' finer intervals add up on the node.
    (
        "SELECT mode(s) FROM cpu WHERE time >= 0s AND time < 500s \
         GROUP BY time(2m), dc tz('Asia/Kolkata')",
        true,
    ),
    // distinct: each value's first time from the shards, the reducer's order on the node.
    (
        "SELECT distinct(v) FROM cpu WHERE time < 60s GROUP BY dc",
        true,
    ),
    ("SELECT distinct(n) FROM cpu WHERE host = 'h3'", true),
    (
        "SELECT distinct(n) FROM cpu WHERE time >= 0s AND time < 500s AND dc = 'dc0' \
         GROUP BY time(2m) tz('Asia/Kolkata')",
        true,
    ),
    (
        "SELECT distinct(s) FROM cpu WHERE time >= 0s AND time < 200s \
         GROUP BY time(50s), dc LIMIT 4 OFFSET 1",
        true,
    ),
    // Not decomposable: the rows come to the node.
    ("SELECT median(v) FROM cpu GROUP BY dc", false),
    ("SELECT stddev(v), count(n) FROM cpu", false),
    // `stddev` of an integer field: from the shards' sums, exact (`cluster_stddev.rs`).
    ("SELECT stddev(n), count(v) FROM cpu", true),
    ("SELECT count(v) FROM cpu WHERE v > 10", false),
    // A lone selector shows its point's time; pushed down since the partials carry it.
    ("SELECT max(v) FROM cpu", true),
    // Raw reads with a field condition: the shards send the rows meeting it, every row of
    // a series with a point written twice or with undelivered rows (the point merged first).
    ("SELECT * FROM cpu WHERE v > 20", false),
    ("SELECT * FROM cpu WHERE v < 0 AND time < 400s", false),
    ("SELECT * FROM cpu WHERE n > 40.5", false),
    (
        "SELECT v, n FROM cpu WHERE (v >= 30 OR n = 0) AND host != 'h2'",
        false,
    ),
    // Raw reads with a limit: each series' first points only come to the node.
    ("SELECT v, s FROM cpu GROUP BY dc LIMIT 3", false),
    (
        "SELECT v FROM cpu WHERE host != 'h2' ORDER BY time DESC LIMIT 2 OFFSET 1",
        false,
    ),
];

/// `chingest_cluster_pushdown_combined_total{by="rust"}` on `s`.
fn combined_in_rust(s: &Server) -> u64 {
    let text = s.get("/metrics").text().unwrap();
    let prefix = "chingest_cluster_pushdown_combined_total{by=\"rust\"} ";
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .map_or(0, |v| v.trim().parse::<f64>().unwrap() as u64)
}

fn on_d(s: &Server, q: &str) -> Value {
    statement_at(s, "/query?db=d", q)
}

/// Every statement of [`STATEMENTS`] answers on `node` as on `embedded`, by the path listed.
fn check_statements(node: &Server, embedded: &Server) {
    for (q, pushed) in STATEMENTS {
        let want = on_d(embedded, q);
        assert!(want["results"][0].get("error").is_none(), "{q}: {want}");
        let (before_pushed, before_rows) = (reads(node, "pushdown"), reads(node, "rows"));
        let before_rust = combined_in_rust(node);
        let got = on_d(node, q);
        assert_eq!(got, want, "{q}");
        let (after_pushed, after_rows) = (reads(node, "pushdown"), reads(node, "rows"));
        let path = if *pushed { "pushdown" } else { "rows" };
        assert_eq!(
            (after_pushed - before_pushed, after_rows - before_rows),
            if *pushed { (1, 0) } else { (0, 1) },
            "{q} should take the {path} path"
        );
        // Every pushed-down read's partials are combined in Rust, none by the engine.
        assert_eq!(
            combined_in_rust(node) - before_rust,
            u64::from(*pushed),
            "{q}: combined in Rust"
        );
    }
}

#[test]
fn aggregates_the_shards_compute_answer_as_the_embedded_engine() {
    const TEST: &str = "aggregates_the_shards_compute_answer_as_the_embedded_engine";
    let Some((_dir, shards)) = two_shard_cluster(TEST) else {
        return;
    };
    let (s0, s1) = (&shards[0], &shards[1]);
    let (node_dir, embedded_dir) = (data_dir(), data_dir());
    let node = Spawn::new(node_dir.path())
        .config(&cluster_config_named(&[s0, s1], "n1"))
        .start();
    let embedded = Spawn::new(embedded_dir.path()).start();
    for s in [&node, &embedded] {
        s.query("CREATE DATABASE d");
        for body in [points(), rewrites(1.0)] {
            assert_eq!(s.post("/write?db=d", body).status(), 204);
        }
    }
    wait_delivered(&[&node], Duration::from_secs(60));
    check_statements(&node, &embedded);
}

#[test]
fn undelivered_rewrites_of_points_on_the_shards_count_in_pushed_aggregates() {
    // Then rewrites of points the shards hold, a new series and a new point of a known one,
    // undelivered.
    let more = "cpu,host=h9,dc=dc1 v=100,n=1i 15000000000\ncpu,host=h0,dc=dc0 v=-50 5000000000\n";
    delivered_then_held(
        "undelivered_rewrites_of_points_on_the_shards_count_in_pushed_aggregates",
        &[points()],
        &[rewrites(3.0), more.to_string()],
        22,
        check_statements,
    );
}

#[test]
fn an_aggregate_over_more_points_than_max_result_rows_answers() {
    const TEST: &str = "an_aggregate_over_more_points_than_max_result_rows_answers";
    let Some((_dir, shards)) = two_shard_cluster(TEST) else {
        return;
    };
    let (s0, s1) = (&shards[0], &shards[1]);
    let node_dir = data_dir();
    let config = cluster_config_named(&[s0, s1], "n1") + "\n[sql]\nmax_result_rows = 1000\n";
    let node = Spawn::new(node_dir.path()).config(&config).start();
    node.query("CREATE DATABASE d");
    let body: String = (0..5_000)
        .map(|i| format!("cpu,host=h{} v={i} {}\n", i % 10, i * 1_000_000_000i64))
        .collect();
    assert_eq!(node.post("/write?db=d", body).status(), 204);
    wait_delivered(&[&node], Duration::from_secs(60));
    let r = on_d(&node, "SELECT count(v), sum(v), max(v) FROM cpu");
    let row = &r["results"][0]["series"][0]["values"][0];
    assert_eq!(
        (row[1].as_u64(), row[2].as_f64(), row[3].as_f64()),
        (Some(5000), Some(12_497_500.0), Some(4999.0)),
        "{r}"
    );
    let r = on_d(&node, "SELECT last(v) FROM cpu GROUP BY host");
    assert_eq!(
        r["results"][0]["series"].as_array().map(Vec::len),
        Some(10),
        "{r}"
    );
    // The rows path still refuses that many rows, and the answer stays bounded.
    let r = on_d(&node, "SELECT median(v) FROM cpu");
    assert!(
        r["results"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("max_result_rows")),
        "{r}"
    );
    let r = on_d(
        &node,
        "SELECT count(v) FROM cpu WHERE time >= 0s AND time < 5000s GROUP BY time(1s)",
    );
    assert!(r["results"][0]["error"].is_string(), "{r}");
}

/// A raw read with `LIMIT` takes from the shards only each series' first points (in the
/// statement's order) that show: over 5× `[sql] max_result_rows` points it answers, as the
/// embedded engine does, rewrites and all.
#[test]
fn a_raw_read_with_a_limit_reads_each_series_first_points_only() {
    const TEST: &str = "a_raw_read_with_a_limit_reads_each_series_first_points_only";
    let Some((_dir, shards)) = two_shard_cluster(TEST) else {
        return;
    };
    let (s0, s1) = (&shards[0], &shards[1]);
    let (node_dir, embedded_dir) = (data_dir(), data_dir());
    let limits = "\n[sql]\nmax_result_rows = 1000\n";
    let node = Spawn::new(node_dir.path())
        .config(&(cluster_config_named(&[s0, s1], "n1") + limits))
        .start();
    let embedded = Spawn::new(embedded_dir.path()).config(limits).start();
    // 5,000 points over 10 hosts; v missing at host h3's first points, rewritten at h1's.
    let body: String = (0..5_000i64)
        .map(|i| {
            let (h, t) = (i % 10, i / 10 * 1_000_000_000);
            match h {
                3 if t < 5_000_000_000 => format!("cpu,host=h{h},dc=dc{} n={i}i {t}\n", h % 2),
                _ => format!("cpu,host=h{h},dc=dc{} v={i},n={i}i {t}\n", h % 2),
            }
        })
        .collect();
    let rewrite: String = (0..5i64)
        .map(|t| format!("cpu,host=h1,dc=dc1 v=-{t} {}\n", t * 1_000_000_000))
        .collect();
    for s in [&node, &embedded] {
        s.query("CREATE DATABASE d");
        assert_eq!(s.post("/write?db=d", body.clone()).status(), 204);
        assert_eq!(s.post("/write?db=d", rewrite.clone()).status(), 204);
    }
    wait_delivered(&[&node], Duration::from_secs(60));
    for q in [
        "SELECT v FROM cpu LIMIT 7",
        "SELECT v, n FROM cpu WHERE host =~ /h[1-4]/ GROUP BY dc LIMIT 4 OFFSET 2",
        "SELECT * FROM cpu GROUP BY host ORDER BY time DESC LIMIT 3",
        "SELECT v FROM cpu WHERE time >= 100s AND time <= 300s GROUP BY * LIMIT 2",
    ] {
        let want = on_d(&embedded, q);
        assert!(want["results"][0].get("error").is_none(), "{q}: {want}");
        assert_eq!(on_d(&node, q), want, "{q}");
    }
    // Without a limit the rows still exceed the bound.
    let r = on_d(&node, "SELECT v FROM cpu");
    assert!(r["results"][0]["error"].is_string(), "{r}");
}
