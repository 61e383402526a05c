//! The dashboard benchmark (issue #44): what a wall of Grafana panels costs a server while
//! it ingests. Each server in turn, for a phase of `phase_secs`, in `rounds` rounds with the
//! servers' order alternating:
//!
//! * hosts as Telegraf reports them (`telegraf_data`, the data `grafana.rs` checks Grafana's
//!   answers on) gathered every 10 s into `db`, the longest view's range of them before the
//!   first phase, the gathers a phase missed before the next (`gather.rs`);
//! * optionally a write load beside, open model at `write_rate` requests per second of
//!   pre-encoded payloads (`chingest-load gen`) into `write_db`;
//! * every `refresh_secs`, one refresh: the `panels` panel queries of the dashboard (its
//!   panels again and again, each pass another host), variables and macros expanded as
//!   Grafana sends them, `concurrency` at a time as a browser does. The time of a refresh
//!   is from its first request to its last answer; every answer must be a 200 without an
//!   error, with at least one series. Tab after tab, the panels show one of
//!   `views` (a time range, one host or `All`). Before each refresh, the dashboard's
//!   variable queries (`SHOW TAG VALUES …`, as on every load), timed apart.
//!
//! Per panel: its latency and (from chingest's `X-Chingest-Read-Path` header) which path
//! answered; per server, the deltas of `chingest_influxql_reads_total` by path (and of
//! `chingest_hot_fallbacks_total`: reads the store left to the engine) over its
//! phases. At the end every server gets the gathers up to one time, and every panel's query
//! at that time goes to each: the answers are compared with the first server's
//! (`compare.rs`).
//!
//! Only one server is loaded at a time: two servers on one machine would share its cores.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hyper::Uri;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::Semaphore;

use crate::client::{PayloadSet, Sender, Target};
use crate::error::{Error, Result};
use crate::query::bench::Server;
use crate::query::http::{encode_component, Http};
use crate::schedule::{run_step, InFlight, Step};
use crate::stats::{Latency, LatencyHist, Outcome};

mod compare;
mod gather;
#[path = "../../../server/tests/http/grafana/macros.rs"]
#[allow(dead_code)]
mod macros;
pub mod panels;
pub mod report;
#[path = "../../../server/tests/http/grafana/telegraf_data.rs"]
#[allow(dead_code)]
mod telegraf_data;

/// Telegraf's interval and the data source's `timeInterval` (deploy/grafana).
const GATHER_MS: i64 = telegraf_data::GATHER_MS;

/// What a run does.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DashboardConfig {
    /// The dashboard JSON whose InfluxQL panels are refreshed.
    pub dashboard: PathBuf,
    /// Database of the Telegraf data.
    pub db: String,
    /// Hosts reporting.
    pub hosts: usize,
    /// Panels on the wall.
    pub panels: usize,
    /// Panel queries in flight at once per refresh.
    pub concurrency: usize,
    /// Seconds between refreshes.
    pub refresh_secs: f64,
    /// Seconds each server is loaded per round.
    pub phase_secs: f64,
    /// Rounds (each server once per round).
    pub rounds: usize,
    /// How each tab shows its panels, tab after tab (`panels::View`).
    pub views: Vec<panels::View>,
    /// Background write requests per second (0: none).
    pub write_rate: f64,
    /// Database of the background writes.
    pub write_db: String,
    /// Per-request timeout, seconds.
    pub timeout_secs: f64,
}

impl DashboardConfig {
    /// Seconds of gathers written before the first phase: the longest view's range.
    fn history_secs(&self) -> i64 {
        self.views
            .iter()
            .map(|v| v.range_secs)
            .max()
            .unwrap_or(3600)
    }
}

/// One panel of the wall on one server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PanelResult {
    /// Title, range and host (`panels::Slot::label`).
    pub label: String,
    /// Time of its query.
    pub query: Latency,
    /// Answers by `X-Chingest-Read-Path` (`hot`, `engine`, …; `-` where not sent).
    pub paths: BTreeMap<String, u64>,
}

/// The first server's answer to a panel compared with another's.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Comparison {
    /// The panel (`panels::Slot::label`).
    pub label: String,
    /// The other server.
    pub with: String,
    /// The first difference; `None` when they agree.
    pub differs: Option<String>,
}

/// One server's refreshes over every round.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerResult {
    /// The server's name.
    pub name: String,
    /// Refreshes whose every answer was good.
    pub refreshes: u64,
    /// Time of a refresh, first request to last answer.
    pub refresh: Latency,
    /// Time of one panel query.
    pub query: Latency,
    /// Panel queries that failed (status, error, no series), with the first reason.
    pub failed: u64,
    /// The first failure, if any.
    pub first_failure: Option<String>,
    /// Refreshes that took longer than the refresh interval.
    pub late: u64,
    /// Per panel of the wall, in wall order.
    pub panels: Vec<PanelResult>,
    /// Time of the variable queries (`SHOW TAG VALUES`), one per refresh each.
    pub variables: Latency,
    /// Variable queries that failed, or whose values missed a host.
    pub variables_failed: u64,
    /// Increase of `chingest_influxql_reads_total` by path, and of
    /// `chingest_hot_fallbacks_total` by reason (`hot fallback: behind`), over the phases
    /// (empty for a server without them).
    pub read_paths: BTreeMap<String, f64>,
    /// Background write requests answered 2xx, and not.
    pub writes_ok: u64,
    /// Background write requests refused, failed or dropped at the in-flight cap.
    pub writes_not_ok: u64,
}

/// What a run recorded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DashboardRun {
    /// The run's configuration.
    pub config: DashboardConfig,
    /// Points each background write request carries.
    pub points_per_write: u64,
    /// The machine.
    pub host: crate::host::Host,
    /// When it started (RFC 3339).
    pub started: String,
    /// Per server, in the order given.
    pub servers: Vec<ServerResult>,
    /// Every panel's answer on the first server compared with each other server's.
    pub comparisons: Vec<Comparison>,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn uri(s: &str) -> Result<Uri> {
    s.parse()
        .map_err(|e| Error::InvalidArgument(format!("{s}: {e}")))
}

/// One server's state across its phases.
struct Subject {
    server: Server,
    /// The last gather written, ms (`None` before the first phase).
    gathered_ms: Option<i64>,
    refresh: LatencyHist,
    query: LatencyHist,
    refreshes: u64,
    failed: u64,
    first_failure: Option<String>,
    late: u64,
    writes_ok: u64,
    writes_not_ok: u64,
    /// Per wall slot: latency and answers by read path.
    panels: Vec<(LatencyHist, BTreeMap<String, u64>)>,
    variables: LatencyHist,
    variables_failed: u64,
    read_paths: BTreeMap<String, f64>,
}

/// Runs the benchmark over `servers`; `payloads` for the background writes.
pub async fn run(
    cfg: &DashboardConfig,
    servers: &[Server],
    payloads: Option<Arc<PayloadSet>>,
) -> Result<DashboardRun> {
    if cfg.hosts == 0 || cfg.panels == 0 || cfg.concurrency == 0 || cfg.rounds == 0 {
        return Err(Error::InvalidArgument(
            "hosts, panels, concurrency and rounds must be positive".into(),
        ));
    }
    if cfg.write_rate > 0.0 && payloads.is_none() {
        return Err(Error::InvalidArgument(
            "--write-rate needs --payloads".into(),
        ));
    }
    let timeout = Duration::from_secs_f64(cfg.timeout_secs);
    let http = Http::new(cfg.concurrency + 2, timeout);
    let panels = panels::load(&cfg.dashboard)?;
    let hosts: Vec<String> = (0..cfg.hosts).map(|i| format!("host-{i:04}")).collect();
    let wall = panels::layout(&panels, cfg.panels, &hosts, &cfg.views);
    let variables = panels::variables(&cfg.dashboard)?;
    let started = crate::host::now_rfc3339();
    let mut subjects: Vec<Subject> = servers
        .iter()
        .map(|s| Subject {
            server: s.clone(),
            gathered_ms: None,
            refresh: LatencyHist::new(),
            query: LatencyHist::new(),
            refreshes: 0,
            failed: 0,
            first_failure: None,
            late: 0,
            writes_ok: 0,
            writes_not_ok: 0,
            panels: vec![Default::default(); wall.len()],
            variables: LatencyHist::new(),
            variables_failed: 0,
            read_paths: BTreeMap::new(),
        })
        .collect();
    for round in 0..cfg.rounds {
        let order: Vec<usize> = if round % 2 == 0 {
            (0..subjects.len()).collect()
        } else {
            (0..subjects.len()).rev().collect()
        };
        for i in order {
            let s = &mut subjects[i];
            eprintln!(
                "round {}: {} for {} s",
                round + 1,
                s.server.name,
                cfg.phase_secs
            );
            let before = compare::read_paths(&http, &s.server).await;
            phase(cfg, &http, &hosts, &wall, &variables, s, payloads.clone()).await?;
            for (path, n) in compare::read_paths(&http, &s.server).await {
                *s.read_paths.entry(path.clone()).or_default() +=
                    n - before.get(&path).copied().unwrap_or(0.0);
            }
        }
    }
    eprintln!("comparing every panel's answers");
    let comparisons = compare::all(cfg, &http, &hosts, &wall, &mut subjects).await?;
    Ok(DashboardRun {
        config: cfg.clone(),
        points_per_write: payloads.as_ref().map_or(0, |p| p.get(0).points),
        host: crate::host::collect(),
        started,
        servers: subjects
            .into_iter()
            .map(|s| ServerResult {
                name: s.server.name,
                refreshes: s.refreshes,
                refresh: s.refresh.summary(),
                query: s.query.summary(),
                failed: s.failed,
                first_failure: s.first_failure,
                late: s.late,
                panels: wall
                    .iter()
                    .zip(&s.panels)
                    .map(|(slot, (h, paths))| PanelResult {
                        label: slot.label(),
                        query: h.summary(),
                        paths: paths.clone(),
                    })
                    .collect(),
                variables: s.variables.summary(),
                variables_failed: s.variables_failed,
                read_paths: s.read_paths,
                writes_ok: s.writes_ok,
                writes_not_ok: s.writes_not_ok,
            })
            .collect(),
        comparisons,
    })
}

/// Whether `body` is a good panel answer: no error, at least one series.
fn judge(status: u16, body: &[u8]) -> std::result::Result<(), String> {
    if status != 200 {
        return Err(format!(
            "status {status}: {}",
            String::from_utf8_lossy(body)
        ));
    }
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let r = &v["results"][0];
    if let Some(e) = r.get("error").or(v.get("error")) {
        return Err(format!("error: {e}"));
    }
    match r["series"].as_array() {
        Some(s) if !s.is_empty() => Ok(()),
        _ => Err("no series".into()),
    }
}

/// One server's phase: refreshes every `refresh_secs` with the background writes beside.
async fn phase(
    cfg: &DashboardConfig,
    http: &Http,
    hosts: &[String],
    wall: &[panels::Slot],
    variables: &[String],
    s: &mut Subject,
    payloads: Option<Arc<PayloadSet>>,
) -> Result<()> {
    gather::gather(cfg, http, hosts, s, now_ms()).await?;
    let duration = Duration::from_secs_f64(cfg.phase_secs);
    let writes = Arc::new(Mutex::new((0u64, 0u64)));
    let background = match payloads {
        Some(p) if cfg.write_rate > 0.0 => {
            let url = format!(
                "{}/write?db={}",
                s.server.base,
                encode_component(&cfg.write_db)
            );
            let target = Target::new(&url, None, Duration::from_secs_f64(cfg.timeout_secs))?;
            let sender = Arc::new(Sender::new(target, p, 64));
            let step = Step::new(cfg.write_rate, duration)?;
            let writes = writes.clone();
            Some(tokio::spawn(async move {
                let inflight = InFlight::new(64);
                run_step(&step, &inflight, |tick| match tick.permit {
                    Some(permit) => {
                        let (sender, writes) = (sender.clone(), writes.clone());
                        tokio::spawn(async move {
                            let ok = matches!(sender.send(tick.k).await, Outcome::Ok);
                            drop(permit);
                            let mut w = writes.lock().unwrap();
                            if ok {
                                w.0 += 1
                            } else {
                                w.1 += 1
                            }
                        });
                    }
                    None => writes.lock().unwrap().1 += 1,
                })
                .await;
                // The step's last requests are counted when they are answered.
                while inflight.current() > 0 {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }))
        }
        _ => None,
    };
    let start = Instant::now();
    let every = Duration::from_secs_f64(cfg.refresh_secs);
    let mut k = 0u32;
    while start.elapsed() + every <= duration + Duration::from_millis(1) {
        tokio::time::sleep_until((start + every * k).into()).await;
        k += 1;
        let now = now_ms();
        gather::gather(cfg, http, hosts, s, now).await?;
        for q in variables {
            let t = Instant::now();
            let r = http.get(&query_uri(cfg, &s.server, q)?).await;
            s.variables.record(t.elapsed());
            let ok = r.is_ok_and(|r| lists_hosts(r.status, &r.body, hosts));
            s.variables_failed += u64::from(!ok);
        }
        let gate = Arc::new(Semaphore::new(cfg.concurrency));
        let t0 = Instant::now();
        let mut tasks = Vec::new();
        for slot in wall {
            let q = slot.query(hosts, now, GATHER_MS);
            let u = query_uri(cfg, &s.server, &q)?;
            let (http, gate) = (http.clone(), gate.clone());
            tasks.push(tokio::spawn(async move {
                let _slot = gate.acquire_owned().await;
                let t = Instant::now();
                let r = http.get(&u).await;
                let took = t.elapsed();
                let (verdict, path) = match r {
                    Ok(r) => (judge(r.status, &r.body), r.read_path),
                    Err(e) => (Err(e.to_string()), None),
                };
                (took, path, verdict.map_err(|e| format!("{q}: {e}")))
            }));
        }
        let mut good = true;
        for (k, t) in tasks.into_iter().enumerate() {
            let (took, path, verdict) =
                t.await.map_err(|e| Error::InvalidArgument(e.to_string()))?;
            s.query.record(took);
            let (hist, paths) = &mut s.panels[k];
            hist.record(took);
            *paths.entry(path.unwrap_or_else(|| "-".into())).or_default() += 1;
            if let Err(e) = verdict {
                good = false;
                s.failed += 1;
                s.first_failure.get_or_insert(e);
            }
        }
        let took = t0.elapsed();
        if good {
            s.refreshes += 1;
            s.refresh.record(took);
        }
        if took > every {
            s.late += 1;
        }
    }
    if let Some(b) = background {
        b.await.map_err(|e| Error::InvalidArgument(e.to_string()))?;
    }
    let w = *writes.lock().unwrap();
    s.writes_ok += w.0;
    s.writes_not_ok += w.1;
    Ok(())
}

pub(super) fn query_uri(cfg: &DashboardConfig, server: &Server, q: &str) -> Result<Uri> {
    uri(&format!(
        "{}/query?db={}&epoch=ms&q={}",
        server.base,
        encode_component(&cfg.db),
        encode_component(q)
    ))
}

/// Whether a variable query's answer lists every host (Grafana's options for `$host`).
fn lists_hosts(status: u16, body: &[u8], hosts: &[String]) -> bool {
    if judge(status, body).is_err() {
        return false;
    }
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    let listed: std::collections::HashSet<&str> = v["results"][0]["series"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["values"].as_array().into_iter().flatten())
        .filter_map(|row| row[1].as_str())
        .collect();
    hosts.iter().all(|h| listed.contains(h.as_str()))
}
