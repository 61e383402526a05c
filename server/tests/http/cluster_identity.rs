//! Issue #43: a node started again under its name on a fresh data directory (its WAL's
//! sequences from 1 again) loses none of its new writes to the rows of its earlier life
//! on the shards: a retried delivery asks the shards for its incarnation's rows only.

use std::time::Duration;

use crate::cluster::clickhouse_server::{server_binary, Shard};
use crate::cluster::{cluster_config_named, wait_delivered, wait_listed};
use crate::util::*;

/// `n` points of `cpu` at `secs` s, hosts `h0..`, value `secs * 1000 + host`.
fn points(secs: i64, n: i64) -> String {
    (0..n)
        .map(|h| {
            format!(
                "cpu,host=h{h} v={} {}\n",
                secs * 1000 + h,
                secs * 1_000_000_000
            )
        })
        .collect()
}

/// The shard's count of `d.cpu` rows at `secs` s; a failed query fails the test.
fn stored_at(shard: &Shard, secs: i64) -> u64 {
    shard
        .query(&format!(
            "SELECT count() FROM __shard_d.cpu WHERE time = {}",
            secs * 1_000_000_000
        ))
        .unwrap_or_else(|e| panic!("{e}"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn a_node_restarted_on_a_fresh_data_directory_under_its_name_stores_every_new_write() {
    let test = "a_node_restarted_on_a_fresh_data_directory_under_its_name_stores_every_new_write";
    let Some(bin) = server_binary(test) else {
        return;
    };
    let shard_dir = data_dir();
    let mut shard = Shard::start(&bin, shard_dir.path().join("shard0"));
    let cfg = cluster_config_named(&[&shard], "n1");

    // The node's first life: writes 1..=5 (its WAL's sequences 1..=5), 100 points each,
    // delivered.
    let first = data_dir();
    let mut s = Spawn::new(first.path()).config(&cfg).start();
    s.query("CREATE DATABASE d");
    for secs in 1..=5 {
        assert_eq!(s.post("/write?db=d", points(secs, 100)).status(), 204);
    }
    wait_delivered(&[&s], Duration::from_secs(60));
    for secs in 1..=5 {
        assert_eq!(stored_at(&shard, secs), 100);
    }
    s.signal("TERM");
    let _ = s.terminate_wait();
    drop(s);
    drop(first);

    // Its second life, same name, a fresh data directory: its writes are sequences 1.. again.
    // The shard is down while they are taken, so their delivery fails and is retried,
    // asking the shard what it already holds of them.
    let second = data_dir();
    let s = Spawn::new(second.path()).config(&cfg).start();
    wait_listed(&s, "d");
    shard.stop();
    for secs in 101..=103 {
        assert_eq!(s.post("/write?db=d", points(secs, 50)).status(), 204);
    }
    shard.spawn(&bin);
    wait_delivered(&[&s], Duration::from_secs(90));
    for secs in 101..=103 {
        assert_eq!(
            stored_at(&shard, secs),
            50,
            "write at {secs} s taken as already held\n{}",
            s.log_text()
        );
    }
    // The first life's rows are as they were.
    for secs in 1..=5 {
        assert_eq!(stored_at(&shard, secs), 100);
    }
}
