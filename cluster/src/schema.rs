//! The layout of a measurement's table on a shard: `time` as `Int64` nanoseconds,
//! `series_id`, the writing node (`__node`) and the write's version (`__seq`, `__row`) that
//! make a row's delivery checkable, tags as `String` (`LowCardinality(String)` on a server
//! that has it as a plain type: [`ServerVersion::low_cardinality_tags`]), fields as
//! `Nullable` of `Float64`, `Int64`, `UInt64`, `String` or `UInt8` (booleans: 18.16 has no
//! `Bool`). Sorted by `(series_id, time)` as the embedded table is, partitioned by time
//! (retention drops whole partitions: [`partition_span_secs`]). A shard's own rows of
//! `db`.`m` are in `__shard_<db>`.`m`; `db`.`m` is the `Distributed` table over all of them.
//!
//! `time` stays `Int64` nanoseconds on every version, `DateTime64(9)` where a server has it
//! (20.1+) included, for good: one layout means one read path (`read.rs` decodes the same
//! `RowBinary` from every server, and a shard table made before an upgrade reads as one made
//! after), nanoseconds are exact in either, the partition key and the pushed-down
//! statements' bucket arithmetic are integer arithmetic every version runs alike, and
//! `DateTime64(9)` spans only 1900–2262 where InfluxDB's `int64` nanoseconds span
//! 1677–2262 (a point InfluxDB takes would be refused). Users' own SQL converts with
//! `fromUnixTimestamp64Nano(time)` on a server that has it (20.5+).

use engine::table::ColumnKind;
use engine::{quote_ident, quote_string};

use crate::ServerVersion;

/// The key columns of every shard table: name, shard type, the engine's expression for
/// it over a batch in the embedded layout (`node` is the writing node's name).
pub(crate) fn key_columns(node: &str) -> [(&'static str, &'static str, String); 5] {
    [
        ("time", "Int64", "toUnixTimestamp64Nano(`time`)".to_string()),
        ("series_id", "UInt64", "`series_id`".to_string()),
        ("__node", "String", quote_string(node)),
        ("__seq", "UInt64", "`__seq`".to_string()),
        ("__row", "UInt32", "`__row`".to_string()),
    ]
}

/// A user column's type as the node reads and writes it on every shard (a read casts to
/// it, an insert sends it); a tag's column may be made `LowCardinality(String)`
/// ([`column_type`]).
pub(crate) fn shard_type(kind: ColumnKind) -> &'static str {
    match kind {
        ColumnKind::Tag => "String",
        ColumnKind::Float => "Nullable(Float64)",
        ColumnKind::Integer => "Nullable(Int64)",
        ColumnKind::Unsigned => "Nullable(UInt64)",
        ColumnKind::String => "Nullable(String)",
        ColumnKind::Boolean => "Nullable(UInt8)",
    }
}

/// The type a user column of `kind` is made with on a server of version `v`: a tag is
/// `LowCardinality(String)` where [`ServerVersion::low_cardinality_tags`], else as
/// [`shard_type`].
pub(crate) fn column_type(kind: ColumnKind, v: ServerVersion) -> &'static str {
    match kind {
        ColumnKind::Tag if v.low_cardinality_tags() => "LowCardinality(String)",
        kind => shard_type(kind),
    }
}

/// The kind a shard's column type stands for (`None`: not a user column's type).
pub(crate) fn kind_of(shard_type: &str) -> Option<ColumnKind> {
    Some(match shard_type {
        "String" | "LowCardinality(String)" => ColumnKind::Tag,
        "Nullable(Float64)" => ColumnKind::Float,
        "Nullable(Int64)" => ColumnKind::Integer,
        "Nullable(UInt64)" => ColumnKind::Unsigned,
        "Nullable(String)" => ColumnKind::String,
        "Nullable(UInt8)" => ColumnKind::Boolean,
        _ => return None,
    })
}

/// The database of `db`'s shard tables on every shard: `__shard_<db>`. The database's own
/// name is the whole cluster's (`db`.`measurement`, a `Distributed` table over every shard's
/// `__shard_<db>`.`measurement`, when the cluster's name is configured), as users of a
/// ClickHouse cluster expect of SQL; no user database can start with `__` (chingest
/// reserves the prefix), so no database of a user's is ever taken for a shard's.
pub(crate) fn shard_database(db: &str) -> String {
    format!("{SHARD_DATABASE_PREFIX}{db}")
}

/// What [`shard_database`] puts before a database's name.
pub(crate) const SHARD_DATABASE_PREFIX: &str = "__shard_";

/// The shard table of `db`.`measurement`: `__shard_<db>`.`measurement`.
pub(crate) fn table(db: &str, measurement: &str) -> String {
    format!(
        "{}.{}",
        quote_ident(&shard_database(db)),
        quote_ident(measurement)
    )
}

/// How much time one partition of a shard table spans, in seconds, for a database that
/// keeps points `retention_secs` (0: forever): InfluxDB's shard group duration for that
/// retention (under 2 days: 1 hour; up to 180 days: 1 day; longer or forever: 7 days).
/// Retention drops whole partitions, as InfluxDB drops whole shard groups, so a point
/// outlives its retention by at most one span; and a batch of old points spread over a
/// long time makes one part per span it touches, so the span is no finer than that.
pub(crate) fn partition_span_secs(retention_secs: u64) -> u64 {
    match retention_secs {
        0 => 7 * 86_400,
        r if r < 2 * 86_400 => 3_600,
        r if r <= 180 * 86_400 => 86_400,
        _ => 7 * 86_400,
    }
}

/// The partition key of a shard table whose partitions span `span_secs`: the number of
/// the span `time` falls in. The divisor is cast to `Int64`: 18.16 divides an `Int64` by
/// a `UInt64` literal as unsigned, putting every time before 1970 in a partition far in
/// the future.
fn partition_key(span_secs: u64) -> String {
    format!(
        "intDiv(`time`, toInt64({}))",
        span_secs.saturating_mul(1_000_000_000)
    )
}

/// The span of a shard table's partitions, in nanoseconds, from its partition key as
/// `system.tables` shows it; `None` for a key chingest did not write (not expired).
pub(crate) fn partition_span_ns(key: &str) -> Option<i64> {
    let divisor = key
        .trim()
        .strip_prefix("intDiv(time, toInt64(")?
        .strip_suffix("))")?;
    divisor.parse::<i64>().ok().filter(|ns| *ns > 0)
}

/// Where in ZooKeeper shard `k`'s replicas of `database`.`table` keep what they share:
/// under `root`, the shard's number (chingest's shard order, never renumbered), then the
/// names' hashes — any name a user can give is a valid node name that way, and a table
/// and its replicas' definitions name the same path on every node.
pub(crate) fn zookeeper_path(root: &str, k: usize, database: &str, table: &str) -> String {
    format!(
        "{}/{k}/{:016x}/{:016x}",
        root.trim_end_matches('/'),
        xxhash_rust::xxh3::xxh3_64(database.as_bytes()),
        xxhash_rust::xxh3::xxh3_64(table.as_bytes())
    )
}

/// Whether `path` can be [`zookeeper_path`]'s root: absolute, plain characters (it is
/// written into every table's definition), no empty or dot node.
pub(crate) fn check_zookeeper_path(path: &str) -> Result<(), String> {
    let nodes: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    let plain = |n: &&str| {
        !n.is_empty()
            && *n != "."
            && *n != ".."
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    };
    if !path.starts_with('/') || nodes.is_empty() || !nodes.iter().all(plain) || path.len() > 200 {
        return Err(format!(
            "zookeeper_path {path:?}: expected an absolute ZooKeeper path of letters, digits, \
             '_', '-' and '.' (such as \"/clickhouse/chingest\")"
        ));
    }
    Ok(())
}

/// The engine of a table whose rows `merge` keeps (`MergeTree`, or
/// `ReplacingMergeTree(<version column>)`): as is on a shard with one server, replicated
/// under `path` among the shard's replicas (each names itself by its `replica` macro).
pub(crate) fn engine(merge: &str, path: Option<&str>) -> String {
    let Some(path) = path else {
        return merge.to_string();
    };
    let shared = format!("{}, '{{replica}}'", quote_string(path));
    match merge.strip_suffix(')').and_then(|m| m.split_once('(')) {
        Some((name, args)) if !args.is_empty() => format!("Replicated{name}({shared}, {args})"),
        Some((name, _)) => format!("Replicated{name}({shared})"),
        None => format!("Replicated{merge}({shared})"),
    }
}

/// `CREATE TABLE IF NOT EXISTS` with the key columns and `columns` (typed for a server of
/// version `v`: [`column_type`]), partitioned by spans of `span_secs`
/// ([`partition_span_secs`]), its rows kept by `engine` ([`engine`]).
pub(crate) fn create_table(
    db: &str,
    measurement: &str,
    columns: &[(String, ColumnKind)],
    span_secs: u64,
    engine: &str,
    v: ServerVersion,
) -> String {
    let mut cols: Vec<String> = key_columns("")
        .iter()
        .map(|(name, ty, _)| format!("{} {ty}", quote_ident(name)))
        .collect();
    cols.extend(
        columns
            .iter()
            .map(|(name, kind)| format!("{} {}", quote_ident(name), column_type(*kind, v))),
    );
    format!(
        "CREATE TABLE IF NOT EXISTS {} ({}) ENGINE = {engine} PARTITION BY {} \
         ORDER BY (`series_id`, `time`)",
        table(db, measurement),
        cols.join(", "),
        partition_key(span_secs)
    )
}

/// `ADD COLUMN` of one user column of type `ty` ([`column_type`]) to `table` (18.16 has no
/// `IF NOT EXISTS` there).
pub(crate) fn add_column(table: &str, name: &str, ty: &str) -> String {
    format!("ALTER TABLE {table} ADD COLUMN {} {ty}", quote_ident(name))
}

/// `DROP TABLE IF EXISTS` of `table` (quoted) on a server of version `v`: gone at once,
/// and with it a replicated table's replica in ZooKeeper (` SYNC` on servers whose drops
/// are otherwise deferred: [`ServerVersion::atomic_databases`]).
pub(crate) fn drop_table(table: &str, v: ServerVersion) -> String {
    format!("DROP TABLE IF EXISTS {table}{}", v.drop_suffix())
}

/// `DROP DATABASE IF EXISTS` of `database` on a server of version `v` ([`drop_table`]).
pub(crate) fn drop_database(database: &str, v: ServerVersion) -> String {
    format!(
        "DROP DATABASE IF EXISTS {}{}",
        quote_ident(database),
        v.drop_suffix()
    )
}

/// The `Distributed` table over every shard's `db`.`measurement`: `db`.`measurement`.
pub(crate) fn distributed_table(db: &str, measurement: &str) -> String {
    format!("{}.{}", quote_ident(db), quote_ident(measurement))
}

/// `CREATE TABLE IF NOT EXISTS` of [`distributed_table`] with the shard table's columns, over
/// the shards of `cluster` (the name the servers' `remote_servers` give them).
pub(crate) fn create_distributed(db: &str, measurement: &str, cluster: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} AS {} ENGINE = Distributed({}, {}, {})",
        distributed_table(db, measurement),
        table(db, measurement),
        quote_string(cluster),
        quote_string(&shard_database(db)),
        quote_string(measurement)
    )
}

/// The structure `url()` writes, and the `SELECT` list that fills it from a batch in the
/// embedded layout, for `columns`: the same on every server ([`shard_type`]; a
/// `LowCardinality(String)` tag column takes `String` values, converted by the server).
pub(crate) fn insert_shape(
    node: &str,
    columns: &[(String, ColumnKind)],
) -> (String, String, String) {
    let mut structure = Vec::new();
    let mut names = Vec::new();
    let mut select = Vec::new();
    for (name, ty, expr) in key_columns(node) {
        structure.push(format!("{} {ty}", quote_ident(name)));
        names.push(quote_ident(name));
        select.push(expr);
    }
    for (name, kind) in columns {
        let ty = shard_type(*kind);
        structure.push(format!("{} {ty}", quote_ident(name)));
        names.push(quote_ident(name));
        select.push(format!("CAST({} AS {ty})", quote_ident(name)));
    }
    (structure.join(", "), names.join(", "), select.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicated_engines_name_the_shard_s_path_and_the_replica_macro() {
        assert_eq!(engine("MergeTree", None), "MergeTree");
        assert_eq!(
            engine("MergeTree", Some("/c/0/a/b")),
            "ReplicatedMergeTree('/c/0/a/b', '{replica}')"
        );
        assert_eq!(
            engine("ReplacingMergeTree(at)", Some("/c/0/a/b")),
            "ReplicatedReplacingMergeTree('/c/0/a/b', '{replica}', at)"
        );
        // Any name a user gives is two hashes in the path, the same on every node.
        let hostile = zookeeper_path("/c/", 3, "__shard_a/../b", "m'; DROP TABLE x --");
        assert!(hostile.starts_with("/c/3/"), "{hostile}");
        assert!(hostile[5..]
            .chars()
            .all(|c| c.is_ascii_hexdigit() || c == '/'));
        assert_eq!(
            hostile,
            zookeeper_path("/c", 3, "__shard_a/../b", "m'; DROP TABLE x --")
        );
        assert_ne!(
            hostile,
            zookeeper_path("/c", 4, "__shard_a/../b", "m'; DROP TABLE x --")
        );
        assert!(check_zookeeper_path("/clickhouse/chingest-1.x").is_ok());
        for bad in ["", "c", "/", "/a//b", "/a/./b", "/a'", "/a\\b", "/{shard}"] {
            assert!(check_zookeeper_path(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn drops_say_sync_only_where_a_drop_is_deferred() {
        let v = |t| ServerVersion::parse(t).unwrap();
        // 18.16 keeps the statements it always had.
        assert_eq!(
            drop_table("`__shard_a`.`m`", v("18.16.1")),
            "DROP TABLE IF EXISTS `__shard_a`.`m`"
        );
        assert_eq!(
            drop_database("__shard_a", v("18.16.1")),
            "DROP DATABASE IF EXISTS `__shard_a`"
        );
        assert_eq!(
            drop_table("`__shard_a`.`m`", v("24.8.4.13")),
            "DROP TABLE IF EXISTS `__shard_a`.`m` SYNC"
        );
        assert_eq!(
            drop_database("__shard_a", v("20.10.2.20")),
            "DROP DATABASE IF EXISTS `__shard_a` SYNC"
        );
    }

    #[test]
    fn tags_are_low_cardinality_only_where_the_server_has_it() {
        let v = |t| ServerVersion::parse(t).unwrap();
        let columns = [
            ("host".to_string(), ColumnKind::Tag),
            ("v".to_string(), ColumnKind::Float),
        ];
        // 18.16 keeps the statement it always had.
        assert_eq!(
            create_table("d", "m", &columns, 3600, "MergeTree", v("18.16.1")),
            "CREATE TABLE IF NOT EXISTS `__shard_d`.`m` (`time` Int64, `series_id` UInt64, \
             `__node` String, `__seq` UInt64, `__row` UInt32, `host` String, \
             `v` Nullable(Float64)) ENGINE = MergeTree PARTITION BY \
             intDiv(`time`, toInt64(3600000000000)) ORDER BY (`series_id`, `time`)"
        );
        let newer = create_table("d", "m", &columns, 3600, "MergeTree", v("24.8.4.13"));
        assert!(
            newer.contains("`host` LowCardinality(String), `v` Nullable(Float64))"),
            "{newer}"
        );
        assert!(newer.contains("`__node` String,"), "{newer}");
        assert_eq!(
            add_column("t", "dc", column_type(ColumnKind::Tag, v("18.16.1"))),
            "ALTER TABLE t ADD COLUMN `dc` String"
        );
        assert_eq!(
            add_column("t", "dc", column_type(ColumnKind::Tag, v("20.1.2.4"))),
            "ALTER TABLE t ADD COLUMN `dc` LowCardinality(String)"
        );
        assert_eq!(
            column_type(ColumnKind::String, v("26.7.1.1")),
            "Nullable(String)"
        );
        // Either form is a tag's column when a shard's table is read back.
        assert_eq!(kind_of("String"), Some(ColumnKind::Tag));
        assert_eq!(kind_of("LowCardinality(String)"), Some(ColumnKind::Tag));
        assert_eq!(kind_of("LowCardinality(Nullable(String))"), None);
        // What a node reads and inserts is the same on every version.
        let (structure, _, select) = insert_shape("n", &columns);
        assert!(structure.contains("`host` String"), "{structure}");
        assert!(select.contains("CAST(`host` AS String)"), "{select}");
    }

    #[test]
    fn a_table_names_its_engine() {
        let sql = create_table(
            "d",
            "m",
            &[("v".into(), ColumnKind::Float)],
            3600,
            &engine("MergeTree", Some("/c/0/x/y")),
            ServerVersion::OLDEST_TESTED,
        );
        assert!(
            sql.contains("ENGINE = ReplicatedMergeTree('/c/0/x/y', '{replica}') PARTITION BY"),
            "{sql}"
        );
    }
}
