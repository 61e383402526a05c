//! What `SHOW` statements, `/api/v1/sql`, `/metrics` and `/health` read.
//!
//! User SQL goes to the engine's SQL sandbox (`engine::sandbox`), engine stats to
//! a stats connection of their own; neither uses the flusher's connections.

use std::sync::atomic::Ordering;

use engine::arrow::array::AsArray;

use ingest::catalog::Record;

use crate::influxql::read_path;

use crate::{
    EngineStats, SqlAccess, SqlError, SqlFormat, SqlRequest, SqlSummary, Storage, StorageError,
    StorageStats,
};

/// Databases the engine keeps for itself, left out of operator stats.
const ENGINE_DATABASES: &str = "('system', 'information_schema', 'INFORMATION_SCHEMA')";

impl Storage {
    pub(crate) fn require(&self, db: &str) -> Result<(), StorageError> {
        if self.catalog.database_exists(db) {
            Ok(())
        } else {
            Err(StorageError::DatabaseNotFound { db: db.to_string() })
        }
    }

    /// Series keys from the catalog's series records (the one series registry),
    /// sorted by measurement, then key.
    pub(crate) fn series_keys(
        &self,
        db: &str,
        measurement: Option<&str>,
    ) -> Result<Vec<String>, StorageError> {
        self.require(db)?;
        let records = self
            .wal
            .meta_scan_prefix(&ingest::catalog::series_prefix(db))?;
        let mut keys = Vec::new();
        for (k, v) in &records {
            if let Ok(Some(Record::Series { key, .. })) = Record::decode(k, v) {
                if measurement.is_none_or(|m| key.measurement() == m.as_bytes()) {
                    // As InfluxDB shows a series key: `measurement,k=v,...`, escaped.
                    keys.push((key.measurement().to_vec(), key.to_string()));
                }
            }
        }
        if let Some(cluster) = &self.cluster {
            // The series other nodes delivered (this node's are in its catalog).
            for m in self.catalog.schema(db) {
                if measurement.is_some_and(|want| want != m.name) {
                    continue;
                }
                let mut tag_keys = m.tag_keys.clone();
                tag_keys.sort();
                let tuples = cluster.distinct_tags(db, &m.name, &tag_keys, self.row_limit())?;
                for values in tuples {
                    let pairs: Vec<(&String, &String)> = tag_keys.iter().zip(&values).collect();
                    let key = ingest::series::SeriesKey::new(m.name.as_bytes(), &pairs);
                    keys.push((m.name.as_bytes().to_vec(), key.to_string()));
                }
            }
        }
        keys.sort();
        keys.dedup();
        Ok(keys.into_iter().map(|(_, key)| key).collect())
    }

    /// Distinct non-empty values of each of `keys` in `measurement`: the engine's,
    /// and those of acknowledged points not flushed yet (as `SELECT` sees them).
    /// A client triggers these statements (`SHOW TAG VALUES`), so they run in the SQL
    /// sandbox with its time and size limits, never on the flusher's connections.
    pub(crate) fn distinct_tag_values(
        &self,
        db: &str,
        measurement: &str,
        keys: &[String],
    ) -> Result<Vec<(String, String)>, StorageError> {
        // From the hot store where it holds every series (`influxql/hot/tag_values.rs`);
        // the caller's access to `db` was checked with the statement.
        let started = std::time::Instant::now();
        if let Some(m) = self
            .catalog
            .schema(db)
            .into_iter()
            .find(|m| m.name == measurement)
        {
            if let Ok(Some(pairs)) = self.hot_tag_values(None, db, &m, keys, None, 0) {
                read_path::record(read_path::Path::Hot, started.elapsed());
                return Ok(pairs);
            }
        }
        let out = self.engine_tag_values(db, measurement, keys)?;
        read_path::record(read_path::Path::Engine, started.elapsed());
        Ok(out)
    }

    /// [`Storage::distinct_tag_values`] from the engine's table and the unflushed rows.
    fn engine_tag_values(
        &self,
        db: &str,
        measurement: &str,
        keys: &[String],
    ) -> Result<Vec<(String, String)>, StorageError> {
        let engine = self.engine()?;
        let table = engine::table::qualified(db, measurement);
        let mut keys: Vec<&String> = keys.iter().collect();
        keys.sort();
        keys.dedup();
        // Before the engine is asked: a part missing here is in the table then.
        let acked = self.wal.last_seq();
        self.reads
            .unflushed()
            .wait_received(acked, std::time::Duration::from_secs(5));
        let unflushed = self
            .reads
            .unflushed()
            .parts(db, measurement, i64::MIN, i64::MAX);
        let mut out = Vec::new();
        for k in keys {
            let mut values: std::collections::BTreeSet<String> = unflushed
                .iter()
                .filter_map(|p| p.batch.column_by_name(k))
                .filter_map(|c| c.as_string_opt::<i32>())
                .flat_map(|c| c.iter().flatten().filter(|v| !v.is_empty()))
                .map(str::to_string)
                .collect();
            if let Some(cluster) = &self.cluster {
                let known = self
                    .catalog
                    .schema(db)
                    .into_iter()
                    .any(|m| m.name == measurement && m.tag_keys.contains(k));
                if known {
                    let tuples = cluster.distinct_tags(
                        db,
                        measurement,
                        std::slice::from_ref(k),
                        self.row_limit(),
                    )?;
                    values.extend(tuples.into_iter().flatten().filter(|v| !v.is_empty()));
                }
                out.extend(values.into_iter().map(|v| (k.clone(), v)));
                continue;
            }
            let col = engine::quote_ident(k);
            let sql =
                format!("SELECT DISTINCT {col} AS v FROM {table} WHERE {col} != '' ORDER BY v");
            let mut rows = Vec::new();
            let ran = engine.sql(
                &sql,
                engine::OutputFormat::JSONEachRow,
                &engine::SqlAccess::Admin,
                &engine::SqlCancel::new(),
                &mut |chunk| {
                    rows.extend_from_slice(chunk);
                    true
                },
            );
            match ran {
                Ok(_) => {}
                // Not flushed yet (no table or column): only unflushed values.
                Err(engine::SqlError::Invalid(m)) if not_flushed_yet(&m) => rows.clear(),
                Err(e) => return Err(StorageError::TagValues(e)),
            }
            for line in rows.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                let row: TagValueRow =
                    serde_json::from_slice(line).map_err(|e| StorageError::EngineAnswer {
                        what: "tag values",
                        message: e.to_string(),
                    })?;
                values.insert(row.v);
            }
            out.extend(values.into_iter().map(|v| (k.clone(), v)));
        }
        Ok(out)
    }

    /// One user statement, in the engine's SQL sandbox (never on the flusher's
    /// connections).
    pub(crate) fn run_sql(
        &self,
        req: SqlRequest<'_>,
        sink: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<SqlSummary, SqlError> {
        let f = match req.format {
            SqlFormat::Json => engine::OutputFormat::JSON,
            SqlFormat::JsonEachRow => engine::OutputFormat::JSONEachRow,
            SqlFormat::Csv => engine::OutputFormat::CSVWithNames,
            SqlFormat::Arrow => engine::OutputFormat::ArrowStream,
        };
        let engine = self
            .engine()
            .map_err(|_| SqlError::Unavailable("the server is shutting down".into()))?;
        engine.sql(req.sql, f, &req.access, &req.cancel, sink)
    }

    /// `/api/v1/sql` on the cluster: the statement runs on a shard over the
    /// `Distributed` tables, read-only and within the `[sql]` limits, enforced by that
    /// server ([`cluster::Cluster::sql`]). Admins, and everyone when auth is off,
    /// run as chingest's user there (every database, and the servers' `system` tables);
    /// anyone else as the shards' reader of the one database they name ([`sql_reader`]).
    pub(crate) fn run_cluster_sql(
        &self,
        cluster: &cluster::Cluster,
        req: SqlRequest<'_>,
        sink: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<SqlSummary, SqlError> {
        let reader = if cluster.distributed().is_some() {
            sql_reader(cluster, &req)?
        } else {
            None
        };
        let format = match req.format {
            SqlFormat::Json => "JSON",
            SqlFormat::JsonEachRow => "JSONEachRow",
            SqlFormat::Csv => "CSVWithNames",
            SqlFormat::Arrow => "ArrowStream",
        };
        let engine = self
            .engine()
            .map_err(|_| SqlError::Unavailable("the server is shutting down".into()))?;
        // Within the sandbox's concurrency bound and limits, as SQL in the engine.
        engine
            .sql_elsewhere(|limits| cluster.sql(req.sql, format, limits, &req.cancel, sink, reader))
    }

    /// Parts, merges and rows from the engine's system tables, read on a
    /// connection of their own with a 1 s limit. When that connection is busy
    /// (another scrape) or the engine does not answer, the last stats read are
    /// served instead: `/metrics` never waits behind inserts or user SQL.
    /// `None` only before the first successful read (or without an engine).
    pub(crate) fn read_engine_stats(&self) -> Option<EngineStats> {
        let fresh = self.engine().ok().and_then(|e| query_engine_stats(&e));
        let mut last = self.last_engine_stats.lock();
        if let Some(stats) = fresh {
            *last = Some(stats);
        }
        last.clone()
    }

    pub(crate) fn cardinality(&self) -> Vec<(String, u64)> {
        self.catalog
            .databases()
            .into_iter()
            .map(|db| {
                let n = self.catalog.series_count(&db);
                (db, n)
            })
            .collect()
    }

    pub(crate) fn current_stats(&self) -> StorageStats {
        let s = self.wal.stats();
        let unavailable = if self.closed.load(Ordering::Acquire) {
            Some("the server is shutting down".to_string())
        } else if s.poisoned {
            Some("the WAL failed and refuses writes until restart".to_string())
        } else {
            None
        };
        let flush = self
            .flusher
            .lock()
            .as_ref()
            .map(|f| f.status())
            .unwrap_or_default();
        StorageStats {
            flush_pending_points: flush.pending_points,
            flush_consecutive_failures: flush.consecutive_failures,
            flush_last_error: flush.last_error,
            wal_queue_depth: s.queue_depth as u64,
            wal_queue_capacity: self.queue_capacity,
            last_seq: s.last_seq,
            flushed_seq: s.flushed_seq,
            unflushed_points: s.unflushed_points,
            unflushed_bytes: s.unflushed_bytes,
            oldest_unflushed_secs: s.oldest_unflushed_age.map_or(0.0, |d| d.as_secs_f64()),
            unavailable,
            cluster: self
                .cluster
                .as_ref()
                .map(|c| c.shard_statuses())
                .unwrap_or_default(),
            cluster_nodes: self
                .cluster_sync
                .as_ref()
                .map(|s| s.nodes_delivered_ago())
                .unwrap_or_default(),
        }
    }
}

/// Whose shard user runs a statement on the cluster (`None`: chingest's own): a non-admin
/// names the database it reads (`db`), which it must be allowed to read and which must
/// have a reader on the shards.
fn sql_reader<'r>(
    cluster: &cluster::Cluster,
    req: &SqlRequest<'r>,
) -> Result<Option<&'r str>, SqlError> {
    let dbs = match &req.access {
        SqlAccess::Admin | SqlAccess::Read(engine::ReadScope::All) => return Ok(None),
        SqlAccess::Read(engine::ReadScope::Databases(dbs)) => dbs,
    };
    let Some(db) = req.db else {
        let named = match dbs.len() {
            1 => dbs.iter().next().cloned().unwrap_or_default(),
            _ => "<database>".to_string(),
        };
        return Err(SqlError::Forbidden(format!(
            "SQL on a ClickHouse cluster runs, for a non-admin, as the shards' reader of one \
             database: name it with db={named}"
        )));
    };
    if !dbs.contains(db) {
        return Err(SqlError::Forbidden(format!(
            "not authorized to read database {db:?}"
        )));
    }
    if cluster.reader(db).is_none() {
        return Err(SqlError::Forbidden(format!(
            "SQL on a ClickHouse cluster runs, for a non-admin, as the shards' reader of the \
             database: none is configured for {db:?} ([[storage.clickhouse.readers]], \
             docs/security.md)"
        )));
    }
    Ok(Some(db))
}

fn query_engine_stats(engine: &engine::Engine) -> Option<EngineStats> {
    let text = |sql: &str| engine.stats_text(sql);
    let mut stats = EngineStats::default();
    let parts = text(&format!(
        "SELECT database, table, count() FROM system.parts WHERE active \
         AND database NOT IN {ENGINE_DATABASES} GROUP BY database, table ORDER BY database"
    ))?;
    add_parts(&mut stats, &parts);
    stats.merges_running = text("SELECT count() FROM system.merges")?
        .trim()
        .parse()
        .unwrap_or(0);
    let events = text(
        "SELECT event, value FROM system.events WHERE event IN ('InsertedRows', 'MergedRows')",
    )?;
    for line in events.lines() {
        match line.split_once('\t') {
            Some(("InsertedRows", v)) => stats.inserted_rows = v.trim().parse().unwrap_or(0),
            Some(("MergedRows", v)) => stats.merged_rows = v.trim().parse().unwrap_or(0),
            _ => {}
        }
    }
    Some(stats)
}

/// A measurement or tag that has no table or column in the engine yet.
pub(crate) fn not_flushed_yet(engine_message: &str) -> bool {
    ["UNKNOWN_TABLE", "UNKNOWN_IDENTIFIER", "UNKNOWN_DATABASE"]
        .iter()
        .any(|code| engine_message.contains(code))
}

/// One row of the tag-values statement.
#[derive(serde::Deserialize)]
struct TagValueRow {
    v: String,
}

/// Folds `database \t table \t parts` rows (sorted by database) into `stats`.
fn add_parts(stats: &mut EngineStats, rows: &str) {
    for line in rows.lines() {
        let mut f = line.split('\t');
        let (Some(db), Some(_table), Some(n)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let n: u64 = n.parse().unwrap_or(0);
        stats.max_parts_per_table = stats.max_parts_per_table.max(n);
        match stats.active_parts.last_mut() {
            Some((last, total)) if last == db => *total += n,
            _ => stats.active_parts.push((db.to_string(), n)),
        }
    }
}
