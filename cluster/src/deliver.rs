//! Delivery of a flush job's batch to the shards its series belong to, each shard's rows in
//! one insert through the embedded engine's `url()`, exactly once (the module's doc, and
//! [`held`](crate::held)).

use std::collections::HashMap;
use std::time::Instant;

use arrow::array::{AsArray, RecordBatch};
use arrow::datatypes::UInt64Type;
use engine::quote_string;
use engine::table::{coalesce, ColumnKind, Part, SERIES_ID};
use engine::Engine;

use crate::{held, http, schema, Cluster, ClusterError, Delivered};

impl Cluster {
    /// Delivers `parts` of `db`.`measurement` to the shards their series belong to, each
    /// shard's rows in one insert. Parts with a sequence at or below `verify_up_to` may be
    /// on a shard already (an earlier attempt's outcome is unknown): each shard is asked
    /// first, and sent only the rest.
    pub fn deliver(
        &self,
        engine: &Engine,
        db: &str,
        measurement: &str,
        parts: &[Part],
        verify_up_to: u64,
    ) -> Result<Delivered, ClusterError> {
        let (batch, columns) = coalesce(parts)?;
        let per_shard = self.rows_per_shard(&batch)?;
        {
            // Per write (`__seq`), not per job: a retried job's parts may be grouped anew.
            let now = Instant::now();
            let mut waiting = self.waiting.lock();
            for (k, rows) in per_shard.iter().enumerate() {
                for (seq, n) in rows {
                    waiting[k]
                        .entry((db.to_string(), measurement.to_string(), *seq))
                        .or_insert((now, *n));
                }
            }
        }
        let mut sent = self.deliver_batch(
            engine,
            db,
            measurement,
            batch.clone(),
            &columns,
            &per_shard,
            parts,
            verify_up_to,
        );
        if sent.as_ref().is_err_and(ClusterError::is_missing_table) {
            // Dropped on a shard behind this node's back (an operator's `DROP TABLE`, a
            // `DROP MEASUREMENT` run on the cluster): made again, and the whole delivery
            // retried once, asking every shard what it already took of it.
            tracing::warn!(db, measurement, "a shard table disappeared: made again");
            self.forget_table(db, measurement);
            let every_part = parts.iter().map(|p| p.seq).max().unwrap_or(0);
            sent = self.deliver_batch(
                engine,
                db,
                measurement,
                batch,
                &columns,
                &per_shard,
                parts,
                verify_up_to.max(every_part),
            );
        }
        if let Err(e) = &sent {
            if !matches!(e, ClusterError::Unreachable { .. }) {
                // Refused: quarantined or retried as a new delivery, not a shard that lags.
                for (k, rows) in per_shard.iter().enumerate() {
                    self.no_longer_waiting(k, db, measurement, rows);
                }
            }
        }
        sent
    }

    /// [`deliver`](Self::deliver) of the coalesced `batch`, shard after shard; each shard
    /// that confirms is no longer waiting for its rows' writes.
    #[allow(clippy::too_many_arguments)]
    fn deliver_batch(
        &self,
        engine: &Engine,
        db: &str,
        measurement: &str,
        batch: RecordBatch,
        columns: &[(String, ColumnKind)],
        per_shard: &[HashMap<u64, u64>],
        parts: &[Part],
        verify_up_to: u64,
    ) -> Result<Delivered, ClusterError> {
        let suspects: Vec<u64> = parts
            .iter()
            .map(|p| p.seq)
            .filter(|s| *s <= verify_up_to)
            .collect();
        let mut out = Delivered {
            rows: vec![0; self.config.shards.len()],
            already_held: 0,
        };
        let scan = engine.arrow_scan(batch)?;
        let mut references = 0;
        // The same columns go to every shard.
        let (structure, names, select) = schema::insert_shape(&self.config.row_node(), columns);
        let insert = format!(
            "INSERT INTO {} ({names}) FORMAT Native",
            schema::table(db, measurement)
        );
        for (k, rows) in per_shard.iter().enumerate() {
            if rows.is_empty() {
                // The table and its columns on every shard, rows or not (a read of the
                // cluster asks each shard for every column), but a shard that cannot take
                // them now does not hold back the others' rows: it gets them with its own.
                if let Err(e) = self.ensure_table(k, db, measurement, columns) {
                    tracing::debug!(error = %e, "table not created on a shard without rows");
                }
                continue;
            }
            self.ensure_table(k, db, measurement, columns)?;
            let (r, held) = if suspects.is_empty() {
                (self.http.active(k), held::Held::default())
            } else {
                self.held_somewhere(k, db, measurement, &suspects, rows)?
            };
            let total: u64 = rows.values().sum();
            let send = total.saturating_sub(held.rows);
            out.already_held += held.rows;
            if send == 0 {
                self.confirmed(k, db, measurement, rows);
                continue;
            }
            scan.register(references + 1)?;
            let source = scan.table_sql(references);
            references += 1;
            // To the replica that was asked what it holds: another may not have fetched
            // all of it yet.
            let url = self.http.insert_url(k, r, &insert, send)?;
            let mut sql = format!(
                "INSERT INTO FUNCTION url({}, 'Native', {}) SELECT {select} FROM {source} WHERE {} = {k}",
                quote_string(&url),
                quote_string(&structure),
                self.map.shard_sql(),
            );
            if let Some(not_held) = held.not_held_sql() {
                sql.push_str(" AND ");
                sql.push_str(&not_held);
            }
            let sent = engine.connection().query(&sql, engine::OutputFormat::Null);
            // Sent or not, the rows may be there now.
            self.identity_delivered(k, db, measurement);
            if let Err(e) = sent {
                // A replica that no longer answers is unreachable (retried until it, or
                // another replica, is back), whatever words the engine's client found
                // for it; so is one whose ZooKeeper is gone.
                self.http.statement_on(k, r, "SELECT 1")?;
                let e = match e {
                    engine::EngineError::Query { message, .. } => {
                        // The engine's message may quote the URL, password included.
                        let message = self.http.redact(&message);
                        let code = crate::code::in_text(&message);
                        if http::replica_unavailable(code) {
                            ClusterError::Unreachable {
                                shard: k,
                                endpoint: self.http.replica_endpoint(k, r),
                                message,
                            }
                        } else {
                            ClusterError::Refused {
                                shard: k,
                                endpoint: self.http.replica_endpoint(k, r),
                                statement: "INSERT … FORMAT Native".into(),
                                message,
                                code,
                            }
                        }
                    }
                    other => other.into(),
                };
                self.http.saw(k, r, None, Some(&e));
                return Err(e);
            }
            self.confirmed(k, db, measurement, rows);
            out.rows[k] = send;
            metrics::counter!("chingest_cluster_rows_total", "shard" => k.to_string())
                .increment(send);
        }
        Ok(out)
    }

    /// Shard `k` holds `rows` (rows per `__seq`) of `db`.`measurement`.
    fn confirmed(&self, k: usize, db: &str, measurement: &str, rows: &HashMap<u64, u64>) {
        self.http.seen.lock()[k].confirmed = Some(Instant::now());
        self.no_longer_waiting(k, db, measurement, rows);
    }

    fn no_longer_waiting(&self, k: usize, db: &str, measurement: &str, rows: &HashMap<u64, u64>) {
        let mut waiting = self.waiting.lock();
        for seq in rows.keys() {
            waiting[k].remove(&(db.to_string(), measurement.to_string(), *seq));
        }
    }

    /// Per shard, how many of the batch's rows of each write (`__seq`) belong there.
    fn rows_per_shard(&self, batch: &RecordBatch) -> Result<Vec<HashMap<u64, u64>>, ClusterError> {
        let ids = batch
            .column_by_name(SERIES_ID)
            .and_then(|c| c.as_primitive_opt::<UInt64Type>())
            .ok_or_else(|| engine::EngineError::Arrow("batch has no series_id".into()))?;
        let seqs = batch
            .column_by_name(engine::table::SEQ)
            .and_then(|c| c.as_primitive_opt::<UInt64Type>())
            .ok_or_else(|| engine::EngineError::Arrow("batch has no __seq".into()))?;
        let mut out = vec![HashMap::new(); self.config.shards.len()];
        for (id, seq) in ids.values().iter().zip(seqs.values().iter()) {
            *out[self.map.shard_of(*id) as usize]
                .entry(*seq)
                .or_insert(0) += 1;
        }
        Ok(out)
    }
}
