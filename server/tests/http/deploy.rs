//! The deployment artifacts in `deploy/`, checked as an operator runs them:
//! `systemd-analyze verify` (Debian's `systemd` package) accepts the unit and
//! `systemd-analyze security` rates it hardened; the unit, the container image
//! and the shipped config agree on the user, config path, data directory and
//! stop timeout; the image is built by the same `scripts/setup.sh` as `make
//! run`; its `HEALTHCHECK` command passes against a live server and fails
//! without one. Docker itself is not run here (no daemon on the test machines):
//! the Dockerfile is checked as text, and its health command for real.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use crate::metrics_docs::{read_repo_file, repo_root};
use crate::util::*;

const SYSTEMD_ANALYZE: &str = "/usr/bin/systemd-analyze";

/// `[Service]` (and other sections') `Key=value` lines of a unit, by key.
fn unit_keys(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with('[') || line.is_empty() {
            continue;
        }
        if let Some((k, v)) = line.split_once('=') {
            m.entry(k.trim().to_string())
                .or_default()
                .push(v.trim().to_string());
        }
    }
    m
}

fn one<'a>(m: &'a BTreeMap<String, Vec<String>>, key: &str) -> &'a str {
    let v = m
        .get(key)
        .unwrap_or_else(|| panic!("deploy/chingest.service has no {key}="));
    assert_eq!(v.len(), 1, "{key}= set {} times", v.len());
    &v[0]
}

/// systemd time span in seconds: `120`, `90s`, `2min`, `2m`, `1min 30s`.
fn seconds(span: &str) -> u64 {
    let mut total = 0;
    for part in span.split_whitespace() {
        let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
        let n: u64 = digits
            .parse()
            .unwrap_or_else(|_| panic!("time span {span:?}"));
        total += match &part[digits.len()..] {
            "" | "s" | "sec" => n,
            "m" | "min" => n * 60,
            "h" => n * 3600,
            other => panic!("unit {other:?} in {span:?}"),
        };
    }
    total
}

/// The Dockerfile's instructions: continuation lines joined, comments dropped.
fn dockerfile() -> Vec<(String, String)> {
    let text = read_repo_file("deploy/Dockerfile");
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('#') || (t.is_empty() && cur.is_empty()) {
            continue;
        }
        if let Some(head) = t.strip_suffix('\\') {
            cur.push_str(head);
            cur.push(' ');
            continue;
        }
        cur.push_str(t);
        let (ins, rest) = cur.split_once(char::is_whitespace).unwrap_or((&cur, ""));
        out.push((ins.to_ascii_uppercase(), rest.trim().to_string()));
        cur.clear();
    }
    out
}

/// Instructions of the stage that starts with `FROM ... AS name` (or the last
/// stage for `None`).
fn stage(all: &[(String, String)], name: Option<&str>) -> Vec<(String, String)> {
    let starts: Vec<usize> = all
        .iter()
        .enumerate()
        .filter(|(_, (i, _))| i == "FROM")
        .map(|(n, _)| n)
        .collect();
    let start = match name {
        Some(name) => *starts
            .iter()
            .find(|&&n| {
                all[n]
                    .1
                    .to_ascii_lowercase()
                    .ends_with(&format!(" as {name}"))
            })
            .unwrap_or_else(|| panic!("no stage {name}")),
        None => *starts.last().unwrap(),
    };
    let end = starts
        .iter()
        .find(|&&n| n > start)
        .copied()
        .unwrap_or(all.len());
    all[start..end].to_vec()
}

fn values<'a>(st: &'a [(String, String)], ins: &str) -> Vec<&'a str> {
    st.iter()
        .filter(|(i, _)| i == ins)
        .map(|(_, v)| v.as_str())
        .collect()
}

/// `chingest config --check deploy/chingest.toml`: the shipped config as the
/// current binary reads it (which fails if a key no longer exists).
fn shipped_config() -> toml::Table {
    let out = Command::new(env!("CARGO_BIN_EXE_chingest"))
        .args(["config", "--check"])
        .arg(repo_root().join("deploy/chingest.toml"))
        .env_clear()
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "deploy/chingest.toml does not load: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().parse().unwrap()
}

fn get<'a>(t: &'a toml::Table, section: &str, key: &str) -> &'a toml::Value {
    t[section]
        .as_table()
        .unwrap()
        .get(key)
        .unwrap_or_else(|| panic!("{section}.{key} missing"))
}

/// The unit with ExecStart's binary pointed at the binary under test.
/// `systemd-analyze verify` checks that ExecStart's program exists and is
/// executable; on a test machine nothing is installed at /usr/local/bin, so
/// a copy that differs from the shipped file only in that path is verified.
fn unit_for_verify(dir: &std::path::Path) -> PathBuf {
    let text = read_repo_file("deploy/chingest.service");
    let shipped = "ExecStart=/usr/local/bin/chingest ";
    assert_eq!(text.matches(shipped).count(), 1, "{text}");
    let copy = text.replace(
        shipped,
        &format!("ExecStart={} ", env!("CARGO_BIN_EXE_chingest")),
    );
    let path = dir.join("chingest.service");
    std::fs::write(&path, copy).unwrap();
    path
}

fn analyze(args: &[&str], unit: &std::path::Path) -> (bool, String) {
    let out = Command::new(SYSTEMD_ANALYZE)
        .args(args)
        .arg(unit)
        .output()
        .unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn systemd_analyze_verify_accepts_the_unit_and_rates_it_hardened() {
    if test_dep_or_skip(
        PathBuf::from(SYSTEMD_ANALYZE),
        "systemd-analyze (Debian package systemd)",
        "systemd_analyze_verify_accepts_the_unit_and_rates_it_hardened",
    )
    .is_none()
    {
        return;
    }
    let dir = data_dir();
    let unit = unit_for_verify(dir.path());
    // verify exits 0 even on unknown keys and unparsable values, which it only
    // warns about: a clean unit is one with no output at all.
    let (ok, out) = analyze(&["verify"], &unit);
    assert!(
        ok && out.trim().is_empty(),
        "systemd-analyze verify:\n{out}"
    );

    // The check can fail: a misspelt key and a bad value are reported.
    let bad_dir = data_dir();
    let bad = bad_dir.path().join("chingest.service");
    let text = std::fs::read_to_string(&unit)
        .unwrap()
        .replace("ProtectSystem=strict", "ProtectSystem=strickt")
        .replace("NoNewPrivileges=", "NoNewPrivilege=");
    std::fs::write(&bad, text).unwrap();
    let (_, out) = analyze(&["verify"], &bad);
    assert!(
        out.contains("strickt") && out.contains("NoNewPrivilege"),
        "systemd-analyze verify did not report the broken copy:\n{out}"
    );

    // systemd's own exposure score (0 = locked down, 10 = unprotected; the
    // unit without its hardening block scores 8.7): at most 3.5.
    let (ok, out) = analyze(&["security", "--offline=true", "--threshold=35"], &unit);
    let score = out
        .lines()
        .find(|l| l.contains("Overall exposure level"))
        .unwrap_or("no score");
    assert!(ok, "systemd-analyze security: {score}\n{out}");
}

#[test]
fn unit_is_hardened_and_agrees_with_the_image_and_the_shipped_config() {
    let unit = unit_keys(&read_repo_file("deploy/chingest.service"));
    for (key, want) in [
        ("ProtectSystem", "strict"),
        ("NoNewPrivileges", "true"),
        ("ProtectHome", "true"),
        ("PrivateTmp", "true"),
        ("KillSignal", "SIGTERM"),
        ("Restart", "on-failure"),
    ] {
        assert_eq!(one(&unit, key), want, "{key}");
    }
    let nofile: u64 = one(&unit, "LimitNOFILE").parse().unwrap();
    assert!(nofile >= 65536, "LimitNOFILE={nofile}");

    let config = shipped_config();
    // Stopping: the in-flight grace, then the WAL commit and the flush of what
    // it holds, must fit before systemd (or Docker) sends SIGKILL.
    let grace = get(&config, "server", "shutdown_grace_secs")
        .as_integer()
        .unwrap() as u64;
    let stop = seconds(one(&unit, "TimeoutStopSec"));
    assert!(
        stop >= grace + 30,
        "TimeoutStopSec={stop}s leaves no time to flush after server.shutdown_grace_secs={grace}"
    );
    let compose = read_repo_file("deploy/compose.yaml");
    let period = compose
        .lines()
        .find_map(|l| l.trim().strip_prefix("stop_grace_period:"))
        .expect("compose.yaml: stop_grace_period for chingest");
    assert!(
        seconds(period.trim()) >= grace + 30,
        "compose stop_grace_period {period} vs grace {grace}s"
    );

    // One layout: user, binary, config path and data directory.
    let all = dockerfile();
    let runtime = stage(&all, None);
    let user = one(&unit, "User");
    assert_eq!(values(&runtime, "USER"), vec![user], "image user vs unit");
    assert!(user != "root" && user != "0");
    assert_eq!(one(&unit, "Group"), user);
    let useradd = values(&runtime, "RUN")
        .into_iter()
        .find(|r| r.contains("useradd"))
        .expect("runtime stage creates its user");
    assert!(
        useradd.contains(&format!(" {user} ")) || useradd.contains(&format!(" {user}\n")),
        "{useradd}"
    );

    let exec: Vec<&str> = one(&unit, "ExecStart").split_whitespace().collect();
    let entry: Vec<String> =
        serde_json::from_str(values(&runtime, "ENTRYPOINT").last().expect("ENTRYPOINT")).unwrap();
    assert_eq!(exec, entry, "unit ExecStart vs image ENTRYPOINT");
    let config_path = exec[exec.iter().position(|a| *a == "--config").unwrap() + 1];
    assert!(
        values(&runtime, "COPY").contains(&format!("deploy/chingest.toml {config_path}").as_str()),
        "the image installs deploy/chingest.toml at {config_path}"
    );

    let data_dir = get(&config, "storage", "data_dir").as_str().unwrap();
    let state = one(&unit, "StateDirectory");
    assert_eq!(
        format!("/var/lib/{state}"),
        data_dir,
        "StateDirectory vs storage.data_dir"
    );
    assert_eq!(values(&runtime, "VOLUME"), vec![data_dir], "VOLUME");
    assert!(
        useradd.contains(&format!("--home-dir {data_dir}")),
        "{useradd}"
    );
    // The unit's install comment names the same useradd as the image.
    assert!(
        read_repo_file("deploy/chingest.service").contains(&format!(
            "useradd --system --user-group --home-dir {data_dir} --shell /usr/sbin/nologin {user}"
        )),
        "the unit's install steps create the image's user"
    );
}

#[test]
fn image_is_built_by_setup_sh_and_runs_healthchecked_as_a_user() {
    let all = dockerfile();
    let build = stage(&all, Some("build"));
    let setup = read_repo_file("scripts/setup.sh");

    // The build runs scripts/setup.sh (plain, as `make run` does) and then the
    // Makefile's release build of the binary.
    let runs = values(&build, "RUN");
    let setup_run = runs
        .iter()
        .find(|r| r.contains("scripts/setup.sh"))
        .expect("the build stage runs scripts/setup.sh");
    assert!(
        setup_run.starts_with("scripts/setup.sh &&") || setup_run.trim() == "scripts/setup.sh",
        "setup.sh without flags, first: {setup_run}"
    );
    let makefile = read_repo_file("Makefile");
    assert!(
        makefile.contains("setup:\n\t@scripts/setup.sh\n"),
        "{makefile}"
    );
    assert!(makefile.contains("run: setup\n\t$(CARGO) build --release -p chingest\n"));
    assert!(
        setup_run.contains("cargo build --release --locked -p chingest"),
        "{setup_run}"
    );
    let readme = read_repo_file("README.md");
    assert!(
        readme.contains("`scripts/setup.sh`"),
        "README names the setup script"
    );
    let setup_doc = read_repo_file("docs/setup.md");
    assert!(setup_doc.contains("Both first run `scripts/setup.sh`"));

    // What setup.sh needs before it runs is in the image: npm for the engine,
    // its apt packages (it would install them itself; here in a cached layer).
    let apt = runs
        .iter()
        .find(|r| r.contains("apt-get install"))
        .expect("build stage apt-get install");
    assert!(setup.contains("command -v npm") && apt.contains(" npm "));
    let pkgs = setup
        .lines()
        .find_map(|l| l.strip_prefix("APT_PACKAGES=("))
        .and_then(|l| l.strip_suffix(')'))
        .expect("APT_PACKAGES=(...) in setup.sh");
    for p in pkgs.split_whitespace() {
        assert!(
            apt.split_whitespace().any(|w| w == p),
            "setup.sh installs {p}; the image's build stage does not"
        );
    }
    // The engine is copied out of setup.sh's cache layout.
    let cache = values(&build, "ENV")
        .into_iter()
        .find_map(|e| e.strip_prefix("CHINGEST_CACHE_DIR="))
        .expect("ENV CHINGEST_CACHE_DIR=");
    assert!(setup.contains("CACHE=${CHINGEST_CACHE_DIR:-"));
    assert!(setup.contains("ENGINE_DIR=$CACHE/engine/$ENGINE_VERSION"));
    assert!(setup_run.contains(&format!("cp {cache}/engine/*/libchdb.so ")));
    // The build context leaves the host's build output out.
    let ignore = read_repo_file("deploy/Dockerfile.dockerignore");
    assert!(ignore.lines().any(|l| l == "target/"), "{ignore}");

    // Runtime: non-root, data on a volume, health checked on /health at the
    // port the shipped config listens on.
    let runtime = stage(&all, None);
    let user = values(&runtime, "USER");
    assert!(
        user.len() == 1 && user[0] != "root" && user[0] != "0",
        "{user:?}"
    );
    let config = shipped_config();
    let listen = get(&config, "server", "listen").as_str().unwrap();
    let port = listen.rsplit(':').next().unwrap();
    assert_eq!(values(&runtime, "EXPOSE"), vec![port]);
    assert_eq!(
        values(&runtime, "VOLUME"),
        vec![get(&config, "storage", "data_dir").as_str().unwrap()]
    );
    let hc = healthcheck_command();
    assert!(
        hc.contains(&format!("http://127.0.0.1:{port}/health")),
        "{hc}"
    );
    assert!(
        values(&runtime, "RUN")
            .iter()
            .any(|r| r.contains("apt-get install") && r.contains(" curl ")),
        "the HEALTHCHECK's curl is installed in the runtime image"
    );
}

/// The shell command of the runtime stage's `HEALTHCHECK ... CMD <command>`.
fn healthcheck_command() -> String {
    let runtime = stage(&dockerfile(), None);
    let hc = values(&runtime, "HEALTHCHECK");
    assert_eq!(hc.len(), 1, "one HEALTHCHECK: {hc:?}");
    let (_, cmd) = hc[0].split_once("CMD ").expect("HEALTHCHECK ... CMD");
    assert!(!cmd.trim_start().starts_with('['), "shell form expected");
    cmd.trim().to_string()
}

#[test]
fn image_healthcheck_passes_on_a_live_server_and_fails_without_one() {
    if test_dep_or_skip(
        PathBuf::from("/usr/bin/curl"),
        "curl",
        "image_healthcheck_passes_on_a_live_server_and_fails_without_one",
    )
    .is_none()
    {
        return;
    }
    let cmd = healthcheck_command();
    let run = |addr: &str| {
        // Docker runs a shell-form CMD with /bin/sh -c.
        Command::new("/bin/sh")
            .arg("-c")
            .arg(cmd.replace("127.0.0.1:8086", addr))
            .output()
            .unwrap()
    };
    // A server that refuses writes once one point waits for the engine, and
    // flushes only after a minute: healthy until the first write.
    let dir = data_dir();
    let s = Spawn::new(dir.path())
        .env("CHINGEST_LIMITS__MAX_UNFLUSHED_POINTS", "1")
        .env("CHINGEST_FLUSH__MAX_AGE_MS", "60000")
        .start();
    let out = run(&s.addr.to_string());
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    s.query("CREATE DATABASE hc");
    assert_eq!(s.post("/write?db=hc", "m v=1 1\nm v=2 2\n").status(), 204);
    assert_eq!(s.get("/health").status(), 503);
    assert!(
        !run(&s.addr.to_string()).status.success(),
        "{cmd} passed while /health answered 503"
    );
    drop(s);
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let nobody = free.local_addr().unwrap().to_string();
    drop(free);
    assert!(
        !run(&nobody).status.success(),
        "{cmd} passed with no server"
    );
}

#[test]
fn time_spans_parse_like_systemd() {
    assert_eq!(seconds("120"), 120);
    assert_eq!(seconds("2m"), 120);
    assert_eq!(seconds("2min 30s"), 150);
    assert_eq!(seconds("1h"), 3600);
}

/// `deploy/cluster/`: every ingest node's config loads as the binary reads it, stores on
/// the ClickHouse cluster under a node name of its own (its retries are recognised by
/// it), and lists exactly the compose file's shard services, in the same order on every
/// node (a series' shard is `jumpConsistentHash(series_id, shards)`: two orders would
/// send one series to two shards); the password is not in the files.
#[test]
fn cluster_compose_nodes_share_one_shard_list_and_have_their_own_names() {
    let compose = read_repo_file("deploy/cluster/compose.yaml");
    let services: Vec<&str> = compose
        .lines()
        .skip_while(|l| *l != "services:")
        .skip(1)
        .take_while(|l| l.starts_with(' ') || l.is_empty())
        .filter_map(|l| l.strip_prefix("  ")?.strip_suffix(':'))
        .filter(|name| !name.starts_with(' '))
        .collect();
    let shards: Vec<String> = services
        .iter()
        .filter(|s| s.starts_with("ch-"))
        .map(|s| format!("http://{s}:8123"))
        .collect();
    let nodes: Vec<&str> = services
        .iter()
        .copied()
        .filter(|s| s.starts_with("ingest-"))
        .collect();
    assert!(shards.len() >= 2 && nodes.len() >= 2, "{services:?}");
    let mut names = std::collections::BTreeSet::new();
    for node in &nodes {
        let file = format!("deploy/cluster/{node}.toml");
        assert!(
            compose.contains(&format!("./{node}.toml:/etc/chingest/chingest.toml:ro")),
            "compose mounts {file} as {node}'s config"
        );
        let secret = read_repo_file(&file)
            .lines()
            .any(|l| l.trim_start().starts_with("password"));
        assert!(!secret, "{file}: a password in the file");
        let out = Command::new(env!("CARGO_BIN_EXE_chingest"))
            .args(["config", "--check"])
            .arg(repo_root().join(&file))
            .env_clear()
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{file} does not load: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let t: toml::Table = String::from_utf8(out.stdout).unwrap().parse().unwrap();
        assert_eq!(
            get(&t, "storage", "engine").as_str(),
            Some("clickhouse"),
            "{file}"
        );
        assert_eq!(
            get(&t, "storage", "data_dir").as_str(),
            Some("/var/lib/chingest")
        );
        let ch = get(&t, "storage", "clickhouse").as_table().unwrap();
        let listed: Vec<&str> = ch["shards"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s.as_str())
            .collect();
        assert_eq!(
            listed, shards,
            "{file}: shards vs the compose file's ch-N services"
        );
        let name = ch["node"].as_str().unwrap();
        assert_eq!(name, *node, "{file}: node name");
        // The Distributed tables' cluster: every shard mounts its definition, which lists
        // exactly the compose file's shards.
        assert_eq!(ch["distributed"].as_str(), Some("chingest"), "{file}");
        let cluster = read_repo_file("deploy/cluster/clickhouse-cluster.xml");
        let hosts: Vec<String> = cluster
            .split("<host>")
            .skip(1)
            .map(|h| format!("http://{}:8123", &h[..h.find('<').unwrap()]))
            .collect();
        assert_eq!(hosts, shards, "clickhouse-cluster.xml vs the ch-N services");
        assert!(cluster.contains("<chingest>"), "the cluster's name");
        assert_eq!(
            compose
                .matches("./clickhouse-cluster.xml:/etc/clickhouse-server/config.d/")
                .count(),
            shards.len(),
            "every shard mounts the cluster's definition"
        );
        assert!(
            names.insert(name.to_string()),
            "{file}: node name {name} taken"
        );
    }
}
