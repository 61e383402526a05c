//! `chingest-load tsbs-fill` and `tsbs-query`: the command-line side of [`load::tsbs`].

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use load::overload::result::loadavg;
use load::query::bench::Server;
use load::query::http::Http;
use load::tsbs::data::TsbsData;
use load::tsbs::queries::{QueryType, ALL};
use load::tsbs::report::{load_tsbs_bench, tsbs_markdown, write_tsbs_bench, TSBS_BENCH_NAME};
use load::tsbs::run::{fill, run_type, Order, Servers, TsbsFill, TsbsPhase};

/// The data set, the same for `tsbs-fill` and `tsbs-query`.
#[derive(Args, Clone)]
pub(crate) struct DataArgs {
    /// Hosts (series).
    #[arg(long, default_value_t = 200)]
    hosts: usize,
    /// Hours of data, one point per host every 10 s.
    #[arg(long, default_value_t = 24)]
    hours: u32,
    /// First timestamp, ns since the epoch (TSBS's default start, 2016-01-01).
    #[arg(long, default_value_t = 1_451_606_400_000_000_000)]
    start_ns: i64,
    /// Seed of the field values.
    #[arg(long, default_value_t = 123)]
    data_seed: u64,
    /// Database.
    #[arg(long, default_value = "benchmark")]
    db: String,
}

impl DataArgs {
    fn data(&self) -> anyhow::Result<TsbsData> {
        Ok(TsbsData::new(
            self.hosts,
            self.start_ns,
            self.hours,
            self.data_seed,
        )?)
    }
}

#[derive(Args)]
pub(crate) struct TsbsFillArgs {
    /// The server, NAME=http://host:port.
    #[arg(long)]
    server: Server,
    #[command(flatten)]
    data: DataArgs,
    /// Points per request (a multiple of the hosts).
    #[arg(long, default_value_t = 10_000)]
    batch: usize,
    /// Requests in flight.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Per-request timeout, seconds.
    #[arg(long, default_value_t = 120.0)]
    timeout_secs: f64,
    /// Where to write the result (read by `tsbs-query --fill`).
    #[arg(long)]
    out: PathBuf,
}

#[derive(Args)]
pub(crate) struct TsbsQueryArgs {
    /// A server, NAME=http://host:port (repeat; the first is the reference answer).
    #[arg(long = "server", required = true)]
    servers: Vec<Server>,
    #[command(flatten)]
    data: DataArgs,
    /// `tsbs-fill --out` results, one per server.
    #[arg(long = "fill")]
    fills: Vec<PathBuf>,
    /// Phase name; a rerun replaces the phase of that name.
    #[arg(long)]
    phase: String,
    /// Query types (TSBS names, comma-separated; default: all 15).
    #[arg(long, value_delimiter = ',')]
    types: Vec<String>,
    /// Timed queries per type.
    #[arg(long, default_value_t = 20)]
    queries: usize,
    /// Untimed queries per type and server first.
    #[arg(long, default_value_t = 2)]
    warmup: usize,
    /// Seed of the queries' windows and hosts.
    #[arg(long, default_value_t = 321)]
    query_seed: u64,
    /// In what order a type's queries reach the servers: `blocks` (each
    /// server's back to back, TSBS's runner's shape) or `alternate` (per
    /// query each server once, the order until 2026-11-30).
    #[arg(long, value_enum, default_value_t = Order::Blocks)]
    order: Order,
    /// A line for the report; repeatable.
    #[arg(long = "note")]
    notes: Vec<String>,
    /// Per-request timeout, seconds.
    #[arg(long, default_value_t = 300.0)]
    timeout_secs: f64,
    /// Results directory.
    #[arg(long, default_value = "test_results/latest")]
    results: PathBuf,
}

pub(crate) fn tsbs_fill(a: TsbsFillArgs) -> anyhow::Result<()> {
    let data = a.data.data()?;
    let timeout = super::timeout(a.timeout_secs)?;
    let r = super::runtime()?.block_on(fill(
        &a.server,
        &a.data.db,
        &data,
        a.batch,
        a.concurrency,
        timeout,
    ))?;
    eprintln!(
        "{}: {} points in {:.1} s ({:.0}/s), CREATE DATABASE answered {}",
        r.server,
        r.points,
        r.secs,
        r.points as f64 / r.secs.max(1e-9),
        r.create_database
    );
    std::fs::write(&a.out, serde_json::to_vec_pretty(&r)?)
        .with_context(|| format!("writing {}", a.out.display()))?;
    Ok(())
}

pub(crate) fn tsbs_query(a: TsbsQueryArgs) -> anyhow::Result<()> {
    let data = a.data.data()?;
    let types = if a.types.is_empty() {
        ALL.to_vec()
    } else {
        a.types
            .iter()
            .map(|t| QueryType::parse(t))
            .collect::<Result<Vec<_>, _>>()?
    };
    let fills = a
        .fills
        .iter()
        .map(|p| {
            let text = std::fs::read(p).with_context(|| format!("reading {}", p.display()))?;
            serde_json::from_slice::<TsbsFill>(&text)
                .with_context(|| format!("parsing {}", p.display()))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let http = Http::new(1, super::timeout(a.timeout_secs)?);
    let loadavg_before = loadavg();
    // One thread: the one client's connection task and the request's share
    // it, so a body is read where it is awaited, as TSBS's Go runner reads
    // it on its worker's goroutine (`docs/benchmarks.md`, "TSBS").
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let results = runtime.block_on(async {
        let mut out = Vec::new();
        for t in types {
            let on = Servers {
                http: &http,
                servers: &a.servers,
                db: &a.data.db,
                data: &data,
            };
            let r = run_type(&on, t, a.queries, a.warmup, a.query_seed, a.order).await?;
            let p50 = |i: usize| {
                r.timings
                    .get(i)
                    .map_or(0.0, |t| t.latency.p50_us as f64 / 1e3)
            };
            eprintln!(
                "{:<24} {} queries, p50 {:>9.2} ms / {:>9.2} ms, {} mismatches{}",
                r.name,
                r.queries,
                p50(0),
                p50(1),
                r.mismatches,
                r.failure
                    .as_deref()
                    .map(|f| format!(", stopped: {f}"))
                    .unwrap_or_default()
            );
            out.push(r);
        }
        anyhow::Ok(out)
    })?;
    let broken = results
        .iter()
        .filter(|t| t.failure.is_some() || t.mismatches > 0)
        .count();
    let phase = TsbsPhase {
        name: a.phase,
        tool: format!("chingest-load {}", env!("CARGO_PKG_VERSION")),
        data,
        query_seed: a.query_seed,
        warmup: a.warmup,
        order: a.order,
        fills,
        notes: a.notes,
        types: results,
        loadavg_before,
        loadavg_after: loadavg(),
        host: load::host::collect(),
    };
    let path = a.results.join(format!("{TSBS_BENCH_NAME}.json"));
    let mut bench = load_tsbs_bench(&path)?;
    bench.upsert(phase);
    for p in write_tsbs_bench(&a.results, TSBS_BENCH_NAME, &bench)? {
        eprintln!("wrote {}", p.display());
    }
    print!("{}", tsbs_markdown(&bench, "#"));
    if broken > 0 {
        anyhow::bail!("{broken} query type(s) stopped or differ: see the results");
    }
    Ok(())
}
