// The crate's front page is its README, so that docs.rs and crates.io (and the repository)
// show one text that cannot drift apart, and its examples run as this crate's doc tests. The
// README has to read well on crates.io too, so it names items in code spans rather than with
// intra-doc links, and each example is a whole program (`scripts/check-pool-package.sh` builds
// them as an outside crate would).
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
// docs.rs builds with every feature and `--cfg docsrs` (Cargo.toml): the items of the `async` and
// `peers` features carry a badge naming their feature.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod batch;
mod builder;
mod caller;
mod global;
mod group;
pub mod iter;
mod job;
mod join;
mod latch;
mod par;
#[cfg(all(feature = "peers", not(loom)))]
#[cfg_attr(docsrs, doc(cfg(feature = "peers")))]
pub mod peers;
mod places;
pub mod prelude;
mod registry;
mod ring;
mod scope;
mod sleep;
mod submitter;
mod sync;
mod sys;
pub mod throttle;

/// Documentation only: how the pool's idle workers go to sleep and how new work wakes
/// them, and why (the crate's `src/sleep/README.md`).
pub mod sleep_protocol {
    #![doc = include_str!("sleep/README.md")]
}

pub use builder::{NUM_THREADS_VAR, ThreadPoolBuildError, ThreadPoolBuilder};
pub use global::{current_num_threads, join, scope, spawn, spawn_fifo};
pub use group::thread_group;
pub use par::ParSource;
pub use scope::Scope;
pub use throttle::{
    AcquireError, AdaptiveConfig, OwnedThrottleGuard, Throttle, ThrottleGuard, ThrottleSeat,
    TraceSample, TryAcquireError,
};

use job::Job;
use registry::{Registry, WorkerThread};
use std::ops::Range;
use std::sync::Arc;
use std::thread::JoinHandle;

/// A work-stealing thread pool. Dropping it runs every queued task, then joins the
/// workers.
///
/// ```
/// let pool = coretune_pool::ThreadPool::new(2)?;
/// let (tx, rx) = std::sync::mpsc::channel();
/// pool.spawn(move || tx.send("done").unwrap());
/// assert_eq!(rx.recv()?, "done");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ThreadPool {
    registry: Arc<Registry>,
    threads: Vec<JoinHandle<()>>,
    cpus: Option<Vec<Vec<usize>>>,
}

impl ThreadPool {
    /// A pool of `num_threads` workers (0: one per available CPU) with default settings.
    ///
    /// # Errors
    ///
    /// If the OS refuses to start a thread.
    ///
    /// ```
    /// let pool = coretune_pool::ThreadPool::new(2)?;
    /// assert_eq!(pool.num_threads(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(num_threads: usize) -> Result<Self, ThreadPoolBuildError> {
        ThreadPoolBuilder::new().num_threads(num_threads).build()
    }

    pub(crate) fn from_parts(
        registry: Arc<Registry>,
        threads: Vec<JoinHandle<()>>,
        cpus: Option<Vec<Vec<usize>>>,
    ) -> Self {
        ThreadPool {
            registry,
            threads,
            cpus,
        }
    }

    /// Number of workers.
    ///
    /// ```
    /// let pool = coretune_pool::ThreadPool::new(0)?; // one per available CPU
    /// assert!(pool.num_threads() >= 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn num_threads(&self) -> usize {
        self.registry.num_threads()
    }

    /// The CPUs worker `index` was pinned to ([`ThreadPoolBuilder::cpus`]); `None` for
    /// an unpinned pool or an index out of range.
    ///
    /// ```
    /// let pool = coretune_pool::ThreadPool::new(2)?;
    /// assert_eq!(pool.worker_cpus(0), None); // not pinned
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn worker_cpus(&self, index: usize) -> Option<&[usize]> {
        self.cpus.as_ref()?.get(index).map(Vec::as_slice)
    }

    /// Worker `index`'s steal order: the workers it steals from, nearest first
    /// ([`ThreadPoolBuilder::steal_order`]); empty for an index out of range.
    ///
    /// ```
    /// let pool = coretune_pool::ThreadPool::new(3)?;
    /// assert_eq!(pool.steal_order(0), &[1, 2]); // the default: round-robin
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn steal_order(&self, index: usize) -> &[usize] {
        self.registry.steal_order(index)
    }

    /// Index of the current thread if it is a worker of this pool.
    ///
    /// ```
    /// let pool = coretune_pool::ThreadPool::new(2)?;
    /// assert_eq!(pool.current_thread_index(), None); // the caller is no worker
    /// let inside = pool.join(|| 0, || pool.current_thread_index());
    /// assert!(inside.1.is_none_or(|i| i < 2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn current_thread_index(&self) -> Option<usize> {
        WorkerThread::with_current(|worker| {
            worker
                .filter(|worker| worker.is_in(&self.registry))
                .map(WorkerThread::index)
        })
    }

    /// The throttle the pool was built with.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let pool = coretune_pool::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .throttle(Arc::new(coretune_pool::Throttle::new(1)))
    ///     .build()?;
    /// assert_eq!(pool.throttle().map(|t| t.limit()), Some(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn throttle(&self) -> Option<&Arc<Throttle>> {
        self.registry.throttle.as_ref()
    }

    /// Runs `task` on the pool, detached. Callable from any thread; from a worker of this
    /// pool it goes to that worker's own deque.
    ///
    /// A panic in `task` does not kill the worker: the payload goes to the builder's
    /// [`panic_handler`](ThreadPoolBuilder::panic_handler), or is dropped.
    ///
    /// ```
    /// use std::sync::{Arc, atomic::{AtomicU64, Ordering}};
    ///
    /// let pool = coretune_pool::ThreadPool::new(2)?;
    /// let sum = Arc::new(AtomicU64::new(0));
    /// for i in 1..=10 {
    ///     let sum = Arc::clone(&sum);
    ///     pool.spawn(move || { sum.fetch_add(i, Ordering::Relaxed); });
    /// }
    /// drop(pool); // waits for the queued tasks
    /// assert_eq!(sum.load(Ordering::Relaxed), 55);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// The task must be `Send`:
    ///
    /// ```compile_fail
    /// let pool = coretune_pool::ThreadPool::new(1)?;
    /// let rc = std::rc::Rc::new(1);
    /// pool.spawn(move || drop(rc));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spawn<F>(&self, task: F)
    where
        F: FnOnce() + Send + 'static,
    {
        self.registry.spawn(task);
    }

    /// Like [`spawn`](Self::spawn), but tasks start in the order they were spawned with
    /// `spawn_fifo` (from any thread): with one worker they also run in that order; with
    /// more, a later task may start while an earlier one still runs. Rayon promises this
    /// order for `spawn_fifo` calls from one thread; here it holds across threads too.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// let pool = coretune_pool::ThreadPool::new(1)?;
    /// let order = Arc::new(Mutex::new(Vec::new()));
    /// for i in 0..5 {
    ///     let order = Arc::clone(&order);
    ///     pool.spawn_fifo(move || order.lock().unwrap().push(i));
    /// }
    /// drop(pool); // runs every queued task
    /// assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3, 4]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spawn_fifo<F>(&self, task: F)
    where
        F: FnOnce() + Send + 'static,
    {
        self.registry.spawn_fifo(task);
    }

    /// Runs `op` on a worker of this pool and returns its result: on the calling thread if
    /// it is one, else on a worker while the calling thread blocks (a worker of another
    /// pool blocks too, without running its own pool's jobs meanwhile). Inside `op` the
    /// free functions ([`join`], [`scope`], [`spawn`], [`current_num_threads`], …) use this
    /// pool. Re-raises a panic of `op`.
    ///
    /// ```
    /// let pool = coretune_pool::ThreadPool::new(3)?;
    /// let (threads, index) = pool.install(|| {
    ///     (coretune_pool::current_num_threads(), pool.current_thread_index())
    /// });
    /// assert_eq!(threads, 3);
    /// assert!(index.is_some_and(|i| i < 3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn install<OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce() -> R + Send,
        R: Send,
    {
        join::in_worker(&self.registry, |_worker| op())
    }

    /// Spawns every task of `tasks`, checking for sleeping workers once for the whole
    /// batch instead of once per task.
    ///
    /// ```
    /// use std::sync::{Arc, atomic::{AtomicUsize, Ordering}};
    ///
    /// let pool = coretune_pool::ThreadPool::new(2)?;
    /// let count = Arc::new(AtomicUsize::new(0));
    /// pool.spawn_batch((0..100).map(|_| {
    ///     let count = Arc::clone(&count);
    ///     move || { count.fetch_add(1, Ordering::Relaxed); }
    /// }));
    /// drop(pool); // runs every queued task
    /// assert_eq!(count.load(Ordering::Relaxed), 100);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spawn_batch<I>(&self, tasks: I)
    where
        I: IntoIterator,
        I::Item: FnOnce() + Send + 'static,
    {
        batch::push(&self.registry, tasks.into_iter().map(Job::new));
    }

    /// Runs `op` on the calling thread with a [`Scope`] whose spawned jobs may borrow
    /// from the caller; returns once all of them finished. If `op` or a job panicked,
    /// re-raises the panic (the body's first, else the first job's) after that.
    ///
    /// ```
    /// let pool = coretune_pool::ThreadPool::new(2)?;
    /// let words = ["a", "bb", "ccc"];
    /// let mut lengths = [0; 3];
    /// pool.scope(|s| {
    ///     for (len, word) in lengths.iter_mut().zip(words) {
    ///         s.spawn(move |_| *len = word.len());
    ///     }
    /// });
    /// assert_eq!(lengths, [1, 2, 3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scope<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&Scope<'scope>) -> R,
    {
        scope::run_scope(&self.registry, op)
    }

    /// Runs `a` on the calling thread and `b` on the pool (or on the calling thread, if
    /// it is a worker and nobody stole `b` first); returns both results. A panic in
    /// either is re-raised once both finished.
    ///
    /// On a worker of this pool it allocates nothing: `b` waits on the worker's own deque
    /// and, unless stolen, runs right after `a` (`src/join.rs`), so recursive `join`s are
    /// cheap. From another thread it costs a scope.
    ///
    /// ```
    /// let pool = coretune_pool::ThreadPool::new(2)?;
    /// fn fib(pool: &coretune_pool::ThreadPool, n: u64) -> u64 {
    ///     if n < 10 { return (1..=n).fold((0, 1), |(a, b), _| (b, a + b)).0; }
    ///     let (a, b) = pool.join(|| fib(pool, n - 1), || fib(pool, n - 2));
    ///     a + b
    /// }
    /// assert_eq!(fib(&pool, 20), 6765);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn join<A, B, RA, RB>(&self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA,
        B: FnOnce() -> RB + Send,
        RB: Send,
    {
        let mut ops = Some((a, b));
        let result = WorkerThread::with_current(|worker| {
            let worker = worker.filter(|worker| worker.is_in(&self.registry))?;
            let (a, b) = ops.take()?;
            Some(join::join_worker(worker, |_| a(), |_| b()))
        });
        let (a, b) = match (result, ops) {
            (Some(result), _) => return result,
            (None, Some(ops)) => ops,
            (None, None) => unreachable!("the closures are taken only on a worker"),
        };
        let mut result_b = None;
        let slot = &mut result_b;
        let result_a = self.scope(|s| {
            s.spawn(move |_| *slot = Some(b()));
            a()
        });
        let result_b = result_b.expect("the scope waited for b, which returned");
        (result_a, result_b)
    }

    /// Calls `f(i)` for every `i` in `range`, in chunks of `chunk` consecutive indices
    /// per task (a `chunk` of 0 counts as 1). Returns when all calls returned; re-raises
    /// a panic of `f`.
    ///
    /// The manual form: each chunk is a task, so a small `chunk` costs a task per few
    /// items. [`for_each`](Self::for_each) (over a range, a slice or a vector) splits by
    /// itself and needs no chunk size.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// let pool = coretune_pool::ThreadPool::new(2)?;
    /// let hits: Vec<AtomicUsize> = (0..100).map(|_| AtomicUsize::new(0)).collect();
    /// pool.par_for(0..100, 7, |i| { hits[i].fetch_add(1, Ordering::Relaxed); });
    /// assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn par_for<F>(&self, range: Range<usize>, chunk: usize, f: F)
    where
        F: Fn(usize) + Sync,
    {
        let chunk = chunk.max(1);
        let end = range.end;
        let f = &f;
        self.scope(|s| {
            s.spawn_batch(range.step_by(chunk).map(|start| {
                move |_: &Scope<'_>| (start..end.min(start.saturating_add(chunk))).for_each(f)
            }));
        });
    }

    /// Runs `f(i)` once on every worker `i` and returns the results in worker order.
    /// Re-raises a panic of `f` after every worker ran it.
    ///
    /// ```
    /// let pool = coretune_pool::ThreadPool::new(2)?;
    /// let indices = pool.broadcast(|i| (i, pool.current_thread_index()));
    /// assert_eq!(indices, vec![(0, Some(0)), (1, Some(1))]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn broadcast<F, R>(&self, f: F) -> Vec<R>
    where
        F: Fn(usize) -> R + Sync,
        R: Send,
    {
        let mut results: Vec<Option<R>> = (0..self.num_threads()).map(|_| None).collect();
        let f = &f;
        self.scope(|s| {
            for (index, slot) in results.iter_mut().enumerate() {
                s.spawn_on(index, move |_| *slot = Some(f(index)));
            }
        });
        results
            .into_iter()
            .map(|r| r.expect("the scope waited for every worker's call"))
            .collect()
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        self.registry.terminate();
        if self.current_thread_index().is_some() {
            // Dropped by one of its own tasks: joining would wait for this very thread.
            // The workers still finish the queued work, then exit on their own.
            return;
        }
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}
