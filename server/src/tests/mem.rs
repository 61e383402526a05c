//! An in-memory [`Store`] for the HTTP layer's unit tests: lines are
//! `measurement,tag=v field=1`-ish; a line starting with `!` is invalid and
//! one starting with `@` breaks a limit.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use storage::{BoxFuture, Prepared, Rejection, StorageError, StorageStats, Store, WriteRequest};

#[derive(Default)]
pub(crate) struct MemStore {
    pub(crate) dbs: Mutex<BTreeMap<String, Vec<String>>>,
    pub(crate) stats: Mutex<StorageStats>,
    pub(crate) queue_full: AtomicBool,
    pub(crate) commit_delay_ms: std::sync::atomic::AtomicU64,
}

impl MemStore {
    pub(crate) fn with_db(db: &str) -> MemStore {
        let p = MemStore::default();
        p.dbs.lock().insert(db.to_string(), Vec::new());
        p
    }
    pub(crate) fn lines(&self, db: &str) -> Vec<String> {
        self.dbs.lock().get(db).cloned().unwrap_or_default()
    }
}

pub(crate) struct Pending {
    db: String,
    lines: Vec<String>,
}

impl Store for MemStore {
    type Write = Pending;

    fn prepare(&self, req: WriteRequest<'_>) -> Result<Prepared<Pending>, StorageError> {
        let text = std::str::from_utf8(req.body).map_err(|_| {
            StorageError::InvalidName(ingest::names::NameError {
                name: "not utf-8".into(),
                kind: ingest::names::NameErrorKind::ControlCharacter,
            })
        })?;
        let mut good = Vec::new();
        let mut errors = Vec::new();
        let mut limit = false;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            if line.starts_with('!') {
                errors.push(format!("unable to parse '{line}': invalid field format"));
            } else if line.starts_with('@') {
                limit = true;
                errors.push(format!("max series per database exceeded: {line}"));
            } else {
                good.push(line.to_string());
            }
        }
        let rejection = (!errors.is_empty()).then(|| {
            let mut message = errors.join("\n");
            if !good.is_empty() {
                message = format!("partial write: {message} dropped=0");
            }
            Rejection {
                outcome: if limit {
                    ingest::WriteOutcome::LimitExceeded
                } else {
                    ingest::WriteOutcome::Partial
                },
                message,
                lines: errors.len() as u64,
                dropped: 0,
            }
        });
        Ok(Prepared {
            points: good.len() as u64,
            payload_bytes: req.body.len() as u64,
            rejection,
            write: Pending {
                db: req.db.to_string(),
                lines: good,
            },
        })
    }

    fn commit(&self, prepared: Prepared<Pending>) -> BoxFuture<Result<(), StorageError>> {
        if self.queue_full.load(Ordering::Relaxed) {
            return Box::pin(async { Err(StorageError::QueueFull) });
        }
        let pending = prepared.write;
        self.dbs
            .lock()
            .entry(pending.db)
            .or_default()
            .extend(pending.lines);
        let delay = self.commit_delay_ms.load(Ordering::Relaxed);
        Box::pin(async move {
            tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
            Ok(())
        })
    }

    fn database_exists(&self, db: &str) -> bool {
        self.dbs.lock().contains_key(db)
    }
    fn create_database(&self, db: &str, _retention_secs: Option<u64>) -> Result<(), StorageError> {
        self.dbs.lock().entry(db.to_string()).or_default();
        Ok(())
    }
    fn drop_database(&self, db: &str) -> Result<(), StorageError> {
        self.dbs.lock().remove(db);
        Ok(())
    }
    /// Not used by the tests of this store.
    fn drop_measurement(&self, _db: &str, _measurement: &str) -> Result<bool, StorageError> {
        Err(StorageError::ShuttingDown)
    }
    fn databases(&self) -> Vec<String> {
        self.dbs.lock().keys().cloned().collect()
    }
    fn schema(&self, db: &str) -> Result<Vec<ingest::MeasurementSchema>, StorageError> {
        let dbs = self.dbs.lock();
        let lines = dbs
            .get(db)
            .ok_or_else(|| StorageError::DatabaseNotFound { db: db.into() })?;
        let mut out: BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)> = BTreeMap::new();
        for l in lines {
            let (key, fields) = l.split_once(' ').unwrap_or((l, ""));
            let mut parts = key.split(',');
            let m = out
                .entry(parts.next().unwrap_or("").to_string())
                .or_default();
            for t in parts {
                m.0.insert(t.split('=').next().unwrap_or("").to_string());
            }
            for f in fields
                .split(' ')
                .next()
                .unwrap_or("")
                .split(',')
                .filter(|f| !f.is_empty())
            {
                m.1.insert(f.split('=').next().unwrap_or("").to_string());
            }
        }
        Ok(out
            .into_iter()
            .map(|(name, (tags, fields))| ingest::MeasurementSchema {
                name,
                tag_keys: tags.into_iter().collect(),
                fields: fields
                    .into_iter()
                    .map(|f| (f, ingest::FieldType::Float))
                    .collect(),
            })
            .collect())
    }
    fn series(&self, db: &str, measurement: Option<&str>) -> Result<Vec<String>, StorageError> {
        let dbs = self.dbs.lock();
        let lines = dbs
            .get(db)
            .ok_or_else(|| StorageError::DatabaseNotFound { db: db.into() })?;
        let set: BTreeSet<String> = lines
            .iter()
            .map(|l| l.split(' ').next().unwrap_or("").to_string())
            .filter(|k| measurement.is_none_or(|m| k.split(',').next() == Some(m)))
            .collect();
        Ok(set.into_iter().collect())
    }
    fn tag_values(
        &self,
        db: &str,
        measurement: &str,
        keys: &[String],
    ) -> Result<Vec<(String, String)>, StorageError> {
        let mut out = BTreeSet::new();
        for l in self.lines(db) {
            let key = l.split(' ').next().unwrap_or("");
            let mut parts = key.split(',');
            if parts.next() != Some(measurement) {
                continue;
            }
            for t in parts {
                if let Some((k, v)) = t.split_once('=') {
                    if keys.iter().any(|w| w == k) && !v.is_empty() {
                        out.insert((k.to_string(), v.to_string()));
                    }
                }
            }
        }
        Ok(out.into_iter().collect())
    }
    fn sql(
        &self,
        req: storage::SqlRequest<'_>,
        sink: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<storage::SqlSummary, storage::SqlError> {
        // A double: the real refusals are the engine's (engine::sandbox).
        if req.sql.contains("syntax error") {
            return Err(storage::SqlError::Invalid(
                "Syntax error: failed at position 1".into(),
            ));
        }
        let select = req
            .sql
            .trim_start()
            .to_ascii_uppercase()
            .starts_with("SELECT");
        if matches!(req.access, storage::SqlAccess::Read(_)) && !select {
            return Err(storage::SqlError::Forbidden("read-only user".into()));
        }
        let out = format!(
            "{{\"sql\":{}}}\n",
            serde_json::Value::String(req.sql.to_string())
        );
        sink(out.as_bytes());
        Ok(storage::SqlSummary {
            chunks: 1,
            bytes: out.len() as u64,
        })
    }
    fn influxql(
        &self,
        req: storage::InfluxqlRequest<'_>,
    ) -> Result<storage::StatementResult, storage::InfluxqlError> {
        // A double: the real planning and engine reads are storage's (tested there
        // and over a real socket in tests/http/influxql.rs).
        match req.db {
            Some(db) if self.dbs.lock().contains_key(db) => Ok(Default::default()),
            Some(db) => Err(storage::InfluxqlError::DatabaseNotFound { db: db.into() }),
            None => Err(storage::InfluxqlError::DatabaseRequired),
        }
    }
    fn retention_secs(&self, _db: &str) -> u64 {
        0
    }
    fn set_retention(&self, _db: &str, _retention_secs: u64) -> Result<(), StorageError> {
        Ok(())
    }
    fn create_policy_database(&self, db: &str, _retention_secs: u64) -> Result<(), StorageError> {
        self.create_database(db, None)
    }
    fn series_cardinality(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
    fn engine_stats(&self) -> Option<storage::EngineStats> {
        None
    }
    fn stats(&self) -> StorageStats {
        self.stats.lock().clone()
    }
    fn shutdown(&self) -> Result<(), StorageError> {
        Ok(())
    }
}
