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

const POINTS: usize = 50_000;
const HOSTS: usize = 1_000;
const NOW: i64 = 1_700_000_000_000_000_000;

/// Deterministic xorshift generator (seeded) so every run parses the same bytes.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn f(&mut self, max: f64) -> f64 {
        (self.next() % 1_000_000) as f64 / 1_000_000.0 * max
    }
}

/// The standard payload as line protocol.
pub fn standard_payload() -> Vec<u8> {
    use std::fmt::Write;
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let mut s = String::with_capacity(POINTS * 200);
    let regions = ["us-east-1", "us-west-2", "eu-central-1", "ap-south-1"];
    for i in 0..POINTS {
        let round = i / 4;
        let host = round % HOSTS;
        let region = regions[host % regions.len()];
        let ts = NOW + (round / HOSTS) as i64 * 10_000_000_000 + host as i64;
        match i % 4 {
            0 => writeln!(
                s,
                "cpu,host=host{host:04},region={region},cpu=cpu-total usage_user={:.2},usage_system={:.2},usage_idle={:.2},usage_iowait={:.3},cores=8i,online=true {ts}",
                rng.f(100.0), rng.f(100.0), rng.f(100.0), rng.f(5.0)
            ),
            1 => writeln!(
                s,
                "mem,host=host{host:04},region={region} used={}i,free={}i,cached={}i,available_percent={:.2} {ts}",
                rng.next() % 64_000_000_000, rng.next() % 64_000_000_000, rng.next() % 8_000_000_000, rng.f(100.0)
            ),
            2 => writeln!(
                s,
                "disk,host=host{host:04},region={region},device=sda1,path=/ used={}i,free={}i,used_percent={:.2},inodes_free={}u,fstype=\"ext4\",mounted=true,total=512000000000i {ts}",
                rng.next() % 500_000_000_000, rng.next() % 500_000_000_000, rng.f(100.0), rng.next() % 30_000_000
            ),
            _ => writeln!(
                s,
                "net,host=host{host:04},region={region},interface=eth0 bytes_recv={}u,bytes_sent={}u,packets_recv={}i,packets_sent={}i,err_in=0i,drop_in={}i,up=true {ts}",
                rng.next() % 1_000_000_000_000, rng.next() % 1_000_000_000_000, rng.next() % 1_000_000_000, rng.next() % 1_000_000_000, rng.next() % 100
            ),
        }
        .unwrap();
    }
    s.into_bytes()
}

fn bench(c: &mut Criterion) {
    let body = standard_payload();
    let n = POINTS as u64;

    // Warm catalog: every series and field of the payload already known.
    let cat = Catalog::new(Limits {
        max_series_per_database: 1_000_000,
        max_measurements_per_database: 1_000,
        max_values_per_tag: 100_000,
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
    assert_eq!(parsed.points.len(), POINTS);
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
