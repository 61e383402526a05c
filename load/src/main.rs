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
use load::overload::result::loadavg;
use load::overload::result::Targets;
use load::overload::{run_overload, OverloadConfig};
use load::query::bench::{failed, grafana_queries, run_query, Runs};
use load::query::fill::{run_fill, FillConfig, FillResult};
use load::query::http::Http;
use load::query::result::{Phase, QueryBench};
use load::report::{
    overload_markdown, query_bench_markdown, regenerate, write_overload, write_query_bench,
    write_run, ReportInputs, OVERLOAD_NAME, QUERY_BENCH_NAME,
};
use load::schedule::{run_ramp, RampConfig};
use load::summary::{summarize, RunResult, StepResult};

mod tsbs_cmd;

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
    /// Overload: 1×, then 2×, then 1× the sustainable rate, with the server's RSS.
    Overload(OverloadArgs),
    /// Regenerate the every-layer benchmark page from the JSON results.
    Report(ReportArgs),
    /// Null endpoint answering 204 to every write: ramp against it to measure this client.
    Sink(SinkArgs),
    /// Query benchmark, step 1: write exactly N points of `cpu` over a time span, timed.
    Fill(FillArgs),
    /// Query benchmark, step 2: check, then time Grafana's query shapes on each server.
    Query(QueryArgs),
    /// TSBS benchmark, step 1: create the database as TSBS's loader does, write `cpu-only` data.
    TsbsFill(tsbs_cmd::TsbsFillArgs),
    /// TSBS benchmark, step 2: every query type on every server, answers compared, timed.
    TsbsQuery(tsbs_cmd::TsbsQueryArgs),
    /// Dashboard benchmark: a wall of Grafana panels refreshed on each server while it ingests.
    Dashboard(DashboardArgs),
}

#[derive(Args)]
struct DashboardArgs {
    /// A server, NAME=http://host:port (repeat); one at a time is loaded.
    #[arg(long = "server", required = true)]
    servers: Vec<load::query::bench::Server>,
    /// The Grafana dashboard JSON whose InfluxQL panels are refreshed.
    #[arg(
        long,
        default_value = "deploy/grafana/provisioning/dashboards/telegraf-hosts.json"
    )]
    dashboard: PathBuf,
    /// Database of the Telegraf-shaped data.
    #[arg(long, default_value = "telegraf")]
    db: String,
    /// Hosts reporting every 10 s.
    #[arg(long, default_value_t = 100)]
    hosts: usize,
    /// Panels on the wall.
    #[arg(long, default_value_t = 20)]
    panels: usize,
    /// Panel queries in flight at once per refresh.
    #[arg(long, default_value_t = 6)]
    concurrency: usize,
    /// Seconds between refreshes.
    #[arg(long, default_value_t = 10.0)]
    refresh_secs: f64,
    /// Seconds each server is loaded per round.
    #[arg(long, default_value_t = 150.0)]
    phase_secs: f64,
    /// Rounds (each server once per round, the order alternating).
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// How each dashboard tab shows its panels, tab after tab: a time range
    /// (`1h`, `6h`), `:all` for `$host` = All (every host), else one host.
    #[arg(long, default_value = "1h,6h,1h:all")]
    views: String,
    /// Background write requests per second (0: none); needs --payloads.
    #[arg(long, default_value_t = 0.0)]
    write_rate: f64,
    /// `chingest-load gen` output for the background writes.
    #[arg(long)]
    payloads: Option<PathBuf>,
    /// Database of the background writes.
    #[arg(long, default_value = "load")]
    write_db: String,
    /// Per-request timeout, seconds.
    #[arg(long, default_value_t = 60.0)]
    timeout_secs: f64,
    /// A line for the report; repeatable.
    #[arg(long = "note")]
    notes: Vec<String>,
    /// Results directory.
    #[arg(long, default_value = "test_results/latest")]
    results: PathBuf,
    /// Base name of the result files.
    #[arg(long, default_value = "dashboard_bench")]
    name: String,
}

#[derive(Args)]
struct FillArgs {
    /// Server name in the report (chingest, influxdb).
    #[arg(long)]
    server: String,
    /// Full write URL, e.g. http://127.0.0.1:8086/write?db=bench.
    #[arg(long)]
    url: String,
    /// Points in all (a multiple of --hosts and of --batch).
    #[arg(long, default_value_t = 10_000_000)]
    points: u64,
    /// Hosts, i.e. series.
    #[arg(long, default_value_t = 1_000)]
    hosts: usize,
    /// Fields per point (cpu's fields: usage_user, usage_system, procs, ...).
    #[arg(long, default_value_t = 2)]
    fields: usize,
    /// First timestamp, ns since the epoch (default 2026-01-01T00:00:00Z).
    #[arg(long, default_value_t = 1_767_225_600_000_000_000)]
    start_ns: i64,
    /// Seconds the points cover.
    #[arg(long, default_value_t = 86_400)]
    span_secs: i64,
    /// Points per request.
    #[arg(long, default_value_t = 50_000)]
    batch: usize,
    /// Requests in flight.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Per-request timeout, seconds.
    #[arg(long, default_value_t = 120.0)]
    timeout_secs: f64,
    /// Where to write the fill's JSON result (read by `query --ingest`).
    #[arg(long)]
    out: PathBuf,
}

#[derive(Args)]
struct QueryArgs {
    /// A server, NAME=http://host:port (repeat; the first is the reference answer).
    #[arg(long = "server", required = true)]
    servers: Vec<load::query::bench::Server>,
    /// Database.
    #[arg(long, default_value = "bench")]
    db: String,
    /// `fill --out` results of this data set, one per server (the first sets the time range).
    #[arg(long = "ingest", required = true)]
    ingest: Vec<PathBuf>,
    /// Phase name; a rerun replaces the phase of that name in the results.
    #[arg(long)]
    phase: String,
    /// A line for the report (how the servers were made queryable, ...); repeatable.
    #[arg(long = "note")]
    notes: Vec<String>,
    /// Host of the panel query (default: the middle host).
    #[arg(long)]
    host: Option<String>,
    /// Untimed runs per server and query before timing.
    #[arg(long, default_value_t = 2)]
    warmup: usize,
    /// Timed requests of the panel query per server and client count.
    #[arg(long, default_value_t = 50)]
    panel_runs: usize,
    /// Timed requests of the all-hosts query per server and client count.
    #[arg(long, default_value_t = 20)]
    all_hosts_runs: usize,
    /// Client counts of the panel query.
    #[arg(long, value_delimiter = ',', default_value = "1,4")]
    panel_clients: Vec<usize>,
    /// Client counts of the all-hosts query.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    all_hosts_clients: Vec<usize>,
    /// Per-request timeout, seconds.
    #[arg(long, default_value_t = 600.0)]
    timeout_secs: f64,
    /// Results directory.
    #[arg(long, default_value = "test_results/latest")]
    results: PathBuf,
    /// Base name of the result files.
    #[arg(long, default_value = load::report::QUERY_BENCH_NAME)]
    name: String,
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
    /// Per-request timeout, seconds (counted as a timeout, not a latency).
    #[arg(long, default_value_t = 30.0)]
    timeout_secs: f64,
    /// Server process id: its CPU time is sampled from /proc per step.
    #[arg(long)]
    server_pid: Option<u32>,
    /// Results directory.
    #[arg(long, default_value = "test_results/latest")]
    results: PathBuf,
    /// Base name of the result files (default: ramp / closed / overload).
    #[arg(long)]
    name: Option<String>,
}

#[derive(Args)]
struct Steps {
    /// Seconds per step.
    #[arg(long, default_value_t = 10.0)]
    step_secs: f64,
    /// p95 budget for the sustainable rule, ms.
    #[arg(long, default_value_t = 250.0)]
    budget_ms: f64,
}

#[derive(Args)]
struct RampArgs {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    steps: Steps,
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
    #[command(flatten)]
    steps: Steps,
    /// Virtual users, comma-separated, one step each.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16,64")]
    vus: Vec<usize>,
}

#[derive(Args)]
struct OverloadArgs {
    #[command(flatten)]
    common: Common,
    /// The sustainable rate (1×), requests per second.
    #[arg(long)]
    base_rate: f64,
    /// Where the base rate comes from, for the report.
    #[arg(long, default_value = "--base-rate")]
    base_source: String,
    /// Overload multiple of the base rate.
    #[arg(long, default_value_t = 2.0)]
    factor: f64,
    /// Seconds at 1× before the overload.
    #[arg(long, default_value_t = 30.0)]
    warm_secs: f64,
    /// Seconds at the overload rate.
    #[arg(long, default_value_t = 60.0)]
    overload_secs: f64,
    /// Seconds at 1× after the overload.
    #[arg(long, default_value_t = 60.0)]
    recover_secs: f64,
    /// In-flight cap; a request due while it is reached is dropped.
    #[arg(long, default_value_t = 64)]
    max_in_flight: usize,
    /// Server's Prometheus URL: stage time and refusals by limit per phase.
    #[arg(long)]
    metrics_url: Option<String>,
    /// Resident memory sampling interval (needs --server-pid), ms.
    #[arg(long, default_value_t = 250)]
    rss_every_ms: u64,
    /// A memory-bounding server setting summed into the budget, NAME=BYTES
    /// (repeat or comma-separate), on top of the idle server's measured RSS.
    #[arg(long = "budget-part", value_delimiter = ',')]
    budget_parts: Vec<load::overload::result::BudgetPart>,
    /// Refusal p99 target, ms.
    #[arg(long, default_value_t = 100.0)]
    refusal_p99_ms: f64,
    /// Recovery target: accepted rate after ÷ before, at least.
    #[arg(long, default_value_t = 0.95)]
    recovery_fraction: f64,
}

#[derive(Args)]
struct ReportArgs {
    /// Directory with chdb_raw.json, flush.json, ramp.json, closed.json.
    #[arg(long, default_value = "test_results/latest")]
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
    budget_ms: f64,
    s: &Sender,
    config: serde_json::Value,
    steps: Vec<StepResult>,
) -> anyhow::Result<()> {
    let summary = summarize(&steps, budget_ms);
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
        Cmd::Overload(a) => overload(a),
        Cmd::Report(a) => report(a),
        Cmd::Sink(a) => sink(a),
        Cmd::Fill(a) => fill(a),
        Cmd::Query(a) => query(a),
        Cmd::TsbsFill(a) => tsbs_cmd::tsbs_fill(a),
        Cmd::TsbsQuery(a) => tsbs_cmd::tsbs_query(a),
        Cmd::Dashboard(a) => dashboard(a),
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
        step_secs: a.steps.step_secs,
        max_in_flight: a.max_in_flight,
        budget_ms: a.steps.budget_ms,
        server_pid: a.common.server_pid,
        metrics_url: a.metrics_url,
    };
    cfg.steps()?;
    let s = sender(&a.common, a.max_in_flight)?;
    let steps = runtime()?.block_on(run_ramp(&cfg, s.clone()))?;
    let budget = cfg.budget_ms;
    finish(
        "ramp",
        &a.common,
        budget,
        &s,
        serde_json::to_value(&cfg)?,
        steps,
    )
}

fn closed(a: ClosedArgs) -> anyhow::Result<()> {
    let cfg = ClosedConfig {
        vus: a.vus,
        step_secs: a.steps.step_secs,
        budget_ms: a.steps.budget_ms,
        server_pid: a.common.server_pid,
    };
    let pool = cfg.vus.iter().copied().max().unwrap_or(1);
    let s = sender(&a.common, pool)?;
    let steps = runtime()?.block_on(run_closed(&cfg, s.clone()))?;
    let budget = cfg.budget_ms;
    finish(
        "closed",
        &a.common,
        budget,
        &s,
        serde_json::to_value(&cfg)?,
        steps,
    )
}

fn overload(a: OverloadArgs) -> anyhow::Result<()> {
    let cfg = OverloadConfig {
        base_rps: a.base_rate,
        base_source: a.base_source,
        factor: a.factor,
        warm_secs: a.warm_secs,
        overload_secs: a.overload_secs,
        recover_secs: a.recover_secs,
        max_in_flight: a.max_in_flight,
        server_pid: a.common.server_pid,
        metrics_url: a.metrics_url,
        rss_every_ms: a.rss_every_ms,
        budget_parts: a.budget_parts,
        targets: Targets {
            refusal_p99_ms: a.refusal_p99_ms,
            recovery_fraction: a.recovery_fraction,
        },
    };
    cfg.steps()?;
    let s = sender(&a.common, a.max_in_flight)?;
    let mut r = runtime()?.block_on(run_overload(&cfg, s))?;
    r.url = redact_url(&a.common.url);
    let name = a.common.name.as_deref().unwrap_or(OVERLOAD_NAME);
    for p in write_overload(&a.common.results, name, &r)? {
        eprintln!("wrote {}", p.display());
    }
    print!("{}", overload_markdown(&r));
    Ok(())
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
    // The query benchmark's own page is a view of its JSON too: keep it in step.
    let query_json = inp.results_dir.join(format!("{QUERY_BENCH_NAME}.json"));
    if query_json.exists() {
        let bench = QueryBench::load(&query_json)?;
        for p in write_query_bench(&inp.results_dir, QUERY_BENCH_NAME, &bench)? {
            eprintln!("wrote {}", p.display());
        }
    }
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

fn timeout(secs: f64) -> anyhow::Result<Duration> {
    if !(secs.is_finite() && secs > 0.0) {
        anyhow::bail!("--timeout-secs must be positive");
    }
    Ok(Duration::from_secs_f64(secs))
}

fn fill(a: FillArgs) -> anyhow::Result<()> {
    let cfg = FillConfig {
        url: a.url,
        points: a.points,
        hosts: a.hosts,
        fields: a.fields,
        start_ns: a.start_ns,
        span_ns: a
            .span_secs
            .checked_mul(1_000_000_000)
            .context("--span-secs too large")?,
        batch: a.batch,
        concurrency: a.concurrency,
    };
    let t = timeout(a.timeout_secs)?;
    let r = runtime()?.block_on(run_fill(&a.server, &cfg, t))?;
    let json = serde_json::to_vec_pretty(&r)?;
    std::fs::write(&a.out, json).with_context(|| format!("writing {}", a.out.display()))?;
    eprintln!(
        "{}: {} points in {:.1} s ({:.0} points/s, {} retries)",
        r.server,
        r.points,
        r.secs,
        r.points_per_sec(),
        r.retries
    );
    Ok(())
}

fn dashboard(a: DashboardArgs) -> anyhow::Result<()> {
    let cfg = load::dashboard::DashboardConfig {
        dashboard: a.dashboard,
        db: a.db,
        hosts: a.hosts,
        panels: a.panels,
        concurrency: a.concurrency,
        refresh_secs: a.refresh_secs,
        phase_secs: a.phase_secs,
        rounds: a.rounds,
        views: load::dashboard::panels::views(&a.views)?,
        write_rate: a.write_rate,
        write_db: a.write_db,
        timeout_secs: a.timeout_secs,
    };
    let payloads = match &a.payloads {
        Some(dir) => Some(Arc::new(PayloadSet::load(dir).with_context(|| {
            format!(
                "loading payloads from {} (run `chingest-load gen` first)",
                dir.display()
            )
        })?)),
        None => None,
    };
    let run = runtime()?.block_on(load::dashboard::run(&cfg, &a.servers, payloads))?;
    for p in load::dashboard::report::write_dashboard(&a.results, &a.name, &run, &a.notes)? {
        eprintln!("wrote {}", p.display());
    }
    print!("{}", load::dashboard::report::markdown(&run, &a.notes));
    Ok(())
}

fn query(a: QueryArgs) -> anyhow::Result<()> {
    let ingest = a
        .ingest
        .iter()
        .map(|p| {
            let text = std::fs::read(p).with_context(|| format!("reading {}", p.display()))?;
            serde_json::from_slice::<FillResult>(&text)
                .with_context(|| format!("parsing {}", p.display()))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let data = &ingest[0];
    let host = a
        .host
        .unwrap_or_else(|| format!("host-{:05}", data.series / 2));
    let runs = Runs {
        warmup: a.warmup,
        panel: a.panel_runs,
        all_hosts: a.all_hosts_runs,
        panel_clients: a.panel_clients,
        all_hosts_clients: a.all_hosts_clients,
    };
    let specs = grafana_queries(data, &host, &runs);
    let pool = runs
        .panel_clients
        .iter()
        .chain(&runs.all_hosts_clients)
        .copied()
        .max()
        .unwrap_or(1);
    let http = Http::new(pool, timeout(a.timeout_secs)?);
    let loadavg_before = loadavg();
    let queries = runtime()?.block_on(async {
        let mut out = Vec::new();
        for q in &specs {
            eprintln!("query {}: {}", q.name, q.text);
            // A failure is recorded (the page says why) and the run goes on.
            out.push(match run_query(&http, &a.servers, &a.db, q).await {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("query {}: {e}", q.name);
                    failed(q, &e)
                }
            });
        }
        out
    });
    let failures = queries.iter().filter(|q| q.failure.is_some()).count();
    let phase = Phase {
        name: a.phase,
        tool: format!("chingest-load {}", env!("CARGO_PKG_VERSION")),
        ingest,
        notes: a.notes,
        queries,
        loadavg_before,
        loadavg_after: loadavg(),
        host: load::host::collect(),
    };
    let path = a.results.join(format!("{}.json", a.name));
    let mut bench = QueryBench::load(&path)?;
    bench.upsert(phase);
    for p in write_query_bench(&a.results, &a.name, &bench)? {
        eprintln!("wrote {}", p.display());
    }
    print!("{}", query_bench_markdown(&bench));
    if failures > 0 {
        anyhow::bail!("{failures} quer(ies) failed: see the results");
    }
    Ok(())
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
