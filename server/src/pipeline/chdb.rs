//! The real pipeline: ingest → WAL → flush → chDB. The only code of the
//! server that names ingest, wal and flush types.
//!
//! Layout under `storage.data_dir`: `wal/` (RocksDB) and `chdb/` (the engine).
//!
//! Databases are registered in the WAL's metadata store under
//! [`DB_RECORD_PREFIX`] (`1` = exists, `1;retention=<secs>` = exists with a
//! retention, `0` = dropped), so `CREATE DATABASE`
//! is durable before it is acknowledged, like a write. The schema answers of
//! `SHOW MEASUREMENTS / TAG KEYS / FIELD KEYS` come from the ingest catalog's
//! own metadata records (documented in `ingest::catalog`), indexed here as
//! they are committed; `SHOW SERIES` reads the engine's `__series` table.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::*;
use crate::Config;

/// Key prefix of the server's database registry records in the WAL metadata store.
pub const DB_RECORD_PREFIX: &[u8] = b"srv1D";

type Wal = wal::Wal<flush::FlushWrite>;

/// A database registry record's value: `1` (exists, kept forever; also what
/// older versions wrote), `1;retention=<secs>`, or `0` (dropped).
fn db_record(retention_secs: u64) -> Vec<u8> {
    if retention_secs == 0 {
        b"1".to_vec()
    } else {
        format!("1;retention={retention_secs}").into_bytes()
    }
}

/// The retention of an existing database's record (0 = forever), `None` for
/// a dropped one. An unreadable retention keeps the data (0) rather than
/// deleting it.
fn parse_db_record(v: &[u8]) -> Option<u64> {
    let rest = v.strip_prefix(b"1")?;
    Some(
        rest.strip_prefix(b";retention=")
            .and_then(|n| std::str::from_utf8(n).ok()?.parse().ok())
            .unwrap_or(0),
    )
}

/// The storage pipeline of this process.
pub struct ChdbPipeline {
    engine: RwLock<Option<flush::Engine>>,
    wal: Arc<Wal>,
    catalog: ingest::Catalog,
    ingestor: ingest::Ingestor,
    flusher: Mutex<Option<flush::Flusher>>,
    databases: RwLock<BTreeSet<String>>,
    /// Retention in seconds of the databases that have one.
    retention: RwLock<BTreeMap<String, u64>>,
    schema: Arc<RwLock<SchemaIndex>>,
    queue_capacity: u64,
    closed: AtomicBool,
}

/// What a prepared write carries to [`Pipeline::commit`].
struct Pending {
    payload: Vec<u8>,
    points: u64,
    meta: Vec<(Vec<u8>, Vec<u8>)>,
    write: flush::FlushWrite,
}

fn internal(what: &str) -> impl Fn(String) -> PipelineError + '_ {
    move |e| PipelineError::Internal(format!("{what}: {e}"))
}

fn wal_error(e: wal::WalError) -> PipelineError {
    match e {
        wal::WalError::QueueFull { .. } => PipelineError::QueueFull,
        wal::WalError::Shutdown => PipelineError::Unavailable("the server is shutting down".into()),
        wal::WalError::Poisoned { .. } => PipelineError::Unavailable(format!(
            "the WAL failed and refuses writes until restart: {e}"
        )),
        wal::WalError::EntryTooLarge { .. } => PipelineError::Invalid(e.to_string()),
        other => PipelineError::Internal(format!("WAL: {other}")),
    }
}

fn engine_error(e: flush::EngineError) -> PipelineError {
    match e.engine_message() {
        Some(m) => PipelineError::Query(m.to_string()),
        None => PipelineError::Internal(e.to_string()),
    }
}

impl ChdbPipeline {
    /// Opens the engine, the WAL (recovering it), the catalog and the flusher
    /// (which first re-inserts what the WAL holds and the engine lacks).
    pub fn open(config: &Config) -> Result<ChdbPipeline, PipelineError> {
        std::fs::create_dir_all(&config.storage.data_dir).map_err(|e| {
            PipelineError::Internal(format!(
                "cannot create data directory {}: {e}",
                config.storage.data_dir.display()
            ))
        })?;
        let engine = flush::Engine::open(&flush::EngineConfig {
            data_dir: config.storage.engine_dir(),
            connections: config.flush.connections,
        })
        .map_err(|e| PipelineError::Internal(e.to_string()))?;

        let wal_config = wal::WalConfig {
            dir: config.storage.wal_dir(),
            durability: match config.wal.durability.as_str() {
                "buffered" => wal::Durability::Buffered,
                _ => wal::Durability::Fsync,
            },
            queue_capacity: config.wal.queue_capacity,
            ..Default::default()
        };
        // Bounded: a stalled flusher stalls the WAL writer, whose queue then
        // fills and writes are refused with 503/429 instead of growing memory.
        let (tx, rx) = crossbeam_channel::bounded(config.wal.queue_capacity.max(64));
        let (wal, recovery) =
            Wal::open(wal_config, tx).map_err(|e| internal("opening the WAL")(e.to_string()))?;
        let wal = Arc::new(wal);
        let records = wal
            .meta_scan()
            .map_err(|e| internal("reading WAL metadata")(e.to_string()))?;
        let catalog = ingest::Catalog::load(
            ingest::Limits {
                max_series_per_database: config.limits.max_series_per_database,
                max_measurements_per_database: config.limits.max_measurements_per_database,
                max_values_per_tag: config.limits.max_tag_values_per_key,
            },
            records.iter().map(|(k, v)| (k.as_slice(), v.as_slice())),
        )
        .map_err(|e| internal("loading the catalog")(e.to_string()))?;
        let mut databases = BTreeSet::new();
        let mut retention = BTreeMap::new();
        let mut schema = SchemaIndex::default();
        for (k, v) in &records {
            if let Some(name) = k.strip_prefix(DB_RECORD_PREFIX) {
                let name = String::from_utf8_lossy(name).into_owned();
                match parse_db_record(v) {
                    Some(secs) => {
                        if secs > 0 {
                            retention.insert(name.clone(), secs);
                        } else {
                            retention.remove(&name);
                        }
                        databases.insert(name);
                    }
                    None => {
                        retention.remove(&name);
                        databases.remove(&name);
                    }
                }
            } else {
                schema.apply(k, v);
            }
        }
        schema.retain(&databases);

        for c in &recovery.corrupt {
            tracing::error!(
                seq = c.seq,
                "WAL entry is corrupt and was quarantined: {:?}",
                c.reason
            );
        }
        let mut resume = flush::Resume {
            flushed_seq: recovery.flushed_seq,
            entries: Vec::with_capacity(recovery.entries.len()),
            skip: recovery.unreplayable().collect(),
        };
        for e in &recovery.entries {
            match ingest::wire::decode(&e.payload) {
                Ok(d) => resume.entries.push((
                    e.seq,
                    flush::FlushWrite {
                        db: d.db,
                        tables: d
                            .tables
                            .into_iter()
                            .map(|t| (t.measurement, t.batch))
                            .collect(),
                    },
                )),
                Err(err) => {
                    tracing::error!(
                        seq = e.seq,
                        "WAL entry cannot be decoded and is skipped: {err}"
                    );
                    resume.skip.push(e.seq..=e.seq);
                }
            }
        }
        resume.skip.sort_by_key(|r| *r.start());
        if !resume.entries.is_empty() {
            tracing::info!(
                entries = resume.entries.len(),
                points = recovery.points(),
                "replaying unflushed WAL entries into the engine"
            );
        }
        let mark_wal = wal.clone();
        let flusher = flush::Flusher::start(
            engine.clone(),
            flush::FlushConfig {
                max_points_per_batch: config.flush.max_points_per_batch,
                max_age_ms: config.flush.max_age_ms,
                insert_threads: config.flush.insert_threads,
                retention_secs: retention.clone(),
                ..Default::default()
            },
            rx,
            unpack_committed,
            resume,
            Box::new(move |seq| mark_wal.mark_flushed(seq).map_err(|e| e.to_string())),
        )
        .map_err(|e| internal("starting the flusher")(e.to_string()))?;

        Ok(ChdbPipeline {
            engine: RwLock::new(Some(engine)),
            wal,
            catalog,
            ingestor: ingest::Ingestor::default(),
            flusher: Mutex::new(Some(flusher)),
            databases: RwLock::new(databases),
            retention: RwLock::new(retention),
            schema: Arc::new(RwLock::new(schema)),
            queue_capacity: config.wal.queue_capacity as u64,
            closed: AtomicBool::new(false),
        })
    }

    fn engine(&self) -> Result<flush::Engine, PipelineError> {
        self.engine
            .read()
            .clone()
            .ok_or_else(|| PipelineError::Unavailable("the engine is closed".into()))
    }

    fn put_db_record(&self, db: &str, retention_secs: u64) -> Result<(), PipelineError> {
        let mut key = DB_RECORD_PREFIX.to_vec();
        key.extend_from_slice(db.as_bytes());
        let value = db_record(retention_secs);
        self.wal
            .put_meta(vec![(key, value)])
            .map_err(wal_error)?
            .wait()
            .map_err(wal_error)?;
        Ok(())
    }
}

fn unpack_committed(c: wal::Committed<flush::FlushWrite>) -> (u64, flush::FlushWrite) {
    (c.seq, c.attachment)
}

fn check_db_name(db: &str) -> Result<(), PipelineError> {
    if db.is_empty() || db.len() > ingest::MAX_DATABASE_NAME {
        return Err(PipelineError::Invalid(format!(
            "invalid database name {db:?}"
        )));
    }
    if db.chars().any(|c| c.is_control())
        || db.starts_with("__")
        || db == "system"
        || db == "information_schema"
        || db == "INFORMATION_SCHEMA"
    {
        return Err(PipelineError::Invalid(format!(
            "invalid database name {db:?}: reserved or contains control characters"
        )));
    }
    Ok(())
}

impl Pipeline for ChdbPipeline {
    fn prepare(&self, req: WriteRequest<'_>) -> Result<Prepared, PipelineError> {
        let format = match req.format {
            Format::LineProtocol => ingest::Format::LineProtocol,
            Format::MsgpackRows => ingest::Format::MsgpackRows,
            Format::MsgpackColumnar => ingest::Format::MsgpackColumnar,
        };
        let precision = ingest::Precision::parse(match req.precision {
            Precision::Nanoseconds => "ns",
            Precision::Microseconds => "us",
            Precision::Milliseconds => "ms",
            Precision::Seconds => "s",
            Precision::Minutes => "m",
            Precision::Hours => "h",
        })
        .map_err(|e| PipelineError::Internal(e.to_string()))?;
        // Points older than the database's retention are refused at the door,
        // as InfluxDB does (the table's TTL deletes the rest as they age).
        let min_time_ns = match self.retention_secs(req.db) {
            0 => None,
            secs => Some(
                req.now_ns.saturating_sub(
                    i64::try_from(secs)
                        .unwrap_or(i64::MAX)
                        .saturating_mul(1_000_000_000),
                ),
            ),
        };
        let pw = self
            .ingestor
            .prepare_retained(
                &self.catalog,
                req.db,
                req.body,
                format,
                precision,
                req.now_ns,
                min_time_ns,
            )
            .map_err(|e| {
                if e.is_client_error() {
                    PipelineError::Invalid(e.to_string())
                } else {
                    PipelineError::Internal(e.to_string())
                }
            })?;
        let rejection = pw.error_message().map(|message| Rejection {
            kind: if pw.outcome() == ingest::WriteOutcome::LimitExceeded {
                RejectionKind::Limit
            } else {
                RejectionKind::Invalid
            },
            message,
            lines: pw.line_errors.len() as u64,
            dropped: pw.dropped as u64,
        });
        let encode = std::time::Instant::now();
        let payload = if pw.points > 0 {
            pw.encode_wal()
                .map_err(|e| PipelineError::Internal(format!("encoding the WAL entry: {e}")))?
        } else {
            Vec::new()
        };
        metrics::histogram!("chingest_wal_encode_seconds").record(encode.elapsed().as_secs_f64());
        let points = pw.points as u64;
        let payload_bytes = payload.len() as u64;
        let write = flush::FlushWrite {
            db: pw.db,
            tables: pw
                .tables
                .into_iter()
                .map(|t| (t.measurement, t.batch))
                .collect(),
        };
        Ok(Prepared {
            points,
            payload_bytes,
            rejection,
            inner: Box::new(Pending {
                payload,
                points,
                meta: pw.meta,
                write,
            }),
        })
    }

    fn commit(&self, prepared: Prepared) -> BoxFuture<Result<(), PipelineError>> {
        let Ok(pending) = prepared.inner.downcast::<Pending>() else {
            return Box::pin(async {
                Err(PipelineError::Internal("foreign prepared write".into()))
            });
        };
        let Pending {
            payload,
            points,
            meta,
            write,
        } = *pending;
        if points == 0 && meta.is_empty() {
            return Box::pin(async { Ok(()) });
        }
        let schema_meta: Vec<(Vec<u8>, Vec<u8>)> = meta
            .iter()
            .filter(|(k, _)| SchemaIndex::is_schema_record(k))
            .cloned()
            .collect();
        let submitted = if points == 0 {
            // Catalog records without data (every point dropped): persist them alone.
            self.wal.put_meta(meta)
        } else {
            self.wal.submit(wal::Entry {
                payload,
                points,
                meta,
                attachment: write,
            })
        };
        let ticket = match submitted {
            Ok(t) => t,
            Err(e) => {
                let e = wal_error(e);
                return Box::pin(async move { Err(e) });
            }
        };
        let schema = self.schema.clone();
        Box::pin(async move {
            ticket.await.map_err(wal_error)?;
            if !schema_meta.is_empty() {
                let mut s = schema.write();
                for (k, v) in &schema_meta {
                    s.apply(k, v);
                }
            }
            Ok(())
        })
    }

    fn database_exists(&self, db: &str) -> bool {
        self.databases.read().contains(db)
    }

    fn create_database(&self, db: &str, retention_secs: Option<u64>) -> Result<(), PipelineError> {
        check_db_name(db)?;
        if self.database_exists(db) {
            return match retention_secs {
                Some(r) if r != self.retention_secs(db) => Err(PipelineError::Invalid(
                    "retention policy conflicts with an existing policy".into(),
                )),
                _ => Ok(()),
            };
        }
        let retention_secs = retention_secs.unwrap_or(0);
        self.engine()?
            .execute(&format!(
                "CREATE DATABASE IF NOT EXISTS {}",
                flush::quote_ident(db)
            ))
            .map_err(engine_error)?;
        // The flusher learns the retention before the database can be written
        // to, so its first table is created with the TTL.
        if let Some(f) = self.flusher.lock().as_ref() {
            f.set_retention(db, retention_secs);
        }
        self.put_db_record(db, retention_secs)?;
        if retention_secs > 0 {
            self.retention
                .write()
                .insert(db.to_string(), retention_secs);
        }
        self.databases.write().insert(db.to_string());
        tracing::info!(db, "database created");
        Ok(())
    }

    fn drop_database(&self, db: &str) -> Result<(), PipelineError> {
        if !self.database_exists(db) {
            return Ok(());
        }
        // New writes to `db` are refused from here on.
        self.databases.write().remove(db);
        self.retention.write().remove(db);
        self.schema.write().dbs.remove(db);
        // The catalog forgets `db`, and its records go in the same durable
        // write as the drop record, so a restart does not resurrect field
        // types or series counts.
        let prefixes = self.catalog.drop_database(db);
        let mut key = DB_RECORD_PREFIX.to_vec();
        key.extend_from_slice(db.as_bytes());
        let up_to_seq = self
            .wal
            .update_meta(vec![(key, b"0".to_vec())], prefixes)
            .map_err(wal_error)?
            .wait()
            .map_err(wal_error)?;
        // Every write accepted before the drop has a sequence ≤ up_to_seq: the
        // flusher discards those and waits out running inserts, so none can
        // re-create the database after the engine drops it.
        if let Some(f) = self.flusher.lock().as_ref() {
            f.drop_database(db, up_to_seq);
        }
        self.engine()?
            .execute(&format!(
                "DROP DATABASE IF EXISTS {} SYNC",
                flush::quote_ident(db)
            ))
            .map_err(engine_error)?;
        tracing::info!(db, up_to_seq, "database dropped");
        Ok(())
    }

    fn databases(&self) -> Vec<String> {
        self.databases.read().iter().cloned().collect()
    }

    fn retention_secs(&self, db: &str) -> u64 {
        self.retention.read().get(db).copied().unwrap_or(0)
    }

    fn schema(&self, db: &str) -> Result<Vec<MeasurementSchema>, PipelineError> {
        if !self.database_exists(db) {
            return Err(PipelineError::DatabaseNotFound(db.to_string()));
        }
        let s = self.schema.read();
        let Some(ms) = s.dbs.get(db) else {
            return Ok(Vec::new());
        };
        Ok(ms
            .iter()
            .map(|(name, m)| MeasurementSchema {
                name: name.clone(),
                tag_keys: m.tags.iter().cloned().collect(),
                fields: m.fields.iter().map(|(k, t)| (k.clone(), *t)).collect(),
            })
            .collect())
    }

    fn series(&self, db: &str, measurement: Option<&str>) -> Result<Vec<String>, PipelineError> {
        if !self.database_exists(db) {
            return Err(PipelineError::DatabaseNotFound(db.to_string()));
        }
        let engine = self.engine()?;
        let table = format!("{}.`__series`", flush::quote_ident(db));
        let exists = engine
            .query_text(&format!(
                "SELECT count() FROM system.tables WHERE database = {} AND name = '__series'",
                flush::quote_string(db)
            ))
            .map_err(engine_error)?;
        if exists.trim() == "0" {
            return Ok(Vec::new());
        }
        let filter = measurement
            .map(|m| format!(" WHERE measurement = {}", flush::quote_string(m)))
            .unwrap_or_default();
        let out = engine
            .query(
                &format!(
                    "SELECT DISTINCT measurement, series_key FROM {table}{filter} ORDER BY measurement, series_key"
                ),
                flush::OutputFormat::JSONCompactEachRow,
            )
            .map_err(engine_error)?;
        let mut keys = Vec::new();
        for line in out.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let row: (String, String) = serde_json::from_slice(line)
                .map_err(|e| PipelineError::Internal(format!("series row: {e}")))?;
            keys.push(if row.1.is_empty() {
                row.0
            } else {
                format!("{},{}", row.0, row.1)
            });
        }
        Ok(keys)
    }

    fn tag_values(
        &self,
        db: &str,
        measurement: &str,
        keys: &[String],
    ) -> Result<Vec<(String, String)>, PipelineError> {
        let engine = self.engine()?;
        let table = format!(
            "{}.{}",
            flush::quote_ident(db),
            flush::quote_ident(measurement)
        );
        let mut out = Vec::new();
        let mut keys: Vec<&String> = keys.iter().collect();
        keys.sort();
        keys.dedup();
        for k in keys {
            let col = flush::quote_ident(k);
            let sql =
                format!("SELECT DISTINCT {col} AS v FROM {table} WHERE {col} != '' ORDER BY v");
            let rows = match engine.query(&sql, flush::OutputFormat::JSONCompactEachRow) {
                Ok(rows) => rows,
                // Not flushed yet (no table or column): no values to show.
                Err(e)
                    if e.engine_message().is_some_and(|m| {
                        m.contains("UNKNOWN_TABLE")
                            || m.contains("UNKNOWN_IDENTIFIER")
                            || m.contains("UNKNOWN_DATABASE")
                    }) =>
                {
                    continue
                }
                Err(e) => return Err(engine_error(e)),
            };
            for line in rows.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                let (v,): (String,) = serde_json::from_slice(line)
                    .map_err(|e| PipelineError::Internal(format!("tag value row: {e}")))?;
                out.push((k.clone(), v));
            }
        }
        Ok(out)
    }

    fn sql(&self, sql: &str, format: SqlFormat) -> Result<Vec<u8>, PipelineError> {
        let f = match format {
            SqlFormat::Json => flush::OutputFormat::JSON,
            SqlFormat::JsonEachRow => flush::OutputFormat::JSONEachRow,
            SqlFormat::Csv => flush::OutputFormat::CSVWithNames,
            SqlFormat::Arrow => flush::OutputFormat::ArrowStream,
        };
        self.engine()?.query(sql, f).map_err(engine_error)
    }

    fn engine_stats(&self) -> Option<EngineStats> {
        let engine = self.engine().ok()?;
        let text = |sql: &str| engine.query_text(sql).ok();
        let mut stats = EngineStats::default();
        let parts = text(
            "SELECT database, table, count() FROM system.parts WHERE active \
             AND database NOT IN ('system', 'information_schema', 'INFORMATION_SCHEMA') \
             GROUP BY database, table ORDER BY database",
        )?;
        for line in parts.lines() {
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

    fn series_cardinality(&self) -> Vec<(String, u64)> {
        self.databases
            .read()
            .iter()
            .map(|db| (db.clone(), self.catalog.series_count(db)))
            .collect()
    }

    fn stats(&self) -> PipelineStats {
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
        PipelineStats {
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
        }
    }

    fn shutdown(&self) -> Result<(), PipelineError> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        // The WAL commits everything queued and stops; its writer's exit
        // disconnects the flusher's channel, and the flusher drains to the engine.
        self.wal.shutdown();
        if let Some(f) = self.flusher.lock().take() {
            f.join();
        }
        let s = self.wal.stats();
        if s.flushed_seq < s.last_seq {
            tracing::warn!(
                flushed = s.flushed_seq,
                last = s.last_seq,
                "entries remain unflushed; they replay from the WAL on the next start"
            );
        }
        if let Some(engine) = self.engine.write().take() {
            // Everything acknowledged is in the WAL (and flushed, unless warned
            // above): an engine that fails to close loses nothing, so say so
            // and still exit cleanly.
            if let Err(e) = engine.shutdown() {
                tracing::warn!("closing the chDB engine reported: {e}");
            }
        }
        Ok(())
    }
}

/// Measurements, tag keys and field types per database, from catalog records.
#[derive(Debug, Default)]
struct SchemaIndex {
    dbs: BTreeMap<String, BTreeMap<String, MeasurementEntry>>,
}

#[derive(Debug, Default)]
struct MeasurementEntry {
    tags: BTreeSet<String>,
    fields: BTreeMap<String, FieldType>,
}

fn split_lp(mut b: &[u8], n: usize) -> Option<Vec<String>> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let len = u32::from_be_bytes(b.get(..4)?.try_into().ok()?) as usize;
        out.push(String::from_utf8_lossy(b.get(4..4 + len)?).into_owned());
        b = &b[4 + len..];
    }
    Some(out)
}

impl SchemaIndex {
    fn is_schema_record(key: &[u8]) -> bool {
        key.starts_with(ingest::catalog::RECORD_PREFIX)
            && matches!(
                key.get(ingest::catalog::RECORD_PREFIX.len()),
                Some(b'M' | b'F' | b'T')
            )
    }

    /// Applies one catalog record (`ic1` M/F/T; others are ignored).
    fn apply(&mut self, key: &[u8], value: &[u8]) {
        if !Self::is_schema_record(key) {
            return;
        }
        let p = ingest::catalog::RECORD_PREFIX.len();
        let kind = key[p];
        let body = &key[p + 1..];
        match kind {
            b'M' => {
                if let Some(parts) = split_lp(body, 2) {
                    self.dbs
                        .entry(parts[0].clone())
                        .or_default()
                        .entry(parts[1].clone())
                        .or_default();
                }
            }
            b'T' => {
                if let Some(parts) = split_lp(body, 3) {
                    self.dbs
                        .entry(parts[0].clone())
                        .or_default()
                        .entry(parts[1].clone())
                        .or_default()
                        .tags
                        .insert(parts[2].clone());
                }
            }
            b'F' => {
                let ty = value
                    .first()
                    .and_then(|b| ingest::FieldType::from_u8(*b))
                    .map(|t| match t {
                        ingest::FieldType::Float => FieldType::Float,
                        ingest::FieldType::Integer => FieldType::Integer,
                        ingest::FieldType::UInteger => FieldType::Unsigned,
                        ingest::FieldType::String => FieldType::String,
                        ingest::FieldType::Boolean => FieldType::Boolean,
                    });
                if let (Some(parts), Some(ty)) = (split_lp(body, 3), ty) {
                    self.dbs
                        .entry(parts[0].clone())
                        .or_default()
                        .entry(parts[1].clone())
                        .or_default()
                        .fields
                        .insert(parts[2].clone(), ty);
                }
            }
            _ => {}
        }
    }

    fn retain(&mut self, dbs: &BTreeSet<String>) {
        self.dbs.retain(|d, _| dbs.contains(d));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(kind: u8, parts: &[&str]) -> Vec<u8> {
        let mut k = ingest::catalog::RECORD_PREFIX.to_vec();
        k.push(kind);
        for p in parts {
            k.extend_from_slice(&(p.len() as u32).to_be_bytes());
            k.extend_from_slice(p.as_bytes());
        }
        k
    }

    #[test]
    fn schema_index_reads_catalog_records() {
        let mut s = SchemaIndex::default();
        s.apply(&key(b'M', &["db", "cpu"]), b"");
        s.apply(&key(b'T', &["db", "cpu", "host"]), b"");
        s.apply(
            &key(b'F', &["db", "cpu", "usage"]),
            &[ingest::FieldType::Float as u8],
        );
        s.apply(
            &key(b'F', &["db", "cpu", "n"]),
            &[ingest::FieldType::UInteger as u8],
        );
        s.apply(&key(b'F', &["db", "cpu", "bad"]), &[99]);
        s.apply(&key(b'V', &["db", "cpu", "host", "a"]), b"");
        s.apply(&key(b'M', &["other", "mem"]), b"");
        s.apply(b"srv1Ddb", b"1");
        s.apply(&key(b'T', &["db", "truncated"])[..10], b"");
        let cpu = &s.dbs["db"]["cpu"];
        assert_eq!(cpu.tags.iter().collect::<Vec<_>>(), vec!["host"]);
        assert_eq!(
            cpu.fields
                .iter()
                .map(|(k, t)| (k.as_str(), *t))
                .collect::<Vec<_>>(),
            vec![("n", FieldType::Unsigned), ("usage", FieldType::Float)]
        );
        s.retain(&BTreeSet::from(["db".to_string()]));
        assert!(!s.dbs.contains_key("other"));
    }

    #[test]
    fn database_records_round_trip_and_read_old_ones() {
        assert_eq!(db_record(0), b"1");
        assert_eq!(db_record(7200), b"1;retention=7200");
        for secs in [0, 3600, u64::MAX] {
            assert_eq!(parse_db_record(&db_record(secs)), Some(secs));
        }
        assert_eq!(parse_db_record(b"1"), Some(0), "written by older versions");
        assert_eq!(parse_db_record(b"0"), None);
        assert_eq!(parse_db_record(b""), None);
        assert_eq!(
            parse_db_record(b"1;retention=x"),
            Some(0),
            "keep, never delete"
        );
    }
}
