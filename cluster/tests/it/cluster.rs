//! Delivery to a ClickHouse cluster (issue #25) against two real ClickHouse servers on
//! loopback (Debian's `clickhouse-server`, 18.16 on bookworm; `scripts/setup.sh
//! --test-deps` installs it), each with its own config, ports and data dir, started and
//! stopped by the test.

use std::path::PathBuf;
use std::time::Duration;

use ::cluster::{Cluster, ClusterConfig, ClusterError, ShardMap};
use engine::arrow::array::AsArray;
use engine::table::Part;

use crate::batch::{batch, Col};
use crate::clickhouse_server::{free_ports, server_binary, Shard, CLUSTER};
use crate::{database_name, engine};

/// Two separate servers (not one cluster) in a temporary dir of their own, with the binary
/// to restart them (`None`: no server installed here; the test skips, loudly).
pub(crate) fn two_shards(test: &str) -> Option<(tempfile::TempDir, PathBuf, Shard, Shard)> {
    let bin = server_binary(test)?;
    let tmp = tempfile::tempdir().unwrap();
    let s0 = Shard::start(&bin, tmp.path().join("s0"));
    let s1 = Shard::start(&bin, tmp.path().join("s1"));
    Some((tmp, bin, s0, s1))
}

pub(crate) fn config(shards: &[&Shard], node: &str) -> ClusterConfig {
    ClusterConfig {
        shards: shards.iter().map(|s| vec![s.url()]).collect(),
        zookeeper_path: None,
        insert_quorum: 0,
        user: None,
        password: None,
        node: node.into(),
        incarnation: String::new(),
        timeout: Duration::from_secs(10),
        distributed: None,
        delete_wait: Duration::from_secs(60),
        readers: Vec::new(),
    }
}

/// Every row of `db`.`cpu` a shard holds (its shard table, `__shard_<db>`.`cpu`): (node, seq, row, series, time, host, usage).
/// A failed query fails the test: it is not a shard without rows.
pub(crate) fn rows(shard: &Shard, db: &str) -> Vec<String> {
    try_rows(shard, db).unwrap_or_else(|e| panic!("{}: {e}", shard.url()))
}

/// [`rows`], or the shard's error (a wait tells a shard that lacks the table yet, or is
/// down, from one without rows).
pub(crate) fn try_rows(shard: &Shard, db: &str) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = shard
        .query(&format!(
            "SELECT __node, __seq, __row, series_id, time, host, usage, ok FROM `__shard_{db}`.cpu"
        ))?
        .lines()
        .map(str::to_string)
        .collect();
    out.sort();
    Ok(out)
}

/// A request's part: `n` points of series 0..n at time `seq`, usage = seq + series.
pub(crate) fn part(seq: u64, n: u64) -> Part {
    let series: Vec<u64> = (0..n)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .collect();
    let hosts: Vec<&'static str> = (0..n)
        .map(|i| &*Box::leak(format!("h{i}").into_boxed_str()))
        .collect();
    Part {
        seq,
        batch: batch(
            vec![seq as i64 * 1_000_000_000; n as usize],
            series,
            vec![
                Col::Tag("host", hosts),
                Col::F("usage", (0..n).map(|i| Some((seq + i) as f64)).collect()),
                Col::B("ok", (0..n).map(|i| Some(i % 2 == 0)).collect()),
            ],
        ),
    }
}

#[test]
fn cluster_delivery_splits_by_series_and_retries_never_duplicate() {
    let Some(bin) = server_binary("cluster_delivery_splits_by_series_and_retries_never_duplicate")
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let s0 = Shard::start(&bin, tmp.path().join("s0"));
    let mut s1 = Shard::start(&bin, tmp.path().join("s1"));
    let cluster = Cluster::connect(config(&[&s0, &s1], "node-a")).unwrap();
    assert!(cluster
        .versions()
        .iter()
        .all(|v| *v == Some(::cluster::ServerVersion::OLDEST_TESTED)));
    let db = database_name("cluster");
    let e = engine();

    // The shard map is the engine's jumpConsistentHash, in the embedded engine and on
    // the shard alike.
    for shards in [2u32, 3, 7] {
        let map = ShardMap::new(shards);
        let keys: Vec<u64> = (0..500u64)
            .map(|k| k.wrapping_mul(0x2545_F491_4F6C_DD1D))
            .collect();
        let sql = format!(
            "SELECT arrayJoin([{}]) AS k, jumpConsistentHash(k, {shards})",
            keys.iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(",")
        );
        let ours: Vec<String> = keys
            .iter()
            .map(|k| format!("{k}\t{}", map.shard_of(*k)))
            .collect();
        let embedded = e.query_text(&sql).unwrap();
        assert_eq!(
            embedded.lines().collect::<Vec<_>>(),
            ours,
            "{shards} shards"
        );
        let remote = s0.query(&sql).unwrap();
        assert_eq!(
            remote.lines().collect::<Vec<_>>(),
            ours,
            "{shards} shards on the shard"
        );
    }

    // Two requests' parts in one delivery: each series on its shard only, every row once.
    let parts = [part(1, 40), part(2, 40)];
    let done = cluster.deliver(e, &db, "cpu", &parts, 0).unwrap();
    assert_eq!(done.rows.iter().sum::<u64>(), 80);
    assert!(done.rows.iter().all(|n| *n > 0), "{done:?}");
    let map = cluster.map();
    for (k, shard) in [&s0, &s1].into_iter().enumerate() {
        let got = rows(shard, &db);
        assert_eq!(got.len() as u64, done.rows[k]);
        for line in &got {
            let series: u64 = line.split('\t').nth(3).unwrap().parse().unwrap();
            assert_eq!(map.shard_of(series) as usize, k, "{line}");
        }
    }
    let first = [rows(&s0, &db), rows(&s1, &db)];
    assert!(first[0]
        .iter()
        .chain(&first[1])
        .all(|l| l.starts_with("node-a\t")));
    assert!(
        first[0]
            .iter()
            .any(|l| l.ends_with("\t1\t1") || l.ends_with("\t0")),
        "booleans land as UInt8: {:?}",
        &first[0][..2]
    );

    // The same parts again, as a retry whose earlier outcome is unknown: nothing twice.
    let again = cluster.deliver(e, &db, "cpu", &parts, 2).unwrap();
    assert_eq!(
        (again.rows.iter().sum::<u64>(), again.already_held),
        (0, 80)
    );
    assert_eq!([rows(&s0, &db), rows(&s1, &db)], first);

    // A shard down: the delivery fails (the WAL keeps the parts); the other shard got its
    // rows. Once the shard is back, the retry sends it its rows and the other shard none.
    s1.stop();
    let parts = [part(3, 40), part(4, 40)];
    match cluster.deliver(e, &db, "cpu", &parts, 0) {
        Err(ClusterError::Unreachable { shard: 1, .. })
        | Err(ClusterError::Refused { shard: 1, .. }) => {}
        other => panic!("a down shard must fail the delivery: {other:?}"),
    }
    // What the down shard lacks, for /health: its rows of the two writes, none of shard 0's.
    let lag = cluster.shard_statuses();
    assert_eq!((lag[0].waiting_deliveries, lag[0].waiting_rows), (0, 0));
    assert_eq!(lag[1].waiting_deliveries, 2);
    s1.spawn(&bin);
    let retry = cluster.deliver(e, &db, "cpu", &parts, 4).unwrap();
    assert_eq!(retry.rows[0], 0, "shard 0 had them: {retry:?}");
    assert!(retry.rows[1] > 0, "{retry:?}");
    assert_eq!(lag[1].waiting_rows, retry.rows[1], "{retry:?}");
    let lag = cluster.shard_statuses();
    assert_eq!((lag[1].waiting_deliveries, lag[1].waiting_rows), (0, 0));
    let (r0, r1) = (rows(&s0, &db), rows(&s1, &db));
    assert_eq!(r0.len() + r1.len(), 160);
    let mut all: Vec<&String> = r0.iter().chain(&r1).collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 160, "no row twice");

    // One shard's rows of one delivery are one block on the shard (one part: all or
    // nothing), whatever the server's own block size (10,000 rows on these shards) and
    // however many blocks the engine sends: 150,000 rows, the first insert into a fresh
    // table, numbered block 1 alone.
    let big = part(7, 150_000);
    cluster.deliver(e, &db, "big", &[big], 0).unwrap();
    for shard in [&s0, &s1] {
        let blocks = shard
            .query(&format!(
                "SELECT sum(rows), max(max_block_number) FROM system.parts \
                 WHERE database = '__shard_{db}' AND table = 'big' AND active"
            ))
            .unwrap();
        let (rows, block) = blocks.trim().split_once('\t').unwrap();
        assert!(rows.parse::<u64>().unwrap() > 60_000, "{blocks}");
        assert_eq!(block, "1", "one block: {blocks}");
    }

    // Schema evolution: a new field is added on the shards that get it.
    let wide = Part {
        seq: 5,
        batch: batch(
            vec![5; 4],
            (0..4u64)
                .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
                .collect(),
            vec![
                Col::Tag("host", vec!["h0", "h1", "h2", "h3"]),
                Col::I("count", vec![Some(1), None, Some(3), Some(4)]),
            ],
        ),
    };
    cluster.deliver(e, &db, "cpu", &[wide], 0).unwrap();
    let counted: u64 = [&s0, &s1]
        .iter()
        .map(|s| {
            s.query(&format!("SELECT count(count) FROM `__shard_{db}`.cpu"))
                .map_or(0, |t| t.trim().parse::<u64>().unwrap())
        })
        .sum();
    assert_eq!(counted, 3);

    // Hostile names reach the shards' SQL quoted: a measurement, a tag and a field with
    // backticks, quotes, a backslash, a tab, a newline and a statement in them are
    // created, delivered and read back as written, and nothing else happens on the shard.
    let weird_m = "m`x'; DROP TABLE cpu; --\\\n\t\u{e9}";
    let weird_tag: &'static str = "t`a'g\\\t";
    let weird_field: &'static str = "f\"i`e'ld\n";
    let hostile = Part {
        seq: 8,
        batch: batch(
            vec![8; 2],
            vec![11, 12],
            vec![
                Col::Tag(weird_tag, vec!["v`1'\\", "v\n2"]),
                Col::F(weird_field, vec![Some(1.5), Some(-2.5)]),
            ],
        ),
    };
    cluster.deliver(e, &db, weird_m, &[hostile], 0).unwrap();
    let columns = [
        (weird_tag.to_string(), engine::table::ColumnKind::Tag),
        (weird_field.to_string(), engine::table::ColumnKind::Float),
    ];
    let back = cluster
        .read_rows(
            &db,
            weird_m,
            &columns,
            ::cluster::RowSelection {
                min: i64::MIN,
                max: i64::MAX,
                condition: None,
                last_per_series: false,
                pointwise: None,
                whole_series: &[],
                series_of: None,
                source: None,
            },
            100,
        )
        .unwrap()
        .unwrap();
    assert_eq!(back.num_rows(), 2);
    let tags = back.column(4).as_string::<i32>();
    let mut got: Vec<&str> = (0..2).map(|i| tags.value(i)).collect();
    got.sort();
    assert_eq!(got, ["v\n2", "v`1'\\"]);
    for shard in [&s0, &s1] {
        assert!(shard
            .query(&format!("SELECT count() FROM `__shard_{db}`.cpu"))
            .is_ok());
    }

    // What every node learns from the cluster: chingest's tables with their typed columns,
    // hostile names read back as written, not another application's table beside them;
    // the databases listed by `create_database` whether or not they hold a table yet.
    s0.query("CREATE DATABASE IF NOT EXISTS foreign_app")
        .unwrap();
    s0.query("CREATE TABLE IF NOT EXISTS foreign_app.t (x UInt8) ENGINE = Memory")
        .unwrap();
    let fresh_db = database_name("listed");
    assert_eq!(cluster.create_database(&fresh_db, 1).unwrap(), 2);
    let catalog = cluster.catalog().unwrap();
    assert!(catalog.unreachable.is_empty(), "{catalog:?}");
    assert!(catalog.databases.contains(&db) && catalog.databases.contains(&fresh_db));
    // The first read made every metadata table, so later reads take one statement a shard.
    for shard in [&s0, &s1] {
        assert_eq!(
            shard
                .query("SELECT name FROM system.tables WHERE database = '__chingest' ORDER BY name")
                .unwrap(),
            "created\ndatabases\ndrops\ndrops_applied\npolicies\nretention\n"
        );
    }
    assert!(!catalog.databases.contains("foreign_app"), "{catalog:?}");
    let weird = &catalog.tables[&(db.clone(), weird_m.to_string())];
    assert_eq!(
        weird
            .iter()
            .map(|(n, k)| (n.clone(), *k))
            .collect::<Vec<_>>(),
        {
            let mut c = columns.to_vec();
            c.sort();
            c
        }
    );
    let cpu = &catalog.tables[&(db.clone(), "cpu".to_string())];
    assert_eq!(cpu.get("usage"), Some(&engine::table::ColumnKind::Float));
    assert_eq!(cpu.get("ok"), Some(&engine::table::ColumnKind::Boolean));
    assert_eq!(cpu.get("host"), Some(&engine::table::ColumnKind::Tag));
    // The distinct tag values over both shards (what SHOW SERIES / TAG VALUES read).
    let values = cluster
        .distinct_tags(&db, weird_m, &[weird_tag.to_string()], 100)
        .unwrap();
    assert_eq!(
        values.into_iter().collect::<Vec<_>>(),
        [vec!["v\n2".to_string()], vec!["v`1'\\".to_string()]]
    );
    match cluster.distinct_tags(&db, "cpu", &["host".to_string()], 2) {
        Err(ClusterError::TooManyRows { max_rows: 2 }) => {}
        other => panic!("{other:?}"),
    }

    // A column of another type on a shard is refused, not coerced.
    let clash = Part {
        seq: 6,
        batch: batch(
            vec![6; 4],
            (0..4u64)
                .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
                .collect(),
            vec![
                Col::Tag("host", vec!["h0", "h1", "h2", "h3"]),
                Col::S("usage", vec![Some("x"); 4]),
            ],
        ),
    };
    let fresh = Cluster::connect(config(&[&s0, &s1], "node-a")).unwrap();
    match fresh.deliver(e, &db, "cpu", &[clash], 0) {
        Err(ClusterError::TypeConflict { column, .. }) => assert_eq!(column, "usage"),
        other => panic!("{other:?}"),
    }

    // A database's dated life: a listed drop hides it and its tables from every node's
    // catalog at once (before they are gone), its tables then leave both shards (another
    // application's table in a database of that name stays), and a newer creation brings
    // the name back, without the old tables.
    cluster.list_database_drop(&db, 10).unwrap();
    let catalog = cluster.catalog().unwrap();
    assert!(!catalog.databases.contains(&db), "{catalog:?}");
    assert!(catalog.tables.keys().all(|(d, _)| d != &db), "{catalog:?}");
    assert!(catalog.databases.contains(&fresh_db), "{catalog:?}");
    let lives = cluster.all_database_lives().unwrap();
    assert_eq!(lives.unfinished_drop(&db), Some(10));
    cluster.confirm_database_drop("node-a", &db, 10).unwrap();
    assert!(cluster
        .all_database_lives()
        .unwrap()
        .has_applied("node-a", &db, 10));
    s1.query(&format!("CREATE DATABASE IF NOT EXISTS `{db}`"))
        .unwrap();
    s1.query(&format!(
        "CREATE TABLE `{db}`.foreign (x UInt8) ENGINE = Memory"
    ))
    .unwrap();
    cluster.drop_database_tables(&db).unwrap();
    for shard in [&s0, &s1] {
        let left = shard
            .query(&format!(
                "SELECT name FROM system.tables WHERE database IN ('{db}', '__shard_{db}') \
                 ORDER BY name"
            ))
            .unwrap();
        let want = if std::ptr::eq(shard, &s1) {
            "foreign\n"
        } else {
            ""
        };
        assert_eq!(left, want);
    }
    cluster
        .confirm_database_drop(::cluster::DROP_DONE, &db, 10)
        .unwrap();
    assert_eq!(
        cluster.all_database_lives().unwrap().unfinished_drop(&db),
        None
    );
    assert_eq!(cluster.create_database(&db, 11).unwrap(), 2);
    let catalog = cluster.catalog().unwrap();
    assert!(catalog.databases.contains(&db), "{catalog:?}");
    assert!(catalog.tables.keys().all(|(d, _)| d != &db), "{catalog:?}");
}

#[test]
fn cluster_configuration_is_checked_at_connect() {
    let bad = |shards: Vec<String>, node: &str| ClusterConfig {
        shards: shards.into_iter().map(|s| vec![s]).collect(),
        zookeeper_path: None,
        insert_quorum: 0,
        user: None,
        password: None,
        node: node.into(),
        incarnation: String::new(),
        timeout: Duration::from_secs(2),
        distributed: None,
        delete_wait: Duration::from_secs(60),
        readers: Vec::new(),
    };
    let err = |c| match Cluster::connect(c) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("connected"),
    };
    assert!(err(bad(vec![], "n")).contains("no shard"));
    assert!(err(bad(vec!["http://127.0.0.1:1".into()], "")).contains("name"));
    assert!(err(bad(vec!["ftp://x".into()], "n")).contains("expected http"));
    // A shard that does not answer is not an error: the node starts and its rows wait.
    let down = Cluster::connect(bad(
        vec![format!("http://127.0.0.1:{}", free_ports(1)[0])],
        "n",
    ));
    assert_eq!(down.unwrap().versions(), [None]);
    // Replicas need replicated tables, under a plain ZooKeeper path; a server is one
    // replica of one shard.
    let port = free_ports(2);
    let (a, b) = (
        format!("http://127.0.0.1:{}", port[0]),
        format!("http://127.0.0.1:{}", port[1]),
    );
    let replicated = |path: Option<&str>, shards: Vec<Vec<String>>| ClusterConfig {
        shards,
        zookeeper_path: path.map(str::to_string),
        ..bad(vec![], "n")
    };
    let two = vec![vec![a.clone(), b.clone()]];
    assert!(err(replicated(None, two.clone())).contains("zookeeper_path"));
    for path in ["chingest", "/a/../b", "/a'b", "/", "/a//b", "/a b"] {
        assert!(
            err(replicated(Some(path), two.clone())).contains("zookeeper_path"),
            "{path}"
        );
    }
    assert!(err(replicated(
        Some("/c"),
        vec![vec![a.clone()], vec![a.clone()]]
    ))
    .contains("listed twice"));
    assert!(err(replicated(Some("/c"), vec![vec![a.clone(), a.clone()]])).contains("listed twice"));
    assert!(err(replicated(Some("/c"), vec![vec![]])).contains("without an endpoint"));
    // A quorum needs replicated tables and as many replicas in every shard.
    let quorum = |n: u32, path: Option<&str>, shards: Vec<Vec<String>>| ClusterConfig {
        insert_quorum: n,
        ..replicated(path, shards)
    };
    assert!(err(quorum(3, Some("/c"), two.clone())).contains("insert_quorum = 3"));
    assert!(err(quorum(2, None, vec![vec![a.clone()]])).contains("insert_quorum = 2"));
    assert!(err(quorum(2, None, two.clone())).contains("zookeeper_path"));
    // Replicas that do not answer: the node starts.
    assert!(Cluster::connect(replicated(Some("/clickhouse/chingest"), two)).is_ok());
}

#[test]
fn distributed_tables_read_every_shard_and_follow_new_columns() {
    let Some(bin) = server_binary("distributed_tables_read_every_shard_and_follow_new_columns")
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let shards = Shard::start_cluster(&bin, &[tmp.path().join("s0"), tmp.path().join("s1")]);
    let (s0, s1) = (&shards[0], &shards[1]);
    let with = |name: &str| ClusterConfig {
        distributed: Some(name.into()),
        ..config(&[s0, s1], "node-d")
    };
    // A name the servers do not know, or know with other shards, is refused at connect.
    match Cluster::connect(with("no_such_cluster")) {
        Err(e @ ClusterError::Config(_)) => {
            assert!(e.to_string().contains("remote_servers"), "{e}")
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("connected"),
    }
    match Cluster::connect(ClusterConfig {
        distributed: Some(CLUSTER.into()),
        ..config(&[s0], "node-d")
    }) {
        Err(e @ ClusterError::Config(_)) => assert!(e.to_string().contains("has 2 shards"), "{e}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("connected"),
    }
    let cluster = Cluster::connect(with(CLUSTER)).unwrap();
    let db = database_name("dist");
    let e = engine();
    let done = cluster
        .deliver(e, &db, "cpu", &[part(1, 30), part(2, 30)], 0)
        .unwrap();
    assert!(done.rows.iter().all(|n| *n > 0), "{done:?}");
    // Every shard's Distributed table reads both shards' rows.
    let whole =
        |shard: &Shard, sql: &str| shard.query(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let sum = format!("SELECT count(), sum(usage) FROM `{db}`.cpu");
    // usage = seq + series index: 30 rows at seq 1 and 30 at seq 2.
    let expected = format!("60\t{}\n", (0..30).map(|i| 1 + i + 2 + i).sum::<u64>());
    assert_eq!(whole(s0, &sum), expected);
    assert_eq!(whole(s1, &sum), expected);
    // A later write's new field is added to the Distributed table too.
    let extra = Part {
        seq: 3,
        batch: batch(
            vec![3_000_000_000; 4],
            (0..4u64)
                .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
                .collect(),
            vec![
                Col::Tag("host", vec!["h0", "h1", "h2", "h3"]),
                Col::F("usage", vec![Some(1.0); 4]),
                Col::F("temp", vec![Some(20.5); 4]),
            ],
        ),
    };
    cluster.deliver(e, &db, "cpu", &[extra], 0).unwrap();
    for shard in [s0, s1] {
        assert_eq!(
            whole(
                shard,
                &format!("SELECT count(temp), sum(temp), count() FROM `{db}`.cpu")
            ),
            "4\t82\t64\n"
        );
    }
    // Hostile names too: a measurement, a tag and a field with backticks, quotes, a
    // backslash, a tab and a newline get their Distributed table, which reads both shards.
    let weird_m = "m`x'; DROP TABLE cpu; --\\\n\t\u{e9}";
    let weird_field = "f\"i`e'ld\n";
    let hostile = Part {
        seq: 4,
        batch: batch(
            vec![4; 6],
            (20..26u64)
                .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
                .collect(),
            vec![
                Col::Tag("t`a'g\\\t", vec!["v`1'\\", "v\n2", "a", "b", "c", "d"]),
                Col::F(weird_field, vec![Some(1.5); 6]),
            ],
        ),
    };
    let done = cluster.deliver(e, &db, weird_m, &[hostile], 0).unwrap();
    assert!(done.rows.iter().all(|n| *n > 0), "{done:?}");
    let sql = format!(
        "SELECT count(), sum({}) FROM `{db}`.{}",
        engine::quote_ident(weird_field),
        engine::quote_ident(weird_m)
    );
    for shard in [s0, s1] {
        assert_eq!(whole(shard, &sql), "6\t9\n");
    }
    // The Distributed tables are not measurements, nor their database a database.
    let catalog = cluster.catalog().unwrap();
    assert!(catalog.databases.contains(&db), "{catalog:?}");
    assert!(
        catalog.databases.iter().all(|d| !d.starts_with("__")),
        "{:?}",
        catalog.databases
    );
    assert_eq!(
        catalog
            .tables
            .keys()
            .filter(|(d, _)| d.contains(&db))
            .count(),
        2,
        "{:?}",
        catalog.tables.keys()
    );
}
