//! A worker thread: its own deque, its main loop, and waiting on a latch while
//! running other jobs.

use crate::job::Job;
use crate::latch::Latch;
use crate::registry::Registry;
use crate::submitter;
use crossbeam_deque::Worker;
use std::cell::{Cell, OnceCell, RefCell};
use std::sync::Arc;

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
pub(crate) fn run(registry: Arc<Registry>, index: usize, local: Worker<Job>, start: Start) {
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
    pub(crate) fn holds_permit_of(&self, throttle: &Arc<crate::throttle::Throttle>) -> bool {
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
