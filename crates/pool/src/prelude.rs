//! The traits a program needs in scope to use parallel iterators, as rayon's prelude:
//! `use coretune_pool::prelude::*;` in place of `use rayon::prelude::*;`.
//!
//! ```
//! use coretune_pool::prelude::*;
//! let v = vec![1u64, 2, 3];
//! assert_eq!(v.par_iter().map(|x| x * 2).sum::<u64>(), 12);
//! ```

pub use crate::iter::{
    FromParallelIterator, IndexedParallelIterator, IntoParallelIterator, IntoParallelRefIterator,
    IntoParallelRefMutIterator, ParallelIterator, ParallelSlice, ParallelSliceMut,
};
