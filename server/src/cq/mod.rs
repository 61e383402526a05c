//! Continuous queries: their definitions, kept durably in
//! `<data_dir>/continuous_queries.json` with each one's last run, and the loop that runs
//! them on InfluxDB 1.x's schedule ([`schedule`]).
//!
//! A run is a `SELECT … INTO` over its time range, executed as any such statement
//! (`query::run_continuous`: the write path, the WAL), then its last-run time is saved. A
//! crash between the two reruns the range on start; the same answer written again leaves
//! the same points (point identity), so an interval is neither lost nor doubled. A run
//! that fails (the engine busy, the target gone) is retried from the same last run after a
//! pause (at most a minute), so its range is caught up then; a query InfluxDB would not
//! run (raw, without a function) is skipped with a log line, as 1.x does. Runs execute one
//! at a time, each bounded like any statement: a long pause is caught up in slices of
//! [`MAX_WINDOWS`] windows.

pub mod schedule;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use influxql::ast::{
    ContinuousQuery, CqStatement, Dimension, Expr, SelectStatement, Source, Statement,
};
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};

use crate::{AppState, Store};

/// File format version.
const VERSION: u32 = 1;

/// Windows computed by one statement of a catch-up.
pub const MAX_WINDOWS: i64 = 1_000;

/// How often the loop looks for due queries (InfluxDB's default `run-interval`).
const TICK: Duration = Duration::from_secs(1);

/// One continuous query as stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StoredCq {
    /// Its database.
    pub database: String,
    /// Its name.
    pub name: String,
    /// The statement, as `SHOW CONTINUOUS QUERIES` prints it (sources and target qualified).
    pub query: String,
    /// The last run's time, ns (`None`: never ran).
    pub last_run_ns: Option<i64>,
}

#[derive(Debug, Serialize, Deserialize)]
struct CqFile {
    version: u32,
    queries: Vec<StoredCq>,
}

/// Why the file could not be read or written, or a statement was refused.
#[derive(Debug, thiserror::Error)]
pub enum CqError {
    /// `CREATE` of an existing name with another definition.
    #[error("continuous query already exists")]
    Exists,
    /// The file could not be read or written.
    #[error("continuous queries file {path}: {why}")]
    File {
        /// The file.
        path: String,
        /// Why.
        why: String,
    },
}

/// The continuous queries, in creation order.
#[derive(Debug)]
pub struct ContinuousQueries {
    /// `None`: in memory only (handler tests).
    path: Option<PathBuf>,
    current: RwLock<Arc<Vec<StoredCq>>>,
    writer: Mutex<()>,
    /// Per query (database, name): not to be retried before this instant (a failed run).
    backoff: Mutex<HashMap<(String, String), std::time::Instant>>,
}

impl Default for ContinuousQueries {
    fn default() -> ContinuousQueries {
        ContinuousQueries {
            path: None,
            current: RwLock::default(),
            writer: Mutex::new(()),
            backoff: Mutex::default(),
        }
    }
}

impl ContinuousQueries {
    /// Loads `path` (no file: none yet). Every stored statement must parse.
    pub fn open(path: &Path) -> Result<ContinuousQueries, CqError> {
        let bad = |why: String| CqError::File {
            path: path.display().to_string(),
            why,
        };
        let queries = match std::fs::read(path) {
            Ok(bytes) => {
                let file: CqFile =
                    serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
                if file.version != VERSION {
                    return Err(bad(format!("unknown version {}", file.version)));
                }
                for q in &file.queries {
                    parse(&q.query).ok_or_else(|| bad(format!("{:?} does not parse", q.name)))?;
                }
                file.queries
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(bad(e.to_string())),
        };
        Ok(ContinuousQueries {
            path: Some(path.to_path_buf()),
            current: RwLock::new(Arc::new(queries)),
            ..ContinuousQueries::default()
        })
    }

    /// The queries now.
    pub fn snapshot(&self) -> Arc<Vec<StoredCq>> {
        self.current.read().clone()
    }

    /// `CREATE CONTINUOUS QUERY` (the database exists, the caller was authorized): the
    /// same definition again is no error, as in InfluxDB 1.x.
    pub fn create(&self, cq: &ContinuousQuery) -> Result<(), CqError> {
        let query = qualified(cq).to_string();
        self.change(|all| {
            if let Some(q) = all
                .iter()
                .find(|q| q.database == cq.database && q.name == cq.name)
            {
                return if q.query == query {
                    Ok(())
                } else {
                    Err(CqError::Exists)
                };
            }
            all.push(StoredCq {
                database: cq.database.clone(),
                name: cq.name.clone(),
                query,
                last_run_ns: None,
            });
            Ok(())
        })
    }

    /// `DROP CONTINUOUS QUERY` (none of that name is no error, as in InfluxDB 1.6).
    pub fn drop_query(&self, database: &str, name: &str) -> Result<(), CqError> {
        if !self
            .snapshot()
            .iter()
            .any(|q| q.database == database && q.name == name)
        {
            return Ok(());
        }
        self.change(|all| {
            all.retain(|q| !(q.database == database && q.name == name));
            Ok(())
        })
    }

    /// Forgets every query of `database` (`DROP DATABASE`).
    pub fn drop_database(&self, database: &str) -> Result<(), CqError> {
        if !self.snapshot().iter().any(|q| q.database == database) {
            return Ok(());
        }
        self.change(|all| {
            all.retain(|q| q.database != database);
            Ok(())
        })
    }

    fn set_last_run(
        &self,
        database: &str,
        name: &str,
        query: &str,
        ns: i64,
    ) -> Result<(), CqError> {
        self.change(|all| {
            // Unless it was dropped or replaced meanwhile.
            if let Some(q) = all
                .iter_mut()
                .find(|q| q.database == database && q.name == name && q.query == query)
            {
                q.last_run_ns = Some(ns);
            }
            Ok(())
        })
    }

    fn change(
        &self,
        f: impl FnOnce(&mut Vec<StoredCq>) -> Result<(), CqError>,
    ) -> Result<(), CqError> {
        let _one_writer = self.writer.lock();
        let mut all = (*self.snapshot()).clone();
        f(&mut all)?;
        if let Some(path) = &self.path {
            let body = serde_json::to_vec_pretty(&CqFile {
                version: VERSION,
                queries: all.clone(),
            })
            .expect("continuous queries serialise");
            crate::durable::replace(path, &body).map_err(|e| CqError::File {
                path: path.display().to_string(),
                why: e.to_string(),
            })?;
        }
        *self.current.write() = Arc::new(all);
        Ok(())
    }
}

/// The stored form: top-level sources and the target name their database (the query's)
/// and retention policy (`autogen`), as InfluxDB 1.x stores and prints them.
pub fn qualified(cq: &ContinuousQuery) -> ContinuousQuery {
    let mut cq = cq.clone();
    let db = cq.database.clone();
    let fill = |database: &mut Option<String>, rp: &mut Option<String>| {
        if database.as_deref().is_none_or(str::is_empty) {
            *database = Some(db.clone());
        }
        if rp.as_deref().is_none_or(str::is_empty) {
            *rp = Some(storage::influxql::RETENTION_POLICY.to_string());
        }
    };
    let select = &mut cq.select;
    for source in &mut select.sources {
        if let Source::Measurement(m) = source {
            fill(&mut m.database, &mut m.retention_policy);
        }
    }
    if let Some(into) = &mut select.into {
        fill(&mut into.database, &mut into.retention_policy);
    }
    cq
}

fn parse(query: &str) -> Option<ContinuousQuery> {
    match influxql::parse_statement(query).ok()? {
        Statement::ContinuousQuery(CqStatement::Create(cq)) => Some(cq),
        _ => None,
    }
}

fn timing(select: &SelectStatement, cq: &ContinuousQuery) -> Option<schedule::Timing> {
    select.dimensions.iter().find_map(|d| match d {
        Dimension::Time { interval, offset } => Some(schedule::Timing {
            interval: interval.0,
            offset: offset.map_or(0, |o| o.0),
            every: cq.every_ns,
            for_: cq.for_ns,
        }),
        _ => None,
    })
}

/// Whether the `SELECT` aggregates (InfluxDB runs only those as continuous queries).
fn aggregates(select: &SelectStatement) -> bool {
    fn call(e: &Expr) -> bool {
        match e {
            Expr::Call { .. } => true,
            Expr::Binary { lhs, rhs, .. } => call(lhs) || call(rhs),
            Expr::Paren(e) => call(e),
            _ => false,
        }
    }
    select.fields.iter().any(|f| call(&f.expr))
}

/// The select restricted to `[start, end)`.
fn in_range(select: &SelectStatement, start: i64, end: i64) -> SelectStatement {
    let mut s = select.clone();
    let range = influxql::parse_expr(&format!("time >= {start} AND time < {end}"))
        .expect("a time range parses");
    s.condition = Some(match s.condition.take() {
        None => range,
        Some(c) => Expr::Binary {
            op: influxql::ast::BinaryOp::And,
            lhs: Box::new(Expr::Paren(Box::new(c))),
            rhs: Box::new(range),
        },
    });
    s
}

/// Exports the run counters before the first run.
pub(crate) fn register_metrics() {
    for outcome in ["ok", "error"] {
        metrics::counter!("chingest_continuous_query_runs_total", "outcome" => outcome)
            .increment(0);
    }
}

/// Runs the loop until the process ends.
pub fn spawn<S: Store>(state: AppState<S>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let state = state.clone();
            // One pass at a time, off the async threads (statements block).
            let _ = tokio::task::spawn_blocking(move || run_due(&state)).await;
        }
    })
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Runs every query that is due now.
pub fn run_due<S: Store>(state: &AppState<S>) {
    let cqs = &state.cqs;
    for stored in cqs.snapshot().iter() {
        let key = (stored.database.clone(), stored.name.clone());
        if cqs
            .backoff
            .lock()
            .get(&key)
            .is_some_and(|t| *t > std::time::Instant::now())
        {
            continue;
        }
        let Some(cq) = parse(&stored.query) else {
            continue;
        };
        let Some(timing) = timing(&cq.select, &cq) else {
            continue;
        };
        let now = now_ns();
        let Some(run) = schedule::due(timing, stored.last_run_ns, now) else {
            continue;
        };
        let outcome: Result<u64, crate::error::ApiError> = if !aggregates(&cq.select) {
            tracing::warn!(database = %stored.database, name = %stored.name, "continuous queries must be aggregate queries: not run");
            Ok(0)
        } else {
            run.range.map_or(Ok(0), |(start, end)| {
                let mut written = 0;
                for (s, e) in schedule::slices(start, end, timing.interval, MAX_WINDOWS) {
                    let select = in_range(&cq.select, s, e);
                    written += crate::query::run_continuous(state, &stored.database, &select, now)?;
                }
                Ok(written)
            })
        };
        match outcome {
            Ok(written) => {
                metrics::counter!("chingest_continuous_query_runs_total", "outcome" => "ok")
                    .increment(1);
                tracing::debug!(database = %stored.database, name = %stored.name, written, "continuous query ran");
                cqs.backoff.lock().remove(&key);
                if let Err(e) =
                    cqs.set_last_run(&stored.database, &stored.name, &stored.query, run.last_run)
                {
                    tracing::error!("{e}");
                }
            }
            Err(e) => {
                metrics::counter!("chingest_continuous_query_runs_total", "outcome" => "error")
                    .increment(1);
                let every = timing.every.unwrap_or(timing.interval);
                let pause = Duration::from_nanos(u64::try_from(every).unwrap_or(0))
                    .min(Duration::from_secs(60));
                tracing::warn!(database = %stored.database, name = %stored.name, "continuous query failed, retried in {pause:?}: {e}");
                cqs.backoff
                    .lock()
                    .insert(key, std::time::Instant::now() + pause);
            }
        }
    }
}

/// The answer of `SHOW CONTINUOUS QUERIES`: per database (every one, as InfluxDB lists
/// them), its queries' names and statements.
pub fn show(databases: &[String], all: &[StoredCq]) -> Vec<(String, Vec<(String, String)>)> {
    databases
        .iter()
        .map(|db| {
            let rows = all
                .iter()
                .filter(|q| &q.database == db)
                .map(|q| (q.name.clone(), q.query.clone()))
                .collect();
            (db.clone(), rows)
        })
        .collect()
}
