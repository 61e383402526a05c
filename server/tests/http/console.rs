//! Issue #45: the web console at `/`. Its files are served without credentials, with a
//! strict Content-Security-Policy and the right types and caching, while the data
//! endpoints keep requiring credentials; and in a real browser (Debian's Chromium,
//! headless, driven by Selenium: `tests/python/test_console.py`) against a real server,
//! it runs InfluxQL and SQL, draws charts, shows the engine's errors, browses the
//! schema, writes an uploaded file with a bad line, watches the server, and with auth on
//! shows a user only the databases it may read.
//!
//! `CHINGEST_CONSOLE_SCREENSHOTS=<dir>` has the browser tests save a PNG of each view
//! there (docs/console.md shows them); `CHINGEST_CONSOLE_REPORT=<file>` has them write
//! the page weight and the time to the first result as JSON.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::util::*;

/// Python from the test venv with Selenium, Chromium and chromedriver, or `None` (with
/// `CHINGEST_SKIP_MISSING_TEST_DEPS=1`; otherwise a missing one fails the test).
fn browser(test: &str) -> Option<(PathBuf, PathBuf, PathBuf)> {
    let python = test_dep_or_skip(
        cache_dir().join("venv/bin/python"),
        "Python venv (scripts/setup.sh --test-deps)",
        test,
    )?;
    let site = Command::new(&python)
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ])
        .output()
        .expect("run the venv's python");
    let site = PathBuf::from(String::from_utf8_lossy(&site.stdout).trim());
    test_dep_or_skip(site.join("selenium"), "Selenium in the test venv", test)?;
    let chromium = test_dep_or_skip(
        PathBuf::from("/usr/bin/chromium"),
        "Chromium (Debian package chromium)",
        test,
    )?;
    let driver = test_dep_or_skip(
        PathBuf::from("/usr/bin/chromedriver"),
        "chromedriver (Debian package chromium-driver)",
        test,
    )?;
    Some((python, chromium, driver))
}

/// Runs the browser test class `class` against `s`; panics with its output on failure.
fn run_browser_tests(
    deps: &(PathBuf, PathBuf, PathBuf),
    s: &Server,
    class: &str,
    env: &[(&str, &str)],
    tests: usize,
) {
    let (python, chromium, driver) = deps;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/test_console.py");
    let profile = data_dir();
    let mut cmd = Command::new(python);
    cmd.arg(&script)
        .arg("-v")
        .arg(class)
        .env("CHINGEST_URL", &s.base)
        .env("CHROMIUM", chromium)
        .env("CHROMEDRIVER", driver)
        .env("CHROMIUM_PROFILE", profile.path())
        // Selenium must not look for drivers on the network.
        .env("SE_OFFLINE", "true")
        .env("TZ", "UTC");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run the browser tests");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "browser tests {class} failed:\n{stderr}\n{}\nserver log:\n{}",
        String::from_utf8_lossy(&out.stdout),
        s.log_text()
    );
    assert!(
        stderr.contains(&format!("Ran {tests} tests")),
        "expected {tests} browser tests in {class}:\n{stderr}"
    );
    eprintln!("{stderr}");
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// `cpu` in `db`: hosts a and b, 30 points each a minute apart ending now, a field of
/// each type (usage float: a's is 1.5·i, b's 100 + i; n integer; state string; up
/// boolean), and `mem` with one point.
fn write_fixture(s: &Server, db: &str, auth: Option<(&str, &str)>) {
    let t0 = now_s() - 30 * 60;
    let mut body = String::new();
    for i in 0..30u64 {
        let t = t0 + i * 60;
        let (a, b) = (1.5 * i as f64, 100 + i);
        body.push_str(&format!(
            "cpu,host=a usage={a},n={i}i,state=\"ok\",up=true {t}\n\
             cpu,host=b usage={b},n={i}i,state=\"busy\",up=false {t}\n"
        ));
    }
    body.push_str(&format!("mem,host=a used=42i {t0}\n"));
    let req = |path: &str| {
        let r = s.client.post(s.url(path));
        match auth {
            Some((u, p)) => r.basic_auth(u, Some(p)),
            None => r,
        }
    };
    let r = req("/query")
        .form(&[("q", format!("CREATE DATABASE {db}"))])
        .send()
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().unwrap());
    let r = req(&format!("/write?db={db}&precision=s"))
        .body(body)
        .send()
        .unwrap();
    assert_eq!(r.status(), 204, "{}", r.text().unwrap());
}

fn screenshots_and_report() -> Vec<(&'static str, String)> {
    ["CHINGEST_CONSOLE_SCREENSHOTS", "CHINGEST_CONSOLE_REPORT"]
        .into_iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| (k, v)))
        .collect()
}

#[test]
fn console_files_need_no_credentials_and_carry_a_strict_policy() {
    let dir = data_dir();
    let config = format!(
        "[auth]\nenabled = true\n[[auth.users]]\nname = \"root\"\npassword_hash = \"{}\"\nadmin = true\n",
        hash("rootpw")
    );
    let s = Spawn::new(dir.path()).config(&config).start();
    let page = s.get("/");
    assert_eq!(page.status(), 200, "the page needs no credentials");
    let h = page.headers().clone();
    assert_eq!(h["content-type"], "text/html; charset=utf-8");
    assert_eq!(h["cache-control"], "no-cache");
    let csp = h["content-security-policy"].to_str().unwrap().to_string();
    for d in [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(d), "{csp}");
    }
    assert!(!csp.contains("unsafe"), "{csp}");
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["x-frame-options"], "DENY");
    let etag = h["etag"].to_str().unwrap().to_string();
    let html = page.text().unwrap();
    assert!(
        !html.contains("<style") && !html.contains(" style="),
        "inline style"
    );
    assert!(!html.contains("http://") && !html.contains("https://"));
    // Every script, stylesheet and icon the page names: served, typed, cached for good.
    let files: Vec<String> = html
        .split("\"/console/")
        .skip(1)
        .map(|rest| format!("/console/{}", &rest[..rest.find('"').unwrap()]))
        .collect();
    assert!(files.len() >= 5, "{files:?}");
    let mut scripts = 0;
    for f in &files {
        let r = s
            .client
            .get(s.url(f))
            .header("accept-encoding", "gzip")
            .send()
            .unwrap();
        assert_eq!(r.status(), 200, "{f}");
        let ty = r.headers()["content-type"].to_str().unwrap().to_string();
        let want = match Path::new(f).extension().and_then(|e| e.to_str()) {
            Some("js") => "text/javascript; charset=utf-8",
            Some("css") => "text/css; charset=utf-8",
            Some("svg") => "image/svg+xml",
            Some("txt") => "text/plain; charset=utf-8",
            other => panic!("unexpected file type {other:?}: {f}"),
        };
        assert_eq!(ty, want, "{f}");
        scripts += usize::from(want.starts_with("text/javascript"));
        assert_eq!(
            r.headers()["cache-control"],
            "public, max-age=31536000, immutable",
            "{f}"
        );
        assert!(r.headers().contains_key("content-security-policy"), "{f}");
        assert!(!r.bytes().unwrap().is_empty(), "{f}");
    }
    assert_eq!(scripts, 2, "uPlot and the entry module: {files:?}");
    // Compressed when asked (reqwest here does not decompress).
    let app = files.iter().find(|f| f.ends_with("/app.js")).unwrap();
    let version = app.split('/').nth(2).unwrap().to_string();
    let gz = s
        .client
        .get(s.url(&format!("/console/{version}/uPlot.iife.min.js")))
        .header("accept-encoding", "gzip")
        .send()
        .unwrap();
    assert_eq!(gz.headers()["content-encoding"], "gzip");
    assert_eq!(gz.headers()["vary"], "Accept-Encoding");
    let plain = s
        .get(&format!("/console/{version}/uPlot.iife.min.js"))
        .bytes()
        .unwrap();
    assert!(gz.bytes().unwrap().len() < plain.len() / 2);
    // Revalidation, HEAD, another build's version, an unknown file.
    let again = s
        .client
        .get(s.url("/"))
        .header("if-none-match", &etag)
        .send()
        .unwrap();
    assert_eq!(again.status(), 304);
    let head = s.client.head(s.url("/")).send().unwrap();
    assert_eq!(head.status(), 200);
    assert_eq!(s.get("/console/0000000000000000/app.js").status(), 404);
    assert_eq!(s.get(&format!("/console/{version}/nope.js")).status(), 404);
    // The data endpoints still want credentials.
    assert_eq!(s.get("/query?q=SHOW+DATABASES").status(), 401);
    assert_eq!(s.post("/api/v1/sql", "SELECT 1".to_string()).status(), 401);
    assert_eq!(s.post("/write?db=x", "m v=1".to_string()).status(), 401);
    assert_eq!(s.get("/nothing-here").status(), 401);
    let r = s
        .client
        .get(s.url("/query?q=SHOW+DATABASES"))
        .basic_auth("root", Some("rootpw"))
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
}

/// `[server] console = false`: no page and no files, with and without authentication;
/// the data endpoints answer as before.
#[test]
fn console_can_be_turned_off() {
    let version = {
        let dir = data_dir();
        let s = Spawn::new(dir.path()).start();
        let html = s.get("/").text().unwrap();
        let at = html.find("\"/console/").expect("the page names its files") + 10;
        html[at..at + html[at..].find('/').unwrap()].to_string()
    };
    let dir = data_dir();
    let s = Spawn::new(dir.path())
        .config("[server]\nconsole = false\n")
        .start();
    assert_eq!(s.get("/").status(), 404);
    assert_eq!(s.get(&format!("/console/{version}/app.js")).status(), 404);
    assert_eq!(s.get("/ping").status(), 204);
    assert_eq!(s.get("/query?q=SHOW+DATABASES").status(), 200);
    let dir = data_dir();
    let config = format!(
        "[server]\nconsole = false\n[auth]\nenabled = true\n[[auth.users]]\nname = \"root\"\npassword_hash = \"{}\"\nadmin = true\n",
        hash("rootpw")
    );
    let s = Spawn::new(dir.path()).config(&config).start();
    assert_eq!(s.get("/").status(), 401, "off, / is any unknown path");
    assert_eq!(s.get(&format!("/console/{version}/app.js")).status(), 401);
    let r = s
        .client
        .get(s.url("/"))
        .basic_auth("root", Some("rootpw"))
        .send()
        .unwrap();
    assert_eq!(r.status(), 404);
}

#[test]
fn console_in_chromium_queries_charts_browses_watches_and_writes() {
    let test = "console_in_chromium_queries_charts_browses_watches_and_writes";
    let Some(deps) = browser(test) else {
        return;
    };
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    write_fixture(&s, "console", None);
    // SQL reads what the engine holds: wait for the flush.
    s.sql_until("SELECT * FROM console.cpu", 60);
    let extra = screenshots_and_report();
    let env: Vec<(&str, &str)> = extra.iter().map(|(k, v)| (*k, v.as_str())).collect();
    run_browser_tests(&deps, &s, "OpenConsole", &env, 10);
}

#[test]
fn console_in_chromium_shows_a_user_only_its_own_databases() {
    let test = "console_in_chromium_shows_a_user_only_its_own_databases";
    let Some(deps) = browser(test) else {
        return;
    };
    let dir = data_dir();
    let config = format!(
        "[auth]\nenabled = true\n\
         [[auth.users]]\nname = \"root\"\npassword_hash = \"{}\"\nadmin = true\n\
         [[auth.users]]\nname = \"reader\"\npassword_hash = \"{}\"\nread = [\"alpha\"]\nwrite = [\"alpha\", \"gamma\", \"delta\"]\n",
        hash("rootpw"),
        hash("readerpw")
    );
    let s = Spawn::new(dir.path()).config(&config).start();
    write_fixture(&s, "alpha", Some(("root", "rootpw")));
    write_fixture(&s, "beta", Some(("root", "rootpw")));
    // Write-only for the user: listed (SHOW DATABASES lists what it may read or write).
    let r = s
        .client
        .post(s.url("/query"))
        .basic_auth("root", Some("rootpw"))
        .form(&[("q", "CREATE DATABASE gamma")])
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    let mut env = vec![
        ("CHINGEST_ADMIN", "root"),
        ("CHINGEST_ADMIN_PASSWORD", "rootpw"),
        ("CHINGEST_USER", "reader"),
        ("CHINGEST_PASSWORD", "readerpw"),
    ];
    let extra = screenshots_and_report();
    env.extend(extra.iter().map(|(k, v)| (*k, v.as_str())));
    run_browser_tests(&deps, &s, "ConsoleWithAuth", &env, 4);
}
