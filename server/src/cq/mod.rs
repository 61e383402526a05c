//! Continuous queries: their definitions, kept durably in
//! `<data_dir>/continuous_queries.json` with each one's last run, and the loop that runs
//! them on InfluxDB 1.x's schedule ([`schedule`], [`run`]).
//!
//! A run is a `SELECT … INTO` over its time range, executed as any such statement
//! (`query::run_continuous`: the write path, the WAL), then its last-run time is saved (or,
//! for a run spread over several passes, how far it got). A crash between the two reruns
//! what was computed since on start; the same answer written again leaves the same points
//! (point identity), so an interval is neither lost nor doubled. A run
//! that fails (the engine busy, the target gone, `KILL QUERY`) is retried from the same last
//! run after a pause (at most a minute), so its range is caught up then; a query InfluxDB
//! would not run (raw, without a function) is skipped with a log line, as 1.x does.
//!
//! Nothing a query's creator writes can take the server's memory or CPU (a non-admin may
//! create one): `CREATE` refuses a query one run of which computes more windows than
//! `[sql] max_result_rows` (InfluxDB's `max-select-buckets` error, [`bucket_limit`]); a run
//! executes as statements of at most [`MAX_WINDOWS`] windows, cut lazily, at most
//! [`run::PASS_STATEMENTS`] of them per query per pass, the rest (a long pause caught up) on
//! the next passes from the progress kept in the file ([`StoredCq::progress_ns`]); `DROP`
//! (of the query or its database) cancels its statement in flight and the run stops before
//! its next statement. Its statements are listed by `SHOW QUERIES` and `KILL QUERY` ends one.

pub mod run;
pub mod schedule;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use influxql::ast::{ContinuousQuery, CqStatement, Dimension, SelectStatement, Source, Statement};
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};
use storage::SqlCancel;

pub(crate) use run::register_metrics;
pub use run::{run_due, spawn};

/// File format version.
const VERSION: u32 = 1;

/// Windows computed by one statement of a run (a run over more is cut into several).
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
    /// A run worked off over several passes (a long pause caught up): the end of what its
    /// passes computed so far, ns; the next pass resumes there. `None`: no run in progress.
    /// Kept in the file so that a restart resumes too; files written before it existed load
    /// without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_ns: Option<i64>,
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
    /// Per query (database, name) running now: its statements' cancel, set by `DROP`.
    in_flight: Mutex<HashMap<(String, String), SqlCancel>>,
}

impl Default for ContinuousQueries {
    fn default() -> ContinuousQueries {
        ContinuousQueries {
            path: None,
            current: RwLock::default(),
            writer: Mutex::new(()),
            backoff: Mutex::default(),
            in_flight: Mutex::default(),
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
                progress_ns: None,
            });
            Ok(())
        })
    }

    /// `DROP CONTINUOUS QUERY` (none of that name is no error, as in InfluxDB 1.6): a run in
    /// progress stops (its statement is cancelled).
    pub fn drop_query(&self, database: &str, name: &str) -> Result<(), CqError> {
        self.forget(|db, n| db == database && n == name)
    }

    /// Forgets every query of `database` (`DROP DATABASE`), stopping their runs.
    pub fn drop_database(&self, database: &str) -> Result<(), CqError> {
        self.forget(|db, _| db == database)
    }

    /// Removes the queries `dropped(database, name)` names and cancels their runs.
    fn forget(&self, dropped: impl Fn(&str, &str) -> bool) -> Result<(), CqError> {
        if !self
            .snapshot()
            .iter()
            .any(|q| dropped(&q.database, &q.name))
        {
            return Ok(());
        }
        self.change(|all| {
            all.retain(|q| !dropped(&q.database, &q.name));
            Ok(())
        })?;
        // After the change: a run that registered its cancel before it is cancelled here,
        // one that registers after it finds its query gone at its next check ([`Self::holds`]).
        for ((database, name), cancel) in self.in_flight.lock().iter() {
            if dropped(database, name) {
                cancel.cancel();
            }
        }
        Ok(())
    }

    /// Whether `stored` is still defined, with the same statement (not dropped meanwhile).
    fn holds(&self, stored: &StoredCq) -> bool {
        self.snapshot().iter().any(|q| {
            q.database == stored.database && q.name == stored.name && q.query == stored.query
        })
    }

    /// Saves a run as done at `ns` (its progress forgotten).
    fn set_last_run(
        &self,
        database: &str,
        name: &str,
        query: &str,
        ns: i64,
    ) -> Result<(), CqError> {
        self.update(database, name, query, |q| {
            q.last_run_ns = Some(ns);
            q.progress_ns = None;
        })
    }

    /// Saves how far a pending run got.
    fn set_progress(
        &self,
        database: &str,
        name: &str,
        query: &str,
        ns: i64,
    ) -> Result<(), CqError> {
        self.update(database, name, query, |q| q.progress_ns = Some(ns))
    }

    fn update(
        &self,
        database: &str,
        name: &str,
        query: &str,
        f: impl FnOnce(&mut StoredCq),
    ) -> Result<(), CqError> {
        self.change(|all| {
            // Unless it was dropped or replaced meanwhile.
            if let Some(q) = all
                .iter_mut()
                .find(|q| q.database == database && q.name == name && q.query == query)
            {
                f(q);
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

/// The error `CREATE` answers (and a run of a query stored before the check existed logs)
/// when one run of `cq` would compute more windows than `limit` (`[sql] max_result_rows`,
/// the server's bound on a statement's rows, so the admin's setting bounds everyone's
/// queries): InfluxDB's `max-select-buckets` text, as a `SELECT` over as many gets it.
pub fn bucket_limit(cq: &ContinuousQuery, limit: u64) -> Option<String> {
    let timing = timing(&cq.select, cq)?;
    let tick = i64::try_from(TICK.as_nanos()).unwrap_or(i64::MAX);
    let buckets = schedule::buckets_per_run(timing, tick);
    (buckets > limit).then(|| {
        format!("max-select-buckets limit exceeded: ({buckets}/{limit}) ([sql] max_result_rows)")
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn cq(text: &str) -> ContinuousQuery {
        parse(text).expect("parses")
    }

    #[test]
    fn a_file_without_progress_loads_and_progress_is_kept_until_the_run_is_done() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("continuous_queries.json");
        let query = "CREATE CONTINUOUS QUERY c ON d BEGIN SELECT count(v) INTO d.autogen.o \
                     FROM d.autogen.m GROUP BY time(1m) END";
        let old = serde_json::json!({"version": 1, "queries": [
            {"database": "d", "name": "c", "query": query, "last_run_ns": 60}
        ]});
        std::fs::write(&path, old.to_string()).unwrap();
        let cqs = ContinuousQueries::open(&path).unwrap();
        assert_eq!(cqs.snapshot()[0].progress_ns, None);
        cqs.set_progress("d", "c", query, 120).unwrap();
        let reopened = ContinuousQueries::open(&path).unwrap();
        assert_eq!(reopened.snapshot()[0].progress_ns, Some(120));
        assert_eq!(reopened.snapshot()[0].last_run_ns, Some(60));
        reopened.set_last_run("d", "c", query, 180).unwrap();
        let done = ContinuousQueries::open(&path).unwrap();
        assert_eq!(done.snapshot()[0].progress_ns, None);
        assert_eq!(done.snapshot()[0].last_run_ns, Some(180));
        assert!(!std::fs::read_to_string(&path)
            .unwrap()
            .contains("progress_ns"));
    }

    #[test]
    fn drop_cancels_the_statement_of_a_run_in_flight() {
        let cqs = ContinuousQueries::default();
        for (db, name) in [("d", "a"), ("d", "b"), ("e", "c")] {
            cqs.create(&cq(&format!(
                "CREATE CONTINUOUS QUERY {name} ON {db} BEGIN SELECT count(v) INTO o FROM m \
                 GROUP BY time(1m) END"
            )))
            .unwrap();
        }
        let stored: Vec<StoredCq> = cqs.snapshot().to_vec();
        let cancels: Vec<SqlCancel> = stored.iter().map(|_| SqlCancel::new()).collect();
        for (q, c) in stored.iter().zip(&cancels) {
            cqs.in_flight
                .lock()
                .insert((q.database.clone(), q.name.clone()), c.clone());
        }
        cqs.drop_query("d", "a").unwrap();
        assert!(cancels[0].is_cancelled() && !cqs.holds(&stored[0]));
        assert!(!cancels[1].is_cancelled() && cqs.holds(&stored[1]));
        cqs.drop_database("e").unwrap();
        assert!(cancels[2].is_cancelled() && !cqs.holds(&stored[2]));
        assert!(!cancels[1].is_cancelled());
    }

    #[test]
    fn a_query_over_more_windows_a_run_than_the_limit_is_refused() {
        let ns = cq(
            "CREATE CONTINUOUS QUERY c ON d RESAMPLE EVERY 1s FOR 2m BEGIN \
                     SELECT count(v) INTO o FROM m GROUP BY time(1ns) END",
        );
        assert_eq!(
            bucket_limit(&ns, 1_000_000).as_deref(),
            Some(
                "max-select-buckets limit exceeded: (120000000001/1000000) \
                 ([sql] max_result_rows)"
            )
        );
        let minute = cq("CREATE CONTINUOUS QUERY c ON d RESAMPLE FOR 1h BEGIN \
                         SELECT count(v) INTO o FROM m GROUP BY time(1m) END");
        assert_eq!(bucket_limit(&minute, 61), None);
        assert!(bucket_limit(&minute, 60).is_some());
    }
}
