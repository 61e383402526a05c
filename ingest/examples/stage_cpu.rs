//! CPU-time (not wall-time) cost per point of each stage on the standard payload, for machines
//! where other work competes for the cores: `cargo run --release -p ingest --example stage_cpu`.
//! Reads utime+stime of the process from /proc (Linux only); every stage runs single-threaded.

use std::hint::black_box;

use ingest::batch::build_batches;
use ingest::line_protocol::parse_lines;
use ingest::{Catalog, Format, IngestConfig, Ingestor, Limits, Precision};

#[path = "../benches/support/payload.rs"]
mod payload;
use payload::{standard_payload, NOW, POINTS};

fn cpu_seconds() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the `(comm)`: state is field 3, utime 14, stime 15.
    let rest = s.rsplit_once(')').map(|x| x.1).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|x| x.parse().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|x| x.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}

fn measure(name: &str, iters: usize, mut f: impl FnMut()) {
    if let Some(only) = std::env::args().nth(2) {
        if only != name {
            return;
        }
    }
    f();
    let t0 = cpu_seconds();
    let w0 = std::time::Instant::now();
    for _ in 0..iters {
        f();
    }
    let cpu = cpu_seconds() - t0;
    let wall = w0.elapsed().as_secs_f64();
    let n = (iters * POINTS) as f64;
    println!(
        "{name:<22} cpu {:>7.1} ns/point   wall {:>7.1} ns/point   ({:.2} M points/s/core)",
        cpu * 1e9 / n,
        wall * 1e9 / n,
        n / cpu / 1e6
    );
}

fn main() {
    let iters: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(60);
    let body = standard_payload();
    println!(
        "payload: {POINTS} points, {} bytes, {iters} iterations per stage",
        body.len()
    );
    let cat = Catalog::new(Limits::default());
    Ingestor::write(
        &cat,
        "db",
        &body,
        Format::LineProtocol,
        Precision::Nanoseconds,
        NOW,
    )
    .unwrap();
    let parsed = parse_lines(&body, Precision::Nanoseconds, NOW);
    let res = cat.resolve("db", &parsed);
    assert!(res.meta.is_empty());
    measure("parse", iters, || {
        black_box(parse_lines(black_box(&body), Precision::Nanoseconds, NOW));
    });
    measure("series_limits_warm", iters, || {
        black_box(cat.resolve("db", black_box(&parsed)));
    });
    measure("arrow_build", iters, || {
        black_box(build_batches(&parsed, &res).unwrap());
    });
    let single = Ingestor::with_config(IngestConfig {
        parallel_chunk_bytes: usize::MAX,
    });
    measure("all_single_thread", iters, || {
        black_box(
            single
                .prepare(
                    &cat,
                    "db",
                    &body,
                    Format::LineProtocol,
                    Precision::Nanoseconds,
                    NOW,
                )
                .unwrap(),
        );
    });
}
