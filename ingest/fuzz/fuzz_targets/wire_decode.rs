//! WAL payload decoding rejects garbage with an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ingest::wire::decode(data);
});
