//! The traits, with rayon's names and methods: [`ParallelIterator`] and its adaptors and
//! terminal operations, [`IndexedParallelIterator`], the conversions
//! ([`IntoParallelIterator`], [`IntoParallelRefIterator`], [`IntoParallelRefMutIterator`])
//! and [`FromParallelIterator`]; and which producer each adaptor hands the executor.

use super::adaptors::{
    CloneOp, Cloned, Copied, CopyOp, Enumerate, EnumerateProducer, Filter, FilterMap,
    FilterMapProducer, FilterProducer, FlatMap, FlatMapFolder, FlatMapIter, FlatMapIterProducer,
    FlatMapProducer, Fold, FoldProducer, Map, MapProducer, Zip, ZipProducer,
};
use super::bridge::bridge;
use super::plumbing::{Folder, IndexedProducer, Producer};
use super::terminal::{
    CountFolder, FindFolder, ForEachFolder, ProductFolder, ReduceFolder, ReduceWithFolder,
    SumFolder, collect_indexed, reduce_options,
};
use std::cmp::Ordering;
use std::iter::{Product, Sum};
use std::sync::atomic::AtomicBool;

/// A parallel iterator: items worked off by the current pool's threads (the pool of the
/// worker it is used on, inside [`ThreadPool::install`](crate::ThreadPool::install) that
/// pool, else the global pool), as rayon's `ParallelIterator`.
///
/// Nothing runs until a terminal operation ([`for_each`](Self::for_each),
/// [`collect`](Self::collect), [`sum`](Self::sum), [`reduce`](Self::reduce), ...). A panic
/// in a closure is re-raised in the caller once the pieces in flight have finished.
///
/// ```
/// use coretune_pool::prelude::*;
///
/// let evens: Vec<u64> = (0..100u64).into_par_iter().filter(|x| x % 2 == 0).collect();
/// assert_eq!(evens.len(), 50);
/// assert_eq!(evens.par_iter().map(|x| x / 2).sum::<u64>(), 49 * 50 / 2);
/// ```
pub trait ParallelIterator: Sized + Send {
    /// The items.
    type Item: Send;

    /// The producer this iterator hands the executor ([`plumbing`](super::plumbing)).
    type Producer<'a>: Producer<Item = Self::Item>
    where
        Self: 'a;

    /// The producer of the items (plumbing: called once, by the terminal operation).
    fn producer(&mut self) -> Self::Producer<'_>;

    /// The exact number of items, if known without running the iterator (an indexed one).
    fn opt_len(&self) -> Option<usize> {
        None
    }

    /// Calls `op` on every item, in parallel.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    ///
    /// let total = AtomicU64::new(0);
    /// (1..=10u64).into_par_iter().for_each(|x| { total.fetch_add(x, Ordering::Relaxed); });
    /// assert_eq!(total.into_inner(), 55);
    /// ```
    fn for_each<OP>(mut self, op: OP)
    where
        OP: Fn(Self::Item) + Sync + Send,
    {
        bridge(self.producer(), |_| ForEachFolder(&op), |(), ()| ());
    }

    /// Each item through `f`.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// let lengths: Vec<usize> = ["a", "bb", "ccc"].par_iter().map(|w| w.len()).collect();
    /// assert_eq!(lengths, [1, 2, 3]);
    /// ```
    fn map<F, R>(self, f: F) -> Map<Self, F>
    where
        F: Fn(Self::Item) -> R + Sync + Send,
        R: Send,
    {
        Map { base: self, f }
    }

    /// The items for which `predicate` is true.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// assert_eq!((0..10).into_par_iter().filter(|x| x % 3 == 0).count(), 4);
    /// ```
    fn filter<P>(self, predicate: P) -> Filter<Self, P>
    where
        P: Fn(&Self::Item) -> bool + Sync + Send,
    {
        Filter {
            base: self,
            predicate,
        }
    }

    /// The `Some` values of `f` of each item.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// let numbers: Vec<i32> = ["1", "x", "3"].par_iter().filter_map(|s| s.parse().ok()).collect();
    /// assert_eq!(numbers, [1, 3]);
    /// ```
    fn filter_map<F, R>(self, f: F) -> FilterMap<Self, F>
    where
        F: Fn(Self::Item) -> Option<R> + Sync + Send,
        R: Send,
    {
        FilterMap { base: self, f }
    }

    /// The items of the parallel iterator `f` returns for each item, in order (rayon's
    /// `flat_map`). Each inner iterator is worked off by the thread that made it; the outer
    /// items are what is split among threads.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// let pairs: Vec<(u32, u32)> = (0..3u32).into_par_iter()
    ///     .flat_map(|i| (0..i).into_par_iter().map(move |j| (i, j)))
    ///     .collect();
    /// assert_eq!(pairs, [(1, 0), (2, 0), (2, 1)]);
    /// ```
    fn flat_map<F, PI>(self, f: F) -> FlatMap<Self, F>
    where
        F: Fn(Self::Item) -> PI + Sync + Send,
        PI: IntoParallelIterator,
    {
        FlatMap { base: self, f }
    }

    /// The items of the sequential iterator `f` returns for each item, in order.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// let letters: String = ["ab", "cd"].par_iter().flat_map_iter(|s| s.chars()).collect();
    /// assert_eq!(letters, "abcd");
    /// ```
    fn flat_map_iter<F, SI>(self, f: F) -> FlatMapIter<Self, F>
    where
        F: Fn(Self::Item) -> SI + Sync + Send,
        SI: IntoIterator,
        SI::Item: Send,
    {
        FlatMapIter { base: self, f }
    }

    /// Copies of the items an iterator over references gives.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// let v = vec![1, 2, 3];
    /// let copy: Vec<i32> = v.par_iter().copied().collect();
    /// assert_eq!(copy, v);
    /// ```
    fn copied<'a, T>(self) -> Copied<Self>
    where
        T: 'a + Copy + Send + Sync,
        Self: ParallelIterator<Item = &'a T>,
    {
        Copied { base: self }
    }

    /// Clones of the items an iterator over references gives.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// let v = vec![String::from("a"), String::from("b")];
    /// let copy: Vec<String> = v.par_iter().cloned().collect();
    /// assert_eq!(copy, v);
    /// ```
    fn cloned<'a, T>(self) -> Cloned<Self>
    where
        T: 'a + Clone + Send + Sync,
        Self: ParallelIterator<Item = &'a T>,
    {
        Cloned { base: self }
    }

    /// Folds the items of each piece of work into an accumulator that starts at
    /// `identity()`: an iterator over the accumulators (one per piece; how many depends on
    /// how the work was split), usually ended by [`reduce`](Self::reduce).
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// use std::collections::HashMap;
    ///
    /// let words = ["a", "b", "a", "c", "a"];
    /// let counts = words
    ///     .par_iter()
    ///     .fold(HashMap::new, |mut map, w| { *map.entry(*w).or_insert(0) += 1; map })
    ///     .reduce(HashMap::new, |mut a, b| {
    ///         for (w, n) in b { *a.entry(w).or_insert(0) += n; }
    ///         a
    ///     });
    /// assert_eq!(counts["a"], 3);
    /// ```
    fn fold<T, ID, F>(self, identity: ID, fold_op: F) -> Fold<Self, ID, F>
    where
        F: Fn(T, Self::Item) -> T + Sync + Send,
        ID: Fn() -> T + Sync + Send,
        T: Send,
    {
        Fold {
            base: self,
            identity,
            fold: fold_op,
        }
    }

    /// The items combined with `op`, left to right within each piece and between pieces;
    /// `identity()` for no items, and where each piece starts, so it must be a neutral
    /// element of `op`. `op` must be associative.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// assert_eq!((1..=5u64).into_par_iter().reduce(|| 1, |a, b| a * b), 120);
    /// ```
    fn reduce<OP, ID>(mut self, identity: ID, op: OP) -> Self::Item
    where
        OP: Fn(Self::Item, Self::Item) -> Self::Item + Sync + Send,
        ID: Fn() -> Self::Item + Sync + Send,
    {
        bridge(
            self.producer(),
            |_| ReduceFolder {
                acc: identity(),
                reduce: &op,
            },
            &op,
        )
    }

    /// The items combined with `op`; `None` for no items.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// assert_eq!((1..=4).into_par_iter().reduce_with(|a, b| a + b), Some(10));
    /// assert_eq!((0..0).into_par_iter().reduce_with(|a, b| a + b), None);
    /// ```
    fn reduce_with<OP>(mut self, op: OP) -> Option<Self::Item>
    where
        OP: Fn(Self::Item, Self::Item) -> Self::Item + Sync + Send,
    {
        bridge(
            self.producer(),
            |_| ReduceWithFolder {
                acc: None,
                reduce: &op,
            },
            |left, right| reduce_options(&op, left, right),
        )
    }

    /// The sum of the items (with `S`'s `Sum`, so an integer overflow panics in debug
    /// builds, as a serial sum does).
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// assert_eq!((1..=100u64).into_par_iter().sum::<u64>(), 5050);
    /// ```
    fn sum<S>(mut self) -> S
    where
        S: Send + Sum<Self::Item> + Sum<S>,
    {
        bridge(
            self.producer(),
            |_| SumFolder(std::iter::empty::<S>().sum()),
            |left, right| [left, right].into_iter().sum(),
        )
    }

    /// The product of the items.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// assert_eq!((1..=5u64).into_par_iter().product::<u64>(), 120);
    /// ```
    fn product<P>(mut self) -> P
    where
        P: Send + Product<Self::Item> + Product<P>,
    {
        bridge(
            self.producer(),
            |_| ProductFolder(std::iter::empty::<P>().product()),
            |left, right| [left, right].into_iter().product(),
        )
    }

    /// The number of items.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// assert_eq!((0..1000).into_par_iter().filter(|x| x % 7 == 0).count(), 143);
    /// ```
    fn count(mut self) -> usize {
        bridge(self.producer(), |_| CountFolder(0), |a, b| a + b)
    }

    /// The smallest item (the first of equal ones); `None` for no items.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// assert_eq!([3, 1, 2].par_iter().min(), Some(&1));
    /// ```
    fn min(self) -> Option<Self::Item>
    where
        Self::Item: Ord,
    {
        self.reduce_with(Ord::min)
    }

    /// The smallest item by `compare` (the first of equal ones).
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// assert_eq!([1.5f64, -2.0, 3.0].par_iter().min_by(|a, b| a.total_cmp(b)), Some(&-2.0));
    /// ```
    fn min_by<F>(self, compare: F) -> Option<Self::Item>
    where
        F: Fn(&Self::Item, &Self::Item) -> Ordering + Sync + Send,
    {
        extreme_by(self, compare, Ordering::is_gt)
    }

    /// The item with the smallest key (the first of equal ones).
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// assert_eq!(["ccc", "a", "bb", "b"].par_iter().min_by_key(|w| w.len()), Some(&"a"));
    /// ```
    fn min_by_key<K, F>(self, f: F) -> Option<Self::Item>
    where
        K: Ord + Send,
        F: Fn(&Self::Item) -> K + Sync + Send,
    {
        extreme_by_key(self, f, Ordering::is_gt)
    }

    /// The largest item (the last of equal ones); `None` for no items.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// assert_eq!([3, 1, 2].par_iter().max(), Some(&3));
    /// ```
    fn max(self) -> Option<Self::Item>
    where
        Self::Item: Ord,
    {
        self.reduce_with(Ord::max)
    }

    /// The largest item by `compare` (the last of equal ones).
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// assert_eq!([1.5f64, -2.0, 3.0].par_iter().max_by(|a, b| a.total_cmp(b)), Some(&3.0));
    /// ```
    fn max_by<F>(self, compare: F) -> Option<Self::Item>
    where
        F: Fn(&Self::Item, &Self::Item) -> Ordering + Sync + Send,
    {
        extreme_by(self, compare, Ordering::is_le)
    }

    /// The item with the largest key (the last of equal ones).
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// assert_eq!(["ccc", "a", "bb", "ddd"].par_iter().max_by_key(|w| w.len()), Some(&"ddd"));
    /// ```
    fn max_by_key<K, F>(self, f: F) -> Option<Self::Item>
    where
        K: Ord + Send,
        F: Fn(&Self::Item) -> K + Sync + Send,
    {
        extreme_by_key(self, f, Ordering::is_le)
    }

    /// Some item for which `predicate` is true, not necessarily the first; once one is
    /// found, the pieces not started yet are skipped and the others stop early.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// let found = (0..1_000_000u64).into_par_iter().find_any(|x| x % 1000 == 999);
    /// assert!(found.is_some_and(|x| x % 1000 == 999));
    /// ```
    fn find_any<P>(mut self, predicate: P) -> Option<Self::Item>
    where
        P: Fn(&Self::Item) -> bool + Sync + Send,
    {
        let found = AtomicBool::new(false);
        bridge(
            self.producer(),
            |_| FindFolder {
                item: None,
                predicate: &predicate,
                found: &found,
            },
            Option::or,
        )
    }

    /// Whether `predicate` is true for some item (stopping early once it is).
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// assert!((0..100).into_par_iter().any(|x| x == 42));
    /// ```
    fn any<P>(self, predicate: P) -> bool
    where
        P: Fn(Self::Item) -> bool + Sync + Send,
    {
        self.map(predicate).find_any(|hit| *hit).is_some()
    }

    /// Whether `predicate` is true for every item (stopping early once it is not).
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// assert!((0..100).into_par_iter().all(|x| x < 100));
    /// ```
    fn all<P>(self, predicate: P) -> bool
    where
        P: Fn(Self::Item) -> bool + Sync + Send,
    {
        self.map(predicate).find_any(|hit| !*hit).is_none()
    }

    /// Collects the items into `C`: a `Vec` (in order), a `HashMap`, a `String`, ...
    /// (see [`FromParallelIterator`]).
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// let squares: Vec<u32> = (0..5u32).into_par_iter().map(|x| x * x).collect();
    /// assert_eq!(squares, [0, 1, 4, 9, 16]);
    /// ```
    fn collect<C>(self) -> C
    where
        C: FromParallelIterator<Self::Item>,
    {
        C::from_par_iter(self)
    }
}

/// The smallest or largest item of `iter` by `compare`: of two neighbours, the right one is
/// kept when `right_wins(compare(left, right))` (`is_gt` keeps the first of equal smallest,
/// `is_le` the last of equal largest, as rayon's and the standard library's `min_by` and
/// `max_by` do).
fn extreme_by<I, F>(iter: I, compare: F, right_wins: fn(Ordering) -> bool) -> Option<I::Item>
where
    I: ParallelIterator,
    F: Fn(&I::Item, &I::Item) -> Ordering + Sync + Send,
{
    iter.reduce_with(move |a, b| if right_wins(compare(&a, &b)) { b } else { a })
}

/// [`extreme_by`] of the keys `f` gives, each computed once.
fn extreme_by_key<I, K, F>(iter: I, f: F, right_wins: fn(Ordering) -> bool) -> Option<I::Item>
where
    I: ParallelIterator,
    K: Ord + Send,
    F: Fn(&I::Item) -> K + Sync + Send,
{
    let keyed = iter.map(move |item| (f(&item), item));
    let (_, item) = extreme_by(keyed, |a, b| a.0.cmp(&b.0), right_wins)?;
    Some(item)
}

/// A parallel iterator that knows its exact length and where each item is, as rayon's
/// `IndexedParallelIterator`: slices, vectors, ranges, chunks, and `map`, `copied`,
/// `cloned`, `enumerate` and `zip` of them.
// No `is_empty`, as rayon's trait has none.
#[allow(clippy::len_without_is_empty)]
pub trait IndexedParallelIterator: ParallelIterator {
    /// The producer of an indexed iterator: exact length, iterable from the outside.
    type IndexedProducer<'a>: IndexedProducer<Item = Self::Item>
    where
        Self: 'a;

    /// The indexed producer of the items (plumbing: called once).
    fn indexed_producer(&mut self) -> Self::IndexedProducer<'_>;

    /// The number of items.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// assert_eq!((0..10).into_par_iter().map(|x| x * 2).len(), 10);
    /// ```
    fn len(&self) -> usize;

    /// Each item with its index: `(0, first)`, `(1, second)`, ...
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// let v: Vec<(usize, char)> = ['a', 'b'].par_iter().copied().enumerate().collect();
    /// assert_eq!(v, [(0, 'a'), (1, 'b')]);
    /// ```
    fn enumerate(self) -> Enumerate<Self> {
        Enumerate { base: self }
    }

    /// Pairs of this iterator's items and `other`'s, as many as the shorter has.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// let a = [1, 2, 3];
    /// let b = [10, 20];
    /// let sums: Vec<i32> = a.par_iter().zip(&b).map(|(x, y)| x + y).collect();
    /// assert_eq!(sums, [11, 22]);
    /// ```
    fn zip<Z>(self, other: Z) -> Zip<Self, Z::Iter>
    where
        Z: IntoParallelIterator,
        Z::Iter: IndexedParallelIterator,
    {
        Zip {
            a: self,
            b: other.into_par_iter(),
        }
    }

    /// Replaces the contents of `target` with the items, in order, reusing its allocation.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// let mut out = vec![7; 100];
    /// (0..3).into_par_iter().collect_into_vec(&mut out);
    /// assert_eq!(out, [0, 1, 2]);
    /// ```
    fn collect_into_vec(mut self, target: &mut Vec<Self::Item>) {
        target.clear();
        let len = self.len();
        collect_indexed(self.indexed_producer(), len, target);
    }
}

/// A value that can become a parallel iterator, as rayon's `IntoParallelIterator`: every
/// parallel iterator, `Vec<T>` (owning its items), `&[T]`, `&Vec<T>`, `&mut [T]`,
/// `&mut Vec<T>`, arrays by reference, and ranges (`a..b`, `a..=b`) of `usize`, `u32`,
/// `u64`, `i32` and `i64`.
///
/// ```
/// use coretune_pool::prelude::*;
/// let words = vec![String::from("a"), String::from("bb")];
/// let total: usize = words.into_par_iter().map(|w| w.len()).sum();
/// assert_eq!(total, 3);
/// ```
pub trait IntoParallelIterator {
    /// The parallel iterator.
    type Iter: ParallelIterator<Item = Self::Item>;
    /// Its items.
    type Item: Send;
    /// Converts into the parallel iterator.
    fn into_par_iter(self) -> Self::Iter;
}

impl<I: ParallelIterator> IntoParallelIterator for I {
    type Iter = I;
    type Item = I::Item;
    fn into_par_iter(self) -> I {
        self
    }
}

/// `par_iter()`: a parallel iterator over references to a collection's items, for every
/// type whose reference is [`IntoParallelIterator`] (as rayon's).
///
/// ```
/// use coretune_pool::prelude::*;
/// let v = vec![1, 2, 3];
/// assert_eq!(v.par_iter().sum::<i32>(), 6);
/// ```
pub trait IntoParallelRefIterator<'data> {
    /// The parallel iterator.
    type Iter: ParallelIterator<Item = Self::Item>;
    /// Its items (references).
    type Item: Send + 'data;
    /// A parallel iterator over references to the items.
    fn par_iter(&'data self) -> Self::Iter;
}

impl<'data, I: 'data + ?Sized> IntoParallelRefIterator<'data> for I
where
    &'data I: IntoParallelIterator,
{
    type Iter = <&'data I as IntoParallelIterator>::Iter;
    type Item = <&'data I as IntoParallelIterator>::Item;
    fn par_iter(&'data self) -> Self::Iter {
        self.into_par_iter()
    }
}

/// `par_iter_mut()`: a parallel iterator over mutable references to a collection's items,
/// for every type whose mutable reference is [`IntoParallelIterator`] (as rayon's).
///
/// ```
/// use coretune_pool::prelude::*;
/// let mut v = vec![1, 2, 3];
/// v.par_iter_mut().for_each(|x| *x *= 10);
/// assert_eq!(v, [10, 20, 30]);
/// ```
pub trait IntoParallelRefMutIterator<'data> {
    /// The parallel iterator.
    type Iter: ParallelIterator<Item = Self::Item>;
    /// Its items (mutable references).
    type Item: Send + 'data;
    /// A parallel iterator over mutable references to the items.
    fn par_iter_mut(&'data mut self) -> Self::Iter;
}

impl<'data, I: 'data + ?Sized> IntoParallelRefMutIterator<'data> for I
where
    &'data mut I: IntoParallelIterator,
{
    type Iter = <&'data mut I as IntoParallelIterator>::Iter;
    type Item = <&'data mut I as IntoParallelIterator>::Item;
    fn par_iter_mut(&'data mut self) -> Self::Iter {
        self.into_par_iter()
    }
}

/// A collection that [`ParallelIterator::collect`] can build, as rayon's
/// `FromParallelIterator`: `Vec<T>` (items in order), `HashMap`, `HashSet`, `BTreeMap`,
/// `BTreeSet`, `String` (from `char`, `&str` or `String` items), `()`, and
/// `Result<C, E>` / `Option<C>` of any of these (the first error, or `None`, in the
/// items' order).
///
/// ```
/// use coretune_pool::prelude::*;
/// use std::collections::HashMap;
/// let squares: HashMap<u32, u32> = (0..4u32).into_par_iter().map(|x| (x, x * x)).collect();
/// assert_eq!(squares[&3], 9);
/// let parsed: Result<Vec<i32>, _> = ["1", "2"].par_iter().map(|s| s.parse::<i32>()).collect();
/// assert_eq!(parsed, Ok(vec![1, 2]));
/// ```
pub trait FromParallelIterator<T: Send>: Sized {
    /// Builds the collection from the items of `par_iter`.
    fn from_par_iter<I>(par_iter: I) -> Self
    where
        I: IntoParallelIterator<Item = T>;
}

// Which producer each adaptor hands the executor.

impl<I, F, R> ParallelIterator for Map<I, F>
where
    I: ParallelIterator,
    F: Fn(I::Item) -> R + Sync + Send,
    R: Send,
{
    type Item = R;
    type Producer<'a>
        = MapProducer<I::Producer<'a>, &'a F>
    where
        Self: 'a;
    fn producer(&mut self) -> Self::Producer<'_> {
        MapProducer {
            base: self.base.producer(),
            op: &self.f,
        }
    }
    fn opt_len(&self) -> Option<usize> {
        self.base.opt_len()
    }
}

impl<I, F, R> IndexedParallelIterator for Map<I, F>
where
    I: IndexedParallelIterator,
    F: Fn(I::Item) -> R + Sync + Send,
    R: Send,
{
    type IndexedProducer<'a>
        = MapProducer<I::IndexedProducer<'a>, &'a F>
    where
        Self: 'a;
    fn indexed_producer(&mut self) -> Self::IndexedProducer<'_> {
        MapProducer {
            base: self.base.indexed_producer(),
            op: &self.f,
        }
    }
    fn len(&self) -> usize {
        self.base.len()
    }
}

/// The `ParallelIterator` and `IndexedParallelIterator` impls of `Copied` and `Cloned`:
/// a map with a fixed function.
macro_rules! map_by_reference {
    ($name:ident, $op:ident, $bound:ident) => {
        impl<'r, T, I> ParallelIterator for $name<I>
        where
            I: ParallelIterator<Item = &'r T>,
            T: 'r + $bound + Send + Sync,
        {
            type Item = T;
            type Producer<'a>
                = MapProducer<I::Producer<'a>, $op>
            where
                Self: 'a;
            fn producer(&mut self) -> Self::Producer<'_> {
                MapProducer {
                    base: self.base.producer(),
                    op: $op,
                }
            }
            fn opt_len(&self) -> Option<usize> {
                self.base.opt_len()
            }
        }

        impl<'r, T, I> IndexedParallelIterator for $name<I>
        where
            I: IndexedParallelIterator<Item = &'r T>,
            T: 'r + $bound + Send + Sync,
        {
            type IndexedProducer<'a>
                = MapProducer<I::IndexedProducer<'a>, $op>
            where
                Self: 'a;
            fn indexed_producer(&mut self) -> Self::IndexedProducer<'_> {
                MapProducer {
                    base: self.base.indexed_producer(),
                    op: $op,
                }
            }
            fn len(&self) -> usize {
                self.base.len()
            }
        }
    };
}

map_by_reference!(Copied, CopyOp, Copy);
map_by_reference!(Cloned, CloneOp, Clone);

impl<I, P> ParallelIterator for Filter<I, P>
where
    I: ParallelIterator,
    P: Fn(&I::Item) -> bool + Sync + Send,
{
    type Item = I::Item;
    type Producer<'a>
        = FilterProducer<'a, I::Producer<'a>, P>
    where
        Self: 'a;
    fn producer(&mut self) -> Self::Producer<'_> {
        FilterProducer {
            base: self.base.producer(),
            predicate: &self.predicate,
        }
    }
}

impl<I, F, R> ParallelIterator for FilterMap<I, F>
where
    I: ParallelIterator,
    F: Fn(I::Item) -> Option<R> + Sync + Send,
    R: Send,
{
    type Item = R;
    type Producer<'a>
        = FilterMapProducer<'a, I::Producer<'a>, F>
    where
        Self: 'a;
    fn producer(&mut self) -> Self::Producer<'_> {
        FilterMapProducer {
            base: self.base.producer(),
            f: &self.f,
        }
    }
}

impl<I, F, PI> ParallelIterator for FlatMap<I, F>
where
    I: ParallelIterator,
    F: Fn(I::Item) -> PI + Sync + Send,
    PI: IntoParallelIterator,
{
    type Item = PI::Item;
    type Producer<'a>
        = FlatMapProducer<'a, I::Producer<'a>, F>
    where
        Self: 'a;
    fn producer(&mut self) -> Self::Producer<'_> {
        FlatMapProducer {
            base: self.base.producer(),
            f: &self.f,
        }
    }
}

// `flat_map`'s producer and folder drive each item's parallel iterator, so they need the
// traits above: their impls are here rather than in `adaptors.rs`.
impl<P, F, PI> Producer for FlatMapProducer<'_, P, F>
where
    P: Producer,
    F: Fn(P::Item) -> PI + Sync,
    PI: IntoParallelIterator,
{
    type Item = PI::Item;
    fn len(&self) -> usize {
        self.base.len()
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let (left, right) = self.base.split_at(index);
        let f = self.f;
        (
            FlatMapProducer { base: left, f },
            FlatMapProducer { base: right, f },
        )
    }
    fn fold_with<C: Folder<PI::Item>>(self, folder: C) -> C {
        let f = self.f;
        self.base.fold_with(FlatMapFolder { base: folder, f }).base
    }
}

impl<T, C, F, PI> Folder<T> for FlatMapFolder<'_, C, F>
where
    F: Fn(T) -> PI,
    PI: IntoParallelIterator,
    C: Folder<PI::Item>,
{
    type Result = C::Result;
    fn consume(self, item: T) -> Self {
        let mut inner = (self.f)(item).into_par_iter();
        FlatMapFolder {
            base: inner.producer().fold_with(self.base),
            f: self.f,
        }
    }
    fn complete(self) -> C::Result {
        self.base.complete()
    }
    fn full(&self) -> bool {
        self.base.full()
    }
}

impl<I, F, SI> ParallelIterator for FlatMapIter<I, F>
where
    I: ParallelIterator,
    F: Fn(I::Item) -> SI + Sync + Send,
    SI: IntoIterator,
    SI::Item: Send,
{
    type Item = SI::Item;
    type Producer<'a>
        = FlatMapIterProducer<'a, I::Producer<'a>, F>
    where
        Self: 'a;
    fn producer(&mut self) -> Self::Producer<'_> {
        FlatMapIterProducer {
            base: self.base.producer(),
            f: &self.f,
        }
    }
}

impl<I, T, ID, F> ParallelIterator for Fold<I, ID, F>
where
    I: ParallelIterator,
    F: Fn(T, I::Item) -> T + Sync + Send,
    ID: Fn() -> T + Sync + Send,
    T: Send,
{
    type Item = T;
    type Producer<'a>
        = FoldProducer<'a, I::Producer<'a>, ID, F>
    where
        Self: 'a;
    fn producer(&mut self) -> Self::Producer<'_> {
        FoldProducer {
            base: self.base.producer(),
            identity: &self.identity,
            fold: &self.fold,
        }
    }
}

impl<I: IndexedParallelIterator> ParallelIterator for Enumerate<I> {
    type Item = (usize, I::Item);
    type Producer<'a>
        = EnumerateProducer<I::IndexedProducer<'a>>
    where
        Self: 'a;
    fn producer(&mut self) -> Self::Producer<'_> {
        self.indexed_producer()
    }
    fn opt_len(&self) -> Option<usize> {
        self.base.opt_len()
    }
}

impl<I: IndexedParallelIterator> IndexedParallelIterator for Enumerate<I> {
    type IndexedProducer<'a>
        = EnumerateProducer<I::IndexedProducer<'a>>
    where
        Self: 'a;
    fn indexed_producer(&mut self) -> Self::IndexedProducer<'_> {
        EnumerateProducer {
            base: self.base.indexed_producer(),
            offset: 0,
        }
    }
    fn len(&self) -> usize {
        self.base.len()
    }
}

impl<A: IndexedParallelIterator, B: IndexedParallelIterator> ParallelIterator for Zip<A, B> {
    type Item = (A::Item, B::Item);
    type Producer<'a>
        = ZipProducer<A::IndexedProducer<'a>, B::IndexedProducer<'a>>
    where
        Self: 'a;
    fn producer(&mut self) -> Self::Producer<'_> {
        self.indexed_producer()
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.a.opt_len()?.min(self.b.opt_len()?))
    }
}

impl<A: IndexedParallelIterator, B: IndexedParallelIterator> IndexedParallelIterator for Zip<A, B> {
    type IndexedProducer<'a>
        = ZipProducer<A::IndexedProducer<'a>, B::IndexedProducer<'a>>
    where
        Self: 'a;
    fn indexed_producer(&mut self) -> Self::IndexedProducer<'_> {
        ZipProducer::new(self.a.indexed_producer(), self.b.indexed_producer())
    }
    fn len(&self) -> usize {
        self.a.len().min(self.b.len())
    }
}
