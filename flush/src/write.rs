//! [`FlushWrite`]: one committed request as the flusher receives it (from the
//! WAL, or replayed at start-up).

use arrow::array::RecordBatch;

/// One committed request as the flusher receives it: its database and one
/// batch per measurement (ingest's layout: `time` Int64 ns, `series_id`,
/// non-null Utf8 tags, nullable fields).
#[derive(Debug, Clone, Default)]
pub struct FlushWrite {
    /// chingest database.
    pub db: String,
    /// (measurement, batch) pairs.
    pub tables: Vec<(String, RecordBatch)>,
}

impl FlushWrite {
    /// Points in all tables.
    pub fn points(&self) -> u64 {
        self.tables.iter().map(|(_, b)| b.num_rows() as u64).sum()
    }

    /// Memory the batches hold until their INSERT (what the unflushed budget must count when
    /// the WAL payload is compressed smaller).
    pub fn memory_bytes(&self) -> u64 {
        self.tables
            .iter()
            .map(|(_, b)| b.get_array_memory_size() as u64)
            .sum()
    }
}
