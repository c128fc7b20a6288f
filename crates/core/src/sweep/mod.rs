//! The sweep engine: a [`Design`] (a grid of configurations, a search strategy, repeats) run by a
//! [`Runner`] through [`Sweep::execute`] with warm-up, repeats and interleaved order, every
//! finished run appended to a [`RunLog`] so that nothing finished is lost; the results folder
//! ([`SweepFolder`]), statistics ([`summarize`]), the [`Recommendation`] with its apply lines,
//! the report model ([`SweepReport`]), and two sweeps compared ([`compare`]).
//!
//! # Lifecycle
//!
//! 1. A [`Design`] says what to measure and how ([`Strategy`], runs, warm-up, minimum time).
//! 2. [`Sweep::execute`] asks the strategy for a *stage* of configurations, runs each stage in
//!    *rounds* — round `r` runs every configuration that needs an `r`-th run once, in an order
//!    shuffled per round, so that drift (thermal, other tenants) hits every configuration alike
//!    — and asks for the next stage until the strategy has nothing more. Warm-up runs come first
//!    for each configuration and are logged but never summarised.
//! 3. Every run, successful or not, becomes one [`RunLine`], appended to `runs.jsonl` and
//!    flushed before the next run starts ([`RunLog`]). A crash or Ctrl-C loses at most the run
//!    in flight.
//! 4. Resuming reads the log back: runs already there count towards each configuration's runs,
//!    and since the stages are a function of the results, the same stages come out and only the
//!    missing runs are made.
//!
//! A failed run (the workload or program failed, crashed, timed out, or its result did not
//! verify; any status but `ok`) is logged with its status and never enters the statistics. It
//! also puts its configuration *out of the running*, as hyperfine stops at the first non-zero
//! exit: the configuration gets no further runs, is never recommended, takes no part in ties
//! or the Pareto front, and the search does not count it as a contender (a thread count that
//! exposes a race must not be rewarded for the runs that happened to pass). With
//! [`Design::ignore_failure`] (`tune -i`) failed runs are only left out of the statistics and
//! the configuration stays eligible; a configuration that timed out gets no further runs either
//! way (repeating it would only spend the timeout again).
//!
//! # Where each step lives
//!
//! | step | file |
//! |---|---|
//! | grid values and configurations | `crate::grid` |
//! | what is measured, `sweep.json` | `target.rs` ([`SweepSpec`], [`Target`]) |
//! | one run of one configuration | `run.rs` ([`Runner`]) |
//! | which configurations next | `search.rs` ([`Strategy`]) |
//! | what to measure and how | `design.rs` ([`Design`]) |
//! | the stages and rounds | `engine.rs` ([`Sweep`]) |
//! | the run log, `runs.jsonl` | `log.rs` ([`RunLog`], [`RunLine`]) |
//! | why a sweep stopped | `error.rs` ([`SweepError`]) |
//! | the results folder | `folder.rs` ([`SweepFolder`]) |
//! | a program's own figures, the objectives, the Pareto front | `objective.rs` ([`MetricSpec`], [`Objective`]) |
//! | statistics per configuration | `summary.rs` ([`summarize`]) |
//! | the recommendation | `recommend.rs` ([`recommend`]) |
//! | recorded runs replayed through the search (`tune --replay`) | `replay.rs` ([`Replay`]) |
//! | its apply lines | `apply.rs` ([`apply_lines`]) |
//! | the report model (`summary.json`, plot data) | `report.rs` ([`SweepReport`]) |
//! | what a design costs before it runs | `cost.rs` ([`DesignEstimate`]) |
//! | one configuration on its own (`bench --json`) | `bench.rs` ([`BenchReport`]) |
//! | two sweeps compared | `compare.rs` ([`Comparison`]) |
//!
//! Several node types' sweeps merged into one report are `crate::fleet`'s.

mod apply;
mod bench;
mod compare;
mod cost;
mod design;
mod engine;
mod error;
mod files;
mod folder;
mod launcher;
mod log;
mod objective;
mod recommend;
mod replay;
mod report;
mod run;
mod search;
mod summary;
mod target;
mod watch;

pub use apply::{apply_lines, apply_lines_for};
pub use bench::{BenchReport, CtxSwitches, TracePoint};
pub use compare::{Case, CompareError, Comparison, Verdict, compare};
pub use cost::{CORPUS_SEARCH_SHARE, DesignCost, DesignEstimate};
pub use design::{DEFAULT_MAX_RUNS, DEFAULT_TOLERANCE_PCT, Design};
#[cfg(test)]
pub(crate) use engine::execute;
pub use engine::{Progress, Sweep};
pub(crate) use engine::{is_complete, planned_runs};
pub use error::SweepError;
pub use files::write_file;
pub use folder::{SweepFolder, SweepResults, claim_dir, claim_timestamped_dir, timestamped_dir};
pub use launcher::{Launcher, RankPlan};
pub use log::{Outcome, RunLine, RunLog, Status};
pub use objective::{
    BUILTIN_OBJECTIVES, MetricError, MetricRead, MetricSource, MetricSpec, Objective, Quantity,
    pareto_front,
};
pub use recommend::{Recommendation, recommend};
pub use replay::{Cost, Costs, Pick, Replay, ReplayReport};
pub use report::{
    ConfigRow, ObjectiveStat, RunCounts, RunView, SUMMARY_SCHEMA, SweepReport, ThreadView,
    ThrottleTrace, UslRow,
};
pub use run::{RunResult, Runner, substitute};
pub use search::{Estimate, Strategy};
pub use summary::{ConfigSummary, summarize};
pub use target::{ProgramFile, RunSettings, SWEEP_SCHEMA, ServerSettings, SweepSpec, Target};
pub use watch::{WatchSession, WatchSessionError, Watched};

#[cfg(test)]
pub(crate) mod test;
