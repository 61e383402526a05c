//! Issue #43: each group's last point on a cluster, answered in Rust from the shards' last
//! points and the node's undelivered rows (`storage/src/influxql/cluster_last_point.rs`),
//! read on two nodes while both write the same series (two real 18.16 shards).
//!
//! What a read promises: every point the node it is sent to acknowledged before the read
//! began (its undelivered rows are part of the answer), and every point any node delivered
//! to the shards before the read listed them. A point another node acknowledged but has not
//! delivered yet is not seen (InfluxDB Enterprise's nodes do not promise that either). So
//! no read on a node is ever older, for any host, than a point that node acknowledged before
//! the read began; and once every write is delivered, both nodes answer what the embedded
//! engine answers on the same points.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use crate::cluster::wait_delivered;
use crate::cluster_last_point::with_path;
use crate::cluster_oracle::{on_d, NodesAndOracle};

const HOSTS: i64 = 12;
const ROUNDS: i64 = 40;
const LASTPOINT: &str = "SELECT * FROM cpu GROUP BY host ORDER BY time DESC LIMIT 1";

/// Round `round`'s points through node `node` (0 or 1): every host at second `2 * round +
/// node` (the nodes never write one point), and a rewrite of the host `round % HOSTS`'s
/// point in the same request (a later row of the point: its `n` replaced, `v` kept).
fn round_points(node: i64, round: i64) -> String {
    let t = (2 * round + node) * 1_000_000_000;
    let mut out = String::new();
    for h in 0..HOSTS {
        out.push_str(&format!(
            "cpu,host=h{h} v={}.5,n={}i {t}\n",
            round * 100 + h,
            node
        ));
    }
    out.push_str(&format!(
        "cpu,host=h{} n={}i {t}\n",
        round % HOSTS,
        100 + round
    ));
    out
}

/// Each host's time (ns) in a last-point answer.
fn times(answer: &serde_json::Value) -> HashMap<String, i64> {
    let series = answer["results"][0]["series"].as_array().cloned();
    series
        .unwrap_or_default()
        .iter()
        .map(|s| {
            let host = s["tags"]["host"].as_str().unwrap().to_string();
            let time = s["values"][0][0].as_i64().unwrap();
            (host, time)
        })
        .collect()
}

#[test]
fn last_points_read_while_two_nodes_write_are_never_older_than_acknowledged() {
    const TEST: &str = "last_points_read_while_two_nodes_write_are_never_older_than_acknowledged";
    let Some(c) = NodesAndOracle::start(TEST) else {
        return;
    };
    let nodes = c.nodes();
    // Per node, the newest second whose request it acknowledged (-1: none yet).
    let acked = [AtomicI64::new(-1), AtomicI64::new(-1)];
    let writing = AtomicBool::new(true);
    let reads = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..2)
            .map(|k| {
                let (node, acked, embedded) = (nodes[k], &acked[k], &c.embedded);
                scope.spawn(move || {
                    for round in 0..ROUNDS {
                        let body = round_points(k as i64, round);
                        assert_eq!(node.post("/write?db=d", body.clone()).status(), 204);
                        assert_eq!(embedded.post("/write?db=d", body).status(), 204);
                        acked.store(2 * round + k as i64, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(20));
                    }
                })
            })
            .collect();
        let readers: Vec<_> = (0..2)
            .map(|k| {
                let (node, acked, writing) = (nodes[k], &acked[k], &writing);
                scope.spawn(move || {
                    let mut reads = 0;
                    while writing.load(Ordering::SeqCst) {
                        let before = acked.load(Ordering::SeqCst);
                        let r = node
                            .client
                            .post(node.url("/query?db=d&epoch=ns"))
                            .query(&[("q", LASTPOINT)])
                            .send()
                            .unwrap();
                        let answer: serde_json::Value = r.json().unwrap();
                        assert!(
                            answer["results"][0].get("error").is_none(),
                            "node {k}: {answer}"
                        );
                        if before >= 0 {
                            let times = times(&answer);
                            for h in 0..HOSTS {
                                let t = times.get(&format!("h{h}")).copied().unwrap_or(-1);
                                assert!(
                                    t >= before * 1_000_000_000,
                                    "node {k}: h{h}'s last point at {t} ns, older than the \
                                     point at {before} s it acknowledged before the read"
                                );
                            }
                        }
                        reads += 1;
                    }
                    reads
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        writing.store(false, Ordering::SeqCst);
        readers
            .into_iter()
            .map(|r| r.join().unwrap())
            .collect::<Vec<usize>>()
    });
    assert!(reads.iter().all(|&n| n >= 5), "reads per node: {reads:?}");

    // Settled: every write delivered, both nodes answer as the embedded engine, in Rust.
    wait_delivered(&nodes, Duration::from_secs(60));
    let want = on_d(&c.embedded, LASTPOINT);
    assert_eq!(
        want["results"][0]["series"].as_array().map(Vec::len),
        Some(HOSTS as usize),
        "{want}"
    );
    for node in nodes {
        let (got, path, timing) = with_path(node, LASTPOINT);
        assert_eq!(got, want);
        assert_eq!(path, "last_point", "{timing}");
    }
}
