//! Both msgpack parsers never panic and never allocate by untrusted lengths.
#![no_main]

use ingest::msgpack::{parse_columnar, parse_rows};
use ingest::Precision;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = parse_rows(data, Precision::Nanoseconds, 0);
    let _ = parse_columnar(data, Precision::Nanoseconds, 0);
});
