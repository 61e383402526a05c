//! A pushed-down read carries the listing of the table's parts its check reads
//! (`cluster/src/folded.rs`, issue #43): one request per shard once the index is loaded,
//! and a change another node makes between two reads is still seen by the check — here
//! against a 26.7 server (the embedded engine behind [`EngineShard`], whose listener records
//! every statement); `identity.rs` runs the same reads on 18.16. Run from
//! `newer_server.rs`'s test: the process has one embedded engine, and that test needs it to
//! hold no chingest table when it starts.

use ::cluster::{Cluster, ClusterConfig, Grouped};
use engine::arrow::array::AsArray;
use engine::table::ColumnKind;

use crate::cluster::{config, part};
use crate::identity::count_points;
use crate::newer_server::EngineShard;
use crate::{database_name, engine};

/// On `shard` (a 26.7 shard of one replica): a pushed-down read is one request once the
/// index is loaded, and another node's rewrite between two reads is read again.
pub(crate) fn a_pushed_down_read_is_one_request_and_still_sees_another_nodes_rewrite(
    shard: &EngineShard,
) {
    let on = |node: &str| {
        Cluster::connect(ClusterConfig {
            shards: vec![vec![shard.url()]],
            ..config(&[], node)
        })
        .unwrap()
    };
    let (cluster, other) = (on("folded-a"), on("folded-b"));
    let (db, e) = (database_name("folded"), engine());
    let columns = [("usage".to_string(), ColumnKind::Float)];
    let table = format!("`__shard_{db}`.cpu");
    let kinds = [("n".to_string(), ColumnKind::Unsigned)];
    // A count of the points and the statements the read sent.
    let count = || {
        let before = shard.seen.lock().unwrap().statements.len();
        let (batch, grouped) = cluster
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
        let n = batch
            .expect("a count row")
            .column(0)
            .as_primitive::<engine::arrow::datatypes::UInt64Type>()
            .value(0);
        // This test's statements only (another test's node could share the listener).
        let sent: Vec<String> = shard.seen.lock().unwrap().statements[before..]
            .iter()
            .filter(|s| s.contains(&db))
            .cloned()
            .collect();
        (n, grouped, sent)
    };

    cluster
        .deliver(e, &db, "cpu", &[part(1, 10), part(2, 10)], 0)
        .unwrap();
    // The first read loads the index (its listing and the grouping of every row) first.
    let (n, grouped, _) = count();
    assert_eq!((n, grouped), (20, Grouped::Rewritten));
    // Then: one statement, the read with the listing in it.
    let (n, grouped, sent) = count();
    assert_eq!((n, grouped), (20, Grouped::Rewritten));
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert!(sent[0].contains("FROM system.parts") && sent[0].contains("count()"));

    // Another node writes the points at 2 s of series 0..3 again: the read (whose index
    // lists no rewritten series) counts them twice, and the listing it carried shows the
    // new part, whose rows are checked: read again, each point once.
    other.deliver(e, &db, "cpu", &[part(2, 3)], 0).unwrap();
    let (n, grouped, sent) = count();
    assert_eq!((n, grouped), (20, Grouped::Again), "{sent:#?}");
    // The index knows them now: one statement again, grouping the three.
    let (n, grouped, sent) = count();
    assert_eq!((n, grouped, sent.len()), (20, Grouped::Rewritten, 1));
    // A new point of each series from the other node: seen by the same one statement.
    other.deliver(e, &db, "cpu", &[part(3, 10)], 0).unwrap();
    let (n, grouped, _) = count();
    assert_eq!((n, grouped), (30, Grouped::Rewritten));
}
