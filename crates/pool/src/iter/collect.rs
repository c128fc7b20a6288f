//! What `collect` builds ([`FromParallelIterator`]): a `Vec` (an indexed iterator's items
//! written straight into place, an unindexed one's gathered per piece and joined in order),
//! and from the items in order, the other collections, `String`s, `()`, and `Result` and
//! `Option` of a collection.

use super::terminal::{collect_indexed, collect_list};
use super::traits::{FromParallelIterator, IntoParallelIterator, ParallelIterator};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, LinkedList};
use std::hash::{BuildHasher, Hash};

/// The items of `par_iter`, in order, as a list of vectors (one per piece of work).
fn collect_pieces<I: IntoParallelIterator>(par_iter: I) -> LinkedList<Vec<I::Item>> {
    let mut iter = par_iter.into_par_iter();
    collect_list(iter.producer())
}

impl<T: Send> FromParallelIterator<T> for Vec<T> {
    fn from_par_iter<I>(par_iter: I) -> Self
    where
        I: IntoParallelIterator<Item = T>,
    {
        let mut iter = par_iter.into_par_iter();
        match iter.opt_len() {
            Some(len) => {
                let mut vec = Vec::new();
                collect_indexed(iter.producer(), len, &mut vec);
                vec
            }
            None => {
                let pieces = collect_list(iter.producer());
                let mut vec = Vec::with_capacity(pieces.iter().map(Vec::len).sum());
                for mut piece in pieces {
                    vec.append(&mut piece);
                }
                vec
            }
        }
    }
}

/// `FromParallelIterator` for a collection that is built from the items in order with
/// `Extend`.
macro_rules! extend_from_pieces {
    ($(impl[$($generics:tt)*] $collection:ty, item $item:ty;)*) => {$(
        impl<$($generics)*> FromParallelIterator<$item> for $collection {
            fn from_par_iter<I>(par_iter: I) -> Self
            where
                I: IntoParallelIterator<Item = $item>,
            {
                let mut collection = Self::default();
                for piece in collect_pieces(par_iter) {
                    collection.extend(piece);
                }
                collection
            }
        }
    )*};
}

extend_from_pieces! {
    impl[K: Eq + Hash + Send, V: Send, S: BuildHasher + Default] HashMap<K, V, S>, item (K, V);
    impl[T: Eq + Hash + Send, S: BuildHasher + Default] HashSet<T, S>, item T;
    impl[K: Ord + Send, V: Send] BTreeMap<K, V>, item (K, V);
    impl[T: Ord + Send] BTreeSet<T>, item T;
    impl[] String, item char;
    impl['a] String, item &'a str;
    impl[] String, item String;
}

impl FromParallelIterator<()> for () {
    fn from_par_iter<I>(par_iter: I) -> Self
    where
        I: IntoParallelIterator<Item = ()>,
    {
        par_iter.into_par_iter().for_each(|()| {});
    }
}

/// The first error in the items' order, else the collection of the values (rayon's
/// `Result` collect, without its early stop: every item is computed).
impl<C, T, E> FromParallelIterator<Result<T, E>> for Result<C, E>
where
    C: FromParallelIterator<T>,
    T: Send,
    E: Send,
{
    fn from_par_iter<I>(par_iter: I) -> Self
    where
        I: IntoParallelIterator<Item = Result<T, E>>,
    {
        let results: Vec<Result<T, E>> = Vec::from_par_iter(par_iter);
        let values: Vec<T> = results.into_iter().collect::<Result<_, E>>()?;
        Ok(C::from_par_iter(values))
    }
}

/// `None` if any item is `None`, else the collection of the values.
impl<C, T> FromParallelIterator<Option<T>> for Option<C>
where
    C: FromParallelIterator<T>,
    T: Send,
{
    fn from_par_iter<I>(par_iter: I) -> Self
    where
        I: IntoParallelIterator<Item = Option<T>>,
    {
        let values: Result<C, ()> =
            Result::from_par_iter(par_iter.into_par_iter().map(|item| item.ok_or(())));
        values.ok()
    }
}
