//! `chingest-load`: thin command-line front end over the `load` library.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use load::client::{redact_url, PayloadSet, Sender, Target};
use load::closed::{run_closed, ClosedConfig};
use load::gen::{generate, Format, GenConfig};
use load::report::{regenerate, write_run, ReportInputs};
use load::schedule::{run_ramp, RampConfig};
use load::summary::{summarize, RunResult, StepResult};

#[derive(Parser)]
#[command(
    name = "chingest-load",
    version,
    about = "Open-model ramp and closed-model load generator for InfluxDB-compatible write endpoints"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Pre-encode payload files and a manifest.
    Gen(GenArgs),
    /// Open model: constant arrival rate per step, drops at the in-flight cap.
    Ramp(RampArgs),
    /// Closed model: N users back to back per step (contrast only).
    Closed(ClosedArgs),
    /// Regenerate the every-layer benchmark page from the JSON results.
    Report(ReportArgs),
    /// Null endpoint answering 204 to every write: ramp against it to measure this client.
    Sink(SinkArgs),
}

#[derive(Args)]
struct SinkArgs {
    /// Address to listen on (port 0 picks a free one; the address is printed).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: String,
}

#[derive(Args)]
struct GenArgs {
    /// Output directory.
    #[arg(long, default_value = "payloads")]
    out: PathBuf,
    /// lp, msgpack-row or msgpack-columnar.
    #[arg(long, default_value = "lp")]
    format: Format,
    /// Gzip each body (sent with Content-Encoding: gzip).
    #[arg(long)]
    gzip: bool,
    /// Number of payload files (requests cycle through them).
    #[arg(long, default_value_t = 8)]
    files: usize,
    /// Points per file (= per request).
    #[arg(long, default_value_t = 50_000)]
    points: usize,
    /// Measurements, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "cpu,mem,disk,net")]
    measurements: Vec<String>,
    /// Hosts per measurement (series = measurements × hosts).
    #[arg(long, default_value_t = 1_000)]
    hosts: usize,
    /// Fields per point, 1..=8 (types: float, float, int, bool, string, float, int, float).
    #[arg(long, default_value_t = 6)]
    fields: usize,
    /// First timestamp, ns since the epoch.
    #[arg(long, default_value_t = 1_767_225_600_000_000_000)]
    start_ns: i64,
    /// Interval between a series' points, ns.
    #[arg(long, default_value_t = 10_000_000_000)]
    step_ns: i64,
    /// Random seed.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

#[derive(Args)]
struct Common {
    /// Full write URL including the query string, e.g. http://127.0.0.1:8086/write?db=bench.
    #[arg(long)]
    url: String,
    /// Token, sent as `Authorization: Token <token>`.
    #[arg(long, env = "CHINGEST_LOAD_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Directory written by `gen`.
    #[arg(long, default_value = "payloads")]
    payloads: PathBuf,
    /// Seconds per step.
    #[arg(long, default_value_t = 10.0)]
    step_secs: f64,
    /// p95 budget for the sustainable rule, ms.
    #[arg(long, default_value_t = 250.0)]
    budget_ms: f64,
    /// Per-request timeout, seconds (counted as a timeout, not a latency).
    #[arg(long, default_value_t = 30.0)]
    timeout_secs: f64,
    /// Server process id: its CPU time is sampled from /proc per step.
    #[arg(long)]
    server_pid: Option<u32>,
    /// Results directory.
    #[arg(long, default_value = "test_results")]
    results: PathBuf,
    /// Base name of the result files (default: ramp / closed).
    #[arg(long)]
    name: Option<String>,
}

#[derive(Args)]
struct RampArgs {
    #[command(flatten)]
    common: Common,
    /// Offered requests per second, comma-separated, one step each.
    #[arg(long, value_delimiter = ',', required = true)]
    rates: Vec<f64>,
    /// In-flight cap; a request due while it is reached is dropped.
    #[arg(long, default_value_t = 64)]
    max_in_flight: usize,
    /// Server's Prometheus URL (e.g. http://127.0.0.1:8086/metrics), scraped around
    /// each step for per-stage time from the `chingest_*_seconds` histograms.
    #[arg(long)]
    metrics_url: Option<String>,
}

#[derive(Args)]
struct ClosedArgs {
    #[command(flatten)]
    common: Common,
    /// Virtual users, comma-separated, one step each.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16,64")]
    vus: Vec<usize>,
}

#[derive(Args)]
struct ReportArgs {
    /// Directory with chdb_raw.json, flush.json, ramp.json, closed.json.
    #[arg(long, default_value = "test_results")]
    results: PathBuf,
    /// Markdown file to write.
    #[arg(long, default_value = "docs/benchmarks.md")]
    out: PathBuf,
    /// Base name of the ramp results.
    #[arg(long, default_value = "ramp")]
    ramp_name: String,
    /// Base name of the closed results.
    #[arg(long, default_value = "closed")]
    closed_name: String,
}

fn sender(c: &Common, pool: usize) -> anyhow::Result<Arc<Sender>> {
    if !(c.timeout_secs.is_finite() && c.timeout_secs > 0.0) {
        anyhow::bail!("--timeout-secs must be positive");
    }
    let target = Target::new(
        &c.url,
        c.token.as_deref(),
        Duration::from_secs_f64(c.timeout_secs),
    )?;
    let payloads = PayloadSet::load(&c.payloads).with_context(|| {
        format!(
            "loading payloads from {} (run `chingest-load gen` first)",
            c.payloads.display()
        )
    })?;
    Ok(Arc::new(Sender::new(target, Arc::new(payloads), pool)))
}

fn finish(
    kind: &str,
    c: &Common,
    s: &Sender,
    config: serde_json::Value,
    steps: Vec<StepResult>,
) -> anyhow::Result<()> {
    let summary = summarize(&steps, c.budget_ms);
    let run = RunResult {
        kind: kind.into(),
        tool: format!("chingest-load {}", env!("CARGO_PKG_VERSION")),
        url: redact_url(&c.url),
        payloads: s.payloads().description.clone(),
        config,
        host: load::host::collect(),
        steps,
        summary,
    };
    let name = c.name.clone().unwrap_or_else(|| kind.to_string());
    for p in write_run(&c.results, &name, &run)? {
        eprintln!("wrote {}", p.display());
    }
    print!("{}", load::report::run_markdown(&run));
    Ok(())
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.cmd {
        Cmd::Gen(a) => gen(a),
        Cmd::Ramp(a) => ramp(a),
        Cmd::Closed(a) => closed(a),
        Cmd::Report(a) => report(a),
        Cmd::Sink(a) => sink(a),
    }
}

fn gen(a: GenArgs) -> anyhow::Result<()> {
    let cfg = GenConfig {
        format: a.format,
        gzip: a.gzip,
        files: a.files,
        points_per_file: a.points,
        measurements: a.measurements,
        hosts: a.hosts,
        fields: a.fields,
        start_ns: a.start_ns,
        step_ns: a.step_ns,
        seed: a.seed,
    };
    let m = generate(&cfg, &a.out)?;
    let bytes: u64 = m.files.iter().map(|f| f.bytes).sum();
    eprintln!(
        "wrote {} files ({} points each, {:.1} MiB total, {}) and {} to {}",
        m.files.len(),
        m.points_per_file,
        bytes as f64 / (1u64 << 20) as f64,
        m.content_type,
        load::gen::MANIFEST,
        a.out.display()
    );
    Ok(())
}

fn ramp(a: RampArgs) -> anyhow::Result<()> {
    let cfg = RampConfig {
        rates: a.rates,
        step_secs: a.common.step_secs,
        max_in_flight: a.max_in_flight,
        budget_ms: a.common.budget_ms,
        server_pid: a.common.server_pid,
        metrics_url: a.metrics_url,
    };
    cfg.steps()?;
    let s = sender(&a.common, a.max_in_flight)?;
    let steps = runtime()?.block_on(run_ramp(&cfg, s.clone()))?;
    finish("ramp", &a.common, &s, serde_json::to_value(&cfg)?, steps)
}

fn closed(a: ClosedArgs) -> anyhow::Result<()> {
    let cfg = ClosedConfig {
        vus: a.vus,
        step_secs: a.common.step_secs,
        budget_ms: a.common.budget_ms,
        server_pid: a.common.server_pid,
    };
    let pool = cfg.vus.iter().copied().max().unwrap_or(1);
    let s = sender(&a.common, pool)?;
    let steps = runtime()?.block_on(run_closed(&cfg, s.clone()))?;
    finish("closed", &a.common, &s, serde_json::to_value(&cfg)?, steps)
}

fn report(a: ReportArgs) -> anyhow::Result<()> {
    let inp = ReportInputs {
        results_dir: a.results,
        out: a.out,
        ramp_name: a.ramp_name,
        closed_name: a.closed_name,
    };
    regenerate(&inp)?;
    eprintln!("wrote {}", inp.out.display());
    Ok(())
}

fn sink(a: SinkArgs) -> anyhow::Result<()> {
    runtime()?.block_on(async {
        let listener = tokio::net::TcpListener::bind(&a.listen)
            .await
            .with_context(|| format!("binding {}", a.listen))?;
        println!("sink listening on http://{}", listener.local_addr()?);
        load::sink::serve(listener).await?;
        Ok(())
    })
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chingest-load: {e:#}");
            ExitCode::FAILURE
        }
    }
}
