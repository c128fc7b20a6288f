//! A submitter's ring: a bounded single-producer, multi-consumer queue of [`SmallJob`]s.
//!
//! `ThreadPool::spawn` of a closure of at most one word from a thread outside the pool
//! writes it here (16 bytes: four jobs per cache line, where a 32-byte [`Job`] in a
//! crossbeam deque fits two). The queue is tokio's local run queue
//! (`runtime/scheduler/multi_thread/queue.rs`) reduced to what a submitter needs: only
//! the producer pushes, only consumers (the workers) take, and each cursor is kept where
//! the other side does not touch it on every job.
//!
//! # Layout and protocol
//!
//! - `tail` (written by the producer only): positions below it hold published jobs.
//! - `head` packs two positions, `steal` (high half) and `real` (low half). Jobs in
//!   `real..tail` may be claimed; jobs in `steal..real` are being moved out by the one
//!   consumer that claimed them; slots below `steal` are free. Positions are `u32` and
//!   wrap; the slot of position `p` is `p & MASK`.
//! - **Push** (producer): if `tail - steal` reaches the capacity by the producer's
//!   *cached* `steal`, it loads `head` again (`Acquire`); if the ring is still full the job
//!   is handed back (the caller spills it to its deque). Otherwise it writes the slot and
//!   stores `tail + 1` (`Release`). The producer reads `head` about once per lap, not per
//!   push, so the line the consumers write stays with them.
//! - **Claim** (consumer): load `head`; if `steal != real` another consumer is moving jobs
//!   out: report [`Steal::Retry`] (as tokio's `steal_into` does). Else load `tail`
//!   (`Acquire`), and claim up to [`MAX_CLAIM`] jobs with a compare-and-swap of
//!   `(steal, real)` to `(steal, real + n)`. Read the `n` slots, then store
//!   `(real + n, real + n)` (`Release`): only the claiming consumer changes `head` while
//!   `steal != real`, so a plain store suffices.
//!
//! # Why no job is lost, run twice or overwritten
//!
//! - A slot is written only at a position `p` with `p - steal < capacity` for a `steal`
//!   the producer loaded, and `steal` only grows, so the slot's previous position
//!   (`p - capacity`) is below the current `steal`: its job was moved out, and the
//!   consumer's `Release` store of `head` after reading it pairs with the producer's
//!   `Acquire` load before writing.
//! - A consumer reads only positions in `real..tail` for a `tail` it loaded with
//!   `Acquire`, which pairs with the producer's `Release` store after writing them.
//! - Claimed ranges are disjoint: each is taken by one successful CAS of `real`, and
//!   every other consumer either failed that CAS or saw `steal != real` and took nothing.
//!
//! The loom models at the bottom check these with a ring of 2 or 4 slots (wrapping and
//! full): every job runs or is dropped exactly once.
//!
//! # Sleep protocol
//!
//! A push is a store of `tail`, then `Sleep::notify_new_jobs` (the fence, the load of
//! `sleepers`); a sleeper's final look is [`Ring::is_empty`], which loads `head` and
//! `tail`: the same store-then-load pairs as with any other queue (`sleep/README.md`).

use crate::job::{Job, SmallJob};
use crate::sync::{AtomicU32, AtomicU64, Ordering, UnsafeCell};
use crossbeam_deque::{Steal, Worker};
use crossbeam_utils::CachePadded;
use std::mem::MaybeUninit;
use std::sync::Arc;

/// Slots per ring: 1024 × 16 bytes = 16 KiB, half of this machine's 32 KiB L1 data cache.
/// A scratch benchmark of the bare ring (one producer, two consumers spinning, 10M jobs;
/// BENCHMARKS.md, "Bare queues") gave 6.6-7.2 ns/job with 512 or 1024 slots, 8-11 with
/// 128 or 256, 10.6-12.8 with 2048 or 4096, and 10.7-16.5 with 32-byte slots.
#[cfg(not(loom))]
const CAPACITY: u32 = 1024;
/// Under loom: small enough that the models wrap around and fill the ring.
#[cfg(loom)]
const CAPACITY: u32 = 2;

/// Most jobs one claim takes: crossbeam-deque's steal batch (`MAX_BATCH`), so that a
/// second worker finds jobs left in the ring instead of stealing them one by one.
const MAX_CLAIM: u32 = 32;

const MASK: u32 = CAPACITY - 1;

fn unpack(head: u64) -> (u32, u32) {
    ((head >> 32) as u32, head as u32)
}

fn pack(steal: u32, real: u32) -> u64 {
    (u64::from(steal) << 32) | u64::from(real)
}

/// The shared half: cursors and slots.
#[derive(Debug)]
pub(crate) struct Ring {
    /// `(steal, real)`, see the module docs; written by consumers only.
    head: CachePadded<AtomicU64>,
    /// Written by the producer only.
    tail: CachePadded<AtomicU32>,
    slots: Box<[UnsafeCell<MaybeUninit<SmallJob>>]>,
}

// SAFETY: a slot is accessed by one thread at a time: by the producer while its position
// is at or past `tail` (unpublished), by the consumer that claimed it while in
// `steal..real`, and by `Drop` with `&mut self`; the hand-offs are the release/acquire
// pairs of the module docs. The jobs themselves are `Send`.
unsafe impl Sync for Ring {}
// SAFETY: the ring owns `SmallJob`s, which are `Send`.
unsafe impl Send for Ring {}

/// The push end, owned by the submitting thread.
#[derive(Debug)]
pub(crate) struct Producer {
    ring: Arc<Ring>,
    /// The producer's copy of `ring.tail`.
    tail: u32,
    /// `steal` as last loaded: the ring is not full while `tail - steal < CAPACITY`.
    steal: u32,
}

impl Producer {
    /// An empty ring and its push end.
    pub(crate) fn new() -> Self {
        let ring = Ring {
            head: CachePadded::new(AtomicU64::new(0)),
            tail: CachePadded::new(AtomicU32::new(0)),
            slots: (0..CAPACITY)
                .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
                .collect(),
        };
        Producer {
            ring: Arc::new(ring),
            tail: 0,
            steal: 0,
        }
    }

    /// The shared half, for consumers.
    pub(crate) fn ring(&self) -> &Arc<Ring> {
        &self.ring
    }

    /// Publishes `job`, or hands it back if the ring is full.
    pub(crate) fn push(&mut self, job: SmallJob) -> Result<(), SmallJob> {
        if self.tail.wrapping_sub(self.steal) >= CAPACITY {
            self.steal = unpack(self.ring.head.load(Ordering::Acquire)).0;
            if self.tail.wrapping_sub(self.steal) >= CAPACITY {
                return Err(job);
            }
        }
        self.ring.slots[(self.tail & MASK) as usize].with_mut(|slot| {
            // SAFETY: position `tail` is unpublished and `tail - steal < CAPACITY`, so no
            // consumer reads this slot until the store of `tail` below (module docs).
            unsafe { (*slot).write(job) };
        });
        self.tail = self.tail.wrapping_add(1);
        self.ring.tail.store(self.tail, Ordering::Release);
        Ok(())
    }
}

impl Ring {
    /// True if no job can be claimed and none is being moved out (a sleeper's final
    /// look: a claim in progress counts as work, since its claimer may leave more).
    pub(crate) fn is_empty(&self) -> bool {
        let (steal, real) = unpack(self.head.load(Ordering::Acquire));
        steal == real && self.tail.load(Ordering::Acquire) == real
    }

    /// Claims up to [`MAX_CLAIM`] jobs: returns the oldest and pushes the others on
    /// `local` so that they stay stealable, in an order that makes `local`'s `pop` (LIFO)
    /// return them oldest first.
    pub(crate) fn steal_into(&self, local: &Worker<Job>) -> Steal<Job> {
        let mut head = self.head.load(Ordering::Acquire);
        let (real, n) = loop {
            let (steal, real) = unpack(head);
            if steal != real {
                return Steal::Retry;
            }
            let available = self.tail.load(Ordering::Acquire).wrapping_sub(real);
            if available == 0 {
                return Steal::Empty;
            }
            let n = available.min(MAX_CLAIM);
            let claimed = pack(steal, real.wrapping_add(n));
            match self.head.compare_exchange_weak(
                head,
                claimed,
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                Ok(_) => break (real, n),
                Err(actual) => head = actual,
            }
        };
        for i in (1..n).rev() {
            local.push(self.take(real.wrapping_add(i)).into_job());
        }
        let first = self.take(real);
        let end = real.wrapping_add(n);
        self.head.store(pack(end, end), Ordering::Release);
        Steal::Success(first.into_job())
    }

    /// Moves the job at `position` out of its slot.
    fn take(&self, position: u32) -> SmallJob {
        self.slots[(position & MASK) as usize].with_mut(|slot| {
            // SAFETY: the caller claimed `position` (it lies in `steal..real` of its own
            // successful CAS, below the `tail` it loaded), so the slot holds a published
            // job that no other thread reads or writes until `head` moves past it.
            unsafe { (*slot).assume_init_read() }
        })
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // `&mut self`: no consumer is in the middle of a claim, so `steal == real`, and
        // the producer (which holds an `Arc` to the ring) is gone.
        let (_, real) = unpack(self.head.load(Ordering::Acquire));
        let tail = self.tail.load(Ordering::Acquire);
        let mut position = real;
        while position != tail {
            drop(self.take(position));
            position = position.wrapping_add(1);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod test {
    use super::{CAPACITY, Producer};
    use crate::job::SmallJob;
    use crossbeam_deque::{Steal, Worker};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn counted(runs: &Arc<AtomicUsize>) -> SmallJob {
        let runs = Arc::clone(runs);
        SmallJob::try_new(move || {
            runs.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap_or_else(|_| unreachable!("an Arc is one word"))
    }

    #[test]
    fn fills_hands_back_and_drains_in_order() {
        let runs = Arc::new(AtomicUsize::new(0));
        let mut producer = Producer::new();
        let ring = Arc::clone(producer.ring());
        for _ in 0..CAPACITY {
            assert!(producer.push(counted(&runs)).is_ok());
        }
        assert!(
            producer.push(counted(&runs)).is_err(),
            "a full ring takes no more"
        );
        let local = Worker::new_lifo();
        let mut taken = 0;
        while let Steal::Success(job) = ring.steal_into(&local) {
            job.run();
            taken += 1;
            while let Some(job) = local.pop() {
                job.run();
                taken += 1;
            }
        }
        assert_eq!(taken, CAPACITY as usize);
        assert_eq!(runs.load(Ordering::Relaxed), CAPACITY as usize);
        assert!(ring.is_empty());
        // After a full lap the producer finds the space again.
        assert!(producer.push(counted(&runs)).is_ok());
        assert!(!ring.is_empty());
    }

    #[test]
    fn jobs_left_in_a_dropped_ring_are_dropped() {
        let runs = Arc::new(AtomicUsize::new(0));
        let mut producer = Producer::new();
        for _ in 0..10 {
            assert!(producer.push(counted(&runs)).is_ok());
        }
        drop(producer);
        // Each job held a clone of `runs`: all ten were dropped, none run.
        assert_eq!(Arc::strong_count(&runs), 1);
        assert_eq!(runs.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn claims_return_jobs_oldest_first() {
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut producer = Producer::new();
        for i in 0..40usize {
            let order = Arc::clone(&order);
            let job = SmallJob::try_new(move || order.lock().unwrap().push(i));
            // Two words (an Arc and an index) do not fit: box them for this test.
            let job = job.or_else(|f| {
                let boxed = Box::new(f);
                SmallJob::try_new(boxed)
            });
            assert!(
                producer
                    .push(job.unwrap_or_else(|_| unreachable!()))
                    .is_ok()
            );
        }
        let local = Worker::new_lifo();
        let ring = Arc::clone(producer.ring());
        while let Steal::Success(job) = ring.steal_into(&local) {
            job.run();
            while let Some(job) = local.pop() {
                job.run();
            }
        }
        assert_eq!(*order.lock().unwrap(), (0..40).collect::<Vec<_>>());
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::Producer;
    use crate::job::SmallJob;
    use crate::sync::{AtomicUsize, Ordering};
    use crossbeam_deque::{Steal, Worker};
    use loom::thread;
    use std::sync::Arc;

    /// Counts runs and drops of the job's captured value.
    struct Counted(Arc<(AtomicUsize, AtomicUsize)>);

    impl Drop for Counted {
        fn drop(&mut self) {
            (self.0).1.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn job(counts: &Arc<(AtomicUsize, AtomicUsize)>) -> SmallJob {
        let counted = Counted(Arc::clone(counts));
        SmallJob::try_new(move || {
            (counted.0).0.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap_or_else(|_| unreachable!("one Arc is one word"))
    }

    /// Drains what one consumer can claim now (no spinning: loom explores the retries).
    fn consume(ring: &super::Ring) -> usize {
        let local = Worker::new_lifo();
        let mut ran = 0;
        for _ in 0..2 {
            if let Steal::Success(job) = ring.steal_into(&local) {
                job.run();
                ran += 1;
                while let Some(job) = local.pop() {
                    job.run();
                    ran += 1;
                }
            }
        }
        ran
    }

    /// A producer pushing 3 jobs through a 2-slot ring (it must wrap, and may find the
    /// ring full and spill) while two consumers claim: every job runs or is handed back
    /// exactly once, and every captured value is dropped once.
    #[test]
    fn loom_push_and_two_consumers() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(2);
        model.check(|| {
            let counts = Arc::new((AtomicUsize::new(0), AtomicUsize::new(0)));
            let mut producer = Producer::new();
            let ring = Arc::clone(producer.ring());
            let consumers: Vec<_> = (0..2)
                .map(|_| {
                    let ring = Arc::clone(&ring);
                    thread::spawn(move || consume(&ring))
                })
                .collect();
            let mut spilled = 0;
            for _ in 0..3 {
                if let Err(job) = producer.push(job(&counts)) {
                    job.run();
                    spilled += 1;
                }
            }
            let ran: usize = consumers.into_iter().map(|c| c.join().unwrap()).sum();
            // Alone now: what the consumers left can be claimed without a retry.
            let rest = consume(&ring) + consume(&ring);
            assert!(ring.is_empty());
            assert_eq!(ran + rest + spilled, 3);
            assert_eq!(counts.0.load(Ordering::SeqCst), 3, "every job ran once");
            assert_eq!(
                counts.1.load(Ordering::SeqCst),
                3,
                "every capture dropped once"
            );
        });
    }
}
