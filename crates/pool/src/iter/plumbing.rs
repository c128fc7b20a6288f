//! The traits parallel iterators are built from, for implementing a new source or adaptor;
//! code that only uses parallel iterators never names them.
//!
//! A parallel iterator hands out a [`Producer`]: a splittable source of items, cut in two at
//! an index by the executor until there are enough pieces for the pool's threads (rayon's
//! rule: about twice the number of workers, and a piece split again when a thief took it),
//! each piece then folded on one thread into a [`Folder`]. An indexed iterator's producer is
//! also an [`IndexedProducer`]: its length is exact and it can be iterated from the outside,
//! which `zip` needs.
//!
//! This is rayon's `iter::plumbing` simplified: there is no consumer that splits alongside
//! the producer. The executor tells each folder where its piece starts instead (the index
//! of its first item in the producer), which is all an order-preserving collect needs.

/// A source of items that can be cut in two at any index: rayon's `Producer`.
///
/// For an unindexed iterator (`filter`, `flat_map`) [`len`](Producer::len) counts the
/// items of the underlying source, not the items that come out, and is used only to decide
/// where to split.
pub trait Producer: Send + Sized {
    /// The items.
    type Item;

    /// Number of pieces of work (for an indexed producer: exactly the number of items).
    fn len(&self) -> usize;

    /// Whether [`len`](Producer::len) is 0.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first `index` pieces and the rest (`index <= len`).
    fn split_at(self, index: usize) -> (Self, Self);

    /// Feeds every item, in order, to `folder` (stopping early when it is
    /// [`full`](Folder::full)) and returns it.
    fn fold_with<F: Folder<Self::Item>>(self, folder: F) -> F;
}

/// A [`Producer`] of exactly [`len`](Producer::len) items that can also be iterated
/// from the outside: rayon's indexed `Producer`.
pub trait IndexedProducer: Producer {
    /// The sequential iterator over the items.
    type IntoIter: Iterator<Item = Self::Item>;

    /// The items, in order.
    fn into_iter(self) -> Self::IntoIter;
}

/// A sequential fold of the items of one piece: rayon's `Folder`.
pub trait Folder<Item>: Sized {
    /// What the fold gives when it is complete.
    type Result;

    /// Folds one item in.
    fn consume(self, item: Item) -> Self;

    /// Folds every item of `iter` in, stopping once [`full`](Folder::full). Folders that
    /// can fold a whole iterator faster (a sum) override it.
    fn consume_iter<I: IntoIterator<Item = Item>>(mut self, iter: I) -> Self {
        for item in iter {
            self = self.consume(item);
            if self.full() {
                break;
            }
        }
        self
    }

    /// The result.
    fn complete(self) -> Self::Result;

    /// True once further items cannot change the result (`find_any` found one): the
    /// executor then stops feeding items, here and in the pieces not started yet.
    fn full(&self) -> bool;
}
