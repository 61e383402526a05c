//! One output document from a stream of blocks.
//!
//! The engine's streaming API formats every block as a document of its own:
//! with `JSON` each block is a whole `{"meta", "data", "rows", "statistics"}`
//! object, with `CSVWithNames` each block repeats the header, with
//! `ArrowStream` each block is a whole IPC stream (schema, batch, end marker).
//! Concatenated, they are not one answer. [`Stitcher`] turns the blocks back
//! into one document as they pass, without holding more than one block:
//! row formats pass through, `CSVWithNames`/`TabSeparatedWithNames` keep the
//! first header only, `JSON` keeps the first block's head and writes one
//! footer, `ArrowStream` is re-framed (not decoded) as one IPC stream.

use std::time::Instant;

use chdb_rust::format::OutputFormat;

/// The JSON format's framing, as the engine prints it.
const JSON_DATA_START: &str = "\"data\":\n\t[\n";
const JSON_DATA_END: &str = "\n\t],\n\n\t\"rows\": ";

/// Re-joins per-block documents into one; see the module doc.
pub(crate) enum Stitcher {
    /// Blocks concatenate as they are (row formats).
    Concat,
    /// Every block after the first starts with a header line to drop.
    SkipHeader { csv: bool, first: bool },
    Json {
        started: Instant,
        blocks: u64,
        rows: u64,
        any_row: bool,
    },
    /// The first block's schema message (kept to compare with the others').
    Arrow(Option<Vec<u8>>),
}

/// The Arrow IPC end-of-stream marker.
const ARROW_EOS: [u8; 8] = [0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0];

impl Stitcher {
    pub(crate) fn new(format: OutputFormat) -> Stitcher {
        match format {
            OutputFormat::CSVWithNames => Stitcher::SkipHeader {
                csv: true,
                first: true,
            },
            OutputFormat::TabSeparatedWithNames | OutputFormat::TabSeparatedRawWithNames => {
                Stitcher::SkipHeader {
                    csv: false,
                    first: true,
                }
            }
            OutputFormat::JSON => Stitcher::Json {
                started: Instant::now(),
                blocks: 0,
                rows: 0,
                any_row: false,
            },
            OutputFormat::ArrowStream => Stitcher::Arrow(None),
            _ => Stitcher::Concat,
        }
    }

    /// Appends the part of `block` that belongs in the one document to `out`.
    pub(crate) fn push(&mut self, block: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        match self {
            Stitcher::Concat => out.extend_from_slice(block),
            Stitcher::SkipHeader { csv, first } => {
                if *first {
                    *first = false;
                    out.extend_from_slice(block);
                } else {
                    let skip = if *csv {
                        csv_record_end(block)
                    } else {
                        block.iter().position(|b| *b == b'\n').map(|i| i + 1)
                    }
                    .ok_or("a block without a header line")?;
                    out.extend_from_slice(&block[skip..]);
                }
            }
            Stitcher::Json {
                blocks,
                rows,
                any_row,
                ..
            } => {
                let text = std::str::from_utf8(block).map_err(|e| e.to_string())?;
                let start = text
                    .find(JSON_DATA_START)
                    .ok_or("a JSON block without its data array")?
                    + JSON_DATA_START.len();
                let end = text
                    .rfind(JSON_DATA_END)
                    .ok_or("a JSON block without its row count")?;
                let after = &text[end + JSON_DATA_END.len()..];
                let n: u64 = after
                    .split(|c: char| !c.is_ascii_digit())
                    .next()
                    .and_then(|d| d.parse().ok())
                    .ok_or("a JSON block with an unreadable row count")?;
                let data = &text[start..end.max(start)];
                if *blocks == 0 {
                    out.extend_from_slice(&text.as_bytes()[..start]);
                }
                if !data.is_empty() {
                    if *any_row {
                        out.extend_from_slice(b",\n");
                    }
                    out.extend_from_slice(data.as_bytes());
                    *any_row = true;
                }
                *blocks += 1;
                *rows += n;
            }
            Stitcher::Arrow(schema) => {
                // Re-framed, not decoded (blocks may be compressed): the first
                // block without its end marker, the others without their
                // schema message and end marker.
                let head = arrow_first_message_len(block)
                    .ok_or("an Arrow block without a schema message")?;
                let body_end = block
                    .len()
                    .checked_sub(ARROW_EOS.len())
                    .filter(|&end| end >= head && block[end..] == ARROW_EOS)
                    .ok_or("an Arrow block without its end marker")?;
                match schema {
                    None => {
                        *schema = Some(block[..head].to_vec());
                        out.extend_from_slice(&block[..body_end]);
                    }
                    Some(first) if first[..] == block[..head] => {
                        out.extend_from_slice(&block[head..body_end]);
                    }
                    Some(_) => return Err("Arrow blocks with different schemas".into()),
                }
            }
        }
        Ok(())
    }

    /// Appends what closes the document (after the last block) to `out`.
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        match self {
            Stitcher::Concat | Stitcher::SkipHeader { .. } => {}
            Stitcher::Json {
                started,
                blocks,
                rows,
                ..
            } => {
                if *blocks == 0 {
                    // No block at all (an empty result): the engine's stream
                    // carries no header either, so the columns are unknown.
                    out.extend_from_slice(b"{\n\t\"meta\":\n\t[\n\t],\n\n\t\"data\":\n\t[\n");
                }
                out.extend_from_slice(
                    format!(
                        "{JSON_DATA_END}{rows},\n\n\t\"statistics\":\n\t{{\n\t\t\"elapsed\": {:.6}\n\t}}\n}}\n",
                        started.elapsed().as_secs_f64()
                    )
                    .as_bytes(),
                );
            }
            Stitcher::Arrow(schema) => {
                if schema.is_some() {
                    out.extend_from_slice(&ARROW_EOS);
                }
            }
        }
        Ok(())
    }
}

/// The length of the first encapsulated IPC message of `block` (the schema,
/// which has no body): continuation marker, 32-bit metadata length, metadata.
fn arrow_first_message_len(block: &[u8]) -> Option<usize> {
    let (head, len_at) = if block.get(..4)? == [0xFF; 4] {
        (8, 4)
    } else {
        (4, 0)
    };
    let len = i32::from_le_bytes(block.get(len_at..len_at + 4)?.try_into().ok()?);
    let total = head + usize::try_from(len).ok().filter(|&l| l > 0)?;
    (total <= block.len()).then_some(total)
}

/// Where the first CSV record of `block` ends (after its newline): quotes
/// toggle, a doubled quote toggles twice, a newline inside quotes is data.
fn csv_record_end(block: &[u8]) -> Option<usize> {
    let mut quoted = false;
    for (i, b) in block.iter().enumerate() {
        match b {
            b'"' => quoted = !quoted,
            b'\n' if !quoted => return Some(i + 1),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json_block(rows: &[u64]) -> String {
        let data: Vec<String> = rows
            .iter()
            .map(|r| format!("\t\t{{\n\t\t\t\"n\": {r}\n\t\t}}"))
            .collect();
        format!(
            "{{\n\t\"meta\":\n\t[\n\t\t{{\n\t\t\t\"name\": \"n\",\n\t\t\t\"type\": \"UInt64\"\n\t\t}}\n\t],\n\n\t\"data\":\n\t[\n{}\n\t],\n\n\t\"rows\": {},\n\n\t\"statistics\":\n\t{{\n\t\t\"elapsed\": 0.1,\n\t\t\"rows_read\": 0,\n\t\t\"bytes_read\": 0\n\t}}\n}}\n",
            data.join(",\n"),
            rows.len()
        )
    }

    #[test]
    fn json_blocks_become_one_document() {
        let mut s = Stitcher::new(OutputFormat::JSON);
        let mut out = Vec::new();
        s.push(json_block(&[1, 2]).as_bytes(), &mut out).unwrap();
        s.push(json_block(&[3]).as_bytes(), &mut out).unwrap();
        s.finish(&mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["rows"], 3);
        assert_eq!(v["data"][2]["n"], 3);
        assert_eq!(v["meta"][0]["name"], "n");

        let mut s = Stitcher::new(OutputFormat::JSON);
        let mut out = Vec::new();
        s.finish(&mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            (v["rows"].as_u64(), v["data"].as_array().unwrap().len()),
            (Some(0), 0)
        );
    }

    #[test]
    fn arrow_streams_become_one_stream() {
        use arrow::array::{Int64Array, RecordBatch};
        use arrow::ipc::reader::StreamReader;
        use arrow::ipc::writer::StreamWriter;
        use std::sync::Arc;
        let stream = |values: Vec<i64>| {
            let batch = RecordBatch::try_from_iter([(
                "n",
                Arc::new(Int64Array::from(values)) as arrow::array::ArrayRef,
            )])
            .unwrap();
            let mut w = StreamWriter::try_new(Vec::new(), &batch.schema()).unwrap();
            w.write(&batch).unwrap();
            w.finish().unwrap();
            w.into_inner().unwrap()
        };
        let mut s = Stitcher::new(OutputFormat::ArrowStream);
        let mut out = Vec::new();
        s.push(&stream(vec![1, 2]), &mut out).unwrap();
        s.push(&stream(vec![3]), &mut out).unwrap();
        s.finish(&mut out).unwrap();
        let rows: Vec<i64> = StreamReader::try_new(std::io::Cursor::new(out), None)
            .unwrap()
            .flat_map(|b| {
                let b = b.unwrap();
                let a = b
                    .column(0)
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .unwrap()
                    .clone();
                a.values().to_vec()
            })
            .collect();
        assert_eq!(rows, vec![1, 2, 3]);
        let mut s = Stitcher::new(OutputFormat::ArrowStream);
        assert!(s.push(b"not arrow", &mut Vec::new()).is_err());
    }

    #[test]
    fn csv_headers_are_kept_once_even_with_quoted_newlines() {
        let mut s = Stitcher::new(OutputFormat::CSVWithNames);
        let mut out = Vec::new();
        s.push(b"\"a\",\"b\"\"\nc\"\n1,2\n", &mut out).unwrap();
        s.push(b"\"a\",\"b\"\"\nc\"\n3,4\n", &mut out).unwrap();
        s.finish(&mut out).unwrap();
        assert_eq!(out, b"\"a\",\"b\"\"\nc\"\n1,2\n3,4\n");
    }
}
