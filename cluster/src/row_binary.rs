//! Reading the shards' `RowBinary` answers (a binary format every supported server speaks,
//! each column cast to the type the node reads it as): the reader, the Arrow column
//! builders a value lands in, and the bound on the rows of all shards' answers together.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanBuilder, Float64Builder, Int64Builder, StringBuilder, UInt64Builder,
};
use engine::table::ColumnKind;

use crate::{Cluster, ClusterError};

/// One column being built.
pub(crate) enum Builder {
    Tag(StringBuilder),
    Float(Float64Builder),
    Integer(Int64Builder),
    Unsigned(UInt64Builder),
    String(StringBuilder),
    Boolean(BooleanBuilder),
}

impl Builder {
    pub(crate) fn new(kind: ColumnKind) -> Builder {
        match kind {
            ColumnKind::Tag => Builder::Tag(StringBuilder::new()),
            ColumnKind::Float => Builder::Float(Float64Builder::new()),
            ColumnKind::Integer => Builder::Integer(Int64Builder::new()),
            ColumnKind::Unsigned => Builder::Unsigned(UInt64Builder::new()),
            ColumnKind::String => Builder::String(StringBuilder::new()),
            ColumnKind::Boolean => Builder::Boolean(BooleanBuilder::new()),
        }
    }

    /// Appends one value of a `RowBinary` answer of a column cast to its shard type
    /// ([`crate::schema::shard_type`]).
    pub(crate) fn read(&mut self, r: &mut RowBinary<'_>) -> Result<(), String> {
        match self {
            Builder::Tag(b) => b.append_value(r.string()?),
            Builder::String(b) => match r.present()? {
                true => b.append_value(r.string()?),
                false => b.append_null(),
            },
            Builder::Float(b) => match r.present()? {
                true => b.append_value(f64::from_bits(r.u64()?)),
                false => b.append_null(),
            },
            Builder::Integer(b) => match r.present()? {
                true => b.append_value(r.i64()?),
                false => b.append_null(),
            },
            Builder::Unsigned(b) => match r.present()? {
                true => b.append_value(r.u64()?),
                false => b.append_null(),
            },
            Builder::Boolean(b) => match r.present()? {
                true => b.append_value(r.take(1)?[0] != 0),
                false => b.append_null(),
            },
        }
        Ok(())
    }

    pub(crate) fn finish(self) -> ArrayRef {
        match self {
            Builder::Tag(mut b) | Builder::String(mut b) => Arc::new(b.finish()),
            Builder::Float(mut b) => Arc::new(b.finish()),
            Builder::Integer(mut b) => Arc::new(b.finish()),
            Builder::Unsigned(mut b) => Arc::new(b.finish()),
            Builder::Boolean(mut b) => Arc::new(b.finish()),
        }
    }
}

/// A `RowBinary` answer being read: little-endian numbers, strings as a LEB128 length and
/// the bytes, a nullable value as a null byte (1: null) then the value if not null.
pub(crate) struct RowBinary<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) at: usize,
}

impl<'a> RowBinary<'a> {
    pub(crate) fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.bytes.len());
        let end = end.ok_or_else(|| format!("cut short at byte {}", self.at))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    pub(crate) fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    pub(crate) fn i64(&mut self) -> Result<i64, String> {
        Ok(i64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    /// A nullable value's null byte: whether the value follows.
    pub(crate) fn present(&mut self) -> Result<bool, String> {
        match self.take(1)?[0] {
            0 => Ok(true),
            1 => Ok(false),
            b => Err(format!("null byte {b} at byte {}", self.at - 1)),
        }
    }

    pub(crate) fn string(&mut self) -> Result<&'a str, String> {
        let mut len = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.take(1)?[0];
            len |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                let bytes = self.take(usize::try_from(len).map_err(|e| e.to_string())?)?;
                return std::str::from_utf8(bytes).map_err(|e| e.to_string());
            }
        }
        Err(format!("string length too long at byte {}", self.at))
    }
}

impl Cluster {
    /// Shard `k`'s `RowBinary` answer could not be read as the statement's columns.
    pub(crate) fn unexpected_answer(&self, k: usize, message: String) -> ClusterError {
        ClusterError::Refused {
            shard: k,
            endpoint: self.http.endpoint(k),
            statement: "SELECT … FORMAT RowBinary".into(),
            message: format!("unexpected answer: {message}"),
            code: None,
        }
    }

    /// Reads every row of every shard's `RowBinary` answer (shard order) with `row`; how
    /// many there were. More than `max_rows` fail the read; an answer `row` cannot read is
    /// the shard's unexpected answer.
    pub(crate) fn each_row(
        &self,
        answers: &[Vec<u8>],
        max_rows: u64,
        mut row: impl FnMut(&mut RowBinary<'_>) -> Result<(), String>,
    ) -> Result<u64, ClusterError> {
        let mut rows = 0u64;
        for (k, answer) in answers.iter().enumerate() {
            let mut r = RowBinary {
                bytes: answer,
                at: 0,
            };
            while !r.done() {
                rows += 1;
                if rows > max_rows {
                    return Err(ClusterError::TooManyRows { max_rows });
                }
                row(&mut r).map_err(|message| self.unexpected_answer(k, message))?;
            }
        }
        Ok(rows)
    }
}

/// Appends `s` as a `RowBinary` string: its length (LEB128), its bytes.
pub(crate) fn write_string(out: &mut Vec<u8>, s: &str) {
    let mut len = s.len();
    loop {
        let b = (len & 0x7f) as u8;
        len >>= 7;
        if len == 0 {
            out.push(b);
            break;
        }
        out.push(b | 0x80);
    }
    out.extend_from_slice(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::write_string as string;

    #[test]
    fn row_binary_reads_every_kind_nulls_and_long_strings_and_refuses_a_cut_answer() {
        let long = "x".repeat(300); // a two-byte length
        let mut bytes = Vec::new();
        string(&mut bytes, &long);
        bytes.extend_from_slice(&[0]);
        bytes.extend_from_slice(&1.5f64.to_bits().to_le_bytes());
        bytes.extend_from_slice(&[1]); // a null integer
        bytes.extend_from_slice(&[0]);
        bytes.extend_from_slice(&u64::MAX.to_le_bytes());
        bytes.extend_from_slice(&[0]);
        string(&mut bytes, "é\t\n");
        bytes.extend_from_slice(&[0, 1]);
        let kinds = [
            ColumnKind::Tag,
            ColumnKind::Float,
            ColumnKind::Integer,
            ColumnKind::Unsigned,
            ColumnKind::String,
            ColumnKind::Boolean,
        ];
        let mut cols: Vec<Builder> = kinds.iter().map(|k| Builder::new(*k)).collect();
        let mut r = RowBinary {
            bytes: &bytes,
            at: 0,
        };
        for b in &mut cols {
            b.read(&mut r).unwrap();
        }
        assert!(r.done());
        let arrays: Vec<ArrayRef> = cols.into_iter().map(Builder::finish).collect();
        use arrow::array::{Array, AsArray};
        use arrow::datatypes::{Float64Type, Int64Type, UInt64Type};
        assert_eq!(arrays[0].as_string::<i32>().value(0), long);
        assert_eq!(arrays[1].as_primitive::<Float64Type>().value(0), 1.5);
        assert!(arrays[2].as_primitive::<Int64Type>().is_null(0));
        assert_eq!(arrays[3].as_primitive::<UInt64Type>().value(0), u64::MAX);
        assert_eq!(arrays[4].as_string::<i32>().value(0), "é\t\n");
        assert!(arrays[5].as_boolean().value(0));

        // Cut short, or a null byte that is neither 0 nor 1: an error, not a value.
        let mut cut = RowBinary {
            bytes: &bytes[..bytes.len() - 1],
            at: 0,
        };
        let mut cols: Vec<Builder> = kinds.iter().map(|k| Builder::new(*k)).collect();
        let failed = cols.iter_mut().try_for_each(|b| b.read(&mut cut));
        assert!(failed.unwrap_err().contains("cut short"));
        let mut bad = RowBinary {
            bytes: &[7, 0, 0, 0, 0, 0, 0, 0, 0],
            at: 0,
        };
        assert!(Builder::new(ColumnKind::Float)
            .read(&mut bad)
            .unwrap_err()
            .contains("null byte 7"));
    }
}
