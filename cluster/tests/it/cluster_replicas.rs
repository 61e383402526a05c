//! A shard with replicas (issue #25): two real ClickHouse servers (Debian's 18.16) as the
//! replicas of one shard, sharing `ReplicatedMergeTree` tables through a real ZooKeeper
//! (Debian's 3.8), each started, killed and restarted by the test.

use std::time::{Duration, Instant};

use ::cluster::{Cluster, ClusterConfig, ClusterError};

use crate::clickhouse_server::{server_binary, Shard, ZooKeeper};
use crate::cluster::{config, part, rows, try_rows};
use crate::{database_name, engine};

const TEST: &str = "a_shard_s_replicas_take_its_rows_through_a_replica_or_zookeeper_down";

/// The distinct rows of `db`.`cpu` on `shard`. A replica whose commit of an insert to
/// ZooKeeper failed without an answer (a connection lost on a loaded machine) keeps the
/// part, readable, until its check finds it missing from ZooKeeper (minutes later) and
/// detaches it, while the insert is retried: raw SQL on that replica sees those rows twice
/// meanwhile, and chingest's reads one point. What chingest sent is asserted by the
/// deliveries' counts. A failed query fails the test.
fn distinct_rows(shard: &Shard, db: &str) -> Vec<String> {
    let mut out = rows(shard, db);
    out.dedup();
    out
}

/// [`distinct_rows`], or the shard's error (it may lack the table yet, or be down).
fn try_distinct_rows(shard: &Shard, db: &str) -> Result<Vec<String>, String> {
    let mut out = try_rows(shard, db)?;
    out.dedup();
    Ok(out)
}

/// Waits until `shard` holds `n` distinct rows of `db`.`cpu` (a replica fetches the
/// others' parts in the background). A failed query is never `n` rows, not even none:
/// the wait goes on, and fails with the error at the deadline.
fn wait_rows(shard: &Shard, db: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let have = try_distinct_rows(shard, db).map(|rows| rows.len());
        if have == Ok(n) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} holds {have:?} rows of {db}.cpu, not {n}",
            shard.url()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Both replicas hold the same rows, each (`__node`, `__seq`, `__row`) with one content.
fn same_rows(r0: &Shard, r1: &Shard, db: &str) -> bool {
    let rows = distinct_rows(r0, db);
    let mut keys: Vec<&str> = rows
        .iter()
        .map(|l| l.rsplitn(5, '\t').last().unwrap())
        .collect();
    keys.dedup();
    rows == distinct_rows(r1, db) && keys.len() == rows.len()
}

/// Delivers until it succeeds (an unavailable replica or ZooKeeper is retried, never a
/// refusal), within a minute.
fn deliver_eventually(
    cluster: &Cluster,
    db: &str,
    parts: &[engine::table::Part],
) -> ::cluster::Delivered {
    let deadline = Instant::now() + Duration::from_secs(60);
    let up_to = parts.iter().map(|p| p.seq).max().unwrap();
    loop {
        match cluster.deliver(engine(), db, "cpu", parts, up_to) {
            Ok(done) => return done,
            Err(e @ ClusterError::Unreachable { .. }) if Instant::now() < deadline => {
                tracing::debug!(error = %e, "retried");
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn a_shard_s_replicas_take_its_rows_through_a_replica_or_zookeeper_down() {
    let Some(bin) = server_binary(TEST) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let Some(mut zk) = ZooKeeper::start(TEST, tmp.path().join("zk")) else {
        return;
    };
    let mut r0 = Shard::start_replica(&bin, tmp.path().join("r0"), &zk, "r0");
    let mut r1 = Shard::start_replica(&bin, tmp.path().join("r1"), &zk, "r1");
    let db = database_name("replicas");
    let replicated = || ClusterConfig {
        shards: vec![vec![r0.url(), r1.url()]],
        zookeeper_path: Some("/chingest/test".into()),
        ..config(&[], "node-r")
    };
    // A server holding a chingest table of its own (made before the cluster had replicas)
    // cannot be a replica: each would keep rows the others lack.
    for sql in [
        "CREATE DATABASE __shard_legacy",
        "CREATE TABLE __shard_legacy.cpu (x UInt8) ENGINE = MergeTree ORDER BY x",
    ] {
        r1.query(sql).unwrap();
    }
    match Cluster::connect(replicated()) {
        Err(e @ ClusterError::Config(_)) => {
            assert!(e.to_string().contains("__shard_legacy.cpu"), "{e}")
        }
        other => panic!("{:?}", other.err()),
    }
    r1.query("DROP DATABASE __shard_legacy").unwrap();
    let cluster = Cluster::connect(replicated()).unwrap();
    let e = engine();

    // Delivered through the first replica, held by both: one replicated table.
    let done = cluster
        .deliver(e, &db, "cpu", &[part(1, 20), part(2, 20)], 0)
        .unwrap();
    assert_eq!(done.rows, [40]);
    wait_rows(&r1, &db, 40);
    assert!(same_rows(&r0, &r1, &db));
    for r in [&r0, &r1] {
        let engine = r
            .query(&format!(
                "SELECT engine FROM system.tables WHERE database = '__shard_{db}' AND name = 'cpu'"
            ))
            .unwrap();
        assert_eq!(engine, "ReplicatedMergeTree\n");
    }

    // The first replica killed: the delivery fails (unavailable, not refused) and its
    // retry goes to the other.
    r0.stop();
    let first = cluster.deliver(e, &db, "cpu", &[part(3, 20)], 0);
    assert!(
        matches!(first, Err(ClusterError::Unreachable { .. })),
        "{first:?}"
    );
    let done = deliver_eventually(&cluster, &db, &[part(3, 20)]);
    assert_eq!(done.rows.iter().sum::<u64>() + done.already_held, 20);
    wait_rows(&r1, &db, 60);
    let status = &cluster.shard_statuses()[0];
    assert_eq!(status.replicas.len(), 2);
    assert_eq!(status.replicas[0].up, Some(false), "{status:?}");
    assert_eq!(status.replicas[1].up, Some(true), "{status:?}");
    assert_eq!(status.up, Some(true), "{status:?}");
    assert_eq!(status.endpoint.trim_end_matches('/'), r1.url());
    // Back, it fetches what it missed by itself.
    r0.spawn(&bin);
    wait_rows(&r0, &db, 60);

    // A delivery that reached only one replica (r1 down), retried — as a job regrouped
    // with another write — once that replica is down and the other is back: the other
    // cannot tell what it holds until it has the first one's parts, so nothing is sent
    // (not the rows twice); once it has them, only the new write's rows are.
    r1.stop();
    let _ = cluster.deliver(e, &db, "cpu", &[part(4, 20)], 0);
    let done = deliver_eventually(&cluster, &db, &[part(4, 20)]);
    assert_eq!(done.rows.iter().sum::<u64>() + done.already_held, 20);
    wait_rows(&r0, &db, 80);
    r0.stop();
    r1.spawn(&bin);
    let retry = cluster.deliver(e, &db, "cpu", &[part(4, 20), part(5, 20)], 5);
    assert!(
        matches!(retry, Err(ClusterError::Unreachable { .. })),
        "{retry:?}"
    );
    assert_eq!(
        distinct_rows(&r1, &db).len(),
        60,
        "nothing sent to the replica behind"
    );
    // Meanwhile the replica behind shows its lag: it has an insert to fetch from one that
    // does not answer.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        cluster.repair_replicas();
        let status = &cluster.shard_statuses()[0];
        if status.replicas[1].delay_secs.is_some_and(|d| d > 0) {
            assert_eq!(status.replicas[0].delay_secs, None, "{status:?}");
            break;
        }
        assert!(Instant::now() < deadline, "{status:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    r0.spawn(&bin);
    wait_rows(&r1, &db, 80);
    let done = deliver_eventually(&cluster, &db, &[part(4, 20), part(5, 20)]);
    assert_eq!(
        (done.rows.clone(), done.already_held),
        (vec![20], 20),
        "{done:?}"
    );
    wait_rows(&r0, &db, 100);
    wait_rows(&r1, &db, 100);
    // Caught up again: no lag.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        cluster.repair_replicas();
        let status = &cluster.shard_statuses()[0];
        if status.replicas.iter().all(|r| r.delay_secs == Some(0)) {
            break;
        }
        assert!(Instant::now() < deadline, "{status:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(same_rows(&r0, &r1, &db));

    // Tables made while a replica is down are made on it when it answers again (the
    // metadata's too), and it fetches their rows.
    r1.stop();
    let other = database_name("replicas_b");
    cluster
        .deliver(e, &other, "cpu", &[part(6, 10)], 0)
        .unwrap_or_else(|_| deliver_eventually(&cluster, &other, &[part(6, 10)]));
    // A measurement named to break out of quotes: its table's definition crosses from one
    // replica to the other as the server wrote it.
    cluster
        .deliver(e, &other, "m`'\"\\ x", &[part(7, 5)], 0)
        .unwrap();
    assert!(cluster.create_database(&other, 1).unwrap() >= 1);
    r1.spawn(&bin);
    let deadline = Instant::now() + Duration::from_secs(60);
    // Until it answers with them (it may lack the tables yet: an error is not a row).
    while try_distinct_rows(&r1, &other).map(|rows| rows.len()) != Ok(10) {
        assert!(Instant::now() < deadline, "{:?}", try_rows(&r1, &other));
        cluster.repair_replicas();
        std::thread::sleep(Duration::from_millis(200));
    }
    let hostile_rows = format!(
        "SELECT sum(rows) FROM system.parts WHERE database = '__shard_{other}' \
         AND table = 'm`\\'\"\\\\ x' AND active"
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while r1.query(&hostile_rows).as_deref() != Ok("5\n") {
        assert!(Instant::now() < deadline, "{:?}", r1.query(&hostile_rows));
        cluster.repair_replicas();
        std::thread::sleep(Duration::from_millis(200));
    }
    let listed = format!("SELECT count() FROM __chingest.databases WHERE name = '{other}'");
    let deadline = Instant::now() + Duration::from_secs(30);
    while r1.query(&listed).as_deref() != Ok("1\n") {
        assert!(Instant::now() < deadline, "{:?}", r1.query(&listed));
        std::thread::sleep(Duration::from_millis(100));
    }

    // Retention and deletes act on a replicated table once, and on both replicas.
    let aged = database_name("replicas_aged");
    assert!(cluster.set_retention(&aged, 3600).unwrap() >= 1);
    cluster.deliver(e, &aged, "cpu", &[part(1, 10)], 0).unwrap();
    wait_rows(&r1, &aged, 10);
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    let expired = cluster.expire(&aged, 3600, now_ns).unwrap();
    assert_eq!(expired.partitions, 1, "{expired:?}");
    wait_rows(&r0, &aged, 0);
    wait_rows(&r1, &aged, 0);
    assert!(cluster
        .delete_rows(&db, "cpu", Some("host IN ('h1', 'h2')"))
        .unwrap());
    // Five writes of 20 series so far, each with h1 and h2.
    wait_rows(&r0, &db, 90);
    wait_rows(&r1, &db, 90);

    // ZooKeeper down: the replicated tables are read-only, the delivery waits (never a
    // refusal: the rows would be quarantined) and goes through once it is back.
    zk.stop();
    let readonly = format!(
        "SELECT is_readonly FROM system.replicas WHERE database = '__shard_{db}' AND table = 'cpu'"
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while [&r0, &r1]
        .iter()
        .any(|r| r.query(&readonly).as_deref() != Ok("1\n"))
    {
        assert!(
            Instant::now() < deadline,
            "the replicas did not notice ZooKeeper gone"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let waited = cluster.deliver(e, &db, "cpu", &[part(7, 20)], 0);
    assert!(
        matches!(waited, Err(ClusterError::Unreachable { .. })),
        "{waited:?}"
    );
    assert_eq!(distinct_rows(&r0, &db).len(), 90);
    zk.spawn();
    deliver_eventually(&cluster, &db, &[part(7, 20)]);
    wait_rows(&r0, &db, 110);
    wait_rows(&r1, &db, 110);
    assert!(same_rows(&r0, &r1, &db));
}

#[test]
fn an_insert_quorum_keeps_a_delivery_in_the_wal_until_that_many_replicas_hold_it() {
    let test = "an_insert_quorum_keeps_a_delivery_in_the_wal_until_that_many_replicas_hold_it";
    let Some(bin) = server_binary(test) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let Some(zk) = ZooKeeper::start(test, tmp.path().join("zk")) else {
        return;
    };
    let r0 = Shard::start_replica(&bin, tmp.path().join("r0"), &zk, "r0");
    let mut r1 = Shard::start_replica(&bin, tmp.path().join("r1"), &zk, "r1");
    let db = database_name("quorum");
    let cluster = Cluster::connect(ClusterConfig {
        shards: vec![vec![r0.url(), r1.url()]],
        zookeeper_path: Some("/chingest/quorum".into()),
        insert_quorum: 2,
        ..config(&[], "node-q")
    })
    .unwrap();
    let e = engine();

    // Confirmed only once both replicas hold it: the other has it the moment it is.
    // Retried as the WAL does: on a loaded machine r1 may not be an active replica yet
    // (too few alive replicas for the quorum, unavailable), and a failed attempt may leave
    // the rows on r0, which the retry then finds held.
    let done = deliver_eventually(&cluster, &db, &[part(1, 20)]);
    assert_eq!(done.rows[0] + done.already_held, 20, "{done:?}");
    assert_eq!(distinct_rows(&r1, &db).len(), 20);

    // One replica down: the delivery is not confirmed (it waits in the WAL), and its retry
    // is not confirmed either while only one replica has every part — though that one may
    // hold the rows (a quorum insert that failed leaves them there).
    r1.stop();
    let first = cluster.deliver(e, &db, "cpu", &[part(2, 20)], 0);
    assert!(
        matches!(first, Err(ClusterError::Unreachable { .. })),
        "{first:?}"
    );
    let retry = cluster.deliver(e, &db, "cpu", &[part(2, 20)], 2);
    assert!(
        matches!(retry, Err(ClusterError::Unreachable { .. })),
        "{retry:?}"
    );

    // Back: confirmed, on both, once each.
    r1.spawn(&bin);
    let done = deliver_eventually(&cluster, &db, &[part(2, 20)]);
    let state = |r: &Shard| {
        r.query(&format!(
            "SELECT log_pointer, log_max_index, inserts_in_queue, is_readonly, \
             (SELECT count() FROM `__shard_{db}`.cpu) FROM system.replicas \
             WHERE database = '__shard_{db}' FORMAT CSV"
        ))
    };
    assert_eq!(
        distinct_rows(&r1, &db).len(),
        40,
        "{done:?} r0 {:?} r1 {:?}",
        state(&r0),
        state(&r1)
    );
    wait_rows(&r0, &db, 40);
    assert!(same_rows(&r0, &r1, &db));
}

/// A replica's server without `<zookeeper>` is refused at connect, whatever its version
/// answers to `system.zookeeper` (18.16 has no such table there: 60, not 225).
#[test]
fn a_replica_without_zookeeper_is_refused_at_connect() {
    let Some(bin) = server_binary("a_replica_without_zookeeper_is_refused_at_connect") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let r0 = Shard::start_replica_without_zookeeper(&bin, tmp.path().join("r0"), "r0");
    match Cluster::connect(ClusterConfig {
        shards: vec![vec![r0.url()]],
        zookeeper_path: Some("/chingest/test".into()),
        ..config(&[], "node-z")
    }) {
        Err(e @ ClusterError::Config(_)) => {
            assert!(e.to_string().contains("has no <zookeeper>"), "{e}")
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("connected to a replica without ZooKeeper"),
    }
}
