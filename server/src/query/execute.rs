//! Runs one parsed statement against storage (blocking: may touch the WAL or the
//! engine).

use serde_json::{json, Value};

use super::parse::{format_duration, Statement};
use crate::auth::Identity;
use crate::error::ApiError;
use crate::{AppState, Store};

fn need_db(on: Option<String>, db: Option<&str>) -> Result<String, ApiError> {
    on.or(db.map(str::to_string))
        .ok_or_else(|| ApiError::Query("database name required".into()))
}

fn check_read(id: &Identity, db: &str) -> Result<(), ApiError> {
    if id.can_read(db) {
        Ok(())
    } else {
        Err(ApiError::Forbidden(format!(
            "user {:?} is not authorized to read from database {db:?}",
            id.name()
        )))
    }
}

fn series_obj(name: Option<&str>, columns: &[&str], values: Vec<Value>) -> Value {
    let mut s = json!({ "columns": columns, "values": values });
    if let Some(n) = name {
        s["name"] = json!(n);
    }
    s
}

/// Runs one statement (blocking: may touch the WAL or the engine).
pub(super) fn execute<S: Store>(
    state: &AppState<S>,
    id: &Identity,
    db: Option<&str>,
    st: Statement,
) -> Result<Vec<Value>, ApiError> {
    let p = state.store.as_ref();
    match st {
        Statement::CreateDatabase(name, _) | Statement::DropDatabase(name)
            if !id.can_manage_databases() =>
        {
            Err(ApiError::Forbidden(format!(
                "user {:?} is not an admin: cannot create or drop database {name:?}",
                id.name()
            )))
        }
        Statement::CreateDatabase(name, retention) => {
            p.create_database(&name, retention)?;
            Ok(vec![])
        }
        Statement::DropDatabase(name) => {
            p.drop_database(&name)?;
            Ok(vec![])
        }
        Statement::ShowDatabases => Ok(show_databases(p, id)),
        Statement::ShowRetentionPolicies(on) => show_retention_policies(p, &readable(id, on, db)?),
        Statement::ShowMeasurements(on) => show_measurements(p, &readable(id, on, db)?),
        Statement::ShowTagKeys(on, from) => {
            show_tag_keys(p, &readable(id, on, db)?, from.as_deref())
        }
        Statement::ShowFieldKeys(on, from) => {
            show_field_keys(p, &readable(id, on, db)?, from.as_deref())
        }
        Statement::ShowTagValues { on, from, keys } => {
            show_tag_values(p, &readable(id, on, db)?, from.as_deref(), &keys)
        }
        Statement::ShowSeries(on, from) => show_series(p, &readable(id, on, db)?, from.as_deref()),
    }
}

/// The database a statement reads (`ON db`, else the `db` parameter), if `id` may read it.
fn readable(id: &Identity, on: Option<String>, db: Option<&str>) -> Result<String, ApiError> {
    let db = need_db(on, db)?;
    check_read(id, &db)?;
    Ok(db)
}

fn show_databases(p: &impl Store, id: &Identity) -> Vec<Value> {
    let values = p
        .databases()
        .into_iter()
        .filter(|d| id.can_read(d))
        .map(|d| json!([d]))
        .collect();
    vec![series_obj(Some("databases"), &["name"], values)]
}

fn show_retention_policies(p: &impl Store, db: &str) -> Result<Vec<Value>, ApiError> {
    if !p.database_exists(db) {
        return Err(ApiError::Query(format!("database not found: {db}")));
    }
    let retention = p.retention_secs(db);
    Ok(vec![series_obj(
        None,
        &[
            "name",
            "duration",
            "shardGroupDuration",
            "replicaN",
            "default",
        ],
        vec![json!([
            "autogen",
            format_duration(retention),
            format_duration(shard_group_secs(retention)),
            1,
            true
        ])],
    )])
}

/// InfluxDB's shard group duration for a retention.
fn shard_group_secs(retention: u64) -> u64 {
    match retention {
        0 => 7 * 86_400,
        r if r < 2 * 86_400 => 3_600,
        r if r <= 180 * 86_400 => 86_400,
        _ => 7 * 86_400,
    }
}

fn show_measurements(p: &impl Store, db: &str) -> Result<Vec<Value>, ApiError> {
    let values: Vec<Value> = p.schema(db)?.into_iter().map(|m| json!([m.name])).collect();
    if values.is_empty() {
        return Ok(vec![]);
    }
    Ok(vec![series_obj(Some("measurements"), &["name"], values)])
}

fn show_tag_keys(p: &impl Store, db: &str, from: Option<&str>) -> Result<Vec<Value>, ApiError> {
    Ok(p.schema(db)?
        .into_iter()
        .filter(|m| from.is_none_or(|f| f == m.name))
        .filter(|m| !m.tag_keys.is_empty())
        .map(|m| {
            let values = m.tag_keys.iter().map(|k| json!([k])).collect();
            series_obj(Some(&m.name), &["tagKey"], values)
        })
        .collect())
}

fn show_field_keys(p: &impl Store, db: &str, from: Option<&str>) -> Result<Vec<Value>, ApiError> {
    Ok(p.schema(db)?
        .into_iter()
        .filter(|m| from.is_none_or(|f| f == m.name))
        .map(|m| {
            let values = m
                .fields
                .iter()
                .map(|(k, t)| json!([k, t.influxql_name()]))
                .collect();
            series_obj(Some(&m.name), &["fieldKey", "fieldType"], values)
        })
        .collect())
}

fn show_tag_values(
    p: &impl Store,
    db: &str,
    from: Option<&str>,
    keys: &[String],
) -> Result<Vec<Value>, ApiError> {
    let mut out = Vec::new();
    for m in p.schema(db)? {
        if from.is_some_and(|f| f != m.name) {
            continue;
        }
        let wanted: Vec<String> = keys
            .iter()
            .filter(|k| m.tag_keys.contains(k))
            .cloned()
            .collect();
        if wanted.is_empty() {
            continue;
        }
        let values: Vec<Value> = p
            .tag_values(db, &m.name, &wanted)?
            .into_iter()
            .map(|(k, v)| json!([k, v]))
            .collect();
        if !values.is_empty() {
            out.push(series_obj(Some(&m.name), &["key", "value"], values));
        }
    }
    Ok(out)
}

fn show_series(p: &impl Store, db: &str, from: Option<&str>) -> Result<Vec<Value>, ApiError> {
    let keys = p.series(db, from)?;
    if keys.is_empty() {
        return Ok(vec![]);
    }
    Ok(vec![series_obj(
        None,
        &["key"],
        keys.into_iter().map(|k| json!([k])).collect(),
    )])
}
