//! The global pool and the free functions that use the current pool: the pool of the
//! calling worker, or else the global pool, built on first use (as rayon's).

use crate::builder::{ThreadPoolBuildError, ThreadPoolBuilder};
use crate::registry::{Registry, WorkerThread};
use crate::{Scope, ThreadPool};
use std::sync::{Arc, OnceLock};

static GLOBAL: OnceLock<ThreadPool> = OnceLock::new();

// `build_global` is defined here, with the pool it sets, rather than in `builder.rs`: the
// builder knows nothing of the global pool, which is built with it.
impl ThreadPoolBuilder {
    /// Builds the global pool: the pool that the free functions
    /// ([`join`](crate::join), [`scope`](crate::scope), [`spawn`](crate::spawn),
    /// [`spawn_fifo`](crate::spawn_fifo), [`current_num_threads`](crate::current_num_threads))
    /// use when called from a thread that is no worker. Without this call the first such
    /// call builds it with [`num_threads`](Self::num_threads) from the environment variable
    /// `CORETUNE_NUM_THREADS` (a positive integer; otherwise the default, the CPU budget).
    ///
    /// # Errors
    ///
    /// If the global pool exists already (built here or on first use), or as
    /// [`build`](Self::build).
    ///
    /// ```
    /// let built = coretune_pool::ThreadPoolBuilder::new().num_threads(2).build_global();
    /// if built.is_ok() {
    ///     assert_eq!(coretune_pool::current_num_threads(), 2);
    /// }
    /// // Only once per process.
    /// assert!(coretune_pool::ThreadPoolBuilder::new().build_global().is_err());
    /// ```
    pub fn build_global(self) -> Result<(), ThreadPoolBuildError> {
        if GLOBAL.get().is_some() {
            return Err(ThreadPoolBuildError::global_exists());
        }
        let pool = self.build()?;
        GLOBAL
            .set(pool)
            .map_err(|_pool| ThreadPoolBuildError::global_exists())
    }
}

/// The global pool, built on first use from the environment as
/// [`ThreadPoolBuilder::from_env`] reads it (`CORETUNE_NUM_THREADS` workers, else the CPU
/// budget; coretune's places, each worker pinning itself) — except that the thread that
/// happens to use it first is not bound to place 0: it may be any thread of the program. A
/// variable that does not parse is said on stderr, once, and the default pool is built (as
/// rayon ignores a bad `RAYON_NUM_THREADS`).
///
/// # Panics
///
/// If the OS refuses to start even one worker thread.
fn global() -> &'static ThreadPool {
    GLOBAL.get_or_init(|| {
        let builder = ThreadPoolBuilder::from_env()
            .map(ThreadPoolBuilder::without_caller_place)
            .unwrap_or_else(|error| {
                eprintln!(
                    "coretune-pool: ignoring {error}; the global pool takes the default size"
                );
                ThreadPoolBuilder::new()
            });
        builder
            .build()
            .or_else(|error| {
                eprintln!("coretune-pool: the global pool failed ({error}); trying 1 thread");
                ThreadPoolBuilder::new().num_threads(1).build()
            })
            .unwrap_or_else(|error| {
                panic!("coretune-pool: could not start the global thread pool: {error}")
            })
    })
}

/// Calls `f` with the current pool: the pool of the calling worker, else the global pool.
pub(crate) fn with_current_registry<R>(f: impl FnOnce(&Arc<Registry>) -> R) -> R {
    let mut f = Some(f);
    let result = WorkerThread::with_current(|worker| {
        let worker = worker?;
        let f = f.take()?;
        Some(f(worker.registry()))
    });
    match (result, f) {
        (Some(result), _) => result,
        (None, Some(f)) => f(&global().registry),
        (None, None) => unreachable!("`f` is taken only on a worker"),
    }
}

/// Number of workers of the current pool: the pool of the calling worker, else the
/// global pool (which this builds if it does not exist yet).
///
/// ```
/// let pool = coretune_pool::ThreadPool::new(3)?;
/// assert_eq!(pool.install(coretune_pool::current_num_threads), 3);
/// assert!(coretune_pool::current_num_threads() >= 1); // the global pool's
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn current_num_threads() -> usize {
    with_current_registry(|registry| registry.num_threads())
}

/// [`ThreadPool::join`] in the current pool (the calling worker's, else the global pool).
///
/// ```
/// fn fib(n: u64) -> u64 {
///     if n < 10 { return (1..=n).fold((0, 1), |(a, b), _| (b, a + b)).0; }
///     let (a, b) = coretune_pool::join(|| fib(n - 1), || fib(n - 2));
///     a + b
/// }
/// assert_eq!(fib(25), 75025);
/// ```
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA,
    B: FnOnce() -> RB + Send,
    RB: Send,
{
    let mut ops = Some((a, b));
    let result = WorkerThread::with_current(|worker| {
        let worker = worker?;
        let (a, b) = ops.take()?;
        Some(crate::join::join_worker(worker, |_| a(), |_| b()))
    });
    match (result, ops) {
        (Some(result), _) => result,
        (None, Some((a, b))) => global().join(a, b),
        (None, None) => unreachable!("the closures run on one path"),
    }
}

/// [`ThreadPool::scope`] in the current pool (the calling worker's, else the global pool).
///
/// ```
/// let mut sums = [0u64; 2];
/// let (left, right) = sums.split_at_mut(1);
/// coretune_pool::scope(|s| {
///     s.spawn(|_| left[0] = (1..=50).sum());
///     s.spawn(|_| right[0] = (51..=100).sum());
/// });
/// assert_eq!(sums[0] + sums[1], 5050);
/// ```
pub fn scope<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R,
{
    with_current_registry(|registry| crate::scope::run_scope(registry, op))
}

/// [`ThreadPool::spawn`] in the current pool (the calling worker's, else the global pool).
///
/// ```
/// let (tx, rx) = std::sync::mpsc::channel();
/// coretune_pool::spawn(move || tx.send(42).unwrap());
/// assert_eq!(rx.recv()?, 42);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn spawn<F>(task: F)
where
    F: FnOnce() + Send + 'static,
{
    with_current_registry(|registry| registry.spawn(task));
}

/// [`ThreadPool::spawn_fifo`] in the current pool (the calling worker's, else the global
/// pool).
///
/// ```
/// let (tx, rx) = std::sync::mpsc::channel();
/// coretune_pool::spawn_fifo(move || tx.send(42).unwrap());
/// assert_eq!(rx.recv()?, 42);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn spawn_fifo<F>(task: F)
where
    F: FnOnce() + Send + 'static,
{
    with_current_registry(|registry| registry.spawn_fifo(task));
}
