//! The sources: slices (`par_iter`, `par_iter_mut`, [`ParallelSlice::par_chunks`]), vectors
//! owned (`into_par_iter`, moving their items out), and integer ranges. Each is an indexed
//! parallel iterator, split by index.

use super::plumbing::{Folder, IndexedProducer, Producer};
use super::traits::{IndexedParallelIterator, IntoParallelIterator, ParallelIterator};
use std::ops::{Range, RangeInclusive};

/// The `ParallelIterator` and `IndexedParallelIterator` impls of a source whose producer
/// is `$producer`, made by `$make` from `&mut self`, `$len` items long.
macro_rules! source {
    (
        impl[$($generics:tt)*] $iter:ty => $producer:ty, item $item:ty,
        make |$this:ident| $make:expr, len |$that:ident| $len:expr
    ) => {
        impl<$($generics)*> ParallelIterator for $iter {
            type Item = $item;
            type Producer<'p>
                = $producer
            where
                Self: 'p;
            fn producer(&mut self) -> Self::Producer<'_> {
                let $this = self;
                $make
            }
            fn opt_len(&self) -> Option<usize> {
                let $that = self;
                Some($len)
            }
        }

        impl<$($generics)*> IndexedParallelIterator for $iter {
            type IndexedProducer<'p>
                = $producer
            where
                Self: 'p;
            fn indexed_producer(&mut self) -> Self::IndexedProducer<'_> {
                let $this = self;
                $make
            }
            fn len(&self) -> usize {
                let $that = self;
                $len
            }
        }
    };
}

/// `par_iter()` of a slice: `&T` items. From [`IntoParallelIterator`] for `&[T]`.
#[derive(Debug)]
#[must_use = "parallel iterators do nothing unless consumed"]
pub struct Iter<'data, T> {
    slice: &'data [T],
}

/// The producer of [`Iter`] and the other slice sources by reference.
#[derive(Debug)]
pub struct SliceProducer<'data, T>(&'data [T]);

impl<'data, T: Sync> Producer for SliceProducer<'data, T> {
    type Item = &'data T;
    fn len(&self) -> usize {
        self.0.len()
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let (left, right) = self.0.split_at(index);
        (SliceProducer(left), SliceProducer(right))
    }
    fn fold_with<F: Folder<&'data T>>(self, folder: F) -> F {
        folder.consume_iter(self.0)
    }
}

impl<'data, T: Sync> IndexedProducer for SliceProducer<'data, T> {
    type IntoIter = std::slice::Iter<'data, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

source!(impl['data, T: Sync + 'data] Iter<'data, T> => SliceProducer<'data, T>, item &'data T,
    make |this| SliceProducer(this.slice), len |this| this.slice.len());

/// `par_iter_mut()` of a slice: `&mut T` items. From [`IntoParallelIterator`] for
/// `&mut [T]`.
#[derive(Debug)]
#[must_use = "parallel iterators do nothing unless consumed"]
pub struct IterMut<'data, T> {
    slice: &'data mut [T],
}

/// The producer of [`IterMut`].
#[derive(Debug)]
pub struct SliceMutProducer<'data, T>(&'data mut [T]);

impl<'data, T: Send> Producer for SliceMutProducer<'data, T> {
    type Item = &'data mut T;
    fn len(&self) -> usize {
        self.0.len()
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let (left, right) = self.0.split_at_mut(index);
        (SliceMutProducer(left), SliceMutProducer(right))
    }
    fn fold_with<F: Folder<&'data mut T>>(self, folder: F) -> F {
        folder.consume_iter(self.0)
    }
}

impl<'data, T: Send> IndexedProducer for SliceMutProducer<'data, T> {
    type IntoIter = std::slice::IterMut<'data, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter_mut()
    }
}

// The producer takes the slice: a second call finds it empty.
source!(impl['data, T: Send + 'data] IterMut<'data, T> => SliceMutProducer<'data, T>,
    item &'data mut T,
    make |this| SliceMutProducer(std::mem::take(&mut this.slice)), len |this| this.slice.len());

/// `par_chunks(size)` of a slice: `&[T]` items of `size` elements (the last may be
/// shorter). From [`ParallelSlice::par_chunks`].
#[derive(Debug)]
#[must_use = "parallel iterators do nothing unless consumed"]
pub struct Chunks<'data, T> {
    slice: &'data [T],
    size: usize,
}

/// The producer of [`Chunks`]: its length counts chunks.
#[derive(Debug)]
pub struct ChunksProducer<'data, T> {
    slice: &'data [T],
    size: usize,
}

impl<'data, T: Sync> Producer for ChunksProducer<'data, T> {
    type Item = &'data [T];
    fn len(&self) -> usize {
        self.slice.len().div_ceil(self.size)
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let at = index.saturating_mul(self.size).min(self.slice.len());
        let (left, right) = self.slice.split_at(at);
        let size = self.size;
        (
            ChunksProducer { slice: left, size },
            ChunksProducer { slice: right, size },
        )
    }
    fn fold_with<F: Folder<&'data [T]>>(self, folder: F) -> F {
        folder.consume_iter(self.into_iter())
    }
}

impl<'data, T: Sync> IndexedProducer for ChunksProducer<'data, T> {
    type IntoIter = std::slice::Chunks<'data, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.slice.chunks(self.size)
    }
}

source!(impl['data, T: Sync + 'data] Chunks<'data, T> => ChunksProducer<'data, T>,
    item &'data [T],
    make |this| ChunksProducer { slice: this.slice, size: this.size },
    len |this| this.slice.len().div_ceil(this.size));

/// `par_chunks_mut(size)` of a slice: `&mut [T]` items of `size` elements (the last may be
/// shorter). From [`ParallelSliceMut::par_chunks_mut`](super::ParallelSliceMut::par_chunks_mut).
#[derive(Debug)]
#[must_use = "parallel iterators do nothing unless consumed"]
pub struct ChunksMut<'data, T> {
    slice: &'data mut [T],
    size: usize,
}

impl<'data, T> ChunksMut<'data, T> {
    /// Chunks of `size` (not 0) elements of `slice`.
    pub(crate) fn new(slice: &'data mut [T], size: usize) -> Self {
        assert!(size != 0, "chunk size must not be zero");
        ChunksMut { slice, size }
    }
}

/// The producer of [`ChunksMut`]: its length counts chunks.
#[derive(Debug)]
pub struct ChunksMutProducer<'data, T> {
    slice: &'data mut [T],
    size: usize,
}

impl<'data, T: Send> Producer for ChunksMutProducer<'data, T> {
    type Item = &'data mut [T];
    fn len(&self) -> usize {
        self.slice.len().div_ceil(self.size)
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let at = index.saturating_mul(self.size).min(self.slice.len());
        let (left, right) = self.slice.split_at_mut(at);
        let size = self.size;
        (
            ChunksMutProducer { slice: left, size },
            ChunksMutProducer { slice: right, size },
        )
    }
    fn fold_with<F: Folder<&'data mut [T]>>(self, folder: F) -> F {
        folder.consume_iter(self.into_iter())
    }
}

impl<'data, T: Send> IndexedProducer for ChunksMutProducer<'data, T> {
    type IntoIter = std::slice::ChunksMut<'data, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.slice.chunks_mut(self.size)
    }
}

source!(impl['data, T: Send + 'data] ChunksMut<'data, T> => ChunksMutProducer<'data, T>,
    item &'data mut [T],
    make |this| ChunksMutProducer { slice: std::mem::take(&mut this.slice), size: this.size },
    len |this| this.slice.len().div_ceil(this.size));

/// `par_chunks` on slices (and, through `Deref`, vectors and arrays), as rayon's
/// `ParallelSlice`.
///
/// ```
/// use coretune_pool::prelude::*;
/// let v: Vec<u32> = (1..=10).collect();
/// let sums: Vec<u32> = v.par_chunks(4).map(|c| c.iter().sum()).collect();
/// assert_eq!(sums, [10, 26, 19]);
/// ```
pub trait ParallelSlice<T: Sync> {
    /// The slice.
    fn as_parallel_slice(&self) -> &[T];

    /// A parallel iterator over chunks of `chunk_size` elements (the last may be shorter).
    ///
    /// # Panics
    ///
    /// If `chunk_size` is 0 (as `slice::chunks`).
    fn par_chunks(&self, chunk_size: usize) -> Chunks<'_, T> {
        assert!(chunk_size != 0, "chunk size must not be zero");
        Chunks {
            slice: self.as_parallel_slice(),
            size: chunk_size,
        }
    }
}

impl<T: Sync> ParallelSlice<T> for [T] {
    fn as_parallel_slice(&self) -> &[T] {
        self
    }
}

impl<'data, T: Sync + 'data> IntoParallelIterator for &'data [T] {
    type Iter = Iter<'data, T>;
    type Item = &'data T;
    fn into_par_iter(self) -> Iter<'data, T> {
        Iter { slice: self }
    }
}

impl<'data, T: Sync + 'data> IntoParallelIterator for &'data Vec<T> {
    type Iter = Iter<'data, T>;
    type Item = &'data T;
    fn into_par_iter(self) -> Iter<'data, T> {
        Iter { slice: self }
    }
}

impl<'data, T: Sync + 'data, const N: usize> IntoParallelIterator for &'data [T; N] {
    type Iter = Iter<'data, T>;
    type Item = &'data T;
    fn into_par_iter(self) -> Iter<'data, T> {
        Iter { slice: self }
    }
}

impl<'data, T: Send + 'data> IntoParallelIterator for &'data mut [T] {
    type Iter = IterMut<'data, T>;
    type Item = &'data mut T;
    fn into_par_iter(self) -> IterMut<'data, T> {
        IterMut { slice: self }
    }
}

impl<'data, T: Send + 'data> IntoParallelIterator for &'data mut Vec<T> {
    type Iter = IterMut<'data, T>;
    type Item = &'data mut T;
    fn into_par_iter(self) -> IterMut<'data, T> {
        IterMut { slice: self }
    }
}

impl<'data, T: Send + 'data, const N: usize> IntoParallelIterator for &'data mut [T; N] {
    type Iter = IterMut<'data, T>;
    type Item = &'data mut T;
    fn into_par_iter(self) -> IterMut<'data, T> {
        IterMut { slice: self }
    }
}

/// `into_par_iter()` of a `Vec<T>`: the items, moved out. From [`IntoParallelIterator`]
/// for `Vec<T>`.
#[derive(Debug)]
#[must_use = "parallel iterators do nothing unless consumed"]
pub struct IntoIter<T> {
    vec: Vec<T>,
}

impl<T: Send> IntoParallelIterator for Vec<T> {
    type Iter = IntoIter<T>;
    type Item = T;
    fn into_par_iter(self) -> IntoIter<T> {
        IntoIter { vec: self }
    }
}

/// The producer of [`IntoIter`]: owns the items of its part of the vector, moves each out
/// as it is folded, and drops the ones it did not reach.
#[derive(Debug)]
pub struct DrainProducer<'data, T> {
    slice: &'data mut [T],
}

impl<T> Drop for DrainProducer<'_, T> {
    fn drop(&mut self) {
        let rest = std::mem::take(&mut self.slice);
        // SAFETY: the producer owns the items of its slice (the vector's length was set to
        // 0 before they were handed to it), and none of them was moved out: a split or an
        // iteration takes the slice first.
        unsafe { std::ptr::drop_in_place(rest) };
    }
}

impl<'data, T: Send> Producer for DrainProducer<'data, T> {
    type Item = T;
    fn len(&self) -> usize {
        self.slice.len()
    }
    fn split_at(mut self, index: usize) -> (Self, Self) {
        let (left, right) = std::mem::take(&mut self.slice).split_at_mut(index);
        (
            DrainProducer { slice: left },
            DrainProducer { slice: right },
        )
    }
    fn fold_with<F: Folder<T>>(self, folder: F) -> F {
        folder.consume_iter(self.into_iter())
    }
}

impl<'data, T: Send> IndexedProducer for DrainProducer<'data, T> {
    type IntoIter = SliceDrain<'data, T>;
    fn into_iter(mut self) -> Self::IntoIter {
        SliceDrain {
            iter: std::mem::take(&mut self.slice).iter_mut(),
        }
    }
}

/// The sequential iterator of a [`DrainProducer`]: moves the items out in order, and
/// drops those not reached when it is dropped.
#[derive(Debug)]
pub struct SliceDrain<'data, T> {
    iter: std::slice::IterMut<'data, T>,
}

impl<T> Iterator for SliceDrain<'_, T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        let item = self.iter.next()?;
        // SAFETY: the iterator owns the items it has not passed yet (see `DrainProducer`),
        // and passes each once, so each is read once and never dropped in place after.
        Some(unsafe { std::ptr::read(item) })
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.iter.size_hint()
    }
}

impl<T> Drop for SliceDrain<'_, T> {
    fn drop(&mut self) {
        let rest = std::mem::take(&mut self.iter).into_slice();
        // SAFETY: the items not passed yet are owned here and were not read.
        unsafe { std::ptr::drop_in_place(rest) };
    }
}

source!(impl[T: Send] IntoIter<T> => DrainProducer<'p, T>, item T,
    make |this| {
        let len = this.vec.len();
        // SAFETY: from here the producer owns the items (it moves or drops each exactly
        // once); the vector keeps only its allocation, freed when it is dropped. The slice
        // borrows the vector mutably for as long as the producer lives.
        unsafe {
            this.vec.set_len(0);
            DrainProducer { slice: std::slice::from_raw_parts_mut(this.vec.as_mut_ptr(), len) }
        }
    },
    len |this| this.vec.len());

/// `into_par_iter()` of an integer range (`a..b` or `a..=b`) of `usize`, `u32`, `u64`,
/// `i32` or `i64`: the integers in order.
#[derive(Debug, Clone)]
#[must_use = "parallel iterators do nothing unless consumed"]
pub struct RangeIter<T> {
    start: T,
    end: T,
    /// `end` is an item (`a..=b`).
    inclusive: bool,
}

// One impl for every `Range<T>` (and `RangeInclusive<T>`) rather than one per integer type,
// as rayon's: with one, `(0..n).into_par_iter()` compiles before the integer type of `0`
// and `n` is known (it falls back to `i32` as in a serial loop).
impl<T> IntoParallelIterator for Range<T>
where
    T: Copy + PartialOrd + Send,
    RangeIter<T>: ParallelIterator<Item = T>,
{
    type Iter = RangeIter<T>;
    type Item = T;
    fn into_par_iter(self) -> RangeIter<T> {
        let end = if self.end < self.start {
            self.start
        } else {
            self.end
        };
        RangeIter {
            start: self.start,
            end,
            inclusive: false,
        }
    }
}

impl<T> IntoParallelIterator for RangeInclusive<T>
where
    T: Copy + PartialOrd + Send,
    RangeIter<T>: ParallelIterator<Item = T>,
{
    type Iter = RangeIter<T>;
    type Item = T;
    fn into_par_iter(self) -> RangeIter<T> {
        let empty = self.is_empty();
        let (start, end) = self.into_inner();
        RangeIter {
            start,
            end: if empty { start } else { end },
            inclusive: !empty,
        }
    }
}

/// The producer of [`RangeIter`]: `start..end`, then `last` if any (the end of an
/// inclusive range that ends at the type's maximum).
#[derive(Debug, Clone, Copy)]
pub struct RangeProducer<T> {
    start: T,
    end: T,
    last: Option<T>,
}

/// `RangeIter` for one integer type.
macro_rules! range_source {
    ($($t:ty),*) => {$(
        impl RangeProducer<$t> {
            /// The number of items; `None` if it does not fit a `usize`.
            fn exact_len(&self) -> Option<usize> {
                let span = (self.end as i128 - self.start as i128).max(0);
                usize::try_from(span + i128::from(self.last.is_some())).ok()
            }
        }

        impl Producer for RangeProducer<$t> {
            type Item = $t;
            fn len(&self) -> usize {
                self.exact_len().unwrap_or(usize::MAX)
            }
            fn split_at(self, index: usize) -> (Self, Self) {
                let span = (self.end as i128 - self.start as i128).max(0);
                if index as i128 <= span {
                    // `start + index` is at most `end`: it fits the type.
                    let mid = (self.start as i128 + index as i128) as $t;
                    (
                        RangeProducer { start: self.start, end: mid, last: None },
                        RangeProducer { start: mid, end: self.end, last: self.last },
                    )
                } else {
                    (self, RangeProducer { start: self.end, end: self.end, last: None })
                }
            }
            fn fold_with<F: Folder<$t>>(self, folder: F) -> F {
                folder.consume_iter(self.into_iter())
            }
        }

        impl IndexedProducer for RangeProducer<$t> {
            type IntoIter = std::iter::Chain<Range<$t>, std::option::IntoIter<$t>>;
            fn into_iter(self) -> Self::IntoIter {
                (self.start..self.end).chain(self.last)
            }
        }

        impl RangeIter<$t> {
            /// `start..end`, and `end` itself as `last` if the range includes it but
            /// `end + 1` does not fit the type.
            fn to_producer(&self) -> RangeProducer<$t> {
                let (start, end) = (self.start, self.end);
                match (self.inclusive, end.checked_add(1)) {
                    (false, _) => RangeProducer { start, end, last: None },
                    (true, Some(after)) => RangeProducer { start, end: after, last: None },
                    (true, None) => RangeProducer { start, end, last: Some(end) },
                }
            }
        }

        impl ParallelIterator for RangeIter<$t> {
            type Item = $t;
            type Producer<'p> = RangeProducer<$t>;
            fn producer(&mut self) -> RangeProducer<$t> {
                self.to_producer()
            }
            fn opt_len(&self) -> Option<usize> {
                self.to_producer().exact_len()
            }
        }

        /// Its length saturates at `usize::MAX` (only `0..=u64::MAX` and wider reach it).
        impl IndexedParallelIterator for RangeIter<$t> {
            type IndexedProducer<'p> = RangeProducer<$t>;
            fn indexed_producer(&mut self) -> RangeProducer<$t> {
                self.to_producer()
            }
            fn len(&self) -> usize {
                self.to_producer().len()
            }
        }

    )*};
}

range_source!(usize, u32, u64, i32, i64);
