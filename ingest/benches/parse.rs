//! Front-door stage benchmarks on the standard payload: 50,000 points per request, 1,000 hosts
//! × cpu/mem/disk/net, 4–8 fields of mixed types. Input is built before timing; throughput is
//! reported per point (Elements) and per byte of line protocol.
//!
//! `cargo bench -p ingest --bench parse`

// `criterion_group!` generates an undocumented function.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ingest::batch::build_batches;
use ingest::line_protocol::{parse_lines, parse_lines_parallel, DEFAULT_PARALLEL_CHUNK_BYTES};
use ingest::{Catalog, Format, IngestConfig, Ingestor, Limits, Precision};

#[path = "support/payload.rs"]
mod payload;
use payload::{standard_payload, NOW, POINTS};

fn bench(c: &mut Criterion) {
    let body = standard_payload();
    let n = POINTS as u64;

    // Warm catalog: every series and field of the payload already known.
    let cat = Catalog::new(Limits {
        max_series_per_database: 1_000_000,
        max_measurements_per_database: 1_000,
        max_values_per_tag: 100_000,
        max_columns_per_measurement: 1_000,
    });
    let warm = Ingestor::write(
        &cat,
        "db",
        &body,
        Format::LineProtocol,
        Precision::Nanoseconds,
        NOW,
    )
    .unwrap();
    assert_eq!(warm.points, POINTS);
    assert!(warm.error_message().is_none());

    let parsed = parse_lines(&body, Precision::Nanoseconds, NOW);
    assert_eq!(parsed.points().len(), POINTS);
    let res = cat.resolve("db", &parsed);
    assert_eq!(res.accepted.len(), POINTS);
    assert!(res.meta.is_empty(), "catalog should be warm");

    let mut g = c.benchmark_group("ingest_points");
    g.throughput(Throughput::Elements(n));
    g.sample_size(20);
    g.bench_function("parse", |b| {
        b.iter(|| black_box(parse_lines(black_box(&body), Precision::Nanoseconds, NOW)))
    });
    g.bench_function("series_limits_warm", |b| {
        b.iter(|| black_box(cat.resolve("db", black_box(&parsed))))
    });
    g.bench_function("arrow_build", |b| {
        b.iter(|| black_box(build_batches(black_box(&parsed), &res).unwrap()))
    });
    let single = Ingestor::with_config(IngestConfig {
        parallel_chunk_bytes: usize::MAX,
    });
    g.bench_function("all_single_thread", |b| {
        b.iter(|| {
            black_box(
                single
                    .prepare(
                        &cat,
                        "db",
                        black_box(&body),
                        Format::LineProtocol,
                        Precision::Nanoseconds,
                        NOW,
                    )
                    .unwrap(),
            )
        })
    });
    g.bench_function("all_parallel", |b| {
        b.iter(|| {
            black_box(
                Ingestor::write(
                    &cat,
                    "db",
                    black_box(&body),
                    Format::LineProtocol,
                    Precision::Nanoseconds,
                    NOW,
                )
                .unwrap(),
            )
        })
    });
    g.bench_function("wal_encode", |b| {
        b.iter(|| black_box(warm.encode_wal().unwrap()))
    });
    g.finish();

    let mut g = c.benchmark_group("ingest_bytes");
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.sample_size(20);
    g.bench_with_input(BenchmarkId::new("parse", body.len()), &body, |b, body| {
        b.iter(|| black_box(parse_lines(body, Precision::Nanoseconds, NOW)))
    });
    g.bench_with_input(
        BenchmarkId::new("parse_parallel", body.len()),
        &body,
        |b, body| {
            b.iter(|| {
                black_box(parse_lines_parallel(
                    body,
                    Precision::Nanoseconds,
                    NOW,
                    DEFAULT_PARALLEL_CHUNK_BYTES,
                ))
            })
        },
    );
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
