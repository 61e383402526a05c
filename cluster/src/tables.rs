//! The tables on each shard as this node knows them: made (database, shard table, its
//! columns, the `Distributed` table over every shard's) before a delivery or read needs
//! them, remembered per shard so a delivery does not ask again, and forgotten when a shard
//! answers that one is gone.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use engine::table::ColumnKind;
use engine::{quote_ident, quote_string, unescape_tsv};

use crate::{http, schema, Cluster, ClusterError};

impl Cluster {
    /// Forgets what this node knew of `db`.`measurement` on every shard (its columns, its
    /// `Distributed` table): the next delivery checks and makes them again.
    pub(crate) fn forget_table(&self, db: &str, measurement: &str) {
        let key = (db.to_string(), measurement.to_string());
        for known in self.known.lock().iter_mut() {
            known.remove(&key);
        }
        for made in self.distributed_known.lock().iter_mut() {
            made.remove(&key);
        }
        self.forget_identity(db, Some(measurement));
    }

    /// Runs `sql`, a read of `db`.`measurement`, on shard `k` once the table and `columns`
    /// are there; a table dropped behind this node's back is made again and `sql` run once
    /// more (an empty table answers, not an error).
    pub(crate) fn read_table(
        &self,
        k: usize,
        db: &str,
        measurement: &str,
        columns: &[(String, ColumnKind)],
        sql: &str,
    ) -> Result<String, ClusterError> {
        self.read_table_with(k, db, measurement, columns, || self.http.statement(k, sql))
    }

    /// [`read_table`](Self::read_table) with `run` sending the read to shard `k`.
    fn read_table_with<T>(
        &self,
        k: usize,
        db: &str,
        measurement: &str,
        columns: &[(String, ColumnKind)],
        run: impl Fn() -> Result<T, ClusterError>,
    ) -> Result<T, ClusterError> {
        self.ensure_table(k, db, measurement, columns)?;
        match run() {
            Err(e) if e.is_missing_table() => {
                self.forget_table(db, measurement);
                self.ensure_table(k, db, measurement, columns)?;
                run()
            }
            answer => answer,
        }
    }

    /// A read of `db`.`measurement` (`run(k)` sends it to shard `k`) on every shard at once
    /// (one thread per shard: a read waits for the slowest shard, not for their sum); the
    /// answers in shard order, or the first shard's error.
    pub(crate) fn read_table_everywhere<T: Send>(
        &self,
        db: &str,
        measurement: &str,
        columns: &[(String, ColumnKind)],
        run: impl Fn(usize) -> Result<T, ClusterError> + Sync,
    ) -> Result<Vec<T>, ClusterError> {
        let shards = self.config.shards.len();
        let run = &run;
        if shards == 1 {
            return Ok(vec![self.read_table_with(
                0,
                db,
                measurement,
                columns,
                || run(0),
            )?]);
        }
        std::thread::scope(|scope| {
            let reads: Vec<_> = (0..shards)
                .map(|k| {
                    scope
                        .spawn(move || self.read_table_with(k, db, measurement, columns, || run(k)))
                })
                .collect();
            reads
                .into_iter()
                .map(|r| r.join().expect("a shard read does not panic"))
                .collect()
        })
    }

    /// Creates the database and table on shard `k` and adds the columns it lacks.
    pub(crate) fn ensure_table(
        &self,
        k: usize,
        db: &str,
        measurement: &str,
        columns: &[(String, ColumnKind)],
    ) -> Result<(), ClusterError> {
        let key = (db.to_string(), measurement.to_string());
        let missing = |known: &HashMap<String, ColumnKind>| {
            columns
                .iter()
                .filter(|(n, _)| !known.contains_key(n))
                .cloned()
                .collect::<Vec<_>>()
        };
        let settled = self.known.lock()[k]
            .get(&key)
            .filter(|known| missing(known).is_empty())
            .map(HashMap::len);
        if let Some(columns) = settled {
            self.ensure_distributed(k, db, measurement, columns);
            return Ok(());
        }
        let shard_db = schema::shard_database(db);
        let version = self.http.shard_version(k)?;
        let path = self
            .config
            .zookeeper_path
            .as_deref()
            .map(|root| schema::zookeeper_path(root, k, &shard_db, measurement));
        self.make_table(
            k,
            &shard_db,
            measurement,
            &schema::create_table(
                db,
                measurement,
                columns,
                self.partition_span_secs(db),
                &schema::engine("MergeTree", path.as_deref()),
                version,
            ),
        )?;
        let mut known = self.describe(k, &shard_db, measurement)?;
        for (name, kind) in columns {
            match known.get(name) {
                Some(have) if have == kind => {}
                Some(have) => {
                    http::failure(k, "type_conflict");
                    return Err(ClusterError::TypeConflict {
                        shard: k,
                        table: format!("{db}.{measurement}"),
                        column: name.clone(),
                        on_shard: schema::shard_type(*have).into(),
                        wanted: schema::shard_type(*kind).into(),
                    });
                }
                None => {
                    let added = self.http.statement(
                        k,
                        &schema::add_column(
                            &schema::table(db, measurement),
                            name,
                            schema::column_type(*kind, version),
                        ),
                    );
                    match added {
                        Ok(_) => {}
                        // Another node added it meanwhile: its type is checked below.
                        Err(ClusterError::Refused { message, .. })
                            if message.contains("already exists") => {}
                        Err(e) => return Err(e),
                    }
                    known = self.describe(k, &shard_db, measurement)?;
                    if known.get(name) != Some(kind) {
                        http::failure(k, "type_conflict");
                        return Err(ClusterError::TypeConflict {
                            shard: k,
                            table: format!("{db}.{measurement}"),
                            column: name.clone(),
                            on_shard: known
                                .get(name)
                                .map_or("missing", |c| schema::shard_type(*c))
                                .into(),
                            wanted: schema::shard_type(*kind).into(),
                        });
                    }
                }
            }
        }
        let columns = known.len();
        self.known.lock()[k].insert(key, known);
        self.ensure_distributed(k, db, measurement, columns);
        Ok(())
    }

    /// Makes the `Distributed` table over `db`.`measurement` on shard `k`, with every
    /// column the shard table has (`columns` user columns), when one is configured. Best
    /// effort: it serves users' own SQL, so a failure is logged and counted, and delivery
    /// goes on.
    fn ensure_distributed(&self, k: usize, db: &str, measurement: &str, columns: usize) {
        let Some(cluster) = &self.config.distributed else {
            return;
        };
        let key = (db.to_string(), measurement.to_string());
        match self.distributed_known.lock()[k].get(&key) {
            Some(Ok(n)) if *n == columns => return,
            Some(Err(failed)) if failed.elapsed() < Duration::from_secs(30) => return,
            _ => {}
        }
        let made = self.make_distributed(k, db, measurement, cluster);
        let state = match made {
            Ok(n) => Ok(n),
            Err(e) => {
                http::failure(k, "distributed_table");
                tracing::warn!(shard = k, db, measurement, error = %e,
                    "the Distributed table over a measurement could not be made (retried in 30 s)");
                Err(Instant::now())
            }
        };
        self.distributed_known.lock()[k].insert(key, state);
    }

    /// [`ensure_distributed`](Self::ensure_distributed)'s statements, on every replica of
    /// shard `k` that answers (each server keeps its own); the user columns the
    /// `Distributed` table has after them.
    fn make_distributed(
        &self,
        k: usize,
        db: &str,
        measurement: &str,
        cluster: &str,
    ) -> Result<usize, ClusterError> {
        let made = self.http.on_every_replica(k, |r| {
            self.make_distributed_on(k, r, db, measurement, cluster)
        })?;
        Ok(made.into_iter().min().unwrap_or(0))
    }

    /// [`make_distributed`](Self::make_distributed) on replica `r`.
    fn make_distributed_on(
        &self,
        k: usize,
        r: usize,
        db: &str,
        measurement: &str,
        cluster: &str,
    ) -> Result<usize, ClusterError> {
        self.http.statement_on(
            k,
            r,
            &format!("CREATE DATABASE IF NOT EXISTS {}", quote_ident(db)),
        )?;
        self.http
            .statement_on(k, r, &schema::create_distributed(db, measurement, cluster))?;
        let local = self.columns_on(k, r, &schema::shard_database(db), measurement)?;
        let mut have = self.describe_on(k, r, db, measurement)?;
        let table = schema::distributed_table(db, measurement);
        // Each column as the shard table has it (a tag `String` or `LowCardinality`).
        for (name, kind, ty) in &local {
            if have.contains_key(name) {
                continue;
            }
            match self
                .http
                .statement_on(k, r, &schema::add_column(&table, name, ty))
            {
                Ok(_) => {}
                Err(ClusterError::Refused { message, .. })
                    if message.contains("already exists") => {}
                Err(e) => return Err(e),
            }
            have.insert(name.clone(), *kind);
        }
        Ok(have.len())
    }

    /// The user columns of `database`.`table` on shard `k` (a shard table, in
    /// `__shard_<db>`, or the `Distributed` table over it).
    fn describe(
        &self,
        k: usize,
        database: &str,
        measurement: &str,
    ) -> Result<HashMap<String, ColumnKind>, ClusterError> {
        self.http
            .on_some_replica(k, |r| self.describe_on(k, r, database, measurement))
    }

    /// [`describe`](Self::describe) on replica `r`.
    fn describe_on(
        &self,
        k: usize,
        r: usize,
        database: &str,
        measurement: &str,
    ) -> Result<HashMap<String, ColumnKind>, ClusterError> {
        Ok(self
            .columns_on(k, r, database, measurement)?
            .into_iter()
            .map(|(name, kind, _)| (name, kind))
            .collect())
    }

    /// The user columns of `database`.`table` on replica `r` of shard `k`: name, kind and
    /// type as the server has it.
    fn columns_on(
        &self,
        k: usize,
        r: usize,
        database: &str,
        measurement: &str,
    ) -> Result<Vec<(String, ColumnKind, String)>, ClusterError> {
        let answer = self.http.statement_on(
            k,
            r,
            &format!(
                "SELECT name, type FROM system.columns WHERE database = {} AND table = {}",
                quote_string(database),
                quote_string(measurement)
            ),
        )?;
        Ok(answer
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .filter(|(n, _)| !matches!(*n, "time" | "series_id" | "__node" | "__seq" | "__row"))
            .filter_map(|(n, t)| {
                let t = unescape_tsv(t);
                Some((unescape_tsv(n), schema::kind_of(&t)?, t))
            })
            .collect())
    }
}
