//! Issue #43: what the client sends a newer server, run by one. No server newer than
//! Debian's 18.16 can be installed here, but the embedded engine is ClickHouse 26.7: this
//! module puts it behind an HTTP listener on loopback ([`EngineShard`]) that answers as a
//! shard's HTTP interface does, and the test drives the real client through everything it
//! does on a shard — connect, the metadata tables, deliveries and their retries' checks,
//! reads, deletes, retention, drops — so every statement, insert and setting it would send
//! a 26.7 server is run by 26.7, and one it does not accept fails the test.
//!
//! Where the engine alone cannot run what it is sent, and only there, the listener checks
//! less, as documented at each place:
//! - a `Replicated…MergeTree` table needs ZooKeeper: its `CREATE` is parsed by 26.7
//!   (`EXPLAIN AST`), then made with the engine clause without its ZooKeeper arguments
//!   (`ReplicatedMergeTree('/p', '{replica}')` → `MergeTree()`), so what follows runs on
//!   a real table;
//! - `system.zookeeper` exists only on a server with ZooKeeper: the read is parsed, and
//!   answered as one whose ZooKeeper answers;
//! - `system.macros` is read as sent, and answered with the replica macro a replica's
//!   config would have;
//! - the engine knows no cluster of servers: `system.clusters` is read as sent and
//!   answered as by a server whose `remote_servers` lists the cluster with one shard, and a
//!   `Distributed` table's `CREATE` is parsed, then made as the `Merge` table over the one
//!   shard table it names (what a one-shard `Distributed` table reads), so the columns
//!   added to it and `/api/v1/sql` over it run;
//! - an `INSERT … FORMAT Native` and its rows are run as `INSERT … SELECT * FROM
//!   format(Native, <the table's types of its columns>, <rows>)`: the block read into the
//!   table's types as a server's `Native` input reads it (a `String` tag into a
//!   `LowCardinality(String)` column), then inserted;
//! - the HTTP-only parameters (`query`, `wait_end_of_query`, `user`, `password`,
//!   `database`, `default_format`: the last applied as the statement's `FORMAT`) are the
//!   interface's; every other URL parameter is a setting, and must be one 26.7 has (their
//!   values are not applied: `readonly` among them is the server's business).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use engine::OutputFormat;

use crate::engine;

/// What the listener saw: every statement as sent, and those 26.7 refused, with why.
#[derive(Default)]
pub(crate) struct Seen {
    pub(crate) statements: Vec<String>,
    pub(crate) refused: Vec<(String, String)>,
}

/// A shard whose server is the process's embedded engine (ClickHouse 26.7).
pub(crate) struct EngineShard {
    port: u16,
    pub(crate) seen: Arc<Mutex<Seen>>,
}

/// URL parameters of the HTTP interface that are not settings.
const INTERFACE_PARAMETERS: [&str; 6] = [
    "query",
    "wait_end_of_query",
    "user",
    "password",
    "database",
    "default_format",
];

impl EngineShard {
    /// Listens on a free loopback port, one thread per connection (keep-alive), as the
    /// server whose `<macros><replica>` is `replica`.
    pub(crate) fn start(replica: &'static str) -> EngineShard {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Seen::default()));
        let state = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let state = state.clone();
                std::thread::spawn(move || serve(conn, &state, replica));
            }
        });
        EngineShard { port, seen }
    }

    /// Its HTTP endpoint.
    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

/// Answers the requests of one connection until it closes.
fn serve(conn: TcpStream, seen: &Mutex<Seen>, replica: &str) {
    let mut out = conn.try_clone().unwrap();
    let mut r = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let Some(target) = line.split_whitespace().nth(1).map(str::to_string) else {
            return;
        };
        let (mut length, mut chunked) = (0usize, false);
        loop {
            let mut h = String::new();
            r.read_line(&mut h).unwrap();
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (name, value) = h.split_once(':').unwrap_or((h, ""));
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap(),
                "transfer-encoding" => chunked = value.to_ascii_lowercase().contains("chunked"),
                _ => {}
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                let mut size = String::new();
                r.read_line(&mut size).unwrap();
                let size =
                    usize::from_str_radix(size.trim().split(';').next().unwrap(), 16).unwrap();
                let mut chunk = vec![0; size + 2];
                r.read_exact(&mut chunk).unwrap();
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        } else {
            body.resize(length, 0);
            r.read_exact(&mut body).unwrap();
        }
        let (status, code, answer) = answer(&target, body, seen, replica);
        let mut head = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: text/plain\r\n",
            answer.len()
        );
        if let Some(code) = code {
            head.push_str(&format!("X-ClickHouse-Exception-Code: {code}\r\n"));
        }
        head.push_str("\r\n");
        if out.write_all(head.as_bytes()).is_err() || out.write_all(&answer).is_err() {
            return;
        }
    }
}

/// The answer to one request: (status line, error code, body).
fn answer(
    target: &str,
    body: Vec<u8>,
    seen: &Mutex<Seen>,
    replica: &str,
) -> (&'static str, Option<u32>, Vec<u8>) {
    let url = reqwest::Url::parse(&format!("http://shard{target}")).unwrap();
    let params: HashMap<String, String> = url.query_pairs().into_owned().collect();
    let (sql, data) = match params.get("query") {
        Some(q) => (q.clone(), Some(body)),
        None => (String::from_utf8(body).unwrap(), None),
    };
    seen.lock().unwrap().statements.push(sql.clone());
    let refuse = |why: String| {
        seen.lock()
            .unwrap()
            .refused
            .push((sql.clone(), why.clone()));
        let code = error_code(&why);
        ("500 Internal Server Error", code, why.into_bytes())
    };
    for name in params
        .keys()
        .filter(|k| !INTERFACE_PARAMETERS.contains(&k.as_str()))
    {
        let known = engine()
            .query_text(&format!(
                "SELECT count() FROM system.settings WHERE name = '{}'",
                name.replace('\'', "")
            ))
            .unwrap();
        if known.trim() != "1" {
            return refuse(format!(
                "Code: 115. DB::Exception: Unknown setting {name}. (UNKNOWN_SETTING)"
            ));
        }
    }
    let sql_to_run = match params.get("default_format") {
        Some(f) if !sql.contains(" FORMAT ") => format!("{} FORMAT {f}", sql.trim_end()),
        _ => sql.clone(),
    };
    let run = match statement_to_run(&sql_to_run, data.as_deref(), replica) {
        Ok(run) => run,
        Err(e) => return refuse(e),
    };
    let result = match run {
        Run::Sql(sql) => engine().query(&sql, OutputFormat::TabSeparated),
        Run::Answer(text) => Ok(text.into_bytes()),
    };
    match result {
        Ok(bytes) => ("200 OK", None, bytes),
        Err(e) => refuse(engine_message(e)),
    }
}

/// What the listener runs for a statement.
enum Run {
    /// This SQL, in the engine.
    Sql(String),
    /// Nothing more: this answer (the statement was checked).
    Answer(String),
}

/// The engine's statement for `sql` (with `data`, an insert's rows), checked as the module's
/// doc says where the engine cannot run it as sent.
fn statement_to_run(sql: &str, data: Option<&[u8]>, replica: &str) -> Result<Run, String> {
    if let Some(data) = data {
        // `INSERT INTO t (cols) FORMAT Native` and its rows, as a server takes them: its
        // `Native` input reads the block into the table's types of those columns (a
        // `String` block into a `LowCardinality(String)` column is converted, a block it
        // cannot convert refused), then inserts it.
        let insert = sql
            .trim()
            .strip_suffix("FORMAT Native")
            .ok_or_else(|| format!("an insert's rows in another format: {sql}"))?;
        let structure = insert_structure(insert)?;
        return Ok(Run::Sql(format!(
            "{insert} SELECT * FROM format(Native, '{}', '{}')",
            structure.replace('\\', "\\\\").replace('\'', "\\'"),
            escape_bytes(data)
        )));
    }
    if sql.contains("system.zookeeper") {
        parse_only(sql)?;
        return Ok(Run::Answer("1\n".into()));
    }
    if sql.contains("system.macros") {
        engine()
            .query(sql, OutputFormat::TabSeparated)
            .map_err(engine_message)?;
        return Ok(Run::Answer(format!("{replica}\n")));
    }
    if sql.contains("system.clusters") {
        engine()
            .query(sql, OutputFormat::TabSeparated)
            .map_err(engine_message)?;
        return Ok(Run::Answer("1\n".into()));
    }
    if let Some(at) = sql.find("ENGINE = Distributed(") {
        parse_only(sql)?;
        let args: Vec<&str> = sql[at..].split('\'').skip(1).step_by(2).collect();
        let (database, table) = (args[1], args[2]);
        return Ok(Run::Sql(format!(
            "{}ENGINE = Merge('{database}', '^{table}$')",
            &sql[..at]
        )));
    }
    if let Some(at) = sql.find("ENGINE = Replicated") {
        parse_only(sql)?;
        return Ok(Run::Sql(without_zookeeper(sql, at)));
    }
    Ok(Run::Sql(sql.to_string()))
}

/// The table's types of the columns `INSERT INTO <table> (<columns>)` names, as a
/// structure (`` `a` String, `b` LowCardinality(String) ``): the header a server reads an
/// insert's `Native` block into.
fn insert_structure(insert: &str) -> Result<String, String> {
    let head = insert
        .trim()
        .strip_prefix("INSERT INTO ")
        .ok_or_else(|| format!("not an insert: {insert}"))?;
    let open = head
        .find(" (")
        .ok_or_else(|| format!("an insert without its columns: {insert}"))?;
    let (table, columns) = (
        &head[..open],
        head[open + 2..].trim_end().trim_end_matches(')'),
    );
    let (database, name) = table
        .trim_matches('`')
        .split_once("`.`")
        .ok_or_else(|| format!("not a `db`.`table`: {table}"))?;
    let literal = |t: &str| format!("'{}'", t.replace('\\', "\\\\").replace('\'', "\\'"));
    let types = engine()
        .query_text(&format!(
            "SELECT name, type FROM system.columns WHERE database = {} AND table = {}",
            literal(database),
            literal(name)
        ))
        .map_err(engine_message)?;
    let types: HashMap<&str, &str> = types.lines().filter_map(|l| l.split_once('\t')).collect();
    columns
        .split(", ")
        .map(|quoted| {
            let name = quoted.trim_matches('`');
            let ty = types
                .get(name)
                .ok_or_else(|| format!("no column {quoted} in {table}: {insert}"))?;
            Ok(format!("{quoted} {ty}"))
        })
        .collect::<Result<Vec<_>, String>>()
        .map(|c| c.join(", "))
}

/// 26.7 parses `sql` (`EXPLAIN AST`), or its error.
fn parse_only(sql: &str) -> Result<(), String> {
    let sql = sql.trim().trim_end_matches("FORMAT TabSeparated");
    engine()
        .query(&format!("EXPLAIN AST {sql}"), OutputFormat::TabSeparated)
        .map(drop)
        .map_err(engine_message)
}

/// `sql` with its `Replicated…(path, replica[, args])` engine (at `at`) made
/// `…(args)`: the table without ZooKeeper.
fn without_zookeeper(sql: &str, at: usize) -> String {
    let start = at + "ENGINE = ".len();
    let rest = &sql[start..];
    let open = rest.find('(').unwrap();
    let name = &rest["Replicated".len()..open];
    let args = &rest[open + 1..];
    // Skip the two quoted arguments (path, replica).
    let mut quotes = 0;
    let mut i = 0;
    while quotes < 4 {
        if args.as_bytes()[i] == b'\'' {
            quotes += 1;
        }
        i += 1;
    }
    let tail = args[i..].trim_start_matches(", ").trim_start_matches(',');
    format!("{}{name}({tail}", &sql[..start])
}

/// `data` as a ClickHouse string literal's body.
fn escape_bytes(data: &[u8]) -> String {
    data.iter()
        .map(|b| match *b {
            b'\\' | b'\'' => format!("\\x{b:02x}"),
            0x20..=0x7e => (*b as char).to_string(),
            _ => format!("\\x{b:02x}"),
        })
        .collect()
}

/// The engine's error text as a server writes it.
fn engine_message(e: engine::EngineError) -> String {
    match e {
        engine::EngineError::Query { message, .. } => message,
        other => other.to_string(),
    }
}

/// The `Code: N.` of an error text.
fn error_code(text: &str) -> Option<u32> {
    let rest = &text[text.find("Code: ")? + "Code: ".len()..];
    rest[..rest.find(|c: char| !c.is_ascii_digit())?]
        .parse()
        .ok()
}

/// Every statement the client sends a 26.7 server, run by 26.7 ([`EngineShard`]): the
/// flows a node runs on a shard succeed, and no statement is refused but the missing
/// tables the client asks about on purpose (it checks before it makes).
#[test]
fn every_statement_for_a_newer_server_is_accepted_by_the_embedded_26_7() {
    use ::cluster::{Cluster, ClusterConfig, RowSelection, ServerVersion, Source, TagValues};
    use engine::arrow::array::AsArray;
    use engine::table::{ColumnKind, Part};

    use crate::batch::{batch, Col};
    use crate::cluster::{config, part};
    use crate::database_name;

    let shard = EngineShard::start("r0");
    let e = engine();
    let db = database_name("newer");
    let plain = ClusterConfig {
        shards: vec![vec![shard.url()]],
        distributed: Some("newer".into()),
        ..config(&[], "newer-a")
    };
    let cluster = Cluster::connect(plain.clone()).unwrap();
    // A shard of two replicas (two listeners on the one engine) whose tables are
    // replicated, with an insert quorum: connected first, while the engine holds no
    // chingest table (a replica holding one of its own is refused).
    let other = EngineShard::start("r1");
    let replicated = Cluster::connect(ClusterConfig {
        shards: vec![vec![shard.url(), other.url()]],
        zookeeper_path: Some("/chingest/newer".into()),
        insert_quorum: 2,
        ..plain.clone()
    })
    .unwrap();
    let version = cluster.versions()[0].expect("the engine answers its version");
    assert!(
        version >= ServerVersion::parse("24.1").unwrap(),
        "{version}"
    );
    assert!(version.atomic_databases());

    // The shared metadata, a database and its retention.
    assert_eq!(cluster.create_database(&db, 1).unwrap(), 1);
    assert_eq!(cluster.set_retention(&db, 3600).unwrap(), 1);
    cluster.note_retention(&db, 3600);
    assert_eq!(cluster.list_policies(&db, "{}", 2).unwrap(), 1);
    let catalog = cluster.catalog().unwrap();
    assert!(catalog.databases.contains(&db), "{catalog:?}");

    // Deliveries: the table, its columns, the insert with its settings; a retry asks what
    // the shard holds (the whole write, then a write held in part).
    let done = cluster
        .deliver(e, &db, "cpu", &[part(1, 20), part(2, 20)], 0)
        .unwrap();
    assert_eq!(done.rows, [40]);
    let again = cluster
        .deliver(e, &db, "cpu", &[part(2, 20), part(3, 20)], 3)
        .unwrap();
    assert_eq!((again.rows[0], again.already_held), (20, 20));
    let table = format!("`__shard_{db}`.cpu");
    e.execute(&format!(
        "DELETE FROM {table} WHERE __seq = 3 AND __row >= 10"
    ))
    .unwrap();
    let partial = cluster.deliver(e, &db, "cpu", &[part(3, 20)], 3).unwrap();
    assert_eq!((partial.rows[0], partial.already_held), (10, 10));
    assert_eq!(
        e.query_text(&format!("SELECT count() FROM {table}"))
            .unwrap()
            .trim(),
        "60"
    );

    // The catalog lists the table (its drops read first, then the tables), and a
    // statement naming a measurement the node lacks asks the shards for its table.
    let catalog = cluster.catalog().unwrap();
    assert!(
        catalog
            .tables
            .contains_key(&(db.clone(), "cpu".to_string())),
        "{catalog:?}"
    );
    assert!(cluster.holds_any_table(&db, &["nope", "cpu"]).unwrap());
    assert!(!cluster.holds_any_table(&db, &["nope", "it's"]).unwrap());

    // Reads.
    let columns = [
        ("host".to_string(), ColumnKind::Tag),
        ("usage".to_string(), ColumnKind::Float),
        ("ok".to_string(), ColumnKind::Boolean),
    ];
    for last_per_series in [false, true] {
        let back = cluster
            .read_rows(
                &db,
                "cpu",
                &columns,
                RowSelection {
                    min: 0,
                    max: i64::MAX,
                    condition: Some("`host` != 'h0'"),
                    last_per_series,
                    pointwise: None,
                    whole_series: &[],
                    series_of: None,
                    source: None,
                },
                1000,
            )
            .unwrap()
            .unwrap();
        assert_eq!(back.num_rows(), if last_per_series { 19 } else { 57 });
    }
    // Each series' last point kept by the node (`last_points.rs`): the first read lists the
    // parts and reads the whole table, a new part's last points are read by its blocks,
    // then the listing alone answers.
    let last = |sent: usize| {
        let back = cluster
            .read_rows(
                &db,
                "last",
                &columns,
                RowSelection {
                    min: 0,
                    max: i64::MAX,
                    condition: None,
                    last_per_series: true,
                    pointwise: None,
                    whole_series: &[],
                    series_of: None,
                    source: None,
                },
                1000,
            )
            .unwrap()
            .unwrap();
        let seen = shard.seen.lock().unwrap();
        let statements = &seen.statements[sent..];
        let ours = statements.iter().filter(|s| s.contains(&db)).count();
        (
            back.num_rows(),
            ours,
            statements.iter().any(|s| s.contains("_part")),
        )
    };
    cluster.deliver(e, &db, "last", &[part(1, 20)], 0).unwrap();
    let sent = shard.seen.lock().unwrap().statements.len();
    assert_eq!(last(sent).0, 20);
    cluster.deliver(e, &db, "last", &[part(2, 5)], 0).unwrap();
    let sent = shard.seen.lock().unwrap().statements.len();
    assert_eq!(
        last(sent),
        (20, 2, true),
        "the listing, the new part's last points"
    );
    let sent = shard.seen.lock().unwrap().statements.len();
    assert_eq!(last(sent), (20, 1, false), "the listing alone");
    // Gone again: what follows counts the partitions of `cpu` alone.
    cluster.drop_table(&db, "last").unwrap();
    // A field condition on the shard (raw `SELECT … WHERE usage > 20`): the rows meeting
    // it (h18 and h19 at 3 s, h19 at 2 s) and every row of a series sent whole (h1's 3).
    let back = cluster
        .read_rows(
            &db,
            "cpu",
            &columns,
            RowSelection {
                min: 0,
                max: i64::MAX,
                condition: Some("`host` != 'h0'"),
                last_per_series: false,
                pointwise: Some("`usage` > 20"),
                whole_series: &[0x9E37_79B9_7F4A_7C15],
                series_of: None,
                source: None,
            },
            1000,
        )
        .unwrap()
        .unwrap();
    assert_eq!(back.num_rows(), 6);
    // The same, pruned to the series of some hosts by the node's map of the table's tag
    // values (`series_of_tags.rs`): the map's load, `series_id IN (…)`, `0` for values no
    // series holds, and (below) a new part's series looked up by its blocks.
    let pruned = |hosts: &[&str], pointwise: &str, columns: &[(String, ColumnKind)]| {
        let values = TagValues {
            tag: "host".into(),
            values: hosts.iter().map(|h| h.to_string()).collect(),
        };
        let selection = RowSelection {
            min: 0,
            max: i64::MAX,
            condition: Some("`host` != 'h0'"),
            last_per_series: false,
            pointwise: Some(pointwise),
            whole_series: &[],
            series_of: Some(&values),
            source: None,
        };
        let back = cluster.read_rows(&db, "cpu", columns, selection, 1000);
        back.unwrap().map_or(0, |b| b.num_rows())
    };
    assert_eq!(pruned(&["h18", "h19"], "`usage` > 20", &columns), 3);
    assert_eq!(pruned(&["nowhere"], "`usage` > 20", &columns), 0);
    let sent = |part: &str| {
        let seen = shard.seen.lock().unwrap();
        seen.statements
            .iter()
            .any(|s| s.contains(&db) && s.contains(part))
    };
    assert!(sent("SELECT DISTINCT `series_id`, CAST(`host` AS String)") && sent(" AND 0 AND "));
    let hosts = cluster
        .distinct_tags(&db, "cpu", &["host".to_string()], 100)
        .unwrap();
    assert_eq!(hosts.len(), 20);
    assert!(cluster.has_rows(&db, "cpu").unwrap());
    // `/api/v1/sql` over the `Distributed` table, within the shard's limits.
    let mut answer = Vec::new();
    cluster
        .sql(
            &format!("SELECT count() AS n, uniqExact(host) AS hosts FROM `{db}`.cpu"),
            "JSONEachRow",
            &engine::SqlConfig::default(),
            &engine::SqlCancel::new(),
            &mut |block| {
                answer.extend_from_slice(block);
                true
            },
            None,
        )
        .unwrap();
    // 64-bit integers quoted or not, as the server's default has it.
    let row: serde_json::Value = serde_json::from_slice(&answer).unwrap();
    let number = |k: &str| row[k].to_string().trim_matches('"').to_string();
    assert_eq!(
        (number("n"), number("hosts")),
        ("60".into(), "20".into()),
        "{row}"
    );

    // The layout of a server that has `LowCardinality`: tags made so, a tag added later
    // too (on the shard table and the `Distributed` one over it), `__node` and the fields
    // as on 18.16; the inserts' `String` tags taken into them, and read back as `String`.
    assert!(version.low_cardinality_tags());
    let types = |database: &str| {
        e.query_text(&format!(
            "SELECT name, type FROM system.columns WHERE database = '{database}' \
             AND table = 'cpu' ORDER BY name FORMAT TabSeparated"
        ))
        .unwrap()
    };
    let with_dc = Part {
        seq: 6,
        batch: batch(
            vec![6_000_000_000; 2],
            vec![1001, 1002],
            vec![
                Col::Tag("dc", vec!["eu", "us"]),
                Col::Tag("host", vec!["h100", "h101"]),
                Col::F("usage", vec![Some(1.0), Some(2.0)]),
            ],
        ),
    };
    cluster.deliver(e, &db, "cpu", &[with_dc], 0).unwrap();
    let dc_columns = [
        ("dc".to_string(), ColumnKind::Tag),
        ("host".to_string(), ColumnKind::Tag),
        ("usage".to_string(), ColumnKind::Float),
    ];
    let back = cluster
        .read_rows(
            &db,
            "cpu",
            &dc_columns,
            RowSelection {
                min: 0,
                max: i64::MAX,
                condition: Some("`dc` != '' AND `host` IN ('h100', 'h101')"),
                last_per_series: false,
                pointwise: None,
                whole_series: &[],
                series_of: None,
                source: None,
            },
            1000,
        )
        .unwrap()
        .unwrap();
    assert_eq!(pruned(&["h100", "h3"], "`usage` > 0", &dc_columns), 4);
    assert!(sent("`series_id` IN (") && sent("CAST(`host` AS String) FROM") && sent("_part"));
    let mut dcs: Vec<&str> = back
        .column_by_name("dc")
        .unwrap()
        .as_string::<i32>()
        .iter()
        .flatten()
        .collect();
    dcs.sort();
    assert_eq!(dcs, ["eu", "us"]);
    // The same grouped by series (one series per host): the series id sent in the tag's
    // column, each series' `host` put back by the node (`series_tags.rs`).
    let by_host = [
        ("host".to_string(), ColumnKind::Tag),
        ("n".to_string(), ColumnKind::Unsigned),
    ];
    let by_series_asked = std::sync::atomic::AtomicBool::new(false);
    let grouped = cluster
        .read_partials_by_series(
            &db,
            "cpu",
            &dc_columns,
            None,
            &[cluster::GroupTag {
                column: 0,
                tag: "host".into(),
            }],
            |_, _, _, by_series| {
                let key = if by_series {
                    by_series_asked.store(true, std::sync::atomic::Ordering::Relaxed);
                    "__src.`series_id`"
                } else {
                    "__src.`host`"
                };
                format!(
                    "SELECT {key} AS __p0, count() AS __p1 FROM {table} AS __src \
                     WHERE __src.`host` IN ('h100', 'h101') GROUP BY __p0"
                )
            },
            &by_host,
            10,
        )
        .unwrap()
        .0
        .unwrap();
    assert!(by_series_asked.into_inner(), "grouped by series");
    let mut hosts: Vec<&str> = grouped
        .column(0)
        .as_string::<i32>()
        .iter()
        .flatten()
        .collect();
    hosts.sort();
    assert_eq!(hosts, ["h100", "h101"]);
    for database in [format!("__shard_{db}"), db.clone()] {
        assert_eq!(
            types(&database),
            "__node\tString\n__row\tUInt32\n__seq\tUInt64\ndc\tLowCardinality(String)\n\
             host\tLowCardinality(String)\nok\tNullable(UInt8)\nseries_id\tUInt64\n\
             time\tInt64\nusage\tNullable(Float64)\n",
            "{database}"
        );
    }
    // The catalog every node reads takes a `LowCardinality(String)` column for a tag.
    let catalog = cluster.catalog().unwrap();
    let learned = &catalog.tables[&(db.clone(), "cpu".to_string())];
    assert_eq!(
        (learned.get("dc"), learned.get("host")),
        (Some(&ColumnKind::Tag), Some(&ColumnKind::Tag))
    );

    // Pushed-down aggregates: the index of points written twice (loaded whole, then
    // checked for a new delivery's blocks), and a partial statement grouping only the
    // rewritten series' rows.
    let snapshots = cluster.identity_snapshots(&db, "cpu", &columns).unwrap();
    assert_eq!(snapshots[0].as_ref().map(|s| s.rewritten.len()), Some(0));
    cluster.deliver(e, &db, "cpu", &[part(5, 20)], 0).unwrap();
    assert!(cluster
        .identity_still_valid(&db, "cpu", &columns, &snapshots)
        .unwrap());
    let partial = format!(
        "SELECT toInt64(0) AS __p0, count(__v0) AS __p1 FROM (\
         SELECT __src.`series_id` AS __sid, __src.`time` AS __t, \
         CAST(__src.`usage` AS Nullable(Float64)) AS __v0 FROM {table} AS __src \
         WHERE __src.`series_id` NOT IN (1,2) UNION ALL \
         SELECT __src.`series_id` AS __sid, __src.`time` AS __t, CAST(argMaxIf(__src.`usage`, \
         bitOr(bitShiftLeft(__src.`__seq`, 32), toUInt64(__src.`__row`)), \
         isNotNull(__src.`usage`)) AS Nullable(Float64)) AS __v0 FROM {table} AS __src \
         WHERE __src.`series_id` IN (1,2) GROUP BY __src.`series_id`, __src.`time`) GROUP BY __p0"
    );
    let kinds = [
        ("b".to_string(), ColumnKind::Integer),
        ("n".to_string(), ColumnKind::Unsigned),
    ];
    let parts = cluster
        .read_partials(
            &db,
            "cpu",
            &columns,
            None,
            |_, _, _| partial.clone(),
            &kinds,
            10,
        )
        .unwrap()
        .0
        .unwrap();
    assert_eq!(parts.num_rows(), 1);
    // `stddev` of an integer field (`storage`'s `pushdown/stddev.rs`): the sums of the values
    // and of their squares as floats (here over `usage` cast as the statement casts any).
    let stddev = partial.replacen(
        "count(__v0) AS __p1",
        "count(__v0) AS __p1, sum(toFloat64(__v0)) AS __p2, \
         sum(toFloat64(__v0) * toFloat64(__v0)) AS __p3",
        1,
    );
    assert_ne!(stddev, partial);
    let kinds = [
        ("b".to_string(), ColumnKind::Integer),
        ("n".to_string(), ColumnKind::Unsigned),
        ("s".to_string(), ColumnKind::Float),
        ("q".to_string(), ColumnKind::Float),
    ];
    let sums = cluster
        .read_partials(
            &db,
            "cpu",
            &columns,
            None,
            |_, _, _| stddev.clone(),
            &kinds,
            10,
        )
        .unwrap()
        .0
        .unwrap();
    assert_eq!((sums.num_rows(), sums.num_columns()), (1, 4));
    // `integral(usage, 1m) … GROUP BY time(10ns), *` integrated where each series lives
    // (`storage`'s `pushdown/integral_sql.rs`): each series' points in arrays, its pieces
    // read as rows (`ARRAY JOIN`), summed per window in order.
    let integral = format!(
        "SELECT any(__g0) AS __p0, any(__g1) AS __p1, __p.1 AS __p2, __p.3 AS __p3, 0. + \
         arraySum(arrayMap(x -> x.2, arraySort(groupArray((__p.2, __p.4))))) AS __p4, \
         max(__ms) AS __p5 FROM (SELECT __sid, __ms, __g0, __g1, arrayMap(x -> x.1, __a0) \
         AS __ts0, arrayMap(x -> toFloat64(assumeNotNull(x.2)), __a0) AS __vs0, \
         arrayMap(t -> (t - (((t - toInt64(0)) % toInt64(10)) + toInt64(10)) % \
         toInt64(10)), __ts0) AS __ws0, arraySlice(arrayPushFront(__ts0, __ts0[1]), 1, \
         length(__ts0)) AS __tp0, arraySlice(arrayPushFront(__vs0, __vs0[1]), 1, \
         length(__vs0)) AS __vp0, arraySlice(arrayPushFront(__ws0, __ws0[1]), 1, \
         length(__ws0)) AS __wp0, __ws0[length(__ws0)] AS __lw0, __ts0[length(__ts0)] = \
         __lw0 AS __ld0, arrayMap((t, w) -> t >= w + toInt64(10), __ts0, __wp0) AS __cr0, \
         arrayMap((t, v, p, q, w) -> q + (((v - q) / toFloat64(t - p)) * toFloat64((w + \
         toInt64(10)) - p)), __ts0, __vs0, __tp0, __vp0, __wp0) AS __xs0, \
         arrayConcat(arrayMap((k, t, v, p, q, w, x, c) -> (toUInt32(0), toUInt64(2 * k), \
         w, if(c, (0.5 * (x + q)) * (toFloat64((w + toInt64(10)) - p) / \
         toFloat64(toInt64(60000000000))), if(k = 1, 0., (0.5 * (v + q)) * (toFloat64(t - \
         p) / toFloat64(toInt64(60000000000))))), (w != __lw0 OR NOT __ld0)), \
         arrayEnumerate(__ts0), __ts0, __vs0, __tp0, __vp0, __wp0, __xs0, __cr0), \
         arrayMap((k, t, v, q, w, o, x) -> (toUInt32(0), toUInt64(2 * k + 1), o, (0.5 * \
         (v + x)) * (toFloat64(t - (w + toInt64(10))) / toFloat64(toInt64(60000000000))), \
         (o != __lw0 OR NOT __ld0)), arrayFilter((e, c) -> c, arrayEnumerate(__ts0), \
         __cr0), arrayFilter((e, c) -> c, __ts0, __cr0), arrayFilter((e, c) -> c, __vs0, \
         __cr0), arrayFilter((e, c) -> c, __vp0, __cr0), arrayFilter((e, c) -> c, __wp0, \
         __cr0), arrayFilter((e, c) -> c, __ws0, __cr0), arrayFilter((e, c) -> c, __xs0, \
         __cr0))) AS __pc FROM (SELECT __sid, max(__ms) AS __ms, any(__k0) AS __g0, \
         any(__k1) AS __g1, arraySort(groupArrayIf((__t, __v0), isNotNull(__v0))) AS __a0 \
         FROM (SELECT __src.`series_id` AS __sid, __src.`time` AS __t, __src.`dc` AS \
         __k0, __src.`host` AS __k1, CAST(__src.`usage` AS Nullable(Float64)) AS __v0, \
         toUInt64(0) AS __ms FROM {table} AS __src WHERE __src.`time` >= toInt64(0) AND \
         (`host` != 'h0') AND __src.`series_id` NOT IN (3) AND __src.`series_id` NOT IN \
         (1,2) UNION ALL SELECT __src.`series_id` AS __sid, __src.`time` AS __t, \
         any(__src.`dc`) AS __k0, any(__src.`host`) AS __k1, CAST(argMaxIf(__src.`usage`, \
         bitOr(bitShiftLeft(__src.`__seq`, 32), toUInt64(__src.`__row`)), \
         isNotNull(__src.`usage`)) AS Nullable(Float64)) AS __v0, max(__src.`__seq`) AS \
         __ms FROM {table} AS __src WHERE __src.`time` >= toInt64(0) AND (`host` != 'h0') \
         AND __src.`series_id` NOT IN (3) AND __src.`series_id` IN (1,2) GROUP BY \
         __src.`series_id`, __src.`time`) GROUP BY __sid)) ARRAY JOIN __pc AS __p WHERE \
         __p.5 GROUP BY __sid, __p2, __p3"
    );
    let kinds = [
        ("k0".to_string(), ColumnKind::Tag),
        ("k1".to_string(), ColumnKind::Tag),
        ("c".to_string(), ColumnKind::Unsigned),
        ("w".to_string(), ColumnKind::Integer),
        ("v".to_string(), ColumnKind::Float),
        ("ms".to_string(), ColumnKind::Unsigned),
    ];
    let integrals = cluster
        .read_partials(
            &db,
            "cpu",
            &dc_columns,
            None,
            |_, _, _| integral.clone(),
            &kinds,
            1000,
        )
        .unwrap()
        .0
        .unwrap();
    assert!(integrals.num_rows() > 0);
    // A partial grouped by a `LowCardinality(String)` tag, read back as `String`.
    let by_tag = [
        ("dc".to_string(), ColumnKind::Tag),
        ("n".to_string(), ColumnKind::Unsigned),
    ];
    let grouped = cluster
        .read_partials(
            &db,
            "cpu",
            &dc_columns,
            None,
            |_, _, _| {
                format!(
                    "SELECT __src.`dc` AS __p0, count() AS __p1 FROM {table} AS __src \
                     WHERE __src.`dc` IN ('eu', 'us') GROUP BY __p0 ORDER BY __p0"
                )
            },
            &by_tag,
            10,
        )
        .unwrap()
        .0
        .unwrap();
    let dcs: Vec<&str> = grouped
        .column(0)
        .as_string::<i32>()
        .iter()
        .flatten()
        .collect();
    assert_eq!(dcs, ["eu", "us"]);
    // `top(usage, 2)`'s candidates (`storage`'s `top_candidates.rs`): each point merged
    // (only the rows of the series the index lists as rewritten grouped), ranked per group
    // and window, the best two and their ties sent, read in the table's place.
    let top = format!(
        "SELECT __p.2 AS `time`, __p.3 AS `series_id`, __p.4 AS `__seq`, toUInt32(0) AS `__row`, \
         __p.5 AS `host`, __p.6 AS `usage`, __p.7 AS `ok` FROM (\
         SELECT arrayReverseSort(x -> (x.1, -x.2), groupArray((assumeNotNull(__c1), __t, __sid, \
         __ms, __c0, __c1, __c2))) AS __s, __s[2] AS __n, if(length(__s) <= 2, __s, \
         arrayFilter(x -> x.1 > __n.1 OR (x.1 = __n.1 AND x.2 <= __n.2), __s)) AS __k FROM (\
         SELECT `series_id` AS __sid, `time` AS __t, `__seq` AS __ms, \
         CAST(`host` AS String) AS __c0, CAST(`usage` AS Nullable(Float64)) AS __c1, \
         CAST(`ok` AS Nullable(UInt8)) AS __c2 FROM {table} \
         WHERE 1 AND `time` >= toInt64(0) AND (`host` != 'h0') AND `series_id` NOT IN (1,2) \
         AND `series_id` NOT IN (3) UNION ALL \
         SELECT `series_id` AS __sid, `time` AS __t, max(`__seq`) AS __ms, \
         CAST(any(`host`) AS String) AS __c0, \
         CAST(argMaxIf(`usage`, (`__seq`, `__row`), isNotNull(`usage`)) AS Nullable(Float64)) AS __c1, \
         CAST(argMaxIf(`ok`, (`__seq`, `__row`), isNotNull(`ok`)) AS Nullable(UInt8)) AS __c2 \
         FROM {table} WHERE 1 AND `time` >= toInt64(0) AND (`host` != 'h0') \
         AND `series_id` NOT IN (1,2) AND `series_id` IN (3) \
         GROUP BY `series_id`, `time`) WHERE isNotNull(__c1) \
         GROUP BY (__t - (((__t - toInt64(0)) % toInt64(2000000000)) + toInt64(2000000000)) \
         % toInt64(2000000000))) ARRAY JOIN __k AS __p"
    );
    let picked = cluster
        .read_rows(
            &db,
            "cpu",
            &columns,
            RowSelection {
                min: 0,
                max: i64::MAX,
                condition: None,
                last_per_series: false,
                pointwise: None,
                whole_series: &[],
                series_of: None,
                source: Some(Source(&|_| top.clone())),
            },
            1000,
        )
        .unwrap()
        .unwrap();
    assert!(
        (2..=20).contains(&picked.num_rows()),
        "{}",
        picked.num_rows()
    );
    // Deletes, the nodes' progress, retention, drops.
    assert!(cluster
        .delete_rows(&db, "cpu", Some("`host` = 'h3'"))
        .unwrap());
    assert_eq!(cluster.publish_delivered(7).unwrap(), 1);
    assert_eq!(cluster.nodes_delivered().unwrap().get("newer-a"), Some(&7));
    assert!(!cluster.forget_node("newer-gone").unwrap());
    let now_ns = 10 * 86_400 * 1_000_000_000;
    let expired = cluster.expire(&db, 3600, now_ns).unwrap();
    assert_eq!(expired.partitions, 1, "{expired:?}");
    assert_eq!(cluster.list_drop(&db, "cpu", 100).unwrap(), 1);
    cluster.drop_table(&db, "cpu").unwrap();
    assert!(!cluster.has_table(&db, "cpu").unwrap());
    // Made again at once after its `DROP … SYNC`.
    cluster.deliver(e, &db, "cpu", &[part(4, 5)], 0).unwrap();
    assert_eq!(cluster.list_database_drop(&db, 200).unwrap(), 1);
    assert_eq!(
        cluster.confirm_database_drop("newer-a", &db, 200).unwrap(),
        1
    );
    assert!(cluster
        .all_database_lives()
        .unwrap()
        .unfinished_drop(&db)
        .is_some());
    cluster.drop_database_tables(&db).unwrap();
    assert_eq!(
        e.query_text(&format!(
            "SELECT count() FROM system.databases WHERE name = '__shard_{db}'"
        ))
        .unwrap()
        .trim(),
        "0"
    );

    // The replicated shard: its tables' definitions, each replica's, the retry's check of
    // what the replicas caught up with, the replicas' probe and repair.
    let rdb = database_name("newer_replicated");
    replicated
        .deliver(e, &rdb, "cpu", &[part(1, 10)], 0)
        .unwrap();
    let again = replicated
        .deliver(e, &rdb, "cpu", &[part(1, 10)], 1)
        .unwrap();
    assert_eq!(again.already_held, 10);
    replicated.repair_replicas();
    replicated.drop_database_tables(&rdb).unwrap();

    crate::folded_read::a_pushed_down_read_is_one_request_and_still_sees_another_nodes_rewrite(
        &shard,
    );
    let mut seen = shard.seen.lock().unwrap();
    let theirs = other.seen.lock().unwrap();
    seen.statements.extend(theirs.statements.iter().cloned());
    seen.refused.extend(theirs.refused.iter().cloned());
    assert!(seen.statements.iter().any(|s| s.ends_with(" SYNC")));
    for sent in [
        "ADD COLUMN `dc` LowCardinality(String)",
        "FROM system.parts",
        "splitByChar('_', _part)",
        "UNION ALL SELECT toUInt8(1)",
        "ENGINE = ReplicatedMergeTree(",
        "SHOW CREATE TABLE",
        "system.replicas",
    ] {
        assert!(seen.statements.iter().any(|s| s.contains(sent)), "{sent}");
    }
    // Refused only where the client asks about a table it then makes.
    let unexpected: Vec<&(String, String)> = seen
        .refused
        .iter()
        .filter(|(_, why)| !matches!(error_code(why), Some(60 | 81)))
        .collect();
    assert!(
        unexpected.is_empty(),
        "refused by 26.7:\n{}",
        unexpected
            .iter()
            .map(|(sql, why)| format!("{sql}\n  → {why}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    eprintln!(
        "{} statements run by the embedded {version}; {} refused as expected",
        seen.statements.len(),
        seen.refused.len()
    );
}
