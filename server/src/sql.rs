//! `POST /api/v1/sql` (also `GET` with `q`): ClickHouse SQL over the chDB
//! tables, so every written point can be read back.
//!
//! The statement comes from the `q` (or `query`) parameter, a form body, a
//! JSON body `{"query": "..."}` or the raw body. The output format from
//! `format` (`json`, `jsoneachrow`/`ndjson`, `csv`, `arrow`) or `Accept`;
//! default JSON. Non-admin callers may only read: the first keyword must be
//! SELECT, SHOW, DESCRIBE/DESC, EXPLAIN, WITH or EXISTS, only one statement is
//! allowed, and table functions that reach outside the engine are refused.

use axum::body::Bytes;
use axum::extract::{Extension, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};

use crate::auth::Identity;
use crate::error::ApiError;
use crate::params::Params;
use crate::pipeline::SqlFormat;
use crate::AppState;

/// Largest SQL text accepted.
const MAX_SQL_BYTES: usize = 1 << 20;

/// Table functions that read or write outside the engine's own tables.
const EXTERNAL_FUNCTIONS: &[&str] = &[
    "file",
    "url",
    "urlcluster",
    "s3",
    "s3cluster",
    "gcs",
    "azureblobstorage",
    "hdfs",
    "hdfscluster",
    "remote",
    "remotesecure",
    "cluster",
    "clusterallreplicas",
    "mysql",
    "postgresql",
    "sqlite",
    "mongodb",
    "redis",
    "odbc",
    "jdbc",
    "executable",
    "input",
    "iceberg",
    "deltalake",
    "hudi",
    "filesystem",
    "python",
    "arrowstream",
];

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

/// Why a statement is not read-only, if it is not.
pub(crate) fn read_only_violation(sql: &str) -> Option<String> {
    let words = words(sql);
    let first = words
        .first()
        .map(|w| w.to_ascii_uppercase())
        .unwrap_or_default();
    if !matches!(
        first.as_str(),
        "SELECT" | "SHOW" | "DESCRIBE" | "DESC" | "EXPLAIN" | "WITH" | "EXISTS"
    ) {
        return Some(format!(
            "only SELECT, SHOW, DESCRIBE, EXPLAIN and WITH statements are allowed (found {}): this user is read-only",
            if first.is_empty() { "nothing".to_string() } else { first }
        ));
    }
    if has_second_statement(sql) {
        return Some("only one statement per request is allowed for read-only users".into());
    }
    let lower: Vec<String> = words.iter().map(|w| w.to_ascii_lowercase()).collect();
    for pair in lower.windows(2) {
        if pair[0] == "into" && pair[1] == "outfile" {
            return Some("INTO OUTFILE is not allowed for read-only users".into());
        }
    }
    for (i, w) in lower.iter().enumerate() {
        if EXTERNAL_FUNCTIONS.contains(&w.as_str()) && lower.get(i + 1).is_some_and(|n| n == "(") {
            return Some(format!(
                "table function {w}() is not allowed for read-only users"
            ));
        }
    }
    None
}

/// Words and single punctuation characters, outside string literals and comments.
fn words(sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b: Vec<char> = sql.chars().collect();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == '-' && b.get(i + 1) == Some(&'-') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && b.get(i + 1) == Some(&'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == '*' && b[i + 1] == '/') {
                i += 1;
            }
            i += 2;
        } else if c == '\'' || c == '"' || c == '`' {
            // Quoted: a literal or identifier, never a keyword.
            i += 1;
            while i < b.len() && b[i] != c {
                if b[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push("?".to_string());
        } else if c.is_alphanumeric() || c == '_' {
            let s = i;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            out.push(b[s..i].iter().collect());
        } else if c.is_whitespace() {
            i += 1;
        } else {
            out.push(c.to_string());
            i += 1;
        }
    }
    out
}

fn has_second_statement(sql: &str) -> bool {
    let w = words(sql);
    match w.iter().position(|t| t == ";") {
        Some(p) => w[p + 1..].iter().any(|t| t != ";"),
        None => false,
    }
}

/// `POST|GET /api/v1/sql`.
pub async fn sql(
    State(state): State<AppState>,
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

async fn run(
    state: AppState,
    id: Identity,
    raw: Option<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let mut params = Params::parse(raw.as_deref().unwrap_or(""));
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
            params.extend(Params::parse(&String::from_utf8_lossy(&body)));
            text = params
                .get_nonempty("q")
                .or_else(|| params.get_nonempty("query"))
                .map(str::to_string);
            if text.is_none() {
                // `curl -d 'SELECT ...'` sends raw SQL labelled as a form.
                text = std::str::from_utf8(&body).ok().map(str::to_string);
            }
        } else if ct.starts_with("application/json") {
            let v: serde_json::Value = serde_json::from_slice(&body)
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
    let sql = text.filter(|t| !t.trim().is_empty()).ok_or_else(|| {
        ApiError::Query("missing SQL: send it as the body or the q parameter".into())
    })?;
    let format = choose_format(&params, &headers)?;
    if !id.can_write_sql() {
        if let Some(why) = read_only_violation(&sql) {
            return Err(ApiError::Forbidden(why));
        }
    }
    let pipeline = state.pipeline.clone();
    let started = std::time::Instant::now();
    let out = tokio::task::spawn_blocking(move || pipeline.sql(&sql, format))
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))??;
    metrics::histogram!("chingest_sql_query_seconds").record(started.elapsed().as_secs_f64());
    let mut resp = out.into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_table() {
        for ok in [
            "SELECT 1",
            "  select * from db.cpu",
            "-- comment\nSELECT 1;",
            "/* x */ WITH a AS (SELECT 1) SELECT * FROM a",
            "SHOW TABLES FROM db",
            "DESCRIBE TABLE db.cpu",
            "EXPLAIN SELECT 1",
            "SELECT 'drop table x; insert'",
            "SELECT file FROM t",
        ] {
            assert_eq!(read_only_violation(ok), None, "{ok}");
        }
        for bad in [
            "INSERT INTO t VALUES (1)",
            "DROP TABLE db.cpu",
            "SELECT 1; DROP TABLE x",
            "SELECT * FROM file('/etc/passwd')",
            "SELECT * FROM URL ('http://x')",
            "SELECT 1 INTO OUTFILE '/tmp/x'",
            "",
            "(SELECT 1)",
        ] {
            assert!(read_only_violation(bad).is_some(), "{bad}");
        }
    }

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
