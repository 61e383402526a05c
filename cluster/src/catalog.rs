//! What the cluster holds, as every ingest node must see it (issue #25): the databases,
//! the measurements with their tag keys and field types, and the series, read from the
//! shards themselves rather than from one node's catalog, so that two nodes writing the
//! same databases agree on field types and answer `SHOW` and `SELECT` alike.
//!
//! A chingest table on a shard is one with the key columns (`__node` marks it: a cluster
//! may hold other tables) in a `__shard_<db>` database (the `Distributed` tables over
//! them, `<db>`.`<m>`, have the same columns and are not read here). A database exists for chingest once a `CREATE DATABASE` on
//! any node listed it in `__chingest.databases` on a shard (no user database can be
//! named `__chingest`: the `__` prefix is reserved), or once it holds a chingest table.

use std::collections::{BTreeMap, BTreeSet};

use engine::table::ColumnKind;
use engine::{quote_ident, quote_string, unescape_tsv};

use crate::meta::{create_databases_table, META_DATABASE};
use crate::{schema, Cluster, ClusterError, DatabaseLives, RetentionSetting};

/// The columns every chingest table on a shard has (not user columns).
const KEY_COLUMNS: [&str; 5] = ["time", "series_id", "__node", "__seq", "__row"];

/// The cluster's databases and tables, from the shards that answered.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ClusterCatalog {
    /// Databases created through chingest or holding its tables.
    pub databases: BTreeSet<String>,
    /// `(db, measurement)` → user columns (tags and typed fields), as the shards have
    /// them; a column two shards disagree on keeps the first shard's type.
    pub tables: BTreeMap<(String, String), BTreeMap<String, ColumnKind>>,
    /// Each database's newest retention setting over the shards that answered
    /// ([`crate::retention`]).
    pub retention: BTreeMap<String, RetentionSetting>,
    /// Shards that answered without a database's newest retention setting (they were down
    /// when it was set): `(shard, db)`.
    pub retention_behind: Vec<(usize, String)>,
    /// The newest drop of each (`db`, `measurement`) over the shards that answered (ms,
    /// the dropping node's clock).
    pub drops: BTreeMap<(String, String), u64>,
    /// Databases' dated creations and drops ([`crate::databases`]): a dropped database is
    /// in neither [`databases`](Self::databases) nor [`tables`](Self::tables).
    pub lives: DatabaseLives,
    /// Each live database's newest retention-policy document (`db` → (document, ms);
    /// `""`: its policies were dropped with it).
    pub policies: BTreeMap<String, (String, u64)>,
    /// Shards that did not answer (what they hold is missing above).
    pub unreachable: Vec<usize>,
}

/// Every table of chingest's metadata a catalog reads, newest per key, as rows of (kind,
/// a, b, n): one statement instead of one per table.
fn meta_union() -> String {
    format!(
        "SELECT 'databases' AS k, name AS a, '' AS b, toUInt64(0) AS n \
         FROM {META_DATABASE}.databases GROUP BY name \
         UNION ALL SELECT 'drops', db, measurement, max(at) FROM {META_DATABASE}.drops \
         GROUP BY db, measurement \
         UNION ALL SELECT 'created', name, '', max(at) FROM {META_DATABASE}.created GROUP BY name \
         UNION ALL SELECT 'applied', node, db, max(at) FROM {META_DATABASE}.drops_applied \
         GROUP BY node, db \
         UNION ALL SELECT 'policies', db, argMax(doc, at), max(at) FROM {META_DATABASE}.policies \
         GROUP BY db \
         UNION ALL SELECT 'retention', name, toString(argMax(secs, set_at)), max(set_at) \
         FROM {META_DATABASE}.retention GROUP BY name \
         FORMAT TabSeparated"
    )
}

/// Reads [`meta_union`]'s answer into `out` (what the per-table reads would have given).
fn read_meta_union(answer: &str, out: &mut ShardCatalog) {
    for line in answer.lines() {
        let cells: Vec<&str> = line.split('\t').collect();
        let [kind, a, b, n] = cells[..] else {
            continue;
        };
        let Ok(n) = n.parse::<u64>() else {
            continue;
        };
        let (a, b) = (unescape_tsv(a), unescape_tsv(b));
        let newest = |map: &mut BTreeMap<String, u64>, key: String| {
            let e = map.entry(key).or_insert(n);
            *e = (*e).max(n);
        };
        match kind {
            "databases" => {
                out.databases.insert(a);
            }
            "drops" => {
                if b.is_empty() {
                    newest(&mut out.lives.dropped, a.clone());
                }
                let e = out.drops.entry((a, b)).or_insert(n);
                *e = (*e).max(n);
            }
            "created" => newest(&mut out.lives.created, a),
            "applied" => {
                let e = out.lives.applied.entry((a, b)).or_insert(n);
                *e = (*e).max(n);
            }
            "policies" => {
                out.policies.insert(a, (b, n));
            }
            "retention" => {
                if let Ok(secs) = b.parse() {
                    out.retention
                        .insert(a, RetentionSetting { secs, set_at: n });
                }
            }
            _ => {}
        }
    }
}

/// One shard's part of a [`ClusterCatalog`].
#[derive(Default)]
struct ShardCatalog {
    databases: BTreeSet<String>,
    tables: BTreeMap<(String, String), BTreeMap<String, ColumnKind>>,
    drops: BTreeMap<(String, String), u64>,
    lives: DatabaseLives,
    policies: BTreeMap<String, (String, u64)>,
    retention: BTreeMap<String, RetentionSetting>,
}

/// A shard's answer; `None` where it does not answer (a shard down is not an error).
fn reachable<T>(answer: Result<T, ClusterError>) -> Result<Option<T>, ClusterError> {
    match answer {
        Ok(part) => Ok(Some(part)),
        Err(ClusterError::Unreachable { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

impl Cluster {
    /// The databases and tables on every shard that answers; a shard that does not is
    /// listed in [`ClusterCatalog::unreachable`], not an error. A shard that answers with
    /// an error fails the whole read (its tables would silently be missing). Every shard is
    /// read at once (a statement that needs a fresh catalog waits for the slowest shard,
    /// not for their sum).
    ///
    /// Consistent for a measurement dropped and made again: every shard's metadata (its
    /// listed drops) is read first, then every shard's tables. A drop is listed only once
    /// its table left every shard (`DROP MEASUREMENT`), so every table this read lists
    /// exists after every drop it lists: one made again since, which a node applying the
    /// drop learns from the same read (never the table the drop removed).
    pub fn catalog(&self) -> Result<ClusterCatalog, ClusterError> {
        let metas = self.on_every_shard(|k| reachable(self.read_shard_meta(k)));
        let tables = self.on_every_shard(|k| match &metas[k] {
            Ok(Some(_)) => reachable(self.read_shard_tables(k)),
            _ => Ok(None),
        });
        let read = metas.into_iter().zip(tables).map(|(meta, tables)| {
            Ok::<_, ClusterError>(match (meta?, tables?) {
                (Some(mut part), Some(tables)) => {
                    part.databases.extend(tables.databases);
                    part.tables = tables.tables;
                    Some(part)
                }
                _ => None,
            })
        });
        let mut out = ClusterCatalog::default();
        let mut per_shard = Vec::new();
        for (k, shard) in read.into_iter().enumerate() {
            let Some(shard) = shard? else {
                out.unreachable.push(k);
                continue;
            };
            out.databases.extend(shard.databases);
            for (key, columns) in shard.tables {
                let known = out.tables.entry(key).or_default();
                for (name, kind) in columns {
                    known.entry(name).or_insert(kind);
                }
            }
            for (key, at) in shard.drops {
                let newest = out.drops.entry(key).or_insert(at);
                *newest = (*newest).max(at);
            }
            out.lives.merge(shard.lives);
            for (db, (doc, at)) in shard.policies {
                match out.policies.get(&db) {
                    Some((_, newest)) if *newest >= at => {}
                    _ => {
                        out.policies.insert(db, (doc, at));
                    }
                }
            }
            per_shard.push((k, shard.retention));
        }
        // A dropped database is gone with its tables, measurement drops and retention (a
        // setting older than its newest drop belonged to the database that was dropped).
        let lives = out.lives.clone();
        out.databases.retain(|db| lives.alive(db));
        out.tables.retain(|(db, _), _| lives.alive(db));
        out.drops
            .retain(|(db, m), _| !m.is_empty() && lives.alive(db));
        // Policies listed before the database's newest drop went with it (then).
        for (db, (doc, at)) in out.policies.iter_mut() {
            if let Some(dropped) = lives.dropped.get(db).filter(|d| *at <= **d) {
                doc.clear();
                *at = *dropped;
            }
        }
        for (_, settings) in per_shard.iter_mut() {
            settings.retain(|db, s| {
                lives.alive(db) && lives.dropped.get(db).is_none_or(|d| s.set_at > *d)
            });
        }
        for (_, settings) in &per_shard {
            for (db, setting) in settings {
                let newest = out.retention.entry(db.clone()).or_insert(*setting);
                if setting.set_at > newest.set_at {
                    *newest = *setting;
                }
            }
        }
        for (k, settings) in &per_shard {
            for (db, newest) in &out.retention {
                if settings.get(db).is_none_or(|s| s.set_at < newest.set_at) {
                    out.retention_behind.push((*k, db.clone()));
                }
            }
        }
        Ok(out)
    }

    /// `read(k)` on every shard at once (one thread per shard); the answers in shard order.
    fn on_every_shard<T: Send>(&self, read: impl Fn(usize) -> T + Sync) -> Vec<T> {
        let read = &read;
        std::thread::scope(|scope| {
            let reads: Vec<_> = (0..self.config.shards.len())
                .map(|k| scope.spawn(move || read(k)))
                .collect();
            reads
                .into_iter()
                .map(|r| r.join().expect("a catalog read does not panic"))
                .collect()
        })
    }

    /// Shard `k`'s chingest tables and their columns (and the databases they are in).
    fn read_shard_tables(&self, k: usize) -> Result<ShardCatalog, ClusterError> {
        let mut out = ShardCatalog::default();
        let columns = self.http.statement(
            k,
            &format!(
                "SELECT database, table, name, type FROM system.columns \
                 WHERE (database, table) IN \
                 (SELECT database, table FROM system.columns \
                  WHERE name = '__node' AND startsWith(database, {})) \
                 FORMAT TabSeparated",
                quote_string(schema::SHARD_DATABASE_PREFIX)
            ),
        )?;
        for line in columns.lines() {
            let cells: Vec<&str> = line.split('\t').collect();
            let [db, table, name, ty] = cells[..] else {
                continue;
            };
            let (db, table, name) = (unescape_tsv(db), unescape_tsv(table), unescape_tsv(name));
            let Some(db) = db.strip_prefix(schema::SHARD_DATABASE_PREFIX) else {
                continue;
            };
            let db = db.to_string();
            out.databases.insert(db.clone());
            let columns = out.tables.entry((db, table)).or_default();
            if KEY_COLUMNS.contains(&name.as_str()) {
                continue;
            }
            if let Some(kind) = schema::kind_of(ty) {
                columns.entry(name).or_insert(kind);
            }
        }
        Ok(out)
    }

    /// What shard `k`'s metadata database lists (databases, drops, retention, policies).
    fn read_shard_meta(&self, k: usize) -> Result<ShardCatalog, ClusterError> {
        let mut out = ShardCatalog::default();
        // chingest's metadata in one statement where every table of it exists (made on
        // the first refresh that misses one), else a statement per table.
        let mut one = self.http.statement(k, &meta_union());
        if matches!(&one, Err(e) if e.is_missing_table()) {
            self.ensure_meta_tables(k)?;
            one = self.http.statement(k, &meta_union());
        }
        match one {
            Ok(answer) => read_meta_union(&answer, &mut out),
            Err(e) if e.is_missing_table() => {
                let names = self.read_meta(
                    k,
                    &format!(
                        "SELECT DISTINCT name FROM {META_DATABASE}.databases FORMAT TabSeparated"
                    ),
                )?;
                out.databases.extend(names.lines().map(unescape_tsv));
                out.drops = self.listed_drops(k)?;
                out.lives = self.database_lives(k)?;
                out.policies = self.policy_documents(k)?;
                out.retention = self.retention_settings(k)?;
            }
            Err(e) => return Err(e),
        }
        Ok(out)
    }

    /// Lists `db`, created at `at` (ms, this node's clock; [`crate::databases`]), on every
    /// shard that answers (and creates it there), so every node learns it; `Ok(n)`: how
    /// many shards took it (0: none answered, retry later).
    pub fn create_database(&self, db: &str, at: u64) -> Result<usize, ClusterError> {
        let mut took = 0;
        let [create_created, insert_created] = Self::created_statements(db, at);
        for k in 0..self.config.shards.len() {
            let done = self
                .http
                .every_replica(
                    k,
                    &format!(
                        "CREATE DATABASE IF NOT EXISTS {}",
                        quote_ident(&schema::shard_database(db))
                    ),
                )
                .and_then(|_| {
                    self.list_meta_on(
                        k,
                        &create_databases_table(),
                        &format!(
                            "INSERT INTO {META_DATABASE}.databases (name) VALUES ({})",
                            quote_string(db)
                        ),
                    )
                })
                .and_then(|()| self.list_meta_on(k, &create_created, &insert_created));
            match done {
                Ok(()) => took += 1,
                // Listed again at the next refresh; the refresh logs the outage once
                // (`ClusterSync`), not once per database every 2 s.
                Err(e @ ClusterError::Unreachable { .. }) => {
                    tracing::debug!(db, error = %e, "database not listed on a shard that is down");
                }
                Err(e) => return Err(e),
            }
        }
        Ok(took)
    }

    /// Whether any shard holds the table of one of `measurements` of `db` (one statement per
    /// shard, until one does): what a statement naming a measurement this node's catalog
    /// lacks asks before answering that there is none. A shard down is passed over (another
    /// may hold it); its error is returned only when no shard that answered holds one.
    pub fn holds_any_table(&self, db: &str, measurements: &[&str]) -> Result<bool, ClusterError> {
        if measurements.is_empty() {
            return Ok(false);
        }
        let names: Vec<String> = measurements.iter().map(|m| quote_string(m)).collect();
        let sql = format!(
            "SELECT count() FROM system.tables WHERE database = {} AND name IN ({}) \
             FORMAT TabSeparated",
            quote_string(&schema::shard_database(db)),
            names.join(", ")
        );
        let mut down = None;
        for k in 0..self.config.shards.len() {
            match self.http.statement(k, &sql) {
                Ok(answer) if answer.trim() != "0" => return Ok(true),
                Ok(_) => {}
                Err(e @ ClusterError::Unreachable { .. }) => down = Some(e),
                Err(e) => return Err(e),
            }
        }
        down.map_or(Ok(false), Err)
    }

    /// Whether any shard holds a row of `db`.`measurement`.
    pub fn has_rows(&self, db: &str, measurement: &str) -> Result<bool, ClusterError> {
        for k in 0..self.config.shards.len() {
            let answer = self.read_table(
                k,
                db,
                measurement,
                &[],
                &format!(
                    "SELECT count() FROM (SELECT 1 FROM {} LIMIT 1) FORMAT TabSeparated",
                    schema::table(db, measurement)
                ),
            )?;
            if answer.trim() != "0" {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The distinct combinations of `tag_keys`' values among the rows of
    /// `db`.`measurement` on every shard (a key a shard's rows lack reads as `''`), at most
    /// `max_rows` of them: what `SHOW SERIES` and `SHOW TAG VALUES` read.
    pub fn distinct_tags(
        &self,
        db: &str,
        measurement: &str,
        tag_keys: &[String],
        max_rows: u64,
    ) -> Result<BTreeSet<Vec<String>>, ClusterError> {
        let mut out = BTreeSet::new();
        if tag_keys.is_empty() {
            return Ok(out);
        }
        let columns: Vec<(String, ColumnKind)> = tag_keys
            .iter()
            .map(|k| (k.clone(), ColumnKind::Tag))
            .collect();
        let list: Vec<String> = tag_keys.iter().map(|k| quote_ident(k)).collect();
        let sql = format!(
            "SELECT DISTINCT {} FROM {} LIMIT {} FORMAT TabSeparated",
            list.join(", "),
            schema::table(db, measurement),
            max_rows.saturating_add(1)
        );
        let answers = self
            .read_table_everywhere(db, measurement, &columns, |k| self.http.statement(k, &sql))?;
        for (k, answer) in answers.iter().enumerate() {
            for line in answer.lines() {
                let values: Vec<String> = line.split('\t').map(unescape_tsv).collect();
                if values.len() != tag_keys.len() {
                    return Err(ClusterError::Refused {
                        shard: k,
                        endpoint: self.http.endpoint(k),
                        statement: "SELECT DISTINCT … FORMAT TabSeparated".into(),
                        message: format!("unexpected answer: row {line:?}"),
                        code: None,
                    });
                }
                out.insert(values);
                if out.len() as u64 > max_rows {
                    return Err(ClusterError::TooManyRows { max_rows });
                }
            }
        }
        Ok(out)
    }
}
