//! A counting semaphore, [`Throttle`]: at most [`limit`](Throttle::limit) holders of a
//! permit at once. It bounds how many threads compute at once (fewer than the CPUs when they
//! fight over memory bandwidth, a cache or a lock), how many requests a backend sees, or how
//! many tasks are in flight; one throttle can be shared by a pool's workers, plain threads
//! and async tasks.
//!
//! # A fixed limit
//!
//! [`Throttle::new`]`(k)` admits `k` holders. [`acquire`](Throttle::acquire) waits for a
//! permit and returns a guard that gives it back when dropped;
//! [`try_acquire`](Throttle::try_acquire), [`acquire_timeout`](Throttle::acquire_timeout),
//! [`acquire_many`](Throttle::acquire_many) (several or none) and
//! [`acquire_owned`](Throttle::acquire_owned) (a permit that can move to another thread)
//! are the other forms. Waiters are served in order of arrival.
//! [`set_limit`](Throttle::set_limit) changes the limit at any time; lowering it takes no
//! permit back, new acquisitions wait until fewer are held.
//!
//! ```
//! use coretune_pool::Throttle;
//!
//! let backend = Throttle::new(4); // at most 4 requests in flight
//! std::thread::scope(|s| {
//!     for _ in 0..16 {
//!         s.spawn(|| {
//!             let _permit = backend.acquire();
//!             assert!(backend.in_use() <= 4); // ... send the request ...
//!         });
//!     }
//! });
//! backend.set_limit(2);
//! assert_eq!(backend.available_permits(), 2);
//! ```
//!
//! # A pool's limit
//!
//! Given to [`ThreadPoolBuilder::throttle`](crate::ThreadPoolBuilder::throttle), it limits
//! how many of the pool's workers run tasks at once. A worker keeps its permit from one task
//! to the next (a [seat](ThrottleSeat): no hand-off per task) and gives it back when it runs
//! out of work, or at its next task once the limit fell below the permits held or another
//! thread or task waits for a permit, so a busy pool starves nobody. The pool reports its
//! finished work to the throttle, one completion per task and per item of a parallel
//! iterator or data-parallel call: what an adaptive limit measures.
//!
//! ## The calling thread
//!
//! A thread outside the pool that calls [`scope`](crate::ThreadPool::scope) or
//! [`join`](crate::ThreadPool::join) runs part of the work itself: the scope's body,
//! `join`'s first closure. By default it counts: it holds a permit while it runs that part
//! and gives it back while it waits for the pool, so a limit of 1 means one thread at a
//! time, the caller included, and a nested call never waits for its caller's permit. With
//! [`throttle_caller(false)`](crate::ThreadPoolBuilder::throttle_caller) the caller runs
//! beside the workers' permits: for a body that waits for its own jobs by other means than
//! the pool's (a channel, which would wait forever under a limit of 1), or that only spawns.
//! A thread holding a guard of the throttle must not call into its pool, which cannot see
//! that permit and would wait for it.
//!
//! ```
//! use coretune_pool::{ThreadPoolBuilder, Throttle};
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//!
//! let throttle = Arc::new(Throttle::new(1));
//! let pool = ThreadPoolBuilder::new()
//!     .num_threads(4)
//!     .throttle(Arc::clone(&throttle))
//!     .build()?;
//! let (running, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
//! let unit = || {
//!     most.fetch_max(running.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
//!     std::thread::sleep(std::time::Duration::from_micros(50));
//!     running.fetch_sub(1, Ordering::SeqCst);
//! };
//! pool.join(|| unit(), || unit()); // `a` on this thread, `b` on a worker: in turn
//! assert_eq!(most.into_inner(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # One limit for a pool, threads and tasks
//!
//! Give the same `Arc<Throttle>` to a pool and to whatever else should count against its
//! limit. Threads acquire it as above; async code, with the cargo feature `async`, awaits
//! `acquire_async` or its `_many` and `_owned` forms on any executor, in the same queue (a
//! future dropped while it waits gives its place to the next waiter).
//!
//! ```
//! use coretune_pool::{ThreadPoolBuilder, Throttle};
//! use std::sync::Arc;
//!
//! let cpus = Arc::new(Throttle::new(2));
//! let pool = ThreadPoolBuilder::new()
//!     .num_threads(4)
//!     .throttle(Arc::clone(&cpus))
//!     .build()?;
//! let other = std::thread::spawn({
//!     let cpus = Arc::clone(&cpus);
//!     move || {
//!         let _permit = cpus.acquire(); // one of the 2, shared with the pool
//!         (0..1_000u64).sum::<u64>()
//!     }
//! });
//! let total = pool.sum(0..1_000, |i| i as u64); // 2 threads at most, in all
//! assert_eq!(total, other.join().unwrap());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # An adaptive limit
//!
//! [`Throttle::adaptive`] moves the limit by itself, between [`AdaptiveConfig::min`] and
//! [`AdaptiveConfig::max`], on the throughput of the completions reported to it: a pool
//! reports its own; elsewhere call [`record_completions`](Throttle::record_completions)
//! once per finished unit of work. It starts at [`initial`](AdaptiveConfig::initial) (by
//! default `max`: no limit in force), probes lower limits, keeps one only where throughput
//! rises beyond the noise, and goes on probing one step either side to follow changes in
//! the work. [`Throttle::trace`] returns each sample's time, limit and throughput;
//! [`AdaptiveConfig`] describes every setting.
//!
//! **Set `max` for work that waits.** The limit never goes above `max`. Its default, the
//! CPUs this process may use, suits work that computes; threads that mostly wait (on I/O, a
//! remote backend, a lock that sleeps) it would cap at the number of CPUs. Set it to the
//! most that may be in flight: the pool's thread count, or the backend's connections.
//!
//! ```
//! use coretune_pool::{AdaptiveConfig, ThreadPoolBuilder, Throttle};
//! use std::sync::Arc;
//!
//! // 32 workers that mostly wait on a backend: let the limit range over all of them.
//! let throttle = Arc::new(Throttle::adaptive(AdaptiveConfig {
//!     max: 32,
//!     ..AdaptiveConfig::default()
//! }));
//! let pool = ThreadPoolBuilder::new()
//!     .num_threads(32)
//!     .throttle(Arc::clone(&throttle))
//!     .build()?;
//! assert_eq!(throttle.limit(), 32); // the climb starts at `max`
//! pool.for_each(0..64, |_| std::thread::sleep(std::time::Duration::from_micros(200)));
//! assert!(throttle.completions() >= 64); // what the limit is judged on
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// Maintainers' notes, not part of the API docs: README.md in this folder (the protocol and
// its memory ordering, seats, the calling thread's rules, the async waiters, the adaptive
// limit's algorithm and statistics, why this controller, the measurements behind the
// defaults, and what the tests check). The code is this file (the semaphore) and `climb.rs`
// (the settings, the samples and the hill climber); unit tests are in `test.rs`, loom
// models in `loom.rs`.

#[cfg(feature = "async")]
mod asynchronous;
mod climb;
#[cfg(all(test, loom))]
mod loom;
#[cfg(all(test, not(loom)))]
mod test;

pub use climb::{AdaptiveConfig, TraceSample};

use crate::sync::{
    AtomicBool, AtomicU64, AtomicUsize, Condvar, Mutex, MutexGuard, Ordering, lock, wait,
};
use climb::Sampler;
use std::collections::VecDeque;
use std::sync::Arc;
use std::task::Waker;
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
    /// Set by [`Throttle::close`]: no permit is handed out any more.
    closed: bool,
    /// Waiting acquisitions, oldest first: permits coming free go to the front.
    queue: VecDeque<Waiter>,
    /// Numbers the waiters.
    next_ticket: u64,
}

/// A queued acquisition of `permits` permits.
#[derive(Debug)]
struct Waiter {
    ticket: u64,
    permits: usize,
    /// False for a seat (a pool's worker, [`ThrottleSeat`]): holders do not give their
    /// permits back for it (see [`Throttle::publish`]).
    yields_seats: bool,
    /// Where the waiter learns the outcome.
    slot: Arc<Slot>,
    /// A pending future's waker (`asynchronous.rs`); a blocking waiter waits on
    /// `slot.condvar` instead.
    waker: Option<Waker>,
}

/// What a waiter was given, written under the throttle's lock by whoever removes it from
/// the queue (the states [`WAITING`], [`GRANTED`], [`CLOSED`]).
#[derive(Debug)]
struct Slot {
    state: AtomicUsize,
    condvar: Condvar,
}

const WAITING: usize = 0;
const GRANTED: usize = 1;
const CLOSED: usize = 2;

impl Slot {
    fn state(&self) -> usize {
        // Written and read under the throttle's lock only.
        self.state.load(Ordering::Relaxed)
    }
}

impl Permits {
    const fn new(limit: usize) -> Self {
        Permits {
            in_use: 0,
            limit,
            closed: false,
            queue: VecDeque::new(),
            next_ticket: 0,
        }
    }

    /// True if a waiter may be handed permits now or once some come free: one asking for
    /// no more than the limit. Those asking for more wait without holding anybody up.
    fn fits_limit(&self, waiter: &Waiter) -> bool {
        waiter.permits <= self.limit
    }

    /// True if `n` permits may be taken now by an acquisition that is not queued: they fit
    /// under the limit and no queued waiter goes first.
    fn may_take(&self, n: usize) -> bool {
        !self.closed
            && self.in_use + n <= self.limit
            && !self.queue.iter().any(|waiter| self.fits_limit(waiter))
    }

    /// Queues a waiter for `n` permits; returns its ticket and slot.
    fn enqueue(&mut self, n: usize, yields_seats: bool, waker: Option<Waker>) -> (u64, Arc<Slot>) {
        self.next_ticket += 1;
        let slot = Arc::new(Slot {
            state: AtomicUsize::new(WAITING),
            condvar: Condvar::new(),
        });
        self.queue.push_back(Waiter {
            ticket: self.next_ticket,
            permits: n,
            yields_seats,
            slot: Arc::clone(&slot),
            waker,
        });
        (self.next_ticket, slot)
    }

    /// Takes the waiter `ticket` out of the queue (it gave up), if it is still there.
    fn dequeue(&mut self, ticket: u64) {
        self.queue.retain(|waiter| waiter.ticket != ticket);
    }

    /// Hands permits to the queued waiters, oldest first, while the next one fits: each is
    /// told once (its condition variable, or its waker pushed to `woken`).
    fn grant(&mut self, woken: &mut Vec<Waker>) {
        let mut i = 0;
        while let Some(waiter) = self.queue.get(i) {
            if !self.fits_limit(waiter) {
                i += 1;
                continue;
            }
            if self.in_use + waiter.permits > self.limit {
                break;
            }
            let waiter = self.queue.remove(i).expect("the waiter just looked at");
            self.in_use += waiter.permits;
            settle(waiter, GRANTED, woken);
        }
    }
}

/// Tells a waiter taken out of the queue its outcome.
fn settle(waiter: Waiter, state: usize, woken: &mut Vec<Waker>) {
    waiter.slot.state.store(state, Ordering::Relaxed);
    waiter.slot.condvar.notify_one();
    woken.extend(waiter.waker);
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

/// Why an acquisition that waits got no permits.
///
/// ```
/// use coretune_pool::{AcquireError, AdaptiveConfig, Throttle};
/// let throttle = Throttle::adaptive(AdaptiveConfig { max: 2, ..AdaptiveConfig::default() });
/// let error = throttle.acquire_many(3).unwrap_err();
/// assert_eq!(error, AcquireError::TooMany { requested: 3, max: 2 });
/// assert_eq!(error.to_string(), "3 permits asked for, but the throttle's limit can reach at most 2");
/// throttle.close();
/// assert_eq!(throttle.acquire_many(1).unwrap_err(), AcquireError::Closed);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AcquireError {
    /// More permits were asked for than the limit can ever reach: an adaptive throttle's
    /// [`AdaptiveConfig::max`], or [`Throttle::MAX_PERMITS`].
    TooMany {
        /// The permits asked for.
        requested: usize,
        /// The most the limit can reach.
        max: usize,
    },
    /// The throttle was closed ([`Throttle::close`]), before or while the acquisition waited.
    Closed,
}

impl std::fmt::Display for AcquireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AcquireError::TooMany { requested, max } => write!(
                f,
                "{requested} permits asked for, but the throttle's limit can reach at most {max}"
            ),
            AcquireError::Closed => f.write_str("the throttle is closed"),
        }
    }
}

impl std::error::Error for AcquireError {}

/// Why an acquisition that does not wait (`try_acquire*`) got no permits.
///
/// ```
/// use coretune_pool::{Throttle, TryAcquireError};
/// let throttle = Throttle::new(1);
/// let _held = throttle.try_acquire()?;
/// assert_eq!(throttle.try_acquire().unwrap_err(), TryAcquireError::NoPermits);
/// throttle.close();
/// assert_eq!(throttle.try_acquire().unwrap_err().to_string(), "the throttle is closed");
/// # Ok::<(), TryAcquireError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TryAcquireError {
    /// Not enough permits are free right now, or a waiter goes first.
    NoPermits,
    /// The throttle was closed ([`Throttle::close`]).
    Closed,
    /// More permits were asked for than the limit can ever reach (see
    /// [`AcquireError::TooMany`]).
    TooMany {
        /// The permits asked for.
        requested: usize,
        /// The most the limit can reach.
        max: usize,
    },
}

impl std::fmt::Display for TryAcquireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TryAcquireError::NoPermits => f.write_str("no permits available"),
            TryAcquireError::Closed => AcquireError::Closed.fmt(f),
            TryAcquireError::TooMany { requested, max } => AcquireError::TooMany {
                requested: *requested,
                max: *max,
            }
            .fmt(f),
        }
    }
}

impl std::error::Error for TryAcquireError {}

impl From<AcquireError> for TryAcquireError {
    fn from(error: AcquireError) -> Self {
        match error {
            AcquireError::TooMany { requested, max } => TryAcquireError::TooMany { requested, max },
            AcquireError::Closed => TryAcquireError::Closed,
        }
    }
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
/// assert!(throttle.try_acquire().is_err());
/// drop(a);
/// assert!(throttle.try_acquire().is_ok());
/// ```
///
/// # Protocol
///
/// [`Throttle::acquire`] waits while the permits held reach the limit, then takes one;
/// dropping the [`ThrottleGuard`] hands it to the oldest waiter. Raising the limit
/// ([`Throttle::set_limit`], [`Throttle::add_permits`]) hands the new permits to as many
/// waiters as now fit. Lowering it
/// never pre-empts: holders keep their permits, and new acquisitions wait until the
/// permits held fell below the new limit. A permit given back by one thread
/// happens-before the acquisition that takes it over.
///
/// Waiters are served in order of arrival: permits coming free go to the oldest waiter
/// that fits under the limit, and only as many waiters are woken as permits came free (one
/// per released permit, not all of them). A request for several permits
/// ([`Throttle::acquire_many`]) takes them all at once or none, and while it waits nobody
/// behind it takes a permit, so permits coming free one by one add up to it. Seats (below)
/// and a pool's workers give their permits back at their next unit of work while any other
/// acquisition waits, so a busy pool does not starve threads and tasks sharing its throttle.
/// A request for more permits than the limit allows right now (an adaptive limit below
/// it) waits without holding anybody up, until the limit is raised; one for more than the
/// limit can ever reach fails at once ([`AcquireError`]). Waiting with a timeout
/// ([`Throttle::acquire_timeout`]) gives up once the time is over and no permit came, and
/// leaves the queue to the next.
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
/// the throttle reports one per finished task, and one per item its data-parallel calls
/// work off, as each block of items is done). An adaptive throttle turns them into
/// throughput samples, moves its limit with a hill climber described in
/// [`AdaptiveConfig`], and keeps the samples ([`Throttle::trace`]).
//
// The mutex provides all ordering of the permits. Every change of `(in_use, limit, queue)`
// also stores into `over_limit` whether holders should give a permit back (`in_use >
// limit`, or an acquisition other than a seat waits), read without the lock by seats and
// workers;
// relaxed, because a stale value only delays a release by one unit of work and the permit
// count itself only changes under the mutex.
#[derive(Debug)]
pub struct Throttle {
    permits: Mutex<Permits>,
    /// Whether holders should give a permit back (see [`Throttle::is_over_limit`]),
    /// stored under `permits`' lock at every change, read without it.
    over_limit: AtomicBool,
    /// The most the limit can reach in adaptive mode ([`AdaptiveConfig::max`]); `None`
    /// for a fixed limit, whose most is [`Throttle::MAX_PERMITS`].
    max: Option<usize>,
    /// Nanoseconds after `start` before which no sample can be due (a hint read without
    /// the sampler's lock).
    next_sample_at: AtomicU64,
    completions: AtomicU64,
    /// `Some` in adaptive mode.
    adaptive: Option<Adaptive>,
}

/// An adaptive throttle's sampler and the instant its samples count from.
#[derive(Debug)]
struct Adaptive {
    start: Instant,
    sampler: Mutex<Sampler>,
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

impl<'a> ThrottleGuard<'a> {
    /// Keeps the permits for good: they are not given back, and the throttle's limit drops
    /// by as many (as tokio's `SemaphorePermit::forget`).
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(3);
    /// throttle.acquire().forget();
    /// assert_eq!((throttle.limit(), throttle.in_use()), (2, 0));
    /// ```
    pub fn forget(mut self) {
        self.throttle.forget_held(std::mem::take(&mut self.permits));
    }

    /// Moves the permits of `other` into this guard.
    ///
    /// # Panics
    ///
    /// If `other` holds permits of another throttle.
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(3);
    /// let mut one = throttle.acquire();
    /// one.merge(throttle.acquire_many(2)?);
    /// assert_eq!((one.num_permits(), throttle.in_use()), (3, 3));
    /// # Ok::<(), coretune_pool::AcquireError>(())
    /// ```
    pub fn merge(&mut self, mut other: Self) {
        assert!(
            std::ptr::eq(self.throttle, other.throttle),
            "merging permits of different throttles"
        );
        self.permits += std::mem::take(&mut other.permits);
    }

    /// Splits `n` of this guard's permits off into a new guard; `None` if it holds fewer.
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(3);
    /// let mut three = throttle.acquire_many(3)?;
    /// let one = three.split(1).expect("3 permits held");
    /// assert_eq!((three.num_permits(), one.num_permits()), (2, 1));
    /// assert!(three.split(5).is_none());
    /// # Ok::<(), coretune_pool::AcquireError>(())
    /// ```
    pub fn split(&mut self, n: usize) -> Option<Self> {
        self.permits = self.permits.checked_sub(n)?;
        Some(ThrottleGuard {
            throttle: self.throttle,
            permits: n,
        })
    }

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
    /// Keeps the permits for good, as [`ThrottleGuard::forget`].
    ///
    /// ```
    /// let throttle = std::sync::Arc::new(coretune_pool::Throttle::new(2));
    /// throttle.acquire_owned().forget();
    /// assert_eq!(throttle.limit(), 1);
    /// ```
    pub fn forget(mut self) {
        self.throttle.forget_held(std::mem::take(&mut self.permits));
    }

    /// Moves the permits of `other` into this guard, as [`ThrottleGuard::merge`].
    ///
    /// # Panics
    ///
    /// If `other` holds permits of another throttle.
    ///
    /// ```
    /// let throttle = std::sync::Arc::new(coretune_pool::Throttle::new(2));
    /// let mut one = throttle.acquire_owned();
    /// one.merge(throttle.acquire_owned());
    /// assert_eq!(one.num_permits(), 2);
    /// ```
    pub fn merge(&mut self, mut other: Self) {
        assert!(
            Arc::ptr_eq(&self.throttle, &other.throttle),
            "merging permits of different throttles"
        );
        self.permits += std::mem::take(&mut other.permits);
    }

    /// Splits `n` of this guard's permits off into a new guard, as
    /// [`ThrottleGuard::split`].
    ///
    /// ```
    /// let throttle = std::sync::Arc::new(coretune_pool::Throttle::new(2));
    /// let mut two = throttle.acquire_many_owned(2)?;
    /// assert_eq!(two.split(1).map(|one| one.num_permits()), Some(1));
    /// # Ok::<(), coretune_pool::AcquireError>(())
    /// ```
    pub fn split(&mut self, n: usize) -> Option<Self> {
        self.permits = self.permits.checked_sub(n)?;
        Some(OwnedThrottleGuard {
            throttle: Arc::clone(&self.throttle),
            permits: n,
        })
    }

    /// The throttle the permits belong to.
    ///
    /// ```
    /// let throttle = std::sync::Arc::new(coretune_pool::Throttle::new(1));
    /// let permit = throttle.acquire_owned();
    /// assert!(std::sync::Arc::ptr_eq(permit.throttle(), &throttle));
    /// ```
    pub fn throttle(&self) -> &Arc<Throttle> {
        &self.throttle
    }

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
    /// assert!(!seat.is_held() && throttle.try_acquire().is_ok());
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

/// `Throttle::with_limit`, a fixed throttle with `limit` permits: a `const fn` except under
/// loom, whose types have no `const fn new`.
macro_rules! with_limit {
    () => {
        #[cfg(not(loom))]
        const fn with_limit(limit: usize) -> Self {
            with_limit!(limit)
        }

        #[cfg(loom)]
        fn with_limit(limit: usize) -> Self {
            with_limit!(limit)
        }
    };
    ($limit:ident) => {
        Throttle {
            permits: Mutex::new(Permits::new($limit)),
            over_limit: AtomicBool::new(false),
            max: None,
            next_sample_at: AtomicU64::new(0),
            completions: AtomicU64::new(0),
            adaptive: None,
        }
    };
}

impl Throttle {
    /// How many samples an adaptive throttle keeps in its [`Throttle::trace`]: 16,384
    /// (512 KiB), at least 8 s at the default [`AdaptiveConfig::sample_interval`].
    pub const TRACE_SAMPLES: usize = climb::TRACE_SAMPLES;

    /// The most permits a throttle can have (as `tokio::sync::Semaphore::MAX_PERMITS`).
    pub const MAX_PERMITS: usize = usize::MAX >> 3;

    /// A throttle with a fixed limit. A `limit` of 0 is a closed gate: nobody gets in
    /// until [`Throttle::add_permits`] or [`Throttle::set_limit`] raises it.
    ///
    /// # Panics
    ///
    /// If `limit` is above [`Throttle::MAX_PERMITS`].
    ///
    /// ```
    /// use coretune_pool::{Throttle, TryAcquireError};
    /// assert_eq!(Throttle::new(3).limit(), 3);
    /// let gate = Throttle::new(0);
    /// assert_eq!(gate.try_acquire().unwrap_err(), TryAcquireError::NoPermits);
    /// gate.add_permits(1);
    /// assert!(gate.try_acquire().is_ok());
    /// ```
    pub fn new(limit: usize) -> Self {
        assert!(
            limit <= Self::MAX_PERMITS,
            "a throttle has at most Throttle::MAX_PERMITS permits"
        );
        Self::with_limit(limit)
    }

    /// [`Throttle::new`] in a constant expression, for a `static` throttle.
    ///
    /// ```
    /// use coretune_pool::Throttle;
    /// static CONNECTIONS: Throttle = Throttle::const_new(2);
    /// let _one = CONNECTIONS.acquire();
    /// assert_eq!(CONNECTIONS.available_permits(), 1);
    /// ```
    #[cfg(not(loom))]
    pub const fn const_new(limit: usize) -> Self {
        assert!(
            limit <= Self::MAX_PERMITS,
            "a throttle has at most Throttle::MAX_PERMITS permits"
        );
        Self::with_limit(limit)
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
        let mut throttle = Self::with_limit(sampler.limit());
        throttle.max = Some(sampler.max_limit());
        throttle.adaptive = Some(Adaptive {
            start: Instant::now(),
            sampler: Mutex::new(sampler),
        });
        throttle
    }

    with_limit!();

    /// Waits for a permit.
    ///
    /// # Panics
    ///
    /// If the throttle is closed ([`Throttle::close`]); [`Throttle::acquire_many`]`(1)`
    /// returns the error instead.
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
        match self.acquire_many(1) {
            Ok(guard) => guard,
            Err(error) => panic!("Throttle::acquire: {error}"),
        }
    }

    /// Takes a permit if one is free right now and nobody waits to go first; never blocks.
    ///
    /// # Errors
    ///
    /// [`TryAcquireError::NoPermits`] if none is free, [`TryAcquireError::Closed`] if the
    /// throttle is closed.
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(1);
    /// let held = throttle.try_acquire();
    /// assert!(held.is_ok() && throttle.try_acquire().is_err());
    /// ```
    pub fn try_acquire(&self) -> Result<ThrottleGuard<'_>, TryAcquireError> {
        self.try_acquire_many(1)
    }

    /// Waits at most `timeout` for a permit; `None` if none came in that time or the
    /// throttle is closed.
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
    /// of no permits at once. Waiters are served in order (see
    /// ["Protocol"](Throttle#protocol)): single permits coming free add up to this request
    /// rather than go to newer ones, and seats give theirs back at their next unit of
    /// work. While an adaptive limit
    /// is below `n` the request waits without holding anybody up, until the climber raises
    /// the limit to `n` again; the climber moves only on samples, which close only as
    /// completions are reported ([`Throttle::record_completions`], [`Throttle::sample`]),
    /// so where they may stop use [`Throttle::acquire_many_timeout`].
    ///
    /// # Errors
    ///
    /// [`AcquireError::TooMany`], at once, if `n` is more than the limit can ever reach:
    /// an adaptive throttle's [`AdaptiveConfig::max`], or [`Throttle::MAX_PERMITS`] (a
    /// fixed limit below `n` keeps the request waiting until [`Throttle::add_permits`] or
    /// [`Throttle::set_limit`] raises it); [`AcquireError::Closed`] if the throttle is
    /// closed before the permits came.
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
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire_many(&self, n: usize) -> Result<ThrottleGuard<'_>, AcquireError> {
        self.guard(n, &Patience::Forever)
            .map(|guard| guard.expect("waiting as long as it takes ends with the permits"))
    }

    /// Takes `n` permits if they are free right now and nobody waits to go first; never
    /// blocks.
    ///
    /// # Errors
    ///
    /// [`TryAcquireError::NoPermits`] if they are not free, [`TryAcquireError::Closed`]
    /// if the throttle is closed, [`TryAcquireError::TooMany`] if `n` is more than the
    /// limit can ever reach (see [`Throttle::acquire_many`]).
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(3);
    /// let _one = throttle.acquire();
    /// assert!(throttle.try_acquire_many(3).is_err());
    /// assert_eq!(throttle.try_acquire_many(2)?.num_permits(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_many(&self, n: usize) -> Result<ThrottleGuard<'_>, TryAcquireError> {
        self.guard(n, &Patience::Never)?
            .ok_or(TryAcquireError::NoPermits)
    }

    /// Waits at most `timeout` for `n` permits, queued as [`Throttle::acquire_many`]
    /// describes; `Ok(None)` if they did not come in that time (the request then leaves
    /// the queue to the next).
    ///
    /// # Errors
    ///
    /// As [`Throttle::acquire_many`].
    ///
    /// ```
    /// use std::time::Duration;
    /// let throttle = coretune_pool::Throttle::new(2);
    /// let _one = throttle.acquire();
    /// assert!(throttle.acquire_many_timeout(2, Duration::from_millis(10))?.is_none());
    /// assert!(throttle.try_acquire().is_ok()); // the request left the queue
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
    ///
    /// # Panics
    ///
    /// If the throttle is closed, as [`Throttle::acquire`].
    pub fn acquire_owned(self: &Arc<Self>) -> OwnedThrottleGuard {
        match self.acquire_many_owned(1) {
            Ok(guard) => guard,
            Err(error) => panic!("Throttle::acquire_owned: {error}"),
        }
    }

    /// [`Throttle::try_acquire`] with an [`OwnedThrottleGuard`]: a permit if one is free
    /// right now; never blocks.
    ///
    /// # Errors
    ///
    /// As [`Throttle::try_acquire`].
    ///
    /// ```
    /// let throttle = std::sync::Arc::new(coretune_pool::Throttle::new(1));
    /// let held = throttle.try_acquire_owned();
    /// assert!(held.is_ok() && throttle.try_acquire_owned().is_err());
    /// ```
    pub fn try_acquire_owned(self: &Arc<Self>) -> Result<OwnedThrottleGuard, TryAcquireError> {
        self.try_acquire_many_owned(1)
    }

    /// [`Throttle::try_acquire_many`] with an [`OwnedThrottleGuard`]; never blocks.
    ///
    /// # Errors
    ///
    /// As [`Throttle::try_acquire_many`].
    ///
    /// ```
    /// let throttle = std::sync::Arc::new(coretune_pool::Throttle::new(3));
    /// assert_eq!(throttle.try_acquire_many_owned(2)?.num_permits(), 2);
    /// # Ok::<(), coretune_pool::TryAcquireError>(())
    /// ```
    pub fn try_acquire_many_owned(
        self: &Arc<Self>,
        n: usize,
    ) -> Result<OwnedThrottleGuard, TryAcquireError> {
        self.owned(n, &Patience::Never)?
            .ok_or(TryAcquireError::NoPermits)
    }

    /// [`Throttle::acquire_timeout`] with an [`OwnedThrottleGuard`]: waits at most
    /// `timeout` for a permit; `None` if none came in that time or the throttle is closed.
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
    /// As [`Throttle::acquire_many`].
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
        let taken = n == 0 || self.take(n, patience, true)?;
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
        let taken = n == 0 || self.take(n, patience, true)?;
        Ok(taken.then(|| OwnedThrottleGuard {
            throttle: Arc::clone(self),
            permits: n,
        }))
    }

    /// Waits for a permit as a seat, without a guard; pair with [`Throttle::release`].
    /// Used by the pool, whose workers hold a permit across many tasks. A seat waiting
    /// does not make other seats give their permits back, and a closed throttle no longer
    /// limits seats (the pool's work goes on).
    pub(crate) fn acquire_permit(&self) {
        let taken = self.take(1, &Patience::Forever, false);
        debug_assert!(
            matches!(taken, Ok(true)),
            "one permit for a seat, waiting as long as it takes"
        );
    }

    /// Takes `n` permits at once without waiting if the state allows: `Ok(true)` if taken,
    /// `Ok(false)` if the acquisition must wait. `seat`: see [`Throttle::acquire_permit`].
    fn take_now(&self, permits: &mut Permits, n: usize, seat: bool) -> Result<bool, AcquireError> {
        if permits.closed {
            if !seat {
                return Err(AcquireError::Closed);
            }
            permits.in_use += n;
            self.publish(permits);
            return Ok(true);
        }
        let max = self.max.unwrap_or(Self::MAX_PERMITS);
        if n > max {
            return Err(AcquireError::TooMany { requested: n, max });
        }
        if !permits.may_take(n) {
            return Ok(false);
        }
        permits.in_use += n;
        self.publish(permits);
        Ok(true)
    }

    /// Takes `n` permits (at least 1), waiting as `patience` allows: the protocol of
    /// [`Throttle`]'s docs ("Protocol"). `Ok(false)` if it ran out of patience first.
    /// `yields_seats`: false for a seat (see [`Throttle::acquire_permit`]).
    fn take(
        &self,
        n: usize,
        patience: &Patience,
        yields_seats: bool,
    ) -> Result<bool, AcquireError> {
        let mut permits = lock(&self.permits);
        if self.take_now(&mut permits, n, !yields_seats)? {
            return Ok(true);
        }
        if patience.left().is_none() {
            return Ok(false);
        }
        let (ticket, slot) = permits.enqueue(n, yields_seats, None);
        self.publish(&permits); // holders give permits back for it
        loop {
            match slot.state() {
                GRANTED => return Ok(true),
                CLOSED => return Err(AcquireError::Closed),
                _ => {}
            }
            let Some(next) = patience.left() else {
                permits.dequeue(ticket);
                self.settle_queue(permits); // those it held up may go
                return Ok(false);
            };
            permits = match next {
                Wait::Forever => wait(&slot.condvar, permits),
                Wait::For(timeout) => wait_timeout(&slot.condvar, permits, timeout),
            };
        }
    }

    /// Stores whether holders should give a permit back (under the lock): more are held
    /// than the limit allows, or an acquisition other than a seat waits for permits it
    /// could get.
    fn publish(&self, permits: &Permits) {
        // A closed throttle no longer limits seats: nothing to give back.
        let give_back = !permits.closed
            && (permits.in_use > permits.limit
                || permits
                    .queue
                    .iter()
                    .any(|waiter| waiter.yields_seats && permits.fits_limit(waiter)));
        self.over_limit.store(give_back, Ordering::Relaxed);
    }

    /// After a change of `permits` that may let waiters in: hands permits to the waiters
    /// that fit, oldest first, publishes the flag, unlocks and wakes the futures among
    /// them (blocking waiters were notified under the lock).
    fn settle_queue(&self, mut permits: MutexGuard<'_, Permits>) {
        let mut woken = Vec::new();
        permits.grant(&mut woken);
        self.publish(&permits);
        drop(permits);
        woken.into_iter().for_each(Waker::wake);
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
        self.settle_queue(permits);
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

    /// Sets the limit and wakes the waiters that may now fit. A fixed limit may be 0 (a
    /// closed gate); an adaptive one is at least 1, and the climber may move it again at its
    /// next decision.
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(1);
    /// let _held = throttle.acquire();
    /// throttle.set_limit(2); // a waiter could take the second permit now
    /// assert!(throttle.try_acquire().is_ok());
    /// ```
    pub fn set_limit(&self, limit: usize) {
        let mut permits = lock(&self.permits);
        permits.limit = limit.max(usize::from(self.is_adaptive()));
        self.settle_queue(permits);
    }

    /// Permits free right now: the limit less those held (0 while more are held than
    /// the limit allows).
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(3);
    /// let _two = throttle.acquire_many(2)?;
    /// assert_eq!(throttle.available_permits(), 1);
    /// # Ok::<(), coretune_pool::AcquireError>(())
    /// ```
    pub fn available_permits(&self) -> usize {
        let permits = lock(&self.permits);
        permits.limit.saturating_sub(permits.in_use)
    }

    /// Raises the limit by `n` and hands the new permits to the waiters, oldest first. An
    /// adaptive limit stays at most [`AdaptiveConfig::max`], and the climber may move it
    /// again at its next decision.
    ///
    /// # Panics
    ///
    /// If the limit would go above [`Throttle::MAX_PERMITS`].
    ///
    /// ```
    /// let gate = coretune_pool::Throttle::new(0); // closed until permits are added
    /// std::thread::scope(|s| {
    ///     let waiter = s.spawn(|| gate.acquire().num_permits());
    ///     gate.add_permits(1);
    ///     assert_eq!(waiter.join().unwrap(), 1);
    /// });
    /// ```
    pub fn add_permits(&self, n: usize) {
        let mut permits = lock(&self.permits);
        let limit = permits
            .limit
            .checked_add(n)
            .filter(|&limit| limit <= Self::MAX_PERMITS)
            .expect("a throttle has at most Throttle::MAX_PERMITS permits");
        permits.limit = self.max.map_or(limit, |max| limit.min(max));
        self.settle_queue(permits);
    }

    /// Lowers the limit by up to `n` of the permits free right now (held ones are not
    /// taken back) and returns how many it removed.
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(3);
    /// let _held = throttle.acquire();
    /// assert_eq!(throttle.forget_permits(5), 2); // only 2 were free
    /// assert_eq!((throttle.limit(), throttle.available_permits()), (1, 0));
    /// ```
    pub fn forget_permits(&self, n: usize) -> usize {
        let mut permits = lock(&self.permits);
        let forgotten = n.min(permits.limit.saturating_sub(permits.in_use));
        permits.limit -= forgotten;
        self.publish(&permits);
        forgotten
    }

    /// Closes the throttle: every waiting acquisition fails with [`AcquireError::Closed`],
    /// as does every later one (`try_` forms with [`TryAcquireError::Closed`]); permits
    /// held stay valid and are given back as usual. A pool's workers and seats are no
    /// longer limited by a closed throttle.
    ///
    /// ```
    /// use coretune_pool::{AcquireError, Throttle};
    /// let throttle = Throttle::new(1);
    /// let held = throttle.acquire();
    /// std::thread::scope(|s| {
    ///     let waiter = s.spawn(|| throttle.acquire_many(1).map(|guard| guard.num_permits()));
    ///     throttle.close();
    ///     assert_eq!(waiter.join().unwrap(), Err(AcquireError::Closed));
    /// });
    /// assert!(throttle.is_closed());
    /// drop(held);
    /// ```
    pub fn close(&self) {
        let mut permits = lock(&self.permits);
        permits.closed = true;
        let mut woken = Vec::new();
        for waiter in std::mem::take(&mut permits.queue) {
            if waiter.yields_seats {
                settle(waiter, CLOSED, &mut woken);
            } else {
                permits.in_use += waiter.permits; // a seat goes on without a limit
                settle(waiter, GRANTED, &mut woken);
            }
        }
        self.publish(&permits);
        drop(permits);
        woken.into_iter().for_each(Waker::wake);
    }

    /// True once [`Throttle::close`] was called.
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(1);
    /// assert!(!throttle.is_closed());
    /// throttle.close();
    /// assert!(throttle.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        lock(&self.permits).closed
    }

    /// Removes `n` held permits for good: the limit and the permits held both drop by
    /// `n` (a guard's [`forget`](ThrottleGuard::forget)).
    fn forget_held(&self, n: usize) {
        let mut permits = lock(&self.permits);
        permits.in_use -= n;
        permits.limit = permits.limit.saturating_sub(n);
        self.publish(&permits);
    }

    /// True if the limit is adaptive.
    ///
    /// ```
    /// assert!(!coretune_pool::Throttle::new(2).is_adaptive());
    /// ```
    pub fn is_adaptive(&self) -> bool {
        self.adaptive.is_some()
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
        if self.adaptive.is_some() && before / CLOCK_CHECK_EVERY != (before + n) / CLOCK_CHECK_EVERY
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
        let Some(Adaptive { start, sampler }) = &self.adaptive else {
            return;
        };
        let now = start.elapsed();
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

    /// The adaptive throttle's last [`Throttle::TRACE_SAMPLES`] samples, oldest first
    /// (empty for a fixed limit): older ones are dropped, so the trace of a throttle that
    /// runs for hours stays at most that long.
    ///
    /// ```
    /// let fixed = coretune_pool::Throttle::new(2);
    /// fixed.record_completions(1000);
    /// assert!(fixed.trace().is_empty());
    /// ```
    pub fn trace(&self) -> Vec<TraceSample> {
        self.adaptive
            .as_ref()
            .map(|adaptive| lock(&adaptive.sampler).trace())
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
