//! kill -9: acknowledged entries survive; unfinished ones are wholly present or wholly absent.
//!
//! The test binary re-executes itself: `crash_child` (ignored unless run explicitly with the
//! env var set) submits entries from several threads and prints `ACK <seq> <id>` for every
//! acknowledged entry; the parent SIGKILLs it mid-stream, reopens the WAL and checks.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;

use wal::Durability;

use crate::util::{config, open, payload, payload_id};

const DIR_ENV: &str = "CHINGEST_WAL_CRASH_DIR";
const MODE_ENV: &str = "CHINGEST_WAL_CRASH_MODE";

/// The child process body; a no-op unless the parent set `CHINGEST_WAL_CRASH_DIR`.
#[test]
#[ignore = "helper: run by kill9_* as a child process"]
fn crash_child() {
    let Ok(dir) = std::env::var(DIR_ENV) else {
        return;
    };
    let mut cfg = config(std::path::Path::new(&dir));
    if std::env::var(MODE_ENV).as_deref() == Ok("buffered") {
        cfg.durability = Durability::Buffered;
    }
    let (wal, _rec, rx) = open(cfg);
    // Drain the hand-off like a flusher would (without flushing).
    std::thread::spawn(move || for _ in rx {});
    let wal = Arc::new(wal);
    let base = std::process::id() as u64 * 1_000_000_000;
    let handles: Vec<_> = (0..4u64)
        .map(|t| {
            let wal = wal.clone();
            std::thread::spawn(move || {
                // Bounded so an orphaned child cannot run forever.
                for i in 0..20_000u64 {
                    let id = base + t * 100_000 + i;
                    let e = wal::Entry {
                        payload: payload(id, 100 + (i as usize * 7919) % 60_000),
                        points: id % 1000,
                        held_bytes: 0,
                        meta: vec![],
                        attachment: id,
                    };
                    let seq = wal.submit(e).unwrap().wait().unwrap();
                    let mut out = std::io::stdout().lock();
                    writeln!(out, "ACK {seq} {id}").unwrap();
                    out.flush().unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

/// Runs one child until it has printed `kill_after` acks, SIGKILLs it, returns seq → id.
fn run_and_kill(dir: &std::path::Path, mode: &str, kill_after: usize) -> BTreeMap<u64, u64> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "crash::crash_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(DIR_ENV, dir)
        .env(MODE_ENV, mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut acked = BTreeMap::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut killed = false;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(rest) = line.strip_prefix("ACK ") {
            let mut it = rest.split(' ').map(|x| x.parse::<u64>());
            if let (Some(Ok(seq)), Some(Ok(id))) = (it.next(), it.next()) {
                assert!(
                    acked.insert(seq, id).is_none(),
                    "seq {seq} acknowledged twice"
                );
            }
        }
        if !killed && acked.len() >= kill_after {
            child.kill().unwrap(); // SIGKILL on Unix
            killed = true;
        }
    }
    // Lines already in the pipe were read above (to EOF): every ack the child printed counts.
    let status = child.wait().unwrap();
    assert!(
        killed && !status.success(),
        "child must die by SIGKILL, not finish ({status:?})"
    );
    acked
}

fn check_after_crash(dir: &std::path::Path, acked: &BTreeMap<u64, u64>, prev_last: u64) -> u64 {
    let (_wal, rec, _rx) = open(config(dir));
    assert!(
        rec.corrupt.is_empty(),
        "no corruption after kill -9: {:?}",
        rec.corrupt
    );
    assert!(
        rec.missing.is_empty(),
        "no holes after kill -9: {:?}",
        rec.missing
    );
    let by_seq: BTreeMap<u64, &wal::RecoveredEntry> =
        rec.entries.iter().map(|e| (e.seq, e)).collect();
    // Every acknowledged entry is present with exactly its payload.
    for (seq, id) in acked {
        let e = by_seq
            .get(seq)
            .unwrap_or_else(|| panic!("acknowledged seq {seq} lost"));
        assert_eq!(payload_id(&e.payload), Some(*id), "seq {seq} payload");
        assert_eq!(e.points, id % 1000);
    }
    // Every present entry (acknowledged or not) is whole: it regenerates exactly from its id.
    assert_eq!(rec.entries.first().map(|e| e.seq), Some(1));
    for (i, e) in rec.entries.iter().enumerate() {
        assert_eq!(e.seq, i as u64 + 1, "contiguous");
        assert!(payload_id(&e.payload).is_some(), "seq {} is partial", e.seq);
    }
    assert!(rec.last_seq >= acked.keys().last().copied().unwrap_or(0));
    assert!(rec.last_seq > prev_last);
    eprintln!(
        "after kill -9: {} acknowledged, {} recovered (last_seq {})",
        acked.len(),
        rec.entries.len(),
        rec.last_seq
    );
    rec.last_seq
}

#[test]
fn kill9_loses_no_acknowledged_entry_fsync_then_buffered() {
    let dir = tempfile::tempdir().unwrap();
    let acked = run_and_kill(dir.path(), "fsync", 150);
    let last = check_after_crash(dir.path(), &acked, 0);
    // Second life, buffered mode on the same WAL: still safe against a process crash.
    let acked2 = run_and_kill(dir.path(), "buffered", 300);
    assert!(
        acked2.keys().next().is_some_and(|&s| s > last),
        "sequences continue after recovery"
    );
    let mut all = acked;
    all.extend(acked2);
    check_after_crash(dir.path(), &all, last);
}
