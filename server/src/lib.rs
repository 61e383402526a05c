//! # chingest: the InfluxDB-compatible HTTP front door
//!
//! Brief overview:
//! - [`app`] builds the axum [`Router`]: `/write` and `/api/v2/write`
//!   ([`write`]), `/ping`, `/health`, `/metrics`, `/query` ([`query`]) and
//!   `/api/v1/sql` ([`sql`]), wrapped in request ids and version headers,
//!   a request deadline ([`limit`]), authentication ([`auth`]) and request
//!   metrics ([`metrics`]); the web console ([`console`]) at `/`, whose files
//!   need no credentials (its data comes from the endpoints above).
//! - [`run`] opens storage (the `storage` crate: ingest → WAL → flush →
//!   chDB), serves HTTP/1.1 with header/body read timeouts, and on
//!   SIGTERM/SIGINT stops accepting, finishes in-flight requests, then commits
//!   the WAL, flushes to chDB and closes the engine. A second signal exits at
//!   once (the WAL makes that safe).
//! - [`config`]: TOML + `CHINGEST_<SECTION>__<KEY>` overrides; [`error`]: the
//!   one error enum and its v1/v2 JSON shapes.
#![deny(missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use metrics_exporter_prometheus::PrometheusHandle;

pub mod admin;
pub mod auth;
pub mod backup;
pub mod config;
pub mod console;
pub mod cq;
pub mod durable;
pub mod error;
pub mod health;
pub mod heap;
pub mod limit;
pub mod logging;
pub mod metrics;
pub mod origin;
pub mod params;
pub mod ping;
pub mod prom;
pub mod query;
pub mod retention;
pub mod sql;
pub mod users_backup;
pub mod write;

pub use auth::{Authenticator, Identity, PasswordHash, SecretHash};
pub use config::{Config, ConfigError};
pub use error::{Api, ApiError, V2Error};
pub use limit::Budgets;
pub use storage::{Storage, StorageError, Store};

/// The InfluxDB version chingest answers as (`X-Influxdb-Version`); clients
/// gate features on a 1.8-compatible server.
pub const INFLUXDB_VERSION: &str = concat!("1.8.10-chingest-", env!("CARGO_PKG_VERSION"));
/// `X-Influxdb-Build`.
pub const BUILD: &str = concat!("chingest ", env!("CARGO_PKG_VERSION"));

/// Everything a handler needs; cheap to clone. `S` is storage: [`Storage`] in
/// the server, an in-memory double in the handler tests.
pub struct AppState<S = Storage> {
    /// The validated configuration.
    pub config: Arc<Config>,
    /// Storage.
    pub store: Arc<S>,
    /// Back-pressure budgets.
    pub limits: Arc<Budgets>,
    /// Credentials and permissions.
    pub auth: Arc<Authenticator>,
    /// Prometheus renderer.
    pub metrics: PrometheusHandle,
    /// The `/query` statements running now (`SHOW QUERIES`, `KILL QUERY`).
    pub queries: Arc<query::running::RunningQueries>,
    /// The continuous queries.
    pub cqs: Arc<cq::ContinuousQueries>,
    /// The retention policies.
    pub policies: Arc<retention::Policies>,
}

impl<S> Clone for AppState<S> {
    fn clone(&self) -> Self {
        AppState {
            config: self.config.clone(),
            store: self.store.clone(),
            limits: self.limits.clone(),
            auth: self.auth.clone(),
            metrics: self.metrics.clone(),
            queries: self.queries.clone(),
            cqs: self.cqs.clone(),
            policies: self.policies.clone(),
        }
    }
}

impl<S: Store> AppState<S> {
    /// State for `config` over `store` (installs the metrics recorder once), with the
    /// InfluxQL users in memory only (handler tests; the server uses [`with_auth`](Self::with_auth)).
    pub fn new(config: Config, store: Arc<S>) -> AppState<S> {
        let auth = Authenticator::new(&config.auth);
        AppState::with_auth(config, store, auth)
    }

    /// State for `config` over `store` with `auth` (its users durable).
    pub fn with_auth(config: Config, store: Arc<S>, auth: Authenticator) -> AppState<S> {
        AppState {
            limits: Arc::new(Budgets::new(&config.limits)),
            auth: Arc::new(auth),
            metrics: metrics::handle(),
            queries: Arc::default(),
            cqs: Arc::default(),
            policies: Arc::default(),
            config: Arc::new(config),
            store,
        }
    }
}

/// The router with every route and layer.
pub fn app<S: Store>(state: AppState<S>) -> Router {
    let timeout = Duration::from_secs(state.config.server.request_timeout_secs);
    let router = Router::new()
        .route("/write", post(write::write_v1::<S>))
        .route("/api/v2/write", post(write::write_v2::<S>))
        .route("/api/v1/prom/write", post(write::write_prom::<S>))
        .route("/api/v1/prom/read", post(prom::read::<S>))
        .route("/ping", get(ping::ping).head(ping::ping))
        .route("/health", get(health::health::<S>))
        .route("/metrics", get(metrics::metrics::<S>))
        .route("/query", get(query::query::<S>).post(query::query::<S>))
        .route("/api/v1/sql", get(sql::sql::<S>).post(sql::sql::<S>))
        .route("/api/v1/quarantine", get(admin::list::<S>))
        .route("/api/v1/quarantine/retry", post(admin::retry::<S>))
        .route("/api/v1/quarantine/discard", post(admin::discard::<S>))
        .route("/api/v1/cluster/forget-node", post(admin::forget_node::<S>))
        .route(
            "/api/v1/users",
            get(users_backup::export::<S>).post(users_backup::import::<S>),
        )
        .route_layer(middleware::from_fn(metrics::track))
        .route_layer(middleware::from_fn_with_state(
            state.config.auth.enabled,
            origin::refuse_cross_site,
        ))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(
            state.auth.clone(),
            auth::require_auth,
        ));
    // After the authentication layer, so outside it: the console's files hold no data.
    let router = match state.config.server.console {
        true => router.merge(console::router()),
        false => router,
    };
    // One outermost layer for the request id, the version headers and the
    // deadline (each `from_fn` layer boxes the request's future and clones
    // its inner service once more per request).
    router
        .layer(middleware::from_fn_with_state(timeout, common_headers))
        .with_state(state)
}

async fn not_found(req: Request) -> Response {
    ApiError::NotFound.into_response_for(Api::for_path(req.uri().path()))
}

static REQUEST_ID: HeaderName = HeaderName::from_static("request-id");
static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// When the outermost layer received the request (a request extension):
/// `Server-Timing`'s `total` counts from here (`query/timing.rs`).
#[derive(Debug, Clone, Copy)]
pub struct RequestStart(pub std::time::Instant);

/// Middleware: `Request-Id`/`X-Request-Id` (the client's, echoed, or a new
/// one) and the version headers on every response, and the request's
/// deadline (`timeout`, [`limit::request_timeout`]). The request runs in a
/// `request` span carrying the id, so whatever is logged while serving it
/// carries the id too; its access line is `debug` under
/// [`logging::ACCESS_TARGET`] (path without the query string, where v1
/// credentials travel).
async fn common_headers(State(timeout): State<Duration>, mut req: Request, next: Next) -> Response {
    let started = std::time::Instant::now();
    req.extensions_mut().insert(RequestStart(started));
    let id = req
        .headers()
        .get(&REQUEST_ID)
        .or_else(|| req.headers().get(&X_REQUEST_ID))
        .filter(|v| !v.is_empty() && v.len() <= 128)
        .cloned()
        .unwrap_or_else(new_request_id);
    let span = tracing::info_span!("request", request_id = %String::from_utf8_lossy(id.as_bytes()));
    let access = tracing::enabled!(target: logging::ACCESS_TARGET, tracing::Level::DEBUG)
        .then(|| (req.method().clone(), req.uri().path().to_owned()));
    let deadline = limit::request_timeout(timeout, req, next);
    let mut resp = tracing::Instrument::instrument(deadline, span.clone()).await;
    if let Some((method, path)) = access {
        span.in_scope(|| {
            tracing::debug!(
                target: logging::ACCESS_TARGET,
                %method,
                %path,
                status = resp.status().as_u16(),
                duration_ms = started.elapsed().as_secs_f64() * 1e3,
                "request"
            )
        });
    }
    let h = resp.headers_mut();
    h.insert(REQUEST_ID.clone(), id.clone());
    h.insert(X_REQUEST_ID.clone(), id);
    h.insert(
        "x-influxdb-version",
        HeaderValue::from_static(INFLUXDB_VERSION),
    );
    h.insert("x-influxdb-build", HeaderValue::from_static(BUILD));
    resp
}

/// A random UUID-formatted (v4) request id, written in place: formatting
/// each byte with `format!` (18 allocations) was ~2.5 % of a hot one-row
/// `/query`'s samples.
fn new_request_id() -> HeaderValue {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut b: [u8; 16] = rand::random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let mut s = [0u8; 36];
    let mut at = 0;
    for (i, x) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s[at] = b'-';
            at += 1;
        }
        s[at] = HEX[usize::from(x >> 4)];
        s[at + 1] = HEX[usize::from(x & 0x0f)];
        at += 2;
    }
    HeaderValue::from_bytes(&s).expect("hex and dashes are a valid header value")
}

/// Why [`run`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// Storage could not be opened or closed cleanly.
    #[error("storage: {0}")]
    Storage(#[from] StorageError),
    /// The blocking task opening or closing storage panicked.
    #[error("storage task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// The users file (`<data_dir>/users.json`) could not be read.
    #[error("{0}")]
    Users(#[from] auth::users::UsersFileError),
    /// The retention policies file could not be read.
    #[error("{0}")]
    RetentionPolicies(String),
    /// The continuous queries file could not be read.
    #[error("{0}")]
    ContinuousQueries(cq::CqError),
    /// The listener could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Opens storage, serves until SIGTERM/SIGINT, then shuts down in order.
pub async fn run(config: Config) -> Result<(), RunError> {
    let _ = metrics::handle();
    // The users first: the engine boots with a role for each of their read scopes.
    let users_file = config.storage.data_dir.join("users.json");
    let auth = Authenticator::open(&config.auth, &users_file)?;
    let scopes = auth.read_scopes();
    let open_config = config.clone();
    let store = tokio::task::spawn_blocking(move || open_storage(&open_config, scopes)).await??;
    let addr = config.server.listen.clone();
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .map_err(|source| RunError::Bind {
            addr: addr.clone(),
            source,
        })?;
    tracing::info!(addr = %listener.local_addr().map(|a| a.to_string()).unwrap_or(addr), "listening");
    let header_timeout = Duration::from_secs(config.server.header_read_timeout_secs);
    let grace = Duration::from_secs(config.server.shutdown_grace_secs);
    let max_connections = config.server.max_connections;
    if auth.awaiting_first_admin() {
        tracing::warn!(
            "auth is enabled and no user exists: the server answers nothing but the creation of the first admin on /query (CREATE USER <name> WITH PASSWORD '<password>' WITH ALL PRIVILEGES)"
        );
    }
    let cqs = cq::ContinuousQueries::open(&config.storage.data_dir.join("continuous_queries.json"))
        .map_err(RunError::ContinuousQueries)?;
    let policies =
        retention::Policies::open(&config.storage.data_dir.join("retention_policies.json"))
            .map_err(RunError::RetentionPolicies)?;
    let mut state = AppState::with_auth(config, store.clone(), auth);
    state.cqs = Arc::new(cqs);
    state.policies = Arc::new(policies);
    let _continuous_queries = cq::spawn(state.clone());
    // On a ClickHouse cluster: the other nodes' retention-policy changes, every 2 s.
    if state.store.cluster_policies().is_some() {
        let state = state.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(2));
            loop {
                tick.tick().await;
                let state = state.clone();
                let _ =
                    tokio::task::spawn_blocking(move || state.policies.sync(state.store.as_ref()))
                        .await;
            }
        });
    }
    let router = app(state);
    // One grace bounds the whole stop: in-flight requests, then the flush (whatever
    // the flusher's state; what it cannot flush in time stays in the WAL). The WAL
    // commit and the engine close get a few seconds of their own at least.
    let signalled = Arc::new(std::sync::OnceLock::new());
    let on_signal = {
        let signalled = signalled.clone();
        async move {
            shutdown_signal().await;
            let _ = signalled.set(std::time::Instant::now());
        }
    };
    serve(
        listener,
        router,
        header_timeout,
        grace,
        max_connections,
        on_signal,
    )
    .await;
    let spent = signalled.get().map_or(Duration::ZERO, |t| t.elapsed());
    let flush_grace = grace.saturating_sub(spent).max(Duration::from_secs(2));
    tracing::info!(
        ?flush_grace,
        "HTTP stopped; committing the WAL and flushing to chDB"
    );
    tokio::task::spawn_blocking(move || store.shutdown_within(flush_grace)).await??;
    tracing::info!("shutdown complete");
    Ok(())
}

fn open_storage(
    config: &Config,
    scopes: Vec<storage::ReadScope>,
) -> Result<Arc<Storage>, StorageError> {
    // The engine boots with one role per read scope SQL will run under
    // (sql::sql_access): every non-admin user's (config file and InfluxQL), plus "all".
    let access = storage::EngineAccess::new(scopes);
    let store = Storage::open_with_sql(
        &config.storage,
        config.wal.clone(),
        config.flush.clone(),
        config.limits.schema_limits(),
        config.sql.clone(),
        &access,
    )?;
    store.configure_hot(config.hot.clone())?;
    Ok(store)
}

/// Serves HTTP/1.1 until `shutdown` resolves, then stops accepting and waits
/// up to `grace` for in-flight requests. At most `max_connections` are open at
/// once: one more is accepted, answered `503` + `Retry-After` at once (its
/// request unread) and closed, so clients are told fast instead of waiting in
/// the kernel's backlog (see [`refuse_connection`]).
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    header_timeout: Duration,
    grace: Duration,
    max_connections: usize,
    shutdown: impl std::future::Future<Output = ()>,
) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let slots = Arc::new(tokio::sync::Semaphore::new(max_connections));
    // Refusals being written at once; past this a connection is just closed.
    let refusing = Arc::new(tokio::sync::Semaphore::new(64));
    ::metrics::counter!("chingest_http_connections_refused_total").increment(0);
    ::metrics::gauge!("chingest_http_connections_open").set(0.0);
    prom::register_metrics();
    cq::register_metrics();
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, _) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // EMFILE and friends: back off instead of spinning.
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let Ok(slot) = slots.clone().try_acquire_owned() else {
                    ::metrics::counter!("chingest_http_connections_refused_total").increment(1);
                    if let Ok(r) = refusing.clone().try_acquire_owned() {
                        tokio::spawn(refuse_connection(stream, max_connections, r));
                    }
                    continue;
                };
                ::metrics::gauge!("chingest_http_connections_open").increment(1.0);
                let svc = hyper_util::service::TowerToHyperService::new(router.clone());
                let conn = http.serve_connection(TokioIo::new(stream), svc);
                let watched = graceful.watch(conn);
                tokio::spawn(async move {
                    if let Err(e) = watched.await {
                        tracing::debug!("connection ended: {e}");
                    }
                    drop(slot);
                    ::metrics::gauge!("chingest_http_connections_open").decrement(1.0);
                });
            }
            _ = &mut shutdown => break,
        }
    }
    drop(listener);
    tracing::info!("no longer accepting connections; finishing in-flight requests");
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("in-flight requests still running after {grace:?}; closing anyway");
    }
}

/// Answers a connection over `server.max_connections` with a fixed `503`
/// (v1 shape, `Retry-After: 1`, `Connection: close`) without reading its
/// request, then reads and drops what the client still sends (at most 64 KiB
/// or 1 s) so that closing does not reset the connection before the client
/// read the answer.
async fn refuse_connection(
    mut stream: tokio::net::TcpStream,
    max: usize,
    _permit: tokio::sync::OwnedSemaphorePermit,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = format!(
        "{{\"error\":\"server overloaded: {max} connections are open (server.max_connections); retry later\"}}"
    );
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nX-Influxdb-Version: {INFLUXDB_VERSION}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        let mut left = 64usize << 10;
        while left > 0 {
            match stream.read(&mut sink).await? {
                0 => break,
                n => left = left.saturating_sub(n),
            }
        }
        Ok::<_, std::io::Error>(())
    })
    .await;
}

/// Resolves on the first SIGTERM/SIGINT; a second one exits the process at once.
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers; stop the server with SIGKILL");
        return std::future::pending().await;
    };
    tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
    tracing::info!("shutdown signal received; send it again to exit immediately");
    tokio::spawn(async move {
        tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
        tracing::warn!("second signal: exiting now; the WAL replays unflushed writes on start");
        std::process::exit(130);
    });
}

#[cfg(test)]
mod tests;
