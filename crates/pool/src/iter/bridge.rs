//! The executor: a [`Producer`] split into pieces on the current pool and each piece
//! folded, the results combined left to right.
//!
//! # Which pool
//!
//! The calling worker's pool (so inside `ThreadPool::install`, and inside a parallel
//! iterator's closures, that pool), else the global pool. A thread outside the pool blocks
//! while a worker runs the call, holding no permit of the pool's throttle meanwhile
//! (`caller.rs`), unless the pool has the caller work off a share
//! (`ThreadPoolBuilder::caller_shares_data_parallel`), as the pool's own data-parallel
//! methods do.
//!
//! # Splitting: rayon's adaptive rule
//!
//! As rayon's `Splitter` (`rayon/src/iter/plumbing/mod.rs`): a call starts with a budget of
//! `splits` = the pool's worker count; each split halves the piece and the budget, so a
//! call that nobody steals from ends in about twice as many pieces as workers, and a piece
//! that a thief took (a [`join_worker`] half run on another worker) gets its budget reset
//! to at least the worker count, so it is split again for the workers that are still idle.
//! A piece of one item is not split. Each half of a split is a `join`: the right half waits
//! on the worker's deque for an idle worker to steal.
//!
//! # The throttle
//!
//! Pieces run on the pool's workers, each holding a permit of the pool's throttle as for
//! any task. After each piece the worker reports its items (the source's pieces of work,
//! before any filter) to the throttle as completions, so an adaptive limit measures the
//! items a parallel iterator works off, as it does for the pool's `sum` and `for_each`.

use super::plumbing::{Folder, Producer};
use crate::global::with_current_registry;
use crate::join::{in_worker, join_worker};
use crate::registry::{Registry, WorkerThread};
use std::ops::Range;

/// Rayon's thief-splitting budget (see the module doc).
#[derive(Clone, Copy, Debug)]
struct Splitter {
    /// Splits left before a piece is folded whole.
    splits: usize,
    /// Workers of the pool: the budget a stolen piece gets back.
    threads: usize,
}

impl Splitter {
    /// The budget of a call on a pool of `threads` workers.
    fn new(threads: usize) -> Self {
        Splitter {
            splits: threads,
            threads,
        }
    }

    fn try_split(&mut self, len: usize, stolen: bool) -> bool {
        if len < 2 {
            return false;
        }
        if stolen {
            self.splits = self.threads.max(self.splits / 2);
            true
        } else if self.splits > 0 {
            self.splits /= 2;
            true
        } else {
            false
        }
    }
}

/// How to fold a piece (a fresh folder for the piece starting at an index) and how to
/// combine two pieces' results (left, right).
struct Ops<'a, MF, RF> {
    make: &'a MF,
    reduce: &'a RF,
}

/// Folds every item of `producer` on the current pool: each piece into `make(range)` (the
/// piece's place in `producer`, `start..start + len`), the pieces' results combined left to
/// right with `reduce`. `reduce` must be associative.
pub(crate) fn bridge<P, FD, MF, RF>(producer: P, make: MF, reduce: RF) -> FD::Result
where
    P: Producer,
    FD: Folder<P::Item>,
    FD::Result: Send,
    MF: Fn(Range<usize>) -> FD + Sync,
    RF: Fn(FD::Result, FD::Result) -> FD::Result + Sync,
{
    let ops = Ops {
        make: &make,
        reduce: &reduce,
    };
    with_current_registry(|registry| {
        let outside =
            WorkerThread::with_current(|worker| !worker.is_some_and(|w| w.is_in(registry)));
        let share = producer.len() / (registry.num_threads() + 1);
        if !(outside && registry.caller_shares && share > 0) {
            let splitter = Splitter::new(registry.num_threads());
            return in_worker(registry, |worker| {
                helper(worker, producer, 0, splitter, false, &ops)
            });
        }
        // The caller works off the first share itself, as the pool's `sum` does.
        let (mine, theirs) = producer.split_at(share);
        let mut theirs_result = None;
        let slot = &mut theirs_result;
        let ops = &ops;
        let mine_result = crate::scope::run_scope(registry, |s| {
            s.spawn(move |_| {
                let splitter = Splitter::new(registry.num_threads());
                *slot = Some(in_worker(registry, |worker| {
                    helper(worker, theirs, share, splitter, false, ops)
                }));
            });
            fold_piece(registry, mine, 0, ops)
        });
        let theirs_result = theirs_result.expect("the scope waited for the workers' share");
        reduce(mine_result, theirs_result)
    })
}

/// Splits `producer` (whose first item is `offset` in the whole) while the budget allows,
/// then folds the piece.
fn helper<P, FD, MF, RF>(
    worker: &WorkerThread,
    producer: P,
    offset: usize,
    mut splitter: Splitter,
    stolen: bool,
    ops: &Ops<MF, RF>,
) -> FD::Result
where
    P: Producer,
    FD: Folder<P::Item>,
    FD::Result: Send,
    MF: Fn(Range<usize>) -> FD + Sync,
    RF: Fn(FD::Result, FD::Result) -> FD::Result + Sync,
{
    let len = producer.len();
    let folder = (ops.make)(offset..offset + len);
    if folder.full() {
        return folder.complete();
    }
    if !splitter.try_split(len, stolen) {
        return fold_piece(worker.registry(), producer, offset, ops);
    }
    let mid = len / 2;
    let (left, right) = producer.split_at(mid);
    let (left, right) = join_worker(
        worker,
        |stolen| helper(worker, left, offset, splitter, stolen, ops),
        |stolen| {
            WorkerThread::with_current(|thief| match thief {
                Some(thief) => helper(thief, right, offset + mid, splitter, stolen, ops),
                // Jobs run on the pool's workers only.
                None => unreachable!("a stolen half runs on a worker"),
            })
        },
    );
    (ops.reduce)(left, right)
}

/// Folds one piece and reports its items to the pool's throttle.
fn fold_piece<P, FD, MF, RF>(
    registry: &Registry,
    producer: P,
    offset: usize,
    ops: &Ops<MF, RF>,
) -> FD::Result
where
    P: Producer,
    FD: Folder<P::Item>,
    MF: Fn(Range<usize>) -> FD,
{
    let len = producer.len();
    let result = producer
        .fold_with((ops.make)(offset..offset + len))
        .complete();
    if let Some(throttle) = registry.throttle.as_deref() {
        throttle.record_completions(len as u64);
    }
    result
}
