//! Which configurations to measure: all of them, or a search that races coarse points with one
//! run each and gives the full `--runs` only to the contenders.
//!
//! A full grid is large (21 thread counts × 4 placements × 2 CPU sets = 168 configurations on a
//! 384-PU machine), most of it far from the answer, and the far part is the expensive part: a
//! run at 1 thread lasts as long as a hundred at the best thread count. The default search
//! works per *family* (a configuration without its thread count), and every configuration it
//! explores gets **one** run (racing, as irace and Kernel Tuner's racing strategies do); only
//! the *contenders* get the full `--runs`, interleaved. Each step below is asked of the
//! measurements so far, the first that has something to measure is the next stage:
//!
//! 1. **Reference ladder**: the grid's first family (`os`, every CPU: the simplest) on a ×2
//!    ladder of the grid's thread counts (the first, every value at least twice the previous
//!    pick, and the last), one run each.
//! 2. **Other families where it can matter**: every other family at the ladder's thread counts
//!    whose reference run took at most [`WINDOW`] times the reference's best (AutoPas leaves a
//!    configuration once it is several times slower than the best so far; those are the long
//!    runs), one run each; a family whose fastest is at the edge of what it measured gets the
//!    next ladder value beyond it.
//! 3. **Bracket**: in every family that is still a contender (its best within the tolerance
//!    plus [`RACE_MARGIN`] of the overall best, or tied with it by interval), around its fastest
//!    thread count and its fewest-thread count within the tolerance of the best, the grid value
//!    nearest the middle of each gap to the nearest measured neighbour, one run each.
//! 4. **Contenders**: every configuration whose estimate is within the tolerance plus
//!    [`RACE_MARGIN`] of the best (or whose interval reaches it) gets the full `--runs`,
//!    interleaved; then the steps are asked again, since the best may have moved.
//!
//! Then, with either strategy, the **deciding** stage ([`undecided`]): while a configuration
//! simpler than the recommendation's pick is within the tolerance of the fastest by median but
//! its runs cannot show it ([`tie`] is [`Tie::Undecided`]), the engine measures it and the
//! fastest further, in turn, each up to `Design::max_runs` runs *for this comparison* (a
//! fastest that already has them keeps them; the other catches up); then, while an
//! oversubscribed configuration faster by median gives way to the fastest one that is not
//! (`recommend.rs`'s oversubscription rule: within the tolerance, not slower beyond noise),
//! those two; then, while the pick's
//! runs cannot show it within the tolerance of a configuration close to it by median, those
//! two the same way.
//!
//! # The tie rule
//!
//! A configuration *ties* with the fastest ([`Tie::Supported`]) when its runs show it at most
//! the tolerance slower: the one-sided 95% upper bound of the ratio of its median to the
//! fastest's is within `1 + tolerance`. The bound is Welch's t on the logarithm of the ratio,
//! each median's standard error taken as `1.2533 · σ / √n` (the median's efficiency under a
//! normal law), σ the larger of the standard deviation and `1.4826 · MAD` relative to the
//! median (the MAD for the typical spread, the standard deviation so that an outlier — named
//! by hyperfine's MAD rule in the warnings — makes the bound wider, never narrower). A median
//! within the tolerance whose bound is not is [`Tie::Undecided`]: more runs can tell; a median
//! beyond the tolerance is no tie ([`Tie::No`]), however wide the intervals (the old rule's tie
//! "within noise" let 3 noisy runs make configurations 5–20% slower tie). With one run there is
//! no interval: a configuration measured once ties only with a fastest measured once too (a
//! `--runs 1` sweep), by median.
//!
//! The search finds the exhaustive answer whenever run time is unimodal in the thread count
//! within a family (one valley) and the valley's family is not more than [`WINDOW`] times
//! slower than the reference at the reference's slow thread counts. A test compares both on
//! synthetic curves; BENCHMARKS.md compares them on the replay corpus of exhaustive sweeps of
//! 5- to 384-PU machines (`tune --replay`, `replay.rs`).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::grid::{Config, Family, Grid};

/// How configurations are chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// The racing search described in the module documentation.
    #[default]
    Search,
    /// Every configuration of the grid.
    Exhaustive,
}

/// What the search needs to know of a measured configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Median run time (seconds), or the objective's cost.
    pub median: f64,
    /// 95% interval of the median.
    pub ci: (f64, f64),
    /// Successful runs it is made of.
    pub n: usize,
    /// The runs' spread relative to the median: the larger of the standard deviation and
    /// `1.4826 · MAD`, over the median (0 for one run).
    pub spread: f64,
}

/// How far a configuration explored with one run may be from the best and still be a
/// contender (beyond the tolerance): two runs with log-normal noise of 5% (the corpus's
/// noisiest, `tests/data/replay/README.md`) differ by more than 14% one time in 20.
pub(super) const RACE_MARGIN: f64 = 0.15;

/// Step 2's window: the ladder's thread counts whose reference run took at most this many
/// times the reference's best are measured in every family (AutoPas drops a configuration at
/// about 5× the best so far; the runs beyond the window are the long ones).
pub(super) const WINDOW: f64 = 3.0;

/// Whether a configuration ties with the fastest (the module docs' rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tie {
    /// Its runs show it within the tolerance of the fastest.
    Supported,
    /// Within the tolerance by median, but its runs cannot show it: more runs can tell.
    Undecided,
    /// Slower than the fastest by more than the tolerance, by median.
    No,
}

/// The one-sided 95% quantile of Student's t with `df` degrees of freedom (Fisher & Yates'
/// table; linear in 1/df between its rows).
fn t95(df: f64) -> f64 {
    const TABLE: [(f64, f64); 17] = [
        (1.0, 6.314),
        (2.0, 2.920),
        (3.0, 2.353),
        (4.0, 2.132),
        (5.0, 2.015),
        (6.0, 1.943),
        (7.0, 1.895),
        (8.0, 1.860),
        (9.0, 1.833),
        (10.0, 1.812),
        (12.0, 1.782),
        (15.0, 1.753),
        (20.0, 1.725),
        (30.0, 1.697),
        (60.0, 1.671),
        (120.0, 1.658),
        (f64::INFINITY, 1.645),
    ];
    let df = df.max(1.0);
    for pair in TABLE.windows(2) {
        let ((d0, t0), (d1, t1)) = (pair[0], pair[1]);
        if df <= d1 {
            let (x0, x1, x) = (1.0 / d0, 1.0 / d1, 1.0 / df);
            return t0 + (t1 - t0) * (x0 - x) / (x0 - x1);
        }
    }
    1.645
}

/// The ratio `a / b` of two medians with its one-sided 95% bounds `(low, point, high)` (the
/// module docs' interval); `None` when either has fewer than two runs.
pub(super) fn ratio(a: &Estimate, b: &Estimate) -> Option<(f64, f64, f64)> {
    if a.n < 2 || b.n < 2 || a.median <= 0.0 || b.median <= 0.0 {
        return None;
    }
    Some(bounds(a, a.spread, b))
}

/// [`ratio`]'s bounds with `a_spread` as `a`'s spread (see [`slower_beyond_noise`]).
fn bounds(a: &Estimate, a_spread: f64, b: &Estimate) -> (f64, f64, f64) {
    #[allow(clippy::cast_precision_loss)]
    let var = |spread: f64, n: usize| (1.2533 * spread).powi(2) / n as f64;
    let (va, vb) = (var(a_spread, a.n), var(b.spread, b.n));
    let se = (va + vb).sqrt();
    let point = a.median / b.median;
    if se == 0.0 {
        return (point, point, point);
    }
    // Welch–Satterthwaite's degrees of freedom.
    #[allow(clippy::cast_precision_loss)]
    let dof = |v: f64, n: usize| if n > 1 { v * v / (n - 1) as f64 } else { 0.0 };
    let df = (va + vb).powi(2) / (dof(va, a.n) + dof(vb, b.n)).max(f64::MIN_POSITIVE);
    let half = t95(df) * se;
    (point * (-half).exp(), point, point * half.exp())
}

/// Whether `a` ties with `best`, the fastest (the module docs' rule).
pub(super) fn tie(a: &Estimate, best: &Estimate, tolerance: f64) -> Tie {
    let within = a.median <= best.median * (1.0 + tolerance);
    if !within {
        return Tie::No;
    }
    match ratio(a, best) {
        Some((_, _, high)) if high <= 1.0 + tolerance => Tie::Supported,
        Some(_) => Tie::Undecided,
        // No interval: a `--runs 1` sweep ties by median; one run against a measured fastest
        // shows nothing.
        None if a.n < 2 && best.n < 2 => Tie::Supported,
        None => Tie::Undecided,
    }
}

/// Whether `a` is slower than `best` beyond noise: the lower bound of their ratio is above 1.
/// A configuration measured once (the search's coarse points) is taken to vary as much as
/// `best` does.
pub(super) fn slower_beyond_noise(a: &Estimate, best: &Estimate) -> bool {
    if best.n < 2 || a.median <= 0.0 || best.median <= 0.0 {
        return false;
    }
    let spread = if a.n < 2 { best.spread } else { a.spread };
    bounds(a, spread, best).0 > 1.0
}

/// What the recommendation rule picks from the measurements ([`pick`]), as indices into them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Picked {
    /// The fastest by median.
    pub fastest: usize,
    /// The pick.
    pub chosen: usize,
    /// When the tie rule's pick runs more threads at once than its PUs (an oversubscribed
    /// configuration, [`Design::pus`](super::design::Design::pus)): it, and the fastest
    /// configuration that is not, which its runs must show slower beyond noise for the
    /// oversubscribed one to stay the pick.
    pub oversubscribed: Option<(usize, usize)>,
}

/// The fastest configuration and the one the recommendation picks: the simplest whose tie
/// with the fastest is supported, else the fastest. When that one is oversubscribed (`over`
/// says which are) and a configuration that is not was measured, the fastest configuration
/// that is not oversubscribed takes its place ([`gives_way`]) when it is within the tolerance
/// of it by median and its runs do not show it slower beyond noise: the pick is then made
/// again among the configurations that are not oversubscribed. More threads than CPUs must
/// earn their place: on a shared machine they take CPU time from everyone else.
pub(super) fn pick<T>(
    measured: &[(T, &Config, Estimate)],
    tolerance: f64,
    over: &dyn Fn(&Config) -> bool,
) -> Option<Picked> {
    let choose = |among: &dyn Fn(usize) -> bool| -> Option<(usize, usize)> {
        let fastest = (0..measured.len())
            .filter(|&i| among(i))
            .min_by(|&a, &b| measured[a].2.median.total_cmp(&measured[b].2.median))?;
        let best = measured[fastest].2;
        let chosen = (0..measured.len())
            .filter(|&i| among(i))
            .filter(|&i| i == fastest || tie(&measured[i].2, &best, tolerance) == Tie::Supported)
            .min_by_key(|&i| measured[i].1.simplicity_key())?;
        Some((fastest, chosen))
    };
    let (fastest, chosen) = choose(&|_| true)?;
    let mut picked = Picked {
        fastest,
        chosen,
        oversubscribed: None,
    };
    if !over(measured[chosen].1) {
        return Some(picked);
    }
    let Some((fitting, fitting_pick)) = choose(&|i| !over(measured[i].1)) else {
        return Some(picked);
    };
    picked.oversubscribed = Some((chosen, fitting));
    if gives_way(&measured[chosen].2, &measured[fitting].2, tolerance) {
        picked.chosen = fitting_pick;
    }
    Some(picked)
}

/// Whether an oversubscribed pick (`over`) gives way to `fitting`, the fastest configuration
/// that is not oversubscribed: `fitting` is within the tolerance of it by median and its runs
/// do not show it slower beyond noise ([`slower_beyond_noise`]: the lower bound of their ratio
/// above 1). A median slower by more than the tolerance keeps the oversubscribed pick (as the
/// tie rule has it), and so does a difference within it that the runs show beyond noise; with
/// one run each, the tie rule's median has already decided.
pub(super) fn gives_way(over: &Estimate, fitting: &Estimate, tolerance: f64) -> bool {
    if over.n < 2 && fitting.n < 2 {
        return false;
    }
    fitting.median <= over.median * (1.0 + tolerance) && !slower_beyond_noise(fitting, over)
}

/// The pair to measure further before the recommendation can be trusted, as `(question,
/// against)`, among those for which `open` says more runs can still be made; `None` when there
/// is none. First, the simplest configuration simpler than the pick whose tie with the fastest
/// is undecided, against the fastest: more runs show the tie, or its median leaves the
/// tolerance. Then, when the tie rule's pick is oversubscribed (`over`) and gave way to the
/// fastest configuration that is not ([`gives_way`]), which is slower by median, those two.
/// Then the pick's own standing: the fastest of the configurations within the
/// tolerance of the pick by median against which the pick's runs cannot show it at most the
/// tolerance slower (the upper bound of their ratio is above `1 + tolerance`), against the
/// pick — three noisy runs of many close configurations make the fastest by median a lucky
/// draw as often as the best.
pub(super) fn undecided(
    measured: &BTreeMap<Config, Estimate>,
    tolerance: f64,
    over: &dyn Fn(&Config) -> bool,
    open: &dyn Fn(&Config, &Config) -> bool,
) -> Option<(Config, Config)> {
    let list: Vec<((), &Config, Estimate)> = measured.iter().map(|(c, e)| ((), c, *e)).collect();
    let picked = pick(&list, tolerance, over)?;
    let (f, best) = (list[picked.fastest].1, list[picked.fastest].2);
    let (p, pick_est) = (list[picked.chosen].1, list[picked.chosen].2);
    let limit = p.simplicity_key();
    let simpler = list
        .iter()
        .filter(|(_, c, e)| {
            c.simplicity_key() < limit && tie(e, &best, tolerance) == Tie::Undecided && open(c, f)
        })
        .min_by_key(|(_, c, _)| c.simplicity_key())
        .map(|(_, c, _)| ((*c).clone(), f.clone()));
    if simpler.is_some() {
        return simpler;
    }
    // An oversubscribed configuration that gave way to the fastest that is not, slower than it
    // by median: more runs of the two can show it faster beyond noise, or show they are close.
    if let Some((o, fit)) = picked.oversubscribed {
        let (oc, oe) = (list[o].1, list[o].2);
        let (fc, fe) = (list[fit].1, list[fit].2);
        if fe.median > oe.median && gives_way(&oe, &fe, tolerance) && open(fc, oc) {
            return Some((fc.clone(), oc.clone()));
        }
    }
    list.iter()
        .filter(|(_, c, e)| {
            *c != p
                && e.median <= pick_est.median * (1.0 + tolerance)
                && ratio(&pick_est, e).is_some_and(|(_, _, high)| high > 1.0 + tolerance)
                && open(c, p)
        })
        .min_by(|a, b| a.2.median.total_cmp(&b.2.median))
        .map(|(_, c, _)| ((*c).clone(), p.clone()))
}

/// Whether `a` is still a contender against the best: within the tolerance plus
/// [`RACE_MARGIN`], or its interval reaches the best's.
fn contender(a: &Estimate, best: &Estimate, tolerance: f64) -> bool {
    a.median <= best.median * (1.0 + tolerance) * (1.0 + RACE_MARGIN) || a.ci.0 <= best.ci.1
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

/// The configurations to measure next with the measured runs each should have, given those
/// measured so far (`tried`: measured or out of the running; configurations with no successful
/// run are absent from `measured`) and `runs` per contender. Empty when the search is complete.
pub(super) fn next_configs(
    grid: &Grid,
    strategy: Strategy,
    measured: &BTreeMap<Config, Estimate>,
    tried: &BTreeSet<Config>,
    tolerance: f64,
    runs: usize,
) -> Vec<(Config, usize)> {
    let untried = |c: &Config| !tried.contains(c);
    if strategy == Strategy::Exhaustive {
        return grid
            .configs()
            .into_iter()
            .filter(untried)
            .map(|c| (c, runs))
            .collect();
    }
    let explore = runs.min(1);
    let once = |configs: Vec<Config>| -> Vec<(Config, usize)> {
        let set: BTreeSet<Config> = configs.into_iter().filter(untried).collect();
        set.into_iter().map(|c| (c, explore)).collect()
    };
    let coarse = coarse_threads(&grid.threads);
    let families = grid.families();
    let Some(reference) = families.first() else {
        return Vec::new();
    };
    // 1. The reference ladder.
    let stage = once(coarse.iter().map(|&t| reference.at(t)).collect());
    if !stage.is_empty() {
        return stage;
    }
    // 2. Every family where the reference says it can matter.
    let ref_best = coarse
        .iter()
        .filter_map(|&t| measured.get(&reference.at(t)))
        .map(|e| e.median)
        .min_by(f64::total_cmp);
    let window: Vec<usize> = coarse
        .iter()
        .copied()
        .filter(|&t| match (measured.get(&reference.at(t)), ref_best) {
            (Some(e), Some(b)) => e.median <= b * WINDOW,
            // The reference failed there (or everywhere): nothing says it cannot matter.
            _ => true,
        })
        .collect();
    let mut wanted: Vec<Config> = families
        .iter()
        .flat_map(|f| window.iter().map(move |&t| f.at(t)))
        .collect();
    for family in &families {
        wanted.extend(edge(&coarse, family, measured, tried));
    }
    let stage = once(wanted);
    if !stage.is_empty() {
        return stage;
    }
    let Some(best) = measured
        .values()
        .min_by(|a, b| a.median.total_cmp(&b.median))
        .copied()
    else {
        return Vec::new();
    };
    // 3. Brackets in the families still in contention.
    let mut wanted = Vec::new();
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
        if !contender(&fastest_est, &best, tolerance) {
            continue;
        }
        let mut targets = vec![fastest];
        if let Some(&(fewest, _)) = points
            .iter()
            .find(|(_, e)| e.median <= best.median * (1.0 + tolerance))
        {
            targets.push(fewest);
        }
        let tried_threads: Vec<usize> = grid
            .threads
            .iter()
            .copied()
            .filter(|&t| tried.contains(&family.at(t)))
            .collect();
        for target in targets {
            for t in bracket(&grid.threads, &tried_threads, target) {
                wanted.push(family.at(t));
            }
        }
    }
    let stage = once(wanted);
    if !stage.is_empty() {
        return stage;
    }
    // 4. The contenders' full runs.
    measured
        .iter()
        .filter(|(_, e)| e.n < runs && contender(e, &best, tolerance))
        .map(|(c, _)| (c.clone(), runs))
        .collect()
}

/// When a family's fastest measured thread count is the lowest or highest it measured, the
/// next ladder value beyond it (the valley may lie outside step 2's window).
fn edge(
    coarse: &[usize],
    family: &Family,
    measured: &BTreeMap<Config, Estimate>,
    tried: &BTreeSet<Config>,
) -> Vec<Config> {
    let points: Vec<(usize, f64)> = coarse
        .iter()
        .filter_map(|&t| measured.get(&family.at(t)).map(|e| (t, e.median)))
        .collect();
    let Some(&(fastest, _)) = points.iter().min_by(|a, b| a.1.total_cmp(&b.1)) else {
        return Vec::new();
    };
    let tried_at: Vec<usize> = coarse
        .iter()
        .copied()
        .filter(|&t| tried.contains(&family.at(t)))
        .collect();
    let mut out = Vec::new();
    if tried_at.first() == Some(&fastest) {
        if let Some(&below) = coarse.iter().rev().find(|&&t| t < fastest) {
            out.push(family.at(below));
        }
    }
    if tried_at.last() == Some(&fastest) {
        if let Some(&above) = coarse.iter().find(|&&t| t > fastest) {
            out.push(family.at(above));
        }
    }
    out
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

    fn est(median: f64, n: usize, spread: f64) -> Estimate {
        Estimate {
            median,
            ci: (median, median),
            n,
            spread,
        }
    }

    #[test]
    fn the_t_quantile_follows_the_table_and_tends_to_the_normal() {
        assert!((t95(1.0) - 6.314).abs() < 1e-9);
        assert!((t95(4.0) - 2.132).abs() < 1e-9);
        assert!(t95(11.0) < t95(10.0) && t95(11.0) > t95(12.0));
        assert!((t95(1e9) - 1.645).abs() < 1e-3);
    }

    #[test]
    fn a_tie_needs_runs_that_show_it_within_the_tolerance() {
        let best = est(1.0, 3, 0.01);
        // 2% slower by median with 1% spread over 3 runs each: the bound is about 3.9%.
        assert_eq!(tie(&est(1.02, 3, 0.01), &best, 0.03), Tie::Undecided);
        // The same with 10 runs each: the bound is about 2.9%.
        assert_eq!(
            tie(&est(1.02, 10, 0.01), &est(1.0, 10, 0.01), 0.03),
            Tie::Supported
        );
        // Beyond the tolerance by median: no tie, however wide the intervals.
        assert_eq!(tie(&est(1.05, 3, 0.2), &best, 0.03), Tie::No);
        // Identical runs: the interval is the point.
        assert_eq!(
            tie(&est(1.02, 3, 0.0), &est(1.0, 3, 0.0), 0.03),
            Tie::Supported
        );
        // One run against a measured fastest shows nothing; against one run, the median rules.
        assert_eq!(tie(&est(1.0, 1, 0.0), &best, 0.03), Tie::Undecided);
        assert_eq!(
            tie(&est(1.02, 1, 0.0), &est(1.0, 1, 0.0), 0.03),
            Tie::Supported
        );
    }

    #[test]
    fn slower_beyond_noise_lends_a_single_run_the_fastest_spread() {
        let best = est(1.0, 3, 0.02);
        assert!(slower_beyond_noise(&est(1.5, 1, 0.0), &best));
        assert!(!slower_beyond_noise(&est(1.02, 1, 0.0), &best));
        assert!(!slower_beyond_noise(&est(1.5, 1, 0.0), &est(1.0, 1, 0.0)));
    }
}
