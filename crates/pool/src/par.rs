//! Data parallelism: [`ThreadPool::for_each`], [`map_collect`](ThreadPool::map_collect),
//! [`reduce`](ThreadPool::reduce) and [`sum`](ThreadPool::sum) over slices, vectors and
//! index ranges ([`ParSource`]), split automatically: no chunk size to choose.
//!
//! # Splitting: lazy binary splitting with an idle check
//!
//! A range of items is processed on a worker in *blocks*. Before each block the worker
//! asks whether splitting may pay: its own deque is empty (so a thief would find nothing
//! of its own to take) **and** some worker of the pool is idle (searching or asleep, one
//! relaxed load of the sleep counters). If so, it splits what is left in two halves with a
//! [`join`](crate::join): the right half goes on its deque for the idle worker to steal,
//! the left half is processed the same way. Otherwise it processes the next block. Blocks
//! start at one item and double up to [`MAX_BLOCK`] items, and to at most
//! 1/[`LEAF_BLOCKS`] of the range the worker started with, so that a worker notices a
//! hungry thief after at most a small share of its range even when items are costly.
//!
//! This is lazy binary splitting (Tzannes, Caragea, Barua and Vishkin, PPoPP 2010) with
//! the deque check extended by an idle check. Why not rayon's adaptive splitter (split
//! `num_threads` times eagerly, and again when a piece is stolen)? Its pieces are split
//! only up front and when stolen: once a worker runs a piece that may no longer split, an
//! expensive stretch inside it is worked off by that worker alone while the others idle
//! (a workload whose first 10 % of items cost 100× leaves one worker with about twice the
//! fair share). Here a worker splits whenever another one is idle, at the next block
//! boundary, so the idle one gets half of whatever is left. When every worker is busy
//! nobody splits and a range is worked off in large blocks, as a serial loop would, with
//! one deque check and one load per block.
//!
//! The idle check keeps splits rare: a split puts one job on the deque, and no other
//! split happens on that worker until the job is stolen or the worker pops it back.
//! Results are combined in order (left before right), so `reduce` needs an associative
//! operation but not a commutative one, and `map_collect` keeps the order of the items.

use crate::ThreadPool;
use crate::join::{in_worker, join_worker};
use crate::registry::WorkerThread;
use crate::throttle::Throttle;
use std::mem::MaybeUninit;
use std::ops::Range;

/// Largest block of items processed between two looks at whether to split: enough to
/// make the look (a few loads) negligible against trivial items.
const MAX_BLOCK: usize = 1024;

/// A range is processed in at least this many blocks, so a worker busy with few costly
/// items still looks for idle workers often.
const LEAF_BLOCKS: usize = 64;

/// What the data-parallel methods of [`ThreadPool`] run over: slices (`&[T]` items are
/// `&T`), mutable slices (`&mut [T]`, items `&mut T`), vectors by reference (as their
/// slices) and index ranges (`Range<usize>`, items `usize`). The splittable form
/// (`Split`) is internal: another type can implement `ParSource` only by converting into
/// one of these.
///
/// ```
/// let pool = coretune_pool::ThreadPool::new(2)?;
/// let mut v = vec![1, 2, 3];
/// pool.for_each(&mut v, |x| *x *= 10); // &mut Vec<i32>: items are &mut i32
/// assert_eq!(pool.sum(&v, |x| *x), 60); // &Vec<i32>: items are &i32
/// assert_eq!(pool.sum(0..4, |i| i), 6); // Range<usize>: items are usize
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait ParSource: Sized {
    /// The item each call of the closure gets.
    type Item;
    /// The splittable form the pool works on (internal).
    type Split: split::Split<Item = Self::Item>;
    /// Converts into the splittable form.
    fn into_split(self) -> Self::Split;
}

mod split {
    /// A source of items that can be cut in two at any index (internal to the crate).
    pub trait Split: Sized + Send {
        /// The items.
        type Item;
        /// Iterates over the items, in order.
        type Iter: Iterator<Item = Self::Item>;
        /// Number of items.
        fn len(&self) -> usize;
        /// The first `mid` items and the rest (`mid <= len`).
        fn split_at(self, mid: usize) -> (Self, Self);
        /// The items, in order.
        fn into_iter(self) -> Self::Iter;
    }
}
use split::Split;

impl<'a, T: Sync> Split for &'a [T] {
    type Item = &'a T;
    type Iter = std::slice::Iter<'a, T>;
    fn len(&self) -> usize {
        <[T]>::len(self)
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        <[T]>::split_at(self, mid)
    }
    fn into_iter(self) -> Self::Iter {
        self.iter()
    }
}

impl<'a, T: Send> Split for &'a mut [T] {
    type Item = &'a mut T;
    type Iter = std::slice::IterMut<'a, T>;
    fn len(&self) -> usize {
        <[T]>::len(self)
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        <[T]>::split_at_mut(self, mid)
    }
    fn into_iter(self) -> Self::Iter {
        self.iter_mut()
    }
}

impl Split for Range<usize> {
    type Item = usize;
    type Iter = Range<usize>;
    fn len(&self) -> usize {
        self.end.saturating_sub(self.start)
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        let mid = self.start + mid;
        (self.start..mid, mid..self.end)
    }
    fn into_iter(self) -> Self::Iter {
        self
    }
}

impl<'a, T: Sync> ParSource for &'a [T] {
    type Item = &'a T;
    type Split = &'a [T];
    fn into_split(self) -> Self::Split {
        self
    }
}

impl<'a, T: Send> ParSource for &'a mut [T] {
    type Item = &'a mut T;
    type Split = &'a mut [T];
    fn into_split(self) -> Self::Split {
        self
    }
}

impl<'a, T: Sync> ParSource for &'a Vec<T> {
    type Item = &'a T;
    type Split = &'a [T];
    fn into_split(self) -> Self::Split {
        self
    }
}

impl<'a, T: Send> ParSource for &'a mut Vec<T> {
    type Item = &'a mut T;
    type Split = &'a mut [T];
    fn into_split(self) -> Self::Split {
        self
    }
}

impl ParSource for Range<usize> {
    type Item = usize;
    type Split = Range<usize>;
    fn into_split(self) -> Self::Split {
        self
    }
}

/// A source zipped with the output slots of `map_collect`.
struct Collect<'a, S, U> {
    source: S,
    out: &'a mut [MaybeUninit<U>],
}

impl<'a, S: Split, U: Send> Split for Collect<'a, S, U> {
    type Item = (S::Item, &'a mut MaybeUninit<U>);
    type Iter = std::iter::Zip<S::Iter, std::slice::IterMut<'a, MaybeUninit<U>>>;
    fn len(&self) -> usize {
        self.source.len()
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        let (source_left, source_right) = self.source.split_at(mid);
        let (out_left, out_right) = self.out.split_at_mut(mid);
        (
            Collect {
                source: source_left,
                out: out_left,
            },
            Collect {
                source: source_right,
                out: out_right,
            },
        )
    }
    fn into_iter(self) -> Self::Iter {
        self.source.into_iter().zip(self.out.iter_mut())
    }
}

/// The three operations of a parallel fold: a fresh accumulator, folding items into one,
/// and combining two (left, right).
struct Ops<ID, FO, C> {
    identity: ID,
    fold: FO,
    combine: C,
}

/// Folds `source` on `worker`, splitting as the module doc says.
fn drive<P, A, ID, FO, C>(worker: &WorkerThread, mut source: P, ops: &Ops<ID, FO, C>) -> A
where
    P: Split,
    A: Send,
    ID: Fn() -> A + Sync,
    FO: Fn(A, P::Iter) -> A + Sync,
    C: Fn(A, A) -> A + Sync,
{
    let throttle = worker.registry().throttle.as_deref();
    let mut acc = (ops.identity)();
    let max_block = (source.len() / LEAF_BLOCKS).clamp(1, MAX_BLOCK);
    let mut block = 1;
    loop {
        let len = source.len();
        if len >= 2 && worker.wants_split() {
            let (left, right) = source.split_at(len / 2);
            let (left, right) = join_worker(
                worker,
                |_| drive(worker, left, ops),
                |_| drive_here(right, ops),
            );
            return (ops.combine)((ops.combine)(acc, left), right);
        }
        if len <= block {
            return fold_block(throttle, acc, source, ops);
        }
        let (head, tail) = source.split_at(block);
        acc = fold_block(throttle, acc, head, ops);
        source = tail;
        block = (block * 2).min(max_block);
    }
}

/// Folds one block into `acc` and reports its items to the pool's throttle as completions,
/// so that an adaptive limit measures the items a data-parallel call works off.
fn fold_block<P, A, ID, FO, C>(
    throttle: Option<&Throttle>,
    acc: A,
    block: P,
    ops: &Ops<ID, FO, C>,
) -> A
where
    P: Split,
    FO: Fn(A, P::Iter) -> A,
{
    let items = block.len() as u64;
    let acc = (ops.fold)(acc, block.into_iter());
    if let Some(throttle) = throttle {
        throttle.record_completions(items);
    }
    acc
}

/// [`drive`] on the current worker (a stolen half runs on the thief); serially on a
/// thread that is no worker (not reached: jobs run on workers).
fn drive_here<P, A, ID, FO, C>(source: P, ops: &Ops<ID, FO, C>) -> A
where
    P: Split,
    A: Send,
    ID: Fn() -> A + Sync,
    FO: Fn(A, P::Iter) -> A + Sync,
    C: Fn(A, A) -> A + Sync,
{
    let mut source = Some(source);
    let result = WorkerThread::with_current(|worker| {
        let worker = worker?;
        Some(drive(worker, source.take()?, ops))
    });
    match (result, source) {
        (Some(result), _) => result,
        (None, Some(source)) => (ops.fold)((ops.identity)(), source.into_iter()),
        (None, None) => unreachable!("the source is taken only on a worker"),
    }
}

impl ThreadPool {
    /// Folds `source` on this pool (from any thread; from one of its workers without a
    /// hand-off).
    fn fold_split<P, A, ID, FO, C>(&self, source: P, ops: Ops<ID, FO, C>) -> A
    where
        P: Split,
        A: Send,
        ID: Fn() -> A + Sync,
        FO: Fn(A, P::Iter) -> A + Sync,
        C: Fn(A, A) -> A + Sync,
    {
        let registry = &self.registry;
        let outside =
            WorkerThread::with_current(|worker| !worker.is_some_and(|w| w.is_in(registry)));
        let share = source.len() / (registry.num_threads() + 1);
        if !(outside && registry.caller_shares && share > 0) {
            return in_worker(registry, |worker| drive(worker, source, &ops));
        }
        // The caller works off the first share itself (`caller_shares_data_parallel`).
        let (mine, theirs) = source.split_at(share);
        let ops = &ops;
        let (mine, theirs) = self.join(
            || fold_block(registry.throttle.as_deref(), (ops.identity)(), mine, ops),
            || in_worker(registry, |worker| drive(worker, theirs, ops)),
        );
        (ops.combine)(mine, theirs)
    }

    /// Calls `f` on every item of `items` in parallel, splitting the work automatically
    /// (see the `par` module doc: lazy binary splitting). Returns when every call returned;
    /// re-raises a panic of `f` once the calls in flight finished (items not reached yet
    /// may be skipped).
    ///
    /// The automatic form of [`par_for`](Self::par_for): no chunk size to choose.
    ///
    /// ```
    /// let pool = coretune_pool::ThreadPool::new(2)?;
    /// let mut v: Vec<u64> = (0..1000).collect();
    /// pool.for_each(&mut v, |x| *x *= 2);
    /// assert_eq!(v[999], 1998);
    /// let hits: Vec<std::sync::atomic::AtomicBool> = (0..100).map(|_| Default::default()).collect();
    /// pool.for_each(0..100, |i| hits[i].store(true, std::sync::atomic::Ordering::Relaxed));
    /// assert!(hits.iter().all(|h| h.load(std::sync::atomic::Ordering::Relaxed)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn for_each<S, F>(&self, items: S, f: F)
    where
        S: ParSource,
        F: Fn(S::Item) + Sync,
    {
        self.fold_split(
            items.into_split(),
            Ops {
                identity: || (),
                fold: |(), iter: <S::Split as Split>::Iter| iter.for_each(&f),
                combine: |(), ()| (),
            },
        );
    }

    /// `f` of every item, in the order of the items, computed in parallel (as rayon's
    /// `par_iter().map(f).collect::<Vec<_>>()`). Re-raises a panic of `f` (results made so
    /// far are leaked, not dropped).
    ///
    /// ```
    /// let pool = coretune_pool::ThreadPool::new(2)?;
    /// let words = ["a", "bb", "ccc"];
    /// assert_eq!(pool.map_collect(&words[..], |w| w.len()), [1, 2, 3]);
    /// assert_eq!(pool.map_collect(0..4, |i| i * i), [0, 1, 4, 9]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn map_collect<S, U, F>(&self, items: S, f: F) -> Vec<U>
    where
        S: ParSource,
        U: Send,
        F: Fn(S::Item) -> U + Sync,
    {
        let source = items.into_split();
        let len = source.len();
        let mut out: Vec<U> = Vec::with_capacity(len);
        self.fold_split(
            Collect {
                source,
                out: &mut out.spare_capacity_mut()[..len],
            },
            Ops {
                identity: || (),
                fold: |(), iter: <Collect<'_, S::Split, U> as Split>::Iter| {
                    iter.for_each(|(item, slot)| {
                        slot.write(f(item));
                    });
                },
                combine: |(), ()| (),
            },
        );
        // SAFETY: `fold_split` returned without unwinding, so it folded every item of the
        // source exactly once (the splits partition it), and the fold wrote each item's
        // result into its own slot among the first `len`.
        unsafe { out.set_len(len) };
        out
    }

    /// Maps every item with `map` and combines the results with `reduce`, in parallel;
    /// `identity()` is the result for no items, and is also where each part's fold starts,
    /// so it must be a neutral element of `reduce` (as for rayon's `reduce`). `reduce`
    /// must be associative; it need not be commutative (parts are combined left to right).
    ///
    /// ```
    /// let pool = coretune_pool::ThreadPool::new(2)?;
    /// let words = ["pool", "work", "stealing"];
    /// let longest = pool.reduce(&words[..], || "", |w| *w, |a, b| if b.len() > a.len() { b } else { a });
    /// assert_eq!(longest, "stealing");
    /// let max = pool.reduce(0..1000, || 0, |i| (i * 7919) % 1000, usize::max);
    /// assert_eq!(max, 999);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reduce<S, T, ID, M, R>(&self, items: S, identity: ID, map: M, reduce: R) -> T
    where
        S: ParSource,
        T: Send,
        ID: Fn() -> T + Sync,
        M: Fn(S::Item) -> T + Sync,
        R: Fn(T, T) -> T + Sync,
    {
        self.fold_split(
            items.into_split(),
            Ops {
                identity: &identity,
                fold: |acc, iter: <S::Split as Split>::Iter| {
                    iter.fold(acc, |acc, item| reduce(acc, map(item)))
                },
                combine: &reduce,
            },
        )
    }

    /// The sum of `f` over every item, in parallel (with `T`'s [`Sum`](std::iter::Sum)
    /// impl, which for integers panics on overflow in debug builds as a serial sum does).
    ///
    /// ```
    /// let pool = coretune_pool::ThreadPool::new(2)?;
    /// let v: Vec<u64> = (1..=100).collect();
    /// assert_eq!(pool.sum(&v, |x| x * x), 338_350);
    /// assert_eq!(pool.sum(0..0, |i| i as f64), 0.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sum<S, T, F>(&self, items: S, f: F) -> T
    where
        S: ParSource,
        T: std::iter::Sum<T> + Send,
        F: Fn(S::Item) -> T + Sync,
    {
        self.fold_split(
            items.into_split(),
            Ops {
                identity: || std::iter::empty::<T>().sum(),
                fold: |acc, iter: <S::Split as Split>::Iter| {
                    std::iter::once(acc).chain(iter.map(&f)).sum()
                },
                combine: |left, right| [left, right].into_iter().sum(),
            },
        )
    }
}
