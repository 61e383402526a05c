//! The layout of a measurement's table on a shard, in types every supported ClickHouse
//! accepts (18.16 has no `DateTime64`, `Bool` or default `LowCardinality`): `time` as
//! `Int64` nanoseconds, `series_id`, the writing node (`__node`) and the write's version
//! (`__seq`, `__row`) that make a row's delivery checkable, tags as `String`, fields as
//! `Nullable` of `Float64`, `Int64`, `UInt64`, `String` or `UInt8` (booleans). Sorted by
//! `(series_id, time)` as the embedded table is.

use crate::table::ColumnKind;
use crate::{quote_ident, quote_string};

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

/// A user column's type on a shard.
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

/// The kind a shard's column type stands for (`None`: not a user column's type).
pub(crate) fn kind_of(shard_type: &str) -> Option<ColumnKind> {
    Some(match shard_type {
        "String" => ColumnKind::Tag,
        "Nullable(Float64)" => ColumnKind::Float,
        "Nullable(Int64)" => ColumnKind::Integer,
        "Nullable(UInt64)" => ColumnKind::Unsigned,
        "Nullable(String)" => ColumnKind::String,
        "Nullable(UInt8)" => ColumnKind::Boolean,
        _ => return None,
    })
}

/// The `db`.`measurement` of a shard.
pub(crate) fn table(db: &str, measurement: &str) -> String {
    format!("{}.{}", quote_ident(db), quote_ident(measurement))
}

/// `CREATE TABLE IF NOT EXISTS` with the key columns and `columns`.
pub(crate) fn create_table(
    db: &str,
    measurement: &str,
    columns: &[(String, ColumnKind)],
) -> String {
    let mut cols: Vec<String> = key_columns("")
        .iter()
        .map(|(name, ty, _)| format!("{} {ty}", quote_ident(name)))
        .collect();
    cols.extend(
        columns
            .iter()
            .map(|(name, kind)| format!("{} {}", quote_ident(name), shard_type(*kind))),
    );
    format!(
        "CREATE TABLE IF NOT EXISTS {} ({}) ENGINE = MergeTree ORDER BY (`series_id`, `time`)",
        table(db, measurement),
        cols.join(", ")
    )
}

/// `ADD COLUMN` of one user column to `table` (18.16 has no `IF NOT EXISTS` there).
pub(crate) fn add_column(table: &str, name: &str, kind: ColumnKind) -> String {
    format!(
        "ALTER TABLE {table} ADD COLUMN {} {}",
        quote_ident(name),
        shard_type(kind)
    )
}

/// The database of the `Distributed` tables over `db`'s shard tables: `__all_<db>`. The
/// shard tables keep the measurement's own name (`db`.`m`), and any name a measurement
/// could take beside them could be another measurement's; no database can start with
/// `__` (chingest reserves the prefix), so these names are never a user's.
pub(crate) fn distributed_database(db: &str) -> String {
    format!("__all_{db}")
}

/// The `Distributed` table over `db`.`measurement` on every shard of `cluster` (the name
/// the servers' `remote_servers` give the shards).
pub(crate) fn distributed_table(db: &str, measurement: &str) -> String {
    table(&distributed_database(db), measurement)
}

/// `CREATE TABLE IF NOT EXISTS` of [`distributed_table`] with the shard table's columns.
pub(crate) fn create_distributed(db: &str, measurement: &str, cluster: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} AS {} ENGINE = Distributed({}, {}, {})",
        distributed_table(db, measurement),
        table(db, measurement),
        quote_string(cluster),
        quote_string(db),
        quote_string(measurement)
    )
}

/// The structure `url()` writes, and the `SELECT` list that fills it from a batch in the
/// embedded layout, for `columns`.
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
