//! InfluxQL `SELECT` over the engine: planned against the catalog, run as
//! engine SQL in the SQL sandbox with the caller's access, answered as
//! [`series::StatementResult`].
//!
//! Brief overview:
//! - [`schema`]: `FROM` resolved to a database and measurements.
//! - `range`: `WHERE` split into the time range and the rest.
//! - `expr`, `agg`: expressions, aggregates and selectors as engine SQL.
//! - `plan`: InfluxDB's statement checks and one plan per measurement.
//! - `sql`: a plan as one statement, always over merged points (InfluxDB's
//!   point identity: a point written twice is one point, last write wins
//!   field by field).
//! - `rows`, `exec`: the engine's answer read back and cut into series;
//!   [`fill`] and [`transform`] do what the engine does not.
//! - [`error`]: [`InfluxqlError`], mapped to HTTP by the server.

mod agg;
mod cluster;
mod cluster_last_point;
mod cluster_raw;
mod delete;
pub mod error;
mod exec;
mod expr;
mod field_call;
pub mod fill;
mod hot;
pub mod inline;
mod integral;
mod last_point;
mod last_rows;
mod one_row;
mod packed;
mod plan;
mod point_condition;
mod post;
mod pushdown;
mod range;
pub mod read_path;
mod reduce;
pub(crate) mod refill;
mod row_order;
mod rows;
pub mod schema;
pub mod selector;
pub mod series;
mod series_prune;
mod show;
mod shown;
mod sql;
pub mod stages;
mod subquery;
mod top_candidates;
pub mod transform;
mod unflushed;
pub mod zone;

pub use error::InfluxqlError;
pub use schema::RETENTION_POLICY;
pub use series::{Series, StatementResult, Value};

use engine::{SqlAccess, SqlCancel};
use influxql::ast::Statement;

/// One InfluxQL statement to answer.
#[derive(Debug, Clone, Copy)]
pub struct InfluxqlRequest<'a> {
    /// The `db` parameter (a qualified name in `FROM` takes precedence).
    pub db: Option<&'a str>,
    /// The statement: a `SELECT`, or a `SHOW` with a `WHERE` clause (the
    /// other `SHOW` statements are answered from the catalog).
    pub statement: &'a Statement,
    /// Who asks: the engine reads only what this caller may read.
    pub access: &'a SqlAccess,
    /// Set when the client goes away.
    pub cancel: &'a SqlCancel,
    /// `now()`, ns since the epoch: one instant for the whole request.
    pub now_ns: i64,
    /// The caller renders JSON and takes a hot raw answer's rows packed
    /// (`Series::packed`); else every row is plain. Statements run inside
    /// another (a subquery, `integral()`) always get plain rows.
    pub packed: bool,
}

/// Registers InfluxQL's metrics, so they are exported before the first read.
pub(crate) fn register_metrics() {
    unflushed::register_metrics();
    last_point::register_metrics();
    pushdown::register_metrics();
    read_path::register_metrics();
}

/// `OFFSET`/`LIMIT` over rows, points or series (`LIMIT 0` is none).
pub(crate) fn page<T>(rows: Vec<T>, limit: Option<u64>, offset: Option<u64>) -> Vec<T> {
    let skip = usize::try_from(offset.unwrap_or(0)).unwrap_or(usize::MAX);
    let take = limit
        .filter(|&l| l > 0)
        .map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    rows.into_iter().skip(skip).take(take).collect()
}
