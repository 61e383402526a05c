//! CPU-time (not wall-time) cost per point of each stage on the standard payload, for machines
//! where other work competes for the cores: `cargo run --release -p ingest --example stage_cpu`.
//! Reads utime+stime of the process from /proc (Linux only); every stage runs single-threaded.

use std::hint::black_box;

use ingest::batch::build_batches;
use ingest::line_protocol::parse_lines;
use ingest::{Catalog, Format, IngestConfig, Ingestor, Limits, Precision};

const POINTS: usize = 50_000;
const HOSTS: usize = 1_000;
const NOW: i64 = 1_700_000_000_000_000_000;

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
fn standard_payload() -> Vec<u8> {
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
