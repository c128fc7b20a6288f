// The module's docs are the README beside this file: the protocol, the algorithm in
// prose, why it is this controller and what was measured on the way. The code is this
// file (the semaphore) and `climb.rs` (the settings, the samples and the hill climber);
// unit tests are in `test.rs`, loom models in `loom.rs`.
#![doc = include_str!("README.md")]

#[cfg(all(feature = "async", not(loom)))]
mod asynchronous;
mod climb;
#[cfg(all(test, loom))]
mod loom;
#[cfg(all(test, not(loom)))]
mod test;

pub use climb::{AdaptiveConfig, TraceSample};

use crate::sync::{AtomicBool, AtomicU64, Condvar, Mutex, MutexGuard, Ordering, lock, wait};
use climb::Sampler;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Completions between two looks at the clock in [`Throttle::record_completions`]:
/// reading `Instant::now` costs ~25 ns against an atomic add's few, so the clock is read
/// once per 4 completions. The units the workloads report take 50 µs or more (a pass of
/// `sum`, a raymesh block, a mixed task), so this delays a sample by well under 1 %.
const CLOCK_CHECK_EVERY: u64 = 4;

/// The semaphore's state, under [`Throttle`]'s mutex.
#[derive(Debug)]
struct Permits {
    in_use: usize,
    limit: usize,
    /// Waiting requests for more than one permit, oldest first (single permits do not
    /// queue; see [`Permits::may_take`]).
    queue: VecDeque<Request>,
    /// Numbers the queued requests.
    next_ticket: u64,
    /// Wakers of pending `acquire_async` futures (`asynchronous.rs`), by their number.
    #[cfg(all(feature = "async", not(loom)))]
    wakers: Vec<(u64, std::task::Waker)>,
}

/// A queued request for `permits` (more than one) permits.
#[derive(Debug)]
struct Request {
    ticket: u64,
    permits: usize,
}

impl Permits {
    /// The request that goes first: the oldest queued one that fits under the limit at
    /// all. Those asking for more than the limit wait without holding anybody up.
    fn first(&self) -> Option<u64> {
        self.queue
            .iter()
            .find(|request| request.permits <= self.limit)
            .map(|request| request.ticket)
    }

    /// True if `n` permits may be taken now by the queued request `ticket`, or, with
    /// `None`, by a request that is not queued: they must fit under the limit, and no
    /// other queued request may go first. So single permits are taken in no particular
    /// order, but while the first queued request waits nobody else takes one: it cannot
    /// be starved by smaller requests slipping in as permits come free.
    fn may_take(&self, n: usize, ticket: Option<u64>) -> bool {
        self.in_use + n <= self.limit && self.first() == ticket
    }

    fn new_ticket(&mut self) -> u64 {
        self.next_ticket += 1;
        self.next_ticket
    }

    fn dequeue(&mut self, ticket: u64) {
        self.queue.retain(|request| request.ticket != ticket);
    }
}

/// How long an acquisition waits for its permits.
#[derive(Debug)]
enum Patience {
    /// Not at all (`try_acquire*`).
    Never,
    /// Until this instant (`*_timeout`).
    Until(Instant),
    /// As long as it takes.
    Forever,
    /// Until the model sets the flag (and wakes the waiters under the lock): loom does not
    /// model time, its `wait_timeout` never times out, so the models time out this way.
    #[cfg(loom)]
    #[cfg_attr(not(test), allow(dead_code))] // constructed by the models only
    UntilFlag(crate::sync::Arc<AtomicBool>),
}

/// How long the next wait on the condition variable may last.
enum Wait {
    Forever,
    For(Duration),
}

impl Patience {
    /// A deadline `timeout` from now (`Forever` if that is beyond what `Instant` holds).
    fn timeout(timeout: Duration) -> Self {
        Instant::now()
            .checked_add(timeout)
            .map_or(Patience::Forever, Patience::Until)
    }

    /// How long the next wait may last; `None` once out of patience.
    fn left(&self) -> Option<Wait> {
        match self {
            Patience::Never => None,
            Patience::Until(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                (!left.is_zero()).then_some(Wait::For(left))
            }
            Patience::Forever => Some(Wait::Forever),
            #[cfg(loom)]
            Patience::UntilFlag(expired) => {
                (!expired.load(Ordering::SeqCst)).then_some(Wait::Forever)
            }
        }
    }
}

/// An acquisition of several permits that can never succeed.
///
/// ```
/// use coretune_pool::{AcquireError, Throttle};
/// let throttle = Throttle::new(2);
/// let error = throttle.acquire_many(3).unwrap_err();
/// assert_eq!(error, AcquireError::TooMany { requested: 3, max: 2 });
/// assert_eq!(error.to_string(), "3 permits asked for, but the throttle's limit can reach at most 2");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AcquireError {
    /// More permits were asked for than the limit can ever reach: a fixed throttle's limit
    /// at the call, or an adaptive throttle's [`AdaptiveConfig::max`].
    TooMany {
        /// The permits asked for.
        requested: usize,
        /// The most the limit can reach.
        max: usize,
    },
}

impl std::fmt::Display for AcquireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AcquireError::TooMany { requested, max } => write!(
                f,
                "{requested} permits asked for, but the throttle's limit can reach at most {max}"
            ),
        }
    }
}

impl std::error::Error for AcquireError {}
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
/// dropping the [`ThrottleGuard`] gives it back and wakes a waiter. Changing the limit
/// ([`Throttle::set_limit`]) wakes every waiter, since several may now fit. Lowering it
/// never pre-empts: holders keep their permits, and new acquisitions wait until the
/// permits held fell below the new limit. A permit given back by one thread
/// happens-before the acquisition that takes it over.
///
/// Single permits go to whichever waiter gets there first. A request for several
/// ([`Throttle::acquire_many`]) queues instead, and the oldest queued request that fits
/// under the limit goes first: while it waits nobody else takes a permit, so permits
/// coming free one by one add up to it rather than go to smaller requests, and seats
/// (below) give theirs back at their next unit of work. A request for more permits than
/// the limit allows right now (an adaptive limit below it) waits without holding anybody
/// up, until the limit is raised; one for more than the limit can ever reach fails at
/// once ([`AcquireError`]). Waiting with a timeout ([`Throttle::acquire_timeout`]) gives
/// up once the time is over and no permit came, and leaves the queue for the next.
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
/// finishes. The workers of a pool built with a throttle hold their permit the same way,
/// and by default so does a thread outside the pool while it runs the body of the pool's
/// `scope` or `join` ([`ThreadPoolBuilder::throttle_caller`](crate::ThreadPoolBuilder::throttle_caller)).
///
/// # Adaptive limit
///
/// Report finished units of work with [`Throttle::record_completions`] (a pool built with
/// the throttle reports one per finished task). An adaptive throttle turns them into
/// throughput samples, moves its limit with a hill climber described in
/// [`AdaptiveConfig`], and keeps the samples ([`Throttle::trace`]).
//
// The mutex provides all ordering of the permits. Every change of `(in_use, limit, queue)`
// also stores into `over_limit` whether holders should give a permit back (`in_use >
// limit`, or a queued request goes first), read without the lock by seats and workers;
// relaxed, because a stale value only delays a release by one unit of work and the permit
// count itself only changes under the mutex.
#[derive(Debug)]
pub struct Throttle {
    permits: Mutex<Permits>,
    /// Whether holders should give a permit back (see [`Throttle::is_over_limit`]),
    /// stored under `permits`' lock at every change, read without it.
    over_limit: AtomicBool,
    /// The most the limit can reach in adaptive mode ([`AdaptiveConfig::max`]); `None`
    /// for a fixed limit, whose most is the limit in force.
    max: Option<usize>,
    /// Nanoseconds after `start` before which no sample can be due (a hint read without
    /// the sampler's lock).
    next_sample_at: AtomicU64,
    condvar: Condvar,
    completions: AtomicU64,
    start: Instant,
    /// `Some` in adaptive mode.
    sampler: Option<Mutex<Sampler>>,
}

/// Proof of holding permits of a [`Throttle`] (one, or as many as
/// [`Throttle::acquire_many`] took); dropping it releases them.
///
/// ```
/// let throttle = coretune_pool::Throttle::new(1);
/// let guard = throttle.acquire();
/// assert_eq!(throttle.in_use(), 1);
/// drop(guard);
/// assert_eq!(throttle.in_use(), 0);
/// ```
#[derive(Debug)]
#[must_use = "the permits are released as soon as the guard is dropped"]
pub struct ThrottleGuard<'a> {
    throttle: &'a Throttle,
    permits: usize,
}

impl ThrottleGuard<'_> {
    /// The permits this guard holds.
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(4);
    /// assert_eq!(throttle.acquire().num_permits(), 1);
    /// assert_eq!(throttle.acquire_many(3)?.num_permits(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn num_permits(&self) -> usize {
        self.permits
    }
}

impl Drop for ThrottleGuard<'_> {
    fn drop(&mut self) {
        self.throttle.release_many(self.permits);
    }
}

/// A [`ThrottleGuard`] that owns a reference to its throttle, so it is `'static` and can
/// be moved into another thread or a pool's task ([`Throttle::acquire_owned`]); dropping
/// it releases its permits.
///
/// ```
/// use std::sync::Arc;
/// let throttle = Arc::new(coretune_pool::Throttle::new(1));
/// let permit = throttle.acquire_owned();
/// std::thread::spawn(move || drop(permit)).join().unwrap();
/// assert_eq!(throttle.in_use(), 0);
/// ```
#[derive(Debug)]
#[must_use = "the permits are released as soon as the guard is dropped"]
pub struct OwnedThrottleGuard {
    throttle: Arc<Throttle>,
    permits: usize,
}

impl OwnedThrottleGuard {
    /// The permits this guard holds.
    ///
    /// ```
    /// let throttle = std::sync::Arc::new(coretune_pool::Throttle::new(4));
    /// assert_eq!(throttle.acquire_many_owned(2)?.num_permits(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn num_permits(&self) -> usize {
        self.permits
    }
}

impl Drop for OwnedThrottleGuard {
    fn drop(&mut self) {
        self.throttle.release_many(self.permits);
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
        let max = sampler.max_limit();
        let mut throttle = Self::with_sampler(limit, Some(Mutex::new(sampler)));
        throttle.max = Some(max);
        throttle
    }

    fn with_sampler(limit: usize, sampler: Option<Mutex<Sampler>>) -> Self {
        Throttle {
            permits: Mutex::new(Permits {
                in_use: 0,
                limit,
                queue: VecDeque::new(),
                next_ticket: 0,
                #[cfg(all(feature = "async", not(loom)))]
                wakers: Vec::new(),
            }),
            over_limit: AtomicBool::new(false),
            max: None,
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
        self.guard(1, &Patience::Forever)
            .ok()
            .flatten()
            .expect("one permit fits any limit, and waiting as long as it takes gets it")
    }

    /// Takes a permit if one is free right now (and no request for several permits
    /// waits to go first); never blocks.
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(1);
    /// let held = throttle.try_acquire();
    /// assert!(held.is_some() && throttle.try_acquire().is_none());
    /// ```
    pub fn try_acquire(&self) -> Option<ThrottleGuard<'_>> {
        self.guard(1, &Patience::Never).ok().flatten()
    }

    /// Waits at most `timeout` for a permit; `None` if none came in that time.
    ///
    /// ```
    /// use std::time::Duration;
    /// let throttle = coretune_pool::Throttle::new(1);
    /// let held = throttle.acquire();
    /// assert!(throttle.acquire_timeout(Duration::from_millis(10)).is_none());
    /// std::thread::scope(|s| {
    ///     s.spawn(|| drop(held)); // frees the permit while the main thread waits
    ///     assert!(throttle.acquire_timeout(Duration::from_secs(60)).is_some());
    /// });
    /// ```
    pub fn acquire_timeout(&self, timeout: Duration) -> Option<ThrottleGuard<'_>> {
        self.guard(1, &Patience::timeout(timeout)).ok().flatten()
    }

    /// Waits for `n` permits at once and holds them in one guard; `n = 0` gives a guard
    /// of no permits at once. The request queues: the oldest queued request that fits
    /// under the limit goes before any other acquisition, so single permits coming free
    /// add up to it rather than go to newer requests, and seats give theirs back at their
    /// next unit of work (see ["Protocol"](Throttle#protocol)). While an adaptive limit
    /// is below `n` the request waits without holding anybody up, until the climber raises
    /// the limit to `n` again; the climber moves only on samples, which close only as
    /// completions are reported ([`Throttle::record_completions`], [`Throttle::sample`]),
    /// so where they may stop use [`Throttle::acquire_many_timeout`].
    ///
    /// # Errors
    ///
    /// [`AcquireError::TooMany`], at once, if `n` is more than the limit can ever reach:
    /// a fixed throttle's limit at the call, or an adaptive throttle's
    /// [`AdaptiveConfig::max`]. (A fixed limit lowered below `n` by
    /// [`Throttle::set_limit`] while the request waits keeps it waiting until the limit
    /// is raised again.)
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(4);
    /// let one = throttle.acquire();
    /// std::thread::scope(|s| {
    ///     s.spawn(move || drop(one));
    ///     let all = throttle.acquire_many(4)?; // waits for `one`
    ///     assert_eq!((all.num_permits(), throttle.in_use()), (4, 4));
    ///     Ok::<(), coretune_pool::AcquireError>(())
    /// })?;
    /// assert!(throttle.acquire_many(5).is_err()); // a fixed limit of 4 never allows 5
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire_many(&self, n: usize) -> Result<ThrottleGuard<'_>, AcquireError> {
        self.guard(n, &Patience::Forever)
            .map(|guard| guard.expect("waiting as long as it takes ends with the permits"))
    }

    /// Takes `n` permits if they are free right now (and no other request for several
    /// waits to go first); never blocks. `Ok(None)` if they are not.
    ///
    /// # Errors
    ///
    /// [`AcquireError::TooMany`] if `n` is more than the limit can ever reach (see
    /// [`Throttle::acquire_many`]).
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(3);
    /// let _one = throttle.acquire();
    /// assert!(throttle.try_acquire_many(3)?.is_none());
    /// assert_eq!(throttle.try_acquire_many(2)?.map(|g| g.num_permits()), Some(2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_many(&self, n: usize) -> Result<Option<ThrottleGuard<'_>>, AcquireError> {
        self.guard(n, &Patience::Never)
    }

    /// Waits at most `timeout` for `n` permits, queued as [`Throttle::acquire_many`]
    /// describes; `Ok(None)` if they did not come in that time (the request then leaves
    /// the queue to the next).
    ///
    /// # Errors
    ///
    /// [`AcquireError::TooMany`], at once, if `n` is more than the limit can ever reach
    /// (see [`Throttle::acquire_many`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// let throttle = coretune_pool::Throttle::new(2);
    /// let _one = throttle.acquire();
    /// assert!(throttle.acquire_many_timeout(2, Duration::from_millis(10))?.is_none());
    /// assert!(throttle.try_acquire().is_some()); // the request left the queue
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire_many_timeout(
        &self,
        n: usize,
        timeout: Duration,
    ) -> Result<Option<ThrottleGuard<'_>>, AcquireError> {
        self.guard(n, &Patience::timeout(timeout))
    }

    /// Waits for a permit held by a guard that owns a reference to the throttle, so it
    /// can be moved into another thread or a pool's task ([`OwnedThrottleGuard`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let throttle = Arc::new(coretune_pool::Throttle::new(1));
    /// let pool = coretune_pool::ThreadPool::new(2)?;
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let permit = throttle.acquire_owned();
    /// pool.spawn(move || {
    ///     let _permit = permit; // released when the task ends
    ///     tx.send(()).unwrap();
    /// });
    /// rx.recv()?;
    /// drop(pool); // the task has ended
    /// assert_eq!(throttle.in_use(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire_owned(self: &Arc<Self>) -> OwnedThrottleGuard {
        self.owned(1, &Patience::Forever)
            .ok()
            .flatten()
            .expect("one permit fits any limit, and waiting as long as it takes gets it")
    }

    /// [`Throttle::try_acquire`] with an [`OwnedThrottleGuard`]: a permit if one is free
    /// right now; never blocks.
    ///
    /// ```
    /// let throttle = std::sync::Arc::new(coretune_pool::Throttle::new(1));
    /// let held = throttle.try_acquire_owned();
    /// assert!(held.is_some() && throttle.try_acquire_owned().is_none());
    /// ```
    pub fn try_acquire_owned(self: &Arc<Self>) -> Option<OwnedThrottleGuard> {
        self.owned(1, &Patience::Never).ok().flatten()
    }

    /// [`Throttle::acquire_timeout`] with an [`OwnedThrottleGuard`]: waits at most
    /// `timeout` for a permit; `None` if none came in that time.
    ///
    /// ```
    /// use std::time::Duration;
    /// let throttle = std::sync::Arc::new(coretune_pool::Throttle::new(1));
    /// let held = throttle.acquire_owned_timeout(Duration::from_millis(10));
    /// assert!(held.is_some());
    /// assert!(throttle.acquire_owned_timeout(Duration::from_millis(10)).is_none());
    /// ```
    pub fn acquire_owned_timeout(
        self: &Arc<Self>,
        timeout: Duration,
    ) -> Option<OwnedThrottleGuard> {
        self.owned(1, &Patience::timeout(timeout)).ok().flatten()
    }

    /// [`Throttle::acquire_many`] with an [`OwnedThrottleGuard`]: waits for `n` permits
    /// held by one guard that can be moved into another thread.
    ///
    /// # Errors
    ///
    /// [`AcquireError::TooMany`], at once, if `n` is more than the limit can ever reach
    /// (see [`Throttle::acquire_many`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let throttle = Arc::new(coretune_pool::Throttle::new(4));
    /// let three = throttle.acquire_many_owned(3)?;
    /// std::thread::spawn(move || assert_eq!(three.num_permits(), 3)).join().unwrap();
    /// assert_eq!(throttle.in_use(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire_many_owned(
        self: &Arc<Self>,
        n: usize,
    ) -> Result<OwnedThrottleGuard, AcquireError> {
        self.owned(n, &Patience::Forever)
            .map(|guard| guard.expect("waiting as long as it takes ends with the permits"))
    }

    /// A guard of `n` permits taken as `patience` allows; `Ok(None)` if it ran out first.
    fn guard(
        &self,
        n: usize,
        patience: &Patience,
    ) -> Result<Option<ThrottleGuard<'_>>, AcquireError> {
        let taken = n == 0 || self.take(n, patience)?;
        Ok(taken.then(|| ThrottleGuard {
            throttle: self,
            permits: n,
        }))
    }

    /// [`Throttle::guard`] with an owned guard.
    fn owned(
        self: &Arc<Self>,
        n: usize,
        patience: &Patience,
    ) -> Result<Option<OwnedThrottleGuard>, AcquireError> {
        let taken = n == 0 || self.take(n, patience)?;
        Ok(taken.then(|| OwnedThrottleGuard {
            throttle: Arc::clone(self),
            permits: n,
        }))
    }

    /// Waits for a permit without a guard; pair with [`Throttle::release`]. Used by the
    /// pool, whose workers hold a permit across many tasks.
    pub(crate) fn acquire_permit(&self) {
        let taken = self.take(1, &Patience::Forever);
        debug_assert!(
            matches!(taken, Ok(true)),
            "one permit, waiting as long as it takes"
        );
    }

    /// Takes `n` permits (at least 1), waiting as `patience` allows: the protocol of
    /// [`Throttle`]'s docs ("Protocol"). `Ok(false)` if it ran out of patience first.
    fn take(&self, n: usize, patience: &Patience) -> Result<bool, AcquireError> {
        let mut permits = lock(&self.permits);
        let max = self.max.unwrap_or(permits.limit);
        if n > max {
            return Err(AcquireError::TooMany { requested: n, max });
        }
        // Requests for several permits queue (see `Permits::may_take`); single ones do not.
        let mut ticket = None;
        loop {
            if permits.may_take(n, ticket) {
                permits.in_use += n;
                match ticket {
                    Some(ticket) => {
                        permits.dequeue(ticket);
                        self.wake(permits, false); // the next request, or single permits, may go
                    }
                    None => self.publish(&permits),
                }
                return Ok(true);
            }
            let Some(next) = patience.left() else {
                if let Some(ticket) = ticket {
                    permits.dequeue(ticket);
                    self.wake(permits, false); // those this request held up may go
                }
                return Ok(false);
            };
            if n > 1 && ticket.is_none() {
                let new = permits.new_ticket();
                permits.queue.push_back(Request {
                    ticket: new,
                    permits: n,
                });
                ticket = Some(new);
                self.publish(&permits); // holders give permits back for it
            }
            permits = match next {
                Wait::Forever => wait(&self.condvar, permits),
                Wait::For(timeout) => wait_timeout(&self.condvar, permits, timeout),
            };
        }
    }

    /// Stores whether holders should give a permit back (under the lock): more are held
    /// than the limit allows, or a queued request goes first (see [`Permits::may_take`]).
    fn publish(&self, permits: &Permits) {
        let give_back = permits.in_use > permits.limit || permits.first().is_some();
        self.over_limit.store(give_back, Ordering::Relaxed);
    }

    /// After a change of `permits` that may let waiters in: publishes the flag, wakes the
    /// waiters if anybody fits under the limit, and unlocks. `one`: a single permit came
    /// free and no request queues, so waking one waiter will do (it takes the permit, or
    /// somebody else did, whose release wakes the next); otherwise all wake and look.
    ///
    /// Pending futures are all woken whenever anybody fits: each polls again and takes a
    /// permit or registers anew, so a future dropped after its wake-up swallows none.
    fn wake(&self, permits: MutexGuard<'_, Permits>, one: bool) {
        self.publish(&permits);
        if permits.in_use >= permits.limit {
            return; // nobody fits
        }
        #[cfg(all(feature = "async", not(loom)))]
        let mut permits = permits;
        #[cfg(all(feature = "async", not(loom)))]
        permits.wakers.drain(..).for_each(|(_, waker)| waker.wake());
        if one && permits.queue.is_empty() {
            self.condvar.notify_one();
        } else {
            self.condvar.notify_all();
        }
    }

    /// True if holders should give a permit back: more permits are held than the current
    /// limit allows (the limit was lowered), or a request for several permits waits to go
    /// first. Read without the lock, so it may lag a change by a moment.
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
        self.release_many(1);
    }

    /// Returns `n` permits (a guard's).
    fn release_many(&self, n: usize) {
        if n == 0 {
            return;
        }
        let mut permits = lock(&self.permits);
        permits.in_use -= n;
        self.wake(permits, n == 1);
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

    /// Sets the limit (0 is raised to 1) and wakes the waiters that may now fit. In
    /// adaptive mode the climber may move it again at its next decision.
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
        self.wake(permits, false);
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

/// Waits on `condvar` for at most `timeout`, ignoring poisoning (as `crate::sync::wait`).
fn wait_timeout<'a, T>(
    condvar: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: Duration,
) -> MutexGuard<'a, T> {
    match condvar.wait_timeout(guard, timeout) {
        Ok((guard, _)) => guard,
        Err(poisoned) => poisoned.into_inner().0,
    }
}
