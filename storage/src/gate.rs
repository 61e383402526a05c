//! The write gate: a write holds a [`Pass`] from the start of its parse until its WAL entry
//! is queued, and a catalog change that must see no write half-way (`DROP MEASUREMENT`)
//! [`drains`](WriteGate::drain) the gate first.
//!
//! Why a gate and not the commit lock alone: a write's parse registers its series, tags and
//! fields in the in-memory catalog and emits durable records only for what was new to it. A
//! write parsed before a measurement's drop but committed after it would carry rows whose
//! series and field types the drop had just forgotten: its data kept, its catalog records
//! gone. With the gate drained, every write is either wholly before the drop (its entry's
//! sequence is at or below the drop's fence) or parsed against the catalog the drop left.

use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

#[derive(Debug, Default)]
struct State {
    /// Writes between the start of their parse and their WAL submit.
    active: usize,
    /// A drain is waiting for `active` to reach 0 or holds the gate closed.
    draining: bool,
}

/// See the [module](self).
#[derive(Debug, Default)]
pub(crate) struct WriteGate {
    state: Mutex<State>,
    changed: Condvar,
}

/// A write's hold on the gate; released when dropped (after the WAL submit, or when the
/// write is abandoned).
#[derive(Debug)]
pub(crate) struct Pass(Arc<WriteGate>);

impl Drop for Pass {
    fn drop(&mut self) {
        let mut st = self.0.state.lock();
        st.active -= 1;
        if st.active == 0 {
            self.0.changed.notify_all();
        }
    }
}

/// The gate held closed: no write is half-way while it lives.
#[derive(Debug)]
pub(crate) struct Drained<'a>(&'a WriteGate);

impl Drop for Drained<'_> {
    fn drop(&mut self) {
        self.0.state.lock().draining = false;
        self.0.changed.notify_all();
    }
}

impl WriteGate {
    /// Lets a write in, waiting while a drain holds the gate.
    pub(crate) fn enter(self: &Arc<Self>) -> Pass {
        let mut st = self.state.lock();
        while st.draining {
            self.changed.wait(&mut st);
        }
        st.active += 1;
        Pass(self.clone())
    }

    /// Closes the gate to new writes and waits until every write in it has left.
    pub(crate) fn drain(&self) -> Drained<'_> {
        let mut st = self.state.lock();
        while st.draining {
            self.changed.wait(&mut st);
        }
        st.draining = true;
        while st.active > 0 {
            self.changed.wait(&mut st);
        }
        Drained(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::time::Duration;

    #[test]
    fn a_drain_waits_for_writes_in_the_gate_and_holds_new_ones_back() {
        let gate = Arc::new(WriteGate::default());
        let pass = gate.enter();
        let drained = Arc::new(AtomicBool::new(false));
        let (g, d) = (gate.clone(), drained.clone());
        let drainer = std::thread::spawn(move || {
            let hold = g.drain();
            d.store(true, SeqCst);
            std::thread::sleep(Duration::from_millis(100));
            drop(hold);
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !drained.load(SeqCst),
            "drained while a write was in the gate"
        );
        drop(pass);
        while !drained.load(SeqCst) {
            std::thread::yield_now();
        }
        // A write arriving now waits for the drain to end.
        let entered = gate.enter();
        drainer.join().unwrap();
        drop(entered);
        let _again = gate.drain();
    }
}
