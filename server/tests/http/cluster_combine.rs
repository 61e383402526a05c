//! Issue #43: the shards' partial aggregates combined in Rust on the node
//! (`storage/src/influxql/pushdown/combine.rs`) instead of an embedded-engine statement.
//! Per function family, over two real 18.16 shards: every statement takes the pushed-down
//! path and the Rust combination (`chingest_cluster_reads_total{path="pushdown"}`,
//! `chingest_cluster_pushdown_combined_total{by="rust"}`), and answers value for value
//! what the embedded engine answers on the same writes — with points rewritten on the
//! shards, with undelivered rows (rewrites of delivered points, a new series), empty
//! windows and every fill mode; an integer, an unsigned and a string field beside a float.

use std::time::Duration;

use serde_json::Value;

use crate::cluster::{cluster_config_named, statement_at, two_shard_cluster, wait_delivered};
use crate::util::*;

/// Counter `name{label}` on `s` (`label` as `key="value"`; 0 when not exported yet).
fn counter(s: &Server, name: &str, label: &str) -> u64 {
    let text = s.get("/metrics").text().unwrap();
    let prefix = format!("{name}{{{label}}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(0, |v| v.trim().parse::<f64>().unwrap() as u64)
}

/// (pushed down, combined in Rust, combined by the engine, read the rows) so far on `s`.
fn paths(s: &Server) -> [u64; 4] {
    let reads = "chingest_cluster_reads_total";
    let combined = "chingest_cluster_pushdown_combined_total";
    [
        counter(s, reads, "path=\"pushdown\""),
        counter(s, combined, "by=\"rust\""),
        counter(s, combined, "by=\"engine\""),
        counter(s, reads, "path=\"rows\""),
    ]
}

/// Points of `m`: hosts h0..h5 in dc0, dc1 every 10 s from 0 s to 590 s, none from 200 s to
/// 299 s (empty windows); float `v`, integer `n`, unsigned `u`, string `s`. At 0 s and 400 s
/// every host has a point at the same time and the same `v` (ties between series for
/// `first`/`last`); otherwise times differ per host by its number of ms. Host h5 has no
/// `v`, host h4 no `u`.
pub(crate) fn points() -> String {
    let mut out = String::new();
    for i in (0..60i64).filter(|i| !(20..30).contains(i)) {
        for h in 0..6i64 {
            let tie = i == 0 || i == 40;
            let t = i * 10_000_000_000 + if tie { 0 } else { h * 1_000_000 };
            // Multiples of 1/4: sums exact in any order, so shard-by-shard sums equal the
            // embedded engine's.
            let v = if tie {
                7.25
            } else {
                i as f64 * 0.25 - h as f64 * 2.5
            };
            let mut fields = Vec::new();
            if h != 5 {
                fields.push(format!("v={v}"));
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

/// Rewrites of points already written: `v` and `u` of hosts h1 and h2 every seventh
/// interval (`n`, `s` stay), scaled by `k` so a second round differs from the first.
pub(crate) fn rewrites(k: i64) -> String {
    let mut out = String::new();
    for i in (0..60i64).filter(|i| i % 7 == 0 && !(20..30).contains(i)) {
        for h in [1i64, 2] {
            let tie = i == 0 || i == 40;
            let t = i * 10_000_000_000 + if tie { 0 } else { h * 1_000_000 };
            out.push_str(&format!(
                "m,host=h{h},dc=dc{} v={},u={}u {t}\n",
                h % 2,
                -(i as f64) * k as f64 - 0.5,
                (i * k) as u64 + 100
            ));
        }
    }
    out
}

/// The statements of one function family: `{agg}` is replaced by its columns. Each shape
/// runs with and without windows, tag groups, fills and tag conditions.
const SHAPES: &[&str] = &[
    "SELECT {agg} FROM m",
    "SELECT {agg} FROM m GROUP BY host",
    "SELECT {agg} FROM m WHERE dc = 'dc1' GROUP BY *",
    "SELECT {agg} FROM m WHERE host = 'nosuch'",
    "SELECT {agg} FROM m WHERE time >= 0s AND time < 600s GROUP BY time(60s)",
    "SELECT {agg} FROM m WHERE time >= 100s AND time < 400s GROUP BY time(30s, 10s), dc fill(null)",
    "SELECT {agg} FROM m WHERE time >= 100s AND time < 400s GROUP BY time(30s), dc fill(none)",
    "SELECT {agg} FROM m WHERE time >= 100s AND time < 400s GROUP BY time(30s) fill(0)",
    "SELECT {agg} FROM m WHERE time >= 100s AND time < 400s GROUP BY time(30s) fill(-3)",
    "SELECT {agg} FROM m WHERE time >= 100s AND time < 400s GROUP BY time(30s), host fill(previous)",
    "SELECT {agg} FROM m WHERE time >= 100s AND time < 400s GROUP BY time(30s), host fill(linear)",
    "SELECT {agg} FROM m WHERE time >= 150s AND time < 350s AND host =~ /h[0-3]/ \
     GROUP BY time(20s) fill(previous) ORDER BY time DESC LIMIT 5",
    "SELECT {agg} FROM m WHERE time >= 0s AND time < 600s GROUP BY time(100s), * SLIMIT 2 SOFFSET 1",
];

/// `f(x)` of each numeric field `x` for each of `funcs`, and `f(s)` with `string_too`.
fn family(funcs: &[&str], string_too: bool) -> String {
    let mut cols = Vec::new();
    for f in funcs {
        for x in ["v", "n", "u"] {
            cols.push(format!("{f}({x})"));
        }
        if string_too {
            cols.push(format!("{f}(s)"));
        }
    }
    cols.join(", ")
}

/// Every statement answers on `node` as on `embedded`, each pushed down and combined in Rust.
fn check(node: &Server, embedded: &Server, statements: &[String]) {
    for q in statements {
        let q = q.as_str();
        let want = statement_at(embedded, "/query?db=d", q);
        assert!(want["results"][0].get("error").is_none(), "{q}: {want}");
        let before = paths(node);
        let got = statement_at(node, "/query?db=d", q);
        let after = paths(node);
        assert_eq!(got, want, "{q}");
        let ran: Vec<u64> = after.iter().zip(before).map(|(a, b)| a - b).collect();
        assert_eq!(
            ran,
            [1, 1, 0, 0],
            "{q}: (pushed down, combined in Rust, by the engine, rows) should be (1, 1, 0, 0)"
        );
    }
}

/// Every shape of `agg` and the `extra` statements, as [`statements_test`] checks them.
fn family_test(test: &str, agg: &str, extra: &[&str]) {
    let statements: Vec<String> = SHAPES
        .iter()
        .map(|s| s.replace("{agg}", agg))
        .chain(extra.iter().map(|s| s.to_string()))
        .collect();
    statements_test(test, &statements);
}

/// `statements`, first with every write delivered (rewrites on the shards), then with
/// rewrites of delivered points and a new series held on the node.
fn statements_test(test: &str, statements: &[String]) {
    let Some((_dir, shards)) = two_shard_cluster(test) else {
        return;
    };
    let (s0, s1) = (&shards[0], &shards[1]);
    let (node_dir, embedded_dir) = (data_dir(), data_dir());
    let config = cluster_config_named(&[s0, s1], "n1");
    let mut node = Spawn::new(node_dir.path()).config(&config).start();
    let embedded = Spawn::new(embedded_dir.path()).start();
    for s in [&node, &embedded] {
        s.query("CREATE DATABASE d");
        for body in [points(), rewrites(1)] {
            assert_eq!(s.post("/write?db=d", body).status(), 204);
        }
    }
    wait_delivered(&[&node], Duration::from_secs(60));
    check(&node, &embedded, statements);
    node.terminate();
    // Again, delivering only after ten minutes: the new rows stay on the node.
    let node = Spawn::new(node_dir.path())
        .config(&config)
        .env("CHINGEST_FLUSH__MAX_AGE_MS", "600000")
        .start();
    let more = "m,host=h9,dc=dc1 v=100,n=1i,u=3u,s=\"new\" 15000000000\n\
                m,host=h0,dc=dc0 v=-50,u=0u 5000000000\n";
    for s in [&node, &embedded] {
        assert_eq!(s.post("/write?db=d", rewrites(3)).status(), 204);
        assert_eq!(s.post("/write?db=d", more).status(), 204);
    }
    let h: Value = node.get("/health").json().unwrap();
    assert!(
        h["wal"]["unflushed_points"].as_u64().unwrap() >= 10,
        "the rewrites were meant to stay undelivered: {h}"
    );
    check(&node, &embedded, statements);
}

#[test]
fn count_sum_and_mean_combine_in_rust_as_the_engine_answers() {
    family_test(
        "count_sum_and_mean_combine_in_rust_as_the_engine_answers",
        &format!("{}, count(s)", family(&["count", "sum", "mean"], false)),
        &["SELECT mean(u), count(u) FROM m WHERE time >= 200s AND time < 300s"],
    );
}

#[test]
fn min_max_and_spread_combine_in_rust_as_the_engine_answers() {
    family_test(
        "min_max_and_spread_combine_in_rust_as_the_engine_answers",
        &family(&["min", "max", "spread"], false),
        &["SELECT spread(u), max(n) FROM m WHERE time >= 200s AND time < 300s"],
    );
}

#[test]
fn first_and_last_combine_in_rust_as_the_engine_answers() {
    family_test(
        "first_and_last_combine_in_rust_as_the_engine_answers",
        &family(&["first", "last"], true),
        &[
            // A lone selector shows its point's time; ties between series at 0 s, 400 s.
            "SELECT last(v) FROM m",
            "SELECT first(v) FROM m GROUP BY dc",
            "SELECT last(s) FROM m WHERE time <= 400s GROUP BY dc",
            "SELECT first(u) FROM m WHERE time >= 1s GROUP BY host",
            "SELECT last(n) FROM m WHERE time >= 200s AND time < 300s",
        ],
    );
}

#[test]
fn wildcards_lone_min_max_and_zone_windows_push_down() {
    family_test(
        "wildcards_lone_min_max_and_zone_windows_push_down",
        "count(*), max(*), mean(/^[nuv]$/)",
        &[
            // A lone `min`/`max` shows its point's time: the earliest of equal values
            // (`n`, `u` repeat across points; `v` ties between series at 0 s and 400 s).
            "SELECT max(v) FROM m",
            "SELECT min(v) FROM m WHERE time >= 0s AND time <= 0s",
            "SELECT min(n) FROM m GROUP BY dc",
            "SELECT max(u) FROM m GROUP BY host",
            "SELECT max(n) FROM m WHERE host =~ /h[12]/",
            "SELECT min(u) FROM m WHERE time >= 200s AND time < 300s",
            "SELECT count(*) FROM m WHERE time >= 200s AND time < 300s",
            // `tz()` windows: Asia/Kolkata (+5:30) puts a 7-minute window's edge at 360 s,
            // UTC's at 420 s.
            "SELECT count(v), sum(n), first(s), max(u), last(v) FROM m WHERE time >= 0s AND time < 600s \
             GROUP BY time(7m) tz('Asia/Kolkata')",
            "SELECT mean(*) FROM m WHERE time >= 0s AND time < 600s \
             GROUP BY time(7m, 2m), dc fill(previous) tz('Asia/Kolkata')",
            "SELECT min(n), spread(v) FROM m WHERE time >= 100s AND time < 500s \
             GROUP BY time(45s), host fill(0) tz('America/St_Johns')",
        ],
    );
}

#[test]
fn count_distinct_unites_the_shards_sets() {
    family_test(
        "count_distinct_unites_the_shards_sets",
        "count(distinct(v)), count(DISTINCT n), count(distinct(u)), count(distinct(s))",
        &[
            // Values repeat across series, on both shards and on the node (the rewrites of
            // h1 and h2 held there), so a value must read the same in every set.
            "SELECT count(distinct(v)), sum(n), max(u) FROM m GROUP BY dc",
            "SELECT count(distinct(n)) FROM m WHERE time >= 200s AND time < 300s",
            "SELECT count(distinct(v)), count(distinct(s)) FROM m WHERE time >= 0s AND time < 600s \
             GROUP BY time(2m), host",
        ],
    );
}

#[test]
fn median_and_percentile_of_one_series_groups_run_whole_on_its_shard() {
    // Grouped by every tag key (`*`, or each named): every group is one series, on one
    // shard or (undelivered rows) on the node. A lone `percentile` shows its point's time.
    let statements: Vec<String> = [
        "SELECT median(v), median(n), median(u), percentile(v, 90), percentile(n, 50), \
         percentile(u, 5) FROM m GROUP BY *",
        "SELECT median(v), percentile(n, 33.3), count(v) FROM m WHERE time >= 100s AND time < 400s \
         GROUP BY time(30s), * fill(0)",
        "SELECT percentile(v, 75) FROM m GROUP BY host, dc",
        "SELECT percentile(u, 100) FROM m WHERE dc = 'dc1' GROUP BY *",
        "SELECT median(v), sum(n) FROM m WHERE time >= 150s AND time < 350s \
         GROUP BY time(20s), * fill(previous) ORDER BY time DESC LIMIT 5",
        "SELECT percentile(n, 10), median(u) FROM m WHERE time >= 200s AND time < 300s GROUP BY *",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    statements_test(
        "median_and_percentile_of_one_series_groups_run_whole_on_its_shard",
        &statements,
    );
}
