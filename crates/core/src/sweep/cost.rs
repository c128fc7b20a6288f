//! What a plan costs before anything runs: how many configurations and runs, and — given the
//! time of one single-threaded run — how long, so that a sweep can be sized before allocation
//! hours are spent on it (`coretune tune --input TOPOLOGY --dry-run --estimate-one SECS`).
//!
//! The time of a run of a configuration lies between two bounds:
//!
//! - **perfect scaling**: the single-threaded time divided by the configuration's parallelism,
//!   the fewest of its threads, the CPUs it may use and its throttle's limit;
//! - **no speedup**: the single-threaded time.
//!
//! Real workloads land in between (a sweep exists to find where). `--min-time` adds runs to
//! configurations faster than it (up to 10 × `--runs`), which each bound counts with its own
//! run time. The coarse-to-fine search's later stages depend on the measurements, so for a
//! search the estimate gives its first stage and the whole grid as the most it can measure,
//! and the cost to *expect*: the share of the whole grid's runs and run time that the search
//! used when it was replayed on the corpus of exhaustive sweeps of machines of this size
//! (`tests/data/replay/`, [`CORPUS_SEARCH_SHARE`]).

use std::time::Duration;

use serde::Serialize;

use super::design::Design;
use super::search::{Strategy, next_configs};
use crate::grid::Config;
use crate::grid::{ConfigError, MachineCounts};
use crate::placement::Binding;
use crate::topology::Topology;

/// The cost of measuring some configurations of a plan.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct DesignCost {
    /// Configurations.
    pub configs: usize,
    /// Runs, warm-ups included (at `--runs`; `--min-time` can add runs, see `seconds`).
    pub runs: usize,
    /// Wall time in seconds at perfect scaling and with no speedup, given a single-threaded
    /// run time (warm-ups and `--min-time` runs included).
    pub seconds: Option<(f64, f64)>,
}

/// What a plan costs on one machine.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct DesignEstimate {
    /// Every configuration of the grid (what an exhaustive sweep measures, and the most a
    /// search can).
    pub grid: DesignCost,
    /// The search's first stage (`None` for an exhaustive sweep).
    pub first_stage: Option<DesignCost>,
    /// What to expect: for an exhaustive sweep the grid; for the search the grid scaled by the
    /// search's median share of it on the replay corpus for machines of this size
    /// ([`CORPUS_SEARCH_SHARE`]).
    pub expected: DesignCost,
}

/// The default search's cost on the replay corpus as a share of an exhaustive sweep's, by
/// machine size: (machines with at most this many PUs, share of the configurations and runs,
/// share of the summed run time). Medians over the corpus's replayed sweeps (three seeds each,
/// the default grid, 3 runs per configuration, the default 10 deciding runs per comparison),
/// measured with `scripts/replay-corpus-eval.py` (BENCHMARKS.md, "Oversubscription must earn
/// its place": with the oversubscription rule's deciding runs). The racing search measures a
/// larger share of the runs than of their time: the configurations it skips are the slow ones.
pub const CORPUS_SEARCH_SHARE: [(usize, f64, f64); 3] =
    [(8, 0.63, 0.38), (63, 0.58, 0.27), (usize::MAX, 0.44, 0.11)];

impl Design {
    /// What this plan costs on `topology` (which need not be this machine: an XML or synthetic
    /// description plans for another), each thread's set as wide as `binding`; `machine` gives
    /// `cores`/`pus` throttles their meaning, `one_thread` is the time of one single-threaded
    /// run.
    ///
    /// # Errors
    ///
    /// A configuration that cannot be placed on `topology` (a CPU set it does not have).
    pub fn estimate(
        &self,
        topology: &Topology,
        binding: Binding,
        machine: MachineCounts,
        one_thread: Option<Duration>,
    ) -> Result<DesignEstimate, ConfigError> {
        let grid = self.cost(
            &self.grid.configs(),
            self.runs,
            topology,
            binding,
            machine,
            one_thread,
        )?;
        let (first_stage, expected) = match self.strategy {
            Strategy::Exhaustive => (None, grid),
            Strategy::Search => {
                let (configs, runs) = self.first_stage();
                let first = self.cost(&configs, runs, topology, binding, machine, one_thread)?;
                (Some(first), expected_search(&grid, &first, machine.pus))
            }
        };
        Ok(DesignEstimate {
            grid,
            first_stage,
            expected,
        })
    }

    fn cost(
        &self,
        configs: &[Config],
        runs: usize,
        topology: &Topology,
        binding: Binding,
        machine: MachineCounts,
        one_thread: Option<Duration>,
    ) -> Result<DesignCost, ConfigError> {
        let per_config = self.warmup + runs;
        let mut seconds = one_thread.map(|_| (0.0, 0.0));
        for c in configs {
            let placement = c.placement(topology, binding)?;
            let cpus = placement.union().weight().unwrap_or(1).max(1);
            let limit = c.family.throttle.fixed_limit(machine).unwrap_or(usize::MAX);
            let parallel = c.threads.min(cpus).min(limit).max(1);
            if let (Some(one), Some((fast, slow))) = (one_thread, seconds.as_mut()) {
                let t1 = one.as_secs_f64();
                #[allow(clippy::cast_precision_loss)]
                let (t_fast, t_slow) = (t1 / parallel as f64, t1);
                *fast += self.runs_lasting(runs, t_fast) * t_fast;
                *slow += self.runs_lasting(runs, t_slow) * t_slow;
            }
        }
        Ok(DesignCost {
            configs: configs.len(),
            runs: configs.len() * per_config,
            seconds,
        })
    }

    /// The search's first stage: what it measures before any result is in, and the measured
    /// runs it gives each (one: the search explores with one run).
    fn first_stage(&self) -> (Vec<Config>, usize) {
        let stage = next_configs(
            &self.grid,
            Strategy::Search,
            &Default::default(),
            &Default::default(),
            self.tolerance,
            self.runs,
        );
        let runs = stage.first().map_or(self.runs, |(_, n)| *n);
        (stage.into_iter().map(|(c, _)| c).collect(), runs)
    }

    /// Runs of one configuration (warm-ups included) when each takes `t` seconds and `runs`
    /// are asked for (`--min-time` adds to the full runs, not to the search's exploring one).
    #[allow(clippy::cast_precision_loss)]
    fn runs_lasting(&self, runs: usize, t: f64) -> f64 {
        let min_time = self.min_time.as_secs_f64();
        let mut measured = runs as f64;
        if min_time > 0.0 && t > 0.0 && runs >= self.runs {
            measured = measured.max((min_time / t).ceil().min(10.0 * self.runs as f64));
        }
        self.warmup as f64 + measured
    }
}

impl Design {
    /// The runs (warm-ups included) this plan is expected to make on a machine of `pus` PUs:
    /// the whole grid's for an exhaustive sweep; for the search its share of them on the replay
    /// corpus, at least its first stage (`--dry-run`'s `estimate.expected`, without the times;
    /// the progress bar's "runs in all").
    pub fn expected_runs(&self, pus: usize) -> usize {
        let count = |configs: usize| DesignCost {
            configs,
            runs: configs * (self.warmup + self.runs),
            seconds: None,
        };
        let grid = count(self.grid.configs().len());
        match self.strategy {
            Strategy::Exhaustive => grid.runs,
            Strategy::Search => {
                let (configs, runs) = self.first_stage();
                let first = DesignCost {
                    configs: configs.len(),
                    runs: configs.len() * (self.warmup + runs),
                    seconds: None,
                };
                expected_search(&grid, &first, pus).runs
            }
        }
    }
}

/// The search's expected cost on a machine of `pus` PUs whose whole grid costs `grid`: the
/// grid scaled by the search's share of it on the corpus ([`CORPUS_SEARCH_SHARE`]), and never
/// less than its `first` stage, which it always measures whole.
fn expected_search(grid: &DesignCost, first: &DesignCost, pus: usize) -> DesignCost {
    let &(_, runs, time) = CORPUS_SEARCH_SHARE
        .iter()
        .find(|(most, _, _)| pus <= *most)
        .unwrap_or(&CORPUS_SEARCH_SHARE[2]);
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let scaled = |n: usize| (n as f64 * runs).round() as usize;
    DesignCost {
        configs: scaled(grid.configs).max(first.configs),
        runs: scaled(grid.runs).max(first.runs),
        seconds: grid.seconds.map(|(fast, slow)| {
            let (first_fast, first_slow) = first.seconds.unwrap_or_default();
            ((fast * time).max(first_fast), (slow * time).max(first_slow))
        }),
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::grid::Grid;
    use crate::placement::Policy;
    use crate::topology::TopologySource;

    fn plan(strategy: Strategy) -> Design {
        Design {
            grid: Grid::new(vec![1, 2, 4, 8], vec![Policy::Os, Policy::Cores]),
            strategy,
            runs: 3,
            warmup: 1,
            min_time: Duration::ZERO,
            tolerance: 0.03,
            max_runs: 0,
            objectives: Vec::new(),
            ignore_failure: false,
            pus: Default::default(),
        }
    }

    #[test]
    fn runs_and_time_bounds_on_a_machine_this_is_not() {
        // 4 cores × 2 PUs = 8 PUs: up to 8 threads each has a CPU of its own.
        let topo = Topology::load(&TopologySource::Synthetic("core:4 pu:2".into())).unwrap();
        let machine = MachineCounts { cores: 4, pus: 8 };
        let one = Some(Duration::from_secs(8));
        let e = plan(Strategy::Exhaustive)
            .estimate(&topo, Binding::Pu, machine, one)
            .unwrap();
        assert_eq!(e.first_stage, None);
        assert_eq!((e.grid.configs, e.grid.runs), (8, 32));
        let (fast, slow) = e.grid.seconds.unwrap();
        // No speedup: 32 runs of 8 s.
        assert!((slow - 256.0).abs() < 1e-9, "{slow}");
        // Perfect scaling, 4 runs each of 8/1 + 8/2 + 8/4 + 8/8 s, for both placements.
        let want = 2.0 * 4.0 * (8.0 + 4.0 + 2.0 + 1.0);
        assert!((fast - want).abs() < 1e-9, "{fast} vs {want}");
        // The search's first stage is the ×2 ladder (here the whole ladder) of the first family,
        // one warm-up and one measured run each.
        let s = plan(Strategy::Search)
            .estimate(&topo, Binding::Pu, machine, None)
            .unwrap();
        let first = s.first_stage.unwrap();
        assert_eq!((first.configs, first.runs), (4, 8));
        assert_eq!(s.grid.seconds, None);
        // What to expect: an exhaustive sweep's is the grid; the search's, the grid's runs
        // scaled by its share on the corpus, never less than its first stage.
        assert_eq!(e.expected, e.grid);
        let (_, share, _) = CORPUS_SEARCH_SHARE[0];
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let runs = ((32.0 * share).round() as usize).max(8);
        assert_eq!(s.expected.runs, runs);
        // The same runs without a topology, for the progress bar.
        assert_eq!(plan(Strategy::Search).expected_runs(8), runs);
        assert_eq!(plan(Strategy::Exhaustive).expected_runs(8), 32);
    }

    #[test]
    fn the_expected_search_cost_scales_the_grid_by_the_share_for_the_machine_size() {
        let grid = DesignCost {
            configs: 100,
            runs: 400,
            seconds: Some((10.0, 100.0)),
        };
        let none = DesignCost {
            configs: 0,
            runs: 0,
            seconds: Some((0.0, 0.0)),
        };
        for (pus, row) in [(2, 0), (8, 0), (9, 1), (63, 1), (64, 2), (384, 2)] {
            let (_, runs, time) = CORPUS_SEARCH_SHARE[row];
            let e = expected_search(&grid, &none, pus);
            #[allow(clippy::cast_precision_loss)]
            let got = e.runs as f64;
            assert!((got - (400.0 * runs).round()).abs() < 1e-9, "{pus} PUs");
            let (fast, slow) = e.seconds.unwrap();
            assert!((fast - 10.0 * time).abs() < 1e-9 && (slow - 100.0 * time).abs() < 1e-9);
        }
        // Never less than the first stage, which the search measures whole.
        let e = expected_search(&grid, &grid, 384);
        assert_eq!(e, grid);
    }

    #[test]
    fn min_time_adds_runs_to_fast_configurations_up_to_ten_times() {
        let mut p = plan(Strategy::Exhaustive);
        p.min_time = Duration::from_secs(10);
        // A 1 s run needs 10 runs for 10 s; a 0.01 s run is capped at 10 × 3.
        assert!((p.runs_lasting(p.runs, 1.0) - 11.0).abs() < 1e-9);
        assert!((p.runs_lasting(p.runs, 0.01) - 31.0).abs() < 1e-9);
        assert!((p.runs_lasting(p.runs, 100.0) - 4.0).abs() < 1e-9);
    }
}
