//! `chingest restore`: see the module doc of [`super`].

use std::io::BufRead as _;
use std::path::Path;

use influxql::quote_ident;

use super::{BackupError, Client, Manifest, Target, BODY_BYTES, VERSION};

/// What a restore did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RestoreSummary {
    /// Users added, and those the target had already (kept as they were).
    pub users: Option<(u64, u64)>,
    /// Databases.
    pub databases: usize,
    /// Points sent and acknowledged.
    pub points: u64,
    /// Writes the server refused (its text): their points are not restored.
    pub refused: Vec<String>,
}

/// Restores the backup in `dir` into the target (its databases, or those named).
pub fn restore(target: Target, dir: &Path) -> Result<RestoreSummary, BackupError> {
    let client = Client::new(target)?;
    let path = dir.join("manifest.json");
    let bytes = std::fs::read(&path).map_err(|source| BackupError::Io {
        path: path.clone(),
        source,
    })?;
    let manifest: Manifest = serde_json::from_slice(&bytes)
        .map_err(|e| BackupError::Manifest(format!("{}: {e}", path.display())))?;
    if manifest.version != VERSION {
        return Err(BackupError::Manifest(format!(
            "{}: version {} (this chingest reads {VERSION})",
            path.display(),
            manifest.version
        )));
    }
    let mut summary = RestoreSummary::default();
    for db in manifest.databases.iter().filter(|d| client.wanted(&d.name)) {
        restore_database(&client, dir, db, &mut summary)?;
    }
    // The users last: their privileges name the databases restored above.
    if let Some(file) = &manifest.users {
        let path = dir.join(file);
        let body = std::fs::read(&path).map_err(|source| BackupError::Io { path, source })?;
        summary.users = Some(client.restore_users(body)?);
    }
    Ok(summary)
}

/// One database of the backup: the database, its policies, points and continuous queries.
fn restore_database(
    client: &Client,
    dir: &Path,
    db: &super::DatabaseBackup,
    summary: &mut RestoreSummary,
) -> Result<(), BackupError> {
    {
        let on = quote_ident(&db.name);
        client.query(&format!("CREATE DATABASE {on}"), None, None)?;
        let mut autogen_kept = false;
        for p in &db.policies {
            let name = quote_ident(&p.name);
            let forever = p.duration == "0s";
            let duration = if forever { "INF" } else { p.duration.as_str() };
            if p.name == crate::retention::AUTOGEN {
                autogen_kept = true;
                client.query(
                    &format!("ALTER RETENTION POLICY {name} ON {on} DURATION {duration} SHARD DURATION {}", p.shard_duration),
                    None,
                    None,
                )?;
            } else {
                client.query(
                    &format!(
                        "CREATE RETENTION POLICY {name} ON {on} DURATION {duration} REPLICATION 1 SHARD DURATION {}",
                        p.shard_duration
                    ),
                    None,
                    None,
                )?;
            }
        }
        if let Some(p) = db.policies.iter().find(|p| p.default) {
            client.query(
                &format!(
                    "ALTER RETENTION POLICY {} ON {on} DEFAULT",
                    quote_ident(&p.name)
                ),
                None,
                None,
            )?;
        }
        for f in &db.files {
            let (points, refused) = send(client, &db.name, &f.policy, &dir.join(&f.file))?;
            summary.points += points;
            summary.refused.extend(refused);
        }
        if !autogen_kept {
            client.query(
                &format!("DROP RETENTION POLICY autogen ON {on}"),
                None,
                None,
            )?;
        }
        for (_, query) in &db.continuous_queries {
            client.query(query, None, None)?;
        }
        summary.databases += 1;
    }
    Ok(())
}

/// Writes one data file in bodies of at most [`BODY_BYTES`]: the points acknowledged and the
/// refusals.
fn send(
    client: &Client,
    db: &str,
    rp: &str,
    path: &Path,
) -> Result<(u64, Vec<String>), BackupError> {
    let io = |source| BackupError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut reader = std::io::BufReader::new(flate2::read::GzDecoder::new(file));
    let (mut points, mut refused) = (0u64, Vec::new());
    let mut body = Vec::with_capacity(BODY_BYTES);
    let mut lines = 0u64;
    let mut flush = |body: &mut Vec<u8>, lines: &mut u64| {
        if body.is_empty() {
            return;
        }
        match client.write(db, rp, std::mem::take(body)) {
            Ok(()) => points += *lines,
            Err(e) => refused.push(format!("{db}/{rp} ({}): {e}", path.display())),
        }
        *lines = 0;
    };
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(io)?;
        if n == 0 {
            break;
        }
        if body.len() + line.len() > BODY_BYTES {
            flush(&mut body, &mut lines);
        }
        body.extend_from_slice(&line);
        lines += 1;
    }
    flush(&mut body, &mut lines);
    Ok((points, refused))
}
