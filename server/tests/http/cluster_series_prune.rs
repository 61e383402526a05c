//! Issue #43: a statement whose condition names a tag's values (`host = 'h3'`, `OR`s of
//! those, `=~ /^(a|b)$/`) asks each shard only for the series holding them
//! (`series_id IN (…)`, from the node's map of the shard table's tag values to series,
//! `cluster/src/series_of_tags.rs`), validated by the listing of the table's parts the read
//! carries; on two real 18.16 shards written by two nodes. After every change — another
//! node writing a new series of a host the statements name, a merge, a `DELETE`, a
//! measurement dropped and made again — every statement answers what the embedded engine
//! answers on the same points, and `chingest_cluster_series_pruning_total` shows which way
//! each shard was read.

use std::time::Duration;

use serde_json::Value;

use crate::cluster::clickhouse_server::Shard;
use crate::cluster::{
    cluster_config_named, statement_at, two_shard_cluster, wait_delivered, wait_listed, wait_values,
};
use crate::util::*;

/// `chingest_cluster_series_pruning_total{outcome="<outcome>"}` on `s`.
fn pruning(s: &Server, outcome: &str) -> u64 {
    let text = s.get("/metrics").text().unwrap();
    let prefix = format!("chingest_cluster_series_pruning_total{{outcome=\"{outcome}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(0, |v| v.trim().parse::<f64>().unwrap() as u64)
}

/// Hosts `hosts` in 4 dcs, a point every 10 s for `intervals` intervals from `from`: float
/// `v`, integer `n`.
fn points(hosts: &[i64], from: i64, intervals: i64) -> String {
    let mut out = String::new();
    for i in from..from + intervals {
        for &h in hosts {
            out.push_str(&format!(
                "cpu,host=h{h},dc=dc{} v={},n={}i {}\n",
                h % 4,
                i as f64 + h as f64 / 8.0,
                i * h,
                i * 10_000_000_000
            ));
        }
    }
    out
}

const STATEMENTS: &[&str] = &[
    // TSBS single-groupby-1-1-1 and -1-8-1: pushed down.
    "SELECT max(v) FROM cpu WHERE (host = 'h3') AND time >= 0s AND time < 400s GROUP BY time(1m)",
    "SELECT max(v), count(n) FROM cpu WHERE (host = 'h1' OR host = 'h6' OR host = 'h30') \
     AND time < 400s GROUP BY time(1m), host",
    "SELECT mean(v) FROM cpu WHERE host =~ /^(h2|h5)$/ GROUP BY dc",
    // TSBS high-cpu-1: a raw read with a field condition.
    "SELECT * FROM cpu WHERE v > 10 AND host = 'h3'",
    "SELECT v, n FROM cpu WHERE v > 3 AND (host = 'h7' OR host = 'h8') AND time >= 50s",
];

fn on_d(s: &Server, q: &str) -> Value {
    statement_at(s, "/query?db=d", q)
}

/// Every statement answers on each node as on `embedded`.
fn check(step: &str, nodes: &[&Server], embedded: &Server) {
    for node in nodes {
        let fields = "SHOW FIELD KEYS FROM cpu";
        let want = on_d(embedded, fields)["results"][0]["series"][0]["values"].clone();
        wait_values(node, "/query?db=d", fields, want);
        for q in STATEMENTS {
            let want = on_d(embedded, q);
            assert!(want["results"][0].get("error").is_none(), "{q}: {want}");
            assert_eq!(on_d(node, q), want, "{step}: {q}");
        }
    }
}

fn on_shards(shards: &[Shard], sql: &str) {
    for s in shards {
        s.query(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}

#[test]
fn series_pruned_reads_answer_as_the_engine_through_new_series_merges_and_deletes() {
    const TEST: &str =
        "series_pruned_reads_answer_as_the_engine_through_new_series_merges_and_deletes";
    let Some((_dir, shards)) = two_shard_cluster(TEST) else {
        return;
    };
    let (s0, s1) = (&shards[0], &shards[1]);
    let dirs = [data_dir(), data_dir(), data_dir()];
    let n1 = Spawn::new(dirs[0].path())
        .config(&cluster_config_named(&[s0, s1], "n1"))
        .start();
    let n2 = Spawn::new(dirs[1].path())
        .config(&cluster_config_named(&[s0, s1], "n2"))
        .start();
    let embedded = Spawn::new(dirs[2].path()).start();
    let nodes = [&n1, &n2];
    let write = |node: &Server, body: String| {
        for s in [node, &embedded] {
            assert_eq!(s.post("/write?db=d", body.clone()).status(), 204);
        }
        wait_delivered(&nodes, Duration::from_secs(60));
    };
    for s in [&n1, &embedded] {
        s.query("CREATE DATABASE d");
    }
    wait_listed(&n2, "d");
    let hosts: Vec<i64> = (0..20).collect();
    write(&n1, points(&hosts, 0, 30));
    check("points once", &nodes, &embedded);
    // A host lives on one shard: the other is pruned to nothing.
    assert!(pruning(&n1, "pruned") > 0, "the statements were pruned");
    assert!(
        pruning(&n1, "none") > 0,
        "a shard without the host read nothing"
    );

    // The other node writes a new series of host h3 (another dc), and new series of a host
    // no shard held (h30): n1's map learns them from the listing its read carries, and reads
    // those shards again.
    let again = pruning(&n1, "again");
    write(
        &n2,
        "cpu,host=h3,dc=dc9 v=100,n=1i 5000000000\ncpu,host=h30,dc=dc1 v=7,n=2i 70000000000\n"
            .into(),
    );
    let q = STATEMENTS[0];
    assert_eq!(on_d(&n1, q), on_d(&embedded, q), "a new series of the host");
    assert!(
        pruning(&n1, "again") > again,
        "the new series was found after the read, and its shard read again"
    );
    check("new series by another node", &nodes, &embedded);

    // Merged: the merged parts hold series already known.
    on_shards(&shards, "OPTIMIZE TABLE __shard_d.cpu FINAL");
    let again = pruning(&n1, "again");
    check("after a merge", &nodes, &embedded);
    assert_eq!(pruning(&n1, "again"), again, "a merge brings no new series");

    // A host's points deleted, then written again by the other node.
    for s in [&n1, &embedded] {
        let r = on_d(s, "DELETE FROM cpu WHERE host = 'h3' AND time < 200s");
        assert!(r["results"][0].get("error").is_none(), "{r}");
    }
    check("after a DELETE", &nodes, &embedded);
    write(&n2, points(&[3, 7], 10, 3));
    check("written again after a DELETE", &nodes, &embedded);

    // Dropped and made again by the other node, other series under the same hosts.
    for s in [&n2, &embedded] {
        let r = on_d(s, "DROP MEASUREMENT cpu");
        assert!(r["results"][0].get("error").is_none(), "{r}");
    }
    let made_again: String = points(&[1, 2, 3, 5, 6, 7, 8], 3, 5).replace(",dc=dc", ",dc=x");
    write(&n2, made_again);
    check("made again", &nodes, &embedded);
}
