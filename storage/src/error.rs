//! [`StorageError`]: what can go wrong below HTTP, with its cause kept. The server
//! maps it to status codes in one place (`server/src/error.rs`).

/// What can go wrong below HTTP.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// The request body could not be processed at all (msgpack structure, encoding).
    #[error(transparent)]
    Write(#[from] ingest::WriteError),
    /// A database name the engine cannot hold.
    #[error(transparent)]
    InvalidName(#[from] ingest::names::NameError),
    /// `CREATE DATABASE` with a retention other than the existing one.
    #[error("retention policy conflicts with an existing policy")]
    RetentionConflict {
        /// The database.
        db: String,
    },
    /// The database does not exist.
    #[error("database not found: \"{db}\"")]
    DatabaseNotFound {
        /// The database.
        db: String,
    },
    /// The WAL queue is full: back off.
    #[error("the WAL queue is full")]
    QueueFull,
    /// Storage is shutting down (or already closed).
    #[error("the server is shutting down")]
    ShuttingDown,
    /// The WAL failed a write and refuses all writes until restart.
    #[error("the WAL failed and refuses writes until restart: {0}")]
    WalFailed(#[source] wal::WalError),
    /// The WAL's file system is below its free-space reserve: the write was not
    /// made (nothing acknowledged); writes resume by themselves once space is freed.
    #[error("{0}")]
    DiskFull(#[source] wal::WalError),
    /// One entry is larger than the WAL accepts.
    #[error(transparent)]
    EntryTooLarge(wal::WalError),
    /// Any other WAL error.
    #[error("WAL: {0}")]
    Wal(#[source] wal::WalError),
    /// The engine refused or failed a statement.
    #[error(transparent)]
    Engine(#[from] engine::EngineError),
    /// Opening storage failed.
    #[error("{what}: {message}")]
    Open {
        /// The step that failed.
        what: &'static str,
        /// Why.
        message: String,
    },
    /// The engine's SQL sandbox refused or failed a statement chingest generated for
    /// `SHOW TAG VALUES` (a limit, a busy sandbox).
    #[error("SHOW TAG VALUES: {0}")]
    TagValues(#[source] engine::SqlError),
    /// A delete waited for the writes acknowledged before it to reach the engine, in vain
    /// (the engine is failing or far behind): nothing was deleted.
    #[error("the writes acknowledged before this statement did not reach the engine within {waited_secs} s (see /health); nothing was deleted, retry later")]
    NotFlushed {
        /// How long it waited.
        waited_secs: u64,
    },
    /// A delete on a ClickHouse cluster waited for other ingest nodes to deliver the
    /// writes they acknowledged before it, in vain (a node is down or far behind): nothing
    /// was deleted.
    #[error("ingest node(s) {nodes} did not deliver the writes they acknowledged before this statement within {waited_secs} s (down, or behind: see their /health); nothing was deleted, retry later")]
    NotDeliveredByNodes {
        /// The nodes behind, comma-separated.
        nodes: String,
        /// How long it waited.
        waited_secs: u64,
    },
    /// A `DROP DATABASE` on a ClickHouse cluster waited for every ingest node to apply it
    /// (refuse the database's writes, discard what it had not delivered), in vain.
    #[error("DROP DATABASE {db:?}: ingest node(s) {nodes} did not apply it within {waited_secs} s (down, or not reading the cluster: see /health); the database is gone for every other node, its points stay on the shards, unreadable, until DROP DATABASE runs again and completes")]
    DropNotAppliedByNodes {
        /// The database.
        db: String,
        /// The nodes behind, comma-separated.
        nodes: String,
        /// How long it waited.
        waited_secs: u64,
    },
    /// Asked of a node whose points are not on a ClickHouse cluster.
    #[error(
        "this node's points are not on a ClickHouse cluster ([storage] engine = \"embedded\")"
    )]
    NotOnCluster,
    /// Asked to forget the node that was asked.
    #[error("ingest node {node:?} is this node: forget a node from another one")]
    ForgetSelf {
        /// Its name.
        node: String,
    },
    /// `CREATE DATABASE` of a name whose `DROP DATABASE` on the cluster did not finish.
    #[error("database {db:?} was dropped on the ClickHouse cluster but its points are still on the shards (the DROP DATABASE did not finish): run DROP DATABASE {db:?} again, then create it")]
    DropUnfinished {
        /// The database.
        db: String,
    },
    /// The ClickHouse cluster could not answer a read of its catalog or series.
    #[error("the ClickHouse cluster could not answer: {0}")]
    Cluster(#[from] cluster::ClusterError),
    /// An answer from the engine did not have the expected shape.
    #[error("unexpected engine answer for {what}: {message}")]
    EngineAnswer {
        /// What was read.
        what: &'static str,
        /// Why it did not parse.
        message: String,
    },
}

impl StorageError {
    /// The engine's own message when the engine refused a statement (a client's
    /// SQL error), as opposed to a failure of the engine itself.
    pub fn engine_message(&self) -> Option<&str> {
        match self {
            StorageError::Engine(e) => e.engine_message(),
            _ => None,
        }
    }
}

impl From<wal::WalError> for StorageError {
    fn from(e: wal::WalError) -> Self {
        match e {
            wal::WalError::QueueFull { .. } => StorageError::QueueFull,
            wal::WalError::Shutdown => StorageError::ShuttingDown,
            e @ wal::WalError::Poisoned { .. } => StorageError::WalFailed(e),
            e @ wal::WalError::DiskFull { .. } => StorageError::DiskFull(e),
            e @ wal::WalError::EntryTooLarge { .. } => StorageError::EntryTooLarge(e),
            e => StorageError::Wal(e),
        }
    }
}
