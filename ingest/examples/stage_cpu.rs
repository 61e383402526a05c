//! CPU-time (not wall-time) cost per point of each stage on the standard payload, for machines
//! where other work competes for the cores: `cargo run --release -p ingest --example stage_cpu`.
//! Reads utime+stime of the process from /proc (Linux only); every stage runs single-threaded.
//! Each stage is measured `ROUNDS` times (default 5, env `STAGE_CPU_ROUNDS`); the best and the
//! median are reported. With `STAGE_CPU_OUT=<dir>` it also writes `<dir>/ingest_stages.md`
//! (the table `scripts/bench.sh` puts into docs/benchmarks.md).

use std::hint::black_box;

use ingest::batch::build_batches;
use ingest::line_protocol::parse_lines;
use ingest::{Catalog, Format, IngestConfig, Ingestor, Limits, Precision};

#[path = "../benches/support/payload.rs"]
mod payload;
use payload::{standard_payload, NOW, POINTS};

#[path = "../benches/support/cpu.rs"]
mod cpu;
use cpu::cpu_seconds;

/// (stage, issue #3's target in ns/point, best ns/point, median ns/point)
type Row = (&'static str, f64, f64, f64);

fn measure(
    rows: &mut Vec<Row>,
    name: &'static str,
    target: f64,
    iters: usize,
    mut f: impl FnMut(),
) {
    if let Some(only) = std::env::args().nth(2) {
        if only != name {
            return;
        }
    }
    let rounds: usize = std::env::var("STAGE_CPU_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5)
        .max(1);
    f();
    let n = (iters * POINTS) as f64;
    let mut per_point: Vec<f64> = (0..rounds)
        .map(|_| {
            let t0 = cpu_seconds();
            for _ in 0..iters {
                f();
            }
            (cpu_seconds() - t0) * 1e9 / n
        })
        .collect();
    per_point.sort_by(f64::total_cmp);
    let (best, median) = (per_point[0], per_point[rounds / 2]);
    println!(
        "{name:<22} cpu best {best:>7.1} ns/point   median {median:>7.1} ns/point   ({:.2} M points/s/core at the median)",
        1e3 / median
    );
    rows.push((name, target, best, median));
}

fn write_table(rows: &[Row], iters: usize, bytes: usize) {
    let Some(dir) = std::env::var_os("STAGE_CPU_OUT") else {
        return;
    };
    let mut md = format!(
        "# ingest stages: CPU time per point\n\n`cargo run --release -p ingest --example stage_cpu`: the standard payload \
         ({POINTS} points, {bytes} bytes of line protocol, 1,000 hosts × cpu/mem/disk/net, 4–8 mixed fields), one \
         thread, catalog warm; CPU time (utime + stime) of {iters} iterations per round, best and median of the rounds. \
         Targets are issue #3's.\n\n| stage | target ns/point | best ns/point | median ns/point | met (median) |\n|---|---:|---:|---:|---|\n"
    );
    for (name, target, best, median) in rows {
        md.push_str(&format!(
            "| {name} | ≤ {target:.0} | {best:.1} | {median:.1} | {} |\n",
            if median <= target { "yes" } else { "**no**" }
        ));
    }
    let path = std::path::Path::new(&dir).join("ingest_stages.md");
    std::fs::write(&path, md).expect("write ingest_stages.md");
    println!("wrote {}", path.display());
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
    let mut rows = Vec::new();
    measure(&mut rows, "parse", 150.0, iters, || {
        black_box(parse_lines(black_box(&body), Precision::Nanoseconds, NOW));
    });
    measure(&mut rows, "series_limits_warm", 50.0, iters, || {
        black_box(cat.resolve("db", black_box(&parsed)));
    });
    measure(&mut rows, "arrow_build", 60.0, iters, || {
        black_box(build_batches(&parsed, &res).unwrap());
    });
    let single = Ingestor::with_config(IngestConfig {
        parallel_chunk_bytes: usize::MAX,
    });
    measure(&mut rows, "all_single_thread", 300.0, iters, || {
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
    write_table(&rows, iters, body.len());
}
