//! How idle workers go to sleep and how new work wakes them.
//!
//! # Goals
//!
//! - An idle pool uses no CPU: a worker that found nothing to do for a while blocks on
//!   a condition variable instead of spinning.
//! - Submitting a job never makes a system call when every worker is awake: the push
//!   path costs a fence (only a compiler fence on Linux) and one load of a counter that
//!   only changes when a worker falls asleep or is woken.
//! - No lost wake-ups: a job pushed while a worker is on its way to sleep is either
//!   seen by that worker's last look or wakes a sleeper.
//!
//! # States of a worker
//!
//! 1. **Busy**: running jobs.
//! 2. **Searching**: found no job; it looks again a few rounds with growing back-off
//!    (`worker.rs`, `SPIN_ROUNDS`), so short gaps between jobs cost no sleep. The first
//!    6 rounds spin (`SPIN_LIMIT`), the other 26 call `yield_now`. An idle worker may
//!    only go on to the yielding rounds while it holds the pool's *yield token*
//!    ([`Sleep::take_yield_token`]), which one worker at a time holds (Go's rule of at
//!    most one spinning thread); the others go to sleep after the spinning rounds. A
//!    worker waiting on a latch (`join`, `scope`) searches all rounds: its caller waits.
//!    The token only decides *when* a worker goes to sleep, never whether a job is seen:
//!    every way to sleep is step 3, so the wake-up argument below does not involve it.
//! 3. **Sleepy → asleep** ([`Sleep::sleep`]): it takes its own lock, increments the
//!    shared `sleepers` counter, fences (see "Memory ordering") and looks for work one last
//!    time (`has_work`, which also checks termination and, for a worker waiting on a
//!    latch, whether that latch is set). If it finds something it decrements `sleepers`
//!    and returns. Otherwise it marks itself `is_blocked` and waits on its condition
//!    variable, releasing its lock only inside that wait.
//! 4. **Woken**: whoever wakes it clears `is_blocked` and decrements `sleepers` on its
//!    behalf (as rayon-core does), so `sleepers` counts exactly the workers that have
//!    announced sleep and not yet been woken.
//!
//! # Waking
//!
//! - [`Sleep::notify_new_jobs`] (after any push): fence (see below), load `sleepers`.
//!   If it is zero, return: no lock, no syscall. Otherwise visit workers, and under each
//!   one's lock wake those marked `is_blocked`, up to the number of new jobs.
//! - [`Sleep::wake_specific`] (a latch was set, a broadcast job was queued for that
//!   worker): always takes that worker's lock and wakes it if blocked.
//! - [`Sleep::wake_all`] (termination).
//!
//! A woken worker that takes a batch from the injector and leaves more behind calls
//! `notify_new_jobs(1)` itself, so wake-ups cascade instead of the submitter paying for
//! all of them.
//!
//! # What the protocol costs
//!
//! Measured with the spawn benchmark and `coretune bench sum` on the 2-CPU machine; the
//! figures, the commands and the designs tried and not kept are in BENCHMARKS.md, "Where
//! the time goes (a second look)".
//!
//! - **`spawn` barely touches it.** During a 10M-item `spawn` run the workers go to sleep a
//!   handful of times, so a push almost always costs only the fence and the load of
//!   `sleepers`; a worker takes about 24 jobs per steal from a submitter's queue, which is
//!   rarely empty. Profiles put nearly all of the submitting thread's CPU time in the push
//!   itself, not in this protocol.
//! - **The search's yields are involuntary context switches.** A worker whose `yield_now`
//!   lets another thread run is counted by the kernel as preempted (`nivcsw`), not as
//!   sleeping. With every idle worker searching all 32 rounds, `bench sum` (64 workers on
//!   2 CPUs, each idle once at the end of its share) showed about 1,600 of them a run, and
//!   about 150 with the search cut to its 6 spinning rounds. They cost `sum` little time,
//!   but each is a pass through the scheduler, and idle workers taking turns with
//!   `yield_now` are runnable threads on CPUs that busy threads need.
//! - **Hence the yield token** (step 2): about 60–110 such switches a run of `sum`, with
//!   `spawn`'s wall and CPU time no worse within the noise, at the price of the other idle
//!   workers sleeping and being woken (about 1,700 voluntary switches per 5M items).
//! - **Not built:** rayon's rule (a push wakes nobody while a worker is searching) and the
//!   rest of Go's (the searcher that finds work wakes the next). They move the
//!   no-lost-wake-up argument onto a second counter, whose reader (the submitter) has no
//!   real fence in the asymmetric scheme, so every "found work" would need a `membarrier`
//!   of its own; and `spawn`, whose pushes almost never see a sleeper, would not see them.
//!   Longer or shorter searches, a pause before the next steal and larger steal batches
//!   made no difference beyond the noise of the loaded machine.
//!
//! # Memory ordering
//!
//! The no-lost-wake-up argument is Dekker's: the submitter *writes the queue, then
//! reads `sleepers`*; the sleeper *writes `sleepers`, then reads the queue*. Each side
//! must keep its write before its read (a store-load order, which no CPU gives for free).
//!
//! - **Symmetric** (under loom, off Linux, or if `membarrier(2)` is refused): both sides
//!   issue a `SeqCst` fence between write and read. Fences are totally ordered, so either
//!   the submitter's fence comes first, and then the sleeper's final look sees the job,
//!   or the sleeper's comes first, and then the submitter sees `sleepers > 0`.
//! - **Asymmetric** (Linux, the default): the submitter only stops the *compiler* from
//!   reordering (`compiler_fence`), and the sleeper, which is rare and about to block
//!   anyway, calls `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` (`sys.rs`): every
//!   running thread of the process passes a full barrier before it returns. If the
//!   submitter passed it before its write, its later read sees the sleeper's increment
//!   (made before the call); if after its write, the write is visible to the sleeper's
//!   final look. This is the light/heavy fence pair of folly's `asymmetricThreadFence`.
//!   A per-push `SeqCst` fence was about a quarter of the spawn cost (BENCHMARKS.md,
//!   "How we got here"); with the pair, a sleep costs one more system call instead.
//!
//! Either way, waking someone is enough: if the worker it finds is the one that is still
//! looking (it holds its lock until it blocks, so the waker waits for that), then that
//! worker is awake and will look again; if it finds a blocked one, it wakes it. In both
//! cases at least one worker will look at the queue after the push.
//!
//! Waking a specific worker does not need the fence: the waker publishes its condition
//! (latch flag, inbox job) and then takes the sleeper's lock. Either it gets the lock
//! before the sleeper does, and the lock's release/acquire makes the condition visible
//! to the sleeper's final look, or after the sleeper blocked, and then it sees
//! `is_blocked` and notifies.
//!
//! Termination is a `SeqCst` store of the flag followed by [`Sleep::wake_all`], which
//! takes every worker's lock: the same argument as a specific wake.
//!
//! The loom models at the bottom of this file check these three cases, with the
//! symmetric fence (loom cannot model `membarrier`).

use crate::sync::{AtomicUsize, Condvar, Mutex, Ordering, fence, lock, wait};
use crate::sys;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicBool as StdAtomicBool, compiler_fence};

/// Per-worker sleep state, padded so that one worker falling asleep does not disturb
/// its neighbours' lines.
#[derive(Debug)]
struct WorkerSleep {
    /// True while the worker waits on `condvar`; cleared by whoever wakes it.
    is_blocked: Mutex<bool>,
    condvar: Condvar,
}

/// Shared sleep state of a pool: the `sleepers` counter and one lock per worker.
#[derive(Debug)]
pub(crate) struct Sleep {
    /// Workers that announced sleep and were not woken yet.
    sleepers: CachePadded<AtomicUsize>,
    workers: Vec<CachePadded<WorkerSleep>>,
    /// True: submitters use a compiler fence, sleepers `membarrier` (module docs).
    is_asymmetric: bool,
    /// 1 while an idle worker holds the yield token (module docs, "States of a worker").
    /// Only decides how long a worker searches, never whether a job is seen: Relaxed.
    yielder: CachePadded<StdAtomicBool>,
}

impl Sleep {
    pub(crate) fn new(num_workers: usize) -> Self {
        Sleep {
            sleepers: CachePadded::new(AtomicUsize::new(0)),
            workers: (0..num_workers)
                .map(|_| {
                    CachePadded::new(WorkerSleep {
                        is_blocked: Mutex::new(false),
                        condvar: Condvar::new(),
                    })
                })
                .collect(),
            is_asymmetric: sys::register(),
            yielder: CachePadded::new(StdAtomicBool::new(false)),
        }
    }

    /// Puts worker `index` to sleep unless `has_work` finds something after it
    /// announced itself (step 3 of the module docs). Returns once woken or if
    /// `has_work` returned true.
    pub(crate) fn sleep(&self, index: usize, has_work: impl Fn() -> bool) {
        let worker = &self.workers[index];
        let mut is_blocked = lock(&worker.is_blocked);
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        if self.is_asymmetric {
            if !sys::heavy_barrier() {
                // Cannot happen once registered; without the barrier sleeping could lose
                // a wake-up, so stay awake (the caller looks for work again).
                self.sleepers.fetch_sub(1, Ordering::SeqCst);
                return;
            }
        } else {
            fence(Ordering::SeqCst);
        }
        if has_work() {
            self.sleepers.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        *is_blocked = true;
        while *is_blocked {
            is_blocked = wait(&worker.condvar, is_blocked);
        }
    }

    /// Takes the yield token if no other worker holds it: true if the caller may go on
    /// searching with `yield_now` (it must [`Sleep::release_yield_token`] when it stops).
    pub(crate) fn take_yield_token(&self) -> bool {
        !self.yielder.load(Ordering::Relaxed) && !self.yielder.swap(true, Ordering::Relaxed)
    }

    /// Gives the yield token back (found work or going to sleep).
    pub(crate) fn release_yield_token(&self) {
        self.yielder.store(false, Ordering::Relaxed);
    }

    /// Called after pushing `count` jobs to a shared queue: wakes up to `count`
    /// sleeping workers, and costs only a fence and a load when none sleeps.
    pub(crate) fn notify_new_jobs(&self, count: usize) {
        if self.is_asymmetric {
            compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
        if self.sleepers.load(Ordering::SeqCst) == 0 {
            return;
        }
        let mut woken = 0;
        for index in 0..self.workers.len() {
            if woken == count {
                break;
            }
            if self.wake_if_blocked(index) {
                woken += 1;
            }
        }
    }

    /// Wakes worker `index` if it is blocked (its latch was set, or a job was queued for
    /// it alone).
    pub(crate) fn wake_specific(&self, index: usize) {
        self.wake_if_blocked(index);
    }

    /// Wakes every blocked worker (termination).
    pub(crate) fn wake_all(&self) {
        for index in 0..self.workers.len() {
            self.wake_if_blocked(index);
        }
    }

    fn wake_if_blocked(&self, index: usize) -> bool {
        let worker = &self.workers[index];
        let mut is_blocked = lock(&worker.is_blocked);
        if !*is_blocked {
            return false;
        }
        *is_blocked = false;
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        worker.condvar.notify_one();
        true
    }

    /// Number of workers currently announced as sleeping (loom tests).
    #[cfg(all(test, loom))]
    pub(crate) fn sleepers(&self) -> usize {
        self.sleepers.load(Ordering::SeqCst)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Sleep;

    #[test]
    fn one_yield_token_per_pool() {
        let sleep = Sleep::new(3);
        assert!(sleep.take_yield_token());
        assert!(!sleep.take_yield_token(), "a second worker got the token");
        sleep.release_yield_token();
        assert!(sleep.take_yield_token());
        assert!(Sleep::new(1).take_yield_token(), "tokens are per pool");
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::Sleep;
    use crate::sync::{Arc, AtomicBool, AtomicUsize, Ordering};
    use loom::thread;

    /// A push racing with a worker going to sleep: the job is never stranded.
    #[test]
    fn loom_push_vs_sleep_no_lost_wakeup() {
        loom::model(|| {
            let sleep = Arc::new(Sleep::new(1));
            let queued = Arc::new(AtomicUsize::new(0));
            let worker = {
                let (sleep, queued) = (Arc::clone(&sleep), Arc::clone(&queued));
                thread::spawn(move || {
                    // Look for work; sleep when there is none; stop after one job.
                    loop {
                        if queued.load(Ordering::SeqCst) == 1 {
                            queued.store(2, Ordering::SeqCst);
                            return;
                        }
                        sleep.sleep(0, || queued.load(Ordering::SeqCst) == 1);
                    }
                })
            };
            queued.store(1, Ordering::SeqCst);
            sleep.notify_new_jobs(1);
            worker.join().unwrap();
            assert_eq!(queued.load(Ordering::SeqCst), 2);
            assert_eq!(sleep.sleepers(), 0);
        });
    }

    /// A push racing with two workers on their way to sleep (`notify_new_jobs` visits
    /// them in index order and may find the first still looking): one of them runs the
    /// job without any further wake-up (a lost one leaves both blocked: loom reports the
    /// deadlock), then stops the other, and `sleepers` ends exact. Workers pinned to one
    /// CPU or stealing in a given order reach this protocol the same way (loom cannot
    /// model CPUs; `tests/placement.rs` runs it pinned). Three threads with two locks
    /// and condition variables did not finish in 10 minutes unbounded; at most 3
    /// preemptions per execution (tokio's CI uses 2–4) runs in under a second; with
    /// `notify_new_jobs` waking nobody, or the sleeper's fence removed, it fails.
    #[test]
    fn loom_push_vs_two_sleepers() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let sleep = Arc::new(Sleep::new(2));
            // 0: empty, 1: one job queued, 2: taken.
            let queued = Arc::new(AtomicUsize::new(0));
            let stop = Arc::new(AtomicBool::new(false));
            let workers: Vec<_> = (0..2)
                .map(|index| {
                    let (sleep, queued, stop) =
                        (Arc::clone(&sleep), Arc::clone(&queued), Arc::clone(&stop));
                    thread::spawn(move || {
                        loop {
                            if queued
                                .compare_exchange(1, 2, Ordering::SeqCst, Ordering::SeqCst)
                                .is_ok()
                            {
                                stop.store(true, Ordering::SeqCst);
                                sleep.wake_all();
                                return true;
                            }
                            if stop.load(Ordering::SeqCst) {
                                return false;
                            }
                            sleep.sleep(index, || {
                                queued.load(Ordering::SeqCst) == 1 || stop.load(Ordering::SeqCst)
                            });
                        }
                    })
                })
                .collect();
            queued.store(1, Ordering::SeqCst);
            sleep.notify_new_jobs(1);
            let ran: usize = workers
                .into_iter()
                .map(|w| usize::from(w.join().unwrap()))
                .sum();
            assert_eq!(ran, 1);
            assert_eq!(sleep.sleepers(), 0);
        });
    }

    /// A latch-style condition set by another thread followed by a specific wake.
    #[test]
    fn loom_specific_wake() {
        loom::model(|| {
            let sleep = Arc::new(Sleep::new(2));
            let flag = Arc::new(AtomicBool::new(false));
            let waiter = {
                let (sleep, flag) = (Arc::clone(&sleep), Arc::clone(&flag));
                thread::spawn(move || {
                    while !flag.load(Ordering::Acquire) {
                        sleep.sleep(1, || flag.load(Ordering::Acquire));
                    }
                })
            };
            flag.store(true, Ordering::Release);
            sleep.wake_specific(1);
            waiter.join().unwrap();
        });
    }

    /// Termination racing with two workers going to sleep: both exit, count stays exact.
    #[test]
    fn loom_wake_all_terminates_two_sleepers() {
        loom::model(|| {
            let sleep = Arc::new(Sleep::new(2));
            let stop = Arc::new(AtomicBool::new(false));
            let workers: Vec<_> = (0..2)
                .map(|index| {
                    let (sleep, stop) = (Arc::clone(&sleep), Arc::clone(&stop));
                    thread::spawn(move || {
                        while !stop.load(Ordering::SeqCst) {
                            sleep.sleep(index, || stop.load(Ordering::SeqCst));
                        }
                    })
                })
                .collect();
            stop.store(true, Ordering::SeqCst);
            sleep.wake_all();
            for worker in workers {
                worker.join().unwrap();
            }
            assert_eq!(sleep.sleepers(), 0);
        });
    }
}
