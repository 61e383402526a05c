//! Issue #15, end to end against the real binary: poison writes are quarantined (listed,
//! retried, discarded) while other databases keep flowing; graceful stop is bounded; a restart
//! succeeds; DROP DATABASE is one durable decision that racing writes and replay honour; a full
//! disk refuses writes with 503 and they resume when space returns.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::*;

/// Polls `/health` until `done` holds (at most 30 s).
pub(crate) fn health_until(s: &Server, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let h: Value = s.get("/health").json().unwrap();
        if done(&h) {
            return h;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: {h}\nlog:\n{}",
            s.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The value of an unlabelled metric in `/metrics`.
pub(crate) fn metric(s: &Server, name: &str) -> Option<f64> {
    let text = s.get("/metrics").text().unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .map(|v| v.trim().parse().unwrap())
}

/// Whether the engine keeps a database `db` on disk (read with the server stopped).
pub(crate) fn engine_has_database(data: &Path, db: &str) -> bool {
    data.join("data/chdb/metadata")
        .join(format!("{db}.sql"))
        .exists()
}

fn count(s: &Server, table: &str) -> u64 {
    match s.try_sql(&format!("SELECT toString(count()) AS n FROM {table}")) {
        Ok(rows) => rows[0]["n"].as_str().unwrap().parse().unwrap(),
        Err(e) if e.contains("UNKNOWN_TABLE") || e.contains("UNKNOWN_DATABASE") => 0,
        Err(e) => panic!("{table}: {e}"),
    }
}

/// Requests as the admin of [`auth_config`].
pub(crate) struct Admin<'a>(pub(crate) &'a Server);

impl Admin<'_> {
    pub(crate) fn send(&self, r: reqwest::blocking::RequestBuilder) -> reqwest::blocking::Response {
        r.basic_auth("admin", Some("adminpw")).send().unwrap()
    }
    pub(crate) fn post(
        &self,
        path: &str,
        body: impl Into<reqwest::blocking::Body>,
    ) -> reqwest::blocking::Response {
        self.send(self.0.client.post(self.0.url(path)).body(body))
    }
    pub(crate) fn json(&self, path: &str) -> Value {
        let r = self.post(path, "");
        assert_eq!(r.status(), 200, "{path}");
        r.json().unwrap()
    }
    pub(crate) fn query(&self, q: &str) {
        let r = self.send(self.0.client.post(self.0.url("/query")).form(&[("q", q)]));
        assert_eq!(r.status(), 200, "{q}");
    }
    pub(crate) fn sql(&self, sql: &str) -> Result<Vec<Value>, String> {
        let r = self.post("/api/v1/sql?format=jsoneachrow", sql.to_string());
        let status = r.status();
        let text = r.text().unwrap();
        if status != 200 {
            return Err(format!("{status}: {text}"));
        }
        Ok(text
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect())
    }
    pub(crate) fn count(&self, table: &str) -> u64 {
        match self.sql(&format!("SELECT toString(count()) AS n FROM {table}")) {
            Ok(rows) => rows[0]["n"].as_str().unwrap().parse().unwrap(),
            Err(e) if e.contains("UNKNOWN_TABLE") || e.contains("UNKNOWN_DATABASE") => 0,
            Err(e) => panic!("{table}: {e}"),
        }
    }
    pub(crate) fn count_until(&self, table: &str, n: u64) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.count(table) != n {
            assert!(
                Instant::now() < deadline,
                "{table}: {} rows, not {n}",
                self.count(table)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Auth on, with an admin (who may run DDL through `/api/v1/sql`) and a writer.
pub(crate) fn auth_config() -> String {
    format!(
        "[auth]\nenabled = true\n\n[[auth.users]]\nname = \"admin\"\npassword_hash = \"{}\"\nadmin = true\n\n\
         [[auth.users]]\nname = \"w\"\npassword_hash = \"{}\"\nread = [\"*\"]\nwrite = [\"*\"]\n",
        hash("adminpw"),
        hash("wpw")
    )
}

#[test]
fn issue_15_poison_writes_are_quarantined_while_other_databases_keep_flowing() {
    let dir = data_dir();
    let config = auth_config();
    let mut s = Spawn::new(dir.path()).config(&config).start();
    let a = Admin(&s);
    a.query("CREATE DATABASE h");
    a.query("CREATE DATABASE other");
    assert_eq!(
        a.post("/write?db=h", "m,host=a v=1 1\nc v=1 1\n").status(),
        204
    );
    a.count_until("h.c", 1);
    // A poison that reaches the engine whatever the door refuses: a row the table's
    // constraint rejects (VIOLATED_CONSTRAINT: deterministic), acknowledged with 204.
    a.sql("ALTER TABLE h.c ADD CONSTRAINT positive CHECK v > 0")
        .unwrap();
    assert_eq!(a.post("/write?db=h", "c v=-1 2\n").status(), 204);
    // The issue's poison: a field named like the engine's own `_row_exists` column and a
    // line of 20,000 fields (past the engine's statement limits). Acknowledged and then
    // quarantined, or refused at the door with 400 once it knows them: never stuck.
    let row_exists = a.post("/write?db=h", "m,host=a _row_exists=1 2\n").status();
    let wide: String = (0..20_000)
        .map(|i| format!("f{i}={i}"))
        .collect::<Vec<_>>()
        .join(",");
    let wide_status = a.post("/write?db=h", format!("wide {wide} 3\n")).status();
    for st in [row_exists, wide_status] {
        assert!(st == 204 || st == 400, "{st}");
    }
    let poisons = 1 + (row_exists == 204) as u64 + (wide_status == 204) as u64;

    // Everything else keeps flowing, in this database and the other.
    for i in 0..20 {
        let t = 10 + i;
        assert_eq!(
            a.post("/write?db=other", format!("o v={i} {t}\n")).status(),
            204
        );
        assert_eq!(
            a.post(
                "/write?db=h",
                format!("m,host=b v={i} {t}\nc v={} {t}\n", i + 1)
            )
            .status(),
            204
        );
    }
    a.count_until("other.o", 20);
    a.count_until("h.m", 21);
    a.count_until("h.c", 21);
    let h = health_until(&s, "the watermark passes the poison", |h| {
        h["wal"]["unflushed_points"] == 0
            && h["quarantine"]
                .as_array()
                .is_some_and(|q| q.len() as u64 == poisons)
    });
    assert_eq!(h["status"], "pass", "{h}");
    assert_eq!(h["checks"][0]["status"], "warn", "{h}");
    let q = h["quarantine"].as_array().unwrap();
    let c = q.iter().find(|t| t["measurement"] == "c").unwrap();
    assert_eq!(
        (c["db"].as_str(), c["points"].as_u64()),
        (Some("h"), Some(1)),
        "{h}"
    );
    assert!(
        c["error"].as_str().unwrap().contains("VIOLATED_CONSTRAINT"),
        "{h}"
    );
    if row_exists == 204 {
        let m = q.iter().find(|t| t["measurement"] == "m").unwrap();
        assert!(
            m["error"].as_str().unwrap().contains("ILLEGAL_COLUMN"),
            "{h}"
        );
    }
    if wide_status == 204 {
        let w = q.iter().find(|t| t["measurement"] == "wide").unwrap();
        assert!(w["error"].as_str().unwrap().contains("SYNTAX_ERROR"), "{h}");
    }
    assert_eq!(
        metric(&s, "chingest_quarantined_tables"),
        Some(poisons as f64)
    );
    assert_eq!(
        metric(&s, "chingest_dead_letter_points"),
        Some(poisons as f64)
    );

    // Listed; retried while the cause is still there: it stays, with the engine's error.
    let list: Value = a
        .send(s.client.get(s.url("/api/v1/quarantine")))
        .json()
        .unwrap();
    assert_eq!(
        list["tables"].as_array().unwrap().len() as u64,
        poisons,
        "{list}"
    );
    let retry = a.json("/api/v1/quarantine/retry?db=h&measurement=c");
    assert_eq!(
        (retry["entries"].as_u64(), retry["failed_points"].as_u64()),
        (Some(1), Some(1)),
        "{retry}"
    );
    assert!(
        retry["errors"][0]
            .as_str()
            .unwrap()
            .contains("VIOLATED_CONSTRAINT"),
        "{retry}"
    );
    // The other poisons are given up by the operator.
    for m in ["m", "wide"] {
        let d = a.json(&format!("/api/v1/quarantine/discard?db=h&measurement={m}"));
        assert!(d["points"].as_u64().unwrap() <= 1, "{d}");
    }
    assert_eq!(metric(&s, "chingest_dead_letter_points"), Some(1.0));

    // A graceful stop is prompt (nothing retries for ever) and clean.
    let t = Instant::now();
    let exit = s.terminate();
    assert!(exit.success(), "{exit:?}\n{}", s.log_text());
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "stop took {:?}",
        t.elapsed()
    );
    drop(s);

    // The restart succeeds and the quarantine is durable; once the cause is gone, a retry
    // inserts the point, once.
    let s = Spawn::new(dir.path()).config(&config).start();
    let a = Admin(&s);
    let list: Value = a
        .send(s.client.get(s.url("/api/v1/quarantine")))
        .json()
        .unwrap();
    assert_eq!(list["tables"][0]["measurement"], "c", "{list}");
    assert_eq!(
        (a.count("h.m"), a.count("h.c"), a.count("other.o")),
        (21, 21, 20)
    );
    a.sql("ALTER TABLE h.c DROP CONSTRAINT positive").unwrap();
    let retry = a.json("/api/v1/quarantine/retry?db=h");
    assert_eq!(retry["inserted_points"], 1, "{retry}");
    assert_eq!(a.count("h.c"), 22);
    let again = a.json("/api/v1/quarantine/retry?db=h");
    assert_eq!(again["entries"], 0, "the quarantine is empty: {again}");
    assert_eq!(a.count("h.c"), 22, "inserted once");
    let h: Value = s.get("/health").json().unwrap();
    assert_eq!(h["quarantine"], serde_json::json!([]), "{h}");
    assert_eq!(metric(&s, "chingest_quarantined_tables"), Some(0.0));
}

#[test]
fn issue_15_the_quarantine_route_is_for_admins() {
    let dir = data_dir();
    let s = Spawn::new(dir.path()).config(&auth_config()).start();
    let get = |user: &str, pw: &str| {
        s.client
            .get(s.url("/api/v1/quarantine"))
            .basic_auth(user, Some(pw))
            .send()
            .unwrap()
            .status()
    };
    assert_eq!(get("w", "wpw"), 403);
    assert_eq!(get("admin", "adminpw"), 200);
    assert_eq!(
        s.client
            .get(s.url("/api/v1/quarantine"))
            .send()
            .unwrap()
            .status(),
        401
    );
    let r = s
        .client
        .post(s.url("/api/v1/quarantine/discard?db=x"))
        .basic_auth("w", Some("wpw"))
        .send()
        .unwrap();
    assert_eq!(r.status(), 403);
}

#[test]
fn issue_15_drop_database_racing_writes_never_resurrects_it() {
    let dir = data_dir();
    // Nothing flushes on its own: the dropped database's entries are still in the WAL
    // when the server is killed, so replay must honour the drop.
    let mut s = Spawn::new(dir.path())
        .env("CHINGEST_FLUSH__MAX_AGE_MS", "600000")
        .env("CHINGEST_FLUSH__MAX_POINTS_PER_BATCH", "1000000")
        .start();
    s.query("CREATE DATABASE race; CREATE DATABASE keep");
    let dropped = AtomicBool::new(false);
    let after_drop_204 = AtomicU64::new(0);
    let statuses = std::sync::Mutex::new(std::collections::BTreeMap::<u16, u64>::new());
    std::thread::scope(|scope| {
        for w in 0..4 {
            let (s, dropped, after, statuses) = (&s, &dropped, &after_drop_204, &statuses);
            scope.spawn(move || {
                for i in 0..400 {
                    // Sent after the DROP answered: must be refused.
                    let sent_after = dropped.load(Ordering::SeqCst);
                    let st = s
                        .post("/write?db=race", format!("r,w=w{w} v={i} {}\n", 1000 + i))
                        .status()
                        .as_u16();
                    *statuses.lock().unwrap().entry(st).or_default() += 1;
                    assert!(st == 204 || st == 404, "{st}");
                    if sent_after && st == 204 {
                        after.fetch_add(1, Ordering::SeqCst);
                    }
                    if sent_after && i % 10 == 0 {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
            });
        }
        std::thread::sleep(Duration::from_millis(150));
        s.query("DROP DATABASE race");
        dropped.store(true, Ordering::SeqCst);
    });
    assert_eq!(
        after_drop_204.load(Ordering::SeqCst),
        0,
        "a write after the drop was acknowledged"
    );
    let statuses = statuses.into_inner().unwrap();
    assert!(
        statuses.contains_key(&204) && statuses.contains_key(&404),
        "{statuses:?}"
    );
    assert_eq!(
        s.query("SHOW DATABASES")["results"][0]["series"][0]["values"],
        serde_json::json!([["keep"]])
    );
    assert_eq!(s.post("/write?db=keep", "k v=1 1\n").status(), 204);
    s.signal("KILL");
    let _ = s.terminate_wait();
    drop(s);
    assert!(!engine_has_database(dir.path(), "race"));

    // Restart: replay discards the dropped database's entries (they were in the WAL).
    let mut s = Spawn::new(dir.path()).start();
    health_until(&s, "replay drained", |h| h["wal"]["unflushed_points"] == 0);
    assert_eq!(count(&s, "keep.k"), 1);
    assert_eq!(
        s.query("SHOW DATABASES")["results"][0]["series"][0]["values"],
        serde_json::json!([["keep"]])
    );
    assert_eq!(s.post("/write?db=race", "r v=1 1\n").status(), 404);
    // Re-created, it holds only what is written to it from now on.
    s.query("CREATE DATABASE race");
    assert_eq!(s.post("/write?db=race", "r,w=new v=1 5\n").status(), 204);
    s.sql_until("SELECT v FROM race.r", 1);
    assert!(s.terminate().success());
    drop(s);
    assert!(engine_has_database(dir.path(), "race"));
    let s = Spawn::new(dir.path()).start();
    assert_eq!(count(&s, "race.r"), 1);
}

/// A mounted tmpfs, unmounted on drop; `None` (said loudly) where mounting is not allowed.
struct Tmpfs {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(mib: u64, test: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!(
                "\n\n*** SKIPPED {test}: cannot mount a {mib} MiB tmpfs (needs root or CAP_SYS_ADMIN) ***\n\n"
            );
            return None;
        }
        Some(Tmpfs {
            path: dir.path().to_path_buf(),
            _dir: dir,
        })
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

fn free_bytes(dir: &Path) -> u64 {
    let out = Command::new("df")
        .args(["-B1", "--output=avail"])
        .arg(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Writes a filler file until fewer than `leave` bytes are free.
fn fill(dir: &Path, leave: u64) -> PathBuf {
    use std::io::Write;
    let p = dir.join("filler");
    let mut f = std::fs::File::create(&p).unwrap();
    let chunk = vec![0x5Au8; 1 << 20];
    loop {
        let free = free_bytes(dir);
        if free < leave {
            return p;
        }
        let n = ((free - leave) as usize + 4096).min(chunk.len());
        if f.write_all(&chunk[..n]).and_then(|_| f.sync_all()).is_err() {
            return p;
        }
    }
}

#[test]
fn issue_15_disk_full_refuses_writes_with_503_and_they_resume_when_space_returns() {
    let Some(fs) = Tmpfs::mount(256, "issue_15_disk_full_refuses_writes…") else {
        return;
    };
    let s = Spawn::new(&fs.path)
        .env("CHINGEST_WAL__MIN_FREE_BYTES", &(32u64 << 20).to_string())
        .env(
            "CHINGEST_WAL__WRITE_BUFFER_BYTES",
            &(4u64 << 20).to_string(),
        )
        .start();
    s.query("CREATE DATABASE full");
    assert_eq!(s.post("/write?db=full", "d v=1 1\n").status(), 204);
    s.sql_until("SELECT v FROM full.d", 1);

    let filler = fill(&fs.path, 24 << 20);
    std::thread::sleep(Duration::from_millis(200));
    let r = s.post("/write?db=full", "d v=2 2\n");
    assert_eq!(r.status(), 503);
    let body = r.text().unwrap();
    assert!(
        body.contains("disk full") && body.contains("min_free_bytes"),
        "{body}"
    );
    let h = s.get("/health");
    assert_eq!(h.status(), 503);
    let h: Value = h.json().unwrap();
    assert_eq!(h["status"], "fail");
    assert!(h["message"].as_str().unwrap().contains("disk full"), "{h}");

    // Space comes back: writes resume by themselves, no restart.
    std::fs::remove_file(&filler).unwrap();
    health_until(&s, "space returned", |h| h["status"] == "pass");
    assert_eq!(s.post("/write?db=full", "d v=3 3\n").status(), 204);
    let rows = s.sql_until("SELECT v FROM full.d ORDER BY v", 2);
    let got: Vec<f64> = rows.iter().map(|r| r["v"].as_f64().unwrap()).collect();
    assert_eq!(got, vec![1.0, 3.0], "the refused write is not there");
}

#[test]
fn issue_15_a_graceful_stop_is_bounded_when_the_engine_cannot_flush() {
    let Some(fs) = Tmpfs::mount(256, "issue_15_a_graceful_stop_is_bounded…") else {
        return;
    };
    let mut s = Spawn::new(&fs.path)
        .env("CHINGEST_FLUSH__MAX_AGE_MS", "600000")
        .env("CHINGEST_FLUSH__MAX_POINTS_PER_BATCH", "1000000")
        .env("CHINGEST_SERVER__SHUTDOWN_GRACE_SECS", "3")
        .env("CHINGEST_WAL__MIN_FREE_BYTES", "0")
        .env(
            "CHINGEST_WAL__WRITE_BUFFER_BYTES",
            &(4u64 << 20).to_string(),
        )
        .start();
    s.query("CREATE DATABASE g");
    let body: String = (0..500)
        .map(|i| format!("g,k=k{} v={i} {}\n", i % 7, 100 + i))
        .collect();
    assert_eq!(s.post("/write?db=g", body).status(), 204);
    // The engine cannot write a part any more: the shutdown flush fails (transient: a
    // full disk is retried, never quarantined) until the grace runs out.
    let filler = fill(&fs.path, 0);
    let t = Instant::now();
    s.signal("TERM");
    let exit = s.terminate_wait();
    let took = t.elapsed();
    assert!(
        took < Duration::from_secs(12),
        "stop took {took:?}\n{}",
        s.log_text()
    );
    let log = s.log_text();
    assert!(exit.success(), "{exit:?}\n{log}");
    drop(s);

    std::fs::remove_file(&filler).unwrap();
    let s = Spawn::new(&fs.path).start();
    let rows = s.sql_until("SELECT v FROM g.g", 500);
    assert_eq!(rows.len(), 500);
    let h: Value = s.get("/health").json().unwrap();
    assert_eq!(
        h["quarantine"],
        serde_json::json!([]),
        "a full disk quarantines nothing: {h}\n{log}"
    );
}
