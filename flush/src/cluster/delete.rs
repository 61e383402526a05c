//! Deleting rows on every shard (issue #25): `DELETE` and `DROP SERIES` on a cluster, once
//! the fence ([`super::nodes`]) says every node delivered what it acknowledged before.
//!
//! 18.16 deletes with a mutation (`ALTER TABLE … DELETE WHERE`), which rewrites the parts
//! that hold matching rows in the background; the statement returns at once. So each
//! shard's mutation is waited for (`system.mutations`, `is_done`) before the next shard's
//! begins and before the caller answers: the next query no longer sees the rows. Parts
//! inserted after a mutation began are not touched by it — the rows written after the
//! `DELETE` stay. Every shard must answer: a shard down fails the statement (the shards
//! already done stay done; running it again is harmless).

use std::time::{Duration, Instant};

use super::{schema, Cluster, ClusterError};
use crate::quote_string;

/// How long one shard's mutation may take before the statement gives up waiting (it goes
/// on in the background; running the statement again waits for it anew).
const MUTATION_WAIT: Duration = Duration::from_secs(120);

impl Cluster {
    /// Deletes the rows of `db`.`measurement` that meet `condition` (SQL over the shard
    /// table's columns: `time` as `Int64` nanoseconds, tags as `String`; `None`: every
    /// row) on every shard, and waits until each shard's mutation is done. `Ok(false)`: no
    /// shard has the table.
    pub fn delete_rows(
        &self,
        db: &str,
        measurement: &str,
        condition: Option<&str>,
    ) -> Result<bool, ClusterError> {
        let table = schema::table(db, measurement);
        let mut found = false;
        for k in 0..self.config.shards.len() {
            let exists = self.http.statement(
                k,
                &format!(
                    "SELECT count() FROM system.tables WHERE database = {} AND name = {} \
                     FORMAT TabSeparated",
                    quote_string(&schema::shard_database(db)),
                    quote_string(measurement)
                ),
            )?;
            if exists.trim() == "0" {
                continue;
            }
            found = true;
            self.http.statement(
                k,
                &format!(
                    "ALTER TABLE {table} DELETE WHERE {}",
                    condition.unwrap_or("1")
                ),
            )?;
            self.wait_mutations(k, db, measurement)?;
        }
        Ok(found)
    }

    /// Waits until shard `k` has no unfinished mutation of `db`.`measurement`.
    fn wait_mutations(&self, k: usize, db: &str, measurement: &str) -> Result<(), ClusterError> {
        let deadline = Instant::now() + MUTATION_WAIT;
        let sql = format!(
            "SELECT count() FROM system.mutations WHERE database = {} AND table = {} \
             AND is_done = 0 FORMAT TabSeparated",
            quote_string(&schema::shard_database(db)),
            quote_string(measurement)
        );
        let mut pause = Duration::from_millis(10);
        loop {
            if self.http.statement(k, &sql)?.trim() == "0" {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(ClusterError::Refused {
                    shard: k,
                    endpoint: self.config.shards[k].clone(),
                    statement: "ALTER TABLE … DELETE".into(),
                    message: format!(
                        "the delete did not finish within {} s (it goes on on the shard; run \
                         the statement again to wait for it)",
                        MUTATION_WAIT.as_secs()
                    ),
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(200));
        }
    }
}
