//! The shards' index of points written twice (`cluster/src/identity.rs`) against a real
//! ClickHouse 18.16 server: what a read is told to group, and when a read must run again.

use ::cluster::Cluster;
use engine::table::ColumnKind;

use crate::clickhouse_server::{server_binary, Shard};
use crate::cluster::{config, part};
use crate::{database_name, engine};

#[test]
fn a_read_is_told_again_when_a_rewrite_lands_and_not_when_parts_merge() {
    let Some(bin) =
        server_binary("a_read_is_told_again_when_a_rewrite_lands_and_not_when_parts_merge")
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let s0 = Shard::start(&bin, tmp.path().join("s0"));
    let cluster = Cluster::connect(config(&[&s0], "node-a")).unwrap();
    let other = Cluster::connect(config(&[&s0], "node-b")).unwrap();
    let (db, e) = (database_name("identity"), engine());
    let columns = [("usage".to_string(), ColumnKind::Float)];
    let table = format!("__shard_{db}.cpu");
    let rewritten = |c: &Cluster| -> Vec<u64> {
        let s = c.identity_snapshots(&db, "cpu", &columns).unwrap();
        s[0].as_ref()
            .expect("an index on one replica")
            .rewritten
            .clone()
    };

    // Points at 1 s and 2 s of series 0..10, each once.
    cluster
        .deliver(e, &db, "cpu", &[part(1, 10), part(2, 10)], 0)
        .unwrap();
    let snapshot = cluster.identity_snapshots(&db, "cpu", &columns).unwrap();
    assert_eq!(snapshot[0].as_ref().unwrap().rewritten, Vec::<u64>::new());
    // A new point of each: nothing to group, the read stands.
    cluster.deliver(e, &db, "cpu", &[part(3, 10)], 0).unwrap();
    assert!(cluster
        .identity_still_valid(&db, "cpu", &columns, &snapshot)
        .unwrap());

    // The other node writes the points at 2 s of series 0..3 again: a read that used the
    // snapshot may have counted them twice.
    other.deliver(e, &db, "cpu", &[part(2, 3)], 0).unwrap();
    assert!(!cluster
        .identity_still_valid(&db, "cpu", &columns, &snapshot)
        .unwrap());
    let three = rewritten(&cluster);
    assert_eq!(three.len(), 3, "{three:?}");
    assert_eq!(
        rewritten(&other),
        three,
        "the other node reads the same from the shard"
    );

    // Every part merged into one: its blocks were checked, nothing new.
    let snapshot = cluster.identity_snapshots(&db, "cpu", &columns).unwrap();
    s0.query(&format!("OPTIMIZE TABLE {table} FINAL")).unwrap();
    assert!(cluster
        .identity_still_valid(&db, "cpu", &columns, &snapshot)
        .unwrap());

    // A row copied on the shard behind every node (a delivery landing twice).
    let all = s0
        .query(&format!(
            "SELECT DISTINCT series_id FROM {table} ORDER BY series_id"
        ))
        .unwrap();
    let last: u64 = all.lines().last().unwrap().parse().unwrap();
    s0.query(&format!(
        "INSERT INTO {table} SELECT * FROM {table} WHERE series_id = {last} AND time = 3000000000"
    ))
    .unwrap();
    assert!(!cluster
        .identity_still_valid(&db, "cpu", &columns, &snapshot)
        .unwrap());
    let mut want = three.clone();
    want.push(last);
    want.sort_unstable();
    want.dedup();
    assert_eq!(rewritten(&cluster), want);
}
