//! What a statement runs with (who runs it, a way to stop it) and what it
//! produced.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::access::ReadScope;

/// Who runs a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SqlAccess {
    /// Any statement but `SYSTEM …` and database lifecycle (`CREATE/DROP
    /// DATABASE` go through `/query`, so the catalog follows); still one
    /// statement, on a sandbox connection with the limits.
    Admin,
    /// One read-only statement, reading what the scope's role may read.
    Read(ReadScope),
}

/// Set by the caller to stop a statement (the client went away). Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct SqlCancel(Arc<AtomicBool>);

impl SqlCancel {
    /// A fresh, unset token.
    pub fn new() -> SqlCancel {
        SqlCancel::default()
    }
    /// Asks the statement to stop (idempotent).
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }
    /// Whether [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// What a streamed statement produced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SqlSummary {
    /// Blocks handed to the sink.
    pub chunks: u64,
    /// Bytes handed to the sink.
    pub bytes: u64,
}
