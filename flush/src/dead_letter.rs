//! Dead letters: parts the engine refuses deterministically, set aside durably (through the
//! [`crate::FlushedLog`]) so the flushed watermark can pass them and every other table keeps
//! flowing. Nothing acknowledged is dropped: a dead letter keeps its batch and the engine's
//! error, and can be retried ([`crate::Flusher::retry`]) or discarded by an operator.

use std::io::Cursor;

use arrow::array::RecordBatch;
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;

use crate::error::{EngineError, Result};

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
