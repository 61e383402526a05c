//! `POST /write` (InfluxDB v1) and `POST /api/v2/write` (InfluxDB v2).
//!
//! Order of checks: parameters (cheap 400s first), permission, database,
//! back-pressure, then the body is streamed under the size cap and the
//! in-flight byte budget, decompressed and parsed on the CPU pool, submitted
//! to the WAL, and answered 204 only once the WAL commit is durable.

use std::io::Read;
use std::time::Instant;

use axum::body::{Body, HttpBody};
use axum::extract::{Extension, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;

use crate::auth::Identity;
use crate::error::{Api, ApiError};
use crate::limit::BudgetPermit;
use crate::params::Params;
use crate::{AppState, Store};
use ingest::{Format, Precision, WriteOutcome};
use storage::{StorageError, WriteRequest};

/// `POST /write`.
pub async fn write_v1<S: Store>(
    State(state): State<AppState<S>>,
    Extension(id): Extension<Identity>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    respond(&state, &id, Api::V1, Wire::Influx, query, &headers, body).await
}

/// `POST /api/v1/prom/write` (Prometheus remote write, as InfluxDB 1.8 maps it: `prom.rs`).
pub async fn write_prom<S: Store>(
    State(state): State<AppState<S>>,
    Extension(id): Extension<Identity>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    respond(
        &state,
        &id,
        Api::V1,
        Wire::PromRemote,
        query,
        &headers,
        body,
    )
    .await
}

/// `POST /api/v2/write`.
pub async fn write_v2<S: Store>(
    State(state): State<AppState<S>>,
    Extension(id): Extension<Identity>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    respond(&state, &id, Api::V2, Wire::Influx, query, &headers, body).await
}

/// What a write body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    /// Line protocol or msgpack (by `Content-Type`), maybe gzipped.
    Influx,
    /// A Prometheus remote write request (snappy-compressed protobuf).
    PromRemote,
}

/// Runs a write and answers it in `api`'s shape: exactly 204, or the error.
async fn respond<S: Store>(
    state: &AppState<S>,
    id: &Identity,
    api: Api,
    wire: Wire,
    query: Option<String>,
    headers: &HeaderMap,
    body: Body,
) -> Response {
    let params = Params::parse(query.as_deref().unwrap_or(""));
    let mut body = Some(body);
    match write(state, id, api, wire, &params, headers, &mut body).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => {
            record_failure(&e, api);
            let mut response = e.into_response_for(api);
            if let Some(unread) = body.take().filter(|b| !b.is_end_stream()) {
                // The client may still be sending: the rest is read and dropped
                // in the background so it reads this answer instead of a broken
                // pipe, and the connection closes after it, so the client's next
                // request does not queue behind the drain of bytes it sent in vain.
                discard_body(state, unread);
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            response
        }
    }
}

fn record_failure(e: &ApiError, api: Api) {
    let reason = match e {
        ApiError::Overloaded { .. } => "overloaded",
        ApiError::TooLarge { .. } => "too_large",
        ApiError::BadRequest(_) => "invalid",
        ApiError::Unprocessable(_) => "limit",
        ApiError::AuthFailed | ApiError::AuthMissing | ApiError::Forbidden(_) => "auth",
        ApiError::DatabaseNotFound(_) | ApiError::RetentionPolicyNotFound(_) => "not_found",
        ApiError::BodyTimeout | ApiError::Timeout(_) => "timeout",
        _ if e.status(api).is_server_error() => "server_error",
        _ => "bad_request",
    };
    metrics::counter!("chingest_write_requests_failed_total", "reason" => reason).increment(1);
}

/// Parameters after validation.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct WriteParams {
    pub(crate) db: String,
    /// The retention policy named (`None`: the database's default).
    pub(crate) rp: Option<String>,
    pub(crate) precision: Precision,
}

/// Validates v1 parameters: `db`, `rp`, `precision`, `consistency`.
pub(crate) fn v1_params(p: &Params) -> Result<WriteParams, ApiError> {
    let db = p.get_nonempty("db").ok_or(ApiError::DatabaseRequired)?;
    let rp = p.get_nonempty("rp").map(str::to_string);
    let precision = match p.get_nonempty("precision") {
        None => Precision::Nanoseconds,
        Some(s) => Precision::from_v1(s).ok_or_else(|| ApiError::InvalidPrecision {
            given: s.to_string(),
            expected: "ns, u, us, ms, s, m, h",
        })?,
    };
    if let Some(c) = p.get_nonempty("consistency") {
        if !matches!(c, "any" | "one" | "quorum" | "all") {
            return Err(ApiError::InvalidConsistency);
        }
    }
    Ok(WriteParams {
        db: db.to_string(),
        rp,
        precision,
    })
}

/// Validates v2 parameters: `bucket` (`db` or `db/rp`), `org` (accepted), `precision`.
pub(crate) fn v2_params(p: &Params) -> Result<WriteParams, ApiError> {
    let bucket = p.get_nonempty("bucket").ok_or(ApiError::DatabaseRequired)?;
    let (db, rp) = match bucket.split_once('/') {
        Some((db, rp)) => (db, Some(rp).filter(|r| !r.is_empty())),
        None => (bucket, None),
    };
    if db.is_empty() {
        return Err(ApiError::DatabaseRequired);
    }
    let precision = match p.get_nonempty("precision") {
        None => Precision::Nanoseconds,
        Some(s) => Precision::from_v2(s).ok_or_else(|| ApiError::InvalidPrecision {
            given: s.to_string(),
            expected: "ns, us, ms, s",
        })?,
    };
    Ok(WriteParams {
        db: db.to_string(),
        rp: rp.map(str::to_string),
        precision,
    })
}

/// The body format for a `Content-Type` (line protocol unless a msgpack form).
pub(crate) fn format_for(headers: &HeaderMap) -> Format {
    Format::from_content_type(
        headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
    )
}

/// Whether the body is gzip (`Content-Encoding`, case-insensitive); other
/// encodings but identity are refused.
pub(crate) fn is_gzip(headers: &HeaderMap) -> Result<bool, ApiError> {
    let Some(v) = headers.get(header::CONTENT_ENCODING) else {
        return Ok(false);
    };
    let v = v.to_str().unwrap_or("").trim();
    if v.eq_ignore_ascii_case("gzip") || v.eq_ignore_ascii_case("x-gzip") {
        Ok(true)
    } else if v.is_empty() || v.eq_ignore_ascii_case("identity") {
        Ok(false)
    } else {
        Err(ApiError::UnsupportedEncoding(format!(
            "unsupported Content-Encoding {v:?}: send identity or gzip"
        )))
    }
}

/// Reads and drops the rest of a refused request's body in the background, so
/// the client (still sending) gets to read the refusal instead of a connection
/// reset. Bounded by the body size cap and the body read timeout; nothing is
/// buffered.
fn discard_body<S: Store>(state: &AppState<S>, body: Body) {
    let max = state.config.server.max_body_bytes;
    let timeout = std::time::Duration::from_secs(state.config.server.body_read_timeout_secs);
    tokio::spawn(async move {
        let mut body = body;
        let mut seen = 0u64;
        let _ = tokio::time::timeout(timeout, async {
            while let Some(Ok(frame)) = body.frame().await {
                seen += frame.data_ref().map_or(0, |d| d.len() as u64);
                if seen > max {
                    break;
                }
            }
        })
        .await;
    });
}

async fn write<S: Store>(
    state: &AppState<S>,
    id: &Identity,
    api: Api,
    wire: Wire,
    params: &Params,
    headers: &HeaderMap,
    body: &mut Option<Body>,
) -> Result<(), ApiError> {
    let started = Instant::now();
    let WriteParams { db, rp, precision } = match (api, wire) {
        (_, Wire::PromRemote) => WriteParams {
            precision: Precision::Milliseconds,
            ..v1_params(params)?
        },
        (Api::V1, _) => v1_params(params)?,
        (Api::V2, _) => v2_params(params)?,
    };
    if !id.can_write(&db) {
        return Err(ApiError::Forbidden(format!(
            "{:?} user is not authorized to write to database {db:?}",
            id.name()
        )));
    }
    let prom = wire == Wire::PromRemote;
    let (gzip, format) = if prom {
        (false, Format::MsgpackColumnar)
    } else {
        (is_gzip(headers)?, format_for(headers))
    };
    let store = state.store.clone();
    if !store.database_exists(&db) {
        if state.config.server.auto_create_databases {
            let p = store.clone();
            let name = db.clone();
            tokio::task::spawn_blocking(move || p.create_database(&name, None))
                .await
                .map_err(|e| ApiError::Internal(e.to_string()))??;
        } else {
            return Err(ApiError::DatabaseNotFound(db));
        }
    }
    // The policy's storage database (the database itself unless it has policies). One
    // this node does not know may be another cluster node's, newer than its last sync.
    let db = match state.policies.resolve(&db, rp.as_deref()) {
        Ok(storage) => storage,
        Err(_) if store.cluster_policies().is_some() => {
            let (p, policies) = (store.clone(), state.policies.clone());
            tokio::task::spawn_blocking(move || policies.sync(p.as_ref()))
                .await
                .map_err(|e| ApiError::Internal(e.to_string()))?;
            state
                .policies
                .resolve(&db, rp.as_deref())
                .map_err(ApiError::RetentionPolicyNotFound)?
        }
        Err(missing) => return Err(ApiError::RetentionPolicyNotFound(missing)),
    };
    // Refuse before reading a byte when the storage side is behind or the
    // parse threads are saturated.
    state.limits.check_storage(&store.stats())?;
    let cpu_ticket = state.limits.check_cpu()?;

    let max = state.config.server.max_body_bytes;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max) {
        return Err(ApiError::TooLarge { limit: max });
    }
    // The budget grows as bytes arrive: a declared length reserves nothing (a
    // slow client must not hold budget for bytes it has not sent).
    let mut permit = state.limits.bytes_permit(0)?;
    let raw = read_body(state, body, max, declared, &mut permit).await?;
    let read_done = Instant::now();
    metrics::histogram!("chingest_http_body_read_seconds")
        .record((read_done - started).as_secs_f64());
    metrics::counter!("chingest_http_body_bytes_total", "encoding" => if gzip { "gzip" } else { "identity" })
        .increment(raw.len() as u64);

    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    // CPU work (gunzip, parse, encode) on the blocking pool, bounded to the cores.
    let cpu = state.limits.cpu_permit(cpu_ticket).await?;
    let limits = state.limits.clone();
    let db_for_cpu = db.clone();
    let prepared = tokio::task::spawn_blocking(move || -> Result<_, ApiError> {
        let _cpu = cpu;
        let decompressed;
        let body: &[u8] = if prom {
            // Snappy-compressed protobuf, as ingest's columnar msgpack.
            decompressed = crate::prom::write_body(&raw, max)?;
            permit.grow(&limits, (raw.len() + decompressed.len()) as u64)?;
            &decompressed
        } else if gzip {
            let t = Instant::now();
            decompressed = gunzip(&raw, max)?;
            // Both buffers are alive until parsing is done.
            permit.grow(&limits, (raw.len() + decompressed.len()) as u64)?;
            metrics::histogram!("chingest_http_decompress_seconds")
                .record(t.elapsed().as_secs_f64());
            &decompressed
        } else {
            &raw
        };
        let prepared = store.prepare(WriteRequest {
            db: &db_for_cpu,
            body,
            format,
            precision,
            now_ns,
        })?;
        Ok((prepared, permit))
    })
    .await
    .map_err(|e| ApiError::Internal(format!("parse task failed: {e}")))?;
    let (prepared, permit) = prepared?;

    let rejection = prepared.rejection.clone();
    let points = prepared.points;
    if let Some(r) = &rejection {
        let reason = match r.outcome {
            WriteOutcome::LimitExceeded => "limit",
            _ => "invalid",
        };
        metrics::counter!("chingest_lines_rejected_total", "reason" => reason).increment(r.lines);
        metrics::counter!("chingest_points_rejected_total", "reason" => reason)
            .increment(r.dropped);
    }
    // Commit even when no point was accepted: new catalog records may need persisting.
    let _points = if points > 0 {
        Some(state.limits.points_permit(points)?)
    } else {
        None
    };
    let t = Instant::now();
    state.store.commit(prepared).await.map_err(|e| match e {
        StorageError::QueueFull => state
            .limits
            .overloaded("wal_queue_full", "the WAL queue is full"),
        other => other.into(),
    })?;
    metrics::histogram!("chingest_http_wal_wait_seconds").record(t.elapsed().as_secs_f64());
    metrics::counter!("chingest_points_accepted_total").increment(points);
    drop(permit);
    match rejection {
        None => Ok(()),
        Some(r) => match r.outcome {
            WriteOutcome::LimitExceeded => Err(ApiError::Unprocessable(r.message)),
            _ => Err(ApiError::BadRequest(r.message)),
        },
    }
}

/// Writes a body chingest built itself (`SELECT … INTO`, continuous queries) to `db`
/// through the same path as `/write` (the storage door, ingest's checks, the WAL: durable
/// when this returns). Blocking: call from a blocking thread inside the runtime. Answers
/// the points written; a partial write answers `/write`'s error (nothing after it ran).
pub fn write_internal<S: Store>(
    state: &AppState<S>,
    db: &str,
    body: &[u8],
    format: Format,
) -> Result<u64, ApiError> {
    let store = &state.store;
    if !store.database_exists(db) {
        return Err(ApiError::Query(format!("database not found: {db}")));
    }
    state.limits.check_storage(&store.stats())?;
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    let prepared = store.prepare(WriteRequest {
        db,
        body,
        format,
        precision: Precision::Nanoseconds,
        now_ns,
    })?;
    let rejection = prepared.rejection.clone();
    let points = prepared.points;
    let _points = if points > 0 {
        Some(state.limits.points_permit(points)?)
    } else {
        None
    };
    let commit = store.commit(prepared);
    tokio::runtime::Handle::current()
        .block_on(commit)
        .map_err(|e| match e {
            StorageError::QueueFull => state
                .limits
                .overloaded("wal_queue_full", "the WAL queue is full"),
            other => other.into(),
        })?;
    metrics::counter!("chingest_points_accepted_total").increment(points);
    match rejection {
        None => Ok(points),
        Some(r) => Err(ApiError::Query(r.message)),
    }
}

/// Streams the body under the size cap, the in-flight byte budget (reserved
/// frame by frame, for the bytes received) and the body read deadline. A body
/// refused by the budget part-way is left in `slot` (the caller discards the
/// rest); any other outcome consumes it.
async fn read_body<S: Store>(
    state: &AppState<S>,
    slot: &mut Option<Body>,
    max: u64,
    declared: Option<u64>,
    permit: &mut BudgetPermit,
) -> Result<bytes::Bytes, ApiError> {
    let deadline = tokio::time::Instant::now()
        + std::time::Duration::from_secs(state.config.server.body_read_timeout_secs);
    let mut body = slot.take().expect("the body is read once");
    // Memory follows the budget: nothing is allocated for bytes not yet sent
    // beyond a first 64 KiB (the buffer then grows as frames arrive).
    let first = declared.unwrap_or(0).min(max).min(64 << 10);
    let mut buf = bytes::BytesMut::with_capacity(first as usize);
    loop {
        let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
            Err(_) => return Err(ApiError::BodyTimeout),
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return Err(ApiError::BadRequest(format!(
                    "error reading the request body: {e}"
                )))
            }
            Ok(Some(Ok(f))) => f,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let len = (buf.len() + data.len()) as u64;
        if len > max {
            drop(buf);
            drain(body).await;
            return Err(ApiError::TooLarge { limit: max });
        }
        if len > permit.bytes() {
            if let Err(e) = permit.grow(&state.limits, len) {
                // Handled as a refusal before the body: the rest is discarded.
                *slot = Some(body);
                return Err(e);
            }
        }
        buf.extend_from_slice(&data);
    }
    Ok(buf.freeze())
}

/// Reads and discards what is left of a refused body (at most 64 MiB or one
/// second), so a client that streams without `Content-Length` still reads the
/// 413 instead of a connection reset.
async fn drain(mut body: Body) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(1);
    let mut left: u64 = 64 << 20;
    while let Ok(Some(Ok(frame))) = tokio::time::timeout_at(deadline, body.frame()).await {
        let n = frame.data_ref().map_or(0, |d| d.len() as u64);
        match left.checked_sub(n) {
            Some(l) => left = l,
            None => break,
        }
    }
}

/// Decompresses a gzip body (concatenated members too), refusing output beyond `max`.
pub(crate) fn gunzip(raw: &[u8], max: u64) -> Result<Vec<u8>, ApiError> {
    let mut out = Vec::with_capacity((raw.len() * 4).min(max as usize));
    let mut dec = flate2::read::MultiGzDecoder::new(raw).take(max + 1);
    dec.read_to_end(&mut out)
        .map_err(|e| ApiError::BadRequest(format!("invalid gzip body: {e}")))?;
    if out.len() as u64 > max {
        return Err(ApiError::TooLarge { limit: max });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Params {
        Params::parse(s)
    }

    #[test]
    fn v1_parameter_table() {
        let ok = |q: &str, prec| {
            assert_eq!(
                v1_params(&p(q)).unwrap(),
                WriteParams {
                    db: "d".into(),
                    rp: q.contains("rp=").then(|| "autogen".into()),
                    precision: prec
                },
                "{q}"
            )
        };
        ok("db=d", Precision::Nanoseconds);
        ok("db=d&rp=autogen&precision=u", Precision::Microseconds);
        ok("db=d&precision=us", Precision::Microseconds);
        ok(
            "db=d&precision=ms&consistency=quorum",
            Precision::Milliseconds,
        );
        ok("db=d&precision=s", Precision::Seconds);
        ok("db=d&precision=m", Precision::Minutes);
        ok("db=d&precision=h&consistency=all", Precision::Hours);
        let err = |q: &str| v1_params(&p(q)).unwrap_err().to_string();
        assert_eq!(err(""), "database is required");
        assert_eq!(err("db="), "database is required");
        assert_eq!(err("db=d&consistency=most"), "invalid consistency level");
        assert!(err("db=d&precision=x").starts_with("invalid precision \"x\""));
        // Which policies exist is the write's to say (`retention::Policies`).
        assert_eq!(
            v1_params(&p("db=d&rp=weekly")).unwrap().rp.as_deref(),
            Some("weekly")
        );
    }

    #[test]
    fn v2_parameter_table() {
        assert_eq!(v2_params(&p("org=o&bucket=d&precision=s")).unwrap().db, "d");
        assert_eq!(v2_params(&p("bucket=d%2Fautogen")).unwrap().db, "d");
        assert_eq!(
            v2_params(&p("bucket=d/weekly")).unwrap().rp.as_deref(),
            Some("weekly")
        );
        assert!(matches!(
            v2_params(&p("org=o")),
            Err(ApiError::DatabaseRequired)
        ));
        assert!(matches!(
            v2_params(&p("bucket=d&precision=h")),
            Err(ApiError::InvalidPrecision { .. })
        ));
    }

    #[test]
    fn content_type_and_encoding() {
        let mut h = HeaderMap::new();
        assert_eq!(format_for(&h), Format::LineProtocol);
        h.insert(
            "content-type",
            "Application/MsgPack; charset=x".parse().unwrap(),
        );
        assert_eq!(format_for(&h), Format::MsgpackRows);
        h.insert(
            "content-type",
            "application/vnd.hyperbytedb.columnar-msgpack.v1"
                .parse()
                .unwrap(),
        );
        assert_eq!(format_for(&h), Format::MsgpackColumnar);
        h.insert("content-encoding", "GZIP".parse().unwrap());
        assert!(is_gzip(&h).unwrap());
        h.insert("content-encoding", "br".parse().unwrap());
        assert!(is_gzip(&h).is_err());
    }

    #[test]
    fn gunzip_caps_the_output() {
        use flate2::write::GzEncoder;
        use std::io::Write;
        let mut e = GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&vec![b'a'; 10_000]).unwrap();
        let gz = e.finish().unwrap();
        assert_eq!(gunzip(&gz, 10_000).unwrap().len(), 10_000);
        assert!(matches!(
            gunzip(&gz, 9_999),
            Err(ApiError::TooLarge { limit: 9_999 })
        ));
        assert!(matches!(
            gunzip(b"not gzip", 100),
            Err(ApiError::BadRequest(_))
        ));
    }
}
