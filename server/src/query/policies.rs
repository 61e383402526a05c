//! Retention policies on `/query`: `CREATE`/`ALTER`/`DROP RETENTION POLICY`, `SHOW RETENTION
//! POLICIES`, and what every other statement does with them: a `SELECT`'s sources name
//! a policy's data (`"db"."rp"."m"`, the `rp` parameter, else the database's default), and
//! `SHOW …`, `DROP MEASUREMENT`, `DELETE`, `DROP SERIES` cover every policy of the
//! database, as InfluxDB 1.x's per-database index and shards do. The policies themselves:
//! [`crate::retention`].

use influxql::ast::{RpStatement, SelectStatement, Source, Statement};
use storage::influxql::{Series, StatementResult, Value};
use storage::InfluxqlError;

use crate::error::ApiError;
use crate::retention::Change;
use crate::{AppState, Store};

/// Runs a retention-policy statement (blocking).
pub(super) fn execute<S: Store>(
    state: &AppState<S>,
    st: RpStatement,
) -> Result<StatementResult, ApiError> {
    let store = state.store.as_ref();
    let exists = |db: &str| {
        if store.database_exists(db) {
            Ok(())
        } else {
            Err(ApiError::Query(format!("database not found: {db}")))
        }
    };
    match st {
        RpStatement::Create {
            name,
            on,
            duration_secs,
            shard_duration_ns,
            default,
            ..
        } => {
            exists(&on)?;
            let change = Change {
                duration_secs: Some(duration_secs),
                shard_duration_ns,
                default,
            };
            state
                .policies
                .create(store, &on, &name, duration_secs, change)?;
        }
        RpStatement::Alter {
            name,
            on,
            duration_secs,
            shard_duration_ns,
            default,
            ..
        } => {
            exists(&on)?;
            let change = Change {
                duration_secs,
                shard_duration_ns,
                default,
            };
            state.policies.alter(store, &on, &name, change)?;
        }
        RpStatement::Drop { name, on } => {
            exists(&on)?;
            state.policies.drop_policy(store, &on, &name)?;
        }
    }
    Ok(StatementResult::default())
}

/// `SHOW RETENTION POLICIES ON db`.
pub(super) fn show<S: Store>(state: &AppState<S>, db: &str) -> Result<StatementResult, ApiError> {
    if !state.store.database_exists(db) {
        return Err(ApiError::Query(format!("database not found: {db}")));
    }
    let values = state
        .policies
        .show(state.store.as_ref(), db)
        .into_iter()
        .map(|p| {
            vec![
                Value::String(p.name.into()),
                Value::String(super::format_duration(p.duration_secs).into()),
                Value::String(super::format_duration(p.shard_secs).into()),
                Value::Integer(1),
                Value::Boolean(p.default),
            ]
        })
        .collect();
    Ok(StatementResult::of(vec![Series::untagged(
        "",
        &[
            "name",
            "duration",
            "shardGroupDuration",
            "replicaN",
            "default",
        ],
        values,
    )]))
}

/// Points a `SELECT`'s sources (subqueries too) at their policies' data: a source's
/// database (else `db`) and policy (else `rp`, else the database's default). Sources of a
/// database that does not exist are left for the engine's own error.
pub(super) fn resolve_sources<S: Store>(
    state: &AppState<S>,
    select: &mut SelectStatement,
    db: Option<&str>,
    rp: Option<&str>,
) -> Result<(), ApiError> {
    for source in &mut select.sources {
        match source {
            Source::Subquery(inner) => resolve_sources(state, inner, db, rp)?,
            Source::Measurement(m) => {
                let Some(logical) = m.database.as_deref().filter(|d| !d.is_empty()).or(db) else {
                    continue;
                };
                if !state.store.database_exists(logical) {
                    continue;
                }
                let named = m
                    .retention_policy
                    .as_deref()
                    .filter(|r| !r.is_empty())
                    .or(rp);
                let storage = state
                    .policies
                    .resolve(logical, named)
                    .map_err(|rp| ApiError::from(InfluxqlError::RetentionPolicyNotFound { rp }))?;
                m.database = Some(storage);
                m.retention_policy = None;
            }
        }
    }
    Ok(())
}

/// Whether a resolved statement reads a policy's storage database.
pub(super) fn reads_policy_data(st: &Statement) -> bool {
    fn select(s: &SelectStatement) -> bool {
        s.sources.iter().any(|src| match src {
            Source::Subquery(inner) => select(inner),
            Source::Measurement(m) => m
                .database
                .as_deref()
                .is_some_and(crate::retention::is_policy_database),
        })
    }
    matches!(st, Statement::Select(s) if select(s))
}

/// The answers of one `SHOW` statement over each of a database's storage databases as one
/// answer: series of one name (and tags) merged, their rows deduplicated and sorted, then
/// `OFFSET`/`LIMIT` per series.
pub(super) fn merge(
    answers: Vec<StatementResult>,
    limit: Option<u64>,
    offset: Option<u64>,
) -> StatementResult {
    let mut merged: Vec<Series> = Vec::new();
    for answer in answers {
        for s in answer.series {
            match merged
                .iter_mut()
                .find(|m| m.name == s.name && m.tags == s.tags)
            {
                Some(m) => m.values.extend(s.values),
                None => merged.push(s),
            }
        }
    }
    merged.sort_by(|a, b| a.name.cmp(&b.name));
    for s in &mut merged {
        let mut rows: Vec<(String, Vec<Value>)> = s
            .values
            .drain(..)
            .map(|row| (format!("{row:?}"), row))
            .collect();
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        rows.dedup_by(|a, b| a.0 == b.0);
        let rows: Vec<Vec<Value>> = rows.into_iter().map(|(_, r)| r).collect();
        s.values = super::execute::page(rows, limit, offset);
    }
    StatementResult::of(merged)
}
