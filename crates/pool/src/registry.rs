//! State shared by all workers of one pool and by every handle that submits to it.
//!
//! Split by owner as in rayon-core's `registry.rs`: this module holds what every
//! thread may touch (queues, stealers, sleep state, policy); `worker.rs` holds what one
//! worker owns (its deque's push end, its permit).

use crate::batch;
use crate::job::Job;
use crate::sleep::Sleep;
use crate::submitter;
use crate::throttle::Throttle;
use crate::worker::WorkerThread;
use crossbeam_deque::{Injector, Steal, Stealer};
use std::any::Any;
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
    submitters: submitter::Submitters,
    pub(crate) sleep: Sleep,
    terminating: AtomicBool,
    panic_handler: Option<PanicHandler>,
    pub(crate) throttle: Option<Arc<Throttle>>,
    /// Whether a thread outside the pool holds a permit of `throttle` while it runs a
    /// scope's body (`ThreadPoolBuilder::throttle_caller`).
    pub(crate) throttle_caller: bool,
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
    ) -> Self {
        let n = stealers.len();
        Registry {
            injector: Injector::new(),
            stealers,
            inboxes: (0..n).map(|_| Injector::new()).collect(),
            fifo: Injector::new(),
            steal_order,
            submitters: submitter::Submitters::default(),
            sleep: Sleep::new(n),
            terminating: AtomicBool::new(false),
            panic_handler,
            throttle,
            throttle_caller,
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
        if let Some(task) = task {
            submitter::spawn(self, task);
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

    /// Queues many jobs: arrays of up to `BATCH_JOBS` jobs, each behind one runner per
    /// worker (`batch.rs`); a short tail goes job by job.
    pub(crate) fn push_batch(self: &Arc<Self>, jobs: impl Iterator<Item = Job>) {
        let mut jobs = jobs.peekable();
        while jobs.peek().is_some() {
            let chunk: Vec<Job> = jobs.by_ref().take(batch::BATCH_JOBS).collect();
            if chunk.len() < batch::MIN_BATCH {
                self.push_each(chunk.into_iter());
            } else {
                self.push_each(batch::runners(chunk, self.num_threads()));
            }
        }
    }

    /// Queues each job and pays the wake-up check once for all of them. `jobs` must not
    /// run user code (it is consumed while thread-local queues are borrowed).
    fn push_each(self: &Arc<Self>, jobs: impl Iterator<Item = Job>) {
        let count = WorkerThread::with_current(|worker| match worker {
            Some(worker) if worker.is_in(self) => jobs.map(|job| worker.push_local(job)).count(),
            _ => submitter::push(self, jobs),
        });
        if count > 0 {
            self.sleep.notify_new_jobs(count);
        }
    }

    /// Pushes on the injector (the fallback when a thread has no submitter queue).
    pub(crate) fn inject(&self, job: Job) {
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
    pub(crate) fn submitters(&self) -> &submitter::Submitters {
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

/// Repeats a steal while it asks for a retry.
pub(crate) fn retry(mut steal: impl FnMut() -> Steal<Job>) -> Option<Job> {
    loop {
        match steal() {
            Steal::Success(job) => return Some(job),
            Steal::Empty => return None,
            Steal::Retry => std::hint::spin_loop(),
        }
    }
}
