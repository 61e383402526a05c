//! Auth on: credentials in every v1/v2 form, 401/403 shapes, exempt endpoints.

use serde_json::{json, Value};

use crate::util::*;

#[test]
fn auth_enabled_end_to_end() {
    let dir = data_dir();
    let config = format!(
        r#"
[auth]
enabled = true
metrics_require_auth = true

[[auth.users]]
name = "admin"
password_hash = "{}"
admin = true

[[auth.users]]
name = "writer"
password_hash = "{}"
token_hashes = ["{}"]
read = ["a"]
write = ["a"]
"#,
        hash("adminpw"),
        hash("writerpw"),
        hash("writer-token")
    );
    let s = Spawn::new(dir.path()).config(&config).start();

    // Exempt endpoints.
    assert_eq!(s.get("/ping").status(), 204);
    assert_eq!(s.get("/health").status(), 200);
    assert_eq!(
        s.get("/metrics").status(),
        401,
        "metrics_require_auth = true"
    );
    assert_eq!(s.get("/metrics?u=admin&p=adminpw").status(), 200);

    // Missing and wrong credentials, v1 and v2 shapes.
    let r = s.get("/query?q=SHOW+DATABASES");
    assert_eq!(r.status(), 401);
    assert_eq!(
        r.json::<Value>().unwrap(),
        json!({"error": "unable to parse authentication credentials"})
    );
    let r = s.get("/query?q=SHOW+DATABASES&u=admin&p=nope");
    assert_eq!(r.status(), 401);
    assert_eq!(
        r.json::<Value>().unwrap(),
        json!({"error": "authorization failed"})
    );
    let r = s
        .client
        .post(s.url("/api/v2/write?bucket=a"))
        .header("Authorization", "Token bad")
        .body("m v=1")
        .send()
        .unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(
        r.json::<Value>().unwrap(),
        json!({"code": "unauthorized", "message": "authorization failed"})
    );

    // Admin creates databases (query params); the writer cannot.
    let r = s.post(
        "/query?q=CREATE+DATABASE+a%3BCREATE+DATABASE+b&u=admin&p=adminpw",
        "",
    );
    assert_eq!(
        r.json::<Value>().unwrap(),
        json!({"results": [{"statement_id": 0}, {"statement_id": 1}]})
    );
    // A query is authorized whole before any of it runs: 403 with
    // InfluxDB's text (each expected answer below is what influxd 1.6.7
    // answered a user with READ on `a` only, auth-enabled, 2026-11-24).
    let forbidden = |q: &str, db: Option<&str>| {
        let mut form = vec![("q", q)];
        form.extend(db.map(|d| ("db", d)));
        let r = s
            .client
            .post(s.url("/query"))
            .basic_auth("writer", Some("writerpw"))
            .form(&form)
            .send()
            .unwrap();
        assert_eq!(r.status(), 403, "{q}");
        r.json::<Value>().unwrap()["error"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let refused = |statement: &str, requires: &str| {
        format!(
            "error authorizing query: writer not authorized to execute statement '{statement}', requires {requires}"
        )
    };
    for (q, db, statement, requires) in [
        (
            "CREATE DATABASE c",
            None,
            "CREATE DATABASE c",
            "admin privilege",
        ),
        (
            "DROP DATABASE a",
            None,
            "DROP DATABASE a",
            "admin privilege",
        ),
        (
            "SHOW DIAGNOSTICS",
            None,
            "SHOW DIAGNOSTICS",
            "admin privilege",
        ),
        (
            "SELECT * FROM cpu",
            Some("b"),
            "SELECT * FROM cpu",
            "READ on b",
        ),
        ("SELECT * FROM cpu", None, "SELECT * FROM cpu", "READ on "),
        (
            "SELECT * FROM cpu; SELECT * FROM b..cpu",
            Some("a"),
            "SELECT * FROM b..cpu",
            "READ on b",
        ),
        (
            "SELECT mean(x) FROM (SELECT * FROM b..cpu)",
            Some("a"),
            "SELECT mean(x) FROM (SELECT * FROM b..cpu)",
            "READ on b",
        ),
        (
            "SHOW MEASUREMENTS ON b",
            None,
            "SHOW MEASUREMENTS ON b",
            "READ on b",
        ),
        ("SHOW TAG KEYS", Some("b"), "SHOW TAG KEYS", "READ on b"),
        (
            "SHOW RETENTION POLICIES ON b",
            None,
            "SHOW RETENTION POLICIES ON b",
            "READ on b",
        ),
        (
            "SHOW SERIES ON b WHERE host = 'x'",
            None,
            "SHOW SERIES ON b WHERE host = 'x'",
            "READ on b",
        ),
    ] {
        assert_eq!(forbidden(q, db), refused(statement, requires), "{q}");
    }
    // A refused query runs none of its statements (`d` is not created).
    let r = s
        .client
        .post(s.url("/query"))
        .basic_auth("writer", Some("writerpw"))
        .form(&[("q", "SHOW DATABASES; CREATE DATABASE d")])
        .send()
        .unwrap();
    assert_eq!(r.status(), 403);
    let r: Value = s
        .client
        .post(s.url("/query?q=SHOW+DATABASES&u=admin&p=adminpw"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(
        r["results"][0]["series"][0]["values"],
        json!([["a"], ["b"]])
    );

    // Writer: Basic, Token <token>, Token user:password, u/p; 403 outside its databases.
    let w = |req: reqwest::blocking::RequestBuilder| {
        req.body("m v=1").send().unwrap().status().as_u16()
    };
    assert_eq!(
        w(s.client
            .post(s.url("/write?db=a"))
            .basic_auth("writer", Some("writerpw"))),
        204
    );
    assert_eq!(
        w(s.client
            .post(s.url("/write?db=a"))
            .header("Authorization", "Token writer-token")),
        204
    );
    assert_eq!(
        w(s.client
            .post(s.url("/write?db=a"))
            .header("Authorization", "Token writer:writerpw")),
        204
    );
    assert_eq!(
        w(s.client.post(s.url("/write?db=a&u=writer&p=writerpw"))),
        204
    );
    assert_eq!(
        w(s.client
            .post(s.url("/api/v2/write?org=o&bucket=a"))
            .header("Authorization", "Token writer-token")),
        204
    );
    let r = s
        .client
        .post(s.url("/write?db=b&u=writer&p=writerpw"))
        .body("m v=1")
        .send()
        .unwrap();
    assert_eq!(r.status(), 403);
    assert!(r.json::<Value>().unwrap()["error"]
        .as_str()
        .unwrap()
        .contains("not authorized to write"));
    let r = s
        .client
        .post(s.url("/api/v2/write?bucket=b"))
        .header("Authorization", "Token writer-token")
        .body("m v=1")
        .send()
        .unwrap();
    assert_eq!(r.status(), 403);
    assert_eq!(r.json::<Value>().unwrap()["code"], "forbidden");

    // Reads: SHOW DATABASES filtered; SQL read-only for non-admins, DDL for admins.
    let r: Value = s
        .client
        .get(s.url("/query?q=SHOW+DATABASES"))
        .basic_auth("writer", Some("writerpw"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(r["results"][0]["series"][0]["values"], json!([["a"]]));
    let sql = |user: &str, pw: &str, q: &str| {
        s.client
            .post(s.url("/api/v1/sql?format=jsoneachrow"))
            .basic_auth(user, Some(pw))
            .body(q.to_string())
            .send()
            .unwrap()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let text = sql(
            "writer",
            "writerpw",
            "SELECT toString(count()) AS n FROM a.m",
        )
        .text()
        .unwrap();
        if text.contains("\"5\"") || std::time::Instant::now() > deadline {
            assert!(text.contains("\"5\""), "{text}");
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(sql("writer", "writerpw", "DROP TABLE a.m").status(), 403);
    assert_eq!(
        sql("writer", "writerpw", "SELECT * FROM file('/etc/passwd')").status(),
        403
    );
    assert_eq!(
        sql(
            "admin",
            "adminpw",
            "CREATE TABLE b.t (x UInt8) ENGINE = Memory"
        )
        .status(),
        200
    );
}
