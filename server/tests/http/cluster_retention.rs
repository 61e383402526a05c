//! Issue #25, retention on a ClickHouse cluster end to end: two chingest nodes over two
//! real ClickHouse servers (Debian's 18.16, on loopback). A retention set on one node
//! (`ALTER RETENTION POLICY autogen …`, `CREATE DATABASE … WITH DURATION`) is listed on the
//! shards, drops what it expired there at once, and is learned by the other node, whose
//! door then refuses points older than it and whose new tables are partitioned for it.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cluster::{cluster_config_named, two_shard_cluster, wait_delivered, wait_listed};
use crate::util::*;

/// Polls `s` until `SHOW RETENTION POLICIES ON db` gives autogen `duration`.
fn wait_retention(s: &Server, db: &str, duration: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = s.query(&format!("SHOW RETENTION POLICIES ON {db}"));
        if r["results"][0]["series"][0]["values"][0][1] == duration {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{db}: retention never {duration}: {r}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `count(v)` of `db`.autogen.cpu as `s` answers it (0 when no series; a failed statement
/// fails the test, never counts as none).
fn count(s: &Server, db: &str) -> u64 {
    let r = s.query(&format!("SELECT count(v) FROM {db}.autogen.cpu"));
    assert!(r["results"][0].get("error").is_none(), "{db}: {r}");
    r["results"][0]["series"][0]["values"][0][1]
        .as_u64()
        .unwrap_or(0)
}

#[test]
fn retention_on_a_cluster_is_agreed_by_every_node_and_expires_on_the_shards() {
    let test = "retention_on_a_cluster_is_agreed_by_every_node_and_expires_on_the_shards";
    let Some((_dir, shards)) = two_shard_cluster(test) else {
        return;
    };
    let (s0, s1) = (&shards[0], &shards[1]);
    let (dir_a, dir_b) = (data_dir(), data_dir());
    let a = Spawn::new(dir_a.path())
        .config(&cluster_config_named(&[s0, s1], "a"))
        .start();
    let b = Spawn::new(dir_b.path())
        .config(&cluster_config_named(&[s0, s1], "b"))
        .start();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    let old = 1_577_836_800_000_000_000_i64; // 2020-01-01

    // Kept forever at first: points from 2020 and from now, through both nodes.
    a.query("CREATE DATABASE r");
    wait_listed(&b, "r");
    let lines = |prefix: &str, t: i64| -> String {
        (0..20)
            .map(|h| format!("cpu,host={prefix}{h} v={h} {t}\n"))
            .collect()
    };
    for (node, prefix) in [(&a, "a"), (&b, "b")] {
        assert_eq!(node.post("/write?db=r", lines(prefix, old)).status(), 204);
        assert_eq!(node.post("/write?db=r", lines(prefix, now)).status(), 204);
    }
    wait_delivered(&[&a, &b], Duration::from_secs(60));
    assert_eq!(count(&a, "r"), 80);

    // One hour, set on b: the shards drop the 2020 partitions at once (every node's rows),
    // and keep the recent points.
    let r = b.query("ALTER RETENTION POLICY autogen ON r DURATION 1h");
    assert!(r["results"][0].get("error").is_none(), "{r}");
    for node in [&a, &b] {
        assert_eq!(count(node, "r"), 40, "on node {}", node.base);
    }
    let on_shards: u64 = [s0, s1]
        .iter()
        .map(|s| {
            s.query("SELECT count() FROM __shard_r.cpu")
                .unwrap()
                .trim()
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert_eq!(on_shards, 40);
    // Counted by the node that dropped them, per shard.
    let metrics = b.get("/metrics").text().unwrap();
    let expired: f64 = metrics
        .lines()
        .filter(|l| l.starts_with("chingest_cluster_expired_partitions_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert!(expired >= 1.0, "{metrics}");

    // a learns it from the shards: it shows it, and its door refuses what it expired, as
    // InfluxDB's does.
    wait_retention(&a, "r", "1h0m0s");
    let refused = a.post("/write?db=r", lines("a", old));
    assert_eq!(refused.status(), 400);
    assert_eq!(
        refused.json::<Value>().unwrap()["error"],
        "partial write: points beyond retention policy dropped=20"
    );

    // A database created with a duration on one node: the other shows it and makes its
    // tables with partitions of InfluxDB's shard group duration for it (1 day for 2 days).
    a.query("CREATE DATABASE k WITH DURATION 2d");
    wait_listed(&b, "k");
    wait_retention(&b, "k", "48h0m0s");
    assert_eq!(b.post("/write?db=k", lines("b", now)).status(), 204);
    wait_delivered(&[&b], Duration::from_secs(60));
    for shard in [s0, s1] {
        assert_eq!(
            shard
                .query(
                    "SELECT partition_key FROM system.tables \
                     WHERE database = '__shard_k' AND name = 'cpu'"
                )
                .unwrap()
                .trim(),
            "intDiv(time, toInt64(86400000000000))"
        );
    }

    // A restart keeps what was learned (recorded durably), and forever again is learned too.
    drop(a);
    let a = Spawn::new(dir_a.path())
        .config(&cluster_config_named(&[s0, s1], "a"))
        .start();
    wait_retention(&a, "k", "48h0m0s");
    b.query("ALTER RETENTION POLICY autogen ON r DURATION INF");
    wait_retention(&a, "r", "0s");
    assert_eq!(a.post("/write?db=r", lines("a", old)).status(), 204);
    wait_delivered(&[&a], Duration::from_secs(60));
    assert_eq!(count(&b, "r"), 60);
}
