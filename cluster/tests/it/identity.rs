//! The shards' index of points written twice (`cluster/src/identity.rs`) against a real
//! ClickHouse 18.16 server: what a read is told to group, and when a read must run again.

use ::cluster::{Cluster, Grouped};
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

/// The points of the shard table `table`, counted with `snapshot`'s split: the rewritten
/// series' rows grouped by `(series_id, time)`, every other row read as a point — what a
/// pushed-down `count` does.
pub(crate) fn count_points(table: &str, snapshot: Option<&::cluster::IdentitySnapshot>) -> String {
    let (single, grouped) = match snapshot.map(|s| &s.rewritten) {
        None => ("0".to_string(), "1".to_string()),
        Some(r) if r.is_empty() => ("1".to_string(), "0".to_string()),
        Some(r) => {
            let list: Vec<String> = r.iter().map(u64::to_string).collect();
            let list = list.join(",");
            (
                format!("series_id NOT IN ({list})"),
                format!("series_id IN ({list})"),
            )
        }
    };
    format!(
        "SELECT toUInt64(count()) AS __p0 FROM (\
         SELECT series_id, time FROM {table} WHERE {single} UNION ALL \
         SELECT series_id, time FROM {table} WHERE {grouped} GROUP BY series_id, time)"
    )
}

#[test]
fn a_read_checked_only_after_it_ran_still_counts_a_point_once() {
    let Some(bin) = server_binary("a_read_checked_only_after_it_ran_still_counts_a_point_once")
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let s0 = Shard::start(&bin, tmp.path().join("s0"));
    let cluster = Cluster::connect(config(&[&s0], "node-a")).unwrap();
    let other = Cluster::connect(config(&[&s0], "node-b")).unwrap();
    let (db, e) = (database_name("identity_after"), engine());
    let columns = [("usage".to_string(), ColumnKind::Float)];
    let table = format!("__shard_{db}.cpu");
    let kinds = [("n".to_string(), ColumnKind::Unsigned)];
    let count = |c: &Cluster| {
        let (batch, grouped) = c
            .read_partials(
                &db,
                "cpu",
                &columns,
                None,
                |_, s, _| count_points(&table, s),
                &kinds,
                10,
            )
            .unwrap();
        let batch = batch.expect("a count row");
        use arrow::array::AsArray;
        let n = batch
            .column(0)
            .as_primitive::<arrow::datatypes::UInt64Type>()
            .value(0);
        (n, grouped)
    };

    // Points at 1 s and 2 s of series 0..10: the first read loads the index whole.
    cluster
        .deliver(e, &db, "cpu", &[part(1, 10), part(2, 10)], 0)
        .unwrap();
    assert_eq!(count(&cluster), (20, Grouped::Rewritten));
    assert_eq!(count(&cluster), (20, Grouped::Rewritten));

    // The other node writes the points at 2 s of series 0..3 again. This node's index,
    // not brought up to date before its next read, still lists no rewritten series: its
    // read counts them twice, and the check after it must catch that.
    other.deliver(e, &db, "cpu", &[part(2, 3)], 0).unwrap();
    assert_eq!(count(&cluster), (20, Grouped::Again), "each point once");
    // The index knows them now: read once, grouping the three.
    assert_eq!(count(&cluster), (20, Grouped::Rewritten));

    // A new point of each series: checked after the read, nothing to read again.
    other.deliver(e, &db, "cpu", &[part(3, 10)], 0).unwrap();
    assert_eq!(count(&cluster), (30, Grouped::Rewritten));

    // This node writes points at 3 s again: it lists the parts before its next read, which
    // groups them at once.
    cluster.deliver(e, &db, "cpu", &[part(3, 5)], 0).unwrap();
    assert_eq!(count(&cluster), (30, Grouped::Rewritten));
}
