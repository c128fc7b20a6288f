//! The adaptors (`map`, `filter`, `enumerate`, `zip`, ...): the iterator types their
//! methods return, and how each one changes a producer's pieces and a folder's items. The
//! `ParallelIterator` impls that tie them to a source are in `traits.rs`, with the traits.

use super::plumbing::{Folder, IndexedProducer, Producer};
use std::fmt;
use std::ops::Range;

/// Debug for an adaptor: its base iterator only (closures have no `Debug`), as rayon's.
macro_rules! debug_base {
    ($name:ident < $($param:ident),* >) => {
        impl<I: fmt::Debug, $($param),*> fmt::Debug for $name<I, $($param),*> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("base", &self.base)
                    .finish_non_exhaustive()
            }
        }
    };
}

/// `map`: each item through a closure. From
/// [`ParallelIterator::map`](super::ParallelIterator::map).
#[must_use = "parallel iterators do nothing unless consumed"]
pub struct Map<I, F> {
    pub(crate) base: I,
    pub(crate) f: F,
}
debug_base!(Map<F>);

/// `copied`: `&T` items copied. From [`ParallelIterator::copied`](super::ParallelIterator::copied).
#[must_use = "parallel iterators do nothing unless consumed"]
#[derive(Debug)]
pub struct Copied<I> {
    pub(crate) base: I,
}

/// `cloned`: `&T` items cloned. From [`ParallelIterator::cloned`](super::ParallelIterator::cloned).
#[must_use = "parallel iterators do nothing unless consumed"]
#[derive(Debug)]
pub struct Cloned<I> {
    pub(crate) base: I,
}

/// `filter`: the items a predicate keeps. From
/// [`ParallelIterator::filter`](super::ParallelIterator::filter).
#[must_use = "parallel iterators do nothing unless consumed"]
pub struct Filter<I, P> {
    pub(crate) base: I,
    pub(crate) predicate: P,
}
debug_base!(Filter<P>);

/// `filter_map`: the `Some` results of a closure. From
/// [`ParallelIterator::filter_map`](super::ParallelIterator::filter_map).
#[must_use = "parallel iterators do nothing unless consumed"]
pub struct FilterMap<I, F> {
    pub(crate) base: I,
    pub(crate) f: F,
}
debug_base!(FilterMap<F>);

/// `flat_map`: the items of the parallel iterator a closure returns for each item. From
/// [`ParallelIterator::flat_map`](super::ParallelIterator::flat_map).
#[must_use = "parallel iterators do nothing unless consumed"]
pub struct FlatMap<I, F> {
    pub(crate) base: I,
    pub(crate) f: F,
}
debug_base!(FlatMap<F>);

/// `flat_map_iter`: the items of the sequential iterator a closure returns for each item.
/// From [`ParallelIterator::flat_map_iter`](super::ParallelIterator::flat_map_iter).
#[must_use = "parallel iterators do nothing unless consumed"]
pub struct FlatMapIter<I, F> {
    pub(crate) base: I,
    pub(crate) f: F,
}
debug_base!(FlatMapIter<F>);

/// `fold`: one accumulator per piece of work. From
/// [`ParallelIterator::fold`](super::ParallelIterator::fold).
#[must_use = "parallel iterators do nothing unless consumed"]
pub struct Fold<I, ID, F> {
    pub(crate) base: I,
    pub(crate) identity: ID,
    pub(crate) fold: F,
}
debug_base!(Fold<ID, F>);

/// `enumerate`: each item with its index. From
/// [`IndexedParallelIterator::enumerate`](super::IndexedParallelIterator::enumerate).
#[must_use = "parallel iterators do nothing unless consumed"]
#[derive(Debug)]
pub struct Enumerate<I> {
    pub(crate) base: I,
}

/// `zip`: pairs of items of two indexed iterators, as long as the shorter. From
/// [`IndexedParallelIterator::zip`](super::IndexedParallelIterator::zip).
#[must_use = "parallel iterators do nothing unless consumed"]
#[derive(Debug)]
pub struct Zip<A, B> {
    pub(crate) a: A,
    pub(crate) b: B,
}

/// A function applied to each item by a [`MapProducer`]: a borrowed closure, or copying
/// or cloning a reference.
pub trait MapOp<T>: Copy + Send {
    /// What an item becomes.
    type Output;
    /// Applies the function.
    fn call(&self, item: T) -> Self::Output;
}

impl<T, R, F: Fn(T) -> R + Sync> MapOp<T> for &F {
    type Output = R;
    #[inline]
    fn call(&self, item: T) -> R {
        (*self)(item)
    }
}

/// [`MapOp`] of [`Copied`].
#[derive(Clone, Copy, Debug)]
pub struct CopyOp;

impl<'a, T: Copy + 'a> MapOp<&'a T> for CopyOp {
    type Output = T;
    #[inline]
    fn call(&self, item: &'a T) -> T {
        *item
    }
}

/// [`MapOp`] of [`Cloned`].
#[derive(Clone, Copy, Debug)]
pub struct CloneOp;

impl<'a, T: Clone + 'a> MapOp<&'a T> for CloneOp {
    type Output = T;
    #[inline]
    fn call(&self, item: &'a T) -> T {
        item.clone()
    }
}

/// The producer of [`Map`], [`Copied`] and [`Cloned`].
#[derive(Debug)]
pub struct MapProducer<P, M> {
    pub(crate) base: P,
    pub(crate) op: M,
}

impl<P: Producer, M: MapOp<P::Item>> Producer for MapProducer<P, M> {
    type Item = M::Output;
    fn len(&self) -> usize {
        self.base.len()
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let (left, right) = self.base.split_at(index);
        let op = self.op;
        (
            MapProducer { base: left, op },
            MapProducer { base: right, op },
        )
    }
    fn fold_with<F: Folder<Self::Item>>(self, folder: F) -> F {
        let op = self.op;
        self.base.fold_with(MapFolder { base: folder, op }).base
    }
}

impl<P: IndexedProducer, M: MapOp<P::Item>> IndexedProducer for MapProducer<P, M> {
    type IntoIter = MapIter<P::IntoIter, M>;
    fn into_iter(self) -> Self::IntoIter {
        MapIter {
            iter: self.base.into_iter(),
            op: self.op,
        }
    }
}

/// The sequential iterator of a [`MapProducer`].
#[derive(Debug)]
pub struct MapIter<I, M> {
    iter: I,
    op: M,
}

impl<I: Iterator, M: MapOp<I::Item>> Iterator for MapIter<I, M> {
    type Item = M::Output;
    #[inline]
    fn next(&mut self) -> Option<M::Output> {
        self.iter.next().map(|item| self.op.call(item))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.iter.size_hint()
    }
    fn fold<B, G: FnMut(B, M::Output) -> B>(self, init: B, mut g: G) -> B {
        let op = self.op;
        self.iter.fold(init, move |acc, item| g(acc, op.call(item)))
    }
}

/// The folder of a [`MapProducer`].
#[derive(Debug)]
pub(crate) struct MapFolder<C, M> {
    base: C,
    op: M,
}

impl<T, C: Folder<M::Output>, M: MapOp<T>> Folder<T> for MapFolder<C, M> {
    type Result = C::Result;
    fn consume(self, item: T) -> Self {
        MapFolder {
            base: self.base.consume(self.op.call(item)),
            op: self.op,
        }
    }
    fn consume_iter<I: IntoIterator<Item = T>>(self, iter: I) -> Self {
        let op = self.op;
        MapFolder {
            base: self
                .base
                .consume_iter(iter.into_iter().map(move |item| op.call(item))),
            op,
        }
    }
    fn complete(self) -> C::Result {
        self.base.complete()
    }
    fn full(&self) -> bool {
        self.base.full()
    }
}

/// The producer of [`Filter`].
#[derive(Debug)]
pub struct FilterProducer<'f, P, F> {
    pub(crate) base: P,
    pub(crate) predicate: &'f F,
}

impl<P: Producer, F: Fn(&P::Item) -> bool + Sync> Producer for FilterProducer<'_, P, F> {
    type Item = P::Item;
    fn len(&self) -> usize {
        self.base.len()
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let (left, right) = self.base.split_at(index);
        let predicate = self.predicate;
        (
            FilterProducer {
                base: left,
                predicate,
            },
            FilterProducer {
                base: right,
                predicate,
            },
        )
    }
    fn fold_with<C: Folder<Self::Item>>(self, folder: C) -> C {
        let predicate = self.predicate;
        self.base
            .fold_with(FilterFolder {
                base: folder,
                predicate,
            })
            .base
    }
}

/// The folder of a [`FilterProducer`].
#[derive(Debug)]
pub(crate) struct FilterFolder<'f, C, F> {
    base: C,
    predicate: &'f F,
}

impl<T, C: Folder<T>, F: Fn(&T) -> bool> Folder<T> for FilterFolder<'_, C, F> {
    type Result = C::Result;
    fn consume(self, item: T) -> Self {
        if (self.predicate)(&item) {
            FilterFolder {
                base: self.base.consume(item),
                predicate: self.predicate,
            }
        } else {
            self
        }
    }
    fn consume_iter<I: IntoIterator<Item = T>>(self, iter: I) -> Self {
        let predicate = self.predicate;
        FilterFolder {
            base: self
                .base
                .consume_iter(iter.into_iter().filter(|item| predicate(item))),
            predicate,
        }
    }
    fn complete(self) -> C::Result {
        self.base.complete()
    }
    fn full(&self) -> bool {
        self.base.full()
    }
}

/// The producer of [`FilterMap`].
#[derive(Debug)]
pub struct FilterMapProducer<'f, P, F> {
    pub(crate) base: P,
    pub(crate) f: &'f F,
}

impl<P: Producer, R, F: Fn(P::Item) -> Option<R> + Sync> Producer for FilterMapProducer<'_, P, F> {
    type Item = R;
    fn len(&self) -> usize {
        self.base.len()
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let (left, right) = self.base.split_at(index);
        let f = self.f;
        (
            FilterMapProducer { base: left, f },
            FilterMapProducer { base: right, f },
        )
    }
    fn fold_with<C: Folder<R>>(self, folder: C) -> C {
        let f = self.f;
        self.base
            .fold_with(FilterMapFolder { base: folder, f })
            .base
    }
}

/// The folder of a [`FilterMapProducer`].
#[derive(Debug)]
pub(crate) struct FilterMapFolder<'f, C, F> {
    base: C,
    f: &'f F,
}

impl<T, R, C: Folder<R>, F: Fn(T) -> Option<R>> Folder<T> for FilterMapFolder<'_, C, F> {
    type Result = C::Result;
    fn consume(self, item: T) -> Self {
        match (self.f)(item) {
            Some(mapped) => FilterMapFolder {
                base: self.base.consume(mapped),
                f: self.f,
            },
            None => self,
        }
    }
    fn consume_iter<I: IntoIterator<Item = T>>(self, iter: I) -> Self {
        let f = self.f;
        FilterMapFolder {
            base: self.base.consume_iter(iter.into_iter().filter_map(f)),
            f,
        }
    }
    fn complete(self) -> C::Result {
        self.base.complete()
    }
    fn full(&self) -> bool {
        self.base.full()
    }
}

/// The producer of [`FlatMap`] (its `Producer` impl is in `traits.rs`: it drives each
/// item's parallel iterator).
#[derive(Debug)]
pub struct FlatMapProducer<'f, P, F> {
    pub(crate) base: P,
    pub(crate) f: &'f F,
}

/// The folder of a [`FlatMapProducer`]: each item's parallel iterator folded in turn
/// into the same folder.
#[derive(Debug)]
pub(crate) struct FlatMapFolder<'f, C, F> {
    pub(crate) base: C,
    pub(crate) f: &'f F,
}

/// The producer of [`FlatMapIter`].
#[derive(Debug)]
pub struct FlatMapIterProducer<'f, P, F> {
    pub(crate) base: P,
    pub(crate) f: &'f F,
}

impl<P, U, F> Producer for FlatMapIterProducer<'_, P, F>
where
    P: Producer,
    U: IntoIterator,
    F: Fn(P::Item) -> U + Sync,
{
    type Item = U::Item;
    fn len(&self) -> usize {
        self.base.len()
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let (left, right) = self.base.split_at(index);
        let f = self.f;
        (
            FlatMapIterProducer { base: left, f },
            FlatMapIterProducer { base: right, f },
        )
    }
    fn fold_with<C: Folder<U::Item>>(self, folder: C) -> C {
        let f = self.f;
        self.base
            .fold_with(FlatMapIterFolder { base: folder, f })
            .base
    }
}

/// The folder of a [`FlatMapIterProducer`].
#[derive(Debug)]
pub(crate) struct FlatMapIterFolder<'f, C, F> {
    base: C,
    f: &'f F,
}

impl<T, U, C, F> Folder<T> for FlatMapIterFolder<'_, C, F>
where
    U: IntoIterator,
    C: Folder<U::Item>,
    F: Fn(T) -> U,
{
    type Result = C::Result;
    fn consume(self, item: T) -> Self {
        FlatMapIterFolder {
            base: self.base.consume_iter((self.f)(item)),
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

/// The producer of [`Fold`]: one accumulator per piece folded.
#[derive(Debug)]
pub struct FoldProducer<'f, P, ID, F> {
    pub(crate) base: P,
    pub(crate) identity: &'f ID,
    pub(crate) fold: &'f F,
}

impl<P, T, ID, F> Producer for FoldProducer<'_, P, ID, F>
where
    P: Producer,
    ID: Fn() -> T + Sync,
    F: Fn(T, P::Item) -> T + Sync,
{
    type Item = T;
    fn len(&self) -> usize {
        self.base.len()
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let (left, right) = self.base.split_at(index);
        let (identity, fold) = (self.identity, self.fold);
        (
            FoldProducer {
                base: left,
                identity,
                fold,
            },
            FoldProducer {
                base: right,
                identity,
                fold,
            },
        )
    }
    fn fold_with<C: Folder<T>>(self, folder: C) -> C {
        let inner = self.base.fold_with(FoldFolder {
            base: folder,
            acc: (self.identity)(),
            fold: self.fold,
        });
        inner.base.consume(inner.acc)
    }
}

/// The folder of a [`FoldProducer`]: the piece's accumulator, and the folder it goes to
/// once the piece is folded.
#[derive(Debug)]
pub(crate) struct FoldFolder<'f, C, T, F> {
    base: C,
    acc: T,
    fold: &'f F,
}

impl<Item, T, C: Folder<T>, F: Fn(T, Item) -> T> Folder<Item> for FoldFolder<'_, C, T, F> {
    type Result = C::Result;
    fn consume(self, item: Item) -> Self {
        FoldFolder {
            acc: (self.fold)(self.acc, item),
            ..self
        }
    }
    fn consume_iter<I: IntoIterator<Item = Item>>(self, iter: I) -> Self {
        let fold = self.fold;
        FoldFolder {
            acc: iter.into_iter().fold(self.acc, fold),
            ..self
        }
    }
    fn complete(self) -> C::Result {
        self.base.consume(self.acc).complete()
    }
    fn full(&self) -> bool {
        self.base.full()
    }
}

/// The producer of [`Enumerate`]: its first item's index in the whole.
#[derive(Debug)]
pub struct EnumerateProducer<P> {
    pub(crate) base: P,
    pub(crate) offset: usize,
}

impl<P: IndexedProducer> Producer for EnumerateProducer<P> {
    type Item = (usize, P::Item);
    fn len(&self) -> usize {
        self.base.len()
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let (left, right) = self.base.split_at(index);
        (
            EnumerateProducer {
                base: left,
                offset: self.offset,
            },
            EnumerateProducer {
                base: right,
                offset: self.offset + index,
            },
        )
    }
    fn fold_with<C: Folder<Self::Item>>(self, folder: C) -> C {
        folder.consume_iter(self.into_iter())
    }
}

impl<P: IndexedProducer> IndexedProducer for EnumerateProducer<P> {
    type IntoIter = std::iter::Zip<Range<usize>, P::IntoIter>;
    fn into_iter(self) -> Self::IntoIter {
        let end = self.offset + self.base.len();
        (self.offset..end).zip(self.base.into_iter())
    }
}

/// The producer of [`Zip`]: both sides cut to the same length.
#[derive(Debug)]
pub struct ZipProducer<A, B> {
    pub(crate) a: A,
    pub(crate) b: B,
}

impl<A: IndexedProducer, B: IndexedProducer> ZipProducer<A, B> {
    /// Both producers cut to the shorter's length (the rest of the longer is dropped
    /// unread, as rayon's `zip` leaves it).
    pub(crate) fn new(a: A, b: B) -> Self {
        let len = a.len().min(b.len());
        ZipProducer {
            a: a.split_at(len).0,
            b: b.split_at(len).0,
        }
    }
}

impl<A: IndexedProducer, B: IndexedProducer> Producer for ZipProducer<A, B> {
    type Item = (A::Item, B::Item);
    fn len(&self) -> usize {
        self.a.len()
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let (a_left, a_right) = self.a.split_at(index);
        let (b_left, b_right) = self.b.split_at(index);
        (
            ZipProducer {
                a: a_left,
                b: b_left,
            },
            ZipProducer {
                a: a_right,
                b: b_right,
            },
        )
    }
    fn fold_with<C: Folder<Self::Item>>(self, folder: C) -> C {
        folder.consume_iter(self.into_iter())
    }
}

impl<A: IndexedProducer, B: IndexedProducer> IndexedProducer for ZipProducer<A, B> {
    type IntoIter = std::iter::Zip<A::IntoIter, B::IntoIter>;
    fn into_iter(self) -> Self::IntoIter {
        self.a.into_iter().zip(self.b.into_iter())
    }
}
