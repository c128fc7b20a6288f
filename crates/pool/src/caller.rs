//! How a thread that is not a worker of a pool counts against the pool's throttle.
//!
//! # What a permit means
//!
//! A permit of the pool's throttle is the right to run the pool's work: a worker holds one
//! while it runs tasks, and the thread that calls `scope` or `join` from outside the pool
//! holds one while it runs the body (`ThreadPoolBuilder::throttle_caller`), since the body
//! is the pool's work as much as a task. A thread that *waits* for the pool runs none of
//! it, so it holds no permit while it waits:
//!
//! - after a scope's body, while the scope's jobs finish ([`CallerSeat::wait`]);
//! - during a call that runs on a worker of the pool — `install` and the data-parallel
//!   calls (`sum`, `map_collect`, `reduce`, `for_each`) — made from a thread holding a
//!   permit of the pool's throttle: a scope's body, or a task of another pool built with
//!   the same throttle ([`wait_without_permit`]).
//!
//! It gives its permit back before it waits and takes one again once the wait is over,
//! before it goes on with its own work. So a nested call never needs a second permit while
//! the caller holds one (under a limit of 1 it would wait for itself forever), the permit
//! goes to the workers that do the work waited for, and the limit still bounds the threads
//! running the pool's work at any moment, the caller's own included.
//!
//! Why not run such a call on the calling thread, with the permit it has? `install` must
//! run its closure on a worker (the free functions inside it use the worker's pool), and a
//! data-parallel call run by one thread alone would give up the workers under any limit
//! above 1. A thread the pool cannot see holding a permit — one holding a guard or a seat
//! of the throttle itself — keeps it while it waits, and under a limit of 1 waits forever:
//! such a thread must not call into the pool.

use crate::registry::{Registry, WorkerThread};
use crate::throttle::Throttle;
use std::cell::RefCell;
use std::sync::Arc;

thread_local! {
    /// The throttles of which this thread holds a permit as the caller of a scope whose
    /// pool it is no worker of ([`CallerSeat::Taken`]), innermost last.
    static CALLER_PERMITS: RefCell<Vec<*const Throttle>> = const { RefCell::new(Vec::new()) };
}

/// Whether this thread holds a permit of `throttle` the pool knows of: as the caller of a
/// scope's body, or as a worker (of any pool built with `throttle`) running a task.
fn holds_permit_of(throttle: &Arc<Throttle>) -> bool {
    let key = Arc::as_ptr(throttle);
    CALLER_PERMITS.with(|held| held.borrow().contains(&key))
        || WorkerThread::with_current(|worker| {
            worker.is_some_and(|worker| worker.holds_permit_of(throttle))
        })
}

/// Runs `wait` (for work of the pool of `registry` that runs on its workers) holding no
/// permit of the pool's throttle: one this thread holds is given back first and taken
/// again after (see the module docs).
pub(crate) fn wait_without_permit(registry: &Registry, wait: impl FnOnce()) {
    match registry.throttle.as_ref() {
        Some(throttle) if holds_permit_of(throttle) => without(throttle, wait),
        _ => wait(),
    }
}

/// Runs `wait` with the permit this thread holds of `throttle` given back meanwhile.
fn without(throttle: &Throttle, wait: impl FnOnce()) {
    throttle.release();
    wait();
    throttle.acquire_permit();
}

/// How a thread that is not a worker of the scope's pool counts against the pool's
/// throttle while it runs the scope's body (`ThreadPoolBuilder::throttle_caller`): it
/// holds a permit for the body, as a worker does for a task, and none while it waits for
/// the scope's jobs, which need the permits (`throttle/README.md`, "The calling thread").
pub(crate) enum CallerSeat {
    /// Nothing to hold: no throttle, the option off, or a worker of the scope's pool
    /// (whose own permit covers the body and which gives it back while it waits).
    Free,
    /// Took a permit for the body; gives it back before waiting.
    Taken(Arc<Throttle>),
    /// Already held a permit of this throttle: the body of an enclosing scope on this
    /// thread, or a task of another pool built with the same throttle. Keeps it for the
    /// body (taking a second could wait for itself), gives it back while waiting, and
    /// takes one again for the enclosing body, which goes on.
    Held(Arc<Throttle>),
}

impl CallerSeat {
    /// Before the body of a scope on `registry`; `is_owner`: the caller is a worker of it.
    pub(crate) fn enter(registry: &Registry, is_owner: bool) -> Self {
        let Some(throttle) = registry.throttle.as_ref() else {
            return CallerSeat::Free;
        };
        if is_owner || !registry.throttle_caller {
            return CallerSeat::Free;
        }
        if holds_permit_of(throttle) {
            return CallerSeat::Held(Arc::clone(throttle));
        }
        throttle.acquire_permit();
        CALLER_PERMITS.with(|held| held.borrow_mut().push(Arc::as_ptr(throttle)));
        CallerSeat::Taken(Arc::clone(throttle))
    }

    /// After the body: runs `wait` (for the scope's jobs) holding no permit.
    pub(crate) fn wait(self, wait: impl FnOnce()) {
        match self {
            CallerSeat::Free => wait(),
            CallerSeat::Taken(throttle) => {
                let key = Arc::as_ptr(&throttle);
                CALLER_PERMITS.with(|held| {
                    let mut held = held.borrow_mut();
                    if let Some(i) = held.iter().rposition(|&k| k == key) {
                        held.remove(i);
                    }
                });
                throttle.release();
                wait();
            }
            CallerSeat::Held(throttle) => without(&throttle, wait),
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::without;
    use crate::latch::Latch;
    use crate::sync::{Arc, AtomicUsize, Ordering};
    use crate::throttle::Throttle;
    use loom::thread;

    /// One permit, held by a thread that runs its own work, then waits for work that needs
    /// a permit (a data-parallel call from a scope's body), then runs its own again. It
    /// gives the permit back for the wait; the worker takes it, runs the work, sets the
    /// latch and gives it back (after the latch, as a worker going idle does); the waiter
    /// takes it again. Never two inside, nobody stuck, no permit left.
    #[test]
    fn loom_a_waiter_gives_its_only_permit_to_the_work_it_waits_for() {
        loom::model(|| {
            let throttle = Arc::new(Throttle::new(1));
            let latch = Arc::new(Latch::default());
            let inside = Arc::new(AtomicUsize::new(0));
            let work = |inside: &AtomicUsize| {
                assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0);
                inside.fetch_sub(1, Ordering::SeqCst);
            };
            throttle.acquire_permit();
            let worker = {
                let (throttle, latch, inside) = (
                    Arc::clone(&throttle),
                    Arc::clone(&latch),
                    Arc::clone(&inside),
                );
                thread::spawn(move || {
                    throttle.acquire_permit();
                    work(&inside);
                    latch.set();
                    throttle.release();
                })
            };
            work(&inside);
            without(&throttle, || latch.wait_blocking());
            assert!(latch.probe());
            work(&inside);
            throttle.release();
            worker.join().unwrap();
            assert_eq!(throttle.in_use(), 0);
        });
    }
}
