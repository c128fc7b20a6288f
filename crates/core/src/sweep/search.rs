//! Which configurations to measure: all of them, or a coarse-to-fine search that reaches the
//! same recommendation in a fraction of the runs.
//!
//! A full grid is large (24 thread counts × 5 placements × 3 CPU sets = 360 configurations), and
//! most of it is far from the answer. The default search works per *family* (a configuration
//! without its thread count) and in stages; every stage's configurations are measured with the
//! same number of runs, interleaved, before the next stage is decided:
//!
//! 1. **Coarse**: thread counts of the grid thinned to a ×2 ladder (the first, every value at
//!    least twice the previous pick, and the last), for every family.
//! 2. **Drop** families that are clearly worse: their best median is more than the tolerance
//!    slower than the overall best *and* their best's interval lies entirely above the overall
//!    best's interval (successive halving's rule, with noise taken into account).
//! 3. **Bracket**: in every remaining family, around its fastest thread count and around its
//!    fewest-thread count that ties with the overall best (a tie is what the recommendation will
//!    pick, so it must be located as precisely as the fastest), measure the grid value nearest
//!    the middle of each gap to the nearest measured neighbour. Repeat until no unmeasured grid
//!    value lies inside those brackets.
//!
//! Then, with either strategy, the **deciding** stage ([`undecided`]): while the
//! recommendation's pick ties with the fastest only through overlapping intervals and their
//! medians differ by more than the tolerance, the engine measures those two once more each, in
//! turn, up to `Design::max_runs` runs (`tune --max-runs`).
//!
//! This finds the exhaustive answer whenever run time is unimodal in the thread count within a
//! family (one valley), which is the shape of scaling curves: time falls while parallelism
//! pays and rises once contention or oversubscription costs more. A test compares both on
//! synthetic curves; BENCHMARKS.md compares them on the built-in workloads, and on the replay
//! corpus of exhaustive sweeps of 5- to 384-PU machines (`tune --replay`, `replay.rs`), where a
//! curve with two valleys (a static split over several CPU kinds) is where the search misses.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::grid::{Config, Grid};

/// How configurations are chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// The coarse-to-fine search described in the module documentation.
    #[default]
    Search,
    /// Every configuration of the grid.
    Exhaustive,
}

/// What the search needs to know of a measured configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Median run time (seconds).
    pub median: f64,
    /// 95% interval of the median.
    pub ci: (f64, f64),
}

/// Whether `a` ties with the best: the intervals overlap, or `a` is within `tolerance` of it.
pub(super) fn ties(a: &Estimate, best: &Estimate, tolerance: f64) -> bool {
    a.ci.0 <= best.ci.1 || a.median <= best.median * (1.0 + tolerance)
}

/// The pair to measure further before the recommendation can be trusted, as `(simplest,
/// fastest)`: the simplest configuration that ties with the fastest (the one the recommendation
/// would pick) when it ties *only* through overlapping intervals while its median is more than
/// the tolerance slower. `None` when the pick is the fastest, within the tolerance, or no
/// configuration is measured. More runs narrow both intervals: the difference then shows beyond
/// noise (the tie ends and the next simplest tie, if any, is the question) or the medians come
/// within the tolerance; the engine measures the pair in turn up to `Design::max_runs`.
pub(super) fn undecided(
    measured: &BTreeMap<Config, Estimate>,
    tolerance: f64,
) -> Option<(Config, Config)> {
    let (fastest, best) = measured
        .iter()
        .min_by(|a, b| a.1.median.total_cmp(&b.1.median))?;
    let (simplest, est) = measured
        .iter()
        .filter(|(_, e)| ties(e, best, tolerance))
        .min_by_key(|(c, _)| c.simplicity_key())?;
    (simplest != fastest && est.median > best.median * (1.0 + tolerance))
        .then(|| (simplest.clone(), fastest.clone()))
}

/// Whether `a` is clearly worse than the best: beyond the tolerance and beyond noise.
fn clearly_worse(a: &Estimate, best: &Estimate, tolerance: f64) -> bool {
    a.median > best.median * (1.0 + tolerance) && a.ci.0 > best.ci.1
}

/// The grid's thread counts thinned to a ×2 ladder, always keeping the first and last.
pub(super) fn coarse_threads(threads: &[usize]) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for &t in threads {
        if out.last().is_none_or(|&last| t >= 2 * last) {
            out.push(t);
        }
    }
    if let (Some(&last), Some(&grid_last)) = (out.last(), threads.last()) {
        if last != grid_last {
            out.push(grid_last);
        }
    }
    out
}

/// The configurations to measure next, given those measured so far (configurations with no
/// successful run are simply absent from `measured`). Empty when the search is complete.
pub(super) fn next_configs(
    grid: &Grid,
    strategy: Strategy,
    measured: &BTreeMap<Config, Estimate>,
    tried: &BTreeSet<Config>,
    tolerance: f64,
) -> Vec<Config> {
    let untried = |c: &Config| !tried.contains(c);
    if strategy == Strategy::Exhaustive {
        return grid.configs().into_iter().filter(untried).collect();
    }
    let coarse = coarse_threads(&grid.threads);
    let families = grid.families();
    let stage1: Vec<Config> = families
        .iter()
        .flat_map(|f| coarse.iter().map(move |&t| f.at(t)))
        .filter(untried)
        .collect();
    if !stage1.is_empty() {
        return stage1;
    }
    let Some(best) = measured
        .values()
        .min_by(|a, b| a.median.total_cmp(&b.median))
    else {
        return Vec::new();
    };
    let mut next = BTreeSet::new();
    for family in &families {
        let points: Vec<(usize, Estimate)> = grid
            .threads
            .iter()
            .filter_map(|&t| measured.get(&family.at(t)).map(|e| (t, *e)))
            .collect();
        let Some(&(fastest, fastest_est)) = points
            .iter()
            .min_by(|a, b| a.1.median.total_cmp(&b.1.median))
        else {
            continue;
        };
        if clearly_worse(&fastest_est, best, tolerance) {
            continue;
        }
        let mut targets = vec![fastest];
        if let Some(&(fewest_tie, _)) = points.iter().find(|(_, e)| ties(e, best, tolerance)) {
            targets.push(fewest_tie);
        }
        let tried_threads: Vec<usize> = grid
            .threads
            .iter()
            .copied()
            .filter(|&t| tried.contains(&family.at(t)))
            .collect();
        for target in targets {
            for t in bracket(&grid.threads, &tried_threads, target) {
                next.insert(family.at(t));
            }
        }
    }
    next.into_iter().filter(untried).collect()
}

/// Grid values nearest the middle of the gaps between `target` and its nearest tried
/// neighbours on each side (none where the neighbour is adjacent in the grid).
fn bracket(grid: &[usize], tried: &[usize], target: usize) -> Vec<usize> {
    let lower = tried.iter().copied().filter(|&t| t < target).max();
    let upper = tried.iter().copied().filter(|&t| t > target).min();
    let mut out = Vec::new();
    for neighbour in [lower, upper].into_iter().flatten() {
        let (lo, hi) = (neighbour.min(target), neighbour.max(target));
        let inside: Vec<usize> = grid.iter().copied().filter(|&t| t > lo && t < hi).collect();
        if inside.is_empty() {
            continue;
        }
        #[allow(clippy::cast_precision_loss)]
        let mid = (lo as f64 * hi as f64).sqrt(); // geometric middle: thread counts scale ×
        let pick = inside
            .iter()
            .copied()
            .min_by(|a, b| {
                #[allow(clippy::cast_precision_loss)]
                let (da, db) = ((*a as f64 - mid).abs(), (*b as f64 - mid).abs());
                da.total_cmp(&db).then(a.cmp(b))
            })
            .expect("inside is not empty");
        out.push(pick);
    }
    out
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn the_coarse_ladder_doubles_and_keeps_the_largest_count() {
        assert_eq!(coarse_threads(&[1, 2, 3, 4, 6, 8]), vec![1, 2, 4, 8]);
        assert_eq!(
            coarse_threads(&(1..=24).collect::<Vec<_>>()),
            vec![1, 2, 4, 8, 16, 24]
        );
        assert_eq!(coarse_threads(&[64]), vec![64]);
    }

    #[test]
    fn brackets_shrink_to_adjacent() {
        let grid: Vec<usize> = (1..=32).collect();
        assert_eq!(bracket(&grid, &[1, 2, 4, 8, 16, 32], 8), vec![6, 11]);
        assert_eq!(bracket(&grid, &[7, 8, 9], 8), Vec::<usize>::new());
        assert_eq!(bracket(&grid, &[8, 16], 8), vec![11]);
    }
}
