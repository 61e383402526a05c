//! [`ReadState`]: what the flusher knows that reads of the engine need and the
//! engine's tables do not say: which points of a table may have several rows
//! ([`IdentityIndex`]) and which acknowledged points are not in the engine yet
//! ([`Unflushed`]).
//!
//! One per engine, made before the engine opens: the engine's SQL sandbox
//! tells the identity index about admin statements that may change data
//! ([`ReadState::admin_writes`], passed to `engine::Engine::open_with`), the
//! flusher keeps both up to date, and reads ask them. Cheap to clone.

use std::sync::Arc;

use engine::AdminWriteObserver;

use crate::identity::IdentityIndex;
use crate::unflushed::Unflushed;

/// The identity index and the unflushed rows of one engine.
#[derive(Debug, Clone, Default)]
pub struct ReadState {
    identity: Arc<IdentityIndex>,
    unflushed: Arc<Unflushed>,
}

impl ReadState {
    /// A fresh state whose identity index keeps the last points of at most
    /// `last_point_series` series (`[sql] last_point_cache_series`; 0: none).
    pub fn new(last_point_series: usize) -> ReadState {
        ReadState {
            identity: Arc::new(IdentityIndex::new(last_point_series)),
            unflushed: Arc::default(),
        }
    }

    /// Which points of each table may have several rows ([`crate::identity`]):
    /// the flusher records, reads ask.
    pub fn identity(&self) -> &IdentityIndex {
        &self.identity
    }

    /// Acknowledged points the engine does not hold yet ([`crate::unflushed`]):
    /// the flusher adds and removes, reads ask.
    pub fn unflushed(&self) -> &Unflushed {
        &self.unflushed
    }

    /// Who the engine's SQL sandbox tells of admin statements that may change
    /// data: the identity index.
    pub fn admin_writes(&self) -> Arc<dyn AdminWriteObserver> {
        self.identity.clone()
    }

    pub(crate) fn unflushed_handle(&self) -> Arc<Unflushed> {
        self.unflushed.clone()
    }

    pub(crate) fn identity_handle(&self) -> Arc<IdentityIndex> {
        self.identity.clone()
    }
}
