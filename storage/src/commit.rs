//! The write path below HTTP: [`Storage::prepare_write`] (parse, series, schema, Arrow,
//! WAL encoding: CPU only, on the caller's thread) and [`Storage::commit_write`] (one WAL
//! entry, acknowledged once durable; the WAL hands it to the flusher).

use crate::{BoxFuture, Prepared, Rejection, Storage, StorageError, WriteRequest};

/// A prepared write as [`Storage`] commits it.
#[derive(Debug)]
pub struct EncodedWrite {
    payload: Vec<u8>,
    meta: Vec<ingest::catalog::MetaRecord>,
    write: flush::FlushWrite,
    /// Held until the entry is queued (`gate.rs`).
    pass: crate::gate::Pass,
}

impl Storage {
    pub(crate) fn prepare_write(
        &self,
        req: WriteRequest<'_>,
    ) -> Result<Prepared<EncodedWrite>, StorageError> {
        // Before the parse touches the catalog: a measurement drop waits for this write to
        // be queued, or this write for the drop to finish.
        let pass = self.lifecycle.writes.enter();
        let pw = self.ingestor.prepare_retained(
            &self.catalog,
            req.db,
            req.body,
            req.format,
            req.precision,
            req.now_ns,
            self.oldest_retained_ns(req.db, req.now_ns),
        )?;
        let rejection = pw.error_message().map(|message| Rejection {
            outcome: pw.outcome(),
            message,
            lines: pw.line_errors.len() as u64,
            dropped: pw.dropped as u64,
        });
        let encode = std::time::Instant::now();
        let payload = if pw.points > 0 {
            pw.encode_wal_with(self.wal_lz4)
                .map_err(ingest::WriteError::Arrow)?
        } else {
            Vec::new()
        };
        metrics::histogram!("chingest_wal_encode_seconds").record(encode.elapsed().as_secs_f64());
        Ok(Prepared {
            points: pw.points as u64,
            payload_bytes: payload.len() as u64,
            rejection,
            write: EncodedWrite {
                payload,
                meta: pw.meta,
                write: flush::FlushWrite {
                    db: pw.db,
                    tables: pw
                        .tables
                        .into_iter()
                        .map(|t| (t.measurement, t.batch))
                        .collect(),
                },
                pass,
            },
        })
    }

    /// Points older than the database's retention are refused at the door, as
    /// InfluxDB does (the table's TTL deletes the rest as they age).
    fn oldest_retained_ns(&self, db: &str, now_ns: i64) -> Option<i64> {
        match self.catalog.retention_secs(db) {
            0 => None,
            secs => Some(
                now_ns.saturating_sub(
                    i64::try_from(secs)
                        .unwrap_or(i64::MAX)
                        .saturating_mul(1_000_000_000),
                ),
            ),
        }
    }

    pub(crate) fn commit_write(
        &self,
        prepared: Prepared<EncodedWrite>,
    ) -> BoxFuture<Result<(), StorageError>> {
        let EncodedWrite {
            payload,
            meta,
            write,
            pass,
        } = prepared.write;
        let points = prepared.points;
        if points == 0 && meta.is_empty() {
            return Box::pin(async { Ok(()) });
        }
        // Existence is checked again under the lifecycle lock, held until the entry is
        // queued: a write that passed the server's check before a DROP DATABASE but
        // reaches here after it is refused (404), so it can neither re-register the
        // database nor carry rows past the drop's fence. Entries queued before the drop
        // have sequences at or below the fence and are discarded by it.
        let _commits = self.lifecycle.commits.read();
        if !self.catalog.database_exists(&write.db) {
            // What this request's parse added to the catalog in memory for the dropped
            // database goes too (it was never made durable).
            let _ = self.catalog.drop_database(&write.db);
            let db = write.db;
            return Box::pin(async move { Err(StorageError::DatabaseNotFound { db }) });
        }
        let submitted = if points == 0 {
            // Catalog records without data (every point dropped): persist them alone.
            self.wal.put_meta(meta)
        } else {
            self.wal.submit(wal::Entry {
                payload,
                points,
                held_bytes: write.memory_bytes(),
                meta,
                attachment: write,
            })
        };
        // Queued (its sequence fixed) or refused: either way no longer half-way.
        drop(pass);
        match submitted {
            Ok(ticket) => Box::pin(async move {
                ticket.await?;
                Ok(())
            }),
            Err(e) => Box::pin(async move { Err(e.into()) }),
        }
    }
}
