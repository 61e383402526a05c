//! A null write endpoint for measuring the load generator itself: every POST
//! is answered 204 once its body has been read (and thrown away), `/ping` too.
//! Run a ramp against it on the same machine to see the client's own ceiling.

use axum::body::Body;
use axum::http::StatusCode;
use axum::routing::{any, get};
use axum::Router;
use http_body_util::BodyExt;

use crate::error::{Error, Result};

async fn drain(body: Body) -> StatusCode {
    // Read frame by frame: nothing is buffered, whatever the body size.
    let mut body = body;
    while let Some(frame) = body.frame().await {
        if frame.is_err() {
            return StatusCode::BAD_REQUEST;
        }
    }
    StatusCode::NO_CONTENT
}

/// The sink's routes: `GET|HEAD /ping` and any method on any other path → 204.
pub fn app() -> Router {
    Router::new()
        .route("/ping", get(|| async { StatusCode::NO_CONTENT }))
        .fallback(any(drain))
}

/// Serves the sink on `listener` until the process ends.
pub async fn serve(listener: tokio::net::TcpListener) -> Result<()> {
    let addr = listener
        .local_addr()
        .map_err(|e| Error::io("sink listener", e))?;
    axum::serve(listener, app())
        .await
        .map_err(|e| Error::io(format!("sink on {addr}"), e))
}
