//! Integration tests of the WAL: one binary, a module per concern, a temp dir per test.

mod backpressure;
mod commit;
mod crash;
mod dead_letter;
mod disk;
mod recovery;
mod util;
