//! The HTTP layer over an in-memory store, through `oneshot`.

use std::sync::atomic::Ordering;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

use super::*;
use crate::config::UserConfig;
use mem::MemStore;

mod mem;

fn state_with(config: Config, p: Arc<MemStore>) -> AppState<MemStore> {
    AppState::new(config, p)
}

struct Resp {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: Vec<u8>,
}

impl Resp {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
}

async fn send(app: &Router, req: Request<Body>) -> Resp {
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let body = resp
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    Resp {
        status,
        headers,
        body,
    }
}

fn post(uri: &str, body: impl Into<Body>) -> Request<Body> {
    Request::post(uri).body(body.into()).unwrap()
}

fn get(uri: &str) -> Request<Body> {
    Request::get(uri).body(Body::empty()).unwrap()
}

fn setup(config: Config) -> (Router, Arc<MemStore>) {
    let p = Arc::new(MemStore::with_db("db"));
    (app(state_with(config, p.clone())), p)
}

#[test]
fn generated_request_ids_are_lowercase_uuid_v4() {
    let a = super::new_request_id();
    let a = a.to_str().unwrap();
    assert_eq!(a.len(), 36, "{a}");
    for (i, c) in a.char_indices() {
        match i {
            8 | 13 | 18 | 23 => assert_eq!(c, '-', "{a}"),
            14 => assert_eq!(c, '4', "version nibble: {a}"),
            19 => assert!("89ab".contains(c), "variant nibble: {a}"),
            _ => assert!(c.is_ascii_hexdigit() && !c.is_ascii_uppercase(), "{a}"),
        }
    }
    assert_ne!(super::new_request_id().to_str().unwrap(), a);
}

#[tokio::test]
async fn ping_has_version_headers_and_request_id() {
    let (app, _) = setup(Config::default());
    let r = send(&app, get("/ping")).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(r.headers["x-influxdb-version"], INFLUXDB_VERSION);
    assert_eq!(r.headers["x-influxdb-build"], BUILD);
    let id = r.headers["x-request-id"].to_str().unwrap().to_string();
    assert_eq!(id.len(), 36, "{id}");
    assert_eq!(r.headers["request-id"], id.as_str());
    let r2 = send(
        &app,
        Request::head("/ping")
            .header("Request-Id", "abc-1")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(r2.status, StatusCode::NO_CONTENT);
    assert_eq!(
        r2.headers["x-request-id"], "abc-1",
        "a client's request id is echoed"
    );
    // Even errors carry them.
    let r3 = send(&app, get("/nope")).await;
    assert_eq!(r3.status, StatusCode::NOT_FOUND);
    assert!(r3.headers.contains_key("x-influxdb-version"));
    assert_eq!(
        send(&app, get("/ping?verbose=true")).await.json()["version"],
        INFLUXDB_VERSION
    );
}

#[tokio::test]
async fn write_v1_success_is_204_and_data_arrives() {
    let (app, p) = setup(Config::default());
    let r = send(
        &app,
        post(
            "/write?db=db&precision=s",
            "cpu,host=a v=1 1\ncpu,host=b v=2 2\n",
        ),
    )
    .await;
    assert_eq!(
        r.status,
        StatusCode::NO_CONTENT,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    assert!(r.body.is_empty());
    assert_eq!(p.lines("db"), vec!["cpu,host=a v=1 1", "cpu,host=b v=2 2"]);
}

#[tokio::test]
async fn write_v1_error_classes() {
    let (app, _) = setup(Config::default());
    let cases: &[(&str, u16, &str)] = &[
        ("/write", 400, "database is required"),
        ("/write?db=nope", 404, "database not found: \"nope\""),
        (
            "/write?db=db&rp=weekly",
            404,
            "retention policy not found: \"weekly\"",
        ),
        (
            "/write?db=db&consistency=x",
            400,
            "invalid consistency level",
        ),
    ];
    for (uri, status, msg) in cases {
        let r = send(&app, post(uri, "cpu v=1")).await;
        assert_eq!(r.status.as_u16(), *status, "{uri}");
        assert_eq!(r.json(), serde_json::json!({ "error": msg }), "{uri}");
        assert_eq!(r.headers["x-influxdb-error"], *msg, "{uri}");
    }
    let r = send(&app, post("/write?db=db&precision=x", "cpu v=1")).await;
    assert_eq!(r.status, 400);
    assert!(r.json()["error"]
        .as_str()
        .unwrap()
        .starts_with("invalid precision"));
}

#[tokio::test]
async fn partial_write_is_400_with_the_message_and_keeps_good_lines() {
    let (app, p) = setup(Config::default());
    let r = send(&app, post("/write?db=db", "cpu v=1\n!bad\ncpu v=2\n")).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["error"],
        "partial write: unable to parse '!bad': invalid field format dropped=0"
    );
    assert_eq!(p.lines("db"), vec!["cpu v=1", "cpu v=2"]);
    let r = send(&app, post("/write?db=db", "cpu v=1\n@limit\n")).await;
    assert_eq!(r.status, 422);
}

#[tokio::test]
async fn v2_write_uses_bucket_and_v2_error_shape() {
    let (app, p) = setup(Config::default());
    let r = send(
        &app,
        post(
            "/api/v2/write?org=o&bucket=db/autogen&precision=ms",
            "m v=1",
        ),
    )
    .await;
    assert_eq!(r.status, 204);
    assert_eq!(p.lines("db"), vec!["m v=1"]);
    let r = send(&app, post("/api/v2/write?org=o&bucket=missing", "m v=1")).await;
    assert_eq!(r.status, 404);
    assert_eq!(
        r.json(),
        serde_json::json!({"code": "not found", "message": "database not found: \"missing\""})
    );
    let r = send(&app, post("/api/v2/write?org=o", "m v=1")).await;
    assert_eq!(
        r.json(),
        serde_json::json!({"code": "invalid", "message": "database is required"})
    );
    let r = send(&app, post("/api/v2/write?bucket=db&precision=h", "m v=1")).await;
    assert_eq!(r.status, 400);
}

#[tokio::test]
async fn auto_create_creates_unknown_databases() {
    let mut c = Config::default();
    c.server.auto_create_databases = true;
    let (app, p) = setup(c);
    let r = send(&app, post("/write?db=fresh", "m v=1")).await;
    assert_eq!(r.status, 204);
    assert_eq!(p.lines("fresh"), vec!["m v=1"]);
}

#[tokio::test]
async fn gzip_bodies_and_size_limits() {
    use std::io::Write;
    let mut c = Config::default();
    c.server.max_body_bytes = 1000;
    let (app, p) = setup(c);
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b"gz v=1\n").unwrap();
    let gz = e.finish().unwrap();
    let req = Request::post("/write?db=db")
        .header("Content-Encoding", "GZip")
        .body(Body::from(gz))
        .unwrap();
    assert_eq!(send(&app, req).await.status, 204);
    assert_eq!(p.lines("db"), vec!["gz v=1"]);
    // Too large raw (declared and streamed).
    let r = send(&app, post("/write?db=db", vec![b'a'; 1001])).await;
    assert_eq!(r.status, 413);
    let stream = futures_util::stream::iter(vec![
        Ok::<_, std::io::Error>(bytes::Bytes::from(vec![b'a'; 600])),
        Ok(bytes::Bytes::from(vec![b'a'; 600])),
    ]);
    let r = send(&app, post("/write?db=db", Body::from_stream(stream))).await;
    assert_eq!(r.status, 413, "chunked bodies are capped too");
    // Small compressed, too large decompressed.
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(&vec![b'x'; 5000]).unwrap();
    let bomb = e.finish().unwrap();
    assert!(bomb.len() < 1000);
    let req = Request::post("/api/v2/write?bucket=db")
        .header("content-encoding", "gzip")
        .body(Body::from(bomb))
        .unwrap();
    let r = send(&app, req).await;
    assert_eq!(r.status, 413);
    assert_eq!(r.json()["code"], "request too large");
    let req = Request::post("/write?db=db")
        .header("content-encoding", "br")
        .body(Body::from("m v=1"))
        .unwrap();
    assert_eq!(send(&app, req).await.status, 415);
}

#[tokio::test]
async fn backpressure_answers_503_v1_and_429_v2_with_retry_after() {
    let mut c = Config::default();
    c.limits.max_unflushed_points = 10;
    c.limits.retry_after_secs = 2;
    let (app, p) = setup(c);
    p.stats.lock().unflushed_points = 10;
    let r = send(&app, post("/write?db=db", "m v=1")).await;
    assert_eq!(r.status, 503);
    assert_eq!(r.headers["retry-after"], "2");
    let r = send(&app, post("/api/v2/write?bucket=db", "m v=1")).await;
    assert_eq!(r.status, 429);
    assert_eq!(r.headers["retry-after"], "2");
    assert_eq!(send(&app, get("/health")).await.status, 503);
    p.stats.lock().unflushed_points = 0;
    assert_eq!(send(&app, get("/health")).await.status, 200);
    p.queue_full.store(true, Ordering::Relaxed);
    let r = send(&app, post("/api/v2/write?bucket=db", "m v=1")).await;
    assert_eq!(r.status, 429);
    assert!(r.headers.contains_key("retry-after"));
}

#[tokio::test]
async fn inflight_byte_budget_refuses_concurrent_writes() {
    let mut c = Config::default();
    c.server.max_body_bytes = 4096;
    c.limits.max_inflight_bytes = 4096;
    let (app, p) = setup(c);
    p.commit_delay_ms.store(300, Ordering::Relaxed);
    let body = format!("m v=1\n{}", "#".repeat(3000));
    let slow = {
        let app = app.clone();
        let body = body.clone();
        tokio::spawn(async move { send(&app, post("/write?db=db", body)).await.status })
    };
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let started = std::time::Instant::now();
    let r = send(&app, post("/write?db=db", body)).await;
    assert_eq!(r.status, 503, "{}", String::from_utf8_lossy(&r.body));
    assert!(r.json()["error"]
        .as_str()
        .unwrap()
        .contains("in-flight bytes"));
    assert!(
        started.elapsed() < std::time::Duration::from_millis(200),
        "refused without waiting"
    );
    assert_eq!(slow.await.unwrap(), 204);
}

#[tokio::test]
async fn query_endpoint_statements_and_shapes() {
    let (app, p) = setup(Config::default());
    let r = send(
        &app,
        post("/query?q=CREATE+DATABASE+telegraf%3BSHOW+DATABASES", ""),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        serde_json::json!({"results": [
            {"statement_id": 0},
            {"statement_id": 1, "series": [{"name": "databases", "columns": ["name"], "values": [["db"], ["telegraf"]]}]}
        ]})
    );
    send(
        &app,
        post(
            "/write?db=db",
            "cpu,host=a,dc=x usage=1,idle=2\nmem,host=a used=3\n",
        ),
    )
    .await;
    let form = Request::post("/query")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(
            "db=db&q=SHOW+MEASUREMENTS%3B+SHOW+TAG+KEYS+FROM+cpu%3B+SHOW+FIELD+KEYS%3B+SHOW+SERIES",
        ))
        .unwrap();
    let j = send(&app, form).await.json();
    assert_eq!(
        j["results"][0]["series"][0]["values"],
        serde_json::json!([["cpu"], ["mem"]])
    );
    assert_eq!(
        j["results"][1]["series"],
        serde_json::json!([{"name": "cpu", "columns": ["tagKey"], "values": [["dc"], ["host"]]}])
    );
    assert_eq!(
        j["results"][2]["series"][0]["columns"],
        serde_json::json!(["fieldKey", "fieldType"])
    );
    assert_eq!(
        j["results"][2]["series"][0]["values"],
        serde_json::json!([["idle", "float"], ["usage", "float"]])
    );
    assert_eq!(
        j["results"][3]["series"][0]["values"],
        serde_json::json!([["cpu,host=a,dc=x"], ["mem,host=a"]])
    );
    let j = send(
        &app,
        get("/query?db=db&q=SHOW+TAG+VALUES+WITH+KEY+IN+(host,dc)"),
    )
    .await
    .json();
    assert_eq!(
        j["results"][0]["series"],
        serde_json::json!([
            {"name": "cpu", "columns": ["key", "value"], "values": [["dc", "x"], ["host", "a"]]},
            {"name": "mem", "columns": ["key", "value"], "values": [["host", "a"]]}
        ])
    );
    // Statement-level errors stay in the result; parse errors are 400.
    let j = send(&app, get("/query?q=SHOW+MEASUREMENTS")).await.json();
    assert_eq!(j["results"][0]["error"], "database name required");
    let r = send(&app, get("/query?q=FROB+x")).await;
    assert_eq!(r.status, 400);
    assert!(r.json()["error"]
        .as_str()
        .unwrap()
        .starts_with("error parsing query: found FROB"));
    // InfluxQL chingest does not implement is named in the statement's error.
    let r = send(&app, get("/query?db=db&q=SHOW+SHARDS")).await;
    assert_eq!(r.status, 200);
    let e = r.json()["results"][0]["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        e.contains("SHOW SHARDS") && e.contains("not supported"),
        "{e}"
    );
    assert_eq!(send(&app, get("/query")).await.status, 400);
    // Destructive statements need POST (issue 14): 405, nothing runs.
    let r = send(
        &app,
        get("/query?q=SHOW+DATABASES%3BDROP+DATABASE+telegraf"),
    )
    .await;
    assert_eq!(r.status, 405);
    assert_eq!(r.headers["allow"], "POST");
    assert_eq!(
        r.json()["error"],
        "deprecated use of 'DROP DATABASE telegraf' in a read only context, please use a POST request instead"
    );
    assert_eq!(p.databases(), vec!["db", "telegraf"]);
    send(&app, post("/query?q=DROP+DATABASE+telegraf", "")).await;
    assert_eq!(p.databases(), vec!["db"]);
}

fn auth_config() -> Config {
    let mut c = Config::default();
    c.auth.enabled = true;
    c.auth.users = vec![
        UserConfig {
            name: "writer".into(),
            password_hash: SecretHash::new("pw").to_string(),
            token_hashes: vec![SecretHash::new("tok").to_string()],
            write: vec!["db".into()],
            read: vec!["db".into()],
            ..Default::default()
        },
        UserConfig {
            name: "admin".into(),
            password_hash: SecretHash::new("root").to_string(),
            admin: true,
            ..Default::default()
        },
    ];
    c
}

#[tokio::test]
async fn auth_on_requires_credentials_except_ping_and_health() {
    let (app, p) = setup(auth_config());
    assert_eq!(send(&app, get("/ping")).await.status, 204);
    assert_eq!(send(&app, get("/health")).await.status, 200);
    assert_eq!(send(&app, get("/metrics")).await.status, 200);
    let r = send(&app, post("/write?db=db", "m v=1")).await;
    assert_eq!(r.status, 401);
    assert_eq!(
        r.json()["error"],
        "unable to parse authentication credentials"
    );
    let r = send(&app, post("/write?db=db&u=writer&p=wrong", "m v=1")).await;
    assert_eq!(
        (r.status.as_u16(), r.json()["error"].as_str().unwrap()),
        (401, "authorization failed")
    );
    let r = send(&app, post("/api/v2/write?bucket=db", "m v=1")).await;
    assert_eq!(r.json()["code"], "unauthorized");
    assert_eq!(
        send(&app, post("/write?db=db&u=writer&p=pw", "m v=1"))
            .await
            .status,
        204
    );
    let req = Request::post("/api/v2/write?bucket=db")
        .header("Authorization", "Token tok")
        .body(Body::from("m v=2"))
        .unwrap();
    assert_eq!(send(&app, req).await.status, 204);
    assert_eq!(p.lines("db").len(), 2);
    p.create_database("other", None).unwrap();
    let r = send(&app, post("/write?db=other&u=writer&p=pw", "m v=1")).await;
    assert_eq!(r.status, 403);
    let r = send(&app, post("/query?q=CREATE+DATABASE+x&u=writer&p=pw", "")).await;
    assert_eq!(r.status, 403);
    assert!(r.json()["error"]
        .as_str()
        .unwrap()
        .ends_with("'CREATE DATABASE x', requires admin privilege"));
    let r = send(&app, get("/query?q=SHOW+DATABASES&u=writer&p=pw")).await;
    assert_eq!(
        r.json()["results"][0]["series"][0]["values"],
        serde_json::json!([["db"]])
    );
    let r = send(&app, post("/query?q=CREATE+DATABASE+x&u=admin&p=root", "")).await;
    assert!(r.json()["results"][0].get("error").is_none());
}

#[tokio::test]
async fn metrics_can_require_auth() {
    let mut c = auth_config();
    c.auth.metrics_require_auth = true;
    let (app, _) = setup(c);
    assert_eq!(send(&app, get("/metrics")).await.status, 401);
    let r = send(&app, get("/metrics?u=admin&p=root")).await;
    assert_eq!(r.status, 200);
    let text = String::from_utf8(r.body).unwrap();
    assert!(
        text.contains("chingest_process_resident_memory_bytes"),
        "{text}"
    );
}

#[tokio::test]
async fn sql_is_read_only_for_non_admins() {
    let (app, _) = setup(auth_config());
    let r = send(&app, post("/api/v1/sql?u=writer&p=pw", "SELECT 1")).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["sql"], "SELECT 1");
    assert_eq!(r.headers["content-type"], "application/json");
    let r = send(&app, post("/api/v1/sql?u=writer&p=pw", "DROP TABLE db.cpu")).await;
    assert_eq!(r.status, 403);
    let r = send(
        &app,
        post("/api/v1/sql?u=admin&p=root&format=csv", "DROP TABLE db.cpu"),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "text/csv; charset=utf-8");
    let r = send(
        &app,
        post("/api/v1/sql?u=admin&p=root", "SELECT syntax error"),
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(r.json()["error"].as_str().unwrap().contains("Syntax error"));
    let json = Request::post("/api/v1/sql?u=writer&p=pw")
        .header("content-type", "application/json")
        .body(Body::from(
            r#"{"query": "SELECT 2", "format": "jsoneachrow"}"#,
        ))
        .unwrap();
    let r = send(&app, json).await;
    assert_eq!(r.headers["content-type"], "application/x-ndjson");
    let (anon, _) = setup(Config::default());
    assert_eq!(
        send(&anon, post("/api/v1/sql", "INSERT INTO t VALUES (1)"))
            .await
            .status,
        403,
        "auth off is still read-only"
    );
}

#[tokio::test]
async fn request_metrics_are_labelled_by_route() {
    let (app, _) = setup(Config::default());
    send(&app, get("/ping")).await;
    send(&app, post("/write", "x")).await;
    let text = String::from_utf8(send(&app, get("/metrics")).await.body).unwrap();
    assert!(text.contains(r#"chingest_http_request_duration_seconds_bucket{route="/write",method="POST",status="400",le="0.00005"}"#), "{text}");
    assert!(text.contains(r#"route="/ping""#));
}

#[tokio::test]
async fn request_timeout_answers_503_with_retry_after() {
    let mut c = Config::default();
    c.server.request_timeout_secs = 1;
    let (app, p) = setup(c);
    p.commit_delay_ms.store(1500, Ordering::Relaxed);
    let r = send(&app, post("/api/v2/write?bucket=db", "m v=1")).await;
    assert_eq!(r.status, 503);
    assert!(r.headers.contains_key("retry-after"));
    assert_eq!(r.json()["message"], "request timed out after 1 s");
}
