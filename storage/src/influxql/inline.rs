//! Statements run inline: on the caller's thread (the server's async worker)
//! instead of a blocking thread, when the hot store answers them at once
//! (issue #44). The hand-off to `spawn_blocking` and back cost 0.1–0.6 ms of
//! a TSBS `single-groupby-1-1-1` that reads in 0.2 ms; an engine statement
//! blocks for milliseconds and must never run on a worker.
//!
//! [`run`] marks the thread: from then on anything that would wait or is not
//! cheap refuses instead — an engine statement or the last points
//! (`Storage::engine`), a hot read that would wait for the coordinator, the
//! applier or the store's lock, a measurement not held yet, or a read of more
//! than [`MAX_VALUES`] values — and the caller runs the statement again on a
//! blocking thread as before, its inline answer thrown away. A refused
//! statement has changed nothing: the read paths record and count only what
//! they answered.

use std::cell::Cell;

/// Values (points in the range × the fields the statement reads; tags, one
/// per series, are not counted) a hot read run inline may read, and cells
/// (rows × columns) a raw one may build: TSBS `high-cpu-1` (12 h of one
/// host, 10 fields: 43k) reads in about a millisecond on this 2-core box,
/// `cpu-max-all-8` (230k) in 4–5 ms, which goes to a blocking thread (a
/// quarter of the 250,000 sealed points that send a read to the engine, in
/// values).
pub const MAX_VALUES: usize = 50_000;

/// Series a last-point read run inline may answer from the flusher's last
/// points (`last_point.rs`; TSBS `lastpoint`: one a host). In release its
/// eval and build took 0.86 ms at 1,000 hosts (0.64 + 0.22), under a
/// microsecond a series once nothing was allocated a series but the
/// answer's row (1.5 ms before): 1,500 stay near 1.3 ms, within a request's
/// 2 ms inline; more run on a blocking thread as before (the hand-off and
/// the refused try cost 0.25–0.6 ms of 1,000 hosts' 1.9 ms `exec`).
pub const MAX_LAST_POINT_SERIES: usize = 1_500;

/// Where the thread is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Not inline: wait as needed.
    Off,
    On,
    /// Something was refused: the answer is to be thrown away.
    Refused,
}

thread_local! {
    static MODE: Cell<Mode> = const { Cell::new(Mode::Off) };
}

/// Runs `f` inline; `None` where it refused something (see the module):
/// run it again off the caller's thread.
pub fn run<T>(f: impl FnOnce() -> T) -> Option<T> {
    /// Restores the mode even if `f` panics.
    struct Restore(Mode);
    impl Drop for Restore {
        fn drop(&mut self) {
            MODE.set(self.0);
        }
    }
    let _restore = Restore(MODE.replace(Mode::On));
    let out = f();
    (MODE.get() == Mode::On).then_some(out)
}

/// Whether the thread runs a statement inline (waits are refused).
pub(crate) fn active() -> bool {
    MODE.get() != Mode::Off
}

/// Refuses the inline run, if one is going; true if so (the caller then
/// returns at once, with anything: the answer is thrown away).
pub(crate) fn refuse() -> bool {
    let inline = active();
    if inline {
        MODE.set(Mode::Refused);
    }
    inline
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_throws_the_answer_away_and_ends_with_the_run() {
        assert!(!active() && !refuse());
        assert_eq!(run(active), Some(true));
        assert_eq!(run(refuse), None);
        assert!(!active(), "the mode ends with the run");
        assert_eq!(run(|| 7), Some(7));
    }
}
