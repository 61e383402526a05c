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
    let r: Value = s
        .client
        .post(s.url("/query?q=CREATE+DATABASE+c"))
        .basic_auth("writer", Some("writerpw"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert!(
        r["results"][0]["error"]
            .as_str()
            .unwrap()
            .contains("not an admin"),
        "{r}"
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
