//! Dead letters: parts the engine refuses deterministically, set aside durably (through the
//! [`crate::FlushedLog`]) so the flushed watermark can pass them and every other table keeps
//! flowing. Nothing acknowledged is dropped: a dead letter keeps its batch and the engine's
//! error, and can be retried ([`crate::Flusher::retry`]) or discarded by an operator.

use std::io::Cursor;

use arrow::array::RecordBatch;
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;
use engine::{EngineError, Result};

/// One part the flusher could not insert: (database, measurement, WAL sequence), its batch in
/// ingest's layout, and why.
#[derive(Debug, Clone)]
pub struct DeadLetter {
    /// chingest database.
    pub db: String,
    /// Measurement (table).
    pub measurement: String,
    /// WAL sequence of the request the part came from.
    pub seq: u64,
    /// The part's rows, as the WAL entry carried them.
    pub batch: RecordBatch,
    /// The engine's error (or why the part could not be checked at replay).
    pub error: String,
}

impl DeadLetter {
    /// Points in the part.
    pub fn points(&self) -> u64 {
        self.batch.num_rows() as u64
    }
}

/// `batch` as one Arrow IPC stream.
pub fn encode_batch(batch: &RecordBatch) -> Result<Vec<u8>> {
    let err = |e: arrow::error::ArrowError| EngineError::Arrow(e.to_string());
    let mut out = Vec::new();
    let mut w = StreamWriter::try_new(&mut out, batch.schema_ref()).map_err(err)?;
    w.write(batch).map_err(err)?;
    w.finish().map_err(err)?;
    drop(w);
    Ok(out)
}

/// The batch of an Arrow IPC stream written by [`encode_batch`].
pub fn decode_batch(bytes: &[u8]) -> Result<RecordBatch> {
    let err = |e: arrow::error::ArrowError| EngineError::Arrow(e.to_string());
    let mut r = StreamReader::try_new(Cursor::new(bytes), None).map_err(err)?;
    match r.next() {
        Some(b) => b.map_err(err),
        None => Err(EngineError::Arrow("empty Arrow stream".into())),
    }
}

/// The rows of a dead letter's `batch` (ingest layout, written at `seq`) that `condition`
/// does not match. `condition` is SQL over a table's columns: `time`, `series_id`, `__seq`
/// and the tags in `tags` (one the batch lacks is `''`, as in the table). The engine
/// evaluates it over the batch's key and tag columns only: a dead letter's fields may be
/// what the engine refused.
pub fn rows_not_matching(
    engine: &engine::Engine,
    batch: &RecordBatch,
    seq: u64,
    tags: &[String],
    condition: &str,
) -> Result<RecordBatch> {
    let err = |e: arrow::error::ArrowError| EngineError::Arrow(e.to_string());
    let columns: Vec<(String, engine::table::ColumnKind)> = tags
        .iter()
        .map(|t| (t.clone(), engine::table::ColumnKind::Tag))
        .collect();
    let schema = engine::table::engine_schema(&columns);
    let keys = engine::table::align(batch, seq, &schema, &columns)?;
    let scan = engine.arrow_scan(keys)?;
    scan.register(1)?;
    let sql = format!(
        "SELECT `__row` FROM {} WHERE {condition}",
        scan.table_sql(0)
    );
    let out = engine.query(&sql, engine::OutputFormat::TabSeparated)?;
    let matched: std::collections::HashSet<usize> = String::from_utf8_lossy(&out)
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            l.parse::<usize>()
                .map_err(|e| EngineError::Arrow(format!("a row number {l:?}: {e}")))
        })
        .collect::<Result<_>>()?;
    let keep: arrow::array::BooleanArray = (0..batch.num_rows())
        .map(|i| Some(!matched.contains(&i)))
        .collect();
    arrow::compute::filter_record_batch(batch, &keep).map_err(err)
}
