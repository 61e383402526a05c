//! [`FlushStatus`]: what the flusher is doing, as the coordinator keeps it.

/// What the flusher is doing, for /health and metrics.
#[derive(Debug, Clone, Default)]
pub struct FlushStatus {
    /// Points buffered or being inserted.
    pub pending_points: u64,
    /// Inserts running now.
    pub jobs_in_flight: usize,
    /// Failures since the last success.
    pub consecutive_failures: u64,
    /// The last failure's message, cleared by a success.
    pub last_error: Option<String>,
    /// Highest sequence whose whole prefix is in the engine.
    pub flushed_seq: u64,
    /// Points inserted since start.
    pub points_flushed: u64,
    /// Points set aside as dead letters (quarantined) since start.
    pub quarantined_points: u64,
}
