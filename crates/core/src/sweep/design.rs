//! What a sweep measures and how: the [`Design`] (grid, search strategy, runs, warm-up,
//! tolerance).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::objective::Objective;
use super::search::Strategy;
use crate::grid::{Config, Grid, MachineCounts, ThrottleSpec};
use crate::topology::Topology;

/// What to measure and how.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Design {
    /// The grid.
    pub grid: Grid,
    /// Which configurations of it.
    pub strategy: Strategy,
    /// Measured runs per configuration (at least).
    pub runs: usize,
    /// Warm-up runs per configuration.
    pub warmup: usize,
    /// Keep adding runs until each configuration has this much measured time (at most 10 ×
    /// `runs` runs); zero = exactly `runs`.
    #[serde(with = "crate::measure::seconds")]
    pub min_time: Duration,
    /// Relative difference under which configurations tie (0.03 = 3%).
    pub tolerance: f64,
    /// `tune --max-runs`: the most measured runs a configuration gets when a configuration
    /// simpler than the recommendation's pick is within the tolerance of the fastest by median
    /// but its runs cannot show it (`search::Tie::Undecided`): it and the fastest are measured
    /// further, one run each in turn, until its tie is shown or its median leaves the
    /// tolerance, or both have this many runs (a bound per comparison: the engine's deciding
    /// stage, `search::undecided`). No more runs when it is at most `runs` (absent = 0: sweeps
    /// from before the option).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_runs: usize,
    /// What the search, statistics and recommendation optimise, the first foremost
    /// (`--objective`; absent = wall time alone).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objectives: Vec<Objective>,
    /// `tune -i`/`--ignore-failure` (hyperfine's flag): a failed run is only left out of the
    /// statistics, and its configuration stays eligible and gets its remaining runs (absent =
    /// false: a failed run puts its configuration out of the running; see the module docs).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignore_failure: bool,
    /// The PUs each CPU set of the grid names on the machine the sweep is for (its text, as
    /// `cpus` in the results files → PUs; [`Design::with_pus`]): a configuration that runs more
    /// threads at once than that is *oversubscribed*, and the recommendation takes it only when
    /// its runs show it faster than the best configuration that is not (`recommend.rs`). Empty
    /// in sweeps from before it and in replays without a topology: then no configuration counts
    /// as oversubscribed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pus: BTreeMap<String, usize>,
}

/// The tie tolerance when none is given, in percent: configurations whose medians are within
/// 3% of each other tie and the simpler one is recommended (DESIGN.md's default, about the
/// run-to-run spread of a quiet machine); `tune --tolerance`, `compare --threshold`, `bench`
/// and a fleet report whose sweeps say nothing use it.
pub const DEFAULT_TOLERANCE_PCT: f64 = 3.0;

/// `tune --max-runs` when none is given: the deciding runs' bound per comparison. On the replay
/// corpus (BENCHMARKS.md, "A tie the runs must show, and a racing search") they raised the
/// search's picks within 3% of the best from 101 to 109 of 115 sweeps (seed 0) for a point of
/// the median run time on machines of 64 PUs or more.
pub const DEFAULT_MAX_RUNS: usize = 10;

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Design {
    /// One configuration, measured `runs` times after `warmup` warm-up runs, no minimum time:
    /// what `coretune bench` runs.
    pub fn one(config: &Config, runs: usize, warmup: usize) -> Self {
        Self {
            grid: Grid::spanning([config]),
            strategy: Strategy::Exhaustive,
            runs,
            warmup,
            min_time: Duration::ZERO,
            tolerance: DEFAULT_TOLERANCE_PCT / 100.0,
            max_runs: 0,
            objectives: Vec::new(),
            ignore_failure: false,
            pus: BTreeMap::new(),
        }
    }

    /// The design with [`Design::pus`] counted on `topology`: each CPU set of the grid resolved
    /// there (`all`: the PUs of `machine`, what `pus` means in thread lists). A CPU set that
    /// does not resolve is left out (its configurations cannot run there anyway).
    #[must_use]
    pub fn with_pus(mut self, topology: &Topology, machine: MachineCounts) -> Self {
        self.pus = self
            .grid
            .cpus
            .iter()
            .filter_map(|cpus| {
                let n = match cpus.resolve(topology).ok()?.0 {
                    None => machine.pus,
                    Some(set) => set.weight()?,
                };
                Some((cpus.as_str().to_owned(), n))
            })
            .collect();
        self
    }

    /// Whether `config` runs more threads at once than the PUs of its CPU set (its threads,
    /// or a fixed throttle's limit when lower, times its instances), as `(threads at once,
    /// PUs)`; `None` when it does not or the PUs are unknown ([`Design::pus`]). A throttle to
    /// the cores or PUs keeps it within them; the adaptive one has no fixed limit.
    pub fn oversubscribed(&self, config: &Config) -> Option<(usize, usize)> {
        oversubscribed(&self.pus, config)
    }

    /// The runs every configuration gets before deciding runs, when this design makes them
    /// ([`Design::max_runs`] above `runs`, no minimum time): what the recommendation's reason
    /// compares run counts with.
    pub(crate) fn deciding_base(&self) -> Option<usize> {
        (self.max_runs > self.runs && self.min_time.is_zero()).then_some(self.runs)
    }

    /// The objectives: when none was named, wall time, or the throughput of all instances
    /// together when the grid runs several (the time of P copies is not comparable with one's).
    pub fn objectives(&self) -> Vec<Objective> {
        if self.objectives.is_empty() {
            if self.grid.has_instances() {
                vec![Objective::throughput()]
            } else {
                vec![Objective::time()]
            }
        } else {
            self.objectives.clone()
        }
    }
}

/// [`Design::oversubscribed`] with the PUs of each CPU set given.
pub(crate) fn oversubscribed(
    pus: &BTreeMap<String, usize>,
    config: &Config,
) -> Option<(usize, usize)> {
    let &n = pus.get(config.family.cpus.as_str())?;
    let at_once = match config.family.throttle {
        ThrottleSpec::Limit(k) => config.threads.min(k),
        ThrottleSpec::Cores | ThrottleSpec::Pus => config.threads.min(n),
        ThrottleSpec::None | ThrottleSpec::Adaptive => config.threads,
    } * config.family.instances;
    (at_once > n).then_some((at_once, n))
}
