//! Configuration and construction of a [`ThreadPool`].

use crate::ThreadPool;
use crate::registry::{PanicHandler, Registry};
use crate::throttle::Throttle;
use crate::worker;
use std::any::Any;
use std::sync::Arc;

type ThreadNameFn = Box<dyn FnMut(usize) -> String>;
type StartHandler = Arc<dyn Fn(usize) + Send + Sync>;

/// Configures a [`ThreadPool`]: thread count and names, stack size, each worker's CPUs
/// and steal order (a placement, as plain data), a per-worker start hook, a panic handler
/// and a throttle.
///
/// ```
/// use coretune_pool::ThreadPoolBuilder;
///
/// let pool = ThreadPoolBuilder::new()
///     .num_threads(2)
///     .thread_name(|i| format!("worker-{i}"))
///     .steal_order(vec![vec![1], vec![0]])
///     .start_handler(|i| assert!(i < 2))
///     .build()?;
/// assert_eq!(pool.num_threads(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Default)]
pub struct ThreadPoolBuilder {
    num_threads: usize,
    thread_name: Option<ThreadNameFn>,
    stack_size: Option<usize>,
    start_handler: Option<StartHandler>,
    exit_handler: Option<StartHandler>,
    cpus: Option<Vec<Vec<usize>>>,
    steal_order: Option<Vec<Vec<usize>>>,
    panic_handler: Option<PanicHandler>,
    throttle: Option<Arc<Throttle>>,
}

impl std::fmt::Debug for ThreadPoolBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadPoolBuilder")
            .field("num_threads", &self.num_threads)
            .field("thread_name", &self.thread_name.is_some())
            .field("stack_size", &self.stack_size)
            .field("start_handler", &self.start_handler.is_some())
            .field("exit_handler", &self.exit_handler.is_some())
            .field("cpus", &self.cpus)
            .field("steal_order", &self.steal_order)
            .field("panic_handler", &self.panic_handler.is_some())
            .field("throttle", &self.throttle)
            .finish()
    }
}

impl ThreadPoolBuilder {
    /// A builder with defaults: one worker per available CPU, round-robin steal order,
    /// panics of detached tasks dropped, no throttle.
    ///
    /// ```
    /// let pool = coretune_pool::ThreadPoolBuilder::new().build()?;
    /// assert!(pool.num_threads() >= 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of workers; 0 (the default) means the process's CPU budget, as
    /// `std::thread::available_parallelism` reads it: on Linux the CPUs its affinity allows
    /// (which the cgroup cpuset narrows), and the CPU quota of its cgroup and every ancestor
    /// (`cpu.max`, or v1's `cpu.cfs_quota_us / cpu.cfs_period_us`) **rounded down**, at least 1;
    /// elsewhere the CPUs the process may use. Not the CPUs the machine has: a container
    /// allowed 2.5 CPUs of 64 gets 2 workers.
    ///
    /// Rounding down is uber's `automaxprocs` rule (and the standard library's). Go 1.25
    /// rounds the quota *up*, with a minimum of 2: its goroutines park cheaply, while a
    /// pool's workers are OS threads, and 3 busy workers on 2.5 CPUs' worth of quota spend
    /// the end of every CFS period throttled — every thread of the cgroup stopped, a lock
    /// holder included — which shows as latency spikes; 2 workers leave half a CPU to the
    /// program's other threads instead (`tests/budget.rs` checks the rule in a real cgroup).
    ///
    /// ```
    /// let pool = coretune_pool::ThreadPoolBuilder::new().num_threads(3).build()?;
    /// assert_eq!(pool.num_threads(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn num_threads(mut self, num_threads: usize) -> Self {
        self.num_threads = num_threads;
        self
    }

    /// Names worker `i` `name(i)`.
    ///
    /// ```
    /// let pool = coretune_pool::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .thread_name(|i| format!("solver-{i}"))
    ///     .build()?;
    /// let names = pool.broadcast(|_| std::thread::current().name().map(str::to_owned));
    /// assert_eq!(names, [Some("solver-0".into()), Some("solver-1".into())]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn thread_name(mut self, name: impl FnMut(usize) -> String + 'static) -> Self {
        self.thread_name = Some(Box::new(name));
        self
    }

    /// Stack size of each worker, in bytes.
    ///
    /// ```
    /// let pool = coretune_pool::ThreadPoolBuilder::new()
    ///     .num_threads(1)
    ///     .stack_size(8 << 20)
    ///     .build()?;
    /// // Deep recursion that needs more than a small default stack.
    /// fn depth(n: u64) -> u64 { if n == 0 { 0 } else { 1 + depth(std::hint::black_box(n - 1)) } }
    /// assert_eq!(pool.join(|| 0, || depth(10_000)).1, 10_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Runs `handler(i)` on worker `i` before it takes any job, e.g. to pin it to its
    /// CPU set. A panic in the handler goes to the panic handler; the worker still runs.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// let started = Arc::new(Mutex::new(Vec::new()));
    /// let log = Arc::clone(&started);
    /// let pool = coretune_pool::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .start_handler(move |i| log.lock().unwrap().push(i))
    ///     .build()?;
    /// pool.broadcast(|_| ()); // every worker has started
    /// let mut started = started.lock().unwrap().clone();
    /// started.sort();
    /// assert_eq!(started, [0, 1]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start_handler(mut self, handler: impl Fn(usize) + Send + Sync + 'static) -> Self {
        self.start_handler = Some(Arc::new(handler));
        self
    }

    /// Runs `handler(i)` on worker `i` when it exits (the pool was dropped and no work is
    /// left), after its last job. A panic in the handler goes to the panic handler.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// let exited = Arc::new(Mutex::new(Vec::new()));
    /// let log = Arc::clone(&exited);
    /// let pool = coretune_pool::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .exit_handler(move |i| log.lock().unwrap().push(i))
    ///     .build()?;
    /// drop(pool); // joins the workers
    /// let mut exited = exited.lock().unwrap().clone();
    /// exited.sort();
    /// assert_eq!(exited, [0, 1]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn exit_handler(mut self, handler: impl Fn(usize) + Send + Sync + 'static) -> Self {
        self.exit_handler = Some(Arc::new(handler));
        self
    }

    /// Pins worker `i` to the CPUs `cpus[i % cpus.len()]` (OS CPU numbers, as in
    /// `/proc/cpuinfo`) before it runs its start handler or any job: coretune-core's
    /// `Placement::pool_builder` passes a placement's per-thread CPU sets here.
    /// [`build`](Self::build) returns once every worker is pinned, or fails naming the
    /// first worker the kernel refused. Pinning works on Linux and on Windows, where a set
    /// is pinned to the processor group [`thread_group`](crate::thread_group) chooses;
    /// elsewhere a non-empty list fails.
    ///
    /// ```
    /// # #[cfg(target_os = "linux")] {
    /// use coretune_pool::ThreadPoolBuilder;
    ///
    /// // Both workers on CPU 0, which every Linux machine has (unless a `taskset`
    /// // forbids it to this process).
    /// let pool = ThreadPoolBuilder::new().num_threads(2).cpus(vec![vec![0]]).build();
    /// if let Ok(pool) = pool {
    ///     assert_eq!(pool.worker_cpus(1), Some(&[0][..]));
    /// }
    /// # }
    /// ```
    pub fn cpus(mut self, cpus: Vec<Vec<usize>>) -> Self {
        self.cpus = Some(cpus);
        self
    }

    /// For each worker, the workers it steals from, nearest first (e.g. same core, same
    /// cache, same package). The default is round-robin: worker `i` tries `i+1, i+2, …`.
    /// Checked by [`build`](Self::build): one list per worker, indices in range and not
    /// the worker itself. A worker left out of a list is never robbed by that thief.
    ///
    /// ```
    /// // Workers 0-1 and 2-3 share a cache: each robs its partner first.
    /// let pool = coretune_pool::ThreadPoolBuilder::new()
    ///     .num_threads(4)
    ///     .steal_order(vec![vec![1, 2, 3], vec![0, 3, 2], vec![3, 0, 1], vec![2, 1, 0]])
    ///     .build()?;
    /// assert_eq!(pool.steal_order(2), &[3, 0, 1]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn steal_order(mut self, order: Vec<Vec<usize>>) -> Self {
        self.steal_order = Some(order);
        self
    }

    /// Called with the payload when a detached [`ThreadPool::spawn`] task panics. Without
    /// one the payload is dropped (the panic hook has printed it). The worker survives
    /// either way.
    ///
    /// ```
    /// use std::sync::{Arc, atomic::{AtomicUsize, Ordering}};
    /// let caught = Arc::new(AtomicUsize::new(0));
    /// let count = Arc::clone(&caught);
    /// let pool = coretune_pool::ThreadPoolBuilder::new()
    ///     .num_threads(1)
    ///     .panic_handler(move |_payload| { count.fetch_add(1, Ordering::SeqCst); })
    ///     .build()?;
    /// pool.spawn(|| panic!("lost task"));
    /// drop(pool); // runs the task, then joins
    /// assert_eq!(caught.load(Ordering::SeqCst), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn panic_handler(
        mut self,
        handler: impl Fn(Box<dyn Any + Send>) + Send + Sync + 'static,
    ) -> Self {
        self.panic_handler = Some(Arc::new(handler));
        self
    }

    /// Lets at most `throttle.limit()` workers run tasks at once; each finished task is
    /// reported to the throttle (which drives an adaptive limit).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let throttle = Arc::new(coretune_pool::Throttle::new(1));
    /// let pool = coretune_pool::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .throttle(Arc::clone(&throttle))
    ///     .build()?;
    /// pool.par_for(0..100, 1, |_| assert!(throttle.in_use() <= 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn throttle(mut self, throttle: Arc<Throttle>) -> Self {
        self.throttle = Some(throttle);
        self
    }

    /// Starts the workers.
    ///
    /// # Errors
    ///
    /// If the steal order does not have one list per worker, names a worker out of range
    /// or a worker itself; if [`cpus`](Self::cpus) is empty or has an empty set; if the OS
    /// refuses to start a thread or to pin a worker to its CPUs.
    ///
    /// ```
    /// let error = coretune_pool::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .steal_order(vec![vec![1]]) // one list for two workers
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(error.to_string(), "steal order has 1 lists but the pool has 2 workers");
    /// let pool = coretune_pool::ThreadPoolBuilder::new().num_threads(2).build()?;
    /// assert_eq!(pool.num_threads(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(mut self) -> Result<ThreadPool, ThreadPoolBuildError> {
        let n = match self.num_threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        let cpus = match self.cpus.take() {
            Some(cpus) => {
                validate_cpus(&cpus)?;
                let sets: Vec<Vec<usize>> = (0..n).map(|i| cpus[i % cpus.len()].clone()).collect();
                Some(sets)
            }
            None => None,
        };
        let steal_order = match self.steal_order.take() {
            Some(order) => {
                validate_steal_order(&order, n)?;
                order
            }
            None => round_robin(n),
        };
        let locals: Vec<_> = (0..n)
            .map(|_| crossbeam_deque::Worker::new_lifo())
            .collect();
        let stealers = locals
            .iter()
            .map(crossbeam_deque::Worker::stealer)
            .collect();
        let registry = Arc::new(Registry::new(
            stealers,
            steal_order,
            self.panic_handler.take(),
            self.throttle.take(),
        ));
        let mut threads = Vec::with_capacity(n);
        // Each pinned worker reports whether the kernel took its CPU set.
        let (pinned_tx, pinned_rx) = std::sync::mpsc::channel();
        for (index, local) in locals.into_iter().enumerate() {
            let mut thread = std::thread::Builder::new();
            if let Some(name) = &mut self.thread_name {
                thread = thread.name(name(index));
            }
            if let Some(bytes) = self.stack_size {
                thread = thread.stack_size(bytes);
            }
            let worker_registry = Arc::clone(&registry);
            let start = worker::Start {
                cpus: cpus
                    .as_ref()
                    .map(|sets| (sets[index].clone(), pinned_tx.clone())),
                handler: self.start_handler.clone(),
                exit_handler: self.exit_handler.clone(),
            };
            match thread.spawn(move || worker::run(worker_registry, index, local, start)) {
                Ok(handle) => threads.push(handle),
                Err(error) => {
                    stop(&registry, threads);
                    return Err(ThreadPoolBuildError(ErrorKind::Spawn(error)));
                }
            }
        }
        drop(pinned_tx);
        if let Some(sets) = &cpus {
            // Every worker sends once (its thread runs at least that far).
            let mut refused: Option<(usize, std::io::Error)> = None;
            for (worker, result) in pinned_rx.iter().take(n) {
                if let Err(error) = result {
                    if refused.as_ref().is_none_or(|(first, _)| worker < *first) {
                        refused = Some((worker, error));
                    }
                }
            }
            if let Some((worker, error)) = refused {
                stop(&registry, threads);
                return Err(ThreadPoolBuildError(ErrorKind::Pin {
                    worker,
                    cpus: sets[worker].clone(),
                    error,
                }));
            }
        }
        Ok(ThreadPool::from_parts(registry, threads, cpus))
    }
}

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
        if crate::global::exists() {
            return Err(ThreadPoolBuildError(ErrorKind::GlobalExists));
        }
        let pool = self.build()?;
        crate::global::set(pool).map_err(|_pool| ThreadPoolBuildError(ErrorKind::GlobalExists))
    }
}

/// The global pool's size from the environment: `CORETUNE_NUM_THREADS` if it is a
/// positive integer (surrounding white space allowed); `None` if it is unset, empty or 0
/// (the default size), or, with a one-line warning on stderr, anything else.
pub(crate) fn env_num_threads() -> Option<usize> {
    const VAR: &str = "CORETUNE_NUM_THREADS";
    let value = std::env::var_os(VAR)?;
    match value.to_str().map(str::trim) {
        Some("" | "0") => None,
        Some(text) => match text.parse::<usize>() {
            Ok(n) => Some(n),
            Err(_) => {
                eprintln!("coretune-pool: ignoring {VAR}={text:?}: not a positive integer");
                None
            }
        },
        None => {
            eprintln!("coretune-pool: ignoring {VAR}: not valid UTF-8");
            None
        }
    }
}

/// Stops the workers started so far.
fn stop(registry: &Registry, threads: Vec<std::thread::JoinHandle<()>>) {
    registry.terminate();
    for handle in threads {
        let _ = handle.join();
    }
}

fn validate_cpus(cpus: &[Vec<usize>]) -> Result<(), ThreadPoolBuildError> {
    if cpus.is_empty() {
        return Err(ThreadPoolBuildError(ErrorKind::NoCpuSets));
    }
    if let Some(worker) = cpus.iter().position(Vec::is_empty) {
        return Err(ThreadPoolBuildError(ErrorKind::EmptyCpuSet { worker }));
    }
    Ok(())
}

/// Worker `i` steals from `i+1, i+2, …` (wrapping).
fn round_robin(n: usize) -> Vec<Vec<usize>> {
    (0..n)
        .map(|i| (1..n).map(|k| (i + k) % n).collect())
        .collect()
}

fn validate_steal_order(order: &[Vec<usize>], n: usize) -> Result<(), ThreadPoolBuildError> {
    if order.len() != n {
        return Err(ThreadPoolBuildError(ErrorKind::StealOrderLength {
            expected: n,
            found: order.len(),
        }));
    }
    for (worker, victims) in order.iter().enumerate() {
        if let Some(&victim) = victims.iter().find(|&&v| v >= n || v == worker) {
            return Err(ThreadPoolBuildError(ErrorKind::StealOrderVictim {
                worker,
                victim,
            }));
        }
    }
    Ok(())
}

/// Why a [`ThreadPool`] could not be built (opaque, like rayon's).
///
/// ```
/// let error = coretune_pool::ThreadPoolBuilder::new()
///     .num_threads(2)
///     .steal_order(vec![vec![0], vec![0]])
///     .build()
///     .unwrap_err();
/// assert!(error.to_string().contains("worker 0 names worker 0"));
/// ```
#[derive(Debug)]
pub struct ThreadPoolBuildError(ErrorKind);

#[derive(Debug)]
enum ErrorKind {
    StealOrderLength {
        expected: usize,
        found: usize,
    },
    StealOrderVictim {
        worker: usize,
        victim: usize,
    },
    NoCpuSets,
    EmptyCpuSet {
        worker: usize,
    },
    Pin {
        worker: usize,
        cpus: Vec<usize>,
        error: std::io::Error,
    },
    Spawn(std::io::Error),
    GlobalExists,
}

impl std::fmt::Display for ThreadPoolBuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            ErrorKind::StealOrderLength { expected, found } => write!(
                f,
                "steal order has {found} lists but the pool has {expected} workers"
            ),
            ErrorKind::StealOrderVictim { worker, victim } => write!(
                f,
                "steal order of worker {worker} names worker {victim}, which is itself or out of range"
            ),
            ErrorKind::NoCpuSets => f.write_str("the list of per-worker CPU sets is empty"),
            ErrorKind::EmptyCpuSet { worker } => write!(f, "CPU set {worker} is empty"),
            ErrorKind::Pin { worker, cpus, .. } => {
                let list: Vec<String> = cpus.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "could not pin worker {worker} to CPUs {}",
                    list.join(",")
                )
            }
            ErrorKind::Spawn(_) => f.write_str("could not start a worker thread"),
            ErrorKind::GlobalExists => f.write_str("the global thread pool exists already"),
        }
    }
}

impl std::error::Error for ThreadPoolBuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0 {
            ErrorKind::Spawn(error) | ErrorKind::Pin { error, .. } => Some(error),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{ThreadPoolBuilder, round_robin};

    #[test]
    fn round_robin_skips_self() {
        assert_eq!(round_robin(3), vec![vec![1, 2], vec![2, 0], vec![0, 1]]);
        assert_eq!(round_robin(1), vec![Vec::<usize>::new()]);
    }

    #[test]
    fn bad_steal_orders_are_rejected_with_the_offender() {
        let short = ThreadPoolBuilder::new()
            .num_threads(2)
            .steal_order(vec![vec![1]]);
        assert_eq!(
            short.build().unwrap_err().to_string(),
            "steal order has 1 lists but the pool has 2 workers"
        );
        let own = ThreadPoolBuilder::new()
            .num_threads(2)
            .steal_order(vec![vec![0], vec![0]]);
        assert!(
            own.build()
                .unwrap_err()
                .to_string()
                .contains("worker 0 names worker 0")
        );
        let out = ThreadPoolBuilder::new()
            .num_threads(2)
            .steal_order(vec![vec![1], vec![7]]);
        assert!(
            out.build()
                .unwrap_err()
                .to_string()
                .contains("names worker 7")
        );
    }
}
