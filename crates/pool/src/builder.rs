//! Configuration and construction of a [`ThreadPool`].

use crate::ThreadPool;
use crate::registry::{self, PanicHandler, Registry};
use crate::throttle::Throttle;
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
    /// With a placement from the environment: the place of the thread that builds the pool.
    caller_place: Option<Vec<usize>>,
    /// `None`: the default, `true` (see [`ThreadPoolBuilder::throttle_caller`]).
    throttle_caller: Option<bool>,
    /// See [`ThreadPoolBuilder::caller_shares_data_parallel`].
    caller_shares: bool,
}

/// The variable [`ThreadPoolBuilder::from_env`] reads the number of workers from; coretune
/// sets it for each program it runs (`coretune run --threads N`, `coretune tune`).
pub const NUM_THREADS_VAR: &str = "CORETUNE_NUM_THREADS";

/// Where a program built with [`ThreadPoolBuilder::from_env`] says so: a section of its own
/// in the executable, which coretune looks for (`coretune_core::program::pin`) to tell the
/// user that the pool, not the preloaded library, places the pool's workers. Read once by
/// `from_env`, so that the linker keeps it exactly in the programs that call it (not
/// `#[used]`: that would keep it in every program linking the pool).
#[cfg(target_os = "linux")]
#[unsafe(link_section = ".coretune_pool")]
static FROM_ENV_MARKER: [u8; 16] = *b"coretune-pool/1\0";

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
            .field("caller_place", &self.caller_place)
            .field("throttle_caller", &self.throttle_caller)
            .field("caller_shares", &self.caller_shares)
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

    /// A builder configured from the environment coretune hands a program it runs
    /// (`coretune run --threads N --place …`, each run of `coretune tune`), as rayon reads
    /// `RAYON_NUM_THREADS` and an OpenMP runtime reads `OMP_PLACES`:
    ///
    /// - **Workers**: `CORETUNE_NUM_THREADS` ([`NUM_THREADS_VAR`]); unset or empty, the CPU
    ///   budget ([`num_threads`](Self::num_threads)). coretune sets it to the threads of the
    ///   program *besides its main thread* (`--threads 4`: 3 workers and the main thread,
    ///   which runs scope bodies and `join`'s first closure itself; at least one worker), so
    ///   that the program runs the number of threads coretune measured.
    /// - **Places**: `CORETUNE_PIN`'s `places=` list when set (coretune sets it, and clears
    ///   `OMP_PLACES`, when it preloads its pinning library), else `OMP_PLACES` in any form the
    ///   OpenMP specification allows (`{0},{1}`, `{0:2}`, `{0}:4:2`, `{0:2}:4:2`, `!`
    ///   exclusions, `threads`, `cores(4)`, `ll_caches`, `numa_domains`, `sockets`) unless
    ///   `OMP_PROC_BIND` is `false`. Places are counted as the program's threads, as
    ///   likwid-pin, OpenMP and coretune's pinning library count them: the thread that builds
    ///   the pool is thread 0, on place 0 (where [`build`](Self::build) binds it, as an
    ///   OpenMP runtime binds its initial thread), and worker `i` is thread `i + 1`, on place
    ///   `(i + 1) mod P`. So under `coretune run --threads 2 --place compact` the main
    ///   thread has CPU 0 and the one worker CPU 1.
    ///
    /// **One owner.** With the pinning library preloaded, the library pins each thread as it
    /// is created, counting creations, and then each worker pins itself to its place before
    /// it runs anything: the pool has the last word for its own workers, even when the
    /// program made other threads first (which shifts the library's count). coretune sees
    /// that the program calls `from_env` (a marker section in the executable) and says before
    /// it runs that the pool places its workers.
    ///
    /// # Errors
    ///
    /// A variable that is set but does not parse, naming it, its value and where it fails.
    ///
    /// ```
    /// // As coretune runs a program: `coretune run --threads 2 --place compact -- ./app`.
    /// let builder = coretune_pool::ThreadPoolBuilder::from_env()?;
    /// let pool = builder.build()?;
    /// assert!(pool.num_threads() >= 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_env() -> Result<Self, ThreadPoolBuildError> {
        #[cfg(target_os = "linux")]
        // SAFETY: a plain read of a static the program owns; volatile, so that it is kept.
        let _ = unsafe { std::ptr::read_volatile(&raw const FROM_ENV_MARKER) };
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// Leaves the thread that builds the pool where it is (the global pool, built by whichever
    /// thread uses it first).
    pub(crate) fn without_caller_place(mut self) -> Self {
        self.caller_place = None;
        self
    }

    /// [`from_env`](Self::from_env) with the variables `var(name)` gives.
    pub(crate) fn from_vars(
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ThreadPoolBuildError> {
        let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let invalid = |name: &str, value: &str, why: String| {
            ThreadPoolBuildError(ErrorKind::Environment {
                var: name.to_owned(),
                value: value.to_owned(),
                why,
            })
        };
        let mut builder = Self::new();
        if let Some(value) = set(NUM_THREADS_VAR) {
            match value.trim().parse::<usize>() {
                Ok(n) if n > 0 => {
                    builder.num_threads = n;
                    // The calling thread is one of the program's N threads.
                    builder.caller_shares = true;
                }
                _ => {
                    return Err(invalid(
                        NUM_THREADS_VAR,
                        &value,
                        "not a positive whole number".to_owned(),
                    ));
                }
            }
        }
        let places = if let Some(plan) = set("CORETUNE_PIN") {
            Some(
                crate::places::parse_coretune_plan(&plan)
                    .map_err(|why| invalid("CORETUNE_PIN", &plan, why))?,
            )
        } else if let Some(places) = set("OMP_PLACES").filter(|_| {
            set("OMP_PROC_BIND").is_none_or(|b| !b.trim().eq_ignore_ascii_case("false"))
        }) {
            Some(
                crate::places::parse_omp_places(&places, crate::places::abstract_places)
                    .map_err(|why| invalid("OMP_PLACES", &places, why))?,
            )
        } else {
            None
        };
        if let Some(mut places) = places {
            builder.caller_place = Some(places[0].clone());
            // Worker i takes place i + 1 (wrapping): `cpus` hands out set `i % len`.
            places.rotate_left(1);
            builder.cpus = Some(places);
        }
        Ok(builder)
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

    /// Names worker `i` `name(i)` (default: `coretune-pool-{i}`, as `top -H` and
    /// `coretune watch` show it).
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

    /// Whether a thread that is not one of the pool's workers counts against the
    /// [`throttle`](Self::throttle) while it runs the body of [`ThreadPool::scope`] (so
    /// also `a` of [`ThreadPool::join`], and the spawning part of `par_for` and
    /// `broadcast`): `true`, the default, makes it hold a permit for the body, like a worker
    /// running a task, and give it back while it waits for the scope's jobs; `false` lets
    /// it run beside the workers' permits.
    ///
    /// Why `true` is the default: a throttle of limit `n` reads "at most `n` threads do
    /// this pool's work at once", and the body of a scope or `join` is that work as much as
    /// a task is — with `false`, `pool.join(a, b)` under a limit of 1 runs `a` beside `b`.
    /// The price: the body first waits for a permit (behind the workers' tasks when the
    /// limit is full), and, like a task, it must not block waiting for a job of its own
    /// scope outside the pool's own waits (`join`, `scope`, `install` and the data-parallel
    /// methods, which give the permit back while the workers run what they wait for, and
    /// take one again after) — a body that receives from a channel that one of its jobs
    /// sends to waits forever under a limit of 1. Nor may a thread that holds a guard or
    /// seat of the same throttle call into the pool (the pool cannot see that permit, and
    /// the body would wait for it). Turn it off for such callers, or for a caller whose share is only
    /// spawning. Details: [`throttle`](crate::throttle#the-calling-thread).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let throttle = Arc::new(coretune_pool::Throttle::new(1));
    /// let pool = coretune_pool::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .throttle(Arc::clone(&throttle))
    ///     .throttle_caller(false)
    ///     .build()?;
    /// let _all = throttle.acquire(); // the limit is full...
    /// let sum = pool.scope(|_| 1 + 1); // ...and the body runs anyway, holding no permit
    /// assert_eq!(sum, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn throttle_caller(mut self, counts: bool) -> Self {
        self.throttle_caller = Some(counts);
        self
    }

    /// Whether a thread outside the pool that calls a data-parallel method
    /// ([`sum`](ThreadPool::sum), [`map_collect`](ThreadPool::map_collect),
    /// [`reduce`](ThreadPool::reduce), [`for_each`](ThreadPool::for_each)) works off a share
    /// of the items itself instead of only waiting for the workers: the first
    /// 1/(workers + 1) of them, folded in one piece, while the workers split the rest
    /// among themselves. Off by default (the workers alone are the pool's threads); on in
    /// a builder from [`from_env`](Self::from_env) with `CORETUNE_NUM_THREADS` set, where
    /// the building thread is one of the program's N threads and the pool has N − 1
    /// workers, so a call from it uses N threads. Its share is fixed, so where the costly
    /// items come first, turn it off or call from [`install`](ThreadPool::install). With
    /// a throttle and [`throttle_caller`](Self::throttle_caller) the caller holds a permit
    /// for its share.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// let pool = coretune_pool::ThreadPoolBuilder::new()
    ///     .num_threads(1)
    ///     .caller_shares_data_parallel(true)
    ///     .build()?;
    /// let caller = std::thread::current().id();
    /// let by_caller = AtomicUsize::new(0);
    /// pool.for_each(0..1000, |_| {
    ///     if std::thread::current().id() == caller {
    ///         by_caller.fetch_add(1, Ordering::Relaxed);
    ///     }
    /// });
    /// assert_eq!(by_caller.into_inner(), 500); // 1/(1 worker + 1)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn caller_shares_data_parallel(mut self, shares: bool) -> Self {
        self.caller_shares = shares;
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
            self.throttle_caller.unwrap_or(true),
            self.caller_shares,
        ));
        let mut threads = Vec::with_capacity(n);
        // Each pinned worker reports whether the kernel took its CPU set.
        let (pinned_tx, pinned_rx) = std::sync::mpsc::channel();
        for (index, local) in locals.into_iter().enumerate() {
            let mut thread = std::thread::Builder::new();
            thread = thread.name(match &mut self.thread_name {
                Some(name) => name(index),
                None => format!("coretune-pool-{index}"),
            });
            if let Some(bytes) = self.stack_size {
                thread = thread.stack_size(bytes);
            }
            let worker_registry = Arc::clone(&registry);
            let start = registry::Start {
                cpus: cpus
                    .as_ref()
                    .map(|sets| (sets[index].clone(), pinned_tx.clone())),
                handler: self.start_handler.clone(),
                exit_handler: self.exit_handler.clone(),
            };
            match thread.spawn(move || registry::run_worker(worker_registry, index, local, start)) {
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
        if let Some(place) = &self.caller_place {
            if let Err(error) = crate::sys::pin_current_thread(place) {
                stop(&registry, threads);
                return Err(ThreadPoolBuildError(ErrorKind::PinCaller {
                    cpus: place.clone(),
                    error,
                }));
            }
        }
        Ok(ThreadPool::from_parts(registry, threads, cpus))
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
    Environment {
        var: String,
        value: String,
        why: String,
    },
    PinCaller {
        cpus: Vec<usize>,
        error: std::io::Error,
    },
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

impl ThreadPoolBuildError {
    /// The error of [`ThreadPoolBuilder::build_global`] when the global pool exists already.
    pub(crate) fn global_exists() -> Self {
        ThreadPoolBuildError(ErrorKind::GlobalExists)
    }
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
            ErrorKind::Environment { var, value, why } => write!(f, "{var}={value:?}: {why}"),
            ErrorKind::PinCaller { cpus, .. } => {
                let list: Vec<String> = cpus.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "could not bind the building thread to its place, CPUs {}",
                    list.join(",")
                )
            }
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
            ErrorKind::Spawn(error)
            | ErrorKind::Pin { error, .. }
            | ErrorKind::PinCaller { error, .. } => Some(error),
            _ => None,
        }
    }
}

#[cfg(test)]
mod test {
    use super::{ThreadPoolBuilder, round_robin};

    fn from(vars: &[(&str, &str)]) -> Result<ThreadPoolBuilder, String> {
        ThreadPoolBuilder::from_vars(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
        .map_err(|e| e.to_string())
    }

    #[test]
    fn from_env_reads_workers_and_numbers_places_as_the_programs_threads() {
        let b = from(&[("CORETUNE_NUM_THREADS", "3")]).unwrap();
        assert_eq!((b.num_threads, &b.cpus, &b.caller_place), (3, &None, &None));
        // The building thread is counted, so it shares data-parallel calls.
        assert!(b.caller_shares);
        assert!(!from(&[]).unwrap().caller_shares);
        // The library's plan wins over OMP_PLACES; the building thread takes place 0,
        // worker i place i + 1 (wrapping).
        let b = from(&[
            ("CORETUNE_PIN", "places=0/1/2,3 skip=0x0"),
            ("OMP_PLACES", "{7}"),
        ])
        .unwrap();
        assert_eq!(b.caller_place, Some(vec![0]));
        assert_eq!(b.cpus, Some(vec![vec![1], vec![2, 3], vec![0]]));
        let b = from(&[("OMP_PLACES", "{4}:2:2"), ("OMP_PROC_BIND", "close")]).unwrap();
        assert_eq!(
            (b.caller_place, b.cpus),
            (Some(vec![4]), Some(vec![vec![6], vec![4]]))
        );
        // OMP_PROC_BIND=false: OpenMP does not bind, nor does the pool.
        let b = from(&[("OMP_PLACES", "{0},{1}"), ("OMP_PROC_BIND", "FALSE")]).unwrap();
        assert_eq!(b.cpus, None);
        // Empty is unset.
        assert_eq!(
            from(&[("CORETUNE_NUM_THREADS", " ")]).unwrap().num_threads,
            0
        );
    }

    #[test]
    fn from_env_names_the_variable_that_does_not_parse() {
        for (vars, says) in [
            (
                [("CORETUNE_NUM_THREADS", "0")],
                "CORETUNE_NUM_THREADS=\"0\": not a positive whole number",
            ),
            (
                [("CORETUNE_NUM_THREADS", "two")],
                "CORETUNE_NUM_THREADS=\"two\": not a positive whole number",
            ),
            (
                [("OMP_PLACES", "{0")],
                "OMP_PLACES=\"{0\": expected `}` at byte 2",
            ),
            (
                [("CORETUNE_PIN", "skip=0x1")],
                "CORETUNE_PIN=\"skip=0x1\": no places= item",
            ),
        ] {
            assert_eq!(from(&vars).unwrap_err(), says);
        }
    }

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
