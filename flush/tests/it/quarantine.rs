//! Issue #15 at the flusher: deterministic failures are quarantined as dead letters while every
//! other table keeps flowing, retries are exactly once, start-up survives a table it cannot
//! replay, `DROP DATABASE` fences hold at replay, and shutdown is bounded.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::unbounded;
use engine::arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch, UInt64Array};
use engine::arrow::datatypes::{DataType, Field, Schema};
use engine::quote_ident;
use flush::{
    DeadLetter, FlushConfig, FlushWrite, FlushedLog, Flusher, MarkError, Resume, RetryOutcome,
};
use parking_lot::Mutex;
use wal::{Entry, Wal, WalConfig};

use crate::flusher::{batch, decode, encode, Col};
use crate::{database_name, engine, reads};

/// A WAL-backed log with an in-memory dead-letter store (the server keeps them in the WAL).
struct Log {
    wal: Arc<Wal<FlushWrite>>,
    letters: Mutex<Vec<DeadLetter>>,
    /// false: the dead-letter store fails (the parts must then be kept and retried).
    accept: bool,
}

impl FlushedLog for Log {
    fn mark_flushed(&self, seq: u64) -> Result<(), MarkError> {
        self.wal.mark_flushed(seq).map_err(MarkError::new)
    }
    fn dead_letter(&self, letters: &[DeadLetter]) -> Result<(), MarkError> {
        if !self.accept {
            return Err(MarkError::new("dead-letter store unavailable (test)"));
        }
        self.letters.lock().extend(letters.iter().cloned());
        Ok(())
    }
}

struct Stack {
    wal: Arc<Wal<FlushWrite>>,
    log: Arc<Log>,
    flusher: Option<Flusher>,
}

impl Stack {
    fn open(dir: &std::path::Path, config: FlushConfig, accept: bool) -> Stack {
        Stack::open_resume(dir, config, accept, |_| {})
    }

    fn open_resume(
        dir: &std::path::Path,
        config: FlushConfig,
        accept: bool,
        edit: impl FnOnce(&mut Resume),
    ) -> Stack {
        let (tx, rx) = unbounded();
        let (wal, recovery) = Wal::open(WalConfig::new(dir), tx).unwrap();
        let wal = Arc::new(wal);
        let mut resume = Resume {
            flushed_seq: recovery.flushed_seq,
            entries: recovery
                .entries
                .iter()
                .map(|e| (e.seq, decode(&e.payload)))
                .collect(),
            skip: recovery.unreplayable().collect(),
            ..Default::default()
        };
        edit(&mut resume);
        let log = Arc::new(Log {
            wal: wal.clone(),
            letters: Mutex::new(Vec::new()),
            accept,
        });
        let flusher = Flusher::start(
            engine().clone(),
            reads().clone(),
            config,
            rx,
            resume,
            log.clone(),
        )
        .unwrap();
        Stack {
            wal,
            log,
            flusher: Some(flusher),
        }
    }

    fn write(&self, w: FlushWrite) -> u64 {
        let points = w.points();
        self.wal
            .submit(Entry {
                payload: encode(&w),
                points,
                held_bytes: 0,
                meta: vec![],
                attachment: w,
            })
            .unwrap()
            .wait()
            .unwrap()
    }

    fn flusher(&self) -> &Flusher {
        self.flusher.as_ref().unwrap()
    }

    fn wait_flushed(&self, seq: u64) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.flusher().status().flushed_seq < seq {
            assert!(
                Instant::now() < deadline,
                "not flushed in time: {:?}",
                self.flusher().status()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn close(mut self) {
        self.wal.shutdown();
        self.flusher.take().unwrap().join();
    }
}

fn fast() -> FlushConfig {
    FlushConfig {
        max_age_ms: 30,
        retry_initial_ms: 20,
        retry_max_ms: 200,
        ..Default::default()
    }
}

fn count(table: &str) -> u64 {
    engine()
        .query_text(&format!("SELECT count() FROM {table}"))
        .map(|s| s.trim().parse().unwrap())
        .unwrap_or(0)
}

fn one(db: &str, m: &str, field: &'static str, v: f64, t: i64) -> FlushWrite {
    FlushWrite {
        db: db.to_string(),
        tables: vec![(
            m.to_string(),
            batch(vec![t], vec![1], vec![Col::F(field, vec![Some(v)])]),
        )],
    }
}

/// A batch with `n` float fields `f0..f{n-1}` (the issue's 20,000-field line).
fn wide(n: usize) -> RecordBatch {
    let mut fields = vec![
        Field::new("time", DataType::Int64, false),
        Field::new("series_id", DataType::UInt64, false),
    ];
    let mut cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(vec![1])),
        Arc::new(UInt64Array::from(vec![9])),
    ];
    for i in 0..n {
        fields.push(Field::new(format!("f{i}"), DataType::Float64, true));
        cols.push(Arc::new(Float64Array::from(vec![Some(i as f64)])));
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap()
}

#[test]
fn issue_15_engine_refused_writes_are_quarantined_and_everything_else_flows() {
    let dir = tempfile::tempdir().unwrap();
    let db = database_name("poison");
    let other = database_name("bystander");
    let t = |m: &str| format!("{}.{}", quote_ident(&db), quote_ident(m));
    // Nothing flushes until every entry is in: the good and the poison parts of
    // `cpu` land in one job, which must be bisected.
    let stack = Stack::open(
        dir.path(),
        FlushConfig {
            max_age_ms: 300,
            ..fast()
        },
        true,
    );
    let mut seqs = vec![stack.write(one(&db, "cpu", "usage", 1.0, 1))];
    // `_row_exists`: a name the engine reserves for its own virtual column.
    let poison = stack.write(FlushWrite {
        db: db.clone(),
        tables: vec![
            (
                "cpu".into(),
                batch(
                    vec![2],
                    vec![1],
                    vec![Col::F("_row_exists", vec![Some(1.0)])],
                ),
            ),
            (
                "mem".into(),
                batch(vec![2], vec![1], vec![Col::F("free", vec![Some(5.0)])]),
            ),
        ],
    });
    seqs.push(poison);
    seqs.push(stack.write(one(&db, "cpu", "usage", 3.0, 3)));
    // 20,000 fields: past the engine's statement limits.
    let wide_seq = stack.write(FlushWrite {
        db: db.clone(),
        tables: vec![("wide".into(), wide(20_000))],
    });
    let last = stack.write(one(&other, "cpu", "usage", 4.0, 4));
    stack.wait_flushed(last);

    assert_eq!(count(&t("cpu")), 2, "the good parts of cpu are in");
    assert_eq!(count(&t("mem")), 1, "the poison entry's other table is in");
    assert_eq!(
        count(&format!("{}.cpu", quote_ident(&other))),
        1,
        "other databases flow"
    );
    let letters = stack.log.letters.lock().clone();
    let got: HashSet<(String, u64)> = letters
        .iter()
        .map(|l| (l.measurement.clone(), l.seq))
        .collect();
    assert_eq!(
        got,
        HashSet::from([("cpu".to_string(), poison), ("wide".to_string(), wide_seq)])
    );
    let cpu = letters.iter().find(|l| l.measurement == "cpu").unwrap();
    assert!(cpu.error.contains("ILLEGAL_COLUMN"), "{}", cpu.error);
    assert_eq!(cpu.batch.num_rows(), 1, "the dead letter keeps the rows");
    let w = letters.iter().find(|l| l.measurement == "wide").unwrap();
    assert!(w.error.contains("SYNTAX_ERROR"), "{}", w.error);
    let st = stack.flusher().status();
    assert_eq!(st.quarantined_points, 2);
    assert_eq!(st.pending_points, 0);
    assert_eq!(
        stack.wal.stats().unflushed_entries,
        0,
        "the watermark moved on"
    );

    // An operator retry: still refused, reported, nothing inserted.
    let again = stack.flusher().retry(&letters);
    assert!(
        again.iter().all(|o| matches!(o, RetryOutcome::Failed(_))),
        "{again:?}"
    );
    stack.close();
}

#[test]
fn issue_15_a_dead_letter_retried_once_the_cause_is_gone_is_inserted_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = database_name("retry_dl");
    let table = format!("{}.cpu", quote_ident(&db));
    let stack = Stack::open(dir.path(), fast(), true);
    let first = stack.write(one(&db, "cpu", "usage", 1.0, 1));
    stack.wait_flushed(first);
    engine()
        .execute(&format!(
            "ALTER TABLE {table} ADD CONSTRAINT positive CHECK usage > 0"
        ))
        .unwrap();
    let bad = stack.write(one(&db, "cpu", "usage", -1.0, 2));
    stack.wait_flushed(bad);
    let letters = stack.log.letters.lock().clone();
    assert_eq!(letters.len(), 1);
    assert!(
        letters[0].error.contains("VIOLATED_CONSTRAINT"),
        "{}",
        letters[0].error
    );
    engine()
        .execute(&format!("ALTER TABLE {table} DROP CONSTRAINT positive"))
        .unwrap();
    let out = stack.flusher().retry(&letters);
    assert!(matches!(out[..], [RetryOutcome::Inserted]), "{out:?}");
    // A second retry (a crash before the dead letter was removed) inserts nothing.
    let out = stack.flusher().retry(&letters);
    assert!(
        matches!(out[..], [RetryOutcome::AlreadyInEngine]),
        "{out:?}"
    );
    assert_eq!(count(&table), 2);
    stack.close();
}

#[test]
fn issue_15_a_retry_after_an_error_that_followed_a_successful_insert_is_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = database_name("after_insert");
    let table = format!("{}.cpu", quote_ident(&db));
    let stack = Stack::open(dir.path(), fast(), true);
    let warm = stack.write(one(&db, "cpu", "usage", 1.0, 1));
    stack.wait_flushed(warm);
    // The next insert lands, then reports a failure (as unregistering the Arrow
    // table or a panic after the INSERT would): the retry must not insert again.
    Flusher::inject_failure_after_inserts_for_tests(&db, 1);
    let seq = stack.write(FlushWrite {
        db: db.clone(),
        tables: vec![(
            "cpu".into(),
            batch(
                (10..110).collect(),
                (0..100).collect(),
                vec![Col::F("usage", (0..100).map(|i| Some(i as f64)).collect())],
            ),
        )],
    });
    stack.wait_flushed(seq);
    assert_eq!(count(&table), 101, "no duplicate rows");
    let st = stack.flusher().status();
    assert_eq!(st.quarantined_points, 0);
    assert!(stack.log.letters.lock().is_empty());
    stack.close();
}

#[test]
fn issue_15_start_up_quarantines_a_table_it_cannot_ask_and_honours_drop_fences() {
    let dir = tempfile::tempdir().unwrap();
    let db = database_name("legacy");
    let dropped = database_name("dropped");
    // First life: the WAL alone (a crash before any flush).
    let fence = {
        let (tx, _rx) = unbounded();
        let (wal, _) = Wal::open(WalConfig::new(dir.path()), tx).unwrap();
        let put = |w: FlushWrite| {
            let points = w.points();
            wal.submit(Entry {
                payload: encode(&w),
                points,
                held_bytes: 0,
                meta: vec![],
                attachment: w,
            })
            .unwrap()
            .wait()
            .unwrap()
        };
        put(one(&db, "legacy", "v", 1.0, 1));
        put(one(&db, "fine", "v", 2.0, 2));
        put(one(&dropped, "cpu", "v", 3.0, 3))
    };

    // A table an older version made, without `__seq`: replay cannot ask it.
    engine()
        .execute(&format!(
            "CREATE DATABASE IF NOT EXISTS {}",
            quote_ident(&db)
        ))
        .unwrap();
    engine()
        .execute(&format!(
            "CREATE TABLE {}.legacy (`time` DateTime64(9, 'UTC'), `series_id` UInt64, `v` Nullable(Float64)) \
             ENGINE = MergeTree ORDER BY (series_id, time)",
            quote_ident(&db)
        ))
        .unwrap();
    let stack = Stack::open_resume(dir.path(), fast(), true, |r| {
        r.dropped = [(flush::DropScope::database(&dropped), fence)]
            .into_iter()
            .collect();
    });
    stack.wait_flushed(fence);
    let letters = stack.log.letters.lock().clone();
    assert_eq!(letters.len(), 1, "{letters:?}");
    assert_eq!(letters[0].measurement, "legacy");
    assert!(
        letters[0].error.contains("replay check failed"),
        "{}",
        letters[0].error
    );
    assert_eq!(count(&format!("{}.fine", quote_ident(&db))), 1);
    let exists = engine()
        .query_text(&format!(
            "SELECT count() FROM system.databases WHERE name = '{dropped}'"
        ))
        .unwrap();
    assert_eq!(
        exists.trim(),
        "0",
        "a dropped database is not re-created by replay"
    );
    stack.close();
}

#[test]
fn issue_15_shutdown_is_bounded_while_a_table_keeps_failing() {
    let dir = tempfile::tempdir().unwrap();
    let db = database_name("stuck");
    // The dead-letter store is down: the poison part can be neither inserted
    // nor set aside, so it is retried for ever.
    let stack = Stack::open(dir.path(), fast(), false);
    let good = stack.write(one(&db, "ok", "v", 1.0, 1));
    stack.wait_flushed(good);
    let poison = stack.write(one(&db, "cpu", "_row_exists", 1.0, 2));
    std::thread::sleep(Duration::from_millis(300));
    assert!(stack.flusher().status().consecutive_failures > 0);
    let Stack { wal, log, flusher } = stack;
    wal.shutdown();
    let started = Instant::now();
    let clean = flusher
        .unwrap()
        .shutdown(Instant::now() + Duration::from_secs(1));
    drop((wal, log));
    let took = started.elapsed();
    assert!(clean);
    assert!(took < Duration::from_secs(2), "took {took:?}");
    // What could not be flushed stays in the WAL.
    let (tx, _rx) = unbounded::<wal::Committed<FlushWrite>>();
    let (_wal, rec) = Wal::open(WalConfig::new(dir.path()), tx).unwrap();
    assert_eq!(
        rec.entries.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![poison]
    );
}
