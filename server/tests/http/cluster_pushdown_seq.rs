//! Issue #43, the small-statement floor: a pushed-down aggregate packs each point's write
//! order (`__seq`, `__row`) into one `UInt64`, so it stands only while the `__seq` of the
//! rows it groups by point is below 2³². The shards check that on the rows the statement
//! groups by point (those of series their identity index lists as rewritten), not on their
//! whole table (a scan of every `__seq` of the table per statement before) nor on every row
//! read: a row with a large `__seq` outside the statement's range or on a point written
//! once leaves it pushed down, one on a point written twice sends it to the rows path, and
//! all answer as the embedded engine (two real 18.16 shards).

use std::time::Duration;

use crate::cluster::{cluster_config_named, statement_at, two_shard_cluster, wait_delivered};
use crate::util::*;

/// `chingest_cluster_reads_total{path="<path>"}` on `s` (0 when not exported yet).
fn reads(s: &Server, path: &str) -> u64 {
    let text = s.get("/metrics").text().unwrap();
    let prefix = format!("chingest_cluster_reads_total{{path=\"{path}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(0, |v| v.trim().parse::<f64>().unwrap() as u64)
}

/// Hosts h0..h5 every 10 s for 30 intervals (0 s to 290 s), float `v`, integer `n`.
fn points() -> String {
    let mut out = String::new();
    for i in 0..30i64 {
        for h in 0..6i64 {
            out.push_str(&format!(
                "cpu,host=h{h},dc=dc{} v={},n={}i {}\n",
                h % 2,
                i as f64 + h as f64 / 4.0,
                i * h,
                i * 10_000_000_000 + h * 1_000_000
            ));
        }
    }
    out
}

/// Copies h1's rows at `at` ns on every shard (its shard holds them) with `__seq` past
/// 2³², at `shift` ns later: a row no node wrote, as a delivery from a node whose
/// sequence passed 2³² would be.
fn copy_h1_with_a_large_seq(
    shards: &[crate::cluster::clickhouse_server::Shard],
    at: i64,
    shift: i64,
) {
    let columns = "time, series_id, __node, __seq, __row, host, dc, v, n";
    let sql = format!(
        "INSERT INTO __shard_d.cpu ({columns}) SELECT time + {shift}, series_id, __node, \
         __seq + 4294967296, __row, host, dc, v, n FROM __shard_d.cpu \
         WHERE host = 'h1' AND time = {at}"
    );
    for s in shards {
        s.query(&sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}

const STATEMENTS: &[&str] = &[
    "SELECT count(v), max(v), sum(n) FROM cpu WHERE time >= 0s AND time < 300s",
    "SELECT max(v), last(v) FROM cpu WHERE host = 'h1' AND time >= 0s AND time < 300s \
     GROUP BY time(1m)",
];

#[test]
fn a_large_seq_outside_the_range_read_leaves_the_aggregate_pushed_down() {
    const TEST: &str = "a_large_seq_outside_the_range_read_leaves_the_aggregate_pushed_down";
    let Some((_dir, shards)) = two_shard_cluster(TEST) else {
        return;
    };
    let (s0, s1) = (&shards[0], &shards[1]);
    let (node_dir, embedded_dir) = (data_dir(), data_dir());
    let node = Spawn::new(node_dir.path())
        .config(&cluster_config_named(&[s0, s1], "n1"))
        .start();
    let embedded = Spawn::new(embedded_dir.path()).start();
    for s in [&node, &embedded] {
        s.query("CREATE DATABASE d");
        assert_eq!(s.post("/write?db=d", points()).status(), 204);
    }
    wait_delivered(&[&node], Duration::from_secs(60));
    let on_d = |s: &Server, q: &str| statement_at(s, "/query?db=d", q);
    let check = |step: &str, path: &str| {
        for q in STATEMENTS {
            let want = on_d(&embedded, q);
            assert!(want["results"][0].get("error").is_none(), "{q}: {want}");
            let before = reads(&node, path);
            assert_eq!(on_d(&node, q), want, "{step}: {q}");
            assert_eq!(
                reads(&node, path),
                before + 1,
                "{step}: {q} took another path"
            );
        }
    };
    check("every __seq small", "pushdown");

    // h1's point at 50 s copied to 1000 s (outside every statement's range) with a large
    // `__seq`: the statements never read it, so their order still packs.
    copy_h1_with_a_large_seq(&shards, 50_001_000_000, 950_000_000_000);
    check("a large __seq outside the range", "pushdown");

    // h1's point at 50 s copied to 50.5 s (inside every statement's range, a point of its
    // own: written once) with a large `__seq`, and written to the embedded server too: the
    // statements read it as a point as it is, never ordering it by its write, so the
    // aggregate stays pushed down (the shards do not even read `__seq` then).
    copy_h1_with_a_large_seq(&shards, 50_001_000_000, 500_000_000);
    let copied = "cpu,host=h1,dc=dc1 v=5.25,n=5i 50501000000";
    assert_eq!(embedded.post("/write?db=d", copied).status(), 204);
    check(
        "a large __seq inside the range, on a point written once",
        "pushdown",
    );

    // The same point at 50 s written again with a large `__seq` (same values: the answers
    // stay): the statements group it by point, the order does not pack, the rows are read
    // instead.
    copy_h1_with_a_large_seq(&shards, 50_001_000_000, 0);
    check("a large __seq inside the range", "rows");
}
