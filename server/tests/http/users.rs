//! Users and privileges through InfluxQL (issue #24 item 4): statement by statement against
//! a live InfluxDB 1.6.7 with auth on, then what InfluxDB cannot be compared on: durability
//! across a restart, enforcement on every endpoint at once, the first-admin race, config file
//! users, the guard on the last admin, passwords never written out.

use std::time::Duration;

use serde_json::{json, Value};

use crate::influxql_diff::{client, Influxd};
use crate::util::*;

const ROOT: (&str, &str) = ("root", "rootpw");
const WEIRD: &str = "we'ird\"na;me";

/// One step: who asks (`None`: no credentials), how (`q`: POST /query, `w`: POST /write of
/// `m v=1`, `g`: GET /query), the `db` parameter, the text.
type Step = (
    Option<(&'static str, &'static str)>,
    &'static str,
    &'static str,
    &'static str,
);

fn answer(http: &reqwest::blocking::Client, base: &str, step: &Step) -> (u16, Value) {
    let (who, how, db, text) = *step;
    let mut params = vec![];
    if !db.is_empty() {
        params.push(("db", db));
    }
    if let Some((u, p)) = who {
        params.extend([("u", u), ("p", p)]);
    }
    let req = match how {
        "w" => http
            .post(format!("{base}/write"))
            .query(&params)
            .body("m v=1"),
        "g" => {
            params.push(("q", text));
            http.get(format!("{base}/query")).query(&params)
        }
        _ => http
            .post(format!("{base}/query"))
            .query(&params)
            .form(&[("q", text)]),
    };
    let r = req.send().unwrap();
    let status = r.status().as_u16();
    let body = r.text().unwrap();
    let mut v = serde_json::from_str(&body).unwrap_or(Value::String(body));
    // InfluxDB lists grants in Go's map order (random): compare them sorted.
    if text.starts_with("SHOW GRANTS") || text.contains("; SHOW GRANTS") {
        for result in v["results"].as_array_mut().into_iter().flatten() {
            let values = result
                .get_mut("series")
                .and_then(|s| s.get_mut(0))
                .and_then(|s| s.get_mut("values"))
                .and_then(Value::as_array_mut);
            if let Some(values) = values {
                values.sort_by_key(|row| row.to_string());
            }
        }
    }
    (status, v)
}

#[test]
fn user_statements_answer_as_influxdb_does() {
    let Some(influxd) = Influxd::for_test_with("user_statements_answer_as_influxdb_does", true)
    else {
        return;
    };
    let dir = data_dir();
    let s = Spawn::new(dir.path())
        .env("CHINGEST_AUTH__ENABLED", "true")
        .start();
    let bob = Some(("bob", "bobpw"));
    let root = Some(ROOT);
    let steps: Vec<Step> = vec![
        // No user yet: only the first admin's creation.
        (None, "q", "", "SHOW DATABASES"),
        (None, "q", "", "CREATE USER bob WITH PASSWORD 'x'"),
        (Some(("x", "y")), "q", "", "SHOW USERS"),
        (
            None,
            "q",
            "",
            "CREATE USER root WITH PASSWORD 'rootpw' WITH ALL PRIVILEGES; SHOW USERS; CREATE DATABASE a",
        ),
        (None, "q", "", "SHOW USERS"),
        (Some(("root", "bad")), "q", "", "SHOW USERS"),
        (Some(("nobody", "rootpw")), "q", "", "SHOW USERS"),
        (root, "q", "", "SHOW USERS"),
        (root, "q", "", "CREATE USER root WITH PASSWORD 'other'"),
        (root, "q", "", "CREATE USER root WITH PASSWORD 'rootpw'"),
        (
            root,
            "q",
            "",
            "CREATE USER bob WITH PASSWORD 'bobpw'; CREATE USER bob WITH PASSWORD 'bobpw'",
        ),
        (root, "q", "", "CREATE USER bob WITH PASSWORD 'other'"),
        (root, "q", "", "CREATE USER bob WITH PASSWORD 'bobpw' WITH ALL PRIVILEGES"),
        (root, "q", "", "CREATE USER \"\" WITH PASSWORD 'x'"),
        (root, "q", "", "CREATE USER eve WITH PASSWORD ''"),
        (
            root,
            "q",
            "",
            "CREATE USER \"we'ird\\\"na;me\" WITH PASSWORD 'p\\'w;x'",
        ),
        (Some((WEIRD, "p'w;x")), "q", "", "SHOW DATABASES"),
        (root, "q", "", "GRANT READ ON b TO bob"),
        (root, "q", "", "GRANT ALL ON a TO nobody"),
        (root, "q", "", "GRANT ALL PRIVILEGES TO nobody"),
        (root, "q", "", "REVOKE READ ON zz FROM bob"),
        (root, "q", "", "REVOKE ALL PRIVILEGES FROM nobody"),
        (root, "q", "", "SET PASSWORD FOR nobody = 'x'"),
        (root, "q", "", "DROP USER nobody"),
        (root, "q", "", "SHOW GRANTS FOR nobody"),
        (root, "q", "", "SHOW GRANTS FOR root"),
        (
            root,
            "q",
            "",
            "CREATE DATABASE b; GRANT READ ON a TO bob; GRANT WRITE ON b TO bob; SHOW GRANTS FOR bob",
        ),
        (bob, "q", "", "SHOW USERS"),
        (bob, "q", "", "SHOW GRANTS FOR bob"),
        (bob, "q", "", "SET PASSWORD FOR bob = 'x'"),
        (bob, "q", "", "CREATE USER z WITH PASSWORD 'x' WITH ALL PRIVILEGES"),
        (bob, "q", "", "GRANT ALL PRIVILEGES TO bob"),
        (bob, "q", "", "SHOW DATABASES"),
        (bob, "q", "a", "SELECT * FROM m"),
        (bob, "q", "b", "SELECT * FROM m"),
        (bob, "w", "b", ""),
        (bob, "w", "a", ""),
        (root, "q", "", "REVOKE READ ON a FROM bob; SHOW GRANTS FOR bob"),
        (bob, "q", "a", "SELECT * FROM m"),
        (root, "q", "", "GRANT ALL ON a TO bob; REVOKE WRITE ON a FROM bob"),
        (root, "q", "", "SHOW GRANTS FOR bob"),
        (root, "q", "", "REVOKE ALL PRIVILEGES ON b FROM bob; SHOW GRANTS FOR bob"),
        (bob, "w", "b", ""),
        (root, "q", "", "GRANT ALL PRIVILEGES TO bob; SHOW USERS"),
        (bob, "q", "", "SHOW USERS"),
        (bob, "w", "b", ""),
        (root, "q", "", "REVOKE ALL PRIVILEGES FROM bob; SHOW USERS"),
        (root, "q", "", "SET PASSWORD FOR bob = 'new'"),
        (bob, "q", "", "SHOW DATABASES"),
        (Some(("bob", "new")), "q", "", "SHOW DATABASES"),
        (root, "q", "", "DROP DATABASE a; SHOW GRANTS FOR bob"),
        (root, "q", "", "CREATE DATABASE a; SHOW GRANTS FOR bob"),
        (root, "q", "", "DROP USER eve; DROP USER eve"),
        (Some(("eve", "")), "q", "", "SHOW DATABASES"),
        (root, "q", "", "SHOW USERS"),
        // Parse errors (the users stay as they are).
        (root, "q", "", "GRANT READ TO bob"),
        (root, "q", "", "CREATE USER x WITH PASSWORD 'x' WITH ALL"),
        (root, "q", "", "SET PASSWORD FOR bob 'x'"),
        (root, "g", "", "SHOW USERS"),
        (root, "g", "", "SHOW GRANTS FOR bob"),
    ];
    let http = client();
    let mut differ = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let want = answer(&http, &influxd.base, step);
        let got = answer(&http, &s.base, step);
        if want != got {
            differ.push(format!(
                "step {i} {step:?}\n  influxd:  {want:?}\n  chingest: {got:?}"
            ));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// Answers `q` as `who` on POST /query.
fn query_as(s: &Server, who: (&str, &str), db: &str, q: &str) -> (u16, Value) {
    let r = s
        .client
        .post(s.url("/query"))
        .basic_auth(who.0, Some(who.1))
        .query(&[("db", db)])
        .form(&[("q", q)])
        .send()
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().unwrap_or(Value::Null))
}

fn ok(s: &Server, who: (&str, &str), q: &str) {
    let (status, v) = query_as(s, who, "", q);
    assert_eq!(status, 200, "{q}: {v}");
    for r in v["results"].as_array().unwrap() {
        assert!(r.get("error").is_none(), "{q}: {v}");
    }
}

fn statement_error(s: &Server, who: (&str, &str), q: &str) -> String {
    let (status, v) = query_as(s, who, "", q);
    assert_eq!(status, 200, "{q}: {v}");
    v["results"][0]["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{q}: no error in {v}"))
        .to_string()
}

fn sql_as(s: &Server, who: (&str, &str), sql: &str) -> (u16, String) {
    let r = s
        .client
        .post(s.url("/api/v1/sql?format=jsoneachrow"))
        .basic_auth(who.0, Some(who.1))
        .body(sql.to_string())
        .send()
        .unwrap();
    (r.status().as_u16(), r.text().unwrap())
}

fn write_as(s: &Server, who: (&str, &str), db: &str) -> u16 {
    s.client
        .post(s.url(&format!("/write?db={db}")))
        .basic_auth(who.0, Some(who.1))
        .body("m v=1")
        .send()
        .unwrap()
        .status()
        .as_u16()
}

#[test]
fn users_are_durable_enforced_at_once_and_never_left_without_an_admin() {
    let dir = data_dir();
    let start = || {
        Spawn::new(dir.path())
            .env("CHINGEST_AUTH__ENABLED", "true")
            .start()
    };
    let mut s = start();

    // No user: everything but /ping, /health and creating the first admin is refused.
    assert_eq!(s.get("/ping").status(), 204);
    let r = s.post("/write?db=a", "m v=1");
    assert_eq!(r.status(), 403);
    assert_eq!(
        r.json::<Value>().unwrap(),
        json!({"error": "create admin user first or disable authentication"})
    );
    assert_eq!(s.post("/api/v1/sql", "SELECT 1").status(), 403);

    // Two racing first admins: exactly one is created.
    let racers: Vec<_> = ["first", "second"]
        .into_iter()
        .map(|name| {
            let (url, client) = (s.url("/query"), s.client.clone());
            std::thread::spawn(move || {
                let q = format!("CREATE USER {name} WITH PASSWORD 'pw' WITH ALL PRIVILEGES");
                let r = client.post(url).form(&[("q", q)]).send().unwrap();
                r.text().unwrap()
            })
        })
        .collect();
    let answers: Vec<String> = racers.into_iter().map(|t| t.join().unwrap()).collect();
    let created: Vec<&str> = ["first", "second"]
        .into_iter()
        .filter(|name| query_as(&s, (name, "pw"), "", "SHOW USERS").0 == 200)
        .collect();
    assert_eq!(created.len(), 1, "one first admin: {answers:?}");
    let admin = (created[0], "pw");
    ok(
        &s,
        admin,
        "CREATE USER root WITH PASSWORD 'rootpw' WITH ALL PRIVILEGES",
    );
    ok(&s, admin, &format!("DROP USER {}", admin.0));
    // The dropped admin's cached credentials stop working at once.
    assert_eq!(query_as(&s, admin, "", "SHOW USERS").0, 401);

    ok(
        &s,
        ROOT,
        "CREATE DATABASE a; CREATE DATABASE b; CREATE USER bob WITH PASSWORD 'bobpw'; \
         GRANT READ ON a TO bob; GRANT WRITE ON b TO bob",
    );
    let bob = ("bob", "bobpw");
    assert_eq!(write_as(&s, ROOT, "a"), 204);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while sql_as(&s, ROOT, "SELECT count() AS n FROM a.m").1.trim() != "{\"n\":1}" {
        assert!(
            std::time::Instant::now() < deadline,
            "the point never reached the table: {:?}",
            sql_as(&s, ROOT, "SELECT count() AS n FROM a.m")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Every endpoint follows the grants: /write, /api/v2/write, /query, /api/v1/sql.
    assert_eq!(write_as(&s, bob, "b"), 204);
    assert_eq!(write_as(&s, bob, "a"), 403);
    let v2 = s
        .client
        .post(s.url("/api/v2/write?bucket=b"))
        .header("Authorization", "Token bob:bobpw")
        .body("m v=2")
        .send()
        .unwrap();
    assert_eq!(v2.status(), 204);
    assert_eq!(query_as(&s, bob, "a", "SELECT count(v) FROM m").0, 200);
    assert_eq!(query_as(&s, bob, "b", "SELECT count(v) FROM m").0, 403);
    // Raw SQL: the engine's roles are fixed when it boots, so a read scope granted since
    // has none and /api/v1/sql fails closed until a restart (checked again after it).
    let (status, text) = sql_as(&s, bob, "SELECT count() AS n FROM a.m");
    assert_eq!(status, 403, "{text}");
    assert!(text.contains("restart"), "{text}");

    // A revoke applies to the next request, on every endpoint.
    ok(&s, ROOT, "REVOKE READ ON a FROM bob");
    assert_eq!(query_as(&s, bob, "a", "SELECT count(v) FROM m").0, 403);
    assert_ne!(sql_as(&s, bob, "SELECT count() FROM a.m").0, 200);
    ok(&s, ROOT, "GRANT ALL ON b TO bob");
    // A new password: the old one (verified and cached a moment ago) stops at once.
    ok(&s, ROOT, "SET PASSWORD FOR bob = 'newpw'");
    assert_eq!(write_as(&s, bob, "b"), 401);
    let bob = ("bob", "newpw");
    assert_eq!(write_as(&s, bob, "b"), 204);

    // A GET changes no user (InfluxDB 1.x would run these, with a warning).
    let get = s
        .client
        .get(s.url("/query"))
        .basic_auth(ROOT.0, Some(ROOT.1))
        .query(&[(
            "q",
            "CREATE USER eve WITH PASSWORD 'evepw' WITH ALL PRIVILEGES",
        )])
        .send()
        .unwrap();
    assert_eq!(get.status(), 405);
    assert!(get
        .text()
        .unwrap()
        .contains("CREATE USER eve WITH PASSWORD [REDACTED]"));

    // The last admin cannot go while other users are left.
    let last = statement_error(&s, ROOT, "DROP USER root");
    assert_eq!(
        last,
        "\"root\" is the last admin user: make another user admin first"
    );
    assert_eq!(
        statement_error(&s, ROOT, "REVOKE ALL PRIVILEGES FROM root"),
        last
    );
    ok(
        &s,
        ROOT,
        "GRANT ALL PRIVILEGES TO bob; REVOKE ALL PRIVILEGES FROM root",
    );
    assert_eq!(query_as(&s, ROOT, "", "SHOW USERS").0, 403);
    ok(
        &s,
        bob,
        "GRANT ALL PRIVILEGES TO root; REVOKE ALL PRIVILEGES FROM bob",
    );

    // Durable: after a kill -9 the users, passwords and grants are as they were.
    s.signal("KILL");
    let _ = s.terminate_wait();
    let first_log = s.log_text();
    let s = start();
    let (status, v) = query_as(&s, ROOT, "", "SHOW USERS; SHOW GRANTS FOR bob");
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        v["results"][0]["series"][0]["values"],
        json!([["root", true], ["bob", false]])
    );
    assert_eq!(
        v["results"][1]["series"][0]["values"],
        json!([["a", "NO PRIVILEGES"], ["b", "ALL PRIVILEGES"]])
    );
    assert_eq!(write_as(&s, ("bob", "bobpw"), "b"), 401);
    assert_eq!(write_as(&s, bob, "b"), 204);
    // The engine booted with bob's read scope: raw SQL follows the grants now.
    let (status, text) = sql_as(&s, bob, "SELECT count() > 0 AS any FROM b.m");
    assert_eq!((status, text.trim()), (200, "{\"any\":1}"));
    assert_ne!(sql_as(&s, bob, "SELECT count() FROM a.m").0, 200);

    // The users file holds bcrypt hashes only, readable by its owner only; no password
    // reached the log.
    let file = dir.path().join("data/users.json");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("$2b$10$"), "{text}");
    for secret in ["rootpw", "bobpw", "newpw", "evepw"] {
        assert!(!text.contains(secret), "{secret} in users.json");
        assert!(!first_log.contains(secret), "{secret} in the log");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "users.json mode {mode:o}");
    }

    // A credential check of a wrong password costs bcrypt's time; a right one, cached, not.
    let t = std::time::Instant::now();
    for _ in 0..20 {
        assert_eq!(write_as(&s, bob, "b"), 204);
    }
    let cached = t.elapsed() / 20;
    assert!(cached < Duration::from_secs(2), "{cached:?}");
}

#[test]
fn config_file_users_sit_beside_influxql_users_unchanged() {
    let dir = data_dir();
    let config = format!(
        "[auth]\nenabled = true\n\n[[auth.users]]\nname = \"cfg\"\npassword_hash = \"{}\"\nadmin = true\n\n\
         [[auth.users]]\nname = \"reader\"\npassword_hash = \"{}\"\nread = [\"a\"]\nwrite = [\"a\", \"b\"]\n",
        hash("cfgpw"),
        hash("readerpw")
    );
    let s = Spawn::new(dir.path()).config(&config).start();
    let cfg = ("cfg", "cfgpw");
    // Config users exist: no first-admin mode.
    assert_eq!(s.post("/query?q=SHOW+USERS", "").status(), 401);
    ok(
        &s,
        cfg,
        "CREATE USER ql WITH PASSWORD 'qlpw'; CREATE DATABASE a",
    );
    let (_, v) = query_as(&s, cfg, "", "SHOW USERS; SHOW GRANTS FOR reader");
    assert_eq!(
        v["results"][0]["series"][0]["values"],
        json!([["cfg", true], ["reader", false], ["ql", false]])
    );
    assert_eq!(
        v["results"][1]["series"][0]["values"],
        json!([["a", "ALL PRIVILEGES"], ["b", "WRITE"]])
    );
    assert_eq!(
        statement_error(&s, cfg, "CREATE USER reader WITH PASSWORD 'x'"),
        "user already exists"
    );
    let from_config =
        "user \"reader\" is defined in the configuration file ([[auth.users]]): change it there";
    for q in [
        "DROP USER reader",
        "SET PASSWORD FOR reader = 'x'",
        "GRANT READ ON a TO reader",
        "GRANT ALL PRIVILEGES TO reader",
    ] {
        assert_eq!(statement_error(&s, cfg, q), from_config, "{q}");
    }
    // The InfluxQL user can be made admin and act as one; the config admin stays the
    // guarantee that an admin is left.
    ok(&s, cfg, "GRANT ALL PRIVILEGES TO ql");
    ok(
        &s,
        ("ql", "qlpw"),
        "REVOKE ALL PRIVILEGES FROM ql; DROP USER ql",
    );
    let (_, v) = query_as(&s, cfg, "", "SHOW USERS");
    assert_eq!(
        v["results"][0]["series"][0]["values"],
        json!([["cfg", true], ["reader", false]])
    );
}
