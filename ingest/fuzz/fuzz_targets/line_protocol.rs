//! Line protocol never panics, and the parallel splitter yields exactly the sequential parser's
//! points and errors.
#![no_main]

use ingest::line_protocol::{parse_lines, parse_lines_parallel};
use ingest::{Catalog, Format, Ingestor, Limits, Precision};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let seq = parse_lines(data, Precision::Nanoseconds, 0);
    let par = parse_lines_parallel(data, Precision::Nanoseconds, 0, 16);
    assert_eq!(seq.points().len(), par.points().len());
    assert_eq!(seq.errors, par.errors);
    // Same points, not only the same count: the stitched chunks' spans (body offsets and
    // rebased side-buffer copies) must resolve to the same bytes.
    for (a, c) in seq.points().iter().zip(par.points()) {
        assert_eq!((a.time, a.series_id), (c.time, c.series_id));
        assert_eq!(seq.measurement(a), par.measurement(c));
        assert!(seq.tags_of(a).eq(par.tags_of(c)));
        assert!(seq.fields_of(a).eq(par.fields_of(c)));
    }
    let cat = Catalog::new(Limits::default());
    if let Ok(w) = Ingestor::write(&cat, "db", data, Format::LineProtocol, Precision::Seconds, 0) {
        let _ = w.error_message();
        let payload = w.encode_wal().expect("encode");
        ingest::wire::decode(&payload).expect("own payload decodes");
    }
});
