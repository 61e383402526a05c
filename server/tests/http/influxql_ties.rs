//! `first()` and `last()` over several series whose points share the chosen time (no
//! `GROUP BY`): the larger value wins, on the embedded engine and on a ClickHouse cluster
//! alike (issue #44 item 5). Before, the pick was whichever row the engine read first
//! among the tied ones, so the same points answered 48.92 embedded and 27.62 on a cluster.
//! InfluxDB 1.6.7 has no rule here (its merge order; docs/influxql.md, "Deviations").

use std::time::Duration;

use serde_json::{json, Value};

use crate::cluster::{cluster_config_named, two_shard_cluster, wait_delivered, wait_listed};
use crate::util::*;

/// 2020-09-13T12:00:00Z in s.
const BASE: i64 = 1_599_998_400;

/// Twenty series at the same two times, each time's values a permutation of 1..=20, so
/// that the largest is neither the first nor the last series in any order the rows could
/// be read in but by chance one in twenty.
fn points() -> String {
    let mut lines = Vec::new();
    for i in 0..20i64 {
        let first = (i * 13) % 20 + 1;
        let last = (i * 7) % 20 + 1;
        lines.push(format!("tie,host=h{i:02} v={first}i,f={first}.5 {BASE}"));
        lines.push(format!(
            "tie,host=h{i:02} v={last}i,f={last}.5 {}",
            BASE + 60
        ));
    }
    lines.join("\n")
}

/// The values of the first series of the first statement of `q` on `db`, epoch in s.
fn values(s: &Server, db: &str, q: &str) -> Value {
    let r = s
        .client
        .get(s.url("/query"))
        .query(&[("db", db), ("q", q), ("epoch", "s")])
        .send()
        .unwrap();
    assert_eq!(r.status(), 200, "{q}");
    let body: Value = r.json().unwrap();
    body["results"][0]["series"][0]["values"].clone()
}

/// Every statement and the answer the rule gives: h17's 20 is the largest last value
/// (17·7 mod 20 = 19), h03's 20 the largest first value (3·13 mod 20 = 19).
fn expected() -> Vec<(&'static str, Value)> {
    let (t0, t1) = (BASE, BASE + 60);
    vec![
        ("SELECT last(v) FROM tie", json!([[t1, 20]])),
        ("SELECT first(v) FROM tie", json!([[t0, 20]])),
        ("SELECT last(v), host FROM tie", json!([[t1, 20, "h17"]])),
        ("SELECT first(v), host FROM tie", json!([[t0, 20, "h03"]])),
        (
            "SELECT first(f), last(f) FROM tie",
            json!([[0, 20.5, 20.5]]),
        ),
        (
            "SELECT last(f) FROM tie WHERE time >= '2020-09-13T12:00:00Z' \
             AND time < '2020-09-13T12:02:00Z' GROUP BY time(1m)",
            json!([[t0, 20.5], [t1, 20.5]]),
        ),
    ]
}

fn check(s: &Server, db: &str) {
    for (q, want) in expected() {
        assert_eq!(values(s, db, q), want, "{q}");
    }
}

#[test]
fn first_and_last_break_ties_between_series_by_the_larger_value() {
    // The hot store's evaluator and the engine's statements (`[hot] enabled = false`).
    for config in [
        "[hot]\nenabled = true\nhold = \"all\"\n",
        "[hot]\nenabled = false\n",
    ] {
        let dir = data_dir();
        let s = Spawn::new(dir.path()).config(config).start();
        s.query("CREATE DATABASE t");
        let r = s.post("/write?db=t&precision=s", points());
        assert_eq!(r.status(), 204, "{:?}", r.text());
        // Unflushed and flushed: the rule holds on both reads.
        check(&s, "t");
        wait_delivered(&[&s], Duration::from_secs(120));
        check(&s, "t");
    }
}

#[test]
fn first_and_last_break_ties_the_same_way_on_a_cluster() {
    let test = "first_and_last_break_ties_the_same_way_on_a_cluster";
    let Some((_dir, shards)) = two_shard_cluster(test) else {
        return;
    };
    let dir = data_dir();
    let s = Spawn::new(dir.path())
        .config(&cluster_config_named(&[&shards[0], &shards[1]], "n1"))
        .start();
    s.query("CREATE DATABASE t");
    wait_listed(&s, "t");
    let r = s.post("/write?db=t&precision=s", points());
    assert_eq!(r.status(), 204, "{:?}", r.text());
    check(&s, "t");
    // Once the shards hold every point (the rows come from two servers then).
    wait_delivered(&[&s], Duration::from_secs(120));
    check(&s, "t");
}
