//! The loop that runs the continuous queries: every [`TICK`](super::TICK), one pass over
//! them in creation order, each due query ([`schedule::due`]) run for at most
//! [`PASS_STATEMENTS`] statements of at most [`MAX_WINDOWS`] windows each.
//!
//! Why bounded: a query's run is as long as the time since its last run, and a server down
//! for a week (or a stored last run far back) would otherwise run one query's whole catch-up
//! in one go, every other query waiting and `DROP` unable to stop it. So a run longer than a
//! pass keeps its last run and saves how far it got ([`StoredCq::progress_ns`]): the next
//! passes resume there, in time order, each window once (a crash reruns at most the pass it
//! interrupted: the same answer written again leaves the same points), and the run is done,
//! its last run saved, when a pass reaches the range's end. Every query gets its share of
//! every pass, so none starves. A query whose windows accrue faster than a pass computes
//! them (windows under ~20 µs: the bucket limit allows down to 2 µs by default) falls
//! behind, still at most its share of each pass.
//!
//! Each statement is listed by `SHOW QUERIES` (as no user: admins see it) under a cancel
//! that `KILL QUERY` and `DROP` set: killed, the run counts as failed and is retried after
//! the usual pause from where it got (an admin who wants it gone drops it); dropped, it ends
//! before its next statement, its statement in flight cancelled.

use std::time::{Duration, Instant};

use influxql::ast::{ContinuousQuery, Expr, SelectStatement};
use storage::SqlCancel;

use super::schedule::{self, After, Timing};
use super::{parse, timing, ContinuousQueries, StoredCq, MAX_WINDOWS, TICK};
use crate::error::ApiError;
use crate::{AppState, Store};

/// Statements one query runs per pass at most: 50 statements of 1,000 windows keep up with
/// windows down to 20 µs at one pass a second, and bound the time the other queries wait.
pub const PASS_STATEMENTS: usize = 50;

/// The pause before a query over the bucket limit is looked at again (its warning once a
/// minute, not every second).
const REFUSED_PAUSE: Duration = Duration::from_secs(60);

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

/// One pass: every query that is due now, each for at most [`PASS_STATEMENTS`] statements.
pub fn run_due<S: Store>(state: &AppState<S>) {
    let limit = state.config.sql.max_result_rows;
    for stored in state.cqs.snapshot().iter() {
        run_one(state, stored, limit);
    }
}

/// How a query's pass ended.
enum Ended {
    /// Every statement it ran succeeded.
    Ran,
    /// The query was dropped meanwhile: nothing to keep.
    Dropped,
    /// A statement failed or was killed: retried after a pause.
    Failed(ApiError),
}

fn run_one<S: Store>(state: &AppState<S>, stored: &StoredCq, limit: u64) {
    let cqs = &state.cqs;
    let key = (stored.database.clone(), stored.name.clone());
    if cqs
        .backoff
        .lock()
        .get(&key)
        .is_some_and(|t| *t > Instant::now())
    {
        return;
    }
    let Some(cq) = parse(&stored.query) else {
        return;
    };
    let Some(timing) = timing(&cq.select, &cq) else {
        return;
    };
    // Stored before `CREATE` checked this: not run (nothing of its range is cut or built).
    if let Some(e) = super::bucket_limit(&cq, limit) {
        metrics::counter!("chingest_continuous_query_runs_total", "outcome" => "error")
            .increment(1);
        tracing::warn!(database = %stored.database, name = %stored.name, "continuous query not run, looked at again in {REFUSED_PAUSE:?}: {e}");
        cqs.backoff
            .lock()
            .insert(key, Instant::now() + REFUSED_PAUSE);
        return;
    }
    let now = now_ns();
    let Some(run) = schedule::due(timing, stored.last_run_ns, now) else {
        return;
    };
    let (ended, after, written) = match run.range {
        Some(range) if aggregates(&cq.select) => {
            let (ended, reached, written) = pass(state, stored, &cq, timing, range, now);
            (
                ended,
                schedule::after(run, stored.progress_ns, reached),
                written,
            )
        }
        Some(_) => {
            tracing::warn!(database = %stored.database, name = %stored.name, "continuous queries must be aggregate queries: not run");
            (Ended::Ran, After::Done(run.last_run), 0)
        }
        None => (Ended::Ran, After::Done(run.last_run), 0),
    };
    if matches!(ended, Ended::Dropped) {
        tracing::debug!(database = %stored.database, name = %stored.name, "continuous query dropped while it ran");
        cqs.backoff.lock().remove(&key);
        return;
    }
    let saved = match after {
        After::Done(last_run) => {
            metrics::counter!("chingest_continuous_query_runs_total", "outcome" => "ok")
                .increment(1);
            tracing::debug!(database = %stored.database, name = %stored.name, written, "continuous query ran");
            cqs.set_last_run(&stored.database, &stored.name, &stored.query, last_run)
        }
        After::Pending(Some(progress)) if Some(progress) != stored.progress_ns => {
            tracing::debug!(database = %stored.database, name = %stored.name, written, progress, "continuous query caught up in part");
            cqs.set_progress(&stored.database, &stored.name, &stored.query, progress)
        }
        After::Pending(_) => Ok(()),
    };
    if let Err(e) = saved {
        tracing::error!("{e}");
    }
    match ended {
        Ended::Failed(e) => {
            metrics::counter!("chingest_continuous_query_runs_total", "outcome" => "error")
                .increment(1);
            let every = timing.every.unwrap_or(timing.interval);
            let pause = Duration::from_nanos(u64::try_from(every).unwrap_or(0))
                .min(Duration::from_secs(60));
            tracing::warn!(database = %stored.database, name = %stored.name, "continuous query failed, retried in {pause:?}: {e}");
            cqs.backoff.lock().insert(key, Instant::now() + pause);
        }
        Ended::Ran | Ended::Dropped => {
            cqs.backoff.lock().remove(&key);
        }
    }
}

/// Runs one pass of a due run over `range`: the statements, how it ended, how far it got
/// (the end of its last statement that completed) and the points written.
fn pass<S: Store>(
    state: &AppState<S>,
    stored: &StoredCq,
    cq: &ContinuousQuery,
    timing: Timing,
    range: (i64, i64),
    now: i64,
) -> (Ended, Option<i64>, u64) {
    let cqs = &state.cqs;
    let cancel = SqlCancel::new();
    let _in_flight = InFlight::new(cqs, stored, cancel.clone());
    let (mut reached, mut written) = (None, 0);
    let slices = schedule::pass(
        range,
        stored.progress_ns,
        timing.interval,
        MAX_WINDOWS,
        PASS_STATEMENTS,
    );
    for (start, end) in slices {
        // Dropped since the pass began (its cancel may have been set before it was listed).
        if !cqs.holds(stored) {
            return (Ended::Dropped, reached, written);
        }
        let select = in_range(&cq.select, start, end);
        let listed = state.queries.register(
            std::sync::Arc::new([influxql::ast::Statement::Select(Box::new(select.clone()))]),
            &stored.database,
            None,
            cancel.clone(),
        );
        let outcome = crate::query::run_continuous(state, &stored.database, &select, now, &cancel);
        let killed = listed.killed();
        drop(listed);
        // A cancel not from KILL QUERY is DROP's (of the query or its database).
        if !cqs.holds(stored) || (cancel.is_cancelled() && !killed) {
            return (Ended::Dropped, reached, written);
        }
        match outcome {
            // Whatever the statement came to (its answer is written again on the retry).
            _ if killed => {
                let e = ApiError::Query("query interrupted".into());
                return (Ended::Failed(e), reached, written);
            }
            Ok(n) => {
                written += n;
                reached = Some(end);
            }
            Err(e) => return (Ended::Failed(e), reached, written),
        }
    }
    (Ended::Ran, reached, written)
}

/// A query's cancel, where `DROP` finds it, while its pass runs.
struct InFlight<'a> {
    cqs: &'a ContinuousQueries,
    key: (String, String),
}

impl<'a> InFlight<'a> {
    fn new(cqs: &'a ContinuousQueries, stored: &StoredCq, cancel: SqlCancel) -> InFlight<'a> {
        let key = (stored.database.clone(), stored.name.clone());
        cqs.in_flight.lock().insert(key.clone(), cancel);
        InFlight { cqs, key }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.cqs.in_flight.lock().remove(&self.key);
    }
}
