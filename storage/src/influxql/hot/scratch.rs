//! The buffers a hot read decodes sealed chunks into, kept between the
//! statements one server worker runs inline (`influxql/inline.rs`): a new
//! read's decoding then grows no vector. Fresh per statement, the columns of
//! TSBS `single-groupby-5-1-12` (4,320 points × 6) grew by doubling, chunk
//! after chunk: `malloc`, `realloc` and their copies were a tenth of a
//! profile of it.
//!
//! Only inline reads keep them (a worker thread or two, each a statement
//! at a time); a blocking thread's read, of any size, drops its own. Kept
//! only up to [`KEEP_POINTS`] points: an inline read reads at most
//! `inline::MAX_VALUES` values anyway, so the kept memory stays within about
//! a megabyte per worker.

use std::cell::RefCell;
use std::ops::{Deref, DerefMut};

use crate::hot::table::Plain;
use crate::influxql::inline;

/// Points (times) of capacity past which a buffer is not kept.
const KEEP_POINTS: usize = 1 << 14;

thread_local! {
    static KEPT: RefCell<Option<Plain>> = const { RefCell::new(None) };
}

/// A read's decoding buffer: the thread's kept one when it has one, given
/// back when dropped (inline only).
pub(super) struct Scratch(Plain);

impl Scratch {
    pub(super) fn take() -> Scratch {
        let kept = if inline::active() {
            KEPT.with(|k| k.borrow_mut().take())
        } else {
            None
        };
        Scratch(kept.unwrap_or_default())
    }
}

impl Deref for Scratch {
    type Target = Plain;
    fn deref(&self) -> &Plain {
        &self.0
    }
}

impl DerefMut for Scratch {
    fn deref_mut(&mut self) -> &mut Plain {
        &mut self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if inline::active() && self.0.capacity() <= KEEP_POINTS {
            let p = std::mem::take(&mut self.0);
            KEPT.with(|k| *k.borrow_mut() = Some(p));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inline_read_gets_the_buffer_the_last_one_left() {
        let grown = |s: &mut Scratch| {
            s.times.reserve(1000);
            s.times.as_ptr()
        };
        // Inline: kept and handed to the next read.
        let (first, again) = inline::run(|| {
            let mut s = Scratch::take();
            let at = grown(&mut s);
            drop(s);
            (at, Scratch::take().times.as_ptr())
        })
        .unwrap();
        assert_eq!(first, again);
        assert!(Scratch::take().times.capacity() == 0, "kept off inline");
        // Not inline: a fresh buffer every time, nothing kept.
        let mut s = Scratch::take();
        grown(&mut s);
        drop(s);
        assert_eq!(Scratch::take().times.capacity(), 0);
        // Too large to keep.
        inline::run(|| {
            let mut s = Scratch::take();
            s.times.reserve(KEEP_POINTS + 1);
        });
        assert_eq!(inline::run(|| Scratch::take().times.capacity()), Some(0));
    }
}
