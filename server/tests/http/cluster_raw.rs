//! Issue #43: a raw read whose condition the shards apply whole (TSBS `high-cpu-all`,
//! `SELECT * FROM cpu WHERE usage_user > 90`) is answered from the shards' rows built in
//! Rust (`storage/src/influxql/cluster_raw.rs`), on two real 18.16 shards written by two
//! nodes: while every point is one row, no `engine` stage in `Server-Timing`; once points
//! are written twice, the rows of their series are merged into points by the engine beside
//! the others. Every answer equals the embedded engine's on the same writes.

use crate::cluster::wait_values;
use crate::cluster_last_point::with_path;
use crate::cluster_oracle::{on_d, points, NodesAndOracle};

/// Raw reads the shards filter whole: field comparisons with numbers, tag conditions, in
/// both orders, grouped or not, with a point shown only where a selected field is set.
const STATEMENTS: &[&str] = &[
    "SELECT * FROM cpu WHERE v > 20",
    "SELECT * FROM cpu WHERE v > 20 AND host =~ /h1/ ORDER BY time DESC",
    "SELECT v, dc FROM cpu WHERE n >= 40.5 OR v < 0 GROUP BY host",
    "SELECT n, v FROM cpu WHERE v > 10 AND dc != 'dc1' GROUP BY dc",
    "SELECT v FROM cpu WHERE n > 3",
    "SELECT v, host FROM cpu WHERE n > 3 OR v < 0 GROUP BY *",
];

/// Points of `h30`: `n` only (`SELECT v` shows none of them).
fn n_only(from: i64, intervals: i64) -> String {
    (from..from + intervals)
        .map(|i| format!("cpu,host=h30,dc=dc2 n={}i {}\n", i * 7, i * 10_000_000_000))
        .collect()
}

/// Points of `hosts` written again at every third interval: `v` only, negative.
fn rewrites(hosts: &[i64]) -> String {
    let mut out = String::new();
    for i in (0..30i64).step_by(3) {
        for h in hosts {
            out.push_str(&format!(
                "cpu,host=h{h},dc=dc{} v={} {}\n",
                h % 4,
                -(i as f64) - 1.0,
                i * 10_000_000_000
            ));
        }
    }
    out
}

/// Every statement answers on each node as on `embedded`; `merged`: whether the engine
/// merged some series' rows (else none: every answer row built in Rust).
fn check(step: &str, c: &NodesAndOracle, merged: bool) {
    for node in c.nodes() {
        let fields = "SHOW FIELD KEYS FROM cpu";
        let want = on_d(&c.embedded, fields)["results"][0]["series"][0]["values"].clone();
        wait_values(node, "/query?db=d", fields, want);
        for q in STATEMENTS {
            let want = on_d(&c.embedded, q);
            assert!(want["results"][0].get("error").is_none(), "{q}: {want}");
            assert!(want["results"][0]["series"].is_array(), "{q}: {want}");
            let (got, _, timing) = with_path(node, q);
            assert_eq!(got, want, "{step}: {q}");
            assert!(timing.contains("shards;"), "{step}: {q}: {timing}");
            if !merged {
                assert!(!timing.contains("engine;"), "{step}: {q}: {timing}");
            }
        }
    }
}

#[test]
fn raw_reads_the_shards_filter_are_built_without_the_engine_and_answer_as_it() {
    const TEST: &str = "raw_reads_the_shards_filter_are_built_without_the_engine_and_answer_as_it";
    let Some(c) = NodesAndOracle::start(TEST) else {
        return;
    };
    let hosts: Vec<i64> = (0..20).collect();
    c.write(&c.n1, points(&hosts, 0, 30) + &n_only(0, 30));
    check("points once", &c, false);

    // Points of h1 and h5 written again (by the node that wrote them: which of two nodes'
    // writes of a point is the later is not defined): their series' rows come whole and
    // are merged (the later write's `v`), the others still built in Rust; both nodes read.
    c.write(&c.n1, rewrites(&[1, 5]));
    check("rewritten", &c, true);
    let (_, _, timing) = with_path(&c.n1, "SELECT * FROM cpu WHERE v < 0");
    assert!(
        timing.contains("engine;"),
        "rewritten points merged: {timing}"
    );
}
