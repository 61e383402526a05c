//! WAL → flusher → chDB, end to end, with a real RocksDB WAL.

use std::collections::BTreeMap;
use std::io::Cursor;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::unbounded;
use engine::arrow::array::{RecordBatch, UInt64Array};
use engine::arrow::datatypes::{DataType, Field, Schema};
use engine::arrow::ipc::{reader::StreamReader, writer::StreamWriter};
use engine::quote_ident;
use engine::table::{merged_select, table_columns};
use flush::{FlushConfig, FlushWrite, FlushedLog, Flusher, MarkError, Resume};
use wal::{Entry, Wal, WalConfig};

pub(crate) use crate::batch::{batch, Col};
use crate::{database_name, engine, reads};

/// The test's own WAL payload: db, then per table its name and Arrow IPC
/// stream (the server uses ingest::wire; the flusher never sees payloads).
pub(crate) fn encode(w: &FlushWrite) -> Vec<u8> {
    let mut out = Vec::new();
    let put = |out: &mut Vec<u8>, b: &[u8]| {
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        out.extend_from_slice(b);
    };
    put(&mut out, w.db.as_bytes());
    for (m, b) in &w.tables {
        put(&mut out, m.as_bytes());
        let mut ipc = Vec::new();
        let mut wr = StreamWriter::try_new(&mut ipc, b.schema_ref()).unwrap();
        wr.write(b).unwrap();
        wr.finish().unwrap();
        drop(wr);
        put(&mut out, &ipc);
    }
    out
}

pub(crate) fn decode(payload: &[u8]) -> FlushWrite {
    let mut p = payload;
    let mut take = move || {
        let n = u32::from_le_bytes(p[..4].try_into().unwrap()) as usize;
        let v = p[4..4 + n].to_vec();
        p = &p[4 + n..];
        (v, p.is_empty())
    };
    let (db, mut end) = take();
    let db = String::from_utf8(db).unwrap();
    let mut tables = Vec::new();
    while !end {
        let (m, _) = take();
        let (ipc, e) = take();
        end = e;
        let mut r = StreamReader::try_new(Cursor::new(ipc), None).unwrap();
        tables.push((String::from_utf8(m).unwrap(), r.next().unwrap().unwrap()));
    }
    FlushWrite { db, tables }
}

/// The flusher's view of the test's WAL, as the storage layer gives it.
struct TestLog {
    wal: Arc<Wal<FlushWrite>>,
    /// false simulates a crash between the engine insert and the WAL's
    /// flushed-sequence update: the WAL is never told.
    mark: bool,
}

impl FlushedLog for TestLog {
    fn mark_flushed(&self, seq: u64) -> Result<(), MarkError> {
        if self.mark {
            self.wal.mark_flushed(seq).map_err(MarkError::new)
        } else {
            Ok(())
        }
    }
}

/// A WAL and a flusher over it, on `dir`.
struct Stack {
    wal: Arc<Wal<FlushWrite>>,
    flusher: Option<Flusher>,
}

impl Stack {
    /// Opens the WAL on `dir` and starts a flusher that resumes from it.
    /// `mark` false simulates a crash between the engine insert and the WAL's
    /// flushed-sequence update: the flusher never tells the WAL.
    fn open(dir: &std::path::Path, mark: bool, config: FlushConfig) -> Stack {
        Stack::open_with_retention(dir, mark, config, BTreeMap::new())
    }

    /// [`Stack::open`], with the retention of databases known at start-up.
    fn open_with_retention(
        dir: &std::path::Path,
        mark: bool,
        config: FlushConfig,
        retention_secs: BTreeMap<String, u64>,
    ) -> Stack {
        let (tx, rx) = unbounded();
        let (wal, recovery) = Wal::open(WalConfig::new(dir), tx).unwrap();
        let wal = Arc::new(wal);
        let resume = Resume {
            flushed_seq: recovery.flushed_seq,
            entries: recovery
                .entries
                .iter()
                .map(|e| (e.seq, decode(&e.payload)))
                .collect(),
            skip: recovery.unreplayable().collect(),
            retention_secs,
            ..Default::default()
        };
        let log = Arc::new(TestLog {
            wal: wal.clone(),
            mark,
        });
        let flusher =
            Flusher::start(engine().clone(), reads().clone(), config, rx, resume, log).unwrap();
        Stack {
            wal,
            flusher: Some(flusher),
        }
    }

    fn write(&self, w: FlushWrite) -> u64 {
        let points = w.points();
        let payload = encode(&w);
        self.wal
            .submit(Entry {
                payload,
                points,
                held_bytes: w.memory_bytes(),
                meta: vec![],
                attachment: w,
            })
            .unwrap()
            .wait()
            .unwrap()
    }

    /// Waits until the flusher has everything up to `seq` in the engine.
    fn wait_flushed(&self, seq: u64) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let st = self.flusher.as_ref().unwrap().status();
            if st.flushed_seq >= seq {
                return;
            }
            assert!(Instant::now() < deadline, "not flushed in time: {st:?}");
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
        max_age_ms: 50,
        ..Default::default()
    }
}

fn q(sql: &str) -> String {
    engine().query_text(sql).unwrap()
}

#[test]
fn points_are_queryable_with_exact_values_and_types() {
    let dir = tempfile::tempdir().unwrap();
    let db = database_name("exact");
    let stack = Stack::open(dir.path(), true, fast());
    let seq = stack.write(FlushWrite {
        db: db.clone(),
        tables: vec![(
            "m".into(),
            batch(
                vec![1_700_000_000_123_456_789, -1, 0],
                vec![1, 2, 3],
                vec![
                    Col::Tag("host", vec!["a", "b", ""]),
                    Col::F("f", vec![Some(1.5), Some(-0.0), None]),
                    Col::I("i", vec![Some(i64::MIN), Some(i64::MAX), None]),
                    Col::U("u", vec![Some(u64::MAX), Some(0), None]),
                    Col::S(
                        "s",
                        vec![Some("quote \" and 'single'"), Some("new\nline"), None],
                    ),
                    Col::B("b", vec![Some(true), Some(false), None]),
                ],
            ),
        )],
    });
    stack.wait_flushed(seq);
    let table = format!("{}.m", quote_ident(&db));
    assert_eq!(
        q(&format!(
            "SELECT toUnixTimestamp64Nano(time), series_id, host, f, i, u, s, b, toTypeName(i), toTypeName(b) \
             FROM {table} ORDER BY series_id"
        )),
        format!(
            "1700000000123456789\t1\ta\t1.5\t{imin}\t{umax}\tquote \" and \\'single\\'\ttrue\tNullable(Int64)\tNullable(Bool)\n\
             -1\t2\tb\t-0\t{imax}\t0\tnew\\nline\tfalse\tNullable(Int64)\tNullable(Bool)\n\
             0\t3\t\t\\N\t\\N\t\\N\t\\N\t\\N\tNullable(Int64)\tNullable(Bool)\n",
            imin = i64::MIN,
            imax = i64::MAX,
            umax = u64::MAX
        )
    );
    assert_eq!(stack.wal.stats().flushed_seq, seq);
    assert_eq!(stack.wal.stats().unflushed_points, 0);
    // The WAL is truncated only because the engine fsyncs every part: the
    // table must carry those settings (and the merge tuning) as created.
    let engine_full = q(&format!(
        "SELECT engine_full FROM system.tables WHERE database = '{db}' AND name = 'm'"
    ));
    for setting in [
        "fsync_after_insert = 1",
        "fsync_part_directory = 1",
        "vertical_merge_algorithm_min_columns_to_activate = 1",
        "merge_selector_base = 10",
        "index_granularity = 2048",
        "max_compress_block_size = 16384",
    ] {
        assert!(
            engine_full.contains(setting),
            "{setting} missing from {engine_full}"
        );
    }
    stack.close();
}

#[test]
fn schema_evolution_multiple_databases_and_measurements() {
    let dir = tempfile::tempdir().unwrap();
    let (db1, db2) = (database_name("evo"), database_name("evo"));
    let stack = Stack::open(dir.path(), true, fast());
    stack.write(FlushWrite {
        db: db1.clone(),
        tables: vec![
            (
                "cpu".into(),
                batch(
                    vec![1],
                    vec![1],
                    vec![
                        Col::Tag("host", vec!["a"]),
                        Col::F("usage", vec![Some(1.0)]),
                    ],
                ),
            ),
            (
                "mem".into(),
                batch(vec![1], vec![2], vec![Col::I("free", vec![Some(10)])]),
            ),
        ],
    });
    stack.write(FlushWrite {
        db: db2.clone(),
        tables: vec![(
            "cpu".into(),
            batch(vec![5], vec![9], vec![Col::B("up", vec![Some(true)])]),
        )],
    });
    let seq = stack.write(FlushWrite {
        db: db1.clone(),
        tables: vec![(
            "cpu".into(),
            batch(
                vec![2],
                vec![3],
                vec![
                    Col::Tag("region", vec!["eu"]),
                    Col::S("note", vec![Some("new")]),
                ],
            ),
        )],
    });
    stack.wait_flushed(seq);
    assert_eq!(
        q(&format!(
            "SELECT toUnixTimestamp64Nano(time), host, region, usage, note FROM {}.cpu ORDER BY time",
            quote_ident(&db1)
        )),
        "1\ta\t\t1\t\\N\n2\t\teu\t\\N\tnew\n"
    );
    assert_eq!(
        q(&format!("SELECT free FROM {}.mem", quote_ident(&db1))),
        "10\n"
    );
    assert_eq!(
        q(&format!("SELECT up FROM {}.cpu", quote_ident(&db2))),
        "true\n"
    );
    stack.close();
}

#[test]
fn a_later_write_of_the_same_point_wins_field_by_field() {
    let dir = tempfile::tempdir().unwrap();
    let db = database_name("identity");
    let stack = Stack::open(dir.path(), true, fast());
    // Request 1: the point (host=a, t=100) is row 2 and carries usage and idle.
    stack.write(FlushWrite {
        db: db.clone(),
        tables: vec![(
            "cpu".into(),
            batch(
                vec![10, 20, 100],
                vec![7, 7, 7],
                vec![
                    Col::Tag("host", vec!["a", "a", "a"]),
                    Col::F("usage", vec![Some(0.1), Some(0.2), Some(1.0)]),
                    Col::F("idle", vec![Some(9.0), Some(9.0), Some(5.0)]),
                ],
            ),
        )],
    });
    // Request 2: the same point as row 0, overwriting only usage.
    let seq = stack.write(FlushWrite {
        db: db.clone(),
        tables: vec![(
            "cpu".into(),
            batch(
                vec![100],
                vec![7],
                vec![
                    Col::Tag("host", vec!["a"]),
                    Col::F("usage", vec![Some(2.0)]),
                ],
            ),
        )],
    });
    stack.wait_flushed(seq);
    let conn = engine().connection();
    let cols = table_columns(&conn, &db, "cpu").unwrap();
    drop(conn);
    let merged = merged_select(&db, "cpu", &cols);
    assert_eq!(
        q(&format!(
            "SELECT toUnixTimestamp64Nano(time), host, usage, idle FROM ({merged}) ORDER BY time"
        )),
        "10\ta\t0.1\t9\n20\ta\t0.2\t9\n100\ta\t2\t5\n"
    );
    // The raw table keeps both writes (4 rows); the read form merges them.
    assert_eq!(
        q(&format!("SELECT count() FROM {}.cpu", quote_ident(&db))),
        "4\n"
    );
    stack.close();
}

#[test]
fn replay_after_a_crash_between_insert_and_mark_is_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = database_name("replay");
    let table = format!("{}.cpu", quote_ident(&db));
    let write = |n: i64| FlushWrite {
        db: db.clone(),
        tables: vec![(
            "cpu".into(),
            batch(
                (0..n).map(|i| i * 1000).collect(),
                (0..n as u64).collect(),
                vec![Col::F("usage", (0..n).map(|i| Some(i as f64)).collect())],
            ),
        )],
    };
    // First life: everything reaches the engine, the WAL is never told.
    let stack = Stack::open(dir.path(), false, fast());
    stack.write(write(100));
    let last = stack.write(write(50));
    let deadline = Instant::now() + Duration::from_secs(30);
    let count = |t: &str| {
        engine()
            .query_text(&format!("SELECT count() FROM {t}"))
            .unwrap_or_default()
    };
    while count(&table) != "150\n" {
        assert!(Instant::now() < deadline, "rows never reached the engine");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        stack.wal.stats().flushed_seq,
        0,
        "the crash window: engine has it, WAL does not know"
    );
    stack.close();

    // Second life: the WAL replays both entries; the engine already has them.
    let stack = Stack::open(dir.path(), true, fast());
    stack.wait_flushed(last);
    assert_eq!(
        q(&format!("SELECT count(), sum(usage) FROM {table}")),
        "150\n6175\n".replace("\n6175", "\t6175")
    );
    // A new write after recovery flushes normally.
    let seq = stack.write(write(10));
    assert!(seq > last);
    stack.wait_flushed(seq);
    assert_eq!(q(&format!("SELECT count() FROM {table}")), "160\n");
    assert_eq!(stack.wal.stats().unflushed_entries, 0);
    stack.close();
}

#[test]
fn a_flush_failure_is_retried_until_the_engine_accepts_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = database_name("retry");
    let table = format!("{}.cpu", quote_ident(&db));
    let stack = Stack::open(
        dir.path(),
        true,
        FlushConfig {
            max_age_ms: 20,
            retry_initial_ms: 20,
            retry_max_ms: 100,
            ..Default::default()
        },
    );
    let one = |v: f64, t: i64| FlushWrite {
        db: db.clone(),
        tables: vec![(
            "cpu".into(),
            batch(vec![t], vec![1], vec![Col::F("usage", vec![Some(v)])]),
        )],
    };
    let first = stack.write(one(1.0, 1));
    stack.wait_flushed(first);
    // Make the engine refuse the next insert.
    engine()
        .execute(&format!(
            "ALTER TABLE {table} ADD CONSTRAINT positive CHECK usage > 0"
        ))
        .unwrap();
    let bad = stack.write(one(-5.0, 2));
    let deadline = Instant::now() + Duration::from_secs(30);
    let st = loop {
        let st = stack.flusher.as_ref().unwrap().status();
        if st.consecutive_failures >= 2 {
            break st;
        }
        assert!(
            Instant::now() < deadline,
            "the failure never surfaced: {st:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        st.last_error.as_deref().unwrap().contains("positive"),
        "{st:?}"
    );
    assert_eq!(
        st.flushed_seq, first,
        "nothing past the failing entry is marked flushed"
    );
    assert_eq!(stack.wal.stats().unflushed_points, 1);
    // The operator fixes the engine; the retry gets the point in.
    engine()
        .execute(&format!("ALTER TABLE {table} DROP CONSTRAINT positive"))
        .unwrap();
    stack.wait_flushed(bad);
    assert_eq!(
        q(&format!("SELECT usage FROM {table} ORDER BY time")),
        "1\n-5\n"
    );
    assert!(stack
        .flusher
        .as_ref()
        .unwrap()
        .status()
        .last_error
        .is_none());
    stack.close();
}

#[test]
fn a_database_with_retention_loses_rows_older_than_it_in_merges() {
    let dir = tempfile::tempdir().unwrap();
    let (kept, forever, later) = (
        database_name("ttl"),
        database_name("ttl_none"),
        database_name("ttl_later"),
    );
    let retention = BTreeMap::from([(kept.clone(), 3600)]);
    let stack = Stack::open_with_retention(dir.path(), true, fast(), retention);
    // A database given its retention after the flusher started.
    stack.flusher.as_ref().unwrap().set_retention(&later, 7200);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    let hour = 3_600_000_000_000i64;
    let mut seq = 0;
    for db in [&kept, &forever, &later] {
        seq = stack.write(FlushWrite {
            db: db.clone(),
            tables: vec![(
                "m".into(),
                batch(
                    vec![
                        now - 3 * hour,
                        now - 90 * 60_000_000_000,
                        now - 1_000_000_000,
                    ],
                    vec![1, 2, 3],
                    vec![Col::F("f", vec![Some(1.0), Some(2.0), Some(3.0)])],
                ),
            )],
        });
    }
    stack.wait_flushed(seq);
    for (db, ttl, left) in [
        (&kept, Some(3600), "3\n"),
        (&forever, None, "1\n2\n3\n"),
        (&later, Some(7200), "2\n3\n"),
    ] {
        let table = format!("{}.m", quote_ident(db));
        let engine_full = q(&format!(
            "SELECT engine_full FROM system.tables WHERE database = '{db}' AND name = 'm'"
        ));
        match ttl {
            Some(secs) => assert!(
                engine_full.contains(&format!("TTL toDateTime(time) + toIntervalSecond({secs})")),
                "{engine_full}"
            ),
            None => assert!(!engine_full.contains("TTL"), "{engine_full}"),
        }
        // The engine applies TTLs in merges; force one instead of waiting hours.
        engine()
            .execute(&format!("OPTIMIZE TABLE {table} FINAL"))
            .unwrap();
        assert_eq!(
            q(&format!("SELECT series_id FROM {table} ORDER BY series_id")),
            left,
            "{db}"
        );
    }
    stack.close();
}

/// Issue 15: a measurement named like the series table the flusher once kept per
/// database flushes like any other; flush creates no table of its own.
#[test]
fn issue_15_a_measurement_named_series_flushes_like_any_other() {
    let dir = tempfile::tempdir().unwrap();
    let db = database_name("series_name");
    let stack = Stack::open(dir.path(), true, fast());
    let seq = stack.write(FlushWrite {
        db: db.clone(),
        tables: vec![(
            "__series".into(),
            batch(
                vec![1, 2],
                vec![1, 2],
                vec![
                    Col::Tag("host", vec!["a", "b"]),
                    Col::F("v", vec![Some(1.0), Some(2.0)]),
                ],
            ),
        )],
    });
    stack.wait_flushed(seq);
    assert_eq!(
        q(&format!(
            "SELECT host, v FROM {}.`__series` ORDER BY time",
            quote_ident(&db)
        )),
        "a\t1\nb\t2\n"
    );
    assert_eq!(
        q(&format!(
            "SELECT name FROM system.tables WHERE database = '{db}' ORDER BY name"
        )),
        "__series\n",
        "the user's measurement is the only table"
    );
    stack.close();
}

/// `m` rows of `(time, series)` with one float field.
fn points(db: &str, rows: &[(i64, u64)]) -> FlushWrite {
    FlushWrite {
        db: db.to_string(),
        tables: vec![(
            "m".into(),
            batch(
                rows.iter().map(|r| r.0).collect(),
                rows.iter().map(|r| r.1).collect(),
                vec![Col::F("f", rows.iter().map(|r| Some(r.0 as f64)).collect())],
            ),
        )],
    }
}

fn rewrites(index: &flush::IdentityIndex, db: &str) -> flush::Snapshot {
    index
        .snapshot(&|| engine().connection(), db, "m")
        .expect("snapshot")
}

#[test]
fn the_identity_index_knows_every_point_written_twice() {
    use flush::Rewrites;
    let dir = tempfile::tempdir().unwrap();
    let db = database_name("identity");
    let stack = Stack::open(dir.path(), true, fast());
    let index = reads().identity();
    // Nothing flushed yet: no table, nothing shares a point.
    assert_eq!(rewrites(index, &db).rewrites, Rewrites::None);
    // In time order per series: every row is its own point.
    let seq = stack.write(points(&db, &[(10, 1), (20, 1), (30, 1), (10, 2)]));
    stack.wait_flushed(seq);
    let before = rewrites(index, &db);
    assert_eq!(before.rewrites, Rewrites::None);
    assert!(before.still_valid(index));
    // A rewrite of series 1 at 20 and a late point at 5 (new: the index
    // knows nothing was written there); series 2 moves on.
    let seq = stack.write(points(&db, &[(20, 1), (5, 1), (40, 2)]));
    stack.wait_flushed(seq);
    assert!(
        !before.still_valid(index),
        "a read that started before the rewrite must not trust what it read"
    );
    let after = rewrites(index, &db);
    assert_eq!(after.rewrites, Rewrites::Ranges(vec![(1, 20, 20)]));
    // A duplicate inside one request, of a new series.
    let seq = stack.write(points(&db, &[(7, 3), (7, 3)]));
    stack.wait_flushed(seq);
    assert!(!after.still_valid(index));
    assert_eq!(
        rewrites(index, &db).rewrites,
        Rewrites::Ranges(vec![(1, 20, 20), (3, 7, 7)])
    );
    // Requests of one writer committed out of order (one insert each, or
    // folded into one insert): late rows between earlier ones are new.
    for rows in [
        &[(100, 4), (101, 4)][..],
        &[(300, 4), (301, 4)],
        &[(200, 4), (201, 4)],
    ] {
        let seq = stack.write(points(&db, rows));
        stack.wait_flushed(seq);
    }
    let seq = stack.write(points(
        &db,
        &[(600, 5), (601, 5), (400, 5), (401, 5), (500, 5), (401, 5)],
    ));
    stack.wait_flushed(seq);
    // A late row inside an earlier insert's span that the table does not
    // hold: the engine is asked, and it is new.
    for rows in [&[(700, 6), (900, 6)][..], &[(800, 6)]] {
        let seq = stack.write(points(&db, rows));
        stack.wait_flushed(seq);
    }
    assert_eq!(
        rewrites(index, &db).rewrites,
        Rewrites::Ranges(vec![(1, 20, 20), (3, 7, 7), (5, 401, 401)]),
        "only the time written twice in one insert"
    );
    // A process that starts now loads the index from the table: the points
    // that have two rows, exactly (the late point at 5 has one).
    let fresh = flush::IdentityIndex::default();
    assert_eq!(
        rewrites(&fresh, &db).rewrites,
        Rewrites::Ranges(vec![(1, 20, 20), (3, 7, 7), (5, 401, 401)])
    );
    // Admin SQL can insert anything: reads group everything while it runs,
    // and the index reloads from the table after it.
    let table = format!("{}.m", quote_ident(&db));
    let during = rewrites(index, &db);
    let serial = crate::sandbox_serial();
    engine()
        .sql(
            &format!("INSERT INTO {table} (time, series_id, __seq, __row, f) VALUES (fromUnixTimestamp64Nano(toInt64(10)), 2, 999, 0, 1)"),
            engine::OutputFormat::TabSeparated,
            &engine::SqlAccess::Admin,
            &engine::SqlCancel::new(),
            &mut |_| true,
        )
        .expect("admin insert");
    drop(serial);
    assert!(!during.still_valid(index));
    assert_eq!(
        rewrites(index, &db).rewrites,
        Rewrites::Ranges(vec![(1, 20, 20), (2, 10, 10), (3, 7, 7), (5, 401, 401)])
    );
    stack.close();
}

#[test]
fn a_row_that_may_be_in_an_insert_still_in_flight_is_a_rewrite() {
    use engine::arrow::array::TimestampNanosecondArray;
    use flush::Rewrites;
    let dir = tempfile::tempdir().unwrap();
    let db = database_name("identity_flight");
    let stack = Stack::open(dir.path(), true, fast());
    // The table exists, with another series.
    let seq = stack.write(points(&db, &[(1, 1)]));
    stack.wait_flushed(seq);
    let index = reads().identity();
    let conn = engine().connection();
    let rows = |sid: u64, ts: Vec<i64>| {
        let n = ts.len();
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new(
                    "time",
                    DataType::Timestamp(engine::arrow::datatypes::TimeUnit::Nanosecond, None),
                    false,
                ),
                Field::new("series_id", DataType::UInt64, false),
            ])),
            vec![
                Arc::new(TimestampNanosecondArray::from(ts)),
                Arc::new(UInt64Array::from(vec![sid; n])),
            ],
        )
        .unwrap()
    };
    // Insert A is recorded and has not reached the engine yet; B writes one
    // of its points: the engine cannot show A's row, so B's counts as a
    // rewrite. B's other row falls between A's rows, which A does not
    // write: a new point.
    let a = index
        .before_insert(&conn, &db, "m", &rows(7, vec![1_000, 1_010]))
        .expect("A");
    let b = index
        .before_insert(&conn, &db, "m", &rows(7, vec![1_005, 1_010]))
        .expect("B");
    assert_eq!(
        rewrites(index, &db).rewrites,
        Rewrites::Ranges(vec![(7, 1_010, 1_010)])
    );
    drop((a, b));
    stack.close();
}

#[test]
fn the_identity_index_gives_up_listing_past_its_limit() {
    use flush::Rewrites;
    let dir = tempfile::tempdir().unwrap();
    let db = database_name("identity_many");
    let stack = Stack::open(dir.path(), true, fast());
    let n = flush::identity::MAX_LISTED_SERIES as u64 + 1;
    let once: Vec<(i64, u64)> = (0..n).map(|s| (100, s)).collect();
    stack.write(points(&db, &once));
    let seq = stack.write(points(&db, &once));
    stack.wait_flushed(seq);
    assert_eq!(rewrites(reads().identity(), &db).rewrites, Rewrites::All);
    stack.close();
}
