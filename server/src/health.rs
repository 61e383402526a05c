//! `GET /health`: status, version, WAL lag and flush state; 503 when writes
//! cannot be accepted. Field names follow InfluxDB 2's `/health` so its
//! clients' health checks work.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::AppState;

/// `GET /health`.
pub async fn health(State(state): State<AppState>) -> Response {
    let s = state.pipeline.stats();
    let refusal = state.limits.pipeline_state(&s).err();
    let (status, pass, message) = match &refusal {
        None => (
            StatusCode::OK,
            "pass",
            "ready for queries and writes".to_string(),
        ),
        Some(e) => (StatusCode::SERVICE_UNAVAILABLE, "fail", e.public_message()),
    };
    let body = json!({
        "name": "chingest",
        "message": message,
        "status": pass,
        "version": crate::INFLUXDB_VERSION,
        "commit": crate::BUILD,
        "checks": [],
        "wal": {
            "queue_depth": s.wal_queue_depth,
            "queue_capacity": s.wal_queue_capacity,
            "last_seq": s.last_seq,
            "flushed_seq": s.flushed_seq,
            "unflushed_points": s.unflushed_points,
            "unflushed_bytes": s.unflushed_bytes,
            "lag_seconds": s.oldest_unflushed_secs,
        },
        "flush": {
            "state": if s.unavailable.is_some() {
                "stopped"
            } else if s.flush_consecutive_failures > 0 {
                "retrying"
            } else if s.flushed_seq >= s.last_seq {
                "idle"
            } else {
                "flushing"
            },
            "pending_points": s.flush_pending_points,
            "consecutive_failures": s.flush_consecutive_failures,
            "last_error": s.flush_last_error,
        },
        "inflight_bytes_available": state.limits.available_bytes(),
    });
    (status, Json(body)).into_response()
}
