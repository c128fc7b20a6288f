//! Submitter queues: one ring and one FIFO deque per (thread outside the pool, pool) pair.
//!
//! Why not crossbeam's `Injector` for a `spawn` from outside the pool: its push takes a
//! compare-and-swap on the tail plus a read-modify-write of the slot's state, both on
//! lines the workers read. A thread that submits owns a crossbeam `Worker` deque instead
//! (single producer: a slot write and a release store of `back`), and the workers steal
//! batches from it like from each other. That push still reads `front` (which every
//! steal writes) and stores 32-byte jobs, two per cache line; so a `spawn`ed closure of
//! at most one word goes to the thread's ring (`ring.rs`: 16-byte jobs, the consumers'
//! cursor read about once per lap). The deque keeps everything else
//! (larger closures, scoped jobs, batch runners) and takes the ring's overflow: once a
//! job went there, small closures follow it until the deque is seen empty, so that the
//! ring drains and the workers, which look in the ring first, reach the deque (nothing
//! starves, and jobs are taken roughly in the order they were pushed). The deque's buffer
//! and its reclamation are crossbeam's; the ring's `unsafe` is in `ring.rs`.
//!
//! # Lifecycle
//!
//! - A thread's first push to a pool creates its ring and deque, kept in a thread-local
//!   list keyed by the pool's id, and registers the ring and the deque's stealer with the
//!   pool under a mutex, bumping `version` so that workers refresh their cached copy of
//!   the list.
//! - When the thread exits, its push ends are dropped and the entry is marked dead; jobs
//!   still queued stay stealable (the entry shares the ring and the deque's buffer). Dead,
//!   empty entries are pruned at the next registration.
//! - A thread-local entry whose pool is gone is pruned at the thread's next new
//!   registration. Pushes during thread-local destruction, or re-entrant ones, fall
//!   back to the injector.
//!
//! The sleep protocol is the same as for any queue: a worker's final look before sleeping
//! checks every registered ring and stealer under the mutex, and the registration happens
//! before the push.

use crate::job::{Job, SmallJob, retry};
use crate::ring::{self, Ring};
use crossbeam_deque::{Stealer, Worker};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// Pool ids for the thread-local lookup (addresses could be reused by a later pool).
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static QUEUES: RefCell<Vec<LocalQueue>> = const { RefCell::new(Vec::new()) };
}

/// The push end of one thread's queues for one pool.
struct LocalQueue {
    pool_id: u64,
    /// The pool's list, to prune this entry once the pool is gone.
    pool: Weak<Submitters>,
    /// Small `spawn`ed closures (one word), while `is_spilling` is false.
    ring: ring::Producer,
    /// Everything else: larger closures, scoped jobs, batch runners, and small closures
    /// while `is_spilling`.
    queue: Worker<Job>,
    /// Set when a job went to `queue`, cleared when `queue` is seen empty: until then
    /// small closures go to `queue` too, so that the ring drains and workers, which look
    /// in the ring first, reach `queue` (nothing starves there, and jobs are claimed
    /// roughly in the order they were pushed).
    is_spilling: bool,
    is_alive: Arc<AtomicBool>,
}

impl LocalQueue {
    fn push_job(&mut self, job: Job) {
        self.is_spilling = true;
        self.queue.push(job);
    }

    fn push_task<F: FnOnce() + Send + 'static>(&mut self, task: F) {
        if self.is_spilling && self.queue.is_empty() {
            self.is_spilling = false;
        }
        if self.is_spilling {
            self.queue.push(Job::new(task));
            return;
        }
        match SmallJob::try_new(task) {
            Ok(small) => {
                if let Err(small) = self.ring.push(small) {
                    self.push_job(small.into_job());
                }
            }
            Err(task) => self.push_job(Job::new(task)),
        }
    }
}

impl Drop for LocalQueue {
    fn drop(&mut self) {
        self.is_alive.store(false, Ordering::Release);
    }
}

#[derive(Debug)]
struct Entry {
    ring: Arc<Ring>,
    stealer: Stealer<Job>,
    is_alive: Arc<AtomicBool>,
}

impl Entry {
    fn is_empty(&self) -> bool {
        self.ring.is_empty() && self.stealer.is_empty()
    }
}

/// A pool's list of submitter queues.
#[derive(Debug)]
pub(crate) struct Submitters {
    id: u64,
    entries: Mutex<Vec<Entry>>,
    /// Bumped on every change of `entries`.
    version: AtomicUsize,
}

impl Default for Submitters {
    fn default() -> Self {
        Submitters {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            entries: Mutex::new(Vec::new()),
            version: AtomicUsize::new(0),
        }
    }
}

/// A worker's copy of the rings and stealers, refreshed when `version` moved.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    version: usize,
    queues: Vec<(Arc<Ring>, Stealer<Job>)>,
}

impl Submitters {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// True if some submitter queue holds a job (the sleeper's final look).
    pub(crate) fn has_work(&self) -> bool {
        self.lock().iter().any(|entry| !entry.is_empty())
    }

    /// Claims a batch into `local` from the first submitter with work: its ring first,
    /// then its deque (which only fills while the ring is full or for larger jobs).
    pub(crate) fn steal(&self, cache: &RefCell<Cache>, local: &Worker<Job>) -> Option<Job> {
        let version = self.version.load(Ordering::Acquire);
        if cache.borrow().version != version {
            let queues = self
                .lock()
                .iter()
                .map(|e| (Arc::clone(&e.ring), e.stealer.clone()))
                .collect();
            *cache.borrow_mut() = Cache { version, queues };
        }
        let cache = cache.borrow();
        cache.queues.iter().find_map(|(ring, stealer)| {
            retry(|| ring.steal_into(local))
                .or_else(|| retry(|| stealer.steal_batch_and_pop(local)))
        })
    }

    fn register(self: &Arc<Self>) -> LocalQueue {
        let queue = Worker::new_fifo();
        let ring = ring::Producer::new();
        let is_alive = Arc::new(AtomicBool::new(true));
        let mut entries = self.lock();
        entries.retain(|e| e.is_alive.load(Ordering::Acquire) || !e.is_empty());
        entries.push(Entry {
            ring: Arc::clone(ring.ring()),
            stealer: queue.stealer(),
            is_alive: Arc::clone(&is_alive),
        });
        self.version.fetch_add(1, Ordering::Release);
        LocalQueue {
            pool_id: self.id,
            pool: Arc::downgrade(self),
            ring,
            queue,
            is_spilling: false,
            is_alive,
        }
    }
}

/// Calls `f` with the calling thread's queues for the pool of `submitters` (registering
/// them on first use); `None` during thread-local destruction or a re-entrant call.
fn with_local_queue<R>(
    submitters: &Arc<Submitters>,
    f: impl FnOnce(&mut LocalQueue) -> R,
) -> Option<R> {
    QUEUES
        .try_with(|queues| {
            let mut queues = queues.try_borrow_mut().ok()?;
            let index = match queues.iter().position(|q| q.pool_id == submitters.id) {
                Some(index) => index,
                None => {
                    queues.retain(|q| q.pool.strong_count() > 0);
                    queues.push(submitters.register());
                    queues.len() - 1
                }
            };
            Some(f(&mut queues[index]))
        })
        .ok()
        .flatten()
}

impl Submitters {
    /// Pushes `jobs` on the calling thread's deque for this pool; returns how many, or hands
    /// `jobs` back untouched when the thread has no queue to push to (during thread-local
    /// destruction, or re-entrantly), for the pool's injector.
    pub(crate) fn push<I: Iterator<Item = Job>>(self: &Arc<Self>, jobs: I) -> Result<usize, I> {
        let mut jobs = Some(jobs);
        let pushed = with_local_queue(self, |queue| {
            jobs.take()
                .map_or(0, |jobs| jobs.map(|job| queue.push_job(job)).count())
        });
        match (pushed, jobs) {
            (Some(count), _) => Ok(count),
            (None, Some(jobs)) => Err(jobs),
            (None, None) => unreachable!("`jobs` is taken only when the queue is there"),
        }
    }

    /// Queues `task` from the calling thread: in its ring for this pool if the closure fits
    /// in one word (and nothing waits in its deque), else on its deque. Hands `task` back
    /// when the thread has no queue to push to, as [`Submitters::push`] does.
    pub(crate) fn spawn<F: FnOnce() + Send + 'static>(self: &Arc<Self>, task: F) -> Result<(), F> {
        let mut task = Some(task);
        let pushed = with_local_queue(self, |queue| {
            if let Some(task) = task.take() {
                queue.push_task(task);
            }
        });
        match (pushed, task) {
            (Some(()), _) => Ok(()),
            (None, Some(task)) => Err(task),
            (None, None) => unreachable!("`task` is taken only when the queue is there"),
        }
    }
}
