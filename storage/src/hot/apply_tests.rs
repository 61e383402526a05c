//! The applier's tests (`apply.rs`): reads wait for what they need, backlogs
//! drop to a refill, forgets stay forgotten.

use engine::arrow::array::{ArrayRef, Int64Array, StringArray, UInt64Array};
use engine::arrow::datatypes::{DataType, Field, Schema};
use flush::PartsObserver;

use super::*;
use crate::hot::testing::{batch, floats};
use crate::HotConfig;

/// A store that is on, holding every measurement, its applier started
/// (held), and how often it asked for a refill (`Kick::count`).
fn store(max_backlog: u64) -> (Arc<HotStore>, impl Fn() -> usize) {
    let s = Arc::new(HotStore::new([]));
    s.configure(HotConfig {
        enabled: true,
        window: "1h".into(),
        max_backlog,
        hold: crate::hot::Hold::All,
        ..HotConfig::default()
    })
    .unwrap();
    s.start();
    s.applier.pause(true);
    let k = s.clone();
    (s, move || k.kick.count())
}

fn key(m: &str) -> Key {
    ("d".to_string(), m.to_string())
}

/// Waits (generously: the applier runs at idle priority) until everything up to `seq` is applied.
fn applied(s: &HotStore, seq: u64) {
    assert!(
        s.applier.wait_applied(seq, Duration::from_secs(60)),
        "not applied"
    );
}

#[test]
fn a_read_waits_for_the_applier_and_only_then_finds_the_write() {
    let (s, _) = store(1 << 30);
    s.received("d", 1, &[("m", &batch(&[(1, 10, 1.0), (1, 20, 2.0)]))]);
    // Queued, not applied: a read falls back (behind) rather than miss it.
    assert!(!s.wait_applied(1, "d", "m"));
    assert!(s.read().get("d", "m").is_none());
    // A read that needs nothing newer than what is applied goes on.
    assert!(s.wait_applied(0, "d", "m"));
    s.applier.pause(false);
    applied(&s, 1);
    assert!(s.wait_applied(1, "d", "m"));
    assert_eq!(floats(&s, "m"), Some(vec![(10, 1.0), (20, 2.0)]));
    // More rows than one slice under the lock: all of them, in order.
    let rows: Vec<_> = (0..3000).map(|k| (1, 100 + k, k as f64)).collect();
    s.received("d", 2, &[("m", &batch(&rows))]);
    applied(&s, 2);
    assert_eq!(floats(&s, "m").unwrap().len(), 3002);
    s.stop();
    assert!(s.read().get("d", "m").is_some() && !s.enabled());
}

#[test]
fn a_read_does_not_wait_long_for_a_held_lock() {
    let (s, _) = store(1 << 30);
    // As if the applier were descheduled holding the write lock.
    let held = s.tables.write();
    let started = Instant::now();
    assert!(s.try_read().is_none());
    assert!(started.elapsed() < Duration::from_secs(30));
    drop(held);
    assert!(s.try_read().is_some());
}

#[test]
fn a_store_that_is_off_queues_nothing() {
    // Off until configured: no applier runs, so anything queued would stay for ever.
    let s = HotStore::new([]);
    s.received("d", 1, &[("m", &batch(&[(1, 10, 1.0)]))]);
    s.set_aside("d", "m");
    assert!(s.applier.wait_applied(u64::MAX, Duration::ZERO));
}

#[cfg(target_os = "linux")]
#[test]
fn the_applier_runs_at_idle_priority() {
    let (s, _) = store(1 << 30);
    let deadline = Instant::now() + Duration::from_secs(60);
    let policy = loop {
        let task = std::fs::read_dir("/proc/self/task").unwrap().find_map(|e| {
            let dir = e.ok()?.path();
            let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
            (comm.trim() == "hot-apply").then_some(dir)
        });
        // `policy` in /proc/<tid>/sched: 5 is SCHED_IDLE.
        let policy = task.and_then(|dir| {
            let sched = std::fs::read_to_string(dir.join("sched")).ok()?;
            sched.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == "policy").then(|| v.trim().to_string())
            })
        });
        match policy {
            Some(p) if p == "5" || Instant::now() > deadline => break p,
            _ => std::thread::sleep(Duration::from_millis(10)),
        }
    };
    assert_eq!(policy, "5");
    s.stop();
}

#[test]
fn a_forget_is_not_undone_by_inserts_queued_before_or_after_it() {
    let (s, _) = store(1 << 30);
    let b = batch(&[(1, 10, 1.0)]);
    // A DELETE between two queued writes of `m`.
    s.received("d", 1, &[("m", &b)]);
    s.forget("d", "m");
    s.received("d", 2, &[("m", &b)]);
    // A dead letter of `l` (told on the coordinator's thread: queued) between two.
    s.received("d", 3, &[("l", &b)]);
    s.set_aside("d", "l");
    s.received("d", 4, &[("l", &b)]);
    // A dropped database between two.
    s.received("x", 5, &[("m", &b)]);
    s.forget_database("x");
    s.received("x", 6, &[("m", &b)]);
    s.received("d", 7, &[("n", &b)]);
    s.applier.pause(false);
    applied(&s, 7);
    let t = s.read();
    for (db, m) in [("d", "m"), ("d", "l"), ("x", "m")] {
        assert!(t.get(db, m).is_none(), "{db}.{m} served");
        assert!(
            !t.tables.contains_key(&(db.to_string(), m.to_string())),
            "{db}.{m} re-created"
        );
    }
    assert!(t.get("d", "n").is_some());
}

#[test]
fn a_read_waits_only_for_writes_to_its_own_measurement() {
    let (s, refills) = store(1 << 30);
    s.applier.pause(false);
    s.received("d", 1, &[("m", &batch(&[(1, 10, 1.0)]))]);
    s.received("d", 1, &[("o", &batch(&[(1, 10, 1.0)]))]);
    applied(&s, 1);
    s.applier.pause(true);
    // Entry 2 holds `o` only, entry 3 `m` and `o`: queued, not applied.
    s.received("d", 2, &[("o", &batch(&[(1, 20, 2.0)]))]);
    // `m` needs nothing queued up to 2; `o` does, and another db's `m` never did.
    assert!(s.wait_applied(2, "d", "m"));
    assert!(s.applied_now(2, "d", "m"));
    assert!(!s.wait_applied(2, "d", "o"));
    assert!(s.wait_applied(2, "e", "m"));
    s.received(
        "d",
        3,
        &[
            ("m", &batch(&[(1, 30, 3.0)])),
            ("o", &batch(&[(1, 30, 3.0)])),
        ],
    );
    assert!(!s.wait_applied(3, "d", "m"));
    assert!(!s.applied_now(3, "d", "m"));
    assert!(
        s.wait_applied(2, "d", "m"),
        "up to 2 still needs nothing of m"
    );
    s.applier.pause(false);
    applied(&s, 3);
    assert!(s.wait_applied(3, "d", "m") && s.wait_applied(3, "d", "o"));
    assert_eq!(floats(&s, "m"), Some(vec![(10, 1.0), (30, 3.0)]));
    assert_eq!(floats(&s, "o").map(|v| v.len()), Some(3));
    // A forget or a lost backlog naming `m` is waited for like its parts.
    s.applier.pause(true);
    s.applier.push(4, 0, Item::Forget(key("m")), usize::MAX);
    assert!(!s.wait_applied(4, "d", "m"));
    assert!(s.wait_applied(4, "d", "o"));
    s.applier
        .push(5, 0, Item::Lost([key("o")].into()), usize::MAX);
    assert!(!s.wait_applied(5, "d", "o"));
    assert!(s.wait_applied(3, "d", "o"));
    s.applier.pause(false);
    applied(&s, 5);
    assert_eq!(refills(), 1);
    s.stop();
}

#[test]
fn a_dropped_backlog_leaves_its_measurements_pending_until_refilled() {
    let b1 = batch(&[(1, 10, 1.0), (1, 20, 2.0)]);
    let (s, refills) = store(b1.get_array_memory_size() as u64 * 3 / 2);
    s.applier.pause(false);
    s.received("d", 1, &[("m", &b1)]);
    applied(&s, 1);
    s.received("d", 1, &[("o", &b1)]);
    applied(&s, 1);
    assert!(floats(&s, "m").is_some());
    s.applier.pause(true);
    // The second write does not fit beside the first: both dropped.
    s.received("d", 2, &[("m", &batch(&[(1, 20, -2.0), (1, 25, 2.5)]))]);
    s.received("d", 3, &[("m", &batch(&[(1, 30, 3.0), (1, 35, 3.5)]))]);
    // A read needing entry 2 waits for the marker, not past it.
    assert!(!s.wait_applied(2, "d", "m"));
    assert_eq!(floats(&s, "m").unwrap().len(), 2, "applied early");
    s.applier.pause(false);
    applied(&s, 3);
    // Emptied and pending: not served, refill asked for; `o` untouched.
    assert_eq!(floats(&s, "m"), None);
    assert!(!s.read().tables.contains_key(&key("m")));
    assert!(floats(&s, "o").is_some());
    assert_eq!(refills(), 1);
    let spell = s.spell(&key("m")).expect("pending");
    // A write after the drop lands; the refill fills around it.
    s.received("d", 4, &[("m", &batch(&[(1, 40, 4.0)]))]);
    applied(&s, 4);
    // What the refill's read sees: every write, the one at 40 older than the table's.
    let seen = batch(&[(1, 10, 1.0), (1, 20, -2.0), (1, 30, 3.0), (1, 40, -4.0)]);
    assert_eq!(
        s.refill_merge(&key("m"), spell, &seen),
        super::super::refill::Merge::Merged(4)
    );
    assert!(s.refill_done(&key("m"), spell, 0, false));
    assert_eq!(
        floats(&s, "m"),
        Some(vec![(10, 1.0), (20, -2.0), (30, 3.0), (40, 4.0)])
    );
    // A refill begun before another drop cannot mark the new spell done.
    s.applier.pause(true);
    s.received("d", 5, &[("m", &b1)]);
    s.received("d", 6, &[("m", &b1)]);
    s.applier.pause(false);
    applied(&s, 6);
    assert!(!s.refill_done(&key("m"), spell, 0, false));
    assert_eq!(floats(&s, "m"), None);
    assert_eq!(refills(), 2);
}

/// `cargo test -p storage --release hot_received_cost -- --ignored --nocapture`:
/// the coordinator's time per received batch (TSBS's shape: 200 hosts, 10
/// integer fields, 2,000 rows) with the store off, on but the measurement
/// not read (`hold = "read"`: a lookup), on (queued for the
/// applier, which is held so only the coordinator's side is timed), and
/// inserting synchronously as the coordinator did before the applier.
#[test]
#[ignore]
fn hot_received_cost() {
    let fields = 10;
    let mut schema = vec![
        Field::new("time", DataType::Int64, false),
        Field::new("series_id", DataType::UInt64, false),
        Field::new("hostname", DataType::Utf8, false),
    ];
    for f in 0..fields {
        schema.push(Field::new(format!("usage_{f}"), DataType::Int64, true));
    }
    let schema = Arc::new(Schema::new(schema));
    let batches: Vec<RecordBatch> = (0..400)
        .map(|b| {
            let n = 2000usize;
            let time = Int64Array::from_iter_values(
                (0..n).map(|r| (b * 10 + (r / 200) as i64) * 10_000_000_000),
            );
            let sid = UInt64Array::from_iter_values((0..n).map(|r| (r % 200) as u64));
            let host = StringArray::from_iter_values((0..n).map(|r| format!("host_{}", r % 200)));
            let mut cols: Vec<ArrayRef> = vec![Arc::new(time), Arc::new(sid), Arc::new(host)];
            for f in 0..fields {
                cols.push(Arc::new(Int64Array::from_iter_values(
                    (0..n).map(|r| (r as i64 * 7 + f) % 100),
                )));
            }
            RecordBatch::try_new(schema.clone(), cols).unwrap()
        })
        .collect();
    let time = |s: &HotStore, sync: bool| {
        let started = Instant::now();
        for (k, b) in batches.iter().enumerate() {
            if sync {
                s.add("d", &[("cpu", 0, b)]);
            } else {
                s.received("d", k as u64 + 1, &[("cpu", b)]);
            }
        }
        started.elapsed().as_nanos() as f64 / batches.len() as f64 / 1000.0
    };
    let (on, _) = store(u64::MAX);
    let queued = time(&on, false);
    let (sync, _) = store(u64::MAX);
    let inserted = time(&sync, true);
    let off = HotStore::new([]);
    let nothing = time(&off, false);
    // `hold = "read"`, the measurement not read: a lookup, nothing queued.
    let unread = HotStore::new([]);
    unread
        .configure(HotConfig {
            enabled: true,
            ..HotConfig::default()
        })
        .unwrap();
    let skipped = time(&unread, false);
    println!(
        "µs per received batch of 2,000 rows: off {nothing:.2}, not read {skipped:.2}, \
         queued {queued:.2}, inserted synchronously {inserted:.1}"
    );
    on.stop();
    sync.stop();
}
