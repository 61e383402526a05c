//! Deletes on a ClickHouse cluster (issue #25) against two real ClickHouse servers on
//! loopback (Debian's 18.16): rows deleted on every shard and waited for, and the fence
//! every ingest node publishes (what it has delivered) read back from the shards.

use ::cluster::Cluster;
use engine::table::Part;

use crate::batch::{batch, Col};
use crate::clickhouse_server::Shard;
use crate::cluster::{config, two_shards};
use crate::{database_name, engine};

/// Write `seq`: hosts h0..h`n` at time `t` (ns).
fn part(seq: u64, n: u64, t: i64) -> Part {
    Part {
        seq,
        batch: batch(
            vec![t; n as usize],
            (0..n)
                .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
                .collect(),
            vec![
                Col::Tag(
                    "host",
                    (0..n)
                        .map(|i| &*Box::leak(format!("h{i}").into_boxed_str()))
                        .collect(),
                ),
                Col::F("usage", (0..n).map(|i| Some(i as f64)).collect()),
            ],
        ),
    }
}

/// `host time` of every row of `db`.cpu over both shards, sorted.
fn rows(shards: &[&Shard], db: &str) -> Vec<String> {
    let mut out: Vec<String> = shards
        .iter()
        .flat_map(|s| {
            s.query(&format!("SELECT host, time FROM `__shard_{db}`.cpu"))
                .unwrap()
                .lines()
                .map(|l| l.replace('\t', " "))
                .collect::<Vec<_>>()
        })
        .collect();
    out.sort();
    out
}

#[test]
fn deletes_reach_every_shard_and_are_done_when_they_return() {
    let test = "deletes_reach_every_shard_and_are_done_when_they_return";
    let Some((_tmp, bin, s0, mut s1)) = two_shards(test) else {
        return;
    };
    let cluster = Cluster::connect(config(&[&s0, &s1], "a")).unwrap();
    let db = database_name("delete");
    cluster
        .deliver(
            engine(),
            &db,
            "cpu",
            &[part(1, 10, 1_000), part(2, 10, 2_000), part(3, 10, 3_000)],
            0,
        )
        .unwrap();
    assert_eq!(rows(&[&s0, &s1], &db).len(), 30);

    // One host at every time, then every host before 2,500 ns: gone from both shards as
    // soon as each call returns (the mutations waited for), nothing else touched.
    assert!(cluster
        .delete_rows(&db, "cpu", Some("host = 'h3'"))
        .unwrap());
    let left = rows(&[&s0, &s1], &db);
    assert_eq!(left.len(), 27);
    assert!(left.iter().all(|r| !r.starts_with("h3 ")), "{left:?}");
    assert!(cluster
        .delete_rows(
            &db,
            "cpu",
            Some("`time` <= 2500 AND match(host, '^h[0-4]$')")
        )
        .unwrap());
    let left = rows(&[&s0, &s1], &db);
    assert_eq!(left.len(), 27 - 8, "{left:?}");
    // A measurement no shard has: nothing to do. Every row: the table stays, empty.
    assert!(!cluster.delete_rows(&db, "nope", None).unwrap());
    assert!(cluster.delete_rows(&db, "cpu", None).unwrap());
    assert_eq!(rows(&[&s0, &s1], &db), Vec::<String>::new());

    // A shard down: the delete fails (retried by the caller), the other shard's rows may
    // already be gone; run again once it is back, it completes.
    cluster
        .deliver(engine(), &db, "cpu", &[part(4, 10, 4_000)], 0)
        .unwrap();
    s1.stop();
    assert!(cluster.delete_rows(&db, "cpu", None).is_err());
    s1.spawn(&bin);
    assert!(cluster.delete_rows(&db, "cpu", None).unwrap());
    assert_eq!(rows(&[&s0, &s1], &db), Vec::<String>::new());
}

#[test]
fn every_node_lists_what_it_delivered_on_the_shards() {
    let test = "every_node_lists_what_it_delivered_on_the_shards";
    let Some((_tmp, bin, s0, mut s1)) = two_shards(test) else {
        return;
    };
    let a = Cluster::connect(config(&[&s0, &s1], "a")).unwrap();
    let b = Cluster::connect(config(&[&s0, &s1], "b")).unwrap();
    // Nothing listed yet: no node to wait for.
    assert!(a.nodes_delivered().unwrap().is_empty());
    assert_eq!(a.publish_delivered(100).unwrap(), 2);
    assert_eq!(b.publish_delivered(50).unwrap(), 2);
    assert_eq!(b.publish_delivered(70).unwrap(), 2);
    let seen = a.nodes_delivered().unwrap();
    assert_eq!(seen.get("a"), Some(&100));
    assert_eq!(seen.get("b"), Some(&70));
    // With a shard down each node's newest is read from the others; a node's progress
    // made meanwhile is there too.
    s1.stop();
    assert_eq!(b.publish_delivered(90).unwrap(), 1);
    assert_eq!(a.nodes_delivered().unwrap().get("b"), Some(&90));
    s1.spawn(&bin);
    assert_eq!(b.nodes_delivered().unwrap().get("b"), Some(&90));
    // No shard answering is an error, not "no node".
    s1.stop();
    drop(s0);
    assert!(a.nodes_delivered().is_err());
}

/// A shard table dropped behind the node's back (an operator's `DROP TABLE`, or `DROP
/// MEASUREMENT` run on the cluster as the docs advise until chingest does it) is made again
/// by the next read and the next delivery, which succeed: not a failure repeated (until
/// the rows are quarantined) because the node remembered the table's columns.
#[test]
fn a_shard_table_dropped_behind_the_nodes_back_is_made_again() {
    let test = "a_shard_table_dropped_behind_the_nodes_back_is_made_again";
    let Some((_tmp, _, s0, s1)) = two_shards(test) else {
        return;
    };
    let cluster = Cluster::connect(config(&[&s0, &s1], "a")).unwrap();
    let db = database_name("dropped");
    cluster
        .deliver(engine(), &db, "cpu", &[part(1, 10, 1_000)], 0)
        .unwrap();
    assert_eq!(rows(&[&s0, &s1], &db).len(), 10);
    s0.query(&format!("DROP DATABASE `__shard_{db}`")).unwrap();
    s1.query(&format!("DROP TABLE `__shard_{db}`.cpu")).unwrap();
    // A read finds the table empty again (made anew), not an error.
    assert_eq!(
        cluster
            .distinct_tags(&db, "cpu", &["host".to_string()], 100)
            .unwrap()
            .len(),
        0
    );
    s0.query(&format!("DROP TABLE `__shard_{db}`.cpu")).unwrap();
    let again = cluster
        .deliver(engine(), &db, "cpu", &[part(2, 10, 2_000)], 0)
        .unwrap();
    assert_eq!(
        (again.rows.iter().sum::<u64>(), again.already_held),
        (10, 0)
    );
    let left = rows(&[&s0, &s1], &db);
    assert_eq!(left.len(), 10, "{left:?}");
    assert!(left.iter().all(|r| r.ends_with(" 2000")), "{left:?}");
}

/// `DROP MEASUREMENT`'s part on the shards: the shard table gone from every shard (and
/// made again by a later delivery), the drop listed for the other nodes, newest first.
#[test]
fn a_dropped_measurement_leaves_every_shard_and_is_listed_for_every_node() {
    let test = "a_dropped_measurement_leaves_every_shard_and_is_listed_for_every_node";
    let Some((_tmp, _, s0, s1)) = two_shards(test) else {
        return;
    };
    let a = Cluster::connect(config(&[&s0, &s1], "a")).unwrap();
    let b = Cluster::connect(config(&[&s0, &s1], "b")).unwrap();
    let db = database_name("drop");
    assert!(!a.has_table(&db, "cpu").unwrap());
    a.deliver(engine(), &db, "cpu", &[part(1, 10, 1_000)], 0)
        .unwrap();
    assert!(a.has_table(&db, "cpu").unwrap());
    a.drop_table(&db, "cpu").unwrap();
    assert!(!b.has_table(&db, "cpu").unwrap());
    for shard in [&s0, &s1] {
        assert_eq!(
            shard
                .query(&format!(
                    "SELECT count() FROM system.tables WHERE database = '__shard_{db}'"
                ))
                .unwrap()
                .trim(),
            "0"
        );
    }
    assert!(b.catalog().unwrap().drops.is_empty());
    assert_eq!(a.list_drop(&db, "cpu", 100).unwrap(), 2);
    assert_eq!(b.list_drop(&db, "cpu", 50).unwrap(), 2);
    let theirs = b.catalog().unwrap();
    assert_eq!(
        theirs.drops.get(&(db.clone(), "cpu".to_string())),
        Some(&100)
    );
    assert!(!theirs.tables.contains_key(&(db.clone(), "cpu".to_string())));
    // Rows written since make the table again, from either node.
    b.deliver(engine(), &db, "cpu", &[part(2, 10, 2_000)], 0)
        .unwrap();
    assert_eq!(rows(&[&s0, &s1], &db).len(), 10);
    a.deliver(engine(), &db, "cpu", &[part(3, 10, 3_000)], 0)
        .unwrap();
    assert_eq!(rows(&[&s0, &s1], &db).len(), 20);
}
