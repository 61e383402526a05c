//! `chingest backup`: see the module doc of [`super`].

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::Path;

use flate2::write::GzEncoder;
use influxql::quote_ident;
use serde_json::Value;

use super::lp::{self, FieldType, Unwritable};
use super::sign::{self, Key, SIGNATURE_FILE};
use super::verify::file_sha256;
use super::{
    column, rows, BackupError, Client, DataFile, DatabaseBackup, Manifest, PolicyBackup, Target,
    VERSION,
};

/// The users' file in a backup.
const USERS_FILE: &str = "users.json";

/// What a backup holds.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BackupSummary {
    /// InfluxQL users backed up.
    pub users: Option<usize>,
    /// Why the users are not in it.
    pub users_left_out: Option<String>,
    /// Databases.
    pub databases: usize,
    /// Data files (one per policy and measurement with points).
    pub files: usize,
    /// Points written to them.
    pub points: u64,
    /// Points line protocol cannot hold (a name with a newline), left out.
    pub skipped: u64,
    /// Whether the manifest was signed.
    pub signed: bool,
}

/// Backs up the target's databases into `dir` (created; the manifest is written last, so
/// an interrupted backup has none and cannot be restored), `page_rows` points per query;
/// signed with `key` when given ([`super::sign`]).
pub fn backup(
    target: Target,
    dir: &Path,
    page_rows: usize,
    key: Option<&Key>,
) -> Result<BackupSummary, BackupError> {
    // `--start`/`--end`: InfluxQL time conditions, as `influxd backup -start/-end` bound.
    let range: Vec<String> = [
        target
            .start
            .as_ref()
            .map(|t| format!("time >= {}", influxql::quote_string(t))),
        target
            .end
            .as_ref()
            .map(|t| format!("time < {}", influxql::quote_string(t))),
    ]
    .into_iter()
    .flatten()
    .collect();
    let client = Client::new(target)?;
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| BackupError::Io {
            path: path.clone(),
            source,
        }
    };
    std::fs::create_dir_all(dir.join("data")).map_err(io(dir))?;
    let mut summary = BackupSummary::default();
    let cqs = client.query("SHOW CONTINUOUS QUERIES", None, None)?;
    let mut manifest = Manifest {
        version: VERSION,
        server_version: client.version()?,
        databases: Vec::new(),
        users: None,
        users_sha256: None,
    };
    match client.users()? {
        Ok(body) => {
            let path = dir.join(USERS_FILE);
            crate::durable::replace(&path, &body).map_err(io(&path))?;
            summary.users = serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|v| v["users"].as_array().map(Vec::len));
            manifest.users = Some(USERS_FILE.into());
            manifest.users_sha256 = Some(sign::sha256(&body));
        }
        Err(why) => summary.users_left_out = Some(why),
    }
    let databases = column(&rows(&client.query("SHOW DATABASES", None, None)?), 0);
    for db in databases.iter().filter(|d| client.wanted(d)) {
        let policies: Vec<PolicyBackup> = rows(&client.query(
            &format!("SHOW RETENTION POLICIES ON {}", quote_ident(db)),
            None,
            None,
        )?)
        .into_iter()
        .map(|r| PolicyBackup {
            name: text(&r[0]),
            duration: text(&r[1]),
            shard_duration: text(&r[2]),
            default: r[4].as_bool().unwrap_or(false),
        })
        .collect();
        let continuous_queries = cqs["series"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s["name"] == db.as_str())
            .flat_map(|s| s["values"].as_array().cloned().unwrap_or_default())
            .filter_map(|r| {
                Some((
                    r.get(0)?.as_str()?.to_string(),
                    r.get(1)?.as_str()?.to_string(),
                ))
            })
            .collect();
        let mut backup = DatabaseBackup {
            name: db.clone(),
            policies: policies.clone(),
            continuous_queries,
            files: Vec::new(),
        };
        let on = quote_ident(db);
        let measurements = column(
            &rows(&client.query(&format!("SHOW MEASUREMENTS ON {on}"), None, None)?),
            0,
        );
        for m in &measurements {
            for p in &policies {
                // Tags and field types of this policy's measurement (InfluxDB answers per
                // policy; chingest for every policy of the database, a superset).
                let from = format!("ON {on} FROM {}.{}", quote_ident(&p.name), quote_ident(m));
                let tags: BTreeSet<String> = column(
                    &rows(&client.query(&format!("SHOW TAG KEYS {from}"), None, None)?),
                    0,
                )
                .into_iter()
                .collect();
                let fields: BTreeMap<String, FieldType> =
                    rows(&client.query(&format!("SHOW FIELD KEYS {from}"), None, None)?)
                        .iter()
                        .filter_map(|r| {
                            Some((
                                r.first()?.as_str()?.to_string(),
                                FieldType::parse(r.get(1)?.as_str()?)?,
                            ))
                        })
                        .collect();
                if fields.is_empty() {
                    continue;
                }
                let file = format!("data/{}.lp.gz", summary.files + 1);
                let path = dir.join(&file);
                let source = format!("{on}.{}.{}", quote_ident(&p.name), quote_ident(m));
                let shape = Shape {
                    measurement: m,
                    tags: &tags,
                    fields: &fields,
                };
                let (points, skipped) = export(&client, &source, &shape, &path, page_rows, &range)?;
                summary.skipped += skipped;
                if points == 0 {
                    std::fs::remove_file(&path).map_err(io(&path))?;
                    continue;
                }
                summary.files += 1;
                summary.points += points;
                backup.files.push(DataFile {
                    policy: p.name.clone(),
                    measurement: m.clone(),
                    file,
                    points,
                    sha256: file_sha256(&path).map_err(io(&path))?,
                });
            }
        }
        summary.databases += 1;
        manifest.databases.push(backup);
    }
    let path = dir.join("manifest.json");
    let body = serde_json::to_vec_pretty(&manifest).expect("the manifest serialises");
    // The signature before the manifest: a backup with a manifest is complete.
    let sig_path = dir.join(SIGNATURE_FILE);
    match key {
        Some(key) => {
            crate::durable::replace(&sig_path, key.sign(&body).as_bytes())
                .map_err(io(&sig_path))?;
        }
        // A signature left by an earlier backup into this directory would not match.
        None => match std::fs::remove_file(&sig_path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(io(&sig_path)(e));
            }
            _ => {}
        },
    }
    crate::durable::replace(&path, &body).map_err(io(&path))?;
    summary.signed = key.is_some();
    Ok(summary)
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

/// Which columns of a measurement are tags, and the fields' types.
struct Shape<'a> {
    measurement: &'a str,
    tags: &'a BTreeSet<String>,
    fields: &'a BTreeMap<String, FieldType>,
}

/// Every point of `source` into the gzipped file `path`, a page at a time: the points and
/// those left out.
///
/// The loop ends when a page is not full; a full page of one time moves on past that time.
fn export(
    client: &Client,
    source: &str,
    shape: &Shape<'_>,
    path: &Path,
    page_rows: usize,
    range: &[String],
) -> Result<(u64, u64), BackupError> {
    let io = |source| BackupError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::create(path).map_err(io)?;
    let mut gz = GzEncoder::new(
        std::io::BufWriter::new(file),
        flate2::Compression::default(),
    );
    let (mut points, mut skipped) = (0u64, 0u64);
    // Up to the last time there is when the export starts: points written meanwhile with
    // later times would otherwise keep a busy source's export going for ever.
    let last_query = format!("SELECT * FROM {source} ORDER BY time DESC LIMIT 1");
    let Some(until) = rows(&client.query(&last_query, None, None)?)
        .first()
        .and_then(|r| r.first())
        .and_then(Value::as_i64)
    else {
        gz.finish().map_err(io)?;
        return Ok((0, 0));
    };
    let until = format!("time <= {until}");
    let range: Vec<String> = range.iter().cloned().chain([until]).collect();
    let range = range.as_slice();
    // Pages in time order, by time alone (InfluxDB orders the points of one time differently
    // from one query to the next, so no OFFSET): a full page yields its points before its
    // last time, and the next page starts at that time; a page of one time is read whole.
    let mut after: Option<String> = None;
    loop {
        let bounds: Vec<&str> = after.iter().chain(range).map(String::as_str).collect();
        let condition = if bounds.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", bounds.join(" AND "))
        };
        let q = format!("SELECT * FROM {source}{condition} ORDER BY time ASC LIMIT {page_rows}");
        let (columns, mut page) = read(client, &q)?;
        let full = page.len() >= page_rows;
        let last = page.last().and_then(|r| r.first()).and_then(Value::as_i64);
        let first = page.first().and_then(|r| r.first()).and_then(Value::as_i64);
        let (columns, rows) = match (full, first, last) {
            (false, _, _) | (_, None, _) | (_, _, None) => (columns, page),
            (true, Some(first), Some(last)) if first == last => {
                after = Some(format!("time > {last}"));
                read(
                    client,
                    &format!("SELECT * FROM {source} WHERE time = {last}"),
                )?
            }
            (true, _, Some(last)) => {
                page.retain(|r| r.first().and_then(Value::as_i64) != Some(last));
                after = Some(format!("time >= {last}"));
                (columns, page)
            }
        };
        let mut buf = Vec::new();
        for row in &rows {
            let t = row.first().and_then(Value::as_i64).unwrap_or(0);
            let mut tags = Vec::new();
            let mut fields = Vec::new();
            for (c, v) in columns.iter().zip(row.iter()).skip(1) {
                if shape.tags.contains(c) {
                    if let Some(s) = v.as_str().filter(|s| !s.is_empty()) {
                        tags.push((c.as_str(), s));
                    }
                } else if let Some(ty) = shape.fields.get(c) {
                    fields.push((c.as_str(), *ty, v));
                }
            }
            match lp::line(&mut buf, shape.measurement, &tags, &fields, t) {
                Ok(()) => points += 1,
                Err(Unwritable::NoFields) => {}
                Err(why) => {
                    tracing::warn!(source, time = t, "point left out of the backup: {why:?}");
                    skipped += 1;
                }
            }
        }
        gz.write_all(&buf).map_err(io)?;
        if !full {
            break;
        }
    }
    let file = gz
        .finish()
        .and_then(|w| w.into_inner().map_err(|e| e.into_error()))
        .map_err(io)?;
    file.sync_all().map_err(io)?;
    Ok((points, skipped))
}

/// A query's columns and rows.
fn read(client: &Client, q: &str) -> Result<(Vec<String>, Vec<Vec<Value>>), BackupError> {
    let result = client.query(q, None, None)?;
    let columns = result["series"][0]["columns"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c.as_str().map(str::to_string))
        .collect();
    Ok((columns, rows(&result)))
}
