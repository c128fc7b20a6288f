//! `join` on a worker without allocation, and running a closure on a worker
//! (`install`): the base of the data-parallel operations (`par.rs`).
//!
//! # Join on a worker
//!
//! `ThreadPool::join` from outside the pool opens a scope (an `Arc`, a mutex, a latch with a
//! condition variable): fine once, too slow when `join` recurses thousands of times, as the
//! splitting of `par.rs` does. On a worker of the pool, [`join_worker`] does what
//! rayon-core's `join_context` does: `b` goes into a [`StackJob`] on the caller's stack; a
//! one-word job pointing at it is pushed on the worker's own deque (LIFO end); the worker
//! runs `a`, then pops its own deque: if nobody stole `b`, the pop returns it (or jobs `a`
//! left above it, which are run first) and `b` runs here, without any synchronisation
//! beyond the deque's own. If `b` was stolen, the worker runs other jobs (and steals) until
//! the thief sets `b`'s flag, then wakes the owner by index if it fell asleep.
//!
//! The job on the deque is two words, the `StackJob`'s address and a function
//! ([`Job::from_pointer`]); the worker recognises it by the address when it pops it back,
//! forgets it and calls `b` directly (inlined, no indirect call, no flag). A job popped
//! above it (left by `a`) is executed as any job.
//!
//! # Lifetime
//!
//! The job on the deque points into the caller's stack frame. [`join_worker`] does not
//! return (nor unwind: `a`'s panic is caught) before `b`'s flag is set, and the setter
//! touches nothing of the [`StackJob`] after setting it, so the pointer never dangles when
//! used. A job on a worker's deque is only ever taken by that worker or a thief of the same
//! pool, and every queued job is run before the workers exit.
//!
//! # install from outside the pool
//!
//! [`in_worker`] on a thread that is not a worker of the pool queues the closure as a job
//! and blocks on a [`Latch`] (a mutex and a condition variable) kept alive by an `Arc` that
//! the setter holds while it signals. A worker of *another* pool blocks in the same way
//! (it does not run its own pool's jobs meanwhile). A thread holding a permit of the
//! pool's throttle (a scope's body, a task of a pool with the same throttle) gives it back
//! while it blocks (`caller.rs` says why).

use crate::caller;
use crate::job::Job;
use crate::latch::Latch;
use crate::registry::{Registry, WorkerThread};
use std::cell::UnsafeCell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// How a finished [`StackJob`] tells its owner.
trait Signal {
    /// Marks the job done. The owner may free the job as soon as it sees that, so an
    /// implementation must not touch `self` after the store the owner observes.
    fn set(&self, runner: Option<&WorkerThread>);
}

/// The flag of `b` in a join on a worker: the owner probes it while running other jobs.
struct SpinSignal {
    done: AtomicBool,
    /// The joining worker, woken by index when a thief finished `b`.
    owner: usize,
}

impl Signal for SpinSignal {
    fn set(&self, runner: Option<&WorkerThread>) {
        let owner = self.owner;
        self.done.store(true, Ordering::Release);
        // `self` may be freed from here on.
        if let Some(runner) = runner {
            if runner.index() != owner {
                // The runner is a worker of the owner's pool (only those take jobs off its
                // deque): wake the owner if it went to sleep waiting.
                runner.registry().sleep.wake_if_sleeping(owner);
            }
        }
    }
}

/// A blocking latch for a thread outside the pool, shared with the setter.
struct BlockingSignal(Arc<Latch>);

impl Signal for BlockingSignal {
    fn set(&self, _runner: Option<&WorkerThread>) {
        // Our own reference keeps the latch (and its mutex) alive while `set` unlocks.
        let latch = Arc::clone(&self.0);
        latch.set();
    }
}

/// A closure and its result, on the stack of the thread that waits for it.
struct StackJob<S, F, R> {
    func: UnsafeCell<Option<F>>,
    result: UnsafeCell<Option<std::thread::Result<R>>>,
    signal: S,
    /// The worker that created the job (`None` outside the pool): a job run by another
    /// worker was *migrated* (stolen), which the splitting of `par.rs` reacts to.
    creator: Option<usize>,
}

impl<S: Signal, F: FnOnce(bool) -> R + Send, R: Send> StackJob<S, F, R> {
    fn new(func: F, signal: S, creator: Option<usize>) -> Self {
        StackJob {
            func: UnsafeCell::new(Some(func)),
            result: UnsafeCell::new(None),
            signal,
            creator,
        }
    }

    /// A queue job that runs this one on whichever worker takes it; its
    /// [`Job::pointer_data`] is this job's address.
    ///
    /// # Safety
    ///
    /// The caller must keep `self` alive, and not touch `func` or `result`, until the
    /// signal is set or it took the job back off its deque, and must make sure the
    /// returned job is run or taken back (not dropped unrun).
    unsafe fn as_job(&self) -> Job {
        // SAFETY: per the contract, `self` is alive when the job runs, and the queue runs
        // it at most once.
        unsafe { Job::from_pointer(self.as_data(), Self::execute_erased) }
    }

    /// This job's address, as its queue job carries it.
    fn as_data(&self) -> *const () {
        std::ptr::from_ref(self).cast()
    }

    /// [`StackJob::execute`] on the current worker, from the queue job's data.
    ///
    /// # Safety
    ///
    /// `data` comes from [`StackJob::as_job`] of a `Self` whose contract still holds.
    unsafe fn execute_erased(data: *const ()) {
        let job = data.cast::<Self>();
        // SAFETY: per the contract, `job` points to a live `Self` that waits to be run.
        WorkerThread::with_current(|runner| unsafe { (*job).execute(runner) });
    }

    /// Runs the closure, stores its result (or panic) and sets the signal.
    ///
    /// # Safety
    ///
    /// Called once, while the owner waits for the signal.
    unsafe fn execute(&self, runner: Option<&WorkerThread>) {
        // SAFETY: only this call touches `func` until the signal is set (contract).
        let func = unsafe { (*self.func.get()).take() };
        if let Some(func) = func {
            let migrated = match (runner, self.creator) {
                (Some(runner), Some(creator)) => runner.index() != creator,
                _ => true,
            };
            let result = catch_unwind(AssertUnwindSafe(|| func(migrated)));
            // SAFETY: as above; the owner reads `result` only after the signal.
            unsafe { *self.result.get() = Some(result) };
        }
        self.signal.set(runner);
    }

    /// The result, once the signal was seen set: re-raises the closure's panic.
    fn into_result(self) -> R {
        match self.result.into_inner() {
            Some(Ok(value)) => value,
            Some(Err(payload)) => resume_unwind(payload),
            // `execute` stores a result before it sets the signal.
            None => unreachable!("a job's signal is set after its result is stored"),
        }
    }
}

/// Runs `a` and `b`, potentially in parallel, on `worker` (see the module doc): `a` here,
/// `b` pushed on the worker's deque. Each gets `true` if it runs on another worker than
/// the one that called `join_worker` (it was stolen). A panic in either is re-raised once
/// both finished (`a`'s first).
pub(crate) fn join_worker<A, B, RA, RB>(worker: &WorkerThread, a: A, b: B) -> (RA, RB)
where
    A: FnOnce(bool) -> RA,
    B: FnOnce(bool) -> RB + Send,
    RB: Send,
{
    let job_b = StackJob::new(
        b,
        SpinSignal {
            done: AtomicBool::new(false),
            owner: worker.index(),
        },
        Some(worker.index()),
    );
    let is_done = || job_b.signal.done.load(Ordering::Acquire);
    // SAFETY: this function does not return or unwind (a's panic is caught) before the
    // signal is set or it took the job back off its deque, and jobs on a worker's deque
    // are always run.
    worker.push_local(unsafe { job_b.as_job() });
    worker.registry().sleep.notify_new_jobs(1);
    let result_a = catch_unwind(AssertUnwindSafe(|| a(false)));
    // Pops `b` back (then it is not run yet), or waits until a thief ran it.
    let reclaimed = loop {
        if is_done() {
            break None;
        }
        match worker.pop_local() {
            Some(job) if job.pointer_data() == Some(job_b.as_data()) => {
                // Our own job: nobody else can run it now. It owns nothing but the pointer.
                std::mem::forget(job);
                // SAFETY: the job is off the deque, so this thread alone touches `func`.
                break unsafe { (*job_b.func.get()).take() };
            }
            // A job `a` left above `b`.
            Some(job) => worker.execute(job),
            None => {
                // Stolen: run other jobs until the thief is done.
                worker.wait_until_done(is_done);
                break None;
            }
        }
    };
    match (result_a, reclaimed) {
        (Ok(result_a), Some(b)) => (result_a, b(false)),
        (Ok(result_a), None) => (result_a, job_b.into_result()),
        (Err(payload), reclaimed) => {
            // `b` still runs (as when stolen), its panic second to `a`'s.
            if let Some(b) = reclaimed {
                let _ = catch_unwind(AssertUnwindSafe(|| b(false)));
            }
            resume_unwind(payload)
        }
    }
}

/// Runs `op` on a worker of `registry`: here if this thread is one, else queued as a job
/// while this thread blocks. `op` gets the worker it runs on. Re-raises its panic.
pub(crate) fn in_worker<OP, R>(registry: &Arc<Registry>, op: OP) -> R
where
    OP: FnOnce(&WorkerThread) -> R + Send,
    R: Send,
{
    let op = WorkerThread::with_current(|worker| match worker {
        Some(worker) if worker.is_in(registry) => Ok(op(worker)),
        _ => Err(op),
    });
    match op {
        Ok(result) => result,
        Err(op) => in_worker_cold(registry, op),
    }
}

/// [`in_worker`] from a thread that is not a worker of `registry`.
fn in_worker_cold<OP, R>(registry: &Arc<Registry>, op: OP) -> R
where
    OP: FnOnce(&WorkerThread) -> R + Send,
    R: Send,
{
    let latch = Arc::new(Latch::default());
    let job = StackJob::new(
        |_migrated: bool| {
            WorkerThread::with_current(|worker| match worker {
                Some(worker) => op(worker),
                // Jobs run on the pool's workers only.
                None => unreachable!("a queued job runs on a worker"),
            })
        },
        BlockingSignal(Arc::clone(&latch)),
        None,
    );
    // SAFETY: this thread blocks on the latch, which the signal sets, before `job` goes
    // out of scope; the pool runs every queued job.
    registry.push(unsafe { job.as_job() });
    // A permit this thread holds (a scope's body) goes to the worker running `op` meanwhile.
    caller::wait_without_permit(registry, || latch.wait_blocking());
    job.into_result()
}
