//! Scopes: spawning jobs that borrow from the caller's stack.
//!
//! The scope counts its jobs in a [`CountLatch`] (see `latch.rs` for the protocol) and
//! does not return before the count reached zero, also when the body or a job
//! panicked. That wait is what makes lifetime erasure in [`Job::new_scoped`] sound.

use crate::caller::CallerSeat;
use crate::job::Job;
use crate::latch::CountLatch;
use crate::registry::{Registry, WorkerThread};
use std::any::Any;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::{Arc, Mutex};

/// A scope in which jobs may borrow anything that outlives `'scope`; created by
/// [`ThreadPool::scope`](crate::ThreadPool::scope).
///
/// ```
/// let pool = coretune_pool::ThreadPool::new(2)?;
/// let mut total = 0;
/// pool.scope(|s| s.spawn(|_| total = 42));
/// assert_eq!(total, 42);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Scope<'scope> {
    inner: Arc<ScopeInner>,
    /// Invariant in `'scope`, as in rayon-core and `std::thread::Scope`, so the
    /// compiler can neither shrink nor grow the borrow region.
    marker: PhantomData<fn(&'scope ()) -> &'scope ()>,
}

impl std::fmt::Debug for Scope<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope")
            .field("owner", &self.inner.owner)
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct ScopeInner {
    latch: CountLatch,
    registry: Arc<Registry>,
    /// The worker waiting on `latch`, if the scope was opened on a worker of this pool.
    owner: Option<usize>,
    /// The first panic of a job, re-raised by the scope once all jobs are done.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

impl ScopeInner {
    fn store_panic(&self, payload: Box<dyn Any + Send>) {
        let mut slot = self.panic.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(payload);
    }

    fn take_panic(&self) -> Option<Box<dyn Any + Send>> {
        self.panic.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// One job (or the body) is done; the last one wakes the waiting worker.
    fn complete(&self) {
        if self.latch.decrement() {
            if let Some(owner) = self.owner {
                self.registry.sleep.wake_specific(owner);
            }
        }
    }
}

impl<'scope> Scope<'scope> {
    /// Spawns a job that may borrow from outside the scope; the scope waits for it.
    /// A panic in the job is re-raised by the scope after every job finished.
    ///
    /// ```
    /// let pool = coretune_pool::ThreadPool::new(2)?;
    /// let mut halves = [0u64; 2];
    /// let (left, right) = halves.split_at_mut(1);
    /// pool.scope(|s| {
    ///     s.spawn(|_| left[0] = (1..=50).sum());
    ///     s.spawn(|_| right[0] = (51..=100).sum());
    /// });
    /// assert_eq!(halves[0] + halves[1], 5050);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spawn<F>(&self, f: F)
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        let job = self.job(f);
        self.inner.registry.push(job);
    }

    /// Spawns many jobs with one wake-up check (see
    /// [`ThreadPool::spawn_batch`](crate::ThreadPool::spawn_batch)).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// let pool = coretune_pool::ThreadPool::new(2)?;
    /// let hits = AtomicUsize::new(0);
    /// pool.scope(|s| s.spawn_batch((0..100).map(|_| |_: &coretune_pool::Scope<'_>| {
    ///     hits.fetch_add(1, Ordering::Relaxed);
    /// })));
    /// assert_eq!(hits.into_inner(), 100);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spawn_batch<I>(&self, tasks: I)
    where
        I: IntoIterator,
        I::Item: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        let jobs = tasks.into_iter().map(|f| self.job(f));
        crate::batch::push(&self.inner.registry, jobs);
    }

    /// Spawns `f` on worker `index` alone (for `broadcast`).
    pub(crate) fn spawn_on<F>(&self, index: usize, f: F)
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        let job = self.job(f);
        self.inner.registry.push_to(index, job);
    }

    fn job<F>(&self, f: F) -> Job
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        self.inner.latch.increment();
        let inner = Arc::clone(&self.inner);
        let body = move || {
            let scope = Scope {
                inner,
                marker: PhantomData,
            };
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| f(&scope))) {
                scope.inner.store_panic(payload);
            }
            scope.inner.complete();
        };
        // SAFETY: `run_scope` waits until the latch counts this job as complete before
        // it returns, on every path (the body's panic is caught first), so the job has
        // run, and dropped its borrows, before `'scope` ends. Jobs are never dropped
        // unrun: workers exit only once every queue is empty.
        unsafe { Job::new_scoped(body) }
    }
}

/// Runs `op` with a fresh scope on `registry` and waits for every job it spawned.
pub(crate) fn run_scope<'scope, OP, R>(registry: &Arc<Registry>, op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R,
{
    let owner = WorkerThread::with_current(|worker| {
        worker
            .filter(|worker| worker.is_in(registry))
            .map(WorkerThread::index)
    });
    let scope = Scope {
        inner: Arc::new(ScopeInner {
            latch: CountLatch::new(),
            registry: Arc::clone(registry),
            owner,
            panic: Mutex::new(None),
        }),
        marker: PhantomData,
    };
    let seat = CallerSeat::enter(registry, owner.is_some());
    let result = catch_unwind(AssertUnwindSafe(|| op(&scope)));
    // The body's own share; no wake-up needed, the owner is this thread.
    scope.inner.latch.decrement();
    let latch = scope.inner.latch.latch();
    WorkerThread::with_current(|worker| match worker {
        Some(worker) if owner.is_some() => worker.wait_until(latch),
        _ => seat.wait(|| latch.wait_blocking()),
    });
    let job_panic = scope.inner.take_panic();
    match result {
        Err(payload) => resume_unwind(payload),
        Ok(_) if job_panic.is_some() => resume_unwind(job_panic.unwrap_or_else(|| Box::new(()))),
        Ok(value) => value,
    }
}
