//! `GET|HEAD /ping`: 204 (the version headers are added to every response);
//! `?verbose=true` answers 200 with the version as JSON, as InfluxDB does.

use axum::extract::RawQuery;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::params::Params;

/// `GET|HEAD /ping`.
pub async fn ping(RawQuery(q): RawQuery) -> Response {
    let p = Params::parse(q.as_deref().unwrap_or(""));
    if matches!(p.get("verbose"), Some("true" | "1")) {
        return Json(serde_json::json!({ "version": crate::INFLUXDB_VERSION })).into_response();
    }
    StatusCode::NO_CONTENT.into_response()
}
