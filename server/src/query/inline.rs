//! Which statements the `/query` handler runs on its async worker instead of
//! handing them to a blocking thread (issue #44): a `SELECT` the hot store
//! answers at once (`storage::influxql::inline`: nothing waited for, at most
//! `MAX_VALUES` values read; anything else is refused and handed off as
//! before). The hand-off and back cost 0.1–0.6 ms of statements that read in
//! 0.2 ms.
//!
//! Only a statement with a time range or asking each group's last point is
//! tried (`eligible`). A worker
//! running a statement serves no other connection meanwhile, so what runs
//! inline is bounded three ways, and a client sending many (or many at once)
//! gets the blocking pool, not the workers: each statement by its values
//! read; at most half the runtime's workers (at least one) run statements
//! inline at once, so writes' and other requests' async handling always has
//! a worker; and one request spends at most [`REQUEST_BUDGET`] inline, its
//! later statements handed off.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use influxql::ast::{Expr, SelectStatement, Statement};

/// `/query` statements by how they ran.
pub(super) const INLINE_METRIC: &str = "chingest_influxql_inline_total";

/// Time one request's statements may run inline, together: a query of many
/// statements holds its worker no longer than a few of them. Checked before
/// each statement (`query/mod.rs`): one begun within it runs to its end,
/// bounded by what it may read; those after it go to a blocking thread
/// (tested in `tests/http/hot_inline.rs`).
pub(super) const REQUEST_BUDGET: Duration = Duration::from_millis(2);

/// Statements running inline now, over every worker.
static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// Whether `st` may be tried inline: a `SELECT` without `INTO` (which
/// writes) whose condition reads `time`, or one asking each group's last
/// point (`last_point`). Another without a time range reaches back before
/// what the store holds nearly always; refused, it would be planned twice
/// (0.2 ms more in the same-run A/B).
pub(super) fn eligible(st: &Statement) -> bool {
    matches!(st, Statement::Select(s)
        if s.into.is_none()
            && (s.condition.as_ref().is_some_and(reads_time) || last_point(s)))
}

/// Whether `s` asks each group's last point as the flusher's last points
/// answer it (`storage/src/influxql/last_point.rs`; TSBS `lastpoint`:
/// `SELECT * FROM cpu GROUP BY "hostname" ORDER BY time DESC LIMIT 1`):
/// fields and tags as they are, no condition, the newest point only.
fn last_point(s: &SelectStatement) -> bool {
    s.condition.is_none()
        && s.order_desc
        && s.limit == Some(1)
        && s.offset.unwrap_or(0) == 0
        && s.fields
            .iter()
            .all(|f| matches!(f.expr, Expr::VarRef { .. } | Expr::Wildcard(_)))
}

/// Whether `e` names `time` anywhere.
fn reads_time(e: &Expr) -> bool {
    match e {
        Expr::VarRef { name, .. } => name.eq_ignore_ascii_case("time"),
        Expr::Binary { lhs, rhs, .. } => reads_time(lhs) || reads_time(rhs),
        Expr::Paren(e) => reads_time(e),
        Expr::Call { args, .. } => args.iter().any(reads_time),
        Expr::Wildcard(_) | Expr::Literal(_) => false,
    }
}

/// A place among the statements running inline, released when dropped.
pub(super) struct Slot(());

impl Slot {
    /// A place if fewer than half the runtime's workers run statements
    /// inline (at least one may).
    pub(super) fn take() -> Option<Slot> {
        let workers =
            tokio::runtime::Handle::try_current().map_or(1, |h| h.metrics().num_workers());
        take_among(workers.div_ceil(2).max(1))
    }
}

fn take_among(limit: usize) -> Option<Slot> {
    RUNNING
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < limit).then_some(n + 1)
        })
        .ok()
        .map(|_| Slot(()))
}

impl Drop for Slot {
    fn drop(&mut self) {
        RUNNING.fetch_sub(1, Ordering::AcqRel);
    }
}

/// How a statement ran, counted under [`INLINE_METRIC`]'s `outcome`.
#[derive(Clone, Copy)]
pub(super) enum Outcome {
    /// Answered on the worker.
    Inline,
    /// Tried inline, refused (it would wait or read too much): run again on a
    /// blocking thread.
    Refused,
    /// Not tried: not a `SELECT` the hot store may answer, no place free,
    /// the request's budget spent, or the store off.
    Blocking,
}

pub(super) fn count(outcome: Outcome) {
    let label = match outcome {
        Outcome::Inline => "inline",
        Outcome::Refused => "refused",
        Outcome::Blocking => "blocking",
    };
    metrics::counter!(INLINE_METRIC, "outcome" => label).increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_selects_with_a_time_range_are_tried() {
        let st = |q: &str| {
            influxql::parse_query(q, &Default::default())
                .unwrap()
                .remove(0)
        };
        assert!(eligible(&st(
            "SELECT max(f) FROM m WHERE host = 'a' AND (time >= now() - 1h)"
        )));
        assert!(!eligible(&st("SELECT last(*) FROM m GROUP BY host")));
        assert!(eligible(&st(
            "SELECT * FROM cpu GROUP BY \"hostname\" ORDER BY time DESC LIMIT 1"
        )));
        assert!(eligible(&st(
            "SELECT f, host FROM m ORDER BY time DESC LIMIT 1"
        )));
        assert!(!eligible(&st("SELECT f FROM m ORDER BY time DESC LIMIT 2")));
        assert!(!eligible(&st(
            "SELECT f FROM m ORDER BY time DESC LIMIT 1 OFFSET 1"
        )));
        assert!(!eligible(&st("SELECT f FROM m LIMIT 1")));
        assert!(!eligible(&st(
            "SELECT f * 2 FROM m ORDER BY time DESC LIMIT 1"
        )));
        assert!(!eligible(&st(
            "SELECT f FROM m WHERE host = 'a' ORDER BY time DESC LIMIT 1"
        )));
        assert!(!eligible(&st("SELECT f FROM m WHERE host = 'a'")));
        assert!(!eligible(&st("SELECT f INTO n FROM m WHERE time > 0")));
        assert!(!eligible(&st("SHOW DATABASES")));
    }

    #[test]
    fn places_are_bounded_and_given_back() {
        let a = take_among(2).expect("a first place");
        let b = take_among(2).expect("a second place");
        assert!(take_among(2).is_none(), "a third of two");
        drop(a);
        let c = take_among(2).expect("a place given back");
        drop((b, c));
    }
}
