//! The throttle: a counting semaphore (this file) whose limit is fixed or adaptive
//! (`climb.rs`: the settings, the samples and the hill climber). What a user needs is in
//! [`Throttle`]'s and [`AdaptiveConfig`]'s docs; the protocol, the algorithm in prose, why
//! it is this controller and what was measured on the way are in `README.md` in this
//! folder. Unit tests are in `test.rs`, loom models in `loom.rs`.

mod climb;
#[cfg(all(test, loom))]
mod loom;
#[cfg(all(test, not(loom)))]
mod test;

pub use climb::{AdaptiveConfig, TraceSample};

use crate::sync::{AtomicBool, AtomicU64, Condvar, Mutex, MutexGuard, Ordering, lock, wait};
use climb::Sampler;
use std::time::{Duration, Instant};

/// Completions between two looks at the clock in [`Throttle::record_completions`]:
/// reading `Instant::now` costs ~25 ns against an atomic add's few, so the clock is read
/// once per 4 completions. The units the workloads report take 50 µs or more (a pass of
/// `sum`, a raymesh block, a mixed task), so this delays a sample by well under 1 %.
const CLOCK_CHECK_EVERY: u64 = 4;

#[derive(Debug)]
struct Permits {
    in_use: usize,
    limit: usize,
}

/// A counting semaphore: at most [`Throttle::limit`] holders of a permit at once, with a
/// fixed limit ([`Throttle::new`]) or one that follows measured throughput
/// ([`Throttle::adaptive`]).
///
/// ```
/// use coretune_pool::Throttle;
///
/// let throttle = Throttle::new(2);
/// let a = throttle.acquire();
/// let _b = throttle.acquire();
/// assert!(throttle.try_acquire().is_none());
/// drop(a);
/// assert!(throttle.try_acquire().is_some());
/// ```
///
/// # Protocol
///
/// [`Throttle::acquire`] waits while the permits held reach the limit, then takes one;
/// dropping the [`ThrottleGuard`] gives it back and wakes one waiter. Changing the limit
/// ([`Throttle::set_limit`]) wakes every waiter, since several may now fit. Lowering it
/// never pre-empts: holders keep their permits, and new acquisitions wait until the
/// permits held fell below the new limit. A permit given back by one thread
/// happens-before the acquisition that takes it over.
///
/// # Seats
///
/// A permit taken and given back around every unit of work hands the CPU from thread to
/// thread whenever the limit is below the number of threads: the release wakes a waiter,
/// the releaser takes the next permit first, and the waiter goes back to sleep, an
/// involuntary context switch per unit. A [`ThrottleSeat`] ([`Throttle::seat`]) instead
/// keeps its permit from one unit to the next and gives it back only when the thread goes
/// idle (the seat is dropped or released) or, at its next [`ThrottleSeat::hold`], when the
/// limit fell below the permits held. A limit at or above the number of busy threads then
/// costs one relaxed atomic load per unit, and a lower one a hand-off only when a holder
/// finishes. The workers of a pool built with a throttle hold their permit the same way.
///
/// # Adaptive limit
///
/// Report finished units of work with [`Throttle::record_completions`] (a pool built with
/// the throttle reports one per finished task). An adaptive throttle turns them into
/// throughput samples, moves its limit with a hill climber described in
/// [`AdaptiveConfig`], and keeps the samples ([`Throttle::trace`]).
//
// The mutex provides all ordering of the permits. Every change of `(in_use, limit)` also
// stores `in_use > limit` into `over_limit`, read without the lock by seats and workers;
// relaxed, because a stale value only delays a release by one unit of work and the permit
// count itself only changes under the mutex.
#[derive(Debug)]
pub struct Throttle {
    permits: Mutex<Permits>,
    /// `in_use > limit`, stored under `permits`' lock at every change, read without it.
    over_limit: AtomicBool,
    /// Nanoseconds after `start` before which no sample can be due (a hint read without
    /// the sampler's lock).
    next_sample_at: AtomicU64,
    condvar: Condvar,
    completions: AtomicU64,
    start: Instant,
    /// `Some` in adaptive mode.
    sampler: Option<Mutex<Sampler>>,
}

/// Proof of holding one permit of a [`Throttle`]; dropping it releases the permit.
///
/// ```
/// let throttle = coretune_pool::Throttle::new(1);
/// let guard = throttle.acquire();
/// assert_eq!(throttle.in_use(), 1);
/// drop(guard);
/// assert_eq!(throttle.in_use(), 0);
/// ```
#[derive(Debug)]
#[must_use = "the permit is released as soon as the guard is dropped"]
pub struct ThrottleGuard<'a> {
    throttle: &'a Throttle,
}

impl Drop for ThrottleGuard<'_> {
    fn drop(&mut self) {
        self.throttle.release();
    }
}

/// A permit kept across units of work: [`ThrottleSeat::hold`] before each unit takes the
/// permit if the seat has none and otherwise keeps it, unless the limit was lowered below
/// the permits held, in which case it gives the permit back and waits for one again.
/// Dropping the seat (or [`ThrottleSeat::release`]) gives the permit back.
///
/// ```
/// let throttle = coretune_pool::Throttle::new(4);
/// std::thread::scope(|s| {
///     for _ in 0..8 {
///         s.spawn(|| {
///             let mut seat = throttle.seat();
///             for _ in 0..100 {
///                 seat.hold();
///                 assert!(throttle.in_use() <= 4);
///             }
///         });
///     }
/// });
/// assert_eq!(throttle.in_use(), 0);
/// ```
#[derive(Debug)]
#[must_use = "the permit is released as soon as the seat is dropped"]
pub struct ThrottleSeat<'a> {
    throttle: &'a Throttle,
    held: bool,
}

impl ThrottleSeat<'_> {
    /// Makes sure this seat holds a permit before a unit of work: free if it holds one and
    /// the limit still allows it, otherwise waits for one.
    pub fn hold(&mut self) {
        if self.held {
            if !self.throttle.is_over_limit() {
                return;
            }
            self.throttle.release();
        }
        self.held = false;
        self.throttle.acquire_permit();
        self.held = true;
    }

    /// Gives the permit back (when the thread goes idle); the next [`ThrottleSeat::hold`]
    /// waits for one again.
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(1);
    /// let mut seat = throttle.seat();
    /// seat.hold();
    /// seat.release();
    /// assert!(!seat.is_held() && throttle.try_acquire().is_some());
    /// ```
    pub fn release(&mut self) {
        if std::mem::take(&mut self.held) {
            self.throttle.release();
        }
    }

    /// True while the seat holds a permit.
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(1);
    /// let mut seat = throttle.seat();
    /// assert!(!seat.is_held());
    /// seat.hold();
    /// assert!(seat.is_held());
    /// ```
    pub fn is_held(&self) -> bool {
        self.held
    }
}

impl Drop for ThrottleSeat<'_> {
    fn drop(&mut self) {
        self.release();
    }
}

impl Throttle {
    /// A throttle with a fixed limit (a `limit` of 0 is raised to 1).
    ///
    /// ```
    /// assert_eq!(coretune_pool::Throttle::new(3).limit(), 3);
    /// assert_eq!(coretune_pool::Throttle::new(0).limit(), 1);
    /// ```
    pub fn new(limit: usize) -> Self {
        Self::with_sampler(limit.max(1), None)
    }

    /// A throttle whose limit follows measured throughput, moved by a hill climber with
    /// the settings and the algorithm of [`AdaptiveConfig`].
    ///
    /// ```
    /// use coretune_pool::{AdaptiveConfig, Throttle};
    /// let throttle = Throttle::adaptive(AdaptiveConfig { max: 8, ..AdaptiveConfig::default() });
    /// assert_eq!(throttle.limit(), 8); // the default climb starts at `initial`, set to the top
    /// ```
    pub fn adaptive(config: AdaptiveConfig) -> Self {
        let sampler = Sampler::new(config);
        let limit = sampler.limit();
        Self::with_sampler(limit, Some(Mutex::new(sampler)))
    }

    fn with_sampler(limit: usize, sampler: Option<Mutex<Sampler>>) -> Self {
        Throttle {
            permits: Mutex::new(Permits { in_use: 0, limit }),
            over_limit: AtomicBool::new(false),
            next_sample_at: AtomicU64::new(0),
            condvar: Condvar::new(),
            completions: AtomicU64::new(0),
            start: Instant::now(),
            sampler,
        }
    }

    /// Waits for a permit.
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(2);
    /// std::thread::scope(|s| {
    ///     for _ in 0..4 {
    ///         s.spawn(|| {
    ///             let _permit = throttle.acquire();
    ///             assert!(throttle.in_use() <= 2);
    ///         });
    ///     }
    /// });
    /// ```
    pub fn acquire(&self) -> ThrottleGuard<'_> {
        self.acquire_permit();
        ThrottleGuard { throttle: self }
    }

    /// Takes a permit if one is free right now.
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(1);
    /// let held = throttle.try_acquire();
    /// assert!(held.is_some() && throttle.try_acquire().is_none());
    /// ```
    pub fn try_acquire(&self) -> Option<ThrottleGuard<'_>> {
        let mut permits = lock(&self.permits);
        if permits.in_use < permits.limit {
            permits.in_use += 1;
            self.publish(&permits);
            Some(ThrottleGuard { throttle: self })
        } else {
            None
        }
    }

    /// Waits for a permit without a guard; pair with [`Throttle::release`]. Used by the
    /// pool, whose workers hold a permit across many tasks.
    pub(crate) fn acquire_permit(&self) {
        let mut permits = lock(&self.permits);
        while permits.in_use >= permits.limit {
            permits = wait(&self.condvar, permits);
        }
        permits.in_use += 1;
        self.publish(&permits);
    }

    /// Stores whether more permits are held than the limit allows (under the lock).
    fn publish(&self, permits: &MutexGuard<'_, Permits>) {
        self.over_limit
            .store(permits.in_use > permits.limit, Ordering::Relaxed);
    }

    /// True if more permits are held than the current limit allows (the limit was
    /// lowered); holders should give one back. Read without the lock, so it may lag a
    /// change by a moment.
    pub(crate) fn is_over_limit(&self) -> bool {
        self.over_limit.load(Ordering::Relaxed)
    }

    /// A seat: a permit kept from one unit of work to the next (see [`Throttle`],
    /// ["Seats"](Throttle#seats)).
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(2);
    /// let mut seat = throttle.seat();
    /// for _ in 0..3 {
    ///     seat.hold(); // takes the permit the first time, keeps it after
    ///     assert_eq!(throttle.in_use(), 1);
    /// }
    /// drop(seat);
    /// assert_eq!(throttle.in_use(), 0);
    /// ```
    pub fn seat(&self) -> ThrottleSeat<'_> {
        ThrottleSeat {
            throttle: self,
            held: false,
        }
    }

    /// Returns a permit taken by [`Throttle::acquire_permit`].
    pub(crate) fn release(&self) {
        let mut permits = lock(&self.permits);
        permits.in_use -= 1;
        self.publish(&permits);
        if permits.in_use < permits.limit {
            self.condvar.notify_one();
        }
    }

    /// The current limit.
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(4);
    /// throttle.set_limit(2);
    /// assert_eq!(throttle.limit(), 2);
    /// ```
    pub fn limit(&self) -> usize {
        lock(&self.permits).limit
    }

    /// Permits currently held.
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(4);
    /// let _a = throttle.acquire();
    /// let _b = throttle.acquire();
    /// assert_eq!(throttle.in_use(), 2);
    /// ```
    pub fn in_use(&self) -> usize {
        lock(&self.permits).in_use
    }

    /// Sets the limit (0 is raised to 1). In adaptive mode the climber may move it again
    /// at its next decision.
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(1);
    /// let _held = throttle.acquire();
    /// throttle.set_limit(2); // a waiter could take the second permit now
    /// assert!(throttle.try_acquire().is_some());
    /// ```
    pub fn set_limit(&self, limit: usize) {
        let mut permits = lock(&self.permits);
        permits.limit = limit.max(1);
        self.publish(&permits);
        self.condvar.notify_all();
    }

    /// True if the limit is adaptive.
    ///
    /// ```
    /// assert!(!coretune_pool::Throttle::new(2).is_adaptive());
    /// ```
    pub fn is_adaptive(&self) -> bool {
        self.sampler.is_some()
    }

    /// Reports `n` finished work items. In adaptive mode this also closes a throughput
    /// sample when one is due ([`Throttle::sample`]), which may move the limit.
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(2);
    /// throttle.record_completions(3);
    /// throttle.record_completions(1);
    /// assert_eq!(throttle.completions(), 4);
    /// ```
    pub fn record_completions(&self, n: u64) {
        let before = self.completions.fetch_add(n, Ordering::Relaxed);
        if self.sampler.is_some() && before / CLOCK_CHECK_EVERY != (before + n) / CLOCK_CHECK_EVERY
        {
            self.sample();
        }
    }

    /// Total completions reported so far.
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(1);
    /// assert_eq!(throttle.completions(), 0);
    /// throttle.record_completions(5);
    /// assert_eq!(throttle.completions(), 5);
    /// ```
    pub fn completions(&self) -> u64 {
        self.completions.load(Ordering::Relaxed)
    }

    /// Closes a throughput sample now if it is due: `sample_interval` has passed since the
    /// last one and `min_completions` arrived, or `max_sample_interval` passed (adaptive mode
    /// only; otherwise does nothing). `record_completions` calls this every few
    /// completions; call it yourself when completions are rare.
    ///
    /// ```
    /// use coretune_pool::{AdaptiveConfig, Throttle};
    /// use std::time::Duration;
    /// let throttle = Throttle::adaptive(AdaptiveConfig {
    ///     sample_interval: Duration::from_millis(1),
    ///     max_sample_interval: Duration::from_millis(4),
    ///     ..AdaptiveConfig::default()
    /// });
    /// std::thread::sleep(Duration::from_millis(5));
    /// throttle.record_completions(1); // rare completions: no sample taken yet
    /// throttle.sample(); // `max_sample_interval` passed: the sample closes with what it has
    /// assert_eq!(throttle.trace().len(), 1);
    /// ```
    pub fn sample(&self) {
        let Some(sampler) = &self.sampler else {
            return;
        };
        let now = self.start.elapsed();
        if duration_nanos(now) < self.next_sample_at.load(Ordering::Relaxed) {
            return; // the common case: no lock, one clock read
        }
        let Ok(mut sampler) = sampler.try_lock() else {
            return; // another thread is sampling right now
        };
        let completions = self.completions.load(Ordering::Relaxed);
        let Some(closed) = sampler.close(now, completions) else {
            return;
        };
        self.next_sample_at
            .store(duration_nanos(closed.next_due), Ordering::Relaxed);
        if let Some(new_limit) = closed.new_limit {
            self.set_limit(new_limit);
        }
    }

    /// The adaptive throttle's samples so far, oldest first (empty for a fixed limit).
    ///
    /// ```
    /// let fixed = coretune_pool::Throttle::new(2);
    /// fixed.record_completions(1000);
    /// assert!(fixed.trace().is_empty());
    /// ```
    pub fn trace(&self) -> Vec<TraceSample> {
        self.sampler
            .as_ref()
            .map(|sampler| lock(sampler).trace().to_vec())
            .unwrap_or_default()
    }
}

/// Whole nanoseconds of `d`, saturating (585 years).
fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
