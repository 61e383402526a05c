//! Retention on a ClickHouse cluster (issue #25) against two real ClickHouse servers on
//! loopback (Debian's 18.16): settings every node agrees on through the shards, shard
//! tables partitioned by time, expired partitions dropped on every shard; and a write a
//! shard holds in part (its insert spanned partitions) completed by a retry, exactly once.

use ::cluster::{Cluster, RetentionSetting};
use engine::table::Part;

use crate::batch::{batch, Col};
use crate::clickhouse_server::Shard;
use crate::cluster::{config, two_shards};
use crate::{database_name, engine};

const HOUR: i64 = 3_600_000_000_000;

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

/// Write `seq`: `n` series (over both shards), each with one point at each of `times`.
fn part(seq: u64, n: u64, times: &[i64]) -> Part {
    let mut t = Vec::new();
    let mut series = Vec::new();
    let mut hosts = Vec::new();
    let mut usage = Vec::new();
    for time in times {
        for i in 0..n {
            t.push(*time);
            series.push(i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            hosts.push(&*Box::leak(format!("h{i}").into_boxed_str()));
            usage.push(Some(i as f64));
        }
    }
    Part {
        seq,
        batch: batch(
            t,
            series,
            vec![Col::Tag("host", hosts), Col::F("usage", usage)],
        ),
    }
}

/// `(time, host, __seq, __row)` of every row of `db`.`m` over `shards`, sorted.
fn stored(shards: &[&Shard], db: &str, m: &str) -> Vec<String> {
    let mut out: Vec<String> = shards
        .iter()
        .flat_map(|s| {
            s.query(&format!(
                "SELECT time, host, __seq, __row FROM `__shard_{db}`.`{m}`"
            ))
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect::<Vec<_>>()
        })
        .collect();
    out.sort();
    out
}

fn partition_key(shard: &Shard, db: &str, m: &str) -> String {
    shard
        .query(&format!(
            "SELECT partition_key FROM system.tables WHERE database = '__shard_{db}' AND name = '{m}'"
        ))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn retention_is_agreed_through_the_shards_and_drops_expired_partitions_on_every_shard() {
    let test = "retention_is_agreed_through_the_shards_and_drops_expired_partitions_on_every_shard";
    let Some((_tmp, bin, s0, mut s1)) = two_shards(test) else {
        return;
    };
    let a = Cluster::connect(config(&[&s0, &s1], "a")).unwrap();
    let b = Cluster::connect(config(&[&s0, &s1], "b")).unwrap();
    let e = engine();
    let db = database_name("retention");

    // A retention of one hour: node a's tables of the database get 1-hour partitions.
    assert_eq!(a.set_retention(&db, 3600).unwrap(), 2);
    let now = now_ns();
    let parts = [
        part(1, 20, &[now - 5 * HOUR]),
        part(2, 20, &[now - 3 * HOUR]),
        part(3, 20, &[now - HOUR / 2]),
        part(4, 20, &[now]),
    ];
    a.deliver(e, &db, "cpu", &parts, 0).unwrap();
    for shard in [&s0, &s1] {
        assert_eq!(
            partition_key(shard, &db, "cpu"),
            "intDiv(time, toInt64(3600000000000))"
        );
    }
    assert_eq!(stored(&[&s0, &s1], &db, "cpu").len(), 80);

    // Node b reads the setting from the shards, and expires what it expired: the two
    // older writes' partitions on both shards; nothing newer than an hour is touched.
    let theirs = b.catalog().unwrap();
    assert_eq!(theirs.retention[&db].secs, 3600);
    assert!(theirs.retention_behind.is_empty(), "{theirs:?}");
    let done = b.expire(&db, 3600, now_ns()).unwrap();
    assert!(
        done.unreachable.is_empty() && done.unpartitioned.is_empty(),
        "{done:?}"
    );
    assert!(
        (2..=4).contains(&done.partitions),
        "two hours' partitions on one or both shards: {done:?}"
    );
    let left = stored(&[&s0, &s1], &db, "cpu");
    assert_eq!(left.len(), 40, "{left:?}");
    assert!(left.iter().all(|row| {
        let time: i64 = row.split('\t').next().unwrap().parse().unwrap();
        time >= now - HOUR
    }));
    // Again: nothing left to drop. No retention: nothing is ever dropped.
    assert_eq!(a.expire(&db, 3600, now_ns()).unwrap().partitions, 0);
    assert_eq!(a.expire(&db, 0, i64::MAX).unwrap().partitions, 0);
    assert_eq!(stored(&[&s0, &s1], &db, "cpu").len(), 40);

    // A point before 1970 is in a partition before 1970, expired like any other.
    a.deliver(e, &db, "old", &[part(5, 4, &[-90_000_000_000_000])], 0)
        .unwrap();
    assert_eq!(stored(&[&s0, &s1], &db, "old").len(), 4);
    a.expire(&db, 3600, now_ns()).unwrap();
    assert_eq!(stored(&[&s0, &s1], &db, "old"), Vec::<String>::new());

    // A database kept forever gets 7-day partitions; a shard table chingest did not
    // partition is reported, not touched.
    let forever = database_name("forever");
    a.deliver(e, &forever, "cpu", &[part(6, 4, &[1_000])], 0)
        .unwrap();
    assert_eq!(
        partition_key(&s0, &forever, "cpu"),
        "intDiv(time, toInt64(604800000000000))"
    );
    s0.query(&format!(
        "CREATE TABLE `__shard_{db}`.legacy (time Int64, series_id UInt64, __node String, \
         __seq UInt64, __row UInt32) ENGINE = MergeTree ORDER BY (series_id, time)"
    ))
    .unwrap();
    s0.query(&format!(
        "INSERT INTO `__shard_{db}`.legacy VALUES (1000, 1, 'x', 1, 0)"
    ))
    .unwrap();
    let done = a.expire(&db, 3600, now_ns()).unwrap();
    assert_eq!(done.unpartitioned, vec![format!("__shard_{db}.legacy")]);
    assert_eq!(
        s0.query(&format!("SELECT count() FROM `__shard_{db}`.legacy"))
            .unwrap()
            .trim(),
        "1"
    );

    // The newest setting wins, whichever node made it.
    assert_eq!(b.set_retention(&db, 0).unwrap(), 2);
    assert_eq!(a.catalog().unwrap().retention[&db].secs, 0);

    // A shard down when it is set misses it: the others take it, the catalog reads it
    // from them and names the shard behind once it answers; listed again, it is not.
    s1.stop();
    assert_eq!(a.set_retention(&db, 7200).unwrap(), 1);
    let down = a.catalog().unwrap();
    assert_eq!(down.retention[&db].secs, 7200);
    assert_eq!(down.unreachable, vec![1]);
    s1.spawn(&bin);
    let back = b.catalog().unwrap();
    let newest: RetentionSetting = back.retention[&db];
    assert_eq!(newest.secs, 7200);
    assert_eq!(back.retention_behind, vec![(1, db.clone())]);
    b.relist_retention(1, &db, newest).unwrap();
    let settled = b.catalog().unwrap();
    assert_eq!(settled.retention[&db], newest);
    assert!(settled.retention_behind.is_empty(), "{settled:?}");

    // With every shard down, setting a retention is an error (nothing took it).
    s1.stop();
    drop(s0);
    assert!(a.set_retention(&db, 60).is_err());
}

#[test]
fn a_write_a_shard_holds_in_part_is_completed_exactly_once() {
    let test = "a_write_a_shard_holds_in_part_is_completed_exactly_once";
    let Some((_tmp, _, s0, s1)) = two_shards(test) else {
        return;
    };
    let cluster = Cluster::connect(config(&[&s0, &s1], "a")).unwrap();
    let e = engine();
    let db = database_name("partial");
    cluster.set_retention(&db, 3600).unwrap();

    // One write whose rows fall in two 1-hour partitions: each shard stores its rows as
    // two parts, one per partition.
    let now = now_ns();
    let write = part(1, 30, &[now - 3 * HOUR, now]);
    cluster
        .deliver(e, &db, "cpu", std::slice::from_ref(&write), 0)
        .unwrap();
    let whole = stored(&[&s0, &s1], &db, "cpu");
    assert_eq!(whole.len(), 60);

    // As if each server had failed between its two parts: the older partition is gone.
    for shard in [&s0, &s1] {
        let old = shard
            .query(&format!(
                "SELECT DISTINCT partition_id FROM system.parts WHERE database = '__shard_{db}' \
                 AND table = 'cpu' AND active AND partition = '{}'",
                (now - 3 * HOUR) / HOUR
            ))
            .unwrap();
        let old = old.trim();
        assert!(!old.is_empty());
        shard
            .query(&format!(
                "ALTER TABLE `__shard_{db}`.cpu DROP PARTITION ID '{old}'"
            ))
            .unwrap();
    }
    assert_eq!(stored(&[&s0, &s1], &db, "cpu").len(), 30);

    // The retry, not knowing what reached the shards, sends exactly the missing rows.
    let retry = cluster
        .deliver(e, &db, "cpu", std::slice::from_ref(&write), 1)
        .unwrap();
    assert_eq!(retry.already_held, 30, "{retry:?}");
    assert_eq!(retry.rows.iter().sum::<u64>(), 30, "{retry:?}");
    assert_eq!(stored(&[&s0, &s1], &db, "cpu"), whole);
    // And once more: all held, nothing sent.
    let again = cluster.deliver(e, &db, "cpu", &[write], 1).unwrap();
    assert_eq!(
        (again.already_held, again.rows.iter().sum::<u64>()),
        (60, 0)
    );
    assert_eq!(stored(&[&s0, &s1], &db, "cpu"), whole);
}
