//! What `/health` shows of the cluster: each shard and replica as its last
//! request showed it ([`crate::Cluster::shard_statuses`]), and what one
//! delivery did.

/// One replica of a shard as its last request showed it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaStatus {
    /// Its endpoint.
    pub endpoint: String,
    /// Whether it answered its last request (`None`: not asked yet).
    pub up: Option<bool>,
    /// Its last error (password redacted), cleared by a success.
    pub last_error: Option<String>,
    /// Its replication lag at its last probe (every 2 s), seconds: how old the oldest
    /// insert it has not fetched from another replica is (0: none; `None`: not probed, or it
    /// did not answer).
    pub delay_secs: Option<u64>,
}

/// One shard as its last request showed it.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardStatus {
    /// The endpoint its statements go to first (its replica that last answered).
    pub endpoint: String,
    /// Its replicas (one entry when it has one endpoint).
    pub replicas: Vec<ReplicaStatus>,
    /// Whether it answered its last request (`None`: not asked yet).
    pub up: Option<bool>,
    /// Its last error (password redacted), cleared by a success.
    pub last_error: Option<String>,
    /// Seconds since it last confirmed a delivery.
    pub confirmed_secs_ago: Option<f64>,
    /// Writes (WAL entries, per table) with rows for it that it has not confirmed (a
    /// shard that does not answer holds them; they wait in the WAL).
    pub waiting_deliveries: usize,
    /// The rows of those writes that are the shard's: how much it lacks.
    pub waiting_rows: u64,
    /// Seconds since this process first tried the oldest of them (0 when none): how far
    /// behind the shard is. A restart starts the clock again (replay tries them anew).
    pub oldest_waiting_secs: f64,
}

/// What one delivery did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Delivered {
    /// Rows sent, per shard.
    pub rows: Vec<u64>,
    /// Rows not sent because the shard held their write already (an earlier attempt).
    pub already_held: u64,
}
