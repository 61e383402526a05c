//! Issue #25, `DELETE` and `DROP SERIES` on a ClickHouse cluster end to end: two chingest
//! nodes over two real ClickHouse servers (Debian's 18.16, on loopback). A delete run on
//! one node removes the points every node acknowledged before it — including those the
//! other node still holds in its WAL (it delivers every 8 s here) — and none written after;
//! a node killed with writes in its WAL holds deletes back (503, nothing deleted) until
//! it is back.

use std::time::Duration;

use serde_json::Value;

use crate::cluster::clickhouse_server::Shard;
use crate::cluster::{cluster_config_named, two_shard_cluster, wait_delivered, wait_listed};
use crate::util::*;

/// `count(v)` of d.autogen.cpu as `s` answers it (0 when no series; a failed statement
/// fails the test, never counts as none).
fn count(s: &Server, filter: &str) -> u64 {
    let r = s.query(&format!("SELECT count(v) FROM d.autogen.cpu {filter}"));
    assert!(r["results"][0].get("error").is_none(), "{filter}: {r}");
    r["results"][0]["series"][0]["values"][0][1]
        .as_u64()
        .unwrap_or(0)
}

/// Rows of `__shard_d.cpu` over both shards.
fn on_shards(shards: &[&Shard]) -> u64 {
    shards
        .iter()
        .map(|s| {
            s.query("SELECT count() FROM __shard_d.cpu")
                .unwrap()
                .trim()
                .parse::<u64>()
                .unwrap()
        })
        .sum()
}

/// Nodes a and b over `s0`, `s1`, database d created on a and listed on b: a waits 25 s at
/// most for the other nodes' deliveries; b delivers every 8 s (long enough for a loaded
/// machine to check that it has not yet), so what it acknowledges sits in its WAL when a
/// statement on a begins. (b's data dir, a, b, a's data dir.)
pub(crate) fn two_nodes_one_slow(
    s0: &Shard,
    s1: &Shard,
) -> (tempfile::TempDir, Server, Server, tempfile::TempDir) {
    let (dir_a, dir_b) = (data_dir(), data_dir());
    let config_a = cluster_config_named(&[s0, s1], "a") + "delete_wait_secs = 25\n";
    let a = Spawn::new(dir_a.path()).config(&config_a).start();
    let b = slow_node(&dir_b, s0, s1);
    a.query("CREATE DATABASE d");
    wait_listed(&b, "d");
    (dir_b, a, b, dir_a)
}

/// Node b of [`two_nodes_one_slow`] (again) on its data dir.
pub(crate) fn slow_node(dir: &tempfile::TempDir, s0: &Shard, s1: &Shard) -> Server {
    Spawn::new(dir.path())
        .config(&cluster_config_named(&[s0, s1], "b"))
        .env("CHINGEST_FLUSH__MAX_AGE_MS", "8000")
        .start()
}

/// An InfluxQL statement on database d (POST), its answer.
pub(crate) fn on_d(s: &Server, q: &str) -> Value {
    crate::cluster::statement_at(s, "/query?db=d", q)
}

fn points(prefix: &str, t_ns: i64) -> String {
    (0..20)
        .map(|h| format!("cpu,host={prefix}{h} v={h} {t_ns}\n"))
        .collect()
}

#[test]
fn deletes_on_a_cluster_remove_what_every_node_acknowledged_before_them() {
    let test = "deletes_on_a_cluster_remove_what_every_node_acknowledged_before_them";
    let Some((_dir, shards)) = two_shard_cluster(test) else {
        return;
    };
    let (s0, s1) = (&shards[0], &shards[1]);
    let (dir_b, a, b, _dir_a) = two_nodes_one_slow(s0, s1);

    // Both nodes write; b's points are acknowledged, not delivered, when a deletes them.
    assert_eq!(a.post("/write?db=d", points("a", 1_000)).status(), 204);
    assert_eq!(b.post("/write?db=d", points("b", 1_000)).status(), 204);
    assert!(
        b.get("/health").json::<Value>().unwrap()["wal"]["unflushed_points"]
            .as_u64()
            .is_some_and(|n| n > 0)
    );
    let r = on_d(&a, "DELETE FROM cpu WHERE time < 2000");
    assert!(r["results"][0].get("error").is_none(), "{r}");
    // Every point acknowledged before it is gone from the shards, b's too; nothing of b's
    // arrives after it.
    assert_eq!(on_shards(&[s0, s1]), 0);
    wait_delivered(&[&a, &b], Duration::from_secs(60));
    assert_eq!(on_shards(&[s0, s1]), 0);
    assert_eq!((count(&a, ""), count(&b, "")), (0, 0));

    // Points written after a delete stay; a time range and tag conditions delete exactly
    // their rows; DROP SERIES deletes a series at every time.
    for node in [&a, &b] {
        assert_eq!(node.post("/write?db=d", points("n", 3_000)).status(), 204);
        assert_eq!(node.post("/write?db=d", points("n", 4_000)).status(), 204);
    }
    let r = on_d(
        &a,
        "DELETE FROM cpu WHERE (host = 'n1' OR host =~ /^n1[0-4]$/) AND time <= 3000",
    );
    assert!(r["results"][0].get("error").is_none(), "{r}");
    wait_delivered(&[&a, &b], Duration::from_secs(60));
    // 20 hosts × 2 times, each time written by both nodes (one point, later write wins);
    // 6 hosts lost their point at 3000.
    assert_eq!(count(&a, ""), 40 - 6);
    assert_eq!(count(&b, "WHERE time = 3000"), 20 - 6);
    let r = on_d(&b, "DROP SERIES FROM cpu WHERE host = 'n0' OR host = 'n19'");
    assert!(r["results"][0].get("error").is_none(), "{r}");
    assert_eq!(count(&a, ""), 40 - 6 - 4);
    // Hostile conditions and names reach the shards as values, never as SQL: each matches
    // nothing, deletes nothing, and writes keep flowing after them.
    for hostile in [
        r"DELETE FROM cpu WHERE host = 'n2\' OR \'1\'=\'1'",
        r"DELETE FROM cpu WHERE host = 'n2`) OR (1=1'",
        r"DELETE FROM cpu WHERE host =~ /n2'); DROP TABLE __shard_d.cpu; --/",
        r#"DELETE FROM "cpu` WHERE 1; DROP TABLE __shard_d.cpu; --" WHERE host = 'n2'"#,
        // A tag key no series has reads as '' (InfluxDB's rule): compared with 'x', nothing.
        r#"DROP SERIES FROM cpu WHERE "host' OR '1'='1" = 'x'"#,
    ] {
        let r = on_d(&a, hostile);
        assert!(r["results"][0].get("error").is_none(), "{hostile}: {r}");
        assert_eq!(count(&a, ""), 30, "{hostile}");
    }
    assert_eq!(
        a.post("/write?db=d", "cpu,host=after v=1 9000").status(),
        204
    );
    wait_delivered(&[&a], Duration::from_secs(60));
    assert_eq!(count(&b, ""), 31);
    let r = on_d(&a, "DELETE FROM cpu WHERE host = 'after'");
    assert!(r["results"][0].get("error").is_none(), "{r}");
    assert_eq!(count(&a, ""), 30);
    // InfluxDB's errors stay: a field in a deletion's condition, time in DROP SERIES.
    let r = on_d(&a, "DELETE FROM cpu WHERE v > 1");
    assert_eq!(
        r["results"][0]["error"],
        "fields not supported in WHERE clause during deletion"
    );
    let r = on_d(&a, "DROP SERIES FROM cpu WHERE time > 0");
    assert_eq!(
        r["results"][0]["error"],
        "DROP SERIES doesn't support time in WHERE clause"
    );

    // b killed with acknowledged points in its WAL: a cannot know what b holds, so its
    // delete waits, then answers 503 naming b and deletes nothing.
    assert_eq!(b.post("/write?db=d", points("k", 5_000)).status(), 204);
    drop(b);
    let before = on_shards(&[s0, s1]);
    let r = a
        .client
        .post(a.url("/query"))
        .query(&[("q", "DELETE FROM cpu WHERE time < 6000"), ("db", "d")])
        .send()
        .unwrap();
    assert_eq!(r.status(), 503);
    let text = r.text().unwrap();
    assert!(text.contains("ingest node(s) b did not deliver"), "{text}");
    assert_eq!(on_shards(&[s0, s1]), before);
    // a's /health shows why: b's delivery fence is as old as its death (25 s and more, the
    // delete's wait), a's own is younger.
    let h: Value = a.get("/health").json().unwrap();
    let ago = |node: &str| {
        h["cluster_nodes"]
            .as_array()
            .and_then(|nodes| nodes.iter().find(|n| n["node"] == node))
            .and_then(|n| n["delivered_secs_ago"].as_f64())
            .unwrap_or_else(|| panic!("{node} not in /health: {h}"))
    };
    assert!(ago("b") >= 20.0 && ago("a") < ago("b"), "{h}");
    // Back, b delivers what it acknowledged, and the delete goes through: b's points too.
    let b = slow_node(&dir_b, s0, s1);
    let r = on_d(&a, "DELETE FROM cpu WHERE time < 6000");
    assert!(r["results"][0].get("error").is_none(), "{r}");
    wait_delivered(&[&a, &b], Duration::from_secs(60));
    assert_eq!(on_shards(&[s0, s1]), 0);
    assert_eq!(count(&b, ""), 0);
}
