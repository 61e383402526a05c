//! Issue #43: `top()` and `bottom()` on a cluster read only each shard's candidates — per
//! group and window the points at or ahead of the `n`-th, ties included, or each series'
//! best for `top(f, tag, n)` (`storage/src/influxql/top_candidates.rs`) — not every row.
//! Over two real 18.16 shards written by two nodes, every statement takes that path
//! (`chingest_cluster_reads_total{path="candidates"}`) and answers value for value what the
//! embedded engine answers on the same writes: with points rewritten by the node that wrote
//! them and by the other node, ties between series on value and time, and rows held
//! undelivered on the node (rewrites of delivered points, a new series).

use std::time::Duration;

use crate::cluster::{cluster_config_named, statement_at, two_shard_cluster, wait_delivered};
use crate::cluster_combine::{points, rewrites};
use crate::cluster_oracle::counter;
use crate::util::*;

const STATEMENTS: &[&str] = &[
    "SELECT top(v, 3) FROM m",
    "SELECT bottom(v, 3), host FROM m",
    "SELECT top(n, 2) FROM m GROUP BY host",
    "SELECT bottom(u, 4) FROM m WHERE dc = 'dc1' GROUP BY *",
    "SELECT top(v, 2) FROM m WHERE host = 'nosuch'",
    "SELECT top(v, 2), host, dc FROM m WHERE time >= 0s AND time < 600s GROUP BY time(60s)",
    "SELECT bottom(n, 1) FROM m WHERE time >= 100s AND time < 400s \
     GROUP BY time(30s, 10s), dc fill(null)",
    "SELECT top(v, 3) FROM m WHERE time >= 100s AND time < 400s GROUP BY time(30s) fill(0)",
    "SELECT top(v, 3) FROM m WHERE time >= 150s AND time < 350s AND host =~ /h[0-3]/ \
     GROUP BY time(20s) ORDER BY time DESC LIMIT 5",
    "SELECT bottom(v, 2) FROM m WHERE time >= 0s AND time < 600s GROUP BY time(100s), * \
     SLIMIT 2 SOFFSET 1",
    // One per tag value: each series' best point on its shard.
    "SELECT top(u, host, 2) FROM m",
    "SELECT bottom(v, dc, 1), host FROM m WHERE time >= 0s AND time < 600s GROUP BY time(100s)",
    "SELECT top(n, dc, host, 3) AS t FROM m GROUP BY dc",
    // Ties: every host has `v` = 7.25 at 0 s and 400 s (h5 has no `v`).
    "SELECT top(v, 2) FROM m WHERE time >= 0s AND time < 10s",
    "SELECT bottom(v, 3) FROM m WHERE time >= 400s AND time <= 400s GROUP BY dc",
    "SELECT top(v, host, 2) FROM m WHERE time >= 400s AND time < 410s",
    "SELECT top(v, 1) FROM m WHERE time >= 0s AND time < 600s GROUP BY time(200s)",
];

/// `chingest_cluster_reads_total{path="candidates"}` on `s`.
fn candidates(s: &Server) -> u64 {
    counter(s, "chingest_cluster_reads_total{path=\"candidates\"}")
}

/// Every statement answers on `node` as on `embedded`, each through the shards' candidates.
fn check(step: &str, node: &Server, embedded: &Server) {
    for q in STATEMENTS {
        let want = statement_at(embedded, "/query?db=d", q);
        assert!(want["results"][0].get("error").is_none(), "{q}: {want}");
        let before = candidates(node);
        let got = statement_at(node, "/query?db=d", q);
        assert_eq!(got, want, "{step}: {q}");
        assert_eq!(
            candidates(node) - before,
            1,
            "{step}: {q} should have read the shards' candidates"
        );
    }
}

#[test]
fn top_and_bottom_read_the_shards_candidates_and_answer_as_the_engine() {
    const TEST: &str = "top_and_bottom_read_the_shards_candidates_and_answer_as_the_engine";
    let Some((_dir, shards)) = two_shard_cluster(TEST) else {
        return;
    };
    let (s0, s1) = (&shards[0], &shards[1]);
    let (n1_dir, n2_dir, embedded_dir) = (data_dir(), data_dir(), data_dir());
    let config = cluster_config_named(&[s0, s1], "n1");
    let mut n1 = Spawn::new(n1_dir.path()).config(&config).start();
    let n2 = Spawn::new(n2_dir.path())
        .config(&cluster_config_named(&[s0, s1], "n2"))
        .start();
    let embedded = Spawn::new(embedded_dir.path()).start();
    let write = |s: &Server, body: String| {
        assert_eq!(s.post("/write?db=d", body).status(), 204);
    };
    for s in [&n1, &embedded] {
        s.query("CREATE DATABASE d");
        write(s, points());
        write(s, rewrites(1));
    }
    wait_delivered(&[&n1], Duration::from_secs(60));
    check("written by n1", &n1, &embedded);
    // The other node rewrites points n1 wrote (and delivered). Which of two nodes' writes
    // of a point is the later is each node's `__seq`: n2's writes elsewhere first put its
    // sequence past n1's, so its rewrite is the later one, as on the embedded server.
    crate::cluster::wait_listed(&n2, "d");
    for i in 0..5 {
        write(&n2, format!("other v={i} {i}\n"));
    }
    for s in [&n2, &embedded] {
        write(s, rewrites(2));
    }
    wait_delivered(&[&n1, &n2], Duration::from_secs(60));
    check("rewritten by n2, read on n1", &n1, &embedded);
    check("rewritten by n2, read on n2", &n2, &embedded);
    n1.terminate();
    // Again, delivering only after ten minutes: the new rows stay on the node, rewriting
    // points the shards hold (h1, h2, h0 at 5 s) and adding a series (h9).
    let n1 = Spawn::new(n1_dir.path())
        .config(&config)
        .env("CHINGEST_FLUSH__MAX_AGE_MS", "600000")
        .start();
    let more = "m,host=h9,dc=dc1 v=100,n=1i,u=3u,s=\"new\" 15000000000\n\
                m,host=h0,dc=dc0 v=-50,u=0u 5000000000\n\
                m,host=h3,dc=dc1 v=7.25 400000000000\n";
    // n1's sequence past n2's again, so that its rewrites are the later ones.
    for i in 0..10 {
        write(&n1, format!("other v={i} {i}\n"));
    }
    for s in [&n1, &embedded] {
        write(s, rewrites(3));
        write(s, more.to_string());
    }
    let h: serde_json::Value = n1.get("/health").json().unwrap();
    assert!(
        h["wal"]["unflushed_points"].as_u64().unwrap() >= 10,
        "the rewrites were meant to stay undelivered: {h}"
    );
    check("undelivered rows on n1", &n1, &embedded);
}
