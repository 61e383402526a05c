//! The command line: help, the default config, and `serve` with no config.

use std::process::Command;
use std::time::{Duration, Instant};

fn chingest() -> Command {
    Command::new(env!("CARGO_BIN_EXE_chingest"))
}

#[test]
fn help_and_print_default() {
    let out = chingest().arg("--help").output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(
        help.contains("serve") && help.contains("CHINGEST_"),
        "{help}"
    );
    let out = chingest()
        .args(["config", "--print-default"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for key in [
        "listen = \"127.0.0.1:8086\"",
        "data_dir = \"data\"",
        "durability = \"fsync\"",
        "connections = 0",
        "max_points_per_batch = 200000",
        "max_age_ms = 1000",
        "auto_create_databases = false",
        "[auth]",
        "enabled = false",
    ] {
        assert!(text.contains(key), "{key} missing:\n{text}");
    }
    let bad = chingest()
        .args(["serve"])
        .env("CHINGEST_SERVER__LISTEN", "nope")
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("server.listen"));
}

/// `chingest serve` with no config: 127.0.0.1:8086, data under ./data.
#[test]
fn serve_defaults_listen_on_8086_with_data_under_cwd() {
    if std::net::TcpListener::bind("127.0.0.1:8086").is_err() {
        eprintln!("SKIPPED serve_defaults_listen_on_8086_with_data_under_cwd: 127.0.0.1:8086 is in use on this machine");
        return;
    }
    let dir = crate::util::data_dir();
    let mut cmd = chingest();
    cmd.arg("serve")
        .current_dir(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    for (k, _) in std::env::vars() {
        if k.starts_with("CHINGEST_") {
            cmd.env_remove(k);
        }
    }
    let mut child = cmd.spawn().unwrap();
    let client = reqwest::blocking::Client::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut ok = false;
    while Instant::now() < deadline {
        if let Ok(r) = client.get("http://127.0.0.1:8086/ping").send() {
            ok = r.status() == 204;
            break;
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let status = child.wait().unwrap();
    assert!(ok, "no 204 from /ping on 127.0.0.1:8086");
    assert!(status.success(), "graceful exit: {status:?}");
    assert!(dir.path().join("data/wal").is_dir() && dir.path().join("data/chdb").is_dir());
}
