//! `POST /api/v1/sql` (also `GET` with `q`): ClickHouse SQL over the chDB
//! tables, so every written point can be read back.
//!
//! The statement comes from the `q` (or `query`) parameter, a form body, a
//! JSON body `{"query": "..."}` or the raw body. The output format from
//! `format` (`json`, `jsoneachrow`/`ndjson`, `csv`, `arrow`) or `Accept`;
//! default JSON.
//!
//! This module does not look inside the statement. Storage runs it in the
//! engine's SQL sandbox (`engine::sandbox`, docs/security.md): the engine
//! classifies it, non-admins run it read-only (`readonly=1`) under the engine
//! role of the databases they may read, with time, size and memory limits the
//! statement cannot lift, on connections the flusher never uses. Here: who is
//! asking ([`sql_access`]), the answer streamed as the engine produces it,
//! cancellation when the client goes away, 503 + Retry-After at once when
//! `[sql] max_concurrent_queries` statements already run.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Extension, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::sync::mpsc;

use crate::auth::Identity;
use crate::error::ApiError;
use crate::params::Params;
use crate::{AppState, Store};
use storage::{ReadScope, SqlAccess, SqlCancel, SqlError, SqlFormat, SqlRequest, SqlSummary};

/// Largest SQL text accepted.
const MAX_SQL_BYTES: usize = 1 << 20;

/// Blocks of output buffered between the engine and a slow client.
const CHANNEL_BLOCKS: usize = 4;

/// Picks the output format.
pub(crate) fn choose_format(params: &Params, headers: &HeaderMap) -> Result<SqlFormat, ApiError> {
    if let Some(f) = params.get_nonempty("format") {
        return match f.to_ascii_lowercase().as_str() {
            "json" => Ok(SqlFormat::Json),
            "jsoneachrow" | "ndjson" | "jsonl" => Ok(SqlFormat::JsonEachRow),
            "csv" | "csvwithnames" => Ok(SqlFormat::Csv),
            "arrow" | "arrowstream" | "arrow_ipc" => Ok(SqlFormat::Arrow),
            _ => Err(ApiError::Query(format!(
                "unknown format {f:?}: use json, jsoneachrow, csv or arrow"
            ))),
        };
    }
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    for part in accept.split(',') {
        let mime = part.split(';').next().unwrap_or("").trim();
        match mime {
            "application/json" => return Ok(SqlFormat::Json),
            "application/x-ndjson" | "application/jsonl" => return Ok(SqlFormat::JsonEachRow),
            "text/csv" => return Ok(SqlFormat::Csv),
            "application/vnd.apache.arrow.stream" | "application/vnd.apache.arrow.file" => {
                return Ok(SqlFormat::Arrow)
            }
            _ => {}
        }
    }
    Ok(SqlFormat::Json)
}

/// What `id` may do in SQL: authenticated admins anything (within the
/// limits); everyone else reads the databases they may read (all of them
/// when auth is off), read-only.
pub fn sql_access(id: &Identity) -> SqlAccess {
    match id {
        Identity::User(u) if u.admin => SqlAccess::Admin,
        // Only `/query` lets it in, after the query's first statement created the first admin.
        Identity::Bootstrap => SqlAccess::Admin,
        Identity::User(u) => SqlAccess::Read(ReadScope::from_list(u.read())),
        Identity::Anonymous => SqlAccess::Read(ReadScope::All),
    }
}

/// The access chingest's own InfluxQL statements (`/query`, Prometheus remote read) run
/// with: the caller's [`sql_access`], unless the engine has no role for its read scope.
/// The engine's roles are fixed when it boots, so a user whose grants changed through
/// InfluxQL since has none until the next start; such a statement then runs with the
/// reader role of every database, which is safe because the caller's READ on each database
/// the statement reads was checked before (`query::authorize`, the remote-read handler) and
/// the planner reads nothing else. Raw SQL has no such check: `/api/v1/sql` refuses that
/// user until the restart (`engine::sandbox`: "no engine role").
pub fn influxql_access<S: Store>(store: &S, id: &Identity) -> SqlAccess {
    match sql_access(id) {
        SqlAccess::Read(scope) if !store.has_read_role(&scope) => SqlAccess::Read(ReadScope::All),
        access => access,
    }
}

/// `POST|GET /api/v1/sql`.
pub async fn sql<S: Store>(
    State(state): State<AppState<S>>,
    Extension(id): Extension<Identity>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match run(state, id, raw, headers, body).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

/// The statement text from the query string or the body.
fn statement(params: &mut Params, headers: &HeaderMap, body: &Bytes) -> Result<String, ApiError> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if body.len() > MAX_SQL_BYTES {
        return Err(ApiError::TooLarge {
            limit: MAX_SQL_BYTES as u64,
        });
    }
    let mut text = params
        .get_nonempty("q")
        .or_else(|| params.get_nonempty("query"))
        .map(str::to_string);
    if text.is_none() && !body.is_empty() {
        if ct.starts_with("application/x-www-form-urlencoded") {
            params.extend(Params::parse(&String::from_utf8_lossy(body)));
            text = params
                .get_nonempty("q")
                .or_else(|| params.get_nonempty("query"))
                .map(str::to_string);
            if text.is_none() {
                // `curl -d 'SELECT ...'` sends raw SQL labelled as a form.
                text = std::str::from_utf8(body).ok().map(str::to_string);
            }
        } else if ct.starts_with("application/json") {
            let v: serde_json::Value = serde_json::from_slice(body)
                .map_err(|e| ApiError::Query(format!("invalid JSON body: {e}")))?;
            text = v.get("query").and_then(|q| q.as_str()).map(str::to_string);
            if let Some(f) = v.get("format").and_then(|f| f.as_str()) {
                params.extend(Params::parse(&format!("format={f}")));
            }
        } else {
            text = Some(
                String::from_utf8(body.to_vec())
                    .map_err(|_| ApiError::Query("the SQL body is not UTF-8".into()))?,
            );
        }
    }
    text.filter(|t| !t.trim().is_empty()).ok_or_else(|| {
        ApiError::Query("missing SQL: send it as the body or the q parameter".into())
    })
}

/// From the blocking statement to the response body.
enum Msg {
    Block(Bytes),
    End(Result<SqlSummary, SqlError>),
}

async fn run<S: Store>(
    state: AppState<S>,
    id: Identity,
    raw: Option<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let mut params = Params::parse(raw.as_deref().unwrap_or(""));
    let sql = statement(&mut params, &headers, &body)?;
    let format = choose_format(&params, &headers)?;
    let db = params.get_nonempty("db").map(str::to_string);
    let access = sql_access(&id);
    let cancel = SqlCancel::new();
    // Until the response is handed over, dropping this future (client gone,
    // request deadline) cancels the statement.
    let mut guard = CancelOnDrop(Some(cancel.clone()));
    let (tx, mut rx) = mpsc::channel::<Msg>(CHANNEL_BLOCKS);
    // The engine stops the statement at max_execution_secs; a client that
    // reads too slowly to take the answer in that time is cut off as well.
    let deadline = Instant::now() + Duration::from_secs(state.config.sql.max_execution_secs + 5);
    let store = state.store.clone();
    let user = id.name().to_string();
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let req = SqlRequest {
            sql: &sql,
            format,
            access,
            db: db.as_deref(),
            cancel: cancel.clone(),
        };
        let mut sink = |block: &[u8]| {
            send_blocking(&tx, Msg::Block(Bytes::copy_from_slice(block)), deadline) || {
                cancel.cancel();
                false
            }
        };
        let outcome = store.sql(req, &mut sink);
        metrics::histogram!("chingest_sql_query_seconds").record(started.elapsed().as_secs_f64());
        if let Err(e) = &outcome {
            if !matches!(e, SqlError::Busy { .. }) {
                tracing::debug!(user, "SQL statement failed: {e}");
            }
        }
        send_blocking(&tx, Msg::End(outcome), deadline);
    });
    let first = rx.recv().await;
    let retry_after = state.config.limits.retry_after_secs;
    let response = match first {
        Some(Msg::End(Ok(_))) => {
            guard.disarm();
            StatusCode::OK.into_response()
        }
        Some(Msg::End(Err(e))) => {
            guard.disarm();
            return Err(sql_error(e, retry_after));
        }
        Some(Msg::Block(b)) => Body::new(SqlBody {
            first: Some(b),
            rx,
            guard: CancelOnDrop(guard.0.take()),
            done: false,
        })
        .into_response(),
        None => {
            return Err(ApiError::Internal(
                "the SQL task ended without an answer".into(),
            ))
        }
    };
    let mut response = response;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    Ok(response)
}

/// The HTTP answer for a statement that failed before any output.
fn sql_error(e: SqlError, retry_after: u64) -> ApiError {
    match e {
        SqlError::Busy { .. } => ApiError::Overloaded {
            reason: e.to_string(),
            retry_after,
        },
        other => other.into(),
    }
}

/// Sends `msg`, waiting while the channel is full (a slow client) but not
/// past `deadline`; false if the client is gone or too slow.
fn send_blocking(tx: &mpsc::Sender<Msg>, mut msg: Msg, deadline: Instant) -> bool {
    loop {
        match tx.try_send(msg) {
            Ok(()) => return true,
            Err(mpsc::error::TrySendError::Closed(_)) => return false,
            Err(mpsc::error::TrySendError::Full(m)) => {
                if Instant::now() >= deadline {
                    return false;
                }
                msg = m;
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }
}

/// Cancels the statement when dropped while armed.
struct CancelOnDrop(Option<SqlCancel>);

impl CancelOnDrop {
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            c.cancel();
        }
    }
}

/// The streamed answer: blocks as the engine produces them. An error after
/// the first block ends the response abnormally (the connection is closed
/// without the final chunk), so a client never mistakes a cut answer for a
/// whole one. Dropped early (the client went away), it cancels the statement.
struct SqlBody {
    first: Option<Bytes>,
    rx: mpsc::Receiver<Msg>,
    guard: CancelOnDrop,
    done: bool,
}

impl axum::body::HttpBody for SqlBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        if let Some(b) = self.first.take() {
            return Poll::Ready(Some(Ok(hyper::body::Frame::data(b))));
        }
        if self.done {
            return Poll::Ready(None);
        }
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(Msg::Block(b))) => Poll::Ready(Some(Ok(hyper::body::Frame::data(b)))),
            Poll::Ready(Some(Msg::End(Ok(_)))) => {
                self.done = true;
                self.guard.disarm();
                Poll::Ready(None)
            }
            Poll::Ready(Some(Msg::End(Err(e)))) => {
                self.done = true;
                self.guard.disarm();
                tracing::info!("SQL answer cut short: {e}");
                Poll::Ready(Some(Err(std::io::Error::other(e.to_string()))))
            }
            Poll::Ready(None) => {
                self.done = true;
                Poll::Ready(Some(Err(std::io::Error::other(
                    "the SQL task ended without finishing the answer",
                ))))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.first.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_from_param_or_accept() {
        let h = |v: &str| {
            let mut m = HeaderMap::new();
            m.insert("accept", v.parse().unwrap());
            m
        };
        let none = Params::default();
        assert_eq!(
            choose_format(&none, &HeaderMap::new()).unwrap(),
            SqlFormat::Json
        );
        assert_eq!(
            choose_format(&none, &h("text/csv")).unwrap(),
            SqlFormat::Csv
        );
        assert_eq!(
            choose_format(&none, &h("*/*, application/vnd.apache.arrow.stream")).unwrap(),
            SqlFormat::Arrow
        );
        assert_eq!(
            choose_format(&Params::parse("format=JSONEachRow"), &h("text/csv")).unwrap(),
            SqlFormat::JsonEachRow
        );
        assert!(choose_format(&Params::parse("format=xml"), &HeaderMap::new()).is_err());
    }
}
