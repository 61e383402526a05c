//! A read of every shard checked by the shards' index of points written twice
//! ([`crate::identity`]): each shard's statement groups by point identity only the series
//! its index lists, and the index is brought up to date after the read, not before (issue
//! #43: the check after the read is what makes it exact — a rewrite the index did not know
//! when the read began is found then, and the shard read again —, so a check before it
//! would only cost each statement one more round trip to every shard).
//!
//! The listing that check reads is, where the read can carry it, part of the read's own
//! statement (`SELECT <partial rows> UNION ALL SELECT <listing rows>`, each row tagged, see
//! `read.rs`): one request per shard. That is exact only if the listing sees the table no
//! earlier than the read's rows did, so that every part the read took a row from (or a
//! merge or mutation covering its blocks) is in the listing and checked. Every supported
//! server takes a `MergeTree` read's set of parts when it builds the statement's pipeline,
//! before any stream runs (18.16: `MergeTreeDataSelectExecutor::read`, called while
//! `InterpreterSelectWithUnionQuery` builds its members in order, the read first; 23.x+: the
//! storage snapshot of the query plan), and lists `system.parts` in a member built after it
//! (18.16 fills the listing when its member is built, after the read's; 23.x+ when its
//! source first runs). A part inserted between the two is listed and not read: checked for
//! nothing. What can change the rows a read saw — deliveries from this node or any other,
//! merges, mutations, partition drops, a table made again — is seen as it was by the
//! separate listing: a new part's blocks are checked, a known name with other rows or
//! another time or a new metadata time reloads the index.

use engine::table::ColumnKind;

use crate::series_of_tags::{Pruning, TagValues};
use crate::{Cluster, ClusterError, IdentitySnapshot};

/// Which rows a statement's shards grouped by point identity (what
/// `chingest_cluster_pushdown_grouping_total` counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grouped {
    /// Every shard grouped only its index's rewritten series.
    Rewritten,
    /// Some shard grouped every row (no index there).
    All,
    /// A rewrite landed during some shard's read: it was read again.
    Again,
}

impl Grouped {
    /// The label of the metric.
    pub fn label(self) -> &'static str {
        match self {
            Grouped::Rewritten => "rewritten",
            Grouped::All => "all",
            Grouped::Again => "again",
        }
    }

    /// A statement's, from its shards': read again if any was, all if any grouped all.
    fn of(shards: impl IntoIterator<Item = Grouped>) -> Grouped {
        shards
            .into_iter()
            .fold(Grouped::Rewritten, |a, b| match (a, b) {
                (Grouped::Again, _) | (_, Grouped::Again) => Grouped::Again,
                (Grouped::All, _) | (_, Grouped::All) => Grouped::All,
                _ => Grouped::Rewritten,
            })
    }
}

impl Cluster {
    /// `read(k, snapshot)` on every shard at once, each grouping what its index says may
    /// hold a point written twice — its answer and, where it folded the listing of the
    /// table's parts into its statement (only with a snapshot), that listing's lines —,
    /// each checked on its own after its read and read again
    /// when a rewrite landed meanwhile (then with the index's new rewritten series, the
    /// third time grouping every row). A series lives on one shard, so a shard's answer
    /// stands or falls with its own index: no shard waits for another between its read
    /// and its check. Round trips per shard: the read (and one listing of its parts where
    /// the read did not fold it in; plus one check of new blocks' rows when parts appeared,
    /// and the first use's load). `prune`: the tag values the statement's rows all hold;
    /// `read` is then given the series of those on the shard (`None`: every series), checked
    /// after the read by the same listing ([`crate::series_of_tags`]) and read again with
    /// the series found meanwhile.
    pub(crate) fn read_identified<T: Send>(
        &self,
        db: &str,
        measurement: &str,
        columns: &[(String, ColumnKind)],
        prune: Option<&TagValues>,
        read: impl Fn(
                usize,
                Option<&IdentitySnapshot>,
                Option<&[u64]>,
            ) -> Result<(T, Option<String>), ClusterError>
            + Sync,
    ) -> Result<(Vec<T>, Grouped), ClusterError> {
        // Pruned only by a tag the read's columns hold (made on every shard first).
        let prune = prune.filter(|p| {
            columns
                .iter()
                .any(|(n, k)| *n == p.tag && *k == ColumnKind::Tag)
        });
        let answers = self.read_table_everywhere(db, measurement, columns, |k| {
            let mut snapshot = self.current_snapshot(k, db, measurement)?;
            let mut series = match prune {
                Some(p) => self.pruned_series(k, db, measurement, p)?,
                None => None,
            };
            let mut pruned_again = false;
            for attempt in 0.. {
                let (answer, listed) = read(k, snapshot.as_ref(), series.as_deref())?;
                let grouped = match (&snapshot, attempt) {
                    (_, 1..) => Grouped::Again,
                    (None, _) => Grouped::All,
                    (Some(_), _) => Grouped::Rewritten,
                };
                let valid = match &snapshot {
                    None => true,
                    Some(used) => {
                        self.still_valid_on(k, db, measurement, used, listed.as_deref())?
                    }
                };
                // Every series of the values the read may have seen among those it asked
                // for ([`crate::series_of_tags`]).
                let all_series = match (prune, &series) {
                    (Some(p), Some(used)) => {
                        self.pruned_still_valid(k, db, measurement, p, used, listed.as_deref())?
                    }
                    _ => true,
                };
                if valid && all_series {
                    if prune.is_some() {
                        let pruning = match series.as_deref() {
                            None => Pruning::Unpruned,
                            Some(_) if pruned_again => Pruning::Again,
                            Some([]) => Pruning::None,
                            Some(_) => Pruning::Pruned,
                        };
                        pruning.count();
                    }
                    return Ok((answer, grouped));
                }
                tracing::debug!(
                    shard = k,
                    measurement,
                    attempt,
                    valid,
                    all_series,
                    "a rewrite or a series of the condition appeared while the shard was read: \
                     read again"
                );
                pruned_again |= !all_series;
                snapshot = match attempt {
                    0 => self.current_snapshot(k, db, measurement)?,
                    _ => None,
                };
                series = match (attempt, prune) {
                    (0, Some(p)) if !all_series => self.pruned_series(k, db, measurement, p)?,
                    (0, _) => series,
                    _ => None,
                };
            }
            unreachable!("the third read groups every row and reads every series")
        })?;
        let grouped = Grouped::of(answers.iter().map(|(_, g)| *g));
        Ok((answers.into_iter().map(|(a, _)| a).collect(), grouped))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_is_read_again_if_any_shard_was_and_grouped_all_if_any_grouped_all() {
        use Grouped::*;
        assert_eq!(Grouped::of([Rewritten, Rewritten]), Rewritten);
        assert_eq!(Grouped::of([Rewritten, All]), All);
        assert_eq!(Grouped::of([All, Again, Rewritten]), Again);
    }
}
