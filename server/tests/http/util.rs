//! Spawning the real `chingest` binary on a temp data dir and a free port.
#![allow(unreachable_pub, dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A fresh directory per server (kept under the system temp dir, removed on drop).
pub fn data_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!(
            "chingest-http-{}-",
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ))
        .tempdir()
        .unwrap()
}

/// A free loopback port.
pub fn free_port() -> u16 {
    // The tests of this binary run in parallel, and a port is free again once the probe's
    // listener closes: never hand the same one out twice in this process, or two children
    // (two influxd, say) race to bind it and one test talks to the other's server.
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// A running server process.
pub struct Server {
    pub child: Option<Child>,
    pub addr: SocketAddr,
    pub base: String,
    pub log: PathBuf,
    pub client: reqwest::blocking::Client,
}

/// Settings for one server; `env` are `CHINGEST_…` overrides.
pub struct Spawn<'a> {
    pub data: &'a Path,
    pub env: Vec<(String, String)>,
    pub config_file: Option<PathBuf>,
}

impl<'a> Spawn<'a> {
    pub fn new(data: &'a Path) -> Self {
        Spawn {
            data,
            env: Vec::new(),
            config_file: None,
        }
    }
    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.env.push((k.to_string(), v.to_string()));
        self
    }
    pub fn config(mut self, text: &str) -> Self {
        let p = self.data.join(format!(
            "chingest-{}.toml",
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&p, text).unwrap();
        self.config_file = Some(p);
        self
    }
    pub fn start(self) -> Server {
        // A port free when probed can be taken before the child binds it: the tests' own
        // outgoing connections take their local ports from the same ephemeral range. Then
        // the child exits at once saying so, and another port is tried.
        for _ in 0..4 {
            let mut server = self.spawn();
            match server.wait_ready() {
                Ready::Yes => return server,
                Ready::PortTaken => {
                    eprintln!("{} was taken before the server bound it", server.addr)
                }
            }
        }
        let mut server = self.spawn();
        if let Ready::PortTaken = server.wait_ready() {
            panic!("five ports taken before the server bound them");
        }
        server
    }

    fn spawn(&self) -> Server {
        let port = free_port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let log = self.data.join(format!("server-{port}.log"));
        let logf = std::fs::File::create(&log).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_chingest"));
        cmd.arg("serve");
        if let Some(c) = &self.config_file {
            cmd.arg("--config").arg(c);
        }
        cmd.env("CHINGEST_SERVER__LISTEN", addr.to_string())
            .env("CHINGEST_STORAGE__DATA_DIR", self.data.join("data"))
            // Fast read-back in tests; flush.connections small: 2 cores shared by many tests.
            .env("CHINGEST_FLUSH__MAX_AGE_MS", "100")
            .env("CHINGEST_FLUSH__CONNECTIONS", "2")
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(logf);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("spawn chingest");
        Server {
            child: Some(child),
            addr,
            base: format!("http://{addr}"),
            log,
            client: reqwest::blocking::Client::builder()
                .timeout(Duration::from_secs(60))
                // Fresh connections: idle ones are closed by the header read timeout.
                .pool_max_idle_per_host(0)
                .build()
                .unwrap(),
        }
    }
}

/// How a start ended.
enum Ready {
    Yes,
    /// The port was taken before the server bound it (it exited saying so).
    PortTaken,
}

impl Server {
    fn wait_ready(&mut self) -> Ready {
        let deadline = Instant::now() + Duration::from_secs(90);
        // Short: a ping that reached whatever else holds the port must not wait a minute.
        let ping = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(5))
            .pool_max_idle_per_host(0)
            .build()
            .unwrap();
        while Instant::now() < deadline {
            // Before a ping: whatever holds the port might answer it, or never.
            let exited = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            if exited.is_some() && self.log_text().contains("Address already in use") {
                self.child = None;
                return Ready::PortTaken;
            }
            if let Ok(r) = ping.get(format!("{}/ping", self.base)).send() {
                if r.status() == 204 {
                    return Ready::Yes;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "server did not answer /ping in time; log:\n{}",
            self.log_text()
        );
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub fn get(&self, path: &str) -> reqwest::blocking::Response {
        self.client.get(self.url(path)).send().unwrap()
    }

    pub fn post(
        &self,
        path: &str,
        body: impl Into<reqwest::blocking::Body>,
    ) -> reqwest::blocking::Response {
        self.client.post(self.url(path)).body(body).send().unwrap()
    }

    /// `/query` statement(s) (POST: CREATE/DROP need it), asserting 200.
    pub fn query(&self, q: &str) -> Value {
        let r = self
            .client
            .post(self.url("/query"))
            .query(&[("q", q)])
            .send()
            .unwrap();
        assert_eq!(r.status(), 200, "{q}");
        r.json().unwrap()
    }

    /// Rows of a SQL statement (JSONEachRow).
    pub fn sql(&self, sql: &str) -> Vec<Value> {
        match self.try_sql(sql) {
            Ok(rows) => rows,
            Err(e) => panic!("{sql}: {e}"),
        }
    }

    /// Rows, or the error text of a non-200 answer.
    pub fn try_sql(&self, sql: &str) -> Result<Vec<Value>, String> {
        let r = self
            .client
            .post(self.url("/api/v1/sql?format=jsoneachrow"))
            .body(sql.to_string())
            .send()
            .unwrap();
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

    /// Polls `sql` until it returns `n` rows (flushing is asynchronous).
    pub fn sql_until(&self, sql: &str, n: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            // The table appears with the first flush: until then UNKNOWN_TABLE.
            let rows = match self.try_sql(sql) {
                Ok(rows) => rows,
                Err(e) if e.contains("UNKNOWN_TABLE") && Instant::now() < deadline => Vec::new(),
                Err(e) => panic!("{sql}: {e}"),
            };
            if rows.len() == n || Instant::now() > deadline {
                assert_eq!(rows.len(), n, "{sql}: {rows:?}");
                return rows;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Sends a signal with kill(1).
    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.pid().to_string())
            .status()
            .unwrap();
        assert!(ok.success());
    }

    /// SIGTERM and wait for the exit (at most 60 s).
    pub fn terminate(&mut self) -> ExitStatus {
        self.signal("TERM");
        self.terminate_wait()
    }

    /// Waits for the exit after a signal (at most 60 s).
    pub fn terminate_wait(&mut self) -> ExitStatus {
        let mut child = self.child.take().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(s) = child.try_wait().unwrap() {
                return s;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("server ignored SIGTERM; log:\n{}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A raw HTTP/1.1 exchange for what reqwest will not do (slow bodies, partial sends).
pub fn raw_request(addr: SocketAddr, head: &str, body: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    read_response(&mut s)
}

/// Reads one response (status and the whole text) from `s`.
pub fn read_response(s: &mut TcpStream) -> (u16, String) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                let text = String::from_utf8_lossy(&buf);
                if let Some(end) = text.find("\r\n\r\n") {
                    let len = text[..end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap())
                        })
                        .unwrap_or(0);
                    if buf.len() >= end + 4 + len {
                        break;
                    }
                }
            }
            Err(_) => break,
        }
    }
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// `chingest hash-password <secret>`: the stored form of a password or token.
pub fn hash(secret: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_chingest"))
        .args(["hash-password", secret])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Where `scripts/setup.sh` keeps what the tests drive (`$CHINGEST_CACHE_DIR`,
/// else `$XDG_CACHE_HOME/chingest`, else `~/.cache/chingest`).
pub fn cache_dir() -> PathBuf {
    std::env::var_os("CHINGEST_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default();
            std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or(home.join(".cache"))
                .join("chingest")
        })
}

/// The variable that lets a test whose dependency is missing skip instead of failing.
pub const SKIP_MISSING_DEPS: &str = "CHINGEST_SKIP_MISSING_TEST_DEPS";

/// `path` if it exists. Otherwise the test fails: a missing dependency is a setup failure
/// (`scripts/setup.sh --test-deps` installs `what`), never a pass. Only with
/// `CHINGEST_SKIP_MISSING_TEST_DEPS=1` set (a deliberate choice on a machine without the
/// peers) is it `None`, said loudly, for `test` to skip.
pub fn test_dep_or_skip(path: PathBuf, what: &str, test: &str) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var(SKIP_MISSING_DEPS).as_deref() == Ok("1"),
        "{test}: no {what} at {}: run `scripts/setup.sh --test-deps` to install it \
         (or set {SKIP_MISSING_DEPS}=1 to skip the tests that need it)",
        path.display()
    );
    eprintln!(
        "\n\n*** SKIPPED {test}: no {what} at {} ({SKIP_MISSING_DEPS}=1) ***\n\n",
        path.display()
    );
    None
}
