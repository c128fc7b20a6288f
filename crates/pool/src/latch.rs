//! Latches: one-shot "done" signals that a scope or a `join` waits on.
//!
//! # Protocol
//!
//! A [`CountLatch`] counts outstanding work. It starts at one (the waiter's own share,
//! e.g. the body of a scope); each spawned job adds one before it is queued and
//! subtracts one when it finished (even by panicking). Whoever brings the count to
//! zero sets the inner [`Latch`], which is then never unset.
//!
//! Two kinds of waiter exist:
//!
//! - a thread outside the pool blocks in [`Latch::wait_blocking`] on a mutex and
//!   condition variable;
//! - a worker of the pool keeps running jobs while [`Latch::probe`] is false, and
//!   sleeps through the pool's sleep protocol (`sleep/README.md`) with the probe as part of its
//!   final look. The setter then wakes it by index (`Sleep::wake_specific`); the latch
//!   only records that index.
//!
//! # Memory ordering
//!
//! The decrement is `AcqRel`: the job that reaches zero has acquired every other job's
//! release, and the flag store is `Release` (and the mutex hand-off is release/acquire),
//! so a waiter that sees the latch set also sees everything every job wrote. The waiter
//! reads the flag with `Acquire`.
//!
//! Lifetime: the latch lives in an `Arc` shared by the waiter and the jobs, so a setter
//! may still touch it after the waiter has returned.

use crate::sync::{AtomicBool, AtomicUsize, Condvar, Mutex, Ordering, lock, wait};

/// A one-shot flag with a blocking wait.
#[derive(Debug, Default)]
pub(crate) struct Latch {
    is_set: AtomicBool,
    /// Mirrors `is_set` under the lock, for blocking waiters.
    locked_is_set: Mutex<bool>,
    condvar: Condvar,
}

impl Latch {
    /// True once [`Latch::set`] was called.
    pub(crate) fn probe(&self) -> bool {
        self.is_set.load(Ordering::Acquire)
    }

    /// Sets the latch and wakes blocking waiters.
    pub(crate) fn set(&self) {
        self.is_set.store(true, Ordering::Release);
        let mut is_set = lock(&self.locked_is_set);
        *is_set = true;
        self.condvar.notify_all();
    }

    /// Blocks the calling thread until the latch is set.
    pub(crate) fn wait_blocking(&self) {
        let mut is_set = lock(&self.locked_is_set);
        while !*is_set {
            is_set = wait(&self.condvar, is_set);
        }
    }
}

/// A latch set when a count of outstanding work items drops to zero.
#[derive(Debug)]
pub(crate) struct CountLatch {
    pending: AtomicUsize,
    latch: Latch,
}

impl CountLatch {
    /// A latch with the waiter's own share counted.
    pub(crate) fn new() -> Self {
        CountLatch {
            pending: AtomicUsize::new(1),
            latch: Latch::default(),
        }
    }

    /// Counts one more item; must happen before the item can complete.
    pub(crate) fn increment(&self) {
        self.pending.fetch_add(1, Ordering::Relaxed);
    }

    /// Marks one item done; returns true if it was the last and the latch is now set.
    pub(crate) fn decrement(&self) -> bool {
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.latch.set();
            true
        } else {
            false
        }
    }

    /// The inner latch, set when the count reached zero.
    pub(crate) fn latch(&self) -> &Latch {
        &self.latch
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::CountLatch;
    use crate::sync::{Arc, AtomicUsize, Ordering};
    use loom::thread;

    /// Two jobs and the waiter's share: the waiter returns only after both jobs'
    /// writes, whichever order they finish in.
    #[test]
    fn loom_count_latch_waits_for_all() {
        loom::model(|| {
            let latch = Arc::new(CountLatch::new());
            let done = Arc::new(AtomicUsize::new(0));
            let jobs: Vec<_> = (0..2)
                .map(|_| {
                    latch.increment();
                    let (latch, done) = (Arc::clone(&latch), Arc::clone(&done));
                    thread::spawn(move || {
                        done.fetch_add(1, Ordering::Relaxed);
                        latch.decrement();
                    })
                })
                .collect();
            latch.decrement();
            latch.latch().wait_blocking();
            assert_eq!(done.load(Ordering::Relaxed), 2);
            assert!(latch.latch().probe());
            for job in jobs {
                job.join().unwrap();
            }
        });
    }
}
