//! Submitter queues: one FIFO deque per (thread outside the pool, pool) pair.
//!
//! A `spawn` from outside the pool used to go to crossbeam's `Injector`, whose push
//! takes a compare-and-swap on the tail plus a read-modify-write of the slot's state,
//! both on lines the workers read. A thread that submits now owns a crossbeam
//! `Worker` deque (single producer: a slot write and a release store of `back`) and
//! the workers steal batches from it like from each other. The deque's buffer and its
//! reclamation are crossbeam's; this module is safe code.
//!
//! # Lifecycle
//!
//! - A thread's first push to a pool creates its deque, kept in a thread-local list
//!   keyed by the pool's id, and registers the deque's stealer with the pool under a
//!   mutex, bumping `version` so that workers refresh their cached copy of the list.
//! - When the thread exits, its deque handle is dropped and the entry is marked dead;
//!   jobs still queued stay stealable (the stealer shares the buffer). Dead, empty
//!   entries are pruned at the next registration.
//! - A thread-local entry whose pool is gone is pruned at the thread's next new
//!   registration. Pushes during thread-local destruction, or re-entrant ones, fall
//!   back to the injector.
//!
//! The sleep protocol is unchanged: a worker's final look before sleeping checks every
//! registered stealer under the mutex, and the registration happens before the push.

use crate::job::Job;
use crate::registry::{Registry, retry};
use crossbeam_deque::{Stealer, Worker};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// Pool ids for the thread-local lookup (addresses could be reused by a later pool).
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static QUEUES: RefCell<Vec<LocalQueue>> = const { RefCell::new(Vec::new()) };
}

/// The push end of one thread's queue for one pool.
struct LocalQueue {
    pool_id: u64,
    pool: Weak<Registry>,
    queue: Worker<Job>,
    is_alive: Arc<AtomicBool>,
}

impl Drop for LocalQueue {
    fn drop(&mut self) {
        self.is_alive.store(false, Ordering::Release);
    }
}

#[derive(Debug)]
struct Entry {
    stealer: Stealer<Job>,
    is_alive: Arc<AtomicBool>,
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

/// A worker's copy of the stealers, refreshed when `version` moved.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    version: usize,
    stealers: Vec<Stealer<Job>>,
}

impl Submitters {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// True if some submitter queue holds a job (the sleeper's final look).
    pub(crate) fn has_work(&self) -> bool {
        self.lock().iter().any(|entry| !entry.stealer.is_empty())
    }

    /// Steals a batch into `local` from the first non-empty submitter queue.
    pub(crate) fn steal(&self, cache: &RefCell<Cache>, local: &Worker<Job>) -> Option<Job> {
        let version = self.version.load(Ordering::Acquire);
        if cache.borrow().version != version {
            let stealers = self.lock().iter().map(|e| e.stealer.clone()).collect();
            *cache.borrow_mut() = Cache { version, stealers };
        }
        let cache = cache.borrow();
        cache
            .stealers
            .iter()
            .find_map(|stealer| retry(|| stealer.steal_batch_and_pop(local)))
    }

    fn register(&self, pool: &Arc<Registry>) -> LocalQueue {
        let queue = Worker::new_fifo();
        let is_alive = Arc::new(AtomicBool::new(true));
        let mut entries = self.lock();
        entries.retain(|e| e.is_alive.load(Ordering::Acquire) || !e.stealer.is_empty());
        entries.push(Entry {
            stealer: queue.stealer(),
            is_alive: Arc::clone(&is_alive),
        });
        self.version.fetch_add(1, Ordering::Release);
        LocalQueue {
            pool_id: self.id,
            pool: Arc::downgrade(pool),
            queue,
            is_alive,
        }
    }
}

/// Pushes `jobs` on the calling thread's queue for `pool`; returns how many.
pub(crate) fn push(pool: &Arc<Registry>, jobs: impl Iterator<Item = Job>) -> usize {
    let mut jobs = Some(jobs);
    let pushed = QUEUES.try_with(|queues| {
        let Ok(mut queues) = queues.try_borrow_mut() else {
            return None;
        };
        let submitters = pool.submitters();
        let index = match queues.iter().position(|q| q.pool_id == submitters.id) {
            Some(index) => index,
            None => {
                queues.retain(|q| q.pool.strong_count() > 0);
                queues.push(submitters.register(pool));
                queues.len() - 1
            }
        };
        let queue = &queues[index].queue;
        jobs.take()
            .map(|jobs| jobs.map(|job| queue.push(job)).count())
    });
    match (pushed, jobs) {
        (Ok(Some(count)), _) => count,
        (_, Some(jobs)) => jobs.map(|job| pool.inject(job)).count(),
        (_, None) => 0, // consumed above
    }
}
