//! Issue #43: each group's last point (TSBS `lastpoint`, Grafana's current value) on a
//! cluster comes from the node's kept last points, validated by the listing of each shard
//! table's parts (`cluster/src/last_points.rs`), on two real 18.16 shards written by two
//! nodes. After every change — new points, another node's rewrite of a last point, a
//! merge, a `DELETE` of the last points, a measurement dropped and made again — every
//! statement answers what the embedded engine answers on the same points, and the
//! metric `chingest_cluster_last_point_reads_total` shows which way each shard answered.
//! The statements that show every field are answered in Rust from those rows
//! (`storage/src/influxql/cluster_last_point.rs`): `X-Chingest-Read-Path: last_point`, no
//! `engine` stage in `Server-Timing`.

use crate::cluster::wait_values;
use crate::cluster_oracle::{counter, on_d, points, NodesAndOracle};
use crate::util::*;

/// `q` on `d` of `s`: its answer, `X-Chingest-Read-Path` and `Server-Timing`.
pub(crate) fn with_path(s: &Server, q: &str) -> (serde_json::Value, String, String) {
    let r = s
        .client
        .post(s.url("/query?db=d"))
        .query(&[("q", q)])
        .send()
        .unwrap();
    let header = |name: &str| {
        r.headers()
            .get(name)
            .map_or(String::new(), |v| v.to_str().unwrap().to_string())
    };
    let (path, timing) = (header("x-chingest-read-path"), header("server-timing"));
    (r.json().unwrap(), path, timing)
}

/// Whether `q` is answered in Rust from the shards' last points (`cluster_last_point.rs`):
/// every field shown, no tag condition.
fn in_rust(q: &str) -> bool {
    !q.contains("WHERE host")
}

/// `chingest_cluster_last_point_reads_total{answered="<answered>"}` on `s`.
fn answered(s: &Server, answered: &str) -> u64 {
    counter(
        s,
        &format!("chingest_cluster_last_point_reads_total{{answered=\"{answered}\"}}"),
    )
}

const STATEMENTS: &[&str] = &[
    // TSBS lastpoint.
    "SELECT * FROM cpu GROUP BY \"host\" ORDER BY time DESC LIMIT 1",
    "SELECT * FROM cpu GROUP BY * ORDER BY time DESC LIMIT 1",
    "SELECT v, n FROM cpu GROUP BY dc ORDER BY time DESC LIMIT 1",
    "SELECT n, v FROM cpu WHERE host =~ /h1/ GROUP BY host ORDER BY time DESC LIMIT 1",
    "SELECT * FROM cpu WHERE time >= 250s GROUP BY host ORDER BY time DESC LIMIT 1",
];

/// Every statement answers on each node as on `embedded`; then once more from the kept
/// rows alone (both shards `kept`).
fn check(step: &str, nodes: &[&Server], embedded: &Server) {
    for node in nodes {
        let fields = "SHOW FIELD KEYS FROM cpu";
        let want = on_d(embedded, fields)["results"][0]["series"][0]["values"].clone();
        wait_values(node, "/query?db=d", fields, want);
        for q in STATEMENTS {
            let want = on_d(embedded, q);
            assert!(want["results"][0].get("error").is_none(), "{q}: {want}");
            // Answered in Rust, as the embedded last points are: no engine statement.
            let (got, path, timing) = with_path(node, q);
            assert_eq!(got, want, "{step}: {q}");
            if in_rust(q) {
                assert_eq!(path, "last_point", "{step}: {q}: {timing}");
                assert!(
                    timing.contains("shards;") && !timing.contains("engine;"),
                    "{step}: {q}: {timing}"
                );
            }
            // Again, from the kept rows on both shards. Once more if not: the node may learn
            // another node's drop in between (its catalog is read every 2 s, and by a
            // statement finding it older than 1 s), which forgets the kept rows; the read after
            // that keeps them.
            let from_kept = || {
                let kept = answered(node, "kept");
                assert_eq!(on_d(node, q), want, "{step}: {q} again");
                answered(node, "kept") == kept + 2
            };
            assert!(
                from_kept() || from_kept(),
                "{step}: {q} again should be answered from the kept rows on both shards"
            );
        }
    }
}

#[test]
fn last_points_kept_by_the_node_answer_as_the_engine_through_rewrites_and_deletes() {
    const TEST: &str =
        "last_points_kept_by_the_node_answer_as_the_engine_through_rewrites_and_deletes";
    let Some(c) = NodesAndOracle::start(TEST) else {
        return;
    };
    let (n1, n2, embedded) = (&c.n1, &c.n2, &c.embedded);
    let nodes = c.nodes();
    let write = |node: &Server, body: String| c.write(node, body);
    let hosts: Vec<i64> = (0..20).collect();
    write(n1, points(&hosts, 0, 30));
    check("points once", &nodes, embedded);
    assert!(
        answered(n1, "loaded") >= 2,
        "the first read loads each shard"
    );

    // Newer points of some hosts: only the new parts are read.
    let new_parts = answered(n1, "new_parts");
    write(n1, points(&[1, 2, 3], 30, 2));
    check("newer points", &nodes, embedded);
    assert!(
        answered(n1, "new_parts") > new_parts,
        "only the new part read"
    );

    // The other node writes last points again, `v` only (the later write wins `v`, `n`
    // stays): a rewrite at the same time merges with the kept rows. Which of two nodes'
    // writes is the later is each node's `__seq`: n2's writes elsewhere first put its
    // sequence past n1's, so its rewrite is the later one, as on the embedded server.
    for i in 0..5 {
        let other = format!("other v={i} {i}\n");
        assert_eq!(n2.post("/write?db=d", other).status(), 204);
    }
    let rewrite: String = [1i64, 5, 6]
        .iter()
        .map(|&h| {
            let last = if h == 1 { 31 } else { 29 };
            format!(
                "cpu,host=h{h},dc=dc{} v=-{h} {}\n",
                h % 4,
                last * 10_000_000_000i64
            )
        })
        .collect();
    write(n2, rewrite);
    check("last points rewritten by another node", &nodes, embedded);

    // Merged: the merged parts hold the rows already kept, nothing is read again.
    let loaded = answered(n1, "loaded");
    c.on_shards("OPTIMIZE TABLE __shard_d.cpu FINAL");
    check("after a merge", &nodes, embedded);
    assert_eq!(
        answered(n1, "loaded"),
        loaded,
        "a merge reads nothing again"
    );

    // The last points deleted: the kept rows are read again, the earlier points answer.
    for s in [n1, embedded] {
        let r = on_d(s, "DELETE FROM cpu WHERE time >= 290s");
        assert!(r["results"][0].get("error").is_none(), "{r}");
    }
    check("after a DELETE of the last points", &nodes, embedded);
    assert!(
        answered(n1, "loaded") > loaded,
        "a mutation reads all again"
    );

    // A range ending before some series' last point: read from the shards as before.
    let shard = answered(n1, "shard");
    let q = "SELECT * FROM cpu WHERE time < 100s GROUP BY host ORDER BY time DESC LIMIT 1";
    assert_eq!(on_d(n1, q), on_d(embedded, q));
    assert_eq!(answered(n1, "shard"), shard + 2);

    // Dropped and made again by the other node.
    for s in [n2, embedded] {
        let r = on_d(s, "DROP MEASUREMENT cpu");
        assert!(r["results"][0].get("error").is_none(), "{r}");
    }
    write(n2, points(&hosts[..7], 3, 5));
    check("made again", &nodes, embedded);
}
