//! Parallel iterators in rayon's shape: `par_iter()`, `par_iter_mut()` and
//! `into_par_iter()` on slices, vectors and integer ranges, `par_chunks(_mut)`, the usual
//! adaptors and terminal operations, `collect`, and the parallel sorts, with rayon's names.
//! `use coretune_pool::prelude::*;` brings them in, as `use rayon::prelude::*;` does, so a
//! program that uses only these builds against either crate by changing that line.
//!
//! ```
//! use coretune_pool::prelude::*;
//!
//! let values: Vec<f64> = (0..100_000).map(|i| i as f64).collect();
//! let sum_of_squares: f64 = values.par_iter().map(|x| x * x).sum();
//! assert!((sum_of_squares - 333_328_333_350_000.0).abs() < 1e6);
//!
//! let odd: Vec<u64> = (0..10u64).into_par_iter().filter(|x| x % 2 == 1).collect();
//! assert_eq!(odd, [1, 3, 5, 7, 9]); // in order
//!
//! let mut words = vec!["pear", "fig", "apple"];
//! words.par_sort();
//! assert_eq!(words, ["apple", "fig", "pear"]);
//! ```
//!
//! # Where they run
//!
//! On the current pool: inside [`ThreadPool::install`](crate::ThreadPool::install) (and
//! inside another parallel iterator's closure, or any task) the pool of the worker it runs
//! on, else the global pool. So a library that uses `par_iter` runs on its caller's pool,
//! placed and throttled as that pool is: each piece of work runs on a worker holding a
//! permit of the pool's throttle and reports its items to it as completions. There is no
//! chunk size: the work is split as rayon splits it (into about twice as many pieces as the
//! pool has workers, and a piece a thief took is split again for the others), each half a
//! `join`. A panic in a closure is re-raised in the caller.
//!
//! # Which operations
//!
//! The set is what programs that depend on rayon call most, judged by reading a sample of
//! real uses in public repositories (code searches for `par_iter().map(`,
//! `into_par_iter()`, `par_iter_mut()`, `par_chunks_mut(`, `par_sort_unstable`,
//! `par_bridge()` and `fold(` + `reduce(`; a reading, not a count): the chains are mostly a
//! source (`par_iter`, `par_iter_mut`, `into_par_iter` on a
//! `Vec` or a range, `par_chunks(_mut)`) followed by `map`/`filter`/`filter_map`/`enumerate`/
//! `zip` and ended by `collect` (into a `Vec`, sometimes a `HashMap`, `String` or
//! `Result<Vec<_>, _>`), `sum`, `for_each`, `reduce`, `fold` + `reduce` (counting or
//! grouping into maps), `min`/`max(_by_key)`, `any`/`all`/`find_any` and `count`; sorting
//! is `par_sort_unstable(_by(_key))` and `par_sort(_by(_key))`. `flat_map`,
//! `flat_map_iter`, `copied`, `cloned`, `product`, `reduce_with` and `collect_into_vec`
//! came cheap on the same machinery. The crate's front page,
//! ["Coming from rayon"](crate#coming-from-rayon), lists
//! each operation against rayon's, what is not offered (`par_bridge`, `chain`, `take`, the
//! `try_` forms, parallel iterators over `HashMap`, ...) and where each row is tested.
//!
//! Differences from rayon that a program can see: none in results. `flat_map` splits the
//! outer items among threads and works off each inner iterator on one thread (rayon may
//! split an inner one too); `Range<u64>` and `Range<i64>` are indexed here (rayon's are
//! not), so `enumerate` and `zip` take them. New sources and adaptors are written against
//! the [`plumbing`] traits, a simplified form of rayon's.

mod adaptors;
mod bridge;
mod collect;
pub mod plumbing;
mod sort;
mod sources;
mod terminal;
mod traits;

pub use adaptors::{
    Cloned, Copied, Enumerate, Filter, FilterMap, FlatMap, FlatMapIter, Fold, Map, Zip,
};
pub use sort::ParallelSliceMut;
pub use sources::{Chunks, ChunksMut, IntoIter, Iter, IterMut, ParallelSlice, RangeIter};
pub use traits::{
    FromParallelIterator, IndexedParallelIterator, IntoParallelIterator, IntoParallelRefIterator,
    IntoParallelRefMutIterator, ParallelIterator,
};
