//! The way the flusher's own seam fails: [`MarkError`] from the flushed log.
//! (The engine's failures are [`engine::EngineError`]; a bad setting is
//! [`engine::ConfigError`].)

/// A [`crate::FlushedLog`] could not record the flushed watermark. The
/// flusher logs it with the sequence and goes on: its next advance records a
/// later sequence, which covers this one. The engine already holds the rows,
/// so nothing is lost (a restart skips them by `__seq`).
#[derive(Debug, thiserror::Error)]
#[error("cannot record the flushed sequence: {source}")]
pub struct MarkError {
    /// Why, as the log reported it (e.g. a `wal::WalError`).
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

impl MarkError {
    /// Wraps the log's own error.
    pub fn new(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self {
            source: source.into(),
        }
    }
}
