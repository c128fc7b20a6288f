//! A pool's state: what all its workers share ([`Registry`]: queues, stealers, sleep
//! state, policy) and what each worker thread owns ([`WorkerThread`]: its deque's push
//! end, its permit, its main loop, and waiting on a latch while running other jobs).
//!
//! Both live here, as in rayon-core's `registry.rs`, because each needs the other: a
//! worker runs the registry's jobs, and the registry queues a job on the calling worker's
//! own deque when there is one. The state is split by owner within the file: the
//! `Registry` holds what every thread may touch, a `WorkerThread` (in a thread-local of
//! its thread) what only that thread touches, except through its deque's steal end.

use crate::job::{Job, retry};
use crate::latch::Latch;
use crate::sleep::Sleep;
use crate::submitter::{self, Submitters};
use crate::throttle::Throttle;
use crossbeam_deque::{Injector, Stealer, Worker};
use std::any::Any;
use std::cell::{Cell, OnceCell, RefCell};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Receives the payload of a panic in a detached (`spawn`ed) task.
pub(crate) type PanicHandler = Arc<dyn Fn(Box<dyn Any + Send>) + Send + Sync>;

/// The shared half of a pool.
pub(crate) struct Registry {
    /// Jobs submitted from outside the pool.
    injector: Injector<Job>,
    /// Steal ends of the workers' deques, indexed by worker.
    stealers: Vec<Stealer<Job>>,
    /// Jobs only worker `i` may run (`broadcast`).
    inboxes: Vec<Injector<Job>>,
    /// `spawn_fifo` tasks in the order they were spawned; each is run by a stand-in job
    /// queued like a `spawn`, which takes the oldest task from here.
    fifo: Injector<Job>,
    /// For each worker, the workers it steals from, nearest first.
    steal_order: Vec<Vec<usize>>,
    /// Queues of threads outside the pool that submit to it.
    submitters: Arc<Submitters>,
    pub(crate) sleep: Sleep,
    terminating: AtomicBool,
    panic_handler: Option<PanicHandler>,
    pub(crate) throttle: Option<Arc<Throttle>>,
    /// Whether a thread outside the pool holds a permit of `throttle` while it runs a
    /// scope's body (`ThreadPoolBuilder::throttle_caller`).
    pub(crate) throttle_caller: bool,
    /// Whether a thread outside the pool works off a share of its data-parallel calls
    /// (`ThreadPoolBuilder::caller_shares_data_parallel`).
    pub(crate) caller_shares: bool,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("num_threads", &self.stealers.len())
            .field("steal_order", &self.steal_order)
            .field("terminating", &self.terminating)
            .finish_non_exhaustive()
    }
}

impl Registry {
    pub(crate) fn new(
        stealers: Vec<Stealer<Job>>,
        steal_order: Vec<Vec<usize>>,
        panic_handler: Option<PanicHandler>,
        throttle: Option<Arc<Throttle>>,
        throttle_caller: bool,
        caller_shares: bool,
    ) -> Self {
        let n = stealers.len();
        Registry {
            injector: Injector::new(),
            stealers,
            inboxes: (0..n).map(|_| Injector::new()).collect(),
            fifo: Injector::new(),
            steal_order,
            submitters: Arc::default(),
            sleep: Sleep::new(n),
            terminating: AtomicBool::new(false),
            panic_handler,
            throttle,
            throttle_caller,
            caller_shares,
        }
    }

    pub(crate) fn num_threads(&self) -> usize {
        self.stealers.len()
    }

    pub(crate) fn steal_order(&self, index: usize) -> &[usize] {
        self.steal_order.get(index).map_or(&[], Vec::as_slice)
    }

    /// Queues one job: on the current worker's own deque if called from a worker of
    /// this pool, else on the calling thread's submitter queue. Wakes a sleeper if there
    /// is one.
    pub(crate) fn push(self: &Arc<Self>, job: Job) {
        self.push_each(std::iter::once(job));
    }

    /// Queues a detached `'static` task: on the current worker's own deque if called
    /// from a worker of this pool, else on the calling thread's submitter queues (its
    /// ring if the closure is one word). Wakes a sleeper if there is one.
    pub(crate) fn spawn<F: FnOnce() + Send + 'static>(self: &Arc<Self>, task: F) {
        let task = WorkerThread::with_current(|worker| match worker {
            Some(worker) if worker.is_in(self) => {
                worker.push_local(Job::new(task));
                None
            }
            _ => Some(task),
        });
        if let Some(Err(task)) = task.map(|task| self.submitters.spawn(task)) {
            self.inject(Job::new(task));
        }
        self.sleep.notify_new_jobs(1);
    }

    /// Queues a detached task that starts after every `spawn_fifo` task queued before it
    /// (from any thread): the task goes to the pool's FIFO queue, and a stand-in job that
    /// runs the oldest task of that queue is queued as by [`Registry::spawn`]. Each
    /// stand-in takes one task and there are as many stand-ins as tasks, so every task
    /// runs once, in spawn order of their starts whichever order the stand-ins run in.
    pub(crate) fn spawn_fifo<F: FnOnce() + Send + 'static>(self: &Arc<Self>, task: F) {
        self.fifo.push(Job::new(task));
        self.spawn(|| {
            WorkerThread::with_current(|worker| {
                if let Some(worker) = worker {
                    worker.registry().run_oldest_fifo();
                }
            });
        });
    }

    /// Runs the oldest `spawn_fifo` task (on a worker of this pool, inside `execute`, so a
    /// panic goes to the panic handler).
    fn run_oldest_fifo(&self) {
        if let Some(job) = retry(|| self.fifo.steal()) {
            job.run();
        }
    }

    /// Queues each job and pays the wake-up check once for all of them. `jobs` must not
    /// run user code (it is consumed while thread-local queues are borrowed).
    pub(crate) fn push_each(self: &Arc<Self>, jobs: impl Iterator<Item = Job>) {
        let count = WorkerThread::with_current(|worker| match worker {
            Some(worker) if worker.is_in(self) => jobs.map(|job| worker.push_local(job)).count(),
            _ => match self.submitters.push(jobs) {
                Ok(count) => count,
                Err(jobs) => jobs.map(|job| self.inject(job)).count(),
            },
        });
        if count > 0 {
            self.sleep.notify_new_jobs(count);
        }
    }

    /// Pushes on the injector (the fallback when a thread has no submitter queue).
    fn inject(&self, job: Job) {
        self.injector.push(job);
    }

    /// Queues a job that only worker `index` may run, and wakes that worker.
    pub(crate) fn push_to(&self, index: usize, job: Job) {
        self.inboxes[index].push(job);
        self.sleep.wake_specific(index);
    }

    /// Takes a job meant for worker `index` alone.
    pub(crate) fn steal_inbox(&self, index: usize) -> Option<Job> {
        let inbox = &self.inboxes[index];
        if inbox.is_empty() {
            return None;
        }
        retry(|| inbox.steal())
    }

    /// Moves a batch from the injector into `local` and returns one job of it.
    pub(crate) fn steal_injected(&self, local: &crossbeam_deque::Worker<Job>) -> Option<Job> {
        // `is_empty` is two loads; an empty `steal_batch_and_pop` also issues a fence.
        if self.injector.is_empty() {
            return None;
        }
        retry(|| self.injector.steal_batch_and_pop(local))
    }

    /// The submitter queues' registry (`submitter.rs`).
    pub(crate) fn submitters(&self) -> &Submitters {
        &self.submitters
    }

    /// Steals one job from the victims of worker `index`, nearest first.
    pub(crate) fn steal_from_victims(&self, index: usize) -> Option<Job> {
        self.steal_order[index]
            .iter()
            .find_map(|&victim| retry(|| self.stealers[victim].steal()))
    }

    /// The final look of a worker about to sleep: is there anything it could run?
    pub(crate) fn has_work_for(&self, index: usize) -> bool {
        !self.inboxes[index].is_empty()
            || !self.injector.is_empty()
            || self.stealers.iter().any(|stealer| !stealer.is_empty())
            || self.submitters.has_work()
    }

    /// Asks the workers to exit once no work is left, and wakes them to see it.
    pub(crate) fn terminate(&self) {
        self.terminating.store(true, Ordering::SeqCst);
        self.sleep.wake_all();
    }

    pub(crate) fn is_terminating(&self) -> bool {
        self.terminating.load(Ordering::SeqCst)
    }

    /// Policy for a panic in a detached task: hand it to the user's handler, or drop
    /// it (the panic hook has already printed the message). The worker survives.
    pub(crate) fn handle_panic(&self, payload: Box<dyn Any + Send>) {
        if let Some(handler) = &self.panic_handler {
            // A panicking handler must not kill the worker either.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(payload)));
        }
    }
}

/// Rounds a worker keeps looking for work before it goes to sleep; the same count as
/// rayon-core's `ROUNDS_UNTIL_SLEEPY`. With [`back_off`], 26 of the 32 rounds yield the
/// CPU, so the search outlasts the gaps of a busy producer (which then never pays a
/// sleep and wake-up) while a truly idle pool reaches sleep quickly (`tests/idle.rs`).
/// Only the worker holding the yield token searches that long ([`Search`]): each yield
/// that lets another thread run counts as an involuntary context switch, and 64 idle
/// workers yielding in turn showed up as 1,600 of them a run of `bench sum` (`sleep/README.md`,
/// "What the protocol costs").
const SPIN_ROUNDS: u32 = 32;

/// Rounds of busy spinning (doubling each round) before back-off turns to
/// `yield_now`, as crossbeam-utils' `Backoff` does (`SPIN_LIMIT` 6).
const SPIN_LIMIT: u32 = 6;

thread_local! {
    static CURRENT: OnceCell<WorkerThread> = const { OnceCell::new() };
}

/// What one worker thread owns; lives in a thread-local of that thread.
#[derive(Debug)]
pub(crate) struct WorkerThread {
    index: usize,
    registry: Arc<Registry>,
    local: Worker<Job>,
    holds_permit: Cell<bool>,
    submitters: RefCell<submitter::Cache>,
}

/// What a worker does before its first job.
pub(crate) struct Start {
    /// Its CPU set, and where to report whether the kernel took it.
    pub(crate) cpus: Option<(Vec<usize>, PinReport)>,
    /// The builder's start handler.
    pub(crate) handler: Option<Arc<dyn Fn(usize) + Send + Sync>>,
    /// The builder's exit handler, run once the worker left its main loop.
    pub(crate) exit_handler: Option<Arc<dyn Fn(usize) + Send + Sync>>,
}

/// Where a worker reports the outcome of pinning itself.
pub(crate) type PinReport = std::sync::mpsc::Sender<(usize, std::io::Result<()>)>;

/// Entry point of a worker thread.
pub(crate) fn run_worker(registry: Arc<Registry>, index: usize, local: Worker<Job>, start: Start) {
    if let Some((cpus, report)) = start.cpus {
        // The builder waits for this; if it failed, the builder terminates the pool.
        let _ = report.send((index, crate::sys::pin_current_thread(&cpus)));
    }
    if let Some(handler) = start.handler {
        if let Err(payload) =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(index)))
        {
            registry.handle_panic(payload);
        }
    }
    let worker = WorkerThread {
        index,
        registry,
        local,
        holds_permit: Cell::new(false),
        submitters: RefCell::default(),
    };
    CURRENT.with(|current| {
        if current.set(worker).is_err() {
            unreachable!("a worker thread runs one worker");
        }
        if let Some(worker) = current.get() {
            worker.main_loop();
            if let Some(handler) = start.exit_handler {
                if let Err(payload) =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(index)))
                {
                    worker.registry.handle_panic(payload);
                }
            }
        }
    });
}

impl WorkerThread {
    /// Calls `f` with the current thread's worker, if it is a worker of some pool.
    pub(crate) fn with_current<R>(f: impl FnOnce(Option<&WorkerThread>) -> R) -> R {
        CURRENT.with(|current| f(current.get()))
    }

    #[inline]
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// True if this worker belongs to `registry`.
    #[inline]
    pub(crate) fn is_in(&self, registry: &Registry) -> bool {
        std::ptr::eq(Arc::as_ptr(&self.registry), registry)
    }

    /// True if this worker holds a permit of `throttle` (its pool's, while it runs a task).
    pub(crate) fn holds_permit_of(&self, throttle: &Arc<Throttle>) -> bool {
        self.holds_permit.get()
            && self
                .registry
                .throttle
                .as_ref()
                .is_some_and(|own| Arc::ptr_eq(own, throttle))
    }

    #[inline]
    pub(crate) fn push_local(&self, job: Job) {
        self.local.push(job);
    }

    /// The newest job of this worker's own deque.
    #[inline]
    pub(crate) fn pop_local(&self) -> Option<Job> {
        self.local.pop()
    }

    /// The pool this worker belongs to.
    #[inline]
    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// True if splitting off work for a thief may pay (`par.rs`): this worker's deque is
    /// empty (nothing of its own to steal) and some worker of the pool is idle (searching
    /// or asleep).
    #[inline]
    pub(crate) fn wants_split(&self) -> bool {
        self.local.is_empty() && self.registry.sleep.has_idle()
    }

    fn main_loop(&self) {
        let registry = &*self.registry;
        self.work_until(Search::Shared, || {
            registry.is_terminating() && !registry.has_work_for(self.index)
        });
        self.release_permit();
    }

    /// Runs other jobs until `latch` is set. The setter wakes this worker with
    /// `Sleep::wake_specific` if it fell asleep meanwhile.
    pub(crate) fn wait_until(&self, latch: &Latch) {
        self.wait_until_done(|| latch.probe());
    }

    /// Runs other jobs until `is_done()`; whoever makes it true must then wake this worker
    /// with `Sleep::wake_specific` (it may have fallen asleep meanwhile).
    pub(crate) fn wait_until_done(&self, is_done: impl Fn() -> bool) {
        let held_permit = self.holds_permit.get();
        self.work_until(Search::Full, is_done);
        if held_permit {
            self.take_permit();
        }
    }

    /// Runs jobs until `is_done()`. When there are none it backs off for
    /// `SPIN_ROUNDS` (or only `SPIN_LIMIT` if `search` is `Shared` and another worker
    /// holds the yield token), then gives back its throttle permit and sleeps, with
    /// `is_done` part of the final look (see `sleep/README.md`).
    fn work_until(&self, search: Search, is_done: impl Fn() -> bool) {
        let registry = &*self.registry;
        let sleep = &registry.sleep;
        let mut idle_rounds = 0;
        let mut holds_token = false;
        // Counted as a searcher (`sleep/README.md`): from the first look that finds nothing until a
        // job is found; asleep in between, and a searcher again once woken.
        let mut searching = false;
        while !is_done() {
            if let Some(job) = self.find_work() {
                if std::mem::take(&mut holds_token) {
                    sleep.release_yield_token();
                }
                if std::mem::take(&mut searching) {
                    sleep.stop_searching(true, || registry.has_work_for(self.index));
                }
                self.execute(job);
                idle_rounds = 0;
                continue;
            }
            if !searching {
                searching = true;
                sleep.start_searching();
            }
            let may_search = idle_rounds < SPIN_LIMIT || search == Search::Full || holds_token || {
                holds_token = sleep.take_yield_token();
                holds_token
            };
            if may_search && idle_rounds < SPIN_ROUNDS {
                back_off(idle_rounds);
                idle_rounds += 1;
                continue;
            }
            if std::mem::take(&mut holds_token) {
                sleep.release_yield_token();
            }
            self.release_permit();
            sleep.sleep(self.index, || {
                is_done() || registry.has_work_for(self.index)
            });
            idle_rounds = 0;
        }
        if holds_token {
            sleep.release_yield_token();
        }
        if searching {
            sleep.stop_searching(false, || false);
        }
    }

    /// Own deque first (newest job, cache-warm), then jobs for this worker alone, then
    /// a batch from the injector or a submitter queue, then the victims in steal order.
    fn find_work(&self) -> Option<Job> {
        let registry = &*self.registry;
        if let Some(job) = self.local.pop() {
            return Some(job);
        }
        if let Some(job) = registry.steal_inbox(self.index) {
            return Some(job);
        }
        let shared = registry
            .steal_injected(&self.local)
            .or_else(|| registry.submitters().steal(&self.submitters, &self.local));
        if let Some(job) = shared {
            if !self.local.is_empty() {
                // Took more than one: let a sleeper share them (cascading wake-up).
                registry.sleep.notify_new_jobs(1);
            }
            return Some(job);
        }
        registry.steal_from_victims(self.index)
    }

    /// Runs one job under the throttle, handing a panic to the panic handler.
    ///
    /// A worker keeps its permit from one job to the next, as a `ThrottleSeat` does (see
    /// `throttle/README.md`): it gives it back when it goes to sleep, or before a job when the
    /// limit was lowered below the permits held, so a limit costs a hand-off only then.
    #[inline]
    pub(crate) fn execute(&self, job: Job) {
        let throttle = self.registry.throttle.as_deref();
        if let Some(throttle) = throttle {
            if self.holds_permit.get() && throttle.is_over_limit() {
                self.release_permit();
            }
            self.take_permit();
        }
        if let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job.run())) {
            self.registry.handle_panic(payload);
        }
        if let Some(throttle) = throttle {
            throttle.record_completions(1);
        }
    }

    fn take_permit(&self) {
        if let Some(throttle) = &self.registry.throttle {
            if !self.holds_permit.replace(true) {
                throttle.acquire_permit();
            }
        }
    }

    fn release_permit(&self) {
        if let Some(throttle) = &self.registry.throttle {
            if self.holds_permit.replace(false) {
                throttle.release();
            }
        }
    }
}

/// How long an idle worker searches before it sleeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Search {
    /// The idle loop: the spinning rounds, then the yielding ones only while holding the
    /// pool's yield token (at most one such worker, Go's spinning-thread rule), so that
    /// idle workers do not take turns on CPUs that busy threads need.
    Shared,
    /// Waiting on a latch (`join`, `scope`): every round, since the caller waits for it.
    Full,
}

/// One round of back-off: spin `2^round` times while `round < SPIN_LIMIT`, then yield
/// the CPU (on 2 cores the submitter often needs it).
fn back_off(round: u32) {
    if round < SPIN_LIMIT {
        for _ in 0..1u32 << round {
            std::hint::spin_loop();
        }
    } else {
        std::thread::yield_now();
    }
}
