//! Prometheus remote storage, as InfluxDB 1.8 serves it: `POST /api/v1/prom/write?db=`
//! (remote write: the samples go through the same write path as `/write`, `write.rs`) and
//! `POST /api/v1/prom/read?db=` (remote read: each matching series' samples in the range,
//! read through InfluxQL so point identity and unflushed points hold as for `/query`). Bodies
//! are snappy-compressed protobuf (`proto.rs`); the mapping is `convert.rs`'s.

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use prost::Message;

use crate::auth::Identity;
use crate::error::ApiError;
use crate::params::Params;
use crate::{AppState, Store};

pub mod convert;
pub mod proto;

use convert::ReadPlan;
pub use convert::{FIELD, NAME_LABEL, NO_NAME};
use proto::{Label, QueryResult, ReadRequest, ReadResponse, Sample, TimeSeries, WriteRequest};

/// Exports the remote write counters before the first request.
pub(crate) fn register_metrics() {
    for outcome in ["written", "dropped_nan_inf"] {
        metrics::counter!("chingest_prom_samples_total", "outcome" => outcome).increment(0);
    }
}

/// The decompressed bytes of a snappy block of at most `max` bytes.
fn unsnappy(raw: &[u8], max: u64) -> Result<Vec<u8>, ApiError> {
    let bad = |e: snap::Error| ApiError::BadRequest(format!("snappy: {e}"));
    let len = snap::raw::decompress_len(raw).map_err(bad)?;
    if len as u64 > max {
        return Err(ApiError::TooLarge { limit: max });
    }
    snap::raw::Decoder::new().decompress_vec(raw).map_err(bad)
}

/// A remote write body (snappy, protobuf) as ingest's columnar msgpack, times in ms.
pub(crate) fn write_body(raw: &[u8], max: u64) -> Result<Vec<u8>, ApiError> {
    let bytes = unsnappy(raw, max)?;
    let req = WriteRequest::decode(bytes.as_slice())
        .map_err(|e| ApiError::BadRequest(format!("remote write request: {e}")))?;
    let (body, kept, dropped) = convert::write_body(&req);
    metrics::counter!("chingest_prom_samples_total", "outcome" => "written").increment(kept);
    if dropped > 0 {
        // InfluxDB 1.8 drops them too and answers 204: a float field cannot hold them.
        metrics::counter!("chingest_prom_samples_total", "outcome" => "dropped_nan_inf")
            .increment(dropped);
        tracing::debug!(dropped, "remote write: NaN and ±Inf samples dropped");
    }
    Ok(body)
}

/// `POST /api/v1/prom/read`.
pub async fn read<S: Store>(
    State(state): State<AppState<S>>,
    Extension(id): Extension<Identity>,
    RawQuery(query): RawQuery,
    body: Body,
) -> Response {
    match answer_read(&state, &id, query.as_deref().unwrap_or(""), body).await {
        Ok(bytes) => (
            StatusCode::OK,
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/x-protobuf"),
                ),
                (header::CONTENT_ENCODING, HeaderValue::from_static("snappy")),
            ],
            bytes,
        )
            .into_response(),
        Err(e) => e.into_response(),
    }
}

async fn answer_read<S: Store>(
    state: &AppState<S>,
    id: &Identity,
    query: &str,
    body: Body,
) -> Result<Vec<u8>, ApiError> {
    let params = Params::parse(query);
    let db = params
        .get_nonempty("db")
        .ok_or(ApiError::DatabaseRequired)?
        .to_string();
    if !id.can_read(&db) {
        return Err(ApiError::Forbidden(format!(
            "user {:?} is not authorized to read from database {db:?}",
            id.name()
        )));
    }
    let max = state.config.server.max_body_bytes;
    let timeout = std::time::Duration::from_secs(state.config.server.body_read_timeout_secs);
    let raw = tokio::time::timeout(timeout, axum::body::to_bytes(body, max as usize))
        .await
        .map_err(|_| ApiError::BodyTimeout)?
        .map_err(|_| ApiError::TooLarge { limit: max })?;
    let req = ReadRequest::decode(unsnappy(&raw, max)?.as_slice())
        .map_err(|e| ApiError::BadRequest(format!("remote read request: {e}")))?;
    let [q] = req.queries.as_slice() else {
        return Err(ApiError::BadRequest(
            "Prometheus read endpoint currently only supports one query at a time".into(),
        ));
    };
    let plan = ReadPlan::new(q).map_err(ApiError::BadRequest)?;
    let (state, id) = (state.clone(), id.clone());
    tokio::task::spawn_blocking(move || read_series(&state, &id, &db, &plan))
        .await
        .map_err(|e| ApiError::Internal(format!("read task failed: {e}")))?
        .map(|timeseries| {
            let resp = ReadResponse {
                results: vec![QueryResult { timeseries }],
            };
            snap::raw::Encoder::new()
                .compress_vec(&resp.encode_to_vec())
                .unwrap_or_default()
        })
}

/// The series of `db` that `plan` matches, with their samples.
fn read_series<S: Store>(
    state: &AppState<S>,
    id: &Identity,
    db: &str,
    plan: &ReadPlan,
) -> Result<Vec<TimeSeries>, ApiError> {
    use storage::influxql::series::Value;
    let store = state.store.as_ref();
    if !store.database_exists(db) {
        return Err(ApiError::DatabaseNotFound(db.to_string()));
    }
    // The default retention policy's data (`crate::retention`); READ on `db` was checked.
    let storage_db = state
        .policies
        .resolve(db, None)
        .map_err(ApiError::RetentionPolicyNotFound)?;
    let db = storage_db.as_str();
    let mut access = crate::sql::influxql_access(store, id);
    if crate::retention::is_policy_database(db) && !matches!(access, storage::SqlAccess::Admin) {
        access = storage::SqlAccess::Read(storage::ReadScope::All);
    }
    let cancel = storage::SqlCancel::new();
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    // The answer is built whole: at most `[sql] max_result_rows` samples over all
    // measurements, as one InfluxQL statement may return.
    let limit = state.config.sql.max_result_rows;
    let mut samples_left = limit;
    let mut out = Vec::new();
    for m in store.schema(db)? {
        if !plan.wants(&m.name).map_err(ApiError::BadRequest)?
            || !m.fields.iter().any(|(f, _)| f == FIELD)
        {
            continue;
        }
        let text = format!(
            "SELECT {} FROM {} WHERE {} GROUP BY *",
            influxql::quote_ident(FIELD),
            influxql::quote_ident(&m.name),
            plan.condition
        );
        let statement = influxql::parse_statement(&text)
            .map_err(|e| ApiError::BadRequest(format!("remote read: {e}")))?;
        let result = store.influxql(storage::InfluxqlRequest {
            db: Some(db),
            statement: &statement,
            access: &access,
            cancel: &cancel,
            now_ns,
            packed: false,
        })?;
        for s in result.series {
            let mut labels: Vec<Label> = s
                .tags
                .into_iter()
                .filter(|(_, v)| !v.is_empty())
                .map(|(name, value)| Label { name, value })
                .collect();
            labels.push(Label {
                name: NAME_LABEL.into(),
                value: s.name,
            });
            labels.sort_by(|a, b| a.name.cmp(&b.name));
            let samples = s
                .values
                .iter()
                .filter_map(|row| {
                    let Some(Value::Time(t)) = row.first() else {
                        return None;
                    };
                    let value = match row.get(1)? {
                        Value::Float(f) => *f,
                        Value::Integer(i) => *i as f64,
                        Value::Unsigned(u) => *u as f64,
                        _ => return None,
                    };
                    Some(Sample {
                        value,
                        timestamp: t.div_euclid(1_000_000),
                    })
                })
                .collect::<Vec<_>>();
            if samples.len() as u64 > samples_left {
                return Err(ApiError::Query(format!(
                    "remote read: more than {limit} samples (the [sql] max_result_rows limit): \
                     narrow the range or the matchers"
                )));
            }
            samples_left -= samples.len() as u64;
            if !samples.is_empty() {
                out.push(TimeSeries { labels, samples });
            }
        }
    }
    Ok(out)
}
