//! `CommitTicket`: a one-shot result slot that can be awaited or waited on.
//!
//! A hand-rolled slot rather than `tokio::sync::oneshot` because the WAL is used from both async
//! handlers (`.await`) and plain threads (`.wait()`), and tokio's `blocking_recv` panics inside a
//! runtime. The writer side ([`Completer`]) completes with `WalError::Shutdown` if it is dropped
//! unfinished, so no ticket can hang when the writer stops or panics.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::WalError;

#[derive(Default)]
struct State {
    result: Option<Result<u64, WalError>>,
    waker: Option<Waker>,
}

#[derive(Default)]
struct Slot {
    state: Mutex<State>,
    cv: Condvar,
}

/// Resolves to the entry's sequence number once its group is durable (per the durability mode),
/// or to the error that prevented it. Await it (`ticket.await`) or block on it (`ticket.wait()`).
///
/// For metadata-only commits (`Wal::put_meta`) it resolves to the last data sequence number
/// committed at or before the metadata.
#[must_use = "a ticket must be awaited to know whether the entry is durable"]
pub struct CommitTicket {
    slot: Arc<Slot>,
}

/// The writer's half of a ticket.
pub(crate) struct Completer {
    slot: Option<Arc<Slot>>,
}

pub(crate) fn pair() -> (CommitTicket, Completer) {
    let slot = Arc::new(Slot::default());
    (
        CommitTicket { slot: slot.clone() },
        Completer { slot: Some(slot) },
    )
}

impl Completer {
    pub(crate) fn complete(mut self, result: Result<u64, WalError>) {
        if let Some(slot) = self.slot.take() {
            let waker = {
                let mut st = slot.state.lock();
                st.result = Some(result);
                st.waker.take()
            };
            slot.cv.notify_all();
            if let Some(w) = waker {
                w.wake();
            }
        }
    }
}

impl Drop for Completer {
    fn drop(&mut self) {
        if self.slot.is_some() {
            let this = Completer {
                slot: self.slot.take(),
            };
            this.complete(Err(WalError::Shutdown));
        }
    }
}

impl CommitTicket {
    /// Blocks the current thread until the entry is durable or failed.
    pub fn wait(self) -> Result<u64, WalError> {
        let mut st = self.slot.state.lock();
        loop {
            if let Some(r) = st.result.take() {
                return r;
            }
            self.slot.cv.wait(&mut st);
        }
    }

    /// Like [`CommitTicket::wait`] but gives up after `timeout`, returning the ticket back.
    pub fn wait_timeout(self, timeout: Duration) -> Result<Result<u64, WalError>, CommitTicket> {
        {
            let mut st = self.slot.state.lock();
            if st.result.is_none() {
                self.slot.cv.wait_for(&mut st, timeout);
            }
            if let Some(r) = st.result.take() {
                return Ok(r);
            }
        }
        Err(self)
    }

    /// True once the result is available (`wait` would not block).
    pub fn is_done(&self) -> bool {
        self.slot.state.lock().result.is_some()
    }
}

impl Future for CommitTicket {
    type Output = Result<u64, WalError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut st = self.slot.state.lock();
        if let Some(r) = st.result.take() {
            return Poll::Ready(r);
        }
        match &st.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => st.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl std::fmt::Debug for CommitTicket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommitTicket")
            .field("done", &self.is_done())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_gets_value_completed_from_another_thread() {
        let (t, c) = pair();
        let h = std::thread::spawn(move || c.complete(Ok(5)));
        assert_eq!(t.wait(), Ok(5));
        h.join().unwrap();
    }

    #[test]
    fn dropped_completer_means_shutdown() {
        let (t, c) = pair();
        drop(c);
        assert_eq!(t.wait(), Err(WalError::Shutdown));
    }

    #[test]
    fn wait_timeout_returns_ticket_when_pending() {
        let (t, c) = pair();
        let t = t.wait_timeout(Duration::from_millis(10)).unwrap_err();
        assert!(!t.is_done());
        c.complete(Ok(1));
        assert_eq!(t.wait_timeout(Duration::from_millis(10)).unwrap(), Ok(1));
    }

    #[test]
    fn awaitable() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (t, c) = pair();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            c.complete(Ok(9))
        });
        assert_eq!(rt.block_on(t), Ok(9));
    }
}
