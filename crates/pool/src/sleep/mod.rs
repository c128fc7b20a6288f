//! How idle workers go to sleep and how new work wakes them: the protocol, its states and why it
//! loses no wake-up are in `README.md` beside this file (as rayon-core keeps its sleep module's),
//! with what it costs and the designs measured against it.
//!
//! In short: a worker that finds nothing *searches* for a few rounds, then announces itself
//! asleep and looks once more before it blocks; a push wakes a sleeper only when nobody
//! searches, and the last searcher to find work wakes the next when work is left.

use crate::sync::{AtomicU64, Condvar, Mutex, Ordering, fence, lock, wait};
use crate::sys;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicBool as StdAtomicBool, compiler_fence};

/// One sleeper in [`Sleep`]'s counters.
const SLEEPER: u64 = 1;
/// One searcher in [`Sleep`]'s counters.
const SEARCHER: u64 = 1 << 32;

fn sleepers(counters: u64) -> u64 {
    counters & (SEARCHER - 1)
}

fn searchers(counters: u64) -> u64 {
    counters >> 32
}

/// Per-worker sleep state, padded so that one worker falling asleep does not disturb
/// its neighbours' lines.
#[derive(Debug)]
struct WorkerSleep {
    /// True while the worker waits on `condvar`; cleared by whoever wakes it.
    is_blocked: Mutex<bool>,
    condvar: Condvar,
}

/// Shared sleep state of a pool: the counters and one lock per worker.
#[derive(Debug)]
pub(crate) struct Sleep {
    /// Two counts in one word, so that one load sees both as of one moment and one
    /// read-modify-write moves a worker from one to the other: workers that announced sleep
    /// and were not woken yet (low half, [`SLEEPER`]) and workers searching (high half,
    /// [`SEARCHER`]: awake, idle and looking, or woken and not yet looking).
    counters: CachePadded<AtomicU64>,
    workers: Vec<CachePadded<WorkerSleep>>,
    /// True: submitters use a compiler fence, sleepers `membarrier` (`README.md`).
    is_asymmetric: bool,
    /// 1 while an idle worker holds the yield token (`README.md`, "States of a worker").
    /// Only decides how long a worker searches, never whether a job is seen: Relaxed.
    yielder: CachePadded<StdAtomicBool>,
}

impl Sleep {
    pub(crate) fn new(num_workers: usize) -> Self {
        Sleep {
            counters: CachePadded::new(AtomicU64::new(0)),
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

    /// A worker starts looking for work (its idle rounds, or waiting on a latch): counted as
    /// a searcher until [`Sleep::stop_searching`] or [`Sleep::sleep`].
    pub(crate) fn start_searching(&self) {
        self.counters.fetch_add(SEARCHER, Ordering::SeqCst);
    }

    /// A searcher stops looking: it found a job (`found`) or has nothing left to wait for.
    /// The last searcher to find a job wakes a sleeper when work is left (`has_work`): a push
    /// that saw it searching woke nobody and counted on it (Go's scheduler hands spinning on
    /// the same way). See "Memory ordering" for why `has_work` sees such a push.
    pub(crate) fn stop_searching(&self, found: bool, has_work: impl Fn() -> bool) {
        let before = self.counters.fetch_sub(SEARCHER, Ordering::SeqCst);
        if found && searchers(before) == 1 && sleepers(before) > 0 {
            fence(Ordering::SeqCst);
            if has_work() {
                self.wake_one();
            }
        }
    }

    /// Puts worker `index`, a searcher, to sleep unless `has_work` finds something after it
    /// announced itself (step 4 of `README.md`). Returns once woken or if `has_work`
    /// returned true, a searcher again either way.
    pub(crate) fn sleep(&self, index: usize, has_work: impl Fn() -> bool) {
        let worker = &self.workers[index];
        let mut is_blocked = lock(&worker.is_blocked);
        // One step from searcher to sleeper: a push never sees this worker as neither.
        self.counters
            .fetch_add(SLEEPER.wrapping_sub(SEARCHER), Ordering::SeqCst);
        let back_to_searching = || {
            self.counters
                .fetch_add(SEARCHER.wrapping_sub(SLEEPER), Ordering::SeqCst);
        };
        if self.is_asymmetric {
            if !sys::heavy_barrier() {
                // Cannot happen once registered; without the barrier sleeping could lose
                // a wake-up, so stay awake (the caller looks for work again).
                back_to_searching();
                return;
            }
        } else {
            fence(Ordering::SeqCst);
        }
        if has_work() {
            back_to_searching();
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
    /// sleeping workers unless a worker is searching, and costs only a fence and a load when
    /// none sleeps.
    #[inline]
    pub(crate) fn notify_new_jobs(&self, count: usize) {
        if self.is_asymmetric {
            compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
        if sleepers(self.counters.load(Ordering::SeqCst)) == 0 {
            return;
        }
        self.wake_for_new_jobs(count);
    }

    /// The part of [`Sleep::notify_new_jobs`] when somebody sleeps (kept out of line).
    #[cold]
    fn wake_for_new_jobs(&self, count: usize) {
        // Somebody sleeps. A searcher will see the jobs (it looks again before it sleeps, and
        // the last one to stop hands on: `stop_searching`), so wake nobody while there is
        // one; this fence orders the push before the look, as the searcher's fence orders
        // its step before its look at the queues ("Memory ordering").
        fence(Ordering::SeqCst);
        if searchers(self.counters.load(Ordering::SeqCst)) > 0 {
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

    /// [`Sleep::wake_specific`] for a setter of a flag that worker `index` waits on (a
    /// stolen `join` half): costs a fence and a load when no worker sleeps. Sound for the
    /// reason a push may skip waking ("Memory ordering"): a sleeper announces itself,
    /// passes a full barrier, then probes the flag; the setter stores the flag, passes its
    /// fence, then looks at the sleepers. One of them sees the other.
    #[inline]
    pub(crate) fn wake_if_sleeping(&self, index: usize) {
        if self.is_asymmetric {
            compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
        if sleepers(self.counters.load(Ordering::SeqCst)) != 0 {
            self.wake_if_blocked(index);
        }
    }

    /// Wakes every blocked worker (termination).
    pub(crate) fn wake_all(&self) {
        for index in 0..self.workers.len() {
            self.wake_if_blocked(index);
        }
    }

    /// Wakes one blocked worker, the lowest-numbered.
    fn wake_one(&self) {
        for index in 0..self.workers.len() {
            if self.wake_if_blocked(index) {
                return;
            }
        }
    }

    fn wake_if_blocked(&self, index: usize) -> bool {
        let worker = &self.workers[index];
        let mut is_blocked = lock(&worker.is_blocked);
        if !*is_blocked {
            return false;
        }
        *is_blocked = false;
        // A searcher from now on, counted on its behalf until it runs (as rayon counts a
        // woken worker as idle): pushes meanwhile wake nobody else.
        self.counters
            .fetch_add(SEARCHER.wrapping_sub(SLEEPER), Ordering::SeqCst);
        worker.condvar.notify_one();
        true
    }

    /// True if some worker is idle: searching for work or asleep. A hint (Relaxed): the
    /// splitting of `par.rs` splits off work for a thief only then.
    #[inline]
    pub(crate) fn has_idle(&self) -> bool {
        self.counters.load(Ordering::Relaxed) != 0
    }

    /// Whether worker `index` is blocked on its condition variable (tests: a worker counted as
    /// a sleeper still checks for work once before it blocks).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn is_blocked(&self, index: usize) -> bool {
        *lock(&self.workers[index].is_blocked)
    }

    /// Workers announced as sleeping and searching now (tests).
    #[cfg(test)]
    pub(crate) fn counts(&self) -> (u64, u64) {
        let c = self.counters.load(Ordering::SeqCst);
        (sleepers(c), searchers(c))
    }
}

#[cfg(all(test, not(loom)))]
mod test {
    use super::Sleep;

    /// A push wakes nobody while a worker searches; the searcher that finds work hands on to a
    /// sleeper when work is left; a woken worker counts as a searcher until it stops.
    #[test]
    fn a_push_waits_for_the_searcher_which_hands_on() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let sleep = Arc::new(Sleep::new(2));
        let work = Arc::new(AtomicBool::new(false));
        let woken = Arc::new(AtomicBool::new(false));
        let sleeper = {
            let (sleep, work, woken) = (Arc::clone(&sleep), Arc::clone(&work), Arc::clone(&woken));
            std::thread::spawn(move || {
                sleep.start_searching();
                sleep.sleep(1, || work.load(Ordering::SeqCst));
                woken.store(true, Ordering::SeqCst);
                sleep.stop_searching(true, || false);
            })
        };
        // Counted as a sleeper is not yet asleep: it looks for work once more first, and
        // would find the work below (the test's race, not the pool's).
        while sleep.counts() != (1, 0) || !sleep.is_blocked(1) {
            std::thread::yield_now();
        }
        // Worker 0 searches; a push finds it and wakes nobody.
        sleep.start_searching();
        work.store(true, Ordering::SeqCst);
        sleep.notify_new_jobs(1);
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(
            !woken.load(Ordering::SeqCst),
            "woken although a worker searched"
        );
        assert_eq!(sleep.counts(), (1, 1));
        // It finds a job, is the last searcher, sees work left: it wakes the sleeper.
        sleep.stop_searching(true, || work.load(Ordering::SeqCst));
        sleeper.join().unwrap();
        assert!(woken.load(Ordering::SeqCst));
        assert_eq!(sleep.counts(), (0, 0));
    }

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
                    sleep.start_searching();
                    loop {
                        if queued.load(Ordering::SeqCst) == 1 {
                            queued.store(2, Ordering::SeqCst);
                            sleep.stop_searching(true, || false);
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
            assert_eq!(sleep.counts(), (0, 0));
        });
    }

    /// A push racing with two workers on their way to sleep (`notify_new_jobs` visits
    /// them in index order and may find the first still looking): one of them runs the
    /// job without any further wake-up (a lost one leaves both blocked: loom reports the
    /// deadlock), then stops the other, and the counts end exact. Workers pinned to one
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
                        sleep.start_searching();
                        loop {
                            if queued
                                .compare_exchange(1, 2, Ordering::SeqCst, Ordering::SeqCst)
                                .is_ok()
                            {
                                sleep.stop_searching(true, || false);
                                stop.store(true, Ordering::SeqCst);
                                sleep.wake_all();
                                return true;
                            }
                            if stop.load(Ordering::SeqCst) {
                                sleep.stop_searching(false, || false);
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
            assert_eq!(sleep.counts(), (0, 0));
        });
    }

    /// The handing on of a skipped push. Worker 1 sleeps; worker 0 searches and finds job
    /// A, which cannot finish before job B has run (as a job that waits on a channel another
    /// job sends to). B is pushed while worker 0 is a searcher, so the push may wake nobody;
    /// then worker 0, the last searcher to stop, must see B and wake worker 1 for it, or both
    /// wait forever (loom reports the deadlock). With `stop_searching`'s hand-on removed, or
    /// either fence of the skip, it fails.
    #[test]
    fn loom_a_push_skipped_for_a_searcher_is_handed_on() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let sleep = Arc::new(Sleep::new(2));
            // B: 0 not pushed, 1 queued, 2 ran.
            let b = Arc::new(AtomicUsize::new(0));
            // Worker 1 asleep before anything happens (it found nothing).
            sleep.start_searching();
            let sleeper = {
                let (sleep, b) = (Arc::clone(&sleep), Arc::clone(&b));
                thread::spawn(move || {
                    loop {
                        if b.compare_exchange(1, 2, Ordering::SeqCst, Ordering::SeqCst)
                            .is_ok()
                        {
                            sleep.stop_searching(true, || false);
                            return;
                        }
                        sleep.sleep(1, || b.load(Ordering::Acquire) == 1);
                    }
                })
            };
            // Worker 0: a searcher that finds A (here, on the spot), hands on, then runs A,
            // which waits for B.
            sleep.start_searching();
            let finder = {
                let (sleep, b) = (Arc::clone(&sleep), Arc::clone(&b));
                thread::spawn(move || {
                    sleep.stop_searching(true, || b.load(Ordering::Acquire) == 1);
                    while b.load(Ordering::SeqCst) != 2 {
                        thread::yield_now();
                    }
                })
            };
            // As the real queues publish a job: a release store, not a fence.
            b.store(1, Ordering::Release);
            sleep.notify_new_jobs(1);
            finder.join().unwrap();
            sleeper.join().unwrap();
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
                    sleep.start_searching();
                    while !flag.load(Ordering::Acquire) {
                        sleep.sleep(1, || flag.load(Ordering::Acquire));
                    }
                    sleep.stop_searching(false, || false);
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
                        sleep.start_searching();
                        while !stop.load(Ordering::SeqCst) {
                            sleep.sleep(index, || stop.load(Ordering::SeqCst));
                        }
                        sleep.stop_searching(false, || false);
                    })
                })
                .collect();
            stop.store(true, Ordering::SeqCst);
            sleep.wake_all();
            for worker in workers {
                worker.join().unwrap();
            }
            assert_eq!(sleep.counts(), (0, 0));
        });
    }
}
