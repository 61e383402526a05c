//! WAL payload of one write request (the WAL record adds a CRC32 around it).
//!
//! ```text
//! payload  = magic "CHIW" | version u8 (=1) | u32le len(db) db
//!            | u32le n_measurements
//!            | n × ( u32le len(name) name | u64le len(ipc) ipc )
//! ipc      = Arrow IPC *stream* (schema + one record batch) of the measurement's batch,
//!            its buffers LZ4-framed when the writer asked for it ([`encode_with`]; the IPC
//!            message says so, so [`decode`] reads both kinds without a version change)
//! ```
//!
//! [`decode`] validates every length against the bytes left before slicing (nothing is
//! allocated from an untrusted length), decodes IPC from memory, and turns any malformed input —
//! including a panic inside the Arrow decoder — into a [`WireError`].

use std::panic::{catch_unwind, AssertUnwindSafe};

use arrow::buffer::Buffer;
use arrow::datatypes::DataType;
use arrow::error::ArrowError;
use arrow::ipc::reader::StreamDecoder;
use arrow::ipc::writer::{IpcWriteOptions, StreamWriter};
use arrow::ipc::CompressionType;

use crate::batch::MeasurementBatch;
use crate::error::WireError;

/// First bytes of every payload.
pub const MAGIC: &[u8; 4] = b"CHIW";
/// Current payload version.
pub const VERSION: u8 = 1;

/// A decoded payload.
#[derive(Debug, Clone)]
pub struct DecodedWrite {
    /// Database.
    pub db: String,
    /// One batch per measurement.
    pub tables: Vec<MeasurementBatch>,
}

impl DecodedWrite {
    /// Total rows over all tables.
    pub fn points(&self) -> usize {
        self.tables.iter().map(|t| t.batch.num_rows()).sum()
    }
}

/// Encodes the WAL payload of a write, uncompressed.
pub fn encode(db: &str, tables: &[MeasurementBatch]) -> Result<Vec<u8>, ArrowError> {
    encode_with(db, tables, false)
}

/// Encodes the WAL payload of a write; `lz4`: the Arrow buffers LZ4-framed
/// (fewer bytes for the WAL writer, RocksDB's flushes and compactions, more
/// CPU here, on the caller's thread).
pub fn encode_with(
    db: &str,
    tables: &[MeasurementBatch],
    lz4: bool,
) -> Result<Vec<u8>, ArrowError> {
    let options = if lz4 {
        IpcWriteOptions::default().try_with_compression(Some(CompressionType::LZ4_FRAME))?
    } else {
        IpcWriteOptions::default()
    };
    let mut out = Vec::with_capacity(
        64 + tables
            .iter()
            .map(|t| t.batch.get_array_memory_size() + 1024)
            .sum::<usize>(),
    );
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    put_bytes32(&mut out, db.as_bytes())?;
    out.extend_from_slice(&len32(tables.len())?.to_le_bytes());
    for t in tables {
        put_bytes32(&mut out, t.measurement.as_bytes())?;
        let len_at = out.len();
        out.extend_from_slice(&0u64.to_le_bytes());
        let start = out.len();
        {
            let mut w =
                StreamWriter::try_new_with_options(&mut out, &t.batch.schema(), options.clone())?;
            w.write(&t.batch)?;
            w.finish()?;
        }
        let n = (out.len() - start) as u64;
        out[len_at..len_at + 8].copy_from_slice(&n.to_le_bytes());
    }
    Ok(out)
}

fn len32(n: usize) -> Result<u32, ArrowError> {
    u32::try_from(n).map_err(|_| ArrowError::InvalidArgumentError("length exceeds u32".into()))
}

fn put_bytes32(out: &mut Vec<u8>, b: &[u8]) -> Result<(), ArrowError> {
    out.extend_from_slice(&len32(b.len())?.to_le_bytes());
    out.extend_from_slice(b);
    Ok(())
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], WireError> {
        if self.b.len() - self.pos < n {
            return Err(WireError::Truncated {
                what,
                offset: self.pos,
            });
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u32(&mut self, what: &'static str) -> Result<u32, WireError> {
        let s = self.take(4, what)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn u64(&mut self, what: &'static str) -> Result<u64, WireError> {
        let s = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(u64::from_le_bytes(a))
    }
    fn str32(&mut self, what: &'static str) -> Result<String, WireError> {
        let at = self.pos;
        let n = self.u32(what)? as usize;
        let s = self.take(n, what)?;
        String::from_utf8(s.to_vec()).map_err(|_| WireError::Utf8 { what, offset: at })
    }
}

/// Decodes a payload produced by [`encode`].
pub fn decode(payload: &[u8]) -> Result<DecodedWrite, WireError> {
    let mut r = Reader { b: payload, pos: 0 };
    if r.take(4, "magic").map_err(|_| WireError::BadMagic)? != MAGIC {
        return Err(WireError::BadMagic);
    }
    let version = r.take(1, "version")?[0];
    if version != VERSION {
        return Err(WireError::UnsupportedVersion(version));
    }
    let db = r.str32("database name")?;
    let n = r.u32("measurement count")? as usize;
    // Each measurement needs at least 12 bytes of headers: bound the count before allocating.
    if n > (payload.len() - r.pos) / 12 {
        return Err(WireError::Truncated {
            what: "measurement list",
            offset: r.pos,
        });
    }
    let mut tables = Vec::with_capacity(n);
    for _ in 0..n {
        let measurement = r.str32("measurement name")?;
        let at = r.pos;
        let len = r.u64("ipc length")?;
        let len = usize::try_from(len).map_err(|_| WireError::Truncated {
            what: "ipc stream",
            offset: at,
        })?;
        let ipc = r.take(len, "ipc stream")?;
        let batch = decode_ipc(ipc).map_err(|reason| WireError::Arrow {
            measurement: measurement.clone(),
            reason,
        })?;
        tables.push(MeasurementBatch { measurement, batch });
    }
    if r.pos != payload.len() {
        return Err(WireError::TrailingBytes(payload.len() - r.pos));
    }
    Ok(DecodedWrite { db, tables })
}

fn decode_ipc(ipc: &[u8]) -> Result<arrow::record_batch::RecordBatch, String> {
    let result = catch_unwind(AssertUnwindSafe(|| -> Result<_, ArrowError> {
        let mut decoder = StreamDecoder::new();
        let mut buf = Buffer::from(ipc);
        let mut batch = None;
        while !buf.is_empty() {
            match decoder.decode(&mut buf)? {
                Some(b) if batch.is_none() => batch = Some(b),
                Some(_) => return Err(ArrowError::IpcError("more than one record batch".into())),
                None => {}
            }
        }
        decoder.finish()?;
        let batch = batch.ok_or_else(|| ArrowError::IpcError("no record batch".into()))?;
        batch
            .columns()
            .iter()
            .try_for_each(|c| c.to_data().validate_full())?;
        Ok(batch)
    }));
    let batch = match result {
        Ok(r) => r.map_err(|e| e.to_string())?,
        Err(_) => return Err("arrow decoder panicked on malformed input".into()),
    };
    let s = batch.schema();
    let ok = s.fields().len() >= 2
        && s.field(0).name() == "time"
        && s.field(0).data_type() == &DataType::Int64
        && s.field(1).name() == "series_id"
        && s.field(1).data_type() == &DataType::UInt64;
    if !ok {
        return Err("batch does not start with time Int64, series_id UInt64".into());
    }
    Ok(batch)
}
