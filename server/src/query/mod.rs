//! `GET|POST /query`: the InfluxQL statements clients need for schema
//! management and browsing, answered in the v1 JSON shape.
//!
//! `q` comes from the query string or a form body; statements are separated
//! by `;` ([`parse`]). `SHOW` answers come from the catalog; `CREATE`/`DROP
//! DATABASE` go through storage ([`execute`]) and need `POST` (`GET` → 405,
//! with InfluxDB 1.x's "please use a POST request instead" text). Data queries
//! (`SELECT`) are served by `/api/v1/sql`.

mod execute;
mod parse;

use axum::body::Bytes;
use axum::extract::{Extension, RawQuery, State};
use axum::http::{header, HeaderMap, Method};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::auth::Identity;
use crate::error::ApiError;
use crate::params::Params;
use crate::{AppState, Store};

pub use parse::{
    format_duration, parse_duration_secs, parse_statement, split_statements, Statement,
    MAX_RETENTION_SECS,
};

/// `GET|POST /query`.
pub async fn query<S: Store>(
    State(state): State<AppState<S>>,
    Extension(id): Extension<Identity>,
    method: Method,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut params = Params::parse(raw.as_deref().unwrap_or(""));
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    if is_form {
        params.extend(Params::parse(&String::from_utf8_lossy(&body)));
    }
    let Some(q) = params.get_nonempty("q").map(str::to_string) else {
        return ApiError::Query("missing required parameter \"q\"".into()).into_response();
    };
    let db = params.get_nonempty("db").map(str::to_string);
    let stmts = split_statements(&q);
    let mut parsed = Vec::with_capacity(stmts.len());
    for s in &stmts {
        match parse_statement(s) {
            Ok(st) => parsed.push(st),
            Err(e) => return ApiError::Query(format!("error parsing query: {e}")).into_response(),
        }
    }
    // A GET must not change state (a link or an <img> on any web page can
    // send one). InfluxDB 1.x ran these with a deprecation warning; chingest
    // refuses them with that warning's text, before running any statement.
    if method == Method::GET {
        for (text, st) in stmts.iter().zip(&parsed) {
            if matches!(
                st,
                Statement::CreateDatabase(..) | Statement::DropDatabase(_)
            ) {
                return ApiError::MethodNotAllowed(format!(
                    "deprecated use of '{}' in a read only context, please use a POST request instead",
                    text.trim()
                ))
                .into_response();
            }
        }
    }
    let mut results = Vec::with_capacity(parsed.len());
    for (i, st) in parsed.into_iter().enumerate() {
        let state = state.clone();
        let id = id.clone();
        let db = db.clone();
        let outcome =
            tokio::task::spawn_blocking(move || execute::execute(&state, &id, db.as_deref(), st))
                .await
                .unwrap_or_else(|e| Err(ApiError::Internal(e.to_string())));
        let mut r = match outcome {
            Ok(series) if series.is_empty() => json!({}),
            Ok(series) => json!({ "series": series }),
            Err(e @ (ApiError::AuthFailed | ApiError::AuthMissing)) => return e.into_response(),
            Err(ApiError::Internal(m)) => return ApiError::Internal(m).into_response(),
            Err(e) => json!({ "error": e.public_message() }),
        };
        r["statement_id"] = json!(i);
        results.push(r);
    }
    Json(json!({ "results": results })).into_response()
}
