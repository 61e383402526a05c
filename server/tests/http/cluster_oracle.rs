//! What the cluster tests that compare two nodes with the embedded engine share: two
//! chingest nodes (`n1`, `n2`) over two real 18.16 shards, and an embedded server that
//! gets every write too, the oracle their answers are compared with.

use std::time::Duration;

use serde_json::Value;

use crate::cluster::clickhouse_server::Shard;
use crate::cluster::{
    cluster_config_named, statement_at, two_shard_cluster, wait_delivered, wait_listed,
};
use crate::util::*;

/// Two nodes over two shards, and the oracle; database `d` made on all of them.
pub(crate) struct NodesAndOracle {
    pub n1: Server,
    pub n2: Server,
    pub embedded: Server,
    pub shards: Vec<Shard>,
    // Dropped after the servers that use them.
    _dirs: [tempfile::TempDir; 3],
    _shard_dir: tempfile::TempDir,
}

impl NodesAndOracle {
    /// `None` where the test's ClickHouse server is not installed (the test then passes
    /// over, as the other cluster tests do).
    pub(crate) fn start(test: &str) -> Option<NodesAndOracle> {
        let (shard_dir, shards) = two_shard_cluster(test)?;
        let dirs = [data_dir(), data_dir(), data_dir()];
        let (s0, s1) = (&shards[0], &shards[1]);
        let n1 = Spawn::new(dirs[0].path())
            .config(&cluster_config_named(&[s0, s1], "n1"))
            .start();
        let n2 = Spawn::new(dirs[1].path())
            .config(&cluster_config_named(&[s0, s1], "n2"))
            .start();
        let embedded = Spawn::new(dirs[2].path()).start();
        for s in [&n1, &embedded] {
            s.query("CREATE DATABASE d");
        }
        wait_listed(&n2, "d");
        Some(NodesAndOracle {
            n1,
            n2,
            embedded,
            shards,
            _dirs: dirs,
            _shard_dir: shard_dir,
        })
    }

    pub(crate) fn nodes(&self) -> [&Server; 2] {
        [&self.n1, &self.n2]
    }

    /// `body` written to `d` through `node` and to the oracle; returns once both nodes
    /// delivered everything.
    pub(crate) fn write(&self, node: &Server, body: String) {
        for s in [node, &self.embedded] {
            assert_eq!(s.post("/write?db=d", body.clone()).status(), 204);
        }
        wait_delivered(&self.nodes(), Duration::from_secs(60));
    }

    /// `sql` run on each shard's own server.
    pub(crate) fn on_shards(&self, sql: &str) {
        for s in &self.shards {
            s.query(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
    }
}

/// InfluxQL `q` on database `d` of `s`.
pub(crate) fn on_d(s: &Server, q: &str) -> Value {
    statement_at(s, "/query?db=d", q)
}

/// The counter `series` (a metric's name and its labels, as `/metrics` writes them) on `s`;
/// 0 when not listed.
pub(crate) fn counter(s: &Server, series: &str) -> u64 {
    let text = s.get("/metrics").text().unwrap();
    let prefix = format!("{series} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(0, |v| v.trim().parse::<f64>().unwrap() as u64)
}

/// `chingest_cluster_reads_total{path="<path>"}` on `s`: which path the node's reads took.
pub(crate) fn reads(s: &Server, path: &str) -> u64 {
    counter(
        s,
        &format!("chingest_cluster_reads_total{{path=\"{path}\"}}"),
    )
}

/// One node `n1` over two shards beside the embedded oracle, both written `first`:
/// `check(node, oracle)` once the node delivered everything, then again after `held` is
/// written to both while the node delivers only after ten minutes (so `held` stays on the
/// node, undelivered: at least `min_held` points of it).
pub(crate) fn delivered_then_held(
    test: &str,
    first: &[String],
    held: &[String],
    min_held: u64,
    check: impl Fn(&Server, &Server),
) {
    let Some((_dir, shards)) = two_shard_cluster(test) else {
        return;
    };
    let (node_dir, embedded_dir) = (data_dir(), data_dir());
    let config = cluster_config_named(&[&shards[0], &shards[1]], "n1");
    let mut node = Spawn::new(node_dir.path()).config(&config).start();
    let embedded = Spawn::new(embedded_dir.path()).start();
    for s in [&node, &embedded] {
        s.query("CREATE DATABASE d");
        for body in first {
            assert_eq!(s.post("/write?db=d", body.clone()).status(), 204);
        }
    }
    wait_delivered(&[&node], Duration::from_secs(60));
    check(&node, &embedded);
    node.terminate();
    let node = Spawn::new(node_dir.path())
        .config(&config)
        .env("CHINGEST_FLUSH__MAX_AGE_MS", "600000")
        .start();
    for s in [&node, &embedded] {
        for body in held {
            assert_eq!(s.post("/write?db=d", body.clone()).status(), 204);
        }
    }
    let h: Value = node.get("/health").json().unwrap();
    assert!(
        h["wal"]["unflushed_points"].as_u64().unwrap() >= min_held,
        "the held writes were meant to stay undelivered: {h}"
    );
    check(&node, &embedded);
}

/// Hosts `hosts` in 4 dcs, a point every 10 s for `intervals` intervals from `from`: float
/// `v`, integer `n`.
pub(crate) fn points(hosts: &[i64], from: i64, intervals: i64) -> String {
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
