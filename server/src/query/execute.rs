//! Runs one parsed statement against storage (blocking: may touch the WAL or the
//! engine), answering in the one result model, [`StatementResult`].

use influxql::ast::{
    MeasurementName, NameMatch, ShowCommon, ShowMeasurements, Statement, TagKeyMatch,
};
use storage::influxql::schema::name_matches;
use storage::influxql::{Series, StatementResult, Value};
use storage::{InfluxqlError, InfluxqlRequest, SqlCancel};

use crate::auth::Identity;
use crate::error::ApiError;
use crate::{AppState, Store};

/// What a statement runs with besides itself.
#[derive(Clone, Copy)]
pub(super) struct Context<'a> {
    /// Who asks.
    pub(super) id: &'a Identity,
    /// The `db` parameter.
    pub(super) db: Option<&'a str>,
    /// The `rp` parameter.
    pub(super) rp: Option<&'a str>,
    /// `now()` of the request, ns.
    pub(super) now_ns: i64,
    /// Set when the client goes away.
    pub(super) cancel: &'a SqlCancel,
}

fn need_db(on: Option<&str>, db: Option<&str>) -> Result<String, ApiError> {
    on.or(db)
        .map(str::to_string)
        .ok_or_else(|| ApiError::Query("database name required".into()))
}

fn text(s: impl Into<std::sync::Arc<str>>) -> Value {
    Value::String(s.into())
}

/// Runs one statement (blocking: may touch the WAL or the engine).
pub(super) fn execute<S: Store>(
    state: &AppState<S>,
    cx: &Context<'_>,
    st: Statement,
) -> Result<StatementResult, ApiError> {
    let p = state.store.as_ref();
    let id = cx.id;
    // Other ingest nodes' databases, schema and retention policies, where they write too
    // (a cluster).
    p.refresh_catalog();
    state.policies.sync(p);
    if let Some(on) = show_condition_db(&st) {
        // Which series match a condition is the engine's to say, per storage database of
        // the database's policies.
        let db = readable(cx, on)?;
        let dbs = state.policies.storage_databases(&db);
        if dbs.len() == 1 {
            return in_storage(state, cx, &st);
        }
        let (limit, offset) = show_limits(&st);
        let answers = dbs
            .iter()
            .map(|storage| in_storage(state, cx, &with_on(&st, storage)))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(super::policies::merge(answers, limit, offset));
    }
    match st {
        Statement::CreateDatabase {
            name,
            duration_secs,
            ..
        } => {
            p.create_database(&name, duration_secs)?;
            Ok(StatementResult::default())
        }
        Statement::DropDatabase { name } => {
            // A storage that cannot drop databases refuses before anything is forgotten.
            p.can_drop_database()?;
            // Grants go first: a failure after it leaves no grant on a database created
            // again under the name.
            state
                .auth
                .forget_database(&name)
                .map_err(super::users::error)?;
            // Its continuous queries too (their runs stopped), as InfluxDB 1.x forgets them
            // with the database: a database created again under the name has none.
            state.cqs.drop_database(&name).map_err(|e| {
                tracing::error!("{e}");
                ApiError::Internal(e.to_string())
            })?;
            state.policies.drop_database(p, &name)?;
            p.drop_database(&name)?;
            Ok(StatementResult::default())
        }
        Statement::DropMeasurement { name } => {
            // One the database does not have is no error, and no `db` is an unknown
            // database (`database not found: `), as in InfluxDB 1.6.7.
            let db = cx.db.unwrap_or("");
            if !p.database_exists(db) {
                return Err(ApiError::Query(format!("database not found: {db}")));
            }
            for storage in state.policies.storage_databases(db) {
                p.drop_measurement(&storage, &name)?;
            }
            Ok(StatementResult::default())
        }
        // Every policy's points, as InfluxDB deletes from every shard of the database.
        Statement::Delete(_) | Statement::DropSeries(_) => {
            let Some(db) = cx.db.filter(|db| p.database_exists(db)) else {
                return in_storage(state, cx, &st);
            };
            let mut last = StatementResult::default();
            for storage in state.policies.storage_databases(db) {
                let cx = Context {
                    db: Some(&storage),
                    ..*cx
                };
                last = in_storage(state, &cx, &st)?;
            }
            Ok(last)
        }
        Statement::RetentionPolicy(rp) => super::policies::execute(state, rp),
        Statement::Select(_) => run_select(state, cx, &st),
        Statement::ShowDatabases => Ok(show_databases(p, id)),
        Statement::ShowRetentionPolicies { on } => {
            super::policies::show(state, &readable(cx, on.as_deref())?)
        }
        Statement::ShowMeasurements(s) => {
            let db = readable(cx, s.on.as_deref())?;
            across(state, &db, s.limit, s.offset, |storage, unpaged| {
                let s = if unpaged {
                    ShowMeasurements {
                        limit: None,
                        offset: None,
                        ..s.clone()
                    }
                } else {
                    s.clone()
                };
                show_measurements(p, storage, &s)
            })
        }
        Statement::ShowTagKeys(c) => {
            let db = readable(cx, c.on.as_deref())?;
            across(state, &db, c.limit, c.offset, |storage, unpaged| {
                show_tag_keys(p, storage, &unpage(&c, unpaged))
            })
        }
        Statement::ShowFieldKeys(c) => {
            let db = readable(cx, c.on.as_deref())?;
            across(state, &db, c.limit, c.offset, |storage, unpaged| {
                show_field_keys(p, storage, &unpage(&c, unpaged))
            })
        }
        Statement::ShowTagValues { common, key } => {
            let db = readable(cx, common.on.as_deref())?;
            across(
                state,
                &db,
                common.limit,
                common.offset,
                |storage, unpaged| show_tag_values(p, storage, &unpage(&common, unpaged), &key),
            )
        }
        Statement::ShowSeries(c) => {
            let db = readable(cx, c.on.as_deref())?;
            across(state, &db, c.limit, c.offset, |storage, unpaged| {
                show_series(p, storage, &unpage(&c, unpaged))
            })
        }
        Statement::ShowQueries => Ok(show_queries(state, id)),
        Statement::KillQuery { id: qid, .. } => {
            if state.queries.kill(qid) {
                Ok(StatementResult::default())
            } else {
                Err(ApiError::Query(format!("no such query id: {qid}")))
            }
        }
        Statement::ShowDiagnostics => Err(unsupported("SHOW DIAGNOSTICS")),
        Statement::ShowStats => Err(unsupported("SHOW STATS")),
        Statement::User(u) => super::users::execute(state, id, u),
        Statement::ContinuousQuery(c) => super::cq::execute(state, c),
        Statement::Unsupported { what, .. } => Err(unsupported(&what)),
    }
}

fn unsupported(what: &str) -> ApiError {
    InfluxqlError::Unsupported {
        what: what.to_string(),
    }
    .into()
}

/// The database a statement reads (`ON db`, else the `db` parameter; the
/// caller's access to it was checked with the whole query, `authorize`).
fn readable(cx: &Context<'_>, on: Option<&str>) -> Result<String, ApiError> {
    need_db(on, cx.db)
}

/// `ON` of a `SHOW` statement with a `WHERE` clause (`Some(None)` without
/// `ON`); `None` for every other statement.
fn show_condition_db(st: &Statement) -> Option<Option<&str>> {
    let (on, cond) = match st {
        Statement::ShowMeasurements(s) => (&s.on, &s.condition),
        Statement::ShowTagKeys(c) | Statement::ShowSeries(c) => (&c.on, &c.condition),
        Statement::ShowTagValues { common, .. } => (&common.on, &common.condition),
        _ => return None,
    };
    cond.as_ref().map(|_| on.as_deref())
}

/// A `SELECT` (the engine checks the caller's access again, with the
/// caller's role, on what it reads).
fn run_select<S: Store>(
    state: &AppState<S>,
    cx: &Context<'_>,
    st: &Statement,
) -> Result<StatementResult, ApiError> {
    match st {
        Statement::Select(s) if s.into.is_some() => super::into::execute(state, cx, s),
        _ => in_storage(state, cx, st),
    }
}

/// A `SHOW` statement answered per storage database of `db`'s policies and merged (one
/// call when the database has no policy of its own: the answer as it always was).
fn across<S: Store>(
    state: &AppState<S>,
    db: &str,
    limit: Option<u64>,
    offset: Option<u64>,
    show: impl Fn(&str, bool) -> Result<StatementResult, ApiError>,
) -> Result<StatementResult, ApiError> {
    let dbs = state.policies.storage_databases(db);
    if dbs.len() == 1 {
        return show(db, false);
    }
    let answers = dbs
        .iter()
        .map(|storage| show(storage, true))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(super::policies::merge(answers, limit, offset))
}

/// `c` without `LIMIT`/`OFFSET` when `unpaged` (they apply to the merged answer).
fn unpage(c: &ShowCommon, unpaged: bool) -> ShowCommon {
    if unpaged {
        ShowCommon {
            limit: None,
            offset: None,
            ..c.clone()
        }
    } else {
        c.clone()
    }
}

/// `LIMIT` and `OFFSET` of a `SHOW` statement.
fn show_limits(st: &Statement) -> (Option<u64>, Option<u64>) {
    match st {
        Statement::ShowMeasurements(s) => (s.limit, s.offset),
        Statement::ShowTagKeys(c) | Statement::ShowSeries(c) | Statement::ShowFieldKeys(c) => {
            (c.limit, c.offset)
        }
        Statement::ShowTagValues { common, .. } => (common.limit, common.offset),
        _ => (None, None),
    }
}

/// A `SHOW` statement about `storage` instead of its `ON` database, without its limits.
fn with_on(st: &Statement, storage: &str) -> Statement {
    let mut st = st.clone();
    let on = Some(storage.to_string());
    match &mut st {
        Statement::ShowMeasurements(s) => {
            s.on = on;
            s.limit = None;
            s.offset = None;
        }
        Statement::ShowTagKeys(c) | Statement::ShowSeries(c) | Statement::ShowFieldKeys(c) => {
            c.on = on;
            c.limit = None;
            c.offset = None;
        }
        Statement::ShowTagValues { common, .. } => {
            common.on = on;
            common.limit = None;
            common.offset = None;
        }
        _ => {}
    }
    st
}

/// Runs `st` in storage's InfluxQL engine with the caller's access, for the
/// JSON renderer (a hot raw answer's rows may come packed: `Series::packed`).
pub(super) fn in_storage<S: Store>(
    state: &AppState<S>,
    cx: &Context<'_>,
    st: &Statement,
) -> Result<StatementResult, ApiError> {
    run_in_storage(state, cx, st, true)
}

/// [`in_storage`] with every row plain (`SELECT INTO` writes them).
pub(super) fn in_storage_rows<S: Store>(
    state: &AppState<S>,
    cx: &Context<'_>,
    st: &Statement,
) -> Result<StatementResult, ApiError> {
    run_in_storage(state, cx, st, false)
}

fn run_in_storage<S: Store>(
    state: &AppState<S>,
    cx: &Context<'_>,
    st: &Statement,
    packed: bool,
) -> Result<StatementResult, ApiError> {
    // A SELECT's sources point at their retention policies' data.
    let resolved;
    let st = match st {
        Statement::Select(s) => {
            let mut s = s.clone();
            super::policies::resolve_sources(state, &mut s, cx.db, cx.rp)?;
            resolved = Statement::Select(s);
            &resolved
        }
        other => other,
    };
    let mut access = crate::sql::influxql_access(state.store.as_ref(), cx.id);
    // A policy's storage database is in no user's engine role; the caller's READ on the
    // database it belongs to was checked with the whole query (`authorize`).
    if super::policies::reads_policy_data(st) && !matches!(access, storage::SqlAccess::Admin) {
        access = storage::SqlAccess::Read(storage::ReadScope::All);
    }
    let req = InfluxqlRequest {
        db: cx.db,
        statement: st,
        access: &access,
        cancel: cx.cancel,
        now_ns: cx.now_ns,
        packed,
    };
    Ok(state.store.influxql(req)?)
}

/// `SHOW QUERIES`: every running query for an admin (and with auth off), a user's own
/// otherwise (InfluxDB shows everyone's to anyone with `READ` on the request's database; a
/// query's text may hold what another user should not read).
fn show_queries<S: Store>(state: &AppState<S>, id: &Identity) -> StatementResult {
    let all = match id {
        Identity::Anonymous => true,
        _ => id.is_admin(),
    };
    let values = state
        .queries
        .list(|user| all || user == Some(id.name()))
        .into_iter()
        .map(|q| {
            vec![
                Value::Integer(q.id as i64),
                text(q.query),
                text(q.database),
                text(q.duration),
                text(q.status.to_string()),
            ]
        })
        .collect();
    StatementResult::of(vec![Series::untagged(
        "",
        &["qid", "query", "database", "duration", "status"],
        values,
    )])
}

fn show_databases(p: &impl Store, id: &Identity) -> StatementResult {
    let values = p
        .databases()
        .into_iter()
        // Those the caller may read or write, as InfluxDB 1.x lists them.
        .filter(|d| !crate::retention::is_policy_database(d))
        .filter(|d| id.can_read(d) || id.can_write(d))
        .map(|d| vec![text(d)])
        .collect();
    StatementResult::of(vec![Series::untagged("databases", &["name"], values)])
}

/// `OFFSET`/`LIMIT` over one list of values.
pub(super) fn page<T>(values: Vec<T>, limit: Option<u64>, offset: Option<u64>) -> Vec<T> {
    let skip = usize::try_from(offset.unwrap_or(0)).unwrap_or(usize::MAX);
    let take = limit
        .filter(|&l| l > 0)
        .map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    values.into_iter().skip(skip).take(take).collect()
}

/// Whether measurement `m` is named by `from` (all when empty).
fn in_from(from: &[MeasurementName], m: &str) -> Result<bool, ApiError> {
    if from.is_empty() {
        return Ok(true);
    }
    for f in from {
        if name_matches(&f.name, m)? {
            return Ok(true);
        }
    }
    Ok(false)
}

fn show_measurements(
    p: &impl Store,
    db: &str,
    s: &ShowMeasurements,
) -> Result<StatementResult, ApiError> {
    if !p.database_exists(db) {
        // InfluxDB answers nothing, not an error.
        return Ok(StatementResult::default());
    }
    let mut values = Vec::new();
    for m in p.schema(db)? {
        let wanted = match &s.with_measurement {
            Some(pattern) => name_matches(pattern, &m.name)?,
            None => true,
        };
        if wanted {
            values.push(vec![text(m.name)]);
        }
    }
    let values = page(values, s.limit, s.offset);
    if values.is_empty() {
        return Ok(StatementResult::default());
    }
    Ok(StatementResult::of(vec![Series::untagged(
        "measurements",
        &["name"],
        values,
    )]))
}

fn show_tag_keys(p: &impl Store, db: &str, c: &ShowCommon) -> Result<StatementResult, ApiError> {
    let mut out = Vec::new();
    for m in p.schema(db)? {
        if !in_from(&c.from, &m.name)? || m.tag_keys.is_empty() {
            continue;
        }
        // A key no series has any more (`DROP SERIES`, `DELETE`) is not listed, as in 1.x.
        let values = m
            .tag_keys
            .iter()
            .filter(|k| p.tag_value_count(db, &m.name, k) > 0)
            .map(|k| vec![text(k.clone())])
            .collect();
        let values = page(values, c.limit, c.offset);
        if !values.is_empty() {
            out.push(Series::untagged(&m.name, &["tagKey"], values));
        }
    }
    Ok(StatementResult::of(out))
}

fn show_field_keys(p: &impl Store, db: &str, c: &ShowCommon) -> Result<StatementResult, ApiError> {
    let mut out = Vec::new();
    for m in p.schema(db)? {
        if !in_from(&c.from, &m.name)? {
            continue;
        }
        let values = m
            .fields
            .iter()
            .map(|(k, t)| vec![text(k.clone()), text(t.influxql_name())])
            .collect();
        let values = page(values, c.limit, c.offset);
        if !values.is_empty() {
            out.push(Series::untagged(
                &m.name,
                &["fieldKey", "fieldType"],
                values,
            ));
        }
    }
    Ok(StatementResult::of(out))
}

/// Whether tag key `k` is one `WITH KEY ...` asks for.
fn key_wanted(key: &TagKeyMatch, k: &str) -> Result<bool, ApiError> {
    Ok(match key {
        TagKeyMatch::Eq(x) => x == k,
        TagKeyMatch::NotEq(x) => x != k,
        TagKeyMatch::In(xs) => xs.iter().any(|x| x == k),
        TagKeyMatch::Regex(re) => name_matches(&NameMatch::Regex(re.clone()), k)?,
        TagKeyMatch::NotRegex(re) => !name_matches(&NameMatch::Regex(re.clone()), k)?,
    })
}

fn show_tag_values(
    p: &impl Store,
    db: &str,
    c: &ShowCommon,
    key: &TagKeyMatch,
) -> Result<StatementResult, ApiError> {
    let mut out = Vec::new();
    for m in p.schema(db)? {
        if !in_from(&c.from, &m.name)? {
            continue;
        }
        let mut wanted = Vec::new();
        for k in &m.tag_keys {
            if key_wanted(key, k)? {
                wanted.push(k.clone());
            }
        }
        if wanted.is_empty() {
            continue;
        }
        let values: Vec<Vec<Value>> = p
            .tag_values(db, &m.name, &wanted)?
            .into_iter()
            .map(|(k, v)| vec![text(k), text(v)])
            .collect();
        let values = page(values, c.limit, c.offset);
        if !values.is_empty() {
            out.push(Series::untagged(&m.name, &["key", "value"], values));
        }
    }
    Ok(StatementResult::of(out))
}

fn show_series(p: &impl Store, db: &str, c: &ShowCommon) -> Result<StatementResult, ApiError> {
    let mut keys = Vec::new();
    for m in p.schema(db)? {
        if in_from(&c.from, &m.name)? {
            keys.extend(p.series(db, Some(&m.name))?);
        }
    }
    let values: Vec<Vec<Value>> = page(keys, c.limit, c.offset)
        .into_iter()
        .map(|k| vec![text(k)])
        .collect();
    if values.is_empty() {
        return Ok(StatementResult::default());
    }
    Ok(StatementResult::of(vec![Series::untagged(
        "",
        &["key"],
        values,
    )]))
}
