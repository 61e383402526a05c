//! Writing the query benchmark's data set: exactly `points` points of the
//! measurement `cpu`, one series per host, spread evenly over `span`.
//!
//! The bodies come from [`crate::gen`] (line protocol, `measurements = [cpu]`),
//! so point `g` is host `g mod hosts` at `start + (g div hosts) × step` with
//! `step = span ÷ (points ÷ hosts)`: requests go out in time order, every
//! host in every request, the way a fleet of agents reports. Bodies are
//! encoded while earlier ones are in flight (`concurrency` at a time); a
//! 429/503 or a dropped connection is retried after a pause and counted.

use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::task::JoinSet;

use super::http::Http;
use crate::client::{redact_url, Target};
use crate::error::{Error, Result};
use crate::gen::{encode_file, Format, GenConfig};
use crate::overload::result::loadavg;

/// The one measurement written and queried.
pub const MEASUREMENT: &str = "cpu";
/// Retries of one request refused with 429/503 or lost before giving up.
const MAX_RETRIES: u64 = 100;
/// Pause before a retry.
const RETRY_PAUSE: Duration = Duration::from_millis(250);

/// What to write, and where.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FillConfig {
    /// Full write URL, e.g. `http://127.0.0.1:8086/write?db=bench`.
    pub url: String,
    /// Points in all; a multiple of `hosts` and of `batch`.
    pub points: u64,
    /// Hosts, i.e. series.
    pub hosts: usize,
    /// Fields per point (1..=8, [`crate::gen`]'s `cpu` fields in order).
    pub fields: usize,
    /// First timestamp, ns since the epoch.
    pub start_ns: i64,
    /// Time span the points cover, ns.
    pub span_ns: i64,
    /// Points per request.
    pub batch: usize,
    /// Requests in flight.
    pub concurrency: usize,
}

impl FillConfig {
    /// The generator's knobs for this data set.
    pub fn gen_config(&self) -> Result<GenConfig> {
        let bad = |m: &str| Err(Error::InvalidArgument(m.into()));
        if self.hosts == 0 || self.batch == 0 || self.concurrency == 0 {
            return bad("hosts, batch and concurrency must be positive");
        }
        if self.points == 0 || !self.points.is_multiple_of(self.hosts as u64) {
            return bad("points must be a positive multiple of hosts");
        }
        if !self.points.is_multiple_of(self.batch as u64) {
            return bad("points must be a multiple of the batch size");
        }
        let per_series = self.points / self.hosts as u64;
        let step_ns = self.span_ns / per_series as i64;
        if step_ns <= 0 {
            return bad("span too short for that many points per series");
        }
        let cfg = GenConfig {
            format: Format::Lp,
            gzip: false,
            files: (self.points / self.batch as u64) as usize,
            points_per_file: self.batch,
            measurements: vec![MEASUREMENT.into()],
            hosts: self.hosts,
            fields: self.fields,
            start_ns: self.start_ns,
            step_ns,
            seed: 42,
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

/// What a fill did, and how long it took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FillResult {
    /// The server's name in the report (`chingest`, `influxdb`).
    pub server: String,
    /// The write URL (credentials redacted).
    pub url: String,
    /// Points written.
    pub points: u64,
    /// Series (hosts).
    pub series: u64,
    /// Fields per point.
    pub fields: usize,
    /// First timestamp, ns.
    pub start_ns: i64,
    /// One past the last timestamp, ns (`start + points per series × step`).
    pub end_ns: i64,
    /// Time between a series' points, ns.
    pub step_ns: i64,
    /// Requests sent (retries excluded).
    pub requests: u64,
    /// Points per request.
    pub batch: usize,
    /// Requests in flight.
    pub concurrency: usize,
    /// Retries after 429/503 or a lost connection.
    pub retries: u64,
    /// Wall time from the first request to the last answer, seconds.
    pub secs: f64,
    /// `/proc/loadavg` (1 / 5 / 15 min) before the first request.
    pub loadavg_before: Option<String>,
    /// `/proc/loadavg` after the last answer.
    pub loadavg_after: Option<String>,
}

impl FillResult {
    /// Points acknowledged per second of wall time.
    pub fn points_per_sec(&self) -> f64 {
        self.points as f64 / self.secs.max(1e-9)
    }
}

/// Sends one body until it is acknowledged; returns the retries it took.
pub(crate) async fn send(http: Http, target: hyper::Uri, body: Bytes) -> Result<u64> {
    let mut retries = 0;
    loop {
        let outcome = http
            .post(&target, "text/plain; charset=utf-8", body.clone())
            .await;
        match outcome {
            Ok(r) if (200..300).contains(&r.status) => return Ok(retries),
            Ok(r) if !matches!(r.status, 429 | 503) => {
                return Err(Error::Http {
                    url: redact_url(&target.to_string()),
                    reason: format!(
                        "write answered {}: {}",
                        r.status,
                        String::from_utf8_lossy(&r.body[..r.body.len().min(300)])
                    ),
                })
            }
            _ if retries < MAX_RETRIES => {}
            Ok(r) => {
                return Err(Error::Check(format!(
                    "write still answered {} after {MAX_RETRIES} retries",
                    r.status
                )))
            }
            Err(e) => return Err(e),
        }
        retries += 1;
        tokio::time::sleep(RETRY_PAUSE).await;
    }
}

/// Writes the data set to one server and times it.
pub async fn run_fill(server: &str, cfg: &FillConfig, timeout: Duration) -> Result<FillResult> {
    let gen = cfg.gen_config()?;
    let uri = Target::parse_uri(&cfg.url)?;
    let http = Http::new(cfg.concurrency, timeout);
    let loadavg_before = loadavg();
    let started = Instant::now();
    let mut inflight = JoinSet::new();
    let mut retries = 0;
    for i in 0..gen.files {
        let g = gen.clone();
        let (body, _) = tokio::task::spawn_blocking(move || encode_file(&g, i))
            .await
            .map_err(|e| Error::Encode(e.to_string()))??;
        while inflight.len() >= cfg.concurrency {
            retries += joined(inflight.join_next().await)?;
        }
        inflight.spawn(send(http.clone(), uri.clone(), Bytes::from(body)));
    }
    while let Some(r) = inflight.join_next().await {
        retries += joined(Some(r))?;
    }
    let secs = started.elapsed().as_secs_f64();
    let per_series = cfg.points / cfg.hosts as u64;
    Ok(FillResult {
        server: server.into(),
        url: redact_url(&cfg.url),
        points: cfg.points,
        series: cfg.hosts as u64,
        fields: cfg.fields,
        start_ns: gen.start_ns,
        end_ns: gen.start_ns + per_series as i64 * gen.step_ns,
        step_ns: gen.step_ns,
        requests: gen.files as u64,
        batch: cfg.batch,
        concurrency: cfg.concurrency,
        retries,
        secs,
        loadavg_before,
        loadavg_after: loadavg(),
    })
}

/// A finished write task's retries (0 when there was none).
pub(crate) fn joined(
    r: Option<std::result::Result<Result<u64>, tokio::task::JoinError>>,
) -> Result<u64> {
    match r {
        None => Ok(0),
        Some(Ok(r)) => r,
        Some(Err(e)) => Err(Error::Check(format!("write task failed: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(points: u64) -> FillConfig {
        FillConfig {
            url: "http://127.0.0.1:1/write?db=b".into(),
            points,
            hosts: 1_000,
            fields: 2,
            start_ns: 0,
            span_ns: 86_400_000_000_000,
            batch: 50_000,
            concurrency: 4,
        }
    }

    #[test]
    fn ten_million_points_over_a_day_are_one_every_8_64_s_per_host() {
        let g = cfg(10_000_000).gen_config().unwrap();
        assert_eq!(g.files, 200);
        assert_eq!(g.step_ns, 8_640_000_000);
        assert_eq!(g.measurements, [MEASUREMENT]);
        assert_eq!(cfg(100_000_000).gen_config().unwrap().step_ns, 864_000_000);
    }

    #[test]
    fn uneven_sizes_are_refused() {
        assert!(cfg(10_000_500).gen_config().is_err());
        assert!(cfg(1_001_000).gen_config().is_err()); // not a multiple of the batch
        assert!(cfg(0).gen_config().is_err());
    }
}
