//! Durable commit throughput of the WAL.
//!
//! `cargo bench -p wal --bench wal_commit`
//!
//! Scenarios: {fsync, buffered} × {50,000-point, 1,000-point entries (40 bytes/point of
//! pseudo-random bytes: ~2 MB and ~40 KB)} × {1, 4, 16, 64} concurrent submitters. Each
//! submitter loops `submit` + `wait` (retrying after a short sleep on `QueueFull`) for the
//! scenario's duration; a flusher thread drains the committed channel and calls `mark_flushed`
//! every 200 ms, as the real flusher would, so the entries CF stays small.
//!
//! Counted: entries acknowledged (durable per the mode) divided by the wall time until every
//! submitter finished. Included: the payload copy each submitter makes (a stand-in for encoding
//! a fresh request), framing + crc32 on the submitter, the writer's batch copy, RocksDB write
//! and sync. A raw-disk probe (`write` + `fdatasync` of 4 KiB and 2 MiB blocks) runs first as
//! evidence of what the disk allows.
//!
//! Overrides (env): `WAL_BENCH_SECS` (per scenario, default 5), `WAL_BENCH_SUBMITTERS`
//! (e.g. `1,4`), `WAL_BENCH_POINTS` (e.g. `1000`), `WAL_BENCH_MODES` (e.g. `fsync`),
//! `WAL_BENCH_GROUP_MIB` (group byte budget, default the config default of 16 MiB),
//! `WAL_BENCH_DIR` (where to create the WAL; default a temp dir), `WAL_BENCH_OUT` (results dir;
//! default `<repo>/test_results/latest`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wal::{Durability, Entry, Wal, WalConfig, WalError};

const BYTES_PER_POINT: usize = 40;

fn env_list<T: std::str::FromStr + Clone>(name: &str, default: &[T]) -> Vec<T> {
    match std::env::var(name) {
        Ok(v) => v.split(',').filter_map(|s| s.trim().parse().ok()).collect(),
        Err(_) => default.to_vec(),
    }
}

/// Pseudo-random (incompressible-ish) payload bytes, seeded.
fn payload(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut v = Vec::with_capacity(len);
    while v.len() + 8 <= len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.resize(len, 0xAB);
    v
}

struct Row {
    mode: &'static str,
    points_per_entry: usize,
    submitters: usize,
    secs: f64,
    entries: u64,
    points_per_s: f64,
    mb_per_s: f64,
    groups: u64,
    p50_ms: f64,
    p99_ms: f64,
    queue_full: u64,
}

fn run_scenario(
    root: &Path,
    mode: Durability,
    points_per_entry: usize,
    submitters: usize,
    dur: Duration,
) -> Row {
    let dir = tempfile::tempdir_in(root).expect("bench dir");
    let mut cfg = WalConfig::new(dir.path());
    cfg.durability = mode;
    if let Some(b) = std::env::var("WAL_BENCH_GROUP_MIB")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        cfg.group_max_bytes = b << 20;
    }
    let (tx, rx) = crossbeam_channel::bounded::<wal::Committed<()>>(4096);
    let (wal, _rec) = Wal::open(cfg, tx).expect("open");
    let wal = Arc::new(wal);
    let flusher = {
        let wal = wal.clone();
        std::thread::spawn(move || {
            let mut last_mark = Instant::now();
            let mut seq = 0;
            for c in rx {
                seq = c.seq;
                if last_mark.elapsed() >= Duration::from_millis(200) {
                    wal.mark_flushed(seq).expect("mark_flushed");
                    last_mark = Instant::now();
                }
            }
            seq
        })
    };
    let len = points_per_entry * BYTES_PER_POINT;
    let pool: Arc<Vec<Vec<u8>>> = Arc::new((0..8).map(|i| payload(i, len)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let handles: Vec<_> = (0..submitters)
        .map(|t| {
            let (wal, pool, stop) = (wal.clone(), pool.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut lat = Vec::new();
                let (mut n, mut full) = (0u64, 0u64);
                let mut i = t;
                while !stop.load(Ordering::Relaxed) {
                    let e = Entry {
                        payload: pool[i % pool.len()].clone(),
                        points: points_per_entry as u64,
                        held_bytes: 0,
                        meta: vec![],
                        attachment: (),
                    };
                    i += 1;
                    let t0 = Instant::now();
                    match wal.submit(e) {
                        Ok(ticket) => {
                            ticket.wait().expect("commit");
                            lat.push(t0.elapsed());
                            n += 1;
                        }
                        Err(WalError::QueueFull { .. }) => {
                            full += 1;
                            std::thread::sleep(Duration::from_micros(200));
                        }
                        Err(e) => panic!("submit: {e}"),
                    }
                }
                (n, full, lat)
            })
        })
        .collect();
    std::thread::sleep(dur);
    stop.store(true, Ordering::Relaxed);
    let mut entries = 0;
    let mut queue_full = 0;
    let mut lat = Vec::new();
    for h in handles {
        let (n, f, l) = h.join().expect("submitter");
        entries += n;
        queue_full += f;
        lat.extend(l);
    }
    let secs = start.elapsed().as_secs_f64();
    let groups = wal.stats().groups_committed;
    // Drains the queue and stops the writer, which closes the committed channel, which ends the
    // flusher thread (the other owner of the Arc).
    wal.shutdown();
    drop(wal);
    flusher.join().expect("flusher");
    lat.sort_unstable();
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    Row {
        mode: match mode {
            Durability::Fsync => "fsync",
            Durability::Buffered => "buffered",
        },
        points_per_entry,
        submitters,
        secs,
        entries,
        points_per_s: (entries * points_per_entry as u64) as f64 / secs,
        mb_per_s: (entries * len as u64) as f64 / secs / 1e6,
        groups,
        p50_ms: pct(0.50),
        p99_ms: pct(0.99),
        queue_full,
    }
}

/// write + fdatasync of `block` bytes, repeated for `dur`; returns (syncs/s, MB/s).
fn raw_fsync(root: &Path, block: usize, dur: Duration) -> (f64, f64) {
    let path = root.join(format!("fsync-probe-{block}"));
    let mut f = std::fs::File::create(&path).expect("probe file");
    let buf = payload(1, block);
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < dur {
        f.write_all(&buf).expect("write");
        f.sync_data().expect("fdatasync");
        n += 1;
    }
    let s = start.elapsed().as_secs_f64();
    drop(f);
    let _ = std::fs::remove_file(&path);
    (n as f64 / s, (n * block as u64) as f64 / s / 1e6)
}

fn main() {
    let secs: f64 = std::env::var("WAL_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5.0);
    let dur = Duration::from_secs_f64(secs);
    let submitters = env_list("WAL_BENCH_SUBMITTERS", &[1usize, 4, 16, 64]);
    let points = env_list("WAL_BENCH_POINTS", &[50_000usize, 1_000]);
    let modes: Vec<String> = env_list(
        "WAL_BENCH_MODES",
        &["fsync".to_string(), "buffered".to_string()],
    );
    let root: PathBuf = std::env::var_os("WAL_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let out_dir: PathBuf = std::env::var_os("WAL_BENCH_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
            crate_dir
                .parent()
                .unwrap_or(crate_dir)
                .join("test_results/latest")
        });

    let probe = Duration::from_secs_f64((secs / 4.0).clamp(0.5, 2.0));
    let (small_rate, small_mb) = raw_fsync(&root, 4096, probe);
    let (big_rate, big_mb) = raw_fsync(&root, 2 << 20, probe);
    let (huge_rate, huge_mb) = raw_fsync(&root, 16 << 20, probe);
    println!("raw disk ({}): 4 KiB write+fdatasync {small_rate:.0}/s ({small_mb:.1} MB/s); 2 MiB {big_rate:.1}/s ({big_mb:.0} MB/s); 16 MiB {huge_rate:.1}/s ({huge_mb:.0} MB/s)", root.display());

    let mut rows = Vec::new();
    for mode in &modes {
        let m = if mode == "buffered" {
            Durability::Buffered
        } else {
            Durability::Fsync
        };
        for &p in &points {
            for &s in &submitters {
                let r = run_scenario(&root, m, p, s, dur);
                eprintln!(
                    "{} {}pt x{}: {:.0} points/s {:.1} MB/s ({} entries, {} groups)",
                    r.mode,
                    r.points_per_entry,
                    r.submitters,
                    r.points_per_s,
                    r.mb_per_s,
                    r.entries,
                    r.groups
                );
                rows.push(r);
            }
        }
    }

    let group_mib = std::env::var("WAL_BENCH_GROUP_MIB")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(WalConfig::default().group_max_bytes >> 20);
    let mut md = String::new();
    md.push_str("# WAL durable commit throughput (`cargo bench -p wal --bench wal_commit`)\n\n");
    md.push_str(&format!(
        "Host: {} cores; WAL dir on `{}`; {secs} s per scenario; {BYTES_PER_POINT} bytes/point pseudo-random payloads; group budget {group_mib} MiB / 1024 entries; flusher marks flushed every 200 ms.\n\n",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        root.display()
    ));
    md.push_str(&format!(
        "Raw disk (write + fdatasync loop): 4 KiB blocks {small_rate:.0} syncs/s ({small_mb:.1} MB/s); 2 MiB blocks {big_rate:.1} syncs/s ({big_mb:.0} MB/s); 16 MiB blocks {huge_rate:.1} syncs/s ({huge_mb:.0} MB/s).\n\n"
    ));
    md.push_str("| mode | points/entry | submitters | points/s | MB/s | entries | avg entries/group | ack p50 ms | ack p99 ms | QueueFull retries |\n");
    md.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in &rows {
        md.push_str(&format!(
            "| {} | {} | {} | {:.0} | {:.1} | {} | {:.1} | {:.2} | {:.2} | {} |\n",
            r.mode,
            r.points_per_entry,
            r.submitters,
            r.points_per_s,
            r.mb_per_s,
            r.entries,
            r.entries as f64 / r.groups.max(1) as f64,
            r.p50_ms,
            r.p99_ms,
            r.queue_full
        ));
    }
    println!("\n{md}");

    let json_rows: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "mode": r.mode, "points_per_entry": r.points_per_entry, "submitters": r.submitters,
                "seconds": r.secs, "entries": r.entries, "groups": r.groups,
                "points_per_s": r.points_per_s, "mb_per_s": r.mb_per_s,
                "ack_p50_ms": r.p50_ms, "ack_p99_ms": r.p99_ms, "queue_full_retries": r.queue_full,
            })
        })
        .collect();
    let json = serde_json::json!({
        "bench": "wal_commit",
        "host": {
            "cores": std::thread::available_parallelism().map_or(0, |n| n.get()),
            "dir": root.display().to_string(),
            "raw_fsync": {
                "block_4k_syncs_per_s": small_rate, "block_4k_mb_per_s": small_mb,
                "block_2m_syncs_per_s": big_rate, "block_2m_mb_per_s": big_mb,
                "block_16m_syncs_per_s": huge_rate, "block_16m_mb_per_s": huge_mb,
            },
        },
        "seconds_per_scenario": secs,
        "group_max_mib": group_mib,
        "bytes_per_point": BYTES_PER_POINT,
        "results": json_rows,
    });
    if std::fs::create_dir_all(&out_dir).is_ok() {
        let _ = std::fs::write(out_dir.join("wal_commit.md"), &md);
        let _ = std::fs::write(
            out_dir.join("wal_commit.json"),
            serde_json::to_string_pretty(&json).unwrap_or_default(),
        );
        println!("wrote {}/wal_commit.{{md,json}}", out_dir.display());
    }
}
