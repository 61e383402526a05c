//! Issue #43: a statement whose condition names a tag's values (`host = 'h3'`, `OR`s of
//! those, `=~ /^(a|b)$/`) asks each shard only for the series holding them
//! (`series_id IN (…)`, from the node's map of the shard table's tag values to series,
//! `cluster/src/series_of_tags.rs`), validated by the listing of the table's parts the read
//! carries; on two real 18.16 shards written by two nodes. After every change — another
//! node writing a new series of a host the statements name, a merge, a `DELETE`, a
//! measurement dropped and made again — every statement answers what the embedded engine
//! answers on the same points, and `chingest_cluster_series_pruning_total` shows which way
//! each shard was read.

use crate::cluster::wait_values;
use crate::cluster_oracle::{counter, on_d, points, NodesAndOracle};
use crate::util::*;

/// `chingest_cluster_series_pruning_total{outcome="<outcome>"}` on `s`.
fn pruning(s: &Server, outcome: &str) -> u64 {
    counter(
        s,
        &format!("chingest_cluster_series_pruning_total{{outcome=\"{outcome}\"}}"),
    )
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

#[test]
fn series_pruned_reads_answer_as_the_engine_through_new_series_merges_and_deletes() {
    const TEST: &str =
        "series_pruned_reads_answer_as_the_engine_through_new_series_merges_and_deletes";
    let Some(c) = NodesAndOracle::start(TEST) else {
        return;
    };
    let (n1, n2, embedded) = (&c.n1, &c.n2, &c.embedded);
    let nodes = c.nodes();
    let write = |node: &Server, body: String| c.write(node, body);
    let hosts: Vec<i64> = (0..20).collect();
    write(n1, points(&hosts, 0, 30));
    check("points once", &nodes, embedded);
    // A host lives on one shard: the other is pruned to nothing.
    assert!(pruning(n1, "pruned") > 0, "the statements were pruned");
    assert!(
        pruning(n1, "none") > 0,
        "a shard without the host read nothing"
    );

    // The other node writes a new series of host h3 (another dc), and new series of a host
    // no shard held (h30): n1's map learns them from the listing its read carries, and reads
    // those shards again.
    let again = pruning(n1, "again");
    write(
        n2,
        "cpu,host=h3,dc=dc9 v=100,n=1i 5000000000\ncpu,host=h30,dc=dc1 v=7,n=2i 70000000000\n"
            .into(),
    );
    let q = STATEMENTS[0];
    assert_eq!(on_d(n1, q), on_d(embedded, q), "a new series of the host");
    assert!(
        pruning(n1, "again") > again,
        "the new series was found after the read, and its shard read again"
    );
    check("new series by another node", &nodes, embedded);

    // Merged: the merged parts hold series already known.
    c.on_shards("OPTIMIZE TABLE __shard_d.cpu FINAL");
    let again = pruning(n1, "again");
    check("after a merge", &nodes, embedded);
    assert_eq!(pruning(n1, "again"), again, "a merge brings no new series");

    // A host's points deleted, then written again by the other node.
    for s in [n1, embedded] {
        let r = on_d(s, "DELETE FROM cpu WHERE host = 'h3' AND time < 200s");
        assert!(r["results"][0].get("error").is_none(), "{r}");
    }
    check("after a DELETE", &nodes, embedded);
    write(n2, points(&[3, 7], 10, 3));
    check("written again after a DELETE", &nodes, embedded);

    // Dropped and made again by the other node, other series under the same hosts.
    for s in [n2, embedded] {
        let r = on_d(s, "DROP MEASUREMENT cpu");
        assert!(r["results"][0].get("error").is_none(), "{r}");
    }
    let made_again: String = points(&[1, 2, 3, 5, 6, 7, 8], 3, 5).replace(",dc=dc", ",dc=x");
    write(n2, made_again);
    check("made again", &nodes, embedded);
}
