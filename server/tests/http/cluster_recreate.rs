//! Issue #43: a measurement dropped on one node and made again (by either node) answers
//! on every node as soon as its new points are on the shards. A node learns another
//! node's `DROP MEASUREMENT` from the cluster's catalog; the read that learns the drop
//! must also learn the table made again since (the drop and the tables in one consistent
//! read), and a statement naming a measurement the node's catalog lacks asks the shards
//! before answering that there is none (the table may be newer than the last read).
//! Many rounds of drop, write again, read on both nodes at once, over two real 18.16
//! shards: every read answers the round's points, none an empty answer.

use std::time::Duration;

use serde_json::{json, Value};

use crate::cluster::{cluster_config_named, statement_at, two_shard_cluster, wait_delivered};
use crate::util::*;

/// How many rounds: each a drop, a write of the measurement again, and a read on each node.
const ROUNDS: usize = 16;
/// Points per round (one per host).
const HOSTS: usize = 5;

fn on_d(s: &Server, q: &str) -> Value {
    statement_at(s, "/query?db=d", q)
}

/// Round `round`'s points: host `h<k>` at `k` s, `v` = round + 0.5 (a float every round:
/// no field type conflict).
fn points(round: usize) -> String {
    (0..HOSTS)
        .map(|k| format!("m,host=h{k} v={}.5 {}\n", round, k as u64 * 1_000_000_000))
        .collect()
}

#[test]
fn a_measurement_dropped_and_made_again_by_another_node_answers_at_once() {
    const TEST: &str = "a_measurement_dropped_and_made_again_by_another_node_answers_at_once";
    let Some((_dir, shards)) = two_shard_cluster(TEST) else {
        return;
    };
    let (s0, s1) = (&shards[0], &shards[1]);
    let dirs = [data_dir(), data_dir()];
    let n1 = Spawn::new(dirs[0].path())
        .config(&cluster_config_named(&[s0, s1], "n1"))
        .start();
    let n2 = Spawn::new(dirs[1].path())
        .config(&cluster_config_named(&[s0, s1], "n2"))
        .start();
    let nodes = [&n1, &n2];
    n1.query("CREATE DATABASE d");
    crate::cluster::wait_listed(&n2, "d");
    assert_eq!(n1.post("/write?db=d", points(0)).status(), 204);
    wait_delivered(&nodes, Duration::from_secs(60));

    let mut wrong = Vec::new();
    for round in 1..=ROUNDS {
        // Every pairing: the dropping node and the writing node alternate independently.
        let dropper = nodes[round % 2];
        let writer = nodes[(round / 2) % 2];
        let r = on_d(dropper, "DROP MEASUREMENT m");
        assert!(r["results"][0].get("error").is_none(), "round {round}: {r}");
        let w = writer.post("/write?db=d", points(round));
        assert_eq!(w.status(), 204, "round {round}: {:?}", w.text());
        wait_delivered(&nodes, Duration::from_secs(60));
        // Both nodes at once, as soon as the points are on the shards.
        let want_count = json!([["1970-01-01T00:00:00Z", HOSTS]]);
        let want_h0 = json!([["1970-01-01T00:00:00Z", round as f64 + 0.5]]);
        let answers: Vec<(usize, Value, Value)> = std::thread::scope(|s| {
            let reads: Vec<_> = nodes
                .iter()
                .enumerate()
                .map(|(i, node)| {
                    s.spawn(move || {
                        let count = on_d(node, "SELECT count(v) FROM m");
                        let h0 = on_d(node, "SELECT v FROM m WHERE host = 'h0'");
                        (i + 1, count, h0)
                    })
                })
                .collect();
            reads.into_iter().map(|r| r.join().unwrap()).collect()
        });
        for (node, count, h0) in answers {
            if count["results"][0]["series"][0]["values"] != want_count {
                wrong.push(format!("round {round}, n{node}: count {count}"));
            }
            if h0["results"][0]["series"][0]["values"] != want_h0 {
                wrong.push(format!("round {round}, n{node}: h0 {h0}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} reads answered other than the round's points:\n{}",
        wrong.len(),
        ROUNDS * 4,
        wrong.join("\n")
    );
}
