//! [`ParallelSliceMut`]: `par_chunks_mut` and the parallel sorts.
//!
//! # How the sorts split
//!
//! Both cut the slice in two, sort the halves with `join` (so an idle worker steals one),
//! down to about four pieces per worker of the current pool, and sort each piece with the
//! standard library's sort of the same kind. A slice of at most [`SEQUENTIAL`] elements is
//! sorted on the calling thread.
//!
//! - Stable (`par_sort*`): a merge sort. The halves are sorted, then the whole is sorted
//!   again with `slice::sort_by`, which finds the two sorted runs and merges them in one
//!   linear pass (the standard library's stable sort is a run-detecting merge sort), so the
//!   result is stable as the standard library's is.
//! - Unstable (`par_sort_unstable*`): a quicksort that splits at the median:
//!   `select_nth_unstable_by` puts the median in the middle with the smaller elements
//!   before it and the others after (linear time, worst case included), so the halves are
//!   equal and no input makes the recursion deep.

use super::sources::ChunksMut;
use crate::global::{join, with_current_registry};
use crate::join::in_worker;
use std::cmp::Ordering;

/// Slices of at most this many elements are sorted on the calling thread: below it, a
/// hand-off to the pool costs more than it saves (a sort of 4,096 integers takes tens of
/// microseconds).
const SEQUENTIAL: usize = 4096;

/// Pieces per worker the sorts cut a slice into, so that a worker that finishes early
/// finds pieces left to steal.
const PIECES_PER_WORKER: usize = 4;

/// `par_chunks_mut` and the parallel sorts on mutable slices (and, through `DerefMut`,
/// vectors and arrays), as rayon's `ParallelSliceMut`.
///
/// ```
/// use coretune_pool::prelude::*;
/// let mut v = vec![5, 3, 9, 1, 7];
/// v.par_sort();
/// assert_eq!(v, [1, 3, 5, 7, 9]);
/// v.par_chunks_mut(2).for_each(|c| c.reverse());
/// assert_eq!(v, [3, 1, 7, 5, 9]);
/// ```
pub trait ParallelSliceMut<T: Send> {
    /// The slice.
    fn as_parallel_slice_mut(&mut self) -> &mut [T];

    /// A parallel iterator over chunks of `chunk_size` elements (the last may be shorter).
    ///
    /// # Panics
    ///
    /// If `chunk_size` is 0 (as `slice::chunks_mut`).
    fn par_chunks_mut(&mut self, chunk_size: usize) -> ChunksMut<'_, T> {
        ChunksMut::new(self.as_parallel_slice_mut(), chunk_size)
    }

    /// Sorts the slice, stable (equal elements keep their order), in parallel.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// let mut v: Vec<u32> = (0..10_000).rev().collect();
    /// v.par_sort();
    /// assert!(v.windows(2).all(|w| w[0] <= w[1]));
    /// ```
    fn par_sort(&mut self)
    where
        T: Ord,
    {
        merge_sort(self.as_parallel_slice_mut(), &T::cmp);
    }

    /// Sorts the slice by `compare`, stable, in parallel.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// let mut v = [3.5f64, -1.0, 2.25];
    /// v.par_sort_by(|a, b| a.total_cmp(b));
    /// assert_eq!(v, [-1.0, 2.25, 3.5]);
    /// ```
    fn par_sort_by<F>(&mut self, compare: F)
    where
        F: Fn(&T, &T) -> Ordering + Sync,
    {
        merge_sort(self.as_parallel_slice_mut(), &compare);
    }

    /// Sorts the slice by the key `f` gives each element (called on every comparison),
    /// stable, in parallel.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// let mut v = [(2, 'a'), (1, 'b'), (2, 'c'), (1, 'd')];
    /// v.par_sort_by_key(|pair| pair.0);
    /// assert_eq!(v, [(1, 'b'), (1, 'd'), (2, 'a'), (2, 'c')]);
    /// ```
    fn par_sort_by_key<K, F>(&mut self, f: F)
    where
        K: Ord,
        F: Fn(&T) -> K + Sync,
    {
        merge_sort(self.as_parallel_slice_mut(), &|a: &T, b: &T| {
            f(a).cmp(&f(b))
        });
    }

    /// Sorts the slice, not stable, in parallel.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// let mut v: Vec<i64> = (0..10_000).map(|i| (i * 7919) % 10_007).collect();
    /// v.par_sort_unstable();
    /// assert!(v.windows(2).all(|w| w[0] <= w[1]));
    /// ```
    fn par_sort_unstable(&mut self)
    where
        T: Ord,
    {
        quick_sort(self.as_parallel_slice_mut(), &T::cmp);
    }

    /// Sorts the slice by `compare`, not stable, in parallel.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// let mut v = [3, 1, 2];
    /// v.par_sort_unstable_by(|a, b| b.cmp(a));
    /// assert_eq!(v, [3, 2, 1]);
    /// ```
    fn par_sort_unstable_by<F>(&mut self, compare: F)
    where
        F: Fn(&T, &T) -> Ordering + Sync,
    {
        quick_sort(self.as_parallel_slice_mut(), &compare);
    }

    /// Sorts the slice by the key `f` gives each element, not stable, in parallel.
    ///
    /// ```
    /// use coretune_pool::prelude::*;
    /// let mut v = ["ccc", "a", "bb"];
    /// v.par_sort_unstable_by_key(|s| s.len());
    /// assert_eq!(v, ["a", "bb", "ccc"]);
    /// ```
    fn par_sort_unstable_by_key<K, F>(&mut self, f: F)
    where
        K: Ord,
        F: Fn(&T) -> K + Sync,
    {
        quick_sort(self.as_parallel_slice_mut(), &|a: &T, b: &T| {
            f(a).cmp(&f(b))
        });
    }
}

impl<T: Send> ParallelSliceMut<T> for [T] {
    fn as_parallel_slice_mut(&mut self) -> &mut [T] {
        self
    }
}

/// How many times to halve a slice: until about [`PIECES_PER_WORKER`] pieces per worker of
/// the current pool (rounded up to a power of two).
fn split_depth(workers: usize) -> u32 {
    workers
        .saturating_mul(PIECES_PER_WORKER)
        .next_power_of_two()
        .trailing_zeros()
}

/// Runs `sort(v, depth)` on a worker of the current pool, or here for a short slice.
fn on_pool<T: Send>(v: &mut [T], sort: impl FnOnce(&mut [T], u32) + Send) {
    if v.len() <= SEQUENTIAL {
        return sort(v, 0);
    }
    with_current_registry(|registry| {
        let depth = split_depth(registry.num_threads());
        in_worker(registry, |_worker| sort(v, depth));
    });
}

/// The stable sort (see the module doc).
fn merge_sort<T, F>(v: &mut [T], compare: &F)
where
    T: Send,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    fn sort<T: Send, F: Fn(&T, &T) -> Ordering + Sync>(v: &mut [T], compare: &F, depth: u32) {
        if depth == 0 || v.len() <= SEQUENTIAL {
            v.sort_by(compare);
            return;
        }
        let mid = v.len() / 2;
        let (left, right) = v.split_at_mut(mid);
        join(
            || sort(left, compare, depth - 1),
            || sort(right, compare, depth - 1),
        );
        // Two sorted runs: the standard library's stable sort merges them in one pass.
        v.sort_by(compare);
    }
    on_pool(v, |v, depth| sort(v, compare, depth));
}

/// The unstable sort (see the module doc).
fn quick_sort<T, F>(v: &mut [T], compare: &F)
where
    T: Send,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    fn sort<T: Send, F: Fn(&T, &T) -> Ordering + Sync>(v: &mut [T], compare: &F, depth: u32) {
        if depth == 0 || v.len() <= SEQUENTIAL {
            v.sort_unstable_by(compare);
            return;
        }
        let mid = v.len() / 2;
        let (left, _median, right) = v.select_nth_unstable_by(mid, compare);
        join(
            || sort(left, compare, depth - 1),
            || sort(right, compare, depth - 1),
        );
    }
    on_pool(v, |v, depth| sort(v, compare, depth));
}
