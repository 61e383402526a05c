//! Bytes and CPU per point of the WAL payload of the standard payload, uncompressed and with LZ4
//! frames (`[storage] wal_compression`): `cargo run --release -p ingest --example wire_size`.
//! CPU is this process's utime+stime (Linux), single-threaded; the best of 5 rounds.

use std::hint::black_box;

use ingest::batch::build_batches;
use ingest::line_protocol::parse_lines;
use ingest::{wire, Catalog, Format, Ingestor, Limits, MeasurementBatch, Precision};

#[path = "../benches/support/payload.rs"]
mod payload;
use payload::{standard_payload, NOW, POINTS};

#[path = "../benches/support/cpu.rs"]
mod cpu;
use cpu::cpu_seconds;

/// Best CPU ns per point of `iters` runs of `f`, over 5 rounds.
fn ns_per_point(iters: usize, mut f: impl FnMut()) -> f64 {
    (0..5)
        .map(|_| {
            let t0 = cpu_seconds();
            for _ in 0..iters {
                f();
            }
            (cpu_seconds() - t0) * 1e9 / (iters * POINTS) as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let body = standard_payload();
    let catalog = Catalog::new(Limits::default());
    // Registers the series and schema, as the server's first write would.
    Ingestor::write(
        &catalog,
        "db",
        &body,
        Format::LineProtocol,
        Precision::Nanoseconds,
        NOW,
    )
    .expect("write");
    let parsed = parse_lines(&body, Precision::Nanoseconds, NOW);
    let res = catalog.resolve("db", &parsed);
    let tables: Vec<MeasurementBatch> = build_batches(&parsed, &res).expect("batches");
    let iters = 40;
    let held: usize = tables.iter().map(|t| t.batch.get_array_memory_size()).sum();
    println!(
        "decoded batches in memory (what the flusher holds until the INSERT): {:.1} bytes / point",
        held as f64 / POINTS as f64
    );
    println!("payload: {POINTS} points; best of 5 rounds of {iters} encodes, one thread");
    println!("| WAL payload | bytes / point | encode CPU ns / point | decode CPU ns / point |");
    println!("|---|---:|---:|---:|");
    for (name, lz4) in [("uncompressed", false), ("LZ4 frames", true)] {
        let bytes = wire::encode_with("db", &tables, lz4).expect("encode");
        let enc = ns_per_point(iters, || {
            black_box(wire::encode_with("db", &tables, lz4).unwrap());
        });
        let dec = ns_per_point(iters, || {
            black_box(wire::decode(&bytes).unwrap());
        });
        assert_eq!(wire::decode(&bytes).unwrap().points(), POINTS);
        println!(
            "| {name} | {:.1} | {enc:.1} | {dec:.1} |",
            bytes.len() as f64 / POINTS as f64
        );
    }
}
