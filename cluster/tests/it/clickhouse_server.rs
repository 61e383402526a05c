//! A ClickHouse server for tests (Debian's `clickhouse-server`, 18.16 on bookworm;
//! `scripts/setup.sh --test-deps` installs it): its own config, ports and data dir on
//! loopback, started and stopped by the test. Shared by flush's and the server's tests
//! (`#[path]`).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One `clickhouse-server` on loopback, killed on drop (its data dir stays for a restart).
pub(crate) struct Shard {
    dir: PathBuf,
    port: u16,
    tcp_port: u16,
    /// The `<remote_servers>` section of its config (empty: none).
    remote_servers: String,
    /// Its `<zookeeper>`, `<macros>` and interserver sections, as a replica (empty: none).
    replica: String,
    child: Option<Child>,
}

/// The cluster name the shards of [`Shard::start_cluster`] know each other by.
pub(crate) const CLUSTER: &str = "chingest_test";

/// A user on every test server that may read database `a` only (its `allow_databases`:
/// `a` and `__shard_a`), and its password: a shard reader (`[[storage.clickhouse.readers]]`).
#[allow(dead_code)]
pub(crate) const READER_OF_A: (&str, &str) = ("reader_a", "reader_a_pw");

/// Whether a test may skip when a peer it needs is not installed: only with
/// `CHINGEST_SKIP_MISSING_TEST_DEPS=1`.
fn skip_missing_deps() -> bool {
    std::env::var("CHINGEST_SKIP_MISSING_TEST_DEPS").as_deref() == Ok("1")
}

/// The server binary (`CHINGEST_CLICKHOUSE_SERVER` or Debian's path); a test fails where it
/// is not installed (`None`, the test skipping, only with `CHINGEST_SKIP_MISSING_TEST_DEPS=1`).
pub(crate) fn server_binary(test: &str) -> Option<PathBuf> {
    let bin = std::env::var_os("CHINGEST_CLICKHOUSE_SERVER").map_or_else(
        || PathBuf::from("/usr/sbin/clickhouse-server"),
        PathBuf::from,
    );
    if bin.exists() {
        return Some(bin);
    }
    // A missing peer fails the test (a skip would report ok for a test that never ran);
    // only CHINGEST_SKIP_MISSING_TEST_DEPS=1, set on purpose, skips, loudly.
    assert!(
        skip_missing_deps(),
        "{test}: no ClickHouse server at {}: run `scripts/setup.sh --test-deps` to install it \
         (or set CHINGEST_SKIP_MISSING_TEST_DEPS=1 to skip the tests that need it)",
        bin.display()
    );
    eprintln!(
        "\n\n*** SKIPPED {test}: no ClickHouse server at {} (CHINGEST_SKIP_MISSING_TEST_DEPS=1) ***\n\n",
        bin.display()
    );
    None
}

/// `n` free loopback ports, never one this process handed out before (tests run in
/// parallel and a probed port is free again once its listener closes: a server given a
/// port twice, or another test's, never starts or talks to the wrong peer).
pub(crate) fn free_ports(n: usize) -> Vec<u16> {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    let mut held = Vec::new();
    while held.len() < n {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        if !given.contains(&port) {
            given.push(port);
            held.push((listener, port));
        }
    }
    held.into_iter().map(|(_, port)| port).collect()
}

impl Shard {
    /// Starts a server with its data in `dir`.
    pub(crate) fn start(bin: &Path, dir: PathBuf) -> Shard {
        std::fs::create_dir_all(&dir).unwrap();
        let ports = free_ports(2);
        let mut shard = Shard {
            dir,
            port: ports[0],
            tcp_port: ports[1],
            remote_servers: String::new(),
            replica: String::new(),
            child: None,
        };
        shard.spawn(bin);
        shard
    }

    /// Starts a server with its data in `dir` as replica `name` of tables replicated through
    /// `zookeeper` (its own interserver port, for the other replicas to fetch parts from).
    pub(crate) fn start_replica(
        bin: &Path,
        dir: PathBuf,
        zookeeper: &ZooKeeper,
        name: &str,
    ) -> Shard {
        std::fs::create_dir_all(&dir).unwrap();
        let ports = free_ports(3);
        let mut shard = Shard {
            dir,
            port: ports[0],
            tcp_port: ports[1],
            remote_servers: String::new(),
            replica: format!(
                "<zookeeper><node><host>127.0.0.1</host><port>{}</port></node>\
                 <session_timeout_ms>6000</session_timeout_ms></zookeeper>\
                 <macros><replica>{name}</replica></macros>\
                 <interserver_http_port>{}</interserver_http_port>\
                 <interserver_http_host>127.0.0.1</interserver_http_host>",
                zookeeper.port, ports[2]
            ),
            child: None,
        };
        shard.spawn(bin);
        shard
    }

    /// Starts a server with its data in `dir` that names itself replica `name` in its
    /// `<macros>` but has no `<zookeeper>` (a replica's config missing its ZooKeeper).
    #[allow(dead_code)]
    pub(crate) fn start_replica_without_zookeeper(bin: &Path, dir: PathBuf, name: &str) -> Shard {
        std::fs::create_dir_all(&dir).unwrap();
        let ports = free_ports(2);
        let mut shard = Shard {
            dir,
            port: ports[0],
            tcp_port: ports[1],
            remote_servers: String::new(),
            replica: format!("<macros><replica>{name}</replica></macros>"),
            child: None,
        };
        shard.spawn(bin);
        shard
    }

    /// Starts one server per dir, each knowing all of them as the shards of the cluster
    /// [`CLUSTER`] (`remote_servers`, over their native ports), so `Distributed` tables
    /// over it read every one.
    pub(crate) fn start_cluster(bin: &Path, dirs: &[PathBuf]) -> Vec<Shard> {
        let free = free_ports(2 * dirs.len());
        let ports: Vec<(u16, u16)> = free.chunks(2).map(|p| (p[0], p[1])).collect();
        let shards: String = ports
            .iter()
            .map(|(_, tcp)| {
                format!(
                    "<shard><replica><host>127.0.0.1</host><port>{tcp}</port></replica></shard>"
                )
            })
            .collect();
        let remote_servers =
            format!("<remote_servers><{CLUSTER}>{shards}</{CLUSTER}></remote_servers>");
        dirs.iter()
            .zip(ports)
            .map(|(dir, (port, tcp_port))| {
                std::fs::create_dir_all(dir).unwrap();
                let mut shard = Shard {
                    dir: dir.clone(),
                    port,
                    tcp_port,
                    remote_servers: remote_servers.clone(),
                    replica: String::new(),
                    child: None,
                };
                shard.spawn(bin);
                shard
            })
            .collect()
    }

    /// (Re)starts the server on its dir and port; returns once it answers.
    pub(crate) fn spawn(&mut self, bin: &Path) {
        let d = self.dir.display();
        let users = "<?xml version=\"1.0\"?>\n<yandex><profiles><default>\
             <max_insert_block_size>10000</max_insert_block_size>\
             <min_insert_block_size_rows>10000</min_insert_block_size_rows></default></profiles>\
             <users><default><password></password><networks><ip>127.0.0.1</ip></networks>\
             <profile>default</profile><quota>default</quota></default>\
             <reader_a><password>reader_a_pw</password><networks><ip>127.0.0.1</ip></networks>\
             <profile>default</profile><quota>default</quota><allow_databases>\
             <database>a</database><database>__shard_a</database></allow_databases></reader_a>\
             </users>\
             <quotas><default></default></quotas></yandex>\n";
        std::fs::write(self.dir.join("users.xml"), users).unwrap();
        let config = format!(
            "<?xml version=\"1.0\"?>\n<yandex>\
             <logger><level>warning</level><log>{d}/server.log</log><errorlog>{d}/error.log</errorlog></logger>\
             <http_port>{}</http_port><tcp_port>{}</tcp_port><listen_host>127.0.0.1</listen_host>\
             <path>{d}/data/</path><tmp_path>{d}/tmp/</tmp_path>\
             <user_files_path>{d}/user_files/</user_files_path>\
             <format_schema_path>{d}/format_schemas/</format_schema_path>\
             <mark_cache_size>67108864</mark_cache_size>\
             <users_config>{d}/users.xml</users_config>\
             <default_profile>default</default_profile><default_database>default</default_database>\
             {}{}</yandex>\n",
            self.port,
            self.tcp_port,
            self.remote_servers,
            self.replica
        );
        std::fs::write(self.dir.join("config.xml"), config).unwrap();
        let child = Command::new(bin)
            .arg(format!("--config-file={d}/config.xml"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("clickhouse-server starts");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.query("SELECT 1").as_deref() != Ok("1\n") {
            assert!(
                Instant::now() < deadline,
                "clickhouse-server on {} did not answer; {}",
                self.port,
                std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Its HTTP endpoint.
    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Runs a statement; its TabSeparated answer or the server's error.
    pub(crate) fn query(&self, sql: &str) -> Result<String, String> {
        let r = reqwest::blocking::Client::new()
            .post(self.url())
            .body(sql.to_string())
            .timeout(Duration::from_secs(10))
            .send()
            .map_err(|e| e.to_string())?;
        let ok = r.status().is_success();
        let text = r.text().map_err(|e| e.to_string())?;
        if ok {
            Ok(text)
        } else {
            Err(text)
        }
    }

    /// Kills the server (its data stays for a restart).
    pub(crate) fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Shard {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A ZooKeeper server (Debian's `zookeeper`, `scripts/setup.sh --test-deps` installs it) on
/// loopback, for replicated tables: its own config, port and data dir, killed on drop.
pub(crate) struct ZooKeeper {
    dir: PathBuf,
    port: u16,
    child: Option<Child>,
}

/// Debian's ZooKeeper jar (its dependencies are in its manifest).
const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";

impl ZooKeeper {
    /// Starts one with its data in `dir`; where ZooKeeper or Java is not installed the test
    /// fails (`None`, the test skipping, only with `CHINGEST_SKIP_MISSING_TEST_DEPS=1`).
    pub(crate) fn start(test: &str, dir: PathBuf) -> Option<ZooKeeper> {
        let java = Command::new("java")
            .arg("-version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !(java && Path::new(ZOOKEEPER_JAR).exists()) {
            assert!(
                skip_missing_deps(),
                "{test}: no ZooKeeper at {ZOOKEEPER_JAR} (or no java): run `scripts/setup.sh \
                 --test-deps` to install it (or set CHINGEST_SKIP_MISSING_TEST_DEPS=1 to skip)"
            );
            eprintln!(
                "\n\n*** SKIPPED {test}: no ZooKeeper at {ZOOKEEPER_JAR} or no java \
                 (CHINGEST_SKIP_MISSING_TEST_DEPS=1) ***\n\n"
            );
            return None;
        }
        std::fs::create_dir_all(dir.join("data")).unwrap();
        let mut zk = ZooKeeper {
            dir,
            port: free_ports(1)[0],
            child: None,
        };
        zk.spawn();
        Some(zk)
    }

    /// (Re)starts it on its dir and port; returns once it takes connections.
    pub(crate) fn spawn(&mut self) {
        let d = self.dir.display();
        std::fs::write(
            self.dir.join("zoo.cfg"),
            format!(
                "tickTime=500\ndataDir={d}/data\nclientPort={}\nclientPortAddress=127.0.0.1\n\
                 admin.enableServer=false\nmaxSessionTimeout=20000\n",
                self.port
            ),
        )
        .unwrap();
        let log = std::fs::File::create(self.dir.join("zookeeper.log")).unwrap();
        let child = Command::new("java")
            .args([
                "-Xmx128m",
                "-XX:+UseSerialGC",
                "-cp",
                ZOOKEEPER_JAR,
                "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            ])
            .arg(self.dir.join("zoo.cfg"))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("java starts");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "ZooKeeper on {} did not start; {}",
                self.port,
                std::fs::read_to_string(self.dir.join("zookeeper.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Kills it (its data stays for a restart).
    #[allow(dead_code)]
    pub(crate) fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for ZooKeeper {
    fn drop(&mut self) {
        self.stop();
    }
}
