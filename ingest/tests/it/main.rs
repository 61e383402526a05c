//! Integration tests of the ingest crate (one binary; a module per area).

mod catalog;
mod door;
mod line_protocol;
mod msgpack;
mod roundtrip;
mod util;
mod wire;
mod write;
