//! The one error type of the HTTP layer and its two wire shapes.
//!
//! v1 (InfluxDB 1.x): `{"error": "<message>"}` plus the `X-Influxdb-Error`
//! header holding the message on one line. v2: `{"code": "invalid",
//! "message": "<message>"}`. 4xx messages say what is wrong; 5xx bodies hide
//! the detail, which is logged instead. Overload answers carry `Retry-After`
//! and are 503 in v1 (what v1 clients retry on) and 429 in v2.
//!
//! Bounded: the header carries at most [`MAX_HEADER_MESSAGE`] bytes (Python's
//! `http.client`, and so the InfluxDB Python clients, fail with `LineTooLong`
//! on a header line over 64 KiB instead of reading the answer), the body at
//! most [`MAX_BODY_MESSAGE`]; a longer message keeps its head and its tail
//! (where a partial write's `dropped=N` is) around a marker saying how much
//! was cut.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

/// Most bytes of the message in `X-Influxdb-Error`.
pub const MAX_HEADER_MESSAGE: usize = 1024;
/// Most bytes of the message in the JSON body.
pub const MAX_BODY_MESSAGE: usize = 64 * 1024;

/// `message` in at most `max` bytes: as is when it fits, else its head and
/// its last 64 bytes around ` ... [<n> bytes cut] ... ` (ASCII, as headers
/// should be), cut on char boundaries.
pub fn bounded(message: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if message.len() <= max {
        return message.into();
    }
    let floor = |i: usize| {
        (0..=i)
            .rev()
            .find(|&j| message.is_char_boundary(j))
            .unwrap_or(0)
    };
    let ceil = |i: usize| {
        (i..=message.len())
            .find(|&j| message.is_char_boundary(j))
            .unwrap_or(message.len())
    };
    // The marker is 20 bytes and the number's digits (at most 20).
    let tail_start = ceil(message.len() - 64.min(max / 4));
    let room = max.saturating_sub(message.len() - tail_start + 42);
    let head_end = floor(room);
    let cut = tail_start - head_end;
    format!(
        "{} ... [{cut} bytes cut] ... {}",
        &message[..head_end],
        &message[tail_start..]
    )
    .into()
}

/// Which API's error shape a response uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// InfluxDB 1.x (`/write`, `/query`, everything else).
    V1,
    /// InfluxDB 2.x (`/api/v2/...`).
    V2,
}

impl Api {
    /// The shape for a request path.
    pub fn for_path(path: &str) -> Api {
        if path.starts_with("/api/v2/") {
            Api::V2
        } else {
            Api::V1
        }
    }
}

/// Everything a request can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// Used if a write or query names no database. 400.
    #[error("database is required")]
    DatabaseRequired,
    /// Used if the database does not exist (and auto-create is off). 404.
    #[error("database not found: \"{0}\"")]
    DatabaseNotFound(String),
    /// Used if `rp` names a policy the database does not have (or its default was dropped). 404.
    #[error("retention policy not found: \"{0}\"")]
    RetentionPolicyNotFound(String),
    /// Used if `precision` is not one this API accepts. 400.
    #[error("invalid precision \"{given}\" (expected one of {expected})")]
    InvalidPrecision {
        /// What the client sent.
        given: String,
        /// What the API accepts.
        expected: &'static str,
    },
    /// Used if `consistency` is not `any|one|quorum|all`. 400.
    #[error("invalid consistency level")]
    InvalidConsistency,
    /// Used for unparsable input: every line failed, a malformed msgpack body,
    /// or a partial write (the good lines were written). 400.
    #[error("{0}")]
    BadRequest(String),
    /// Used if schema limits (series, measurements, tag values) rejected points. 422.
    #[error("{0}")]
    Unprocessable(String),
    /// Used if the body (raw or decompressed) exceeds `max_body_bytes`. 413.
    #[error("request entity too large: the body exceeds the {limit} byte limit")]
    TooLarge {
        /// The configured cap.
        limit: u64,
    },
    /// Used if the `Content-Encoding` is not identity or gzip, or the gzip
    /// stream is corrupt. 415 / 400.
    #[error("{0}")]
    UnsupportedEncoding(String),
    /// Used if auth is on and no credentials came with the request. 401.
    #[error("unable to parse authentication credentials")]
    AuthMissing,
    /// Used if the credentials are wrong (unknown user, bad password or token). 401.
    #[error("authorization failed")]
    AuthFailed,
    /// Used if the user lacks the permission. 403.
    #[error("{0}")]
    Forbidden(String),
    /// Used if in-flight budgets or WAL/flush lag are exhausted; the client
    /// should retry after `retry_after` seconds. 503 (v1) / 429 (v2).
    #[error("server overloaded: {reason}; retry later, or raise [limits] / add flush capacity")]
    Overloaded {
        /// Which budget ran out.
        reason: String,
        /// Seconds for `Retry-After`.
        retry_after: u64,
    },
    /// Used while shutting down or after the pipeline failed. 503.
    #[error("{0}")]
    Unavailable(String),
    /// Used if the client sent its body too slowly. 408.
    #[error("timed out reading the request body")]
    BodyTimeout,
    /// Used if the request exceeded `request_timeout_secs`. 503 + Retry-After.
    #[error("request timed out after {0} s")]
    Timeout(u64),
    /// Used if a query does not parse or the engine rejected SQL. 400.
    #[error("{0}")]
    Query(String),
    /// Used if no route matches. 404.
    #[error("not found")]
    NotFound,
    /// Used if a statement that changes state comes with a method that must
    /// not change state (`CREATE`/`DROP` via `GET /query`). 405, `Allow: POST`.
    #[error("{0}")]
    MethodNotAllowed(String),
    /// Used if something broke inside the server. 500; the detail is logged, not sent.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ApiError {
    /// The status for this error in `api`'s conventions.
    pub fn status(&self, api: Api) -> StatusCode {
        use ApiError::*;
        match self {
            DatabaseRequired
            | InvalidPrecision { .. }
            | InvalidConsistency
            | BadRequest(_)
            | Query(_) => StatusCode::BAD_REQUEST,
            DatabaseNotFound(_) | RetentionPolicyNotFound(_) | NotFound => StatusCode::NOT_FOUND,
            MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            UnsupportedEncoding(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            AuthMissing | AuthFailed => StatusCode::UNAUTHORIZED,
            Forbidden(_) => StatusCode::FORBIDDEN,
            Overloaded { .. } => match api {
                Api::V1 => StatusCode::SERVICE_UNAVAILABLE,
                Api::V2 => StatusCode::TOO_MANY_REQUESTS,
            },
            Unavailable(_) | Timeout(_) => StatusCode::SERVICE_UNAVAILABLE,
            BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The v2 `code` for this error.
    fn v2_code(&self, status: StatusCode) -> &'static str {
        match status.as_u16() {
            400 | 405 | 408 | 415 => "invalid",
            401 => "unauthorized",
            403 => "forbidden",
            404 => "not found",
            413 => "request too large",
            422 => "unprocessable entity",
            429 => "too many requests",
            503 => "unavailable",
            _ => "internal error",
        }
    }

    /// The message a client sees: the error's text, except for 5xx internals.
    pub fn public_message(&self) -> String {
        match self {
            ApiError::Internal(_) => "internal error".to_string(),
            other => other.to_string(),
        }
    }

    /// Renders in `api`'s shape.
    pub fn into_response_for(self, api: Api) -> Response {
        let status = self.status(api);
        if status.is_server_error() && !matches!(self, ApiError::Overloaded { .. }) {
            tracing::error!(status = status.as_u16(), "request failed: {self}");
        }
        let full = self.public_message();
        let message = bounded(&full, MAX_BODY_MESSAGE);
        let mut resp = match api {
            Api::V1 => (status, Json(serde_json::json!({ "error": message }))).into_response(),
            Api::V2 => (
                status,
                Json(serde_json::json!({ "code": self.v2_code(status), "message": message })),
            )
                .into_response(),
        };
        let h = resp.headers_mut();
        // The header must be one line: multi-line partial-write messages are joined.
        let one_line: String = message
            .chars()
            .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
            .filter(|c| !c.is_control())
            .collect();
        if let Ok(v) = HeaderValue::from_str(&bounded(&one_line, MAX_HEADER_MESSAGE)) {
            h.insert("x-influxdb-error", v);
        }
        let retry = match &self {
            ApiError::Overloaded { retry_after, .. } => Some(*retry_after),
            ApiError::Timeout(_) | ApiError::Unavailable(_) => Some(1),
            _ => None,
        };
        if let Some(secs) = retry {
            h.insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
        }
        if status == StatusCode::METHOD_NOT_ALLOWED {
            h.insert(header::ALLOW, HeaderValue::from_static("POST"));
        }
        if status == StatusCode::UNAUTHORIZED && api == Api::V1 {
            h.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"InfluxDB\""),
            );
        }
        resp
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        self.into_response_for(Api::V1)
    }
}

impl From<storage::StorageError> for ApiError {
    fn from(e: storage::StorageError) -> Self {
        use storage::StorageError as S;
        match e {
            S::Write(w) if !w.is_client_error() => ApiError::Internal(w.to_string()),
            e @ (S::Write(_)
            | S::InvalidName(_)
            | S::RetentionConflict { .. }
            | S::EntryTooLarge(_)) => ApiError::BadRequest(e.to_string()),
            S::DatabaseNotFound { db } => ApiError::DatabaseNotFound(db),
            S::QueueFull => ApiError::Overloaded {
                reason: "the WAL queue is full".into(),
                retry_after: 1,
            },
            e @ (S::ShuttingDown
            | S::WalFailed(_)
            | S::DiskFull(_)
            | S::NotFlushed { .. }
            | S::NotDeliveredByNodes { .. }
            | S::DropNotAppliedByNodes { .. }) => ApiError::Unavailable(e.to_string()),
            e @ (S::DropUnfinished { .. } | S::NotOnCluster | S::ForgetSelf { .. }) => {
                ApiError::Query(e.to_string())
            }
            S::Engine(e) => match e.engine_message() {
                Some(m) => ApiError::Query(m.to_string()),
                None => ApiError::Internal(e.to_string()),
            },
            S::TagValues(e) => e.into(),
            // A read over its `[sql] max_result_rows` is the query's fault; anything else
            // a shard's (down, refusing): try again later.
            e @ S::Cluster(storage::ClusterError::TooManyRows { .. }) => {
                ApiError::Query(e.to_string())
            }
            e @ S::Cluster(_) => ApiError::Unavailable(e.to_string()),
            e => ApiError::Internal(e.to_string()),
        }
    }
}

impl From<storage::SqlError> for ApiError {
    /// A refused statement is 403, a bad one or one over its limits 400 (the
    /// message names the limit and its `[sql]` key), a busy sandbox 503 with
    /// Retry-After.
    fn from(e: storage::SqlError) -> Self {
        use storage::SqlError as E;
        match e {
            e @ E::Busy { .. } => ApiError::Overloaded {
                reason: e.to_string(),
                retry_after: 1,
            },
            E::Forbidden(m) => ApiError::Forbidden(m),
            E::Invalid(m) | E::LimitExceeded(m) => ApiError::Query(m),
            e @ E::Cancelled => ApiError::Unavailable(e.to_string()),
            E::Unavailable(m) => ApiError::Unavailable(m),
            e => ApiError::Internal(e.to_string()),
        }
    }
}

impl From<storage::InfluxqlError> for ApiError {
    /// What InfluxDB answers in the statement's result (a bad or unsupported
    /// statement, a missing database) is `Query` (rendered there by `/query`); the
    /// sandbox's refusals map as for `/api/v1/sql`; a misread engine answer is a
    /// bug (500).
    fn from(e: storage::InfluxqlError) -> Self {
        use storage::InfluxqlError as E;
        match e {
            E::Sql(e) => e.into(),
            E::Storage(e) => (*e).into(),
            e @ E::EngineAnswer(_) => ApiError::Internal(e.to_string()),
            e => ApiError::Query(e.to_string()),
        }
    }
}

/// An [`ApiError`] rendered in the v2 shape.
#[derive(Debug)]
pub struct V2Error(pub ApiError);

impl From<ApiError> for V2Error {
    fn from(e: ApiError) -> Self {
        V2Error(e)
    }
}

impl IntoResponse for V2Error {
    fn into_response(self) -> Response {
        self.0.into_response_for(Api::V2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn render(
        e: ApiError,
        api: Api,
    ) -> (StatusCode, axum::http::HeaderMap, serde_json::Value) {
        let resp = e.into_response_for(api);
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, headers, serde_json::from_slice(&body).unwrap())
    }

    #[tokio::test]
    async fn v1_shape_has_error_key_and_one_line_header() {
        let (s, h, b) = render(ApiError::BadRequest("line 1\nline 2".into()), Api::V1).await;
        assert_eq!(s, 400);
        assert_eq!(b, serde_json::json!({"error": "line 1\nline 2"}));
        assert_eq!(h["x-influxdb-error"], "line 1 line 2");
        let (s, _, b) = render(ApiError::DatabaseNotFound("x".into()), Api::V1).await;
        assert_eq!(s, 404);
        assert_eq!(b["error"], "database not found: \"x\"");
    }

    #[tokio::test]
    async fn v2_shape_has_code_and_message() {
        let (s, _, b) = render(ApiError::TooLarge { limit: 10 }, Api::V2).await;
        assert_eq!(s, 413);
        assert_eq!(b["code"], "request too large");
        let (s, _, b) = render(ApiError::DatabaseRequired, Api::V2).await;
        assert_eq!(s, 400);
        assert_eq!(
            b,
            serde_json::json!({"code": "invalid", "message": "database is required"})
        );
    }

    #[tokio::test]
    async fn overload_is_503_in_v1_and_429_in_v2_with_retry_after() {
        let e = || ApiError::Overloaded {
            reason: "in-flight bytes".into(),
            retry_after: 3,
        };
        let (s, h, _) = render(e(), Api::V1).await;
        assert_eq!((s.as_u16(), h["retry-after"].to_str().unwrap()), (503, "3"));
        let (s, h, b) = render(e(), Api::V2).await;
        assert_eq!((s.as_u16(), h["retry-after"].to_str().unwrap()), (429, "3"));
        assert_eq!(b["code"], "too many requests");
    }

    #[tokio::test]
    async fn long_messages_are_bounded_in_header_and_body() {
        // The 70 KB bad line, echoed by the parse error.
        let line = format!("m v={}", "x".repeat(70_000));
        let msg = format!("partial write: unable to parse '{line}': invalid boolean dropped=0");
        let (s, h, b) = render(ApiError::BadRequest(msg.clone()), Api::V1).await;
        assert_eq!(s, 400);
        let header = h["x-influxdb-error"].to_str().unwrap();
        assert!(header.len() <= MAX_HEADER_MESSAGE, "{}", header.len());
        assert!(
            header.starts_with("partial write: unable to parse 'm v=xxx"),
            "{header}"
        );
        assert!(header.ends_with("invalid boolean dropped=0"), "{header}");
        assert!(header.contains(" bytes cut] ... "), "{header}");
        let body = b["error"].as_str().unwrap();
        assert!(body.len() <= MAX_BODY_MESSAGE, "{}", body.len());
        assert!(body.ends_with("dropped=0"), "{body}");
        let (_, _, b) = render(ApiError::BadRequest(msg), Api::V2).await;
        assert!(b["message"].as_str().unwrap().len() <= MAX_BODY_MESSAGE);
    }

    #[test]
    fn bounded_cuts_on_char_boundaries_and_keeps_short_messages() {
        assert_eq!(bounded("short", 10), "short");
        for n in [100, 1000, 5000] {
            let m = "é".repeat(n) + " dropped=3";
            for max in [64, 100, 1024] {
                let b = bounded(&m, max);
                assert!(b.len() <= max, "{n} {max}: {}", b.len());
                if m.len() > max {
                    assert!(b.ends_with(" dropped=3"), "{b}");
                    let cut: usize = b
                        .split("... [")
                        .nth(1)
                        .and_then(|r| r.split(' ').next())
                        .and_then(|x| x.parse().ok())
                        .unwrap();
                    let kept = b.len() - format!(" ... [{cut} bytes cut] ... ").len();
                    assert_eq!(kept + cut, m.len(), "the marker says exactly what was cut");
                }
            }
        }
    }

    #[tokio::test]
    async fn internal_detail_is_hidden() {
        let (s, h, b) = render(ApiError::Internal("rocksdb: disk on fire".into()), Api::V1).await;
        assert_eq!(s, 500);
        assert_eq!(b["error"], "internal error");
        assert_eq!(h["x-influxdb-error"], "internal error");
    }
}
