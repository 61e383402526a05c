//! `CREATE CONTINUOUS QUERY`, `DROP CONTINUOUS QUERY`, `SHOW CONTINUOUS QUERIES` on
//! `/query`, answered as InfluxDB 1.x does (texts checked against influxd 1.6.7); the
//! queries themselves and their runs: [`crate::cq`].

use influxql::ast::CqStatement;
use storage::influxql::{Series, StatementResult, Value};

use crate::error::ApiError;
use crate::{AppState, Store};

/// Runs one continuous-query statement (blocking: an fsync).
pub(super) fn execute<S: Store>(
    state: &AppState<S>,
    st: CqStatement,
) -> Result<StatementResult, ApiError> {
    let cqs = &state.cqs;
    let file_error = |e: crate::cq::CqError| match e {
        crate::cq::CqError::Exists => ApiError::Query(e.to_string()),
        e => {
            tracing::error!("{e}");
            ApiError::Internal(e.to_string())
        }
    };
    match st {
        CqStatement::Create(cq) => {
            if !state.store.database_exists(&cq.database) {
                return Err(ApiError::Query(format!(
                    "database not found: {}",
                    cq.database
                )));
            }
            // One run's windows, bounded as a statement's answer is: a query its creator
            // may not run by hand is not run every second either.
            if let Some(e) = crate::cq::bucket_limit(&cq, state.config.sql.max_result_rows) {
                return Err(ApiError::Query(e));
            }
            cqs.create(&cq).map_err(file_error)?;
        }
        CqStatement::Drop { name, on } => cqs.drop_query(&on, &name).map_err(file_error)?,
        CqStatement::Show => {
            let databases: Vec<String> = state
                .store
                .databases()
                .into_iter()
                .filter(|d| !crate::retention::is_policy_database(d))
                .collect();
            let series = crate::cq::show(&databases, &cqs.snapshot())
                .into_iter()
                .map(|(db, rows)| {
                    let values = rows
                        .into_iter()
                        .map(|(name, query)| {
                            vec![Value::String(name.into()), Value::String(query.into())]
                        })
                        .collect();
                    Series::untagged(&db, &["name", "query"], values)
                })
                .collect();
            return Ok(StatementResult::of(series));
        }
    }
    Ok(StatementResult::default())
}
