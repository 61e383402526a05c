//! `GET|POST /query`: InfluxQL, answered in InfluxDB 1.x's JSON shape.
//!
//! `q` comes from the query string or a form body and is parsed by the
//! `influxql` crate (the one InfluxQL parser); several statements run in
//! order, each answered with its `statement_id`. `SELECT` goes to storage's
//! InfluxQL engine ([`storage::Store::influxql`]), `SHOW` answers come from the
//! catalog, `CREATE`/`DROP DATABASE` go through storage ([`execute`]).
//! `DROP DATABASE` needs `POST` (`GET` → 405, with InfluxDB 1.x's "please use
//! a POST request instead" text); `CREATE DATABASE` in a `GET` runs with that
//! text as a warning, as InfluxDB 1.x answers it (TSBS's loader and other
//! tools create their database so; it destroys nothing). Parameters: `db`, `rp`, `epoch`, `params` (bound
//! parameters, a JSON object), `chunked`/`chunk_size`.
//!
//! A query that does not parse is a 400 (`error parsing query: ...`); a
//! statement that fails is the `error` of its own result in a 200 answer.

mod authorize;
mod cq;
mod execute;
mod inline;
mod into;
mod policies;
pub mod render;
pub mod running;
pub mod timing;
mod users;

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Extension, FromRequestParts, RawQuery, State};
use axum::http::request::Parts;
use axum::http::{header, Method};
use axum::response::{IntoResponse, Response};
use influxql::ast::{Literal, Statement};
use storage::SqlCancel;

use crate::auth::Identity;
use crate::error::ApiError;
use crate::params::Params;
use crate::{AppState, Store};

/// A retention in seconds as InfluxDB prints it (`720h0m0s`, `0s`).
pub fn format_duration(secs: u64) -> String {
    let ns = i64::try_from(secs.saturating_mul(1_000_000_000)).unwrap_or(i64::MAX);
    influxql::format_duration(ns)
}

/// `GET|POST /query`.
pub async fn query<S: Store>(
    State(state): State<AppState<S>>,
    Extension(id): Extension<Identity>,
    start: Option<Extension<crate::RequestStart>>,
    method: Method,
    RawQuery(raw): RawQuery,
    FormBody(is_form): FormBody,
    body: Bytes,
) -> Response {
    let mut timing = timing::Timing::start(start.map(|Extension(s)| s.0));
    let mut params = Params::parse(raw.as_deref().unwrap_or(""));
    // InfluxDB reads `pretty` from the URL only, not from a form body.
    let pretty = params.get("pretty").map(str::to_string);
    if is_form {
        params.extend(Params::parse(&String::from_utf8_lossy(&body)));
    }
    let Some(q) = params.get_nonempty("q") else {
        return ApiError::Query("missing required parameter \"q\"".into()).into_response();
    };
    let bound = match bound_params(params.get_nonempty("params")) {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let format = render::Format::from_params(
        params.get("epoch"),
        pretty.as_deref(),
        params.get("chunked"),
        params.get("chunk_size"),
    );
    let parsed = match influxql::parse_query(q, &bound) {
        Ok(p) => p,
        // InfluxDB answers these in the statement's result, not as a parse error.
        Err(e) if e.is_statement_error() => {
            let answered = render::Answered {
                result: Err(e.to_string()),
                chunking: render::Chunking::Whole,
                zone: None,
            };
            return render::respond(vec![answered], format).0;
        }
        Err(e) => return ApiError::Query(format!("error parsing query: {e}")).into_response(),
    };
    // An unknown `tz()` zone is a parse error in InfluxDB (its parser loads it).
    if let Some(e) = parsed.iter().find_map(|st| render::zone_of(st).err()) {
        return ApiError::Query(format!("error parsing query: {e}")).into_response();
    }
    if method == Method::GET {
        if let Some(e) = state_change_in_get(&parsed) {
            return e.into_response();
        }
    }
    let db = params.get_nonempty("db").map(str::to_string);
    if let Err(e) = authorize::authorize(&id, db.as_deref(), &parsed) {
        return e.into_response();
    }
    timing.parsed();
    let rp = params.get_nonempty("rp").map(str::to_string);
    let now_ns = now_ns();
    let cancel = SqlCancel::new();
    let _cancel_on_drop = CancelOnDrop(cancel.clone());
    // Listed by SHOW QUERIES while it runs, as one query (its statements
    // joined, as 1.x does): printed only when listed.
    let parsed: std::sync::Arc<[Statement]> = parsed.into();
    let user = matches!(id, Identity::User(_)).then(|| id.name().to_string());
    let registered = state.queries.register(
        parsed.clone(),
        db.as_deref().unwrap_or(""),
        user.as_deref(),
        cancel.clone(),
    );
    let mut results = Vec::with_capacity(parsed.len());
    let mut failed = false;
    // Which paths the statements' reads took (`X-Chingest-Read-Path`).
    let mut paths = storage::influxql::read_path::Paths::default();
    // Time this request's statements ran inline (`inline::REQUEST_BUDGET`).
    let mut inline_spent = std::time::Duration::ZERO;
    for st in parsed.iter() {
        let get_warning = (method == Method::GET)
            .then(|| read_only_warning(st))
            .flatten();
        let (chunking, zone) = (render::Chunking::of(st), render::zone_of(st).ok().flatten());
        let answered = |result| render::Answered {
            result,
            chunking,
            zone: zone.clone(),
        };
        if failed {
            // InfluxDB runs nothing after a failed statement (the renderer
            // answers these as it does).
            results.push(answered(Err("not executed".to_string())));
            continue;
        }
        let handed = std::time::Instant::now();
        // A `SELECT` the hot store answers at once runs here, on the worker
        // (`inline.rs`); anything it refuses runs again on a blocking thread.
        let mut ran = None;
        let mut how = inline::Outcome::Blocking;
        if inline::eligible(st)
            && inline_spent < inline::REQUEST_BUDGET
            && state.store.answers_inline()
        {
            if let Some(_slot) = inline::Slot::take() {
                let cx = execute::Context {
                    id: &id,
                    db: db.as_deref(),
                    rp: rp.as_deref(),
                    now_ns,
                    cancel: &cancel,
                };
                // A panic answers a 500, as a blocking thread's does (not a
                // dropped connection).
                let tried = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    storage::influxql::inline::run(|| run_statement(&state, &cx, st.clone()))
                }));
                ran = tried.unwrap_or_else(|_| {
                    let e = ApiError::Internal("a statement panicked".into());
                    Some((Err(e), Default::default()))
                });
                how = match ran {
                    Some(_) => inline::Outcome::Inline,
                    None => inline::Outcome::Refused,
                };
                inline_spent += handed.elapsed();
            }
        }
        inline::count(how);
        let ran = match ran {
            Some(ran) => Ok(ran),
            None => {
                let (state, id) = (state.clone(), id.clone());
                let (db, rp, cancel) = (db.clone(), rp.clone(), cancel.clone());
                let st = st.clone();
                tokio::task::spawn_blocking(move || {
                    let cx = execute::Context {
                        id: &id,
                        db: db.as_deref(),
                        rp: rp.as_deref(),
                        now_ns,
                        cancel: &cancel,
                    };
                    run_statement(&state, &cx, st)
                })
                .await
            }
        };
        let outcome = ran
            .map(|(outcome, (seen, stages))| {
                paths.add(seen);
                timing.stages.add(stages);
                outcome
            })
            .unwrap_or_else(|e| Err(ApiError::Internal(e.to_string())));
        timing.exec += handed.elapsed();
        // A killed query answers so, whatever its statement came to.
        let outcome = if registered.killed() {
            Err(ApiError::Query("query interrupted".into()))
        } else {
            outcome
        };
        match outcome {
            Ok(mut r) => {
                if let Some(text) = get_warning {
                    r.messages.push(("warning".to_string(), text));
                }
                results.push(answered(Ok(r)))
            }
            Err(
                e @ (ApiError::AuthFailed
                | ApiError::AuthMissing
                | ApiError::Internal(_)
                | ApiError::Overloaded { .. }
                | ApiError::Unavailable(_)),
            ) => return e.into_response(),
            Err(e) => {
                failed = true;
                results.push(answered(Err(e.public_message())));
            }
        }
    }
    let (mut response, rendered) = render::respond(results, format);
    if let Some(path) = paths.summary() {
        response
            .headers_mut()
            .insert(READ_PATH_HEADER, axum::http::HeaderValue::from_static(path));
    }
    if let Some(value) = timing.header(rendered) {
        response
            .headers_mut()
            .insert(timing::SERVER_TIMING_HEADER, value);
    }
    response
}

/// Runs one statement with its read paths and stages recorded (on the thread
/// it runs on: the worker inline, else a blocking thread).
fn run_statement<S: Store>(
    state: &AppState<S>,
    cx: &execute::Context<'_>,
    st: Statement,
) -> (
    Result<storage::influxql::StatementResult, ApiError>,
    (
        storage::influxql::read_path::Paths,
        storage::influxql::stages::Stages,
    ),
) {
    storage::influxql::read_path::take();
    storage::influxql::stages::take();
    let outcome = execute::execute(state, cx, st);
    let seen = (
        storage::influxql::read_path::take(),
        storage::influxql::stages::take(),
    );
    (outcome, seen)
}

/// Which path answered the request's reads: `hot` (the hot store), `last_point`
/// (the flusher's last points), `engine` (engine statements) or `mixed`.
pub const READ_PATH_HEADER: &str = "x-chingest-read-path";

/// A GET must not destroy data (a link or an <img> on any web page can send
/// one). InfluxDB 1.x ran these with a deprecation warning; chingest refuses
/// them with that warning's text, before running any statement.
fn state_change_in_get(parsed: &[Statement]) -> Option<ApiError> {
    parsed.iter().find_map(|st| match st {
        Statement::DropDatabase { .. }
        | Statement::DropMeasurement { .. }
        | Statement::KillQuery { .. }
        | Statement::Delete(_)
        | Statement::DropSeries(_) => Some(ApiError::MethodNotAllowed(read_only_text(st))),
        // `SELECT … INTO` writes points.
        Statement::Select(s) if s.into.is_some() => {
            Some(ApiError::MethodNotAllowed(read_only_text(st)))
        }
        Statement::ContinuousQuery(
            influxql::ast::CqStatement::Create(_) | influxql::ast::CqStatement::Drop { .. },
        )
        | Statement::RetentionPolicy(_) => Some(ApiError::MethodNotAllowed(read_only_text(st))),
        // InfluxDB 1.x runs these in a GET (with a warning); a GET must change no user.
        Statement::User(u) if u.changes_users() => {
            Some(ApiError::MethodNotAllowed(read_only_text(st)))
        }
        _ => None,
    })
}

/// The warning InfluxDB 1.x answers a `CREATE DATABASE` sent with `GET`
/// (it runs it): idempotent and destructive of nothing, so chingest runs it
/// too, as tools written for 1.x expect (TSBS's loader creates its database
/// so).
fn read_only_warning(st: &Statement) -> Option<String> {
    matches!(st, Statement::CreateDatabase { .. }).then(|| read_only_text(st))
}

/// InfluxDB 1.x's text for a state change in a `GET`, quoting the statement
/// as it prints it.
fn read_only_text(st: &Statement) -> String {
    format!("deprecated use of '{st}' in a read only context, please use a POST request instead")
}

/// `params={"name": value, ...}`: the values of `$name` in the query.
fn bound_params(json: Option<&str>) -> Result<HashMap<String, Literal>, ApiError> {
    let mut out = HashMap::new();
    let Some(json) = json else {
        return Ok(out);
    };
    let bad = |m: String| ApiError::Query(format!("error parsing query parameters: {m}"));
    let v: serde_json::Value = serde_json::from_str(json).map_err(|e| bad(e.to_string()))?;
    let obj = v
        .as_object()
        .ok_or_else(|| bad("expected a JSON object".into()))?;
    for (k, v) in obj {
        let lit = match v {
            serde_json::Value::String(s) => Literal::String(s.clone()),
            serde_json::Value::Bool(b) => Literal::Boolean(*b),
            serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => Literal::Integer(i),
                (None, Some(u), _) => Literal::Unsigned(u),
                (_, _, Some(f)) => Literal::Float(f),
                _ => return Err(bad(format!("unsupported number for {k}"))),
            },
            other => return Err(bad(format!("unsupported value for {k}: {other}"))),
        };
        out.insert(k.clone(), lit);
    }
    Ok(out)
}

/// Runs a continuous query's `SELECT … INTO` over its range (`cq`): as the database's
/// system, reading every database (the statement was authorized when it was created), its
/// engine statements stopped by `cancel` (`KILL QUERY`, `DROP`). Blocking, inside the
/// runtime. The points written.
pub fn run_continuous<S: Store>(
    state: &AppState<S>,
    db: &str,
    select: &influxql::ast::SelectStatement,
    now_ns: i64,
    cancel: &SqlCancel,
) -> Result<u64, ApiError> {
    let cx = execute::Context {
        id: &Identity::Anonymous,
        db: Some(db),
        rp: None,
        now_ns,
        cancel,
    };
    into::write_answer(state, &cx, select)
}

/// Whether the request's body is a form (`Content-Type:
/// application/x-www-form-urlencoded`), read without copying the request's
/// headers (axum's `HeaderMap` extractor clones them all).
pub struct FormBody(bool);

impl<S: Send + Sync> FromRequestParts<S> for FormBody {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let form = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
        Ok(FormBody(form))
    }
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Cancels the request's engine statements when the handler is dropped
/// (the client went away) or done.
struct CancelOnDrop(SqlCancel);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}
