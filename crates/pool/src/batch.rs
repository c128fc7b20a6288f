//! Batch submission: many jobs behind one queue entry per worker.
//!
//! Through crossbeam's injector, `spawn_batch` would pay a tail CAS, a slot flag update
//! and a deque hand-off per job. Instead, jobs are written into a plain array of up to
//! [`BATCH_JOBS`] slots (one allocation per batch), and the array is queued as one
//! *runner* job per worker. A runner claims [`CLAIM`] consecutive slots at a time with
//! one `fetch_add` and runs them, until the array is exhausted; runners that arrive
//! late find nothing and return. So a job costs a store on the submitting side and a
//! share of one atomic add on the running side.
//!
//! # Protocol and ordering
//!
//! The slots are written before the array is shared (`Arc::new`), and the runners reach
//! it through the pool's queues, whose push/steal pairs are release/acquire: a runner
//! sees every slot initialised. `next` hands out disjoint ranges, so each slot is read
//! (moved out) by exactly one thread; `Drop` drops the slots at and past `next` that
//! were never claimed (only possible if a runner is dropped unrun).

use crate::job::Job;
use crate::registry::{Registry, WorkerThread};
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Jobs per batch array: 1024 × 32 bytes = 32 KiB, one allocation that stays under
/// glibc's 128 KiB `mmap` threshold (so no system call per batch).
const BATCH_JOBS: usize = 1024;

/// Slots a runner claims at once: crossbeam-deque's steal batch size (`MAX_BATCH`),
/// small enough for two workers to share a batch of 1 µs tasks evenly.
const CLAIM: usize = 32;

/// Batches smaller than this are queued job by job: an array and its runners would
/// cost more than they save.
const MIN_BATCH: usize = 2 * CLAIM;

struct Batch {
    slots: Box<[UnsafeCell<MaybeUninit<Job>>]>,
    /// First slot not yet claimed; may run past the end.
    next: AtomicUsize,
}

// SAFETY: the slots are only accessed by the thread that claimed them through `next`
// (disjoint ranges) or by `Drop` (exclusive access), and `Job` is `Send`.
unsafe impl Sync for Batch {}

impl Batch {
    fn claim(&self) -> Option<Range<usize>> {
        let len = self.slots.len();
        let start = self.next.fetch_add(CLAIM, Ordering::Relaxed);
        (start < len).then(|| start..len.min(start + CLAIM))
    }

    /// # Safety
    ///
    /// `index` must come from a range returned by `claim` to this caller, and be taken
    /// only once.
    unsafe fn take(&self, index: usize) -> Job {
        // SAFETY: the slot was initialised before the batch was shared, and the caller
        // claimed it exclusively, so moving the job out happens exactly once.
        unsafe { (*self.slots[index].get()).assume_init_read() }
    }

    /// Runs claimed ranges until none is left.
    fn run(&self) {
        WorkerThread::with_current(|worker| {
            while let Some(range) = self.claim() {
                for index in range {
                    // SAFETY: `index` lies in a range this thread just claimed.
                    let job = unsafe { self.take(index) };
                    match worker {
                        Some(worker) => worker.execute(job),
                        None => job.run(), // not reached: runners run on workers
                    }
                }
            }
        });
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        let claimed = (*self.next.get_mut()).min(self.slots.len());
        for slot in &mut self.slots[claimed..] {
            // SAFETY: slots from `claimed` on were initialised and never moved out;
            // `&mut self` excludes every other access.
            unsafe { slot.get_mut().assume_init_drop() };
        }
    }
}

/// Queues many jobs on `registry` as [`Registry::push_each`] does: arrays of up to
/// [`BATCH_JOBS`] jobs, each behind one runner per worker; a short tail goes job by job.
pub(crate) fn push(registry: &Arc<Registry>, jobs: impl Iterator<Item = Job>) {
    let mut jobs = jobs.peekable();
    while jobs.peek().is_some() {
        let chunk: Vec<Job> = jobs.by_ref().take(BATCH_JOBS).collect();
        if chunk.len() < MIN_BATCH {
            registry.push_each(chunk.into_iter());
        } else {
            registry.push_each(runners(chunk, registry.num_threads()));
        }
    }
}

/// Packs `jobs` (at most [`BATCH_JOBS`]) into one array and returns `runners` jobs
/// that run it together.
fn runners(jobs: Vec<Job>, runners: usize) -> impl Iterator<Item = Job> {
    let batch = Arc::new(Batch {
        slots: jobs
            .into_iter()
            .map(|job| UnsafeCell::new(MaybeUninit::new(job)))
            .collect(),
        next: AtomicUsize::new(0),
    });
    (0..runners).map(move |_| {
        let batch = Arc::clone(&batch);
        Job::new(move || batch.run())
    })
}

#[cfg(test)]
mod test {
    use super::{BATCH_JOBS, runners};
    use crate::job::Job;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn unrun_batches_drop_every_job_once() {
        let drops = Arc::new(AtomicUsize::new(0));
        struct Counted(Arc<AtomicUsize>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        let jobs: Vec<Job> = (0..BATCH_JOBS)
            .map(|_| {
                let counted = Counted(Arc::clone(&drops));
                Job::new(move || drop(counted))
            })
            .collect();
        let mut runners: Vec<Job> = runners(jobs, 2).collect();
        // One runner runs (outside a pool: jobs run directly), the other is dropped.
        runners.remove(0).run();
        drop(runners);
        assert_eq!(drops.load(Ordering::Relaxed), BATCH_JOBS);
    }
}
