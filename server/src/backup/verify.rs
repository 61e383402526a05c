//! What a restore checks before it changes anything (issue #41): a backup is input from
//! whoever could write where backups are kept, and restore runs as an admin. The result is a
//! [`Plan`] of typed values — names, durations in ns, parsed continuous queries, canonical
//! file paths with their digests — from which restore renders every statement anew; no
//! text of the backup reaches the server as a statement.

use std::collections::BTreeSet;
use std::io::Read as _;
use std::path::{Component, Path, PathBuf};

use influxql::ast::{
    ContinuousQuery, CqStatement, MeasurementName, SelectStatement, Source, Statement,
};
use sha2::{Digest as _, Sha256};

use super::sign::{self, Key, SIGNATURE_FILE};
use super::{BackupError, DatabaseBackup, Manifest, PolicyBackup, VERSION};

/// A verified backup, ready to restore.
#[derive(Debug)]
pub(super) struct Plan {
    /// The databases to restore, in the manifest's order.
    pub(super) databases: Vec<DatabasePlan>,
    /// The users file, when the backup has one (its path, checked against its digest).
    pub(super) users: Option<PathBuf>,
    /// Whether the manifest's signature was checked.
    pub(super) signed: bool,
}

/// One database of a verified backup.
#[derive(Debug)]
pub(super) struct DatabasePlan {
    pub(super) name: String,
    pub(super) policies: Vec<PolicyPlan>,
    pub(super) continuous_queries: Vec<ContinuousQuery>,
    pub(super) files: Vec<FilePlan>,
}

/// One retention policy, typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PolicyPlan {
    pub(super) name: String,
    /// How long points are kept, seconds (0: forever).
    pub(super) duration_secs: u64,
    /// Shard group duration, ns (`None`: the server's default).
    pub(super) shard_duration_ns: Option<i64>,
    pub(super) default: bool,
}

/// One data file: where it is (canonical, inside the backup) and what it must hash to.
#[derive(Debug)]
pub(super) struct FilePlan {
    pub(super) policy: String,
    pub(super) path: PathBuf,
    pub(super) sha256: String,
}

/// Reads and checks the backup in `dir` for the databases `wanted` lets through: the
/// signature (when `key` is given), the version, every name, statement, duration and file.
pub(super) fn verify(
    dir: &Path,
    wanted: impl Fn(&str) -> bool,
    key: Option<&Key>,
) -> Result<Plan, BackupError> {
    let refused = BackupError::Refused;
    let path = dir.join("manifest.json");
    let bytes = std::fs::read(&path).map_err(|source| BackupError::Io {
        path: path.clone(),
        source,
    })?;
    if let Some(key) = key {
        let sig_path = dir.join(SIGNATURE_FILE);
        let sig = std::fs::read_to_string(&sig_path).map_err(|e| {
            refused(format!(
                "a key was given but the backup has no signature ({}: {e})",
                sig_path.display()
            ))
        })?;
        if !key.verify(&bytes, &sig) {
            return Err(refused(
                "the manifest's signature does not match the key: it was changed after it was signed, or signed with another key".into(),
            ));
        }
    }
    let manifest: Manifest = serde_json::from_slice(&bytes)
        .map_err(|e| BackupError::Manifest(format!("{}: {e}", path.display())))?;
    if manifest.version != VERSION {
        return Err(BackupError::Manifest(format!(
            "{}: version {} (this chingest reads {VERSION}; a backup of version 1 carries no digests of its files: take it again)",
            path.display(),
            manifest.version
        )));
    }
    let root = dir.canonicalize().map_err(|source| BackupError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let restored: BTreeSet<&str> = manifest
        .databases
        .iter()
        .map(|d| d.name.as_str())
        .filter(|d| wanted(d))
        .collect();
    let mut databases = Vec::new();
    let mut seen = BTreeSet::new();
    for db in manifest.databases.iter().filter(|d| wanted(&d.name)) {
        if !seen.insert(db.name.as_str()) {
            return Err(refused(format!("database {:?} is listed twice", db.name)));
        }
        databases.push(database(&root, db, &restored).map_err(refused)?);
    }
    let users = match (&manifest.users, &manifest.users_sha256) {
        (None, _) => None,
        (Some(file), Some(sha)) => Some(checked_file(&root, file, sha).map_err(refused)?),
        (Some(file), None) => {
            return Err(refused(format!("the users file {file:?} has no digest")));
        }
    };
    Ok(Plan {
        databases,
        users,
        signed: key.is_some(),
    })
}

fn database(
    root: &Path,
    db: &DatabaseBackup,
    restored: &BTreeSet<&str>,
) -> Result<DatabasePlan, String> {
    ingest::names::check_database(&db.name).map_err(|e| e.to_string())?;
    let on = |what: String| format!("database {:?}: {what}", db.name);
    let mut policies: Vec<PolicyPlan> = Vec::new();
    for p in &db.policies {
        let plan = policy(p).map_err(on)?;
        if policies.iter().any(|q| q.name == plan.name) {
            return Err(on(format!("policy {:?} is listed twice", p.name)));
        }
        policies.push(plan);
    }
    if policies.iter().filter(|p| p.default).count() > 1 {
        return Err(on("more than one default retention policy".into()));
    }
    let mut continuous_queries = Vec::new();
    for (name, text) in &db.continuous_queries {
        continuous_queries.push(continuous_query(&db.name, name, text, restored).map_err(on)?);
    }
    let mut files = Vec::new();
    for f in &db.files {
        if !policies.iter().any(|p| p.name == f.policy) {
            return Err(on(format!(
                "data file {:?} is of policy {:?}, which the backup does not list",
                f.file, f.policy
            )));
        }
        files.push(FilePlan {
            policy: f.policy.clone(),
            path: checked_file(root, &f.file, &f.sha256).map_err(on)?,
            sha256: f.sha256.clone(),
        });
    }
    Ok(DatabasePlan {
        name: db.name.clone(),
        policies,
        continuous_queries,
        files,
    })
}

/// A policy's durations as values: InfluxDB prints them as Go durations (`168h0m0s`, `0s`
/// for forever), which InfluxQL's duration syntax reads.
fn policy(p: &PolicyBackup) -> Result<PolicyPlan, String> {
    if p.name.is_empty() || p.name.chars().any(char::is_control) {
        return Err(format!("policy name {:?} is not a name", p.name));
    }
    let duration = |what: &str, text: &str| -> Result<i64, String> {
        match influxql::parse_duration(text) {
            Ok(ns) if ns >= 0 => Ok(ns),
            _ => Err(format!(
                "policy {:?}: {what} {text:?} is not a duration",
                p.name
            )),
        }
    };
    let keep = duration("duration", &p.duration)?;
    let shard = if p.shard_duration.is_empty() {
        None
    } else {
        Some(duration("shard duration", &p.shard_duration)?).filter(|ns| *ns > 0)
    };
    Ok(PolicyPlan {
        name: p.name.clone(),
        duration_secs: (keep / 1_000_000_000) as u64,
        shard_duration_ns: shard,
        default: p.default,
    })
}

/// A continuous query of database `db` named `name`: exactly one `CREATE CONTINUOUS QUERY`
/// of that name on that database, reading from and writing into databases this restore
/// restores.
fn continuous_query(
    db: &str,
    name: &str,
    text: &str,
    restored: &BTreeSet<&str>,
) -> Result<ContinuousQuery, String> {
    let bad = |why: &str| format!("continuous query {name:?} refused ({why}): {text:?}");
    let cq = match influxql::parse_statement(text) {
        Ok(Statement::ContinuousQuery(CqStatement::Create(cq))) => cq,
        Ok(_) => return Err(bad("not a CREATE CONTINUOUS QUERY")),
        Err(e) => return Err(bad(&format!("does not parse as one statement: {e}"))),
    };
    if cq.database != db || cq.name != name {
        return Err(bad(&format!(
            "it is {:?} on {:?}, listed as {name:?} on {db:?}",
            cq.name, cq.database
        )));
    }
    let mut databases = Vec::new();
    named_databases(&cq.select, &mut databases);
    if let Some(other) = databases.iter().find(|d| !restored.contains(d.as_str())) {
        return Err(bad(&format!(
            "it names database {other:?}, which this restore does not restore"
        )));
    }
    Ok(cq)
}

/// The databases a `SELECT` names in `INTO` and `FROM` (subqueries included).
fn named_databases(select: &SelectStatement, out: &mut Vec<String>) {
    let name = |m: &MeasurementName, out: &mut Vec<String>| out.extend(m.database.iter().cloned());
    if let Some(into) = &select.into {
        name(into, out);
    }
    for source in &select.sources {
        match source {
            Source::Measurement(m) => name(m, out),
            Source::Subquery(sub) => named_databases(sub, out),
        }
    }
}

/// `file` inside the backup directory `root` (canonical): a relative path of plain
/// components, no symbolic link out, a regular file, whose SHA-256 is `sha`.
fn checked_file(root: &Path, file: &str, sha: &str) -> Result<PathBuf, String> {
    let rel = Path::new(file);
    if file.is_empty()
        || rel.is_absolute()
        || !rel.components().all(|c| matches!(c, Component::Normal(_)))
    {
        return Err(format!(
            "file {file:?} is not a plain path inside the backup"
        ));
    }
    let full = root
        .join(rel)
        .canonicalize()
        .map_err(|e| format!("file {file:?}: {e}"))?;
    if !full.starts_with(root) {
        return Err(format!(
            "file {file:?} leads outside the backup (a symbolic link)"
        ));
    }
    if !full.is_file() {
        return Err(format!("file {file:?} is not a regular file"));
    }
    let got = file_sha256(&full).map_err(|e| format!("file {file:?}: {e}"))?;
    if !got.eq_ignore_ascii_case(sha) {
        return Err(format!(
            "file {file:?} is not the file that was backed up (SHA-256 {got}, the manifest says {sha}): truncated, damaged or replaced"
        ));
    }
    Ok(full)
}

/// The SHA-256 of a file's bytes, lowercase hex.
pub(super) fn file_sha256(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(sign::hex(&hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn restored() -> BTreeSet<&'static str> {
        ["d", "e"].into_iter().collect()
    }

    #[test]
    fn only_a_create_continuous_query_of_its_own_database_passes() {
        let ok = "CREATE CONTINUOUS QUERY c ON d BEGIN SELECT mean(v) INTO d.autogen.m_1h FROM e.autogen.m GROUP BY time(1h) END";
        let cq = continuous_query("d", "c", ok, &restored()).unwrap();
        assert_eq!(cq.to_string(), ok);
        for (name, text) in [
            ("c", "DROP DATABASE victim"),
            ("c", "CREATE USER mallory WITH PASSWORD 'x' WITH ALL PRIVILEGES"),
            ("c", &format!("{ok}; DROP DATABASE victim")),
            ("c", &ok.replace("ON d", "ON e")),
            ("other", ok),
            ("c", &ok.replace("INTO d.", "INTO victim.")),
            ("c", &ok.replace("FROM e.", "FROM victim.")),
            (
                "c",
                "CREATE CONTINUOUS QUERY c ON d BEGIN SELECT mean(v) INTO d.autogen.x FROM (SELECT v FROM victim.autogen.m) GROUP BY time(1h) END",
            ),
        ] {
            assert!(
                continuous_query("d", name, text, &restored()).is_err(),
                "{name} {text}"
            );
        }
    }

    #[test]
    fn durations_are_durations() {
        let p = |d: &str, s: &str| PolicyBackup {
            name: "p".into(),
            duration: d.into(),
            shard_duration: s.into(),
            default: false,
        };
        assert_eq!(
            policy(&p("168h0m0s", "24h0m0s")).unwrap(),
            PolicyPlan {
                name: "p".into(),
                duration_secs: 168 * 3600,
                shard_duration_ns: Some(24 * 3_600_000_000_000),
                default: false
            }
        );
        assert_eq!(policy(&p("0s", "1h0m0s")).unwrap().duration_secs, 0);
        for (d, s) in [
            ("1h; DROP DATABASE victim", "1h"),
            ("1h", "1h; DROP DATABASE victim"),
            ("1h", "1h DEFAULT"),
            ("-1h", "1h"),
            ("INF", "1h"),
        ] {
            assert!(policy(&p(d, s)).is_err(), "{d} {s}");
        }
    }

    #[test]
    fn files_stay_inside_the_backup() {
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("backup");
        std::fs::create_dir_all(root.join("data")).unwrap();
        std::fs::write(root.join("data/1.lp.gz"), b"inside").unwrap();
        std::fs::write(outer.path().join("outside.lp.gz"), b"outside").unwrap();
        std::os::unix::fs::symlink(
            outer.path().join("outside.lp.gz"),
            root.join("data/link.lp.gz"),
        )
        .unwrap();
        let root = root.canonicalize().unwrap();
        let inside = sign::sha256(b"inside");
        let outside = sign::sha256(b"outside");
        assert!(checked_file(&root, "data/1.lp.gz", &inside).is_ok());
        let abs = outer.path().join("outside.lp.gz");
        for (file, sha) in [
            ("../outside.lp.gz", &outside),
            ("data/../../outside.lp.gz", &outside),
            (abs.to_str().unwrap(), &outside),
            ("data/link.lp.gz", &outside),
            ("./data/1.lp.gz", &inside),
            ("", &inside),
            ("data", &inside),
            ("data/1.lp.gz", &outside),
        ] {
            assert!(checked_file(&root, file, sha).is_err(), "{file}");
        }
    }
}
