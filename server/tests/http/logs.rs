//! The server's log as operators get it: written to a file (as systemd's
//! journal, Docker's log driver or `> server.log` do) it has no colour escape
//! codes; `log.format = "json"` gives one JSON object per line; the access
//! line of a request carries the id the client sent in `Request-Id` or
//! `X-Request-Id` (or the one the server generated and answered with); on a
//! terminal the text is coloured.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::*;

/// Access lines are `debug` under `chingest::access`.
const WITH_ACCESS: &str = "info,chingest::access=debug";

/// Requests with ids sent both ways; returns the id the server generated for
/// a request that sent none.
fn requests_with_ids(s: &Server, prefix: &str) -> String {
    let r = s
        .client
        .get(s.url("/ping"))
        .header("Request-Id", format!("{prefix}-ping"))
        .send()
        .unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(r.headers()["request-id"], format!("{prefix}-ping").as_str());
    let r = s
        .client
        .post(s.url("/query"))
        .header("X-Request-Id", format!("{prefix}-query"))
        .form(&[("q", "CREATE DATABASE logs")])
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = s
        .client
        .post(s.url("/write?db=logs&u=someone&p=secret-in-query"))
        .header("Request-Id", format!("{prefix}-write"))
        .body("m,t=a v=1 1\n")
        .send()
        .unwrap();
    assert_eq!(r.status(), 204);
    let r = s.get("/no/such/route");
    assert_eq!(r.status(), 404);
    let generated = r.headers()["request-id"].to_str().unwrap().to_string();
    assert_eq!(generated.len(), 36, "{generated}");
    generated
}

fn assert_no_escape_codes(bytes: &[u8]) {
    if let Some(pos) = bytes.iter().position(|&b| b == 0x1b) {
        let text = String::from_utf8_lossy(bytes);
        let line = text[..pos].matches('\n').count();
        panic!(
            "ESC (0x1b) in the log file, line {}: {:?}\nwhole log:\n{text}",
            line + 1,
            text.lines().nth(line).unwrap_or("")
        );
    }
}

#[test]
fn text_log_to_a_file_has_no_escape_codes_and_carries_request_ids() {
    let dir = data_dir();
    let mut s = Spawn::new(dir.path()).env("RUST_LOG", WITH_ACCESS).start();
    let generated = requests_with_ids(&s, "rid-text");
    assert!(s.terminate().success());
    let bytes = std::fs::read(&s.log).unwrap();
    assert_no_escape_codes(&bytes);
    let text = String::from_utf8(bytes).unwrap();
    assert!(text.contains("listening"), "{text}");
    assert!(text.contains("shutdown complete"), "{text}");
    for (id, path, status) in [
        ("rid-text-ping", "/ping", 204),
        ("rid-text-query", "/query", 200),
        ("rid-text-write", "/write", 204),
        (generated.as_str(), "/no/such/route", 404),
    ] {
        let line = text
            .lines()
            .find(|l| l.contains(&format!("request_id={id}")))
            .unwrap_or_else(|| panic!("no line with request_id={id}:\n{text}"));
        assert!(
            line.contains(&format!("path={path}")) && line.contains(&format!("status={status}")),
            "{line}"
        );
    }
    // The query string (v1 credentials travel there) is never logged.
    assert!(!text.contains("secret-in-query"), "{text}");
}

#[test]
fn json_log_has_one_object_per_line_with_request_ids() {
    let dir = data_dir();
    let mut s = Spawn::new(dir.path())
        .env("RUST_LOG", WITH_ACCESS)
        .env("CHINGEST_LOG__FORMAT", "json")
        .start();
    let generated = requests_with_ids(&s, "rid-json");
    assert!(s.terminate().success());
    let bytes = std::fs::read(&s.log).unwrap();
    assert_no_escape_codes(&bytes);
    let text = String::from_utf8(bytes).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}"));
            assert!(
                v["timestamp"].is_string() && v["level"].is_string() && v["message"].is_string(),
                "{l}"
            );
            v
        })
        .collect();
    assert!(lines.iter().any(|v| v["message"] == "listening"), "{text}");
    for (id, path, status) in [
        ("rid-json-ping", "/ping", 204),
        ("rid-json-query", "/query", 200),
        ("rid-json-write", "/write", 204),
        (generated.as_str(), "/no/such/route", 404),
    ] {
        let line = lines
            .iter()
            .find(|v| v["span"]["request_id"] == id)
            .unwrap_or_else(|| panic!("no line with span.request_id = {id}:\n{text}"));
        assert_eq!(line["target"], "chingest::access", "{line}");
        assert_eq!(line["path"], path, "{line}");
        assert_eq!(line["status"], status, "{line}");
        assert_eq!(line["level"], "DEBUG", "{line}");
    }
}

/// The pid of `script`'s child (the server, which it `exec`s).
fn child_of(pid: u32) -> Option<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[test]
fn text_log_on_a_terminal_is_coloured() {
    let Some(script) = test_dep_or_skip(
        PathBuf::from("/usr/bin/script"),
        "script (util-linux)",
        "text_log_on_a_terminal_is_coloured",
    ) else {
        return;
    };
    let dir = data_dir();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out_path = dir.path().join("tty.log");
    // `script` runs the server on a pseudo-terminal and copies what it
    // writes there to its own stdout, a file here.
    let mut child = Command::new(script)
        .args(["-q", "-e", "-c"])
        .arg(format!("exec {} serve", env!("CARGO_BIN_EXE_chingest")))
        .arg("/dev/null")
        .env("CHINGEST_SERVER__LISTEN", format!("127.0.0.1:{port}"))
        .env("CHINGEST_STORAGE__DATA_DIR", dir.path().join("data"))
        .env("CHINGEST_FLUSH__CONNECTIONS", "1")
        .env("RUST_LOG", "info")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    let text = loop {
        let text = std::fs::read_to_string(&out_path).unwrap_or_default();
        if text.contains("listening") {
            break text;
        }
        if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            panic!("no `listening` on the terminal:\n{text}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let server = child_of(child.id()).expect("script's child");
    assert!(Command::new("kill")
        .arg("-TERM")
        .arg(server.to_string())
        .status()
        .unwrap()
        .success());
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the server under script ignored SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let line = text.lines().find(|l| l.contains("listening")).unwrap();
    assert!(line.contains("\x1b["), "no colour on a terminal: {line:?}");
}

#[test]
fn log_keys_are_printed_with_the_defaults_and_read_from_the_environment() {
    let out = Command::new(env!("CARGO_BIN_EXE_chingest"))
        .args(["config", "--print-default"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let printed = String::from_utf8(out.stdout).unwrap();
    let t: toml::Table = printed.parse().unwrap();
    assert_eq!(t["log"]["format"].as_str(), Some("text"), "{printed}");
    assert_eq!(t["log"]["color"].as_str(), Some("auto"), "{printed}");
    assert_eq!(t["server"]["log"].as_str(), Some("info"), "{printed}");
    let out = Command::new(env!("CARGO_BIN_EXE_chingest"))
        .args(["config", "--check"])
        .env("CHINGEST_LOG__FORMAT", "json")
        .env("CHINGEST_LOG__COLOR", "never")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t: toml::Table = String::from_utf8(out.stdout).unwrap().parse().unwrap();
    assert_eq!(t["log"]["format"].as_str(), Some("json"));
    assert_eq!(t["log"]["color"].as_str(), Some("never"));
    let bad = Command::new(env!("CARGO_BIN_EXE_chingest"))
        .args(["config", "--check"])
        .env("CHINGEST_LOG__FORMAT", "xml")
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("xml"));
}
