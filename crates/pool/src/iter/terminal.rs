//! The folders of the operations that end a parallel iterator (`for_each`, `reduce`, `sum`,
//! `count`, `find_any`, ...): what one piece of work folds into. The executor combines the
//! pieces' results (`bridge.rs`). Collecting into a vector is here too: an unindexed
//! iterator's pieces into a list of vectors, an indexed one's items straight into place.

use super::bridge::bridge;
use super::plumbing::{Folder, Producer};
use std::collections::LinkedList;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};

/// `for_each`: calls the closure on each item.
pub(crate) struct ForEachFolder<'f, F>(pub(crate) &'f F);

impl<T, F: Fn(T)> Folder<T> for ForEachFolder<'_, F> {
    type Result = ();
    fn consume(self, item: T) -> Self {
        (self.0)(item);
        self
    }
    fn consume_iter<I: IntoIterator<Item = T>>(self, iter: I) -> Self {
        iter.into_iter().for_each(self.0);
        self
    }
    fn complete(self) {}
    fn full(&self) -> bool {
        false
    }
}

/// `reduce`: the items combined with an operation, from a neutral element.
pub(crate) struct ReduceFolder<'f, T, R> {
    pub(crate) acc: T,
    pub(crate) reduce: &'f R,
}

impl<T, R: Fn(T, T) -> T> Folder<T> for ReduceFolder<'_, T, R> {
    type Result = T;
    fn consume(self, item: T) -> Self {
        ReduceFolder {
            acc: (self.reduce)(self.acc, item),
            reduce: self.reduce,
        }
    }
    fn consume_iter<I: IntoIterator<Item = T>>(self, iter: I) -> Self {
        ReduceFolder {
            acc: iter.into_iter().fold(self.acc, self.reduce),
            reduce: self.reduce,
        }
    }
    fn complete(self) -> T {
        self.acc
    }
    fn full(&self) -> bool {
        false
    }
}

/// `reduce_with` (and `min`, `max`, ...): the items combined with an operation; `None`
/// for no items.
pub(crate) struct ReduceWithFolder<'f, T, R> {
    pub(crate) acc: Option<T>,
    pub(crate) reduce: &'f R,
}

impl<T, R: Fn(T, T) -> T> Folder<T> for ReduceWithFolder<'_, T, R> {
    type Result = Option<T>;
    fn consume(self, item: T) -> Self {
        let acc = match self.acc {
            Some(acc) => (self.reduce)(acc, item),
            None => item,
        };
        ReduceWithFolder {
            acc: Some(acc),
            reduce: self.reduce,
        }
    }
    fn consume_iter<I: IntoIterator<Item = T>>(self, iter: I) -> Self {
        let mut iter = iter.into_iter();
        let Some(first) = self.acc.or_else(|| iter.next()) else {
            return ReduceWithFolder {
                acc: None,
                reduce: self.reduce,
            };
        };
        ReduceWithFolder {
            acc: Some(iter.fold(first, self.reduce)),
            reduce: self.reduce,
        }
    }
    fn complete(self) -> Option<T> {
        self.acc
    }
    fn full(&self) -> bool {
        false
    }
}

/// Combines two optional results of [`ReduceWithFolder`]s, left before right.
pub(crate) fn reduce_options<T>(
    reduce: &impl Fn(T, T) -> T,
    left: Option<T>,
    right: Option<T>,
) -> Option<T> {
    match (left, right) {
        (Some(left), Some(right)) => Some(reduce(left, right)),
        (left, None) => left,
        (None, right) => right,
    }
}

/// Defines a folder that sums (`Sum`) or multiplies (`Product`) the items with the result
/// type's impl (so integers overflow as a serial sum does: a panic in debug builds).
macro_rules! arithmetic_folder {
    ($name:ident, $trait:ident, $method:ident) => {
        pub(crate) struct $name<S>(pub(crate) S);

        impl<T, S: std::iter::$trait<T> + std::iter::$trait<S>> Folder<T> for $name<S> {
            type Result = S;
            fn consume(self, item: T) -> Self {
                self.consume_iter(std::iter::once(item))
            }
            fn consume_iter<I: IntoIterator<Item = T>>(self, iter: I) -> Self {
                let part: S = iter.into_iter().$method();
                $name([self.0, part].into_iter().$method())
            }
            fn complete(self) -> S {
                self.0
            }
            fn full(&self) -> bool {
                false
            }
        }
    };
}

arithmetic_folder!(SumFolder, Sum, sum);
arithmetic_folder!(ProductFolder, Product, product);

/// `count`: the number of items.
pub(crate) struct CountFolder(pub(crate) usize);

impl<T> Folder<T> for CountFolder {
    type Result = usize;
    fn consume(self, _item: T) -> Self {
        CountFolder(self.0 + 1)
    }
    fn consume_iter<I: IntoIterator<Item = T>>(self, iter: I) -> Self {
        CountFolder(self.0 + iter.into_iter().count())
    }
    fn complete(self) -> usize {
        self.0
    }
    fn full(&self) -> bool {
        false
    }
}

/// `find_any` (and `any`, `all`): the first item a predicate accepts in this piece; once
/// one is found anywhere, every piece stops (`found` is shared).
pub(crate) struct FindFolder<'f, T, P> {
    pub(crate) item: Option<T>,
    pub(crate) predicate: &'f P,
    pub(crate) found: &'f AtomicBool,
}

impl<T, P: Fn(&T) -> bool> Folder<T> for FindFolder<'_, T, P> {
    type Result = Option<T>;
    fn consume(mut self, item: T) -> Self {
        if self.item.is_none() && (self.predicate)(&item) {
            self.item = Some(item);
            self.found.store(true, Ordering::Relaxed);
        }
        self
    }
    fn complete(self) -> Option<T> {
        self.item
    }
    fn full(&self) -> bool {
        self.item.is_some() || self.found.load(Ordering::Relaxed)
    }
}

/// Collecting an unindexed iterator: each piece's items in a vector, the pieces' vectors
/// in order in a list (as rayon collects: no copy of the items while combining).
pub(crate) struct ListFolder<T>(pub(crate) Vec<T>);

impl<T> Folder<T> for ListFolder<T> {
    type Result = LinkedList<Vec<T>>;
    fn consume(mut self, item: T) -> Self {
        self.0.push(item);
        self
    }
    fn consume_iter<I: IntoIterator<Item = T>>(mut self, iter: I) -> Self {
        self.0.extend(iter);
        self
    }
    fn complete(self) -> LinkedList<Vec<T>> {
        let mut list = LinkedList::new();
        if !self.0.is_empty() {
            list.push_back(self.0);
        }
        list
    }
    fn full(&self) -> bool {
        false
    }
}

/// The items of `producer`, in order, as a list of vectors.
pub(crate) fn collect_list<P: Producer>(producer: P) -> LinkedList<Vec<P::Item>>
where
    P::Item: Send,
{
    bridge(
        producer,
        |_| ListFolder(Vec::new()),
        |mut left, mut right| {
            left.append(&mut right);
            left
        },
    )
}

/// The spare capacity of a vector that [`CollectFolder`]s write into: `len` slots from
/// `start`, each written by the one folder whose range holds its index.
struct Slots<T> {
    start: *mut T,
    len: usize,
}

// SAFETY: the folders on different threads write to disjoint slots (each only inside the
// range the executor gave it, checked before each write), and moving `T`s into the slots
// from other threads needs only `T: Send`.
unsafe impl<T: Send> Sync for Slots<T> {}

/// Collecting an indexed iterator: each item written straight to its place in the vector.
struct CollectFolder<'s, T> {
    slots: &'s Slots<T>,
    range: Range<usize>,
    next: usize,
}

/// The slots a [`CollectFolder`] wrote: `start..end`, without a gap.
struct Written {
    start: usize,
    end: usize,
}

impl<T> Folder<T> for CollectFolder<'_, T> {
    type Result = Written;
    fn consume(mut self, item: T) -> Self {
        assert!(
            self.next < self.range.end && self.next < self.slots.len,
            "an indexed parallel iterator gave more items than its length"
        );
        // SAFETY: `next` is inside this folder's range (checked above), which no other
        // folder writes to, and inside the vector's spare capacity.
        unsafe { self.slots.start.add(self.next).write(item) };
        self.next += 1;
        self
    }
    fn consume_iter<I: IntoIterator<Item = T>>(mut self, iter: I) -> Self {
        for item in iter {
            self = self.consume(item);
        }
        self
    }
    fn complete(self) -> Written {
        Written {
            start: self.range.start,
            end: self.next,
        }
    }
    fn full(&self) -> bool {
        false
    }
}

/// Appends the `len` items of the indexed `producer` to `vec`, in order, each written to
/// its place by the thread that made it.
///
/// # Panics
///
/// If the producer gives another number of items than `len` (an `IndexedProducer` whose
/// length is wrong); the items written are then leaked, not dropped.
pub(crate) fn collect_indexed<P: Producer>(producer: P, len: usize, vec: &mut Vec<P::Item>)
where
    P::Item: Send,
{
    vec.reserve(len);
    let old_len = vec.len();
    let slots = Slots {
        start: vec.spare_capacity_mut().as_mut_ptr().cast::<P::Item>(),
        len,
    };
    let slots = &slots;
    let written = bridge(
        producer,
        |range| CollectFolder {
            slots,
            next: range.start,
            range,
        },
        |left, right| {
            assert_eq!(
                left.end, right.start,
                "an indexed parallel iterator gave fewer items than its length"
            );
            Written {
                start: left.start,
                end: right.end,
            }
        },
    );
    assert!(
        written.start == 0 && written.end == len,
        "an indexed parallel iterator gave {} items instead of its length {len}",
        written.end - written.start,
    );
    // SAFETY: the folders wrote every slot of `0..len` exactly once (their ranges are
    // disjoint, and the checks above found them contiguous from 0 to `len`), all within
    // the capacity reserved above.
    unsafe { vec.set_len(old_len + len) };
}
