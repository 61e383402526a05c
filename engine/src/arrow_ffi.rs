//! Arrow batches handed to the engine through the Arrow C Data Interface:
//! inserted ([`PooledConnection::insert_batch`]) or registered for reads to
//! scan ([`Engine::arrow_scan`], [`ArrowScan`]).
//!
//! With [`crate::exit`], the only module of this crate allowed `unsafe` code
//! (the crate root denies it elsewhere): the engine reads the batch through
//! raw pointers to FFI structs that must outlive every registration.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use arrow::array::{Array, RecordBatch, StructArray};
use arrow::ffi::{to_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use chdb_rust::arrow_stream::{arrow_stream_table_sql, ArrowArray, ArrowSchema};
use chdb_rust::format::OutputFormat;

use crate::error::{EngineError, Result};
use crate::pool::{Engine, Inner, InsertStats, PooledConnection};
use crate::quote::quote_ident;

impl Engine {
    /// `batch`, readable by this engine's statements as the table
    /// expressions [`ArrowScan::table_sql`] names once they are registered
    /// ([`ArrowScan::register`]); unregistered when the scan drops.
    pub fn arrow_scan(&self, batch: RecordBatch) -> Result<ArrowScan> {
        let struct_array = StructArray::from(batch);
        let (array, schema) =
            to_ffi(&struct_array.to_data()).map_err(|e| EngineError::Arrow(e.to_string()))?;
        Ok(ArrowScan {
            engine: self.inner.clone(),
            array: Box::new(array),
            schema: Box::new(schema),
            base: format!(
                "chingest_scan_{}",
                ARROW_TABLE_SEQ.fetch_add(1, Ordering::Relaxed)
            ),
            registered: AtomicUsize::new(0),
        })
    }
}

static ARROW_TABLE_SEQ: AtomicU64 = AtomicU64::new(0);

/// One Arrow batch registered with the engine under one name per reference
/// of a statement (the engine reads a registration once). The FFI structs
/// stay here, boxed, until every name is unregistered: the engine copies the
/// array struct at each read and never releases its buffers.
pub struct ArrowScan {
    engine: Arc<Inner>,
    array: Box<FFI_ArrowArray>,
    schema: Box<FFI_ArrowSchema>,
    base: String,
    registered: AtomicUsize,
}

impl ArrowScan {
    /// The table expression of reference `k` (`0..` the count registered).
    pub fn table_sql(&self, k: usize) -> String {
        arrow_stream_table_sql(&format!("{}_{k}", self.base))
    }

    /// Registers references `0..count` (those not registered yet).
    pub fn register(&self, count: usize) -> Result<()> {
        let guard = self.engine.scan_conn.lock();
        let conn = guard.as_ref().ok_or(EngineError::ShutDown)?;
        while self.registered.load(Ordering::Acquire) < count {
            // SAFETY: both pointers refer to the boxed FFI structs, which
            // outlive every registration (unregistered in `drop` first).
            let (schema, array) = unsafe {
                (
                    ArrowSchema::from_raw(&*self.schema as *const _ as *mut _),
                    ArrowArray::from_raw(&*self.array as *const _ as *mut _),
                )
            };
            let name = format!("{}_{}", self.base, self.registered.load(Ordering::Acquire));
            conn.register_arrow_array(&name, &schema, &array)
                .map_err(|e| EngineError::Arrow(e.to_string()))?;
            self.registered.fetch_add(1, Ordering::AcqRel);
        }
        Ok(())
    }
}

impl Drop for ArrowScan {
    fn drop(&mut self) {
        let guard = self.engine.scan_conn.lock();
        let Some(conn) = guard.as_ref() else {
            // Shut down: nothing reads the registry any more.
            return;
        };
        for k in 0..*self.registered.get_mut() {
            let name = format!("{}_{k}", self.base);
            if let Err(e) = conn.unregister_arrow_table(&name) {
                tracing::warn!(name, error = %e, "cannot unregister an Arrow scan");
            }
        }
    }
}

impl PooledConnection {
    /// Inserts `batch` into `table` through the Arrow C Data Interface: the
    /// batch is registered as an `ArrowStream` table function and read by one
    /// `INSERT … SELECT`, with columns matched by name and `settings` appended
    /// as a `SETTINGS` clause (e.g. `insert_deduplication_token`).
    pub fn insert_batch(
        &self,
        table: &str,
        batch: RecordBatch,
        settings: &[(&str, String)],
    ) -> Result<InsertStats> {
        if batch.num_rows() == 0 {
            return Ok(InsertStats {
                rows_written: 0,
                bytes_written: 0,
            });
        }
        let columns = batch
            .schema()
            .fields()
            .iter()
            .map(|f| quote_ident(f.name()))
            .collect::<Vec<_>>()
            .join(", ");
        let struct_array = StructArray::from(batch);
        let (ffi_array, ffi_schema): (FFI_ArrowArray, FFI_ArrowSchema) =
            to_ffi(&struct_array.to_data()).map_err(|e| EngineError::Arrow(e.to_string()))?;
        // SAFETY: both pointers refer to the FFI structs above, which outlive
        // the registration: the table function is unregistered before they drop.
        let (schema, array) = unsafe {
            (
                ArrowSchema::from_raw(&ffi_schema as *const _ as *mut _),
                ArrowArray::from_raw(&ffi_array as *const _ as *mut _),
            )
        };
        let name = format!(
            "chingest_batch_{}",
            ARROW_TABLE_SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let conn = self.conn();
        conn.register_arrow_array(&name, &schema, &array)
            .map_err(|e| EngineError::Arrow(e.to_string()))?;
        let mut sql = format!(
            "INSERT INTO {table} ({columns}) SELECT * FROM {}",
            arrow_stream_table_sql(&name)
        );
        if !settings.is_empty() {
            sql.push_str(" SETTINGS ");
            let parts: Vec<String> = settings.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            sql.push_str(&parts.join(", "));
        }
        let outcome = conn.query(&sql, OutputFormat::Null);
        let unregistered = conn.unregister_arrow_table(&name);
        drop(ffi_array);
        drop(ffi_schema);
        let result = outcome.map_err(|e| self.failed(&sql, e))?;
        unregistered.map_err(|e| {
            self.failed.store(true, Ordering::Release);
            EngineError::Arrow(e.to_string())
        })?;
        Ok(InsertStats {
            rows_written: result.rows_written(),
            bytes_written: result.bytes_written(),
        })
    }
}
