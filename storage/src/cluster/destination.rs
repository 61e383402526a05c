//! A ClickHouse cluster as the flusher's [`flush::Destination`]
//! (`[storage] engine = "clickhouse"`): each job's rows delivered to the shards
//! their series belong to, through the embedded engine, exactly once
//! ([`cluster::Cluster::deliver`] asks each shard what it holds of a retried
//! job). Here, not in either crate, so that flush does not know the cluster
//! nor the cluster the flusher (as [`crate::recovery::WalWatermark`] is the
//! WAL as the flusher's log).

use std::sync::Arc;
use std::time::Instant;

use cluster::{Cluster, ClusterError};
use engine::table::Part;
use engine::Engine;
use flush::{Destination, InsertSlots};

/// Flushed rows to a cluster's shards.
pub(crate) struct ClusterDestination {
    pub(crate) cluster: Arc<Cluster>,
    /// The cluster's client: each shard's rows go through its `url()` insert.
    pub(crate) engine: Engine,
}

impl Destination for ClusterDestination {
    fn write(
        &self,
        db: &str,
        measurement: &str,
        parts: &[Part],
        verify_up_to: u64,
        slots: Option<&InsertSlots>,
    ) -> engine::Result<()> {
        let _slot = slots.map(InsertSlots::acquire);
        let start = Instant::now();
        let done = self
            .cluster
            .deliver(&self.engine, db, measurement, parts, verify_up_to)
            .map_err(ClusterError::into_engine_error)?;
        let rows: u64 = done.rows.iter().sum();
        if done.already_held > 0 {
            tracing::info!(
                db,
                measurement,
                held = done.already_held,
                "retry: skipping rows the cluster already holds (exactly once)"
            );
        }
        engine::ingest_load::INGEST_LOAD.record(start.elapsed());
        metrics::histogram!("chingest_flush_batch_points").record(rows as f64);
        metrics::counter!("chingest_flush_points_total").increment(rows);
        Ok(())
    }

    /// Each shard is asked what it holds by the delivery itself.
    fn verifies_each_write(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use flush::classify::{classify, FailureClass};

    /// A shard's refusal, as 18.16 writes it (no name) relayed by the engine (whose own
    /// name ends it), is classified by the shard's code: a shard with too many parts is
    /// retried, never quarantined; a column the shard cannot take is quarantined.
    #[test]
    fn a_shard_s_refusal_is_classified_by_its_code() {
        let relay = |body: &str| {
            let message = format!(
                "Code: 86. DB::HTTPException: Received error from remote server /?query=INSERT. \
                 HTTP status code: 500 'Internal Server Error', body length: 100 bytes, body: \
                 '{body}'. (RECEIVED_ERROR_FROM_REMOTE_IO_SERVER)"
            );
            cluster::ClusterError::Refused {
                shard: 0,
                endpoint: "http://127.0.0.1:8123/".into(),
                statement: "INSERT … FORMAT Native".into(),
                code: cluster::server_error_code(&message),
                message,
            }
            .into_engine_error()
        };
        let busy = relay(
            "Code: 252, e.displayText() = DB::Exception: Too many parts (300). Merges are \
             processing significantly slower than inserts., e.what() = DB::Exception\n",
        );
        assert_eq!(classify(&busy), FailureClass::Transient, "{busy}");
        let bad = relay(
            "Code: 53. DB::Exception: Type mismatch for column usage. (TYPE_MISMATCH) \
             (version 24.8.4.13 (official build))\n",
        );
        assert_eq!(classify(&bad), FailureClass::Deterministic, "{bad}");
    }
}
