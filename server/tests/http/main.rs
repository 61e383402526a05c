//! HTTP-level tests against the real `chingest` binary: each test spawns its
//! own server process (one chDB engine per process) on a temp data dir and a
//! free port, and talks to it with a blocking client or raw sockets.

mod util;

mod auth;
mod cli;
mod limits;
mod python;
mod shutdown;
mod telegraf;
mod write;
