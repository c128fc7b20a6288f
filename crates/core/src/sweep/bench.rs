//! One configuration measured on its own: `coretune bench --json`'s object, from the runs of a
//! one-configuration sweep ([`Design::one`](super::Design::one)).

use serde::Serialize;

use super::log::{RunLine, Status};
use super::objective::Objective;
use super::summary::summarize;
use crate::grid::{Config, Cpus, ThrottleSpec};
use crate::placement::Policy;
use crate::workload::{RunRecord, Throughput};

/// One sample of an adaptive throttle's trace, with the run it belongs to.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TracePoint {
    /// Measured run (1-based) whose throttle took the sample.
    pub run: usize,
    /// Time since that run's throttle was created.
    pub t_s: f64,
    /// Limit in force during the sample.
    pub limit: usize,
    /// Completions (work units) per second during the sample.
    pub throughput: f64,
}

/// Median context switches per run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CtxSwitches {
    /// The threads blocked.
    pub voluntary: Option<f64>,
    /// The threads were preempted.
    pub involuntary: Option<f64>,
}

/// `coretune bench --json`'s object: one configuration's measured runs and their statistics.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BenchReport {
    /// The workload's name.
    pub workload: String,
    /// What one run does.
    pub description: String,
    /// Worker threads.
    pub threads: usize,
    /// Placement.
    pub place: Policy,
    /// CPU set.
    pub cpus: Cpus,
    /// Throttle.
    pub throttle: ThrottleSpec,
    /// Every measured run completed and verified.
    pub verified: bool,
    /// Median wall time of the verified runs (null when none verified).
    pub wall_s: Option<f64>,
    /// Bootstrap 95% interval of that median.
    pub ci_s: Option<(f64, f64)>,
    /// Median throughput.
    pub throughput: Option<Throughput>,
    /// Median context switches.
    pub ctx_switches: CtxSwitches,
    /// Median CPU migrations.
    pub migrations: Option<f64>,
    /// Every measured run's record.
    pub runs: Vec<RunRecord>,
    /// Every measured run's adaptive-throttle samples (empty without `--throttle adaptive`).
    pub throttle_trace: Vec<TracePoint>,
}

impl BenchReport {
    /// The report of `lines`, the log of a one-configuration sweep of `config` on `workload`.
    pub fn build(workload: &str, description: String, config: &Config, lines: &[RunLine]) -> Self {
        let measured: Vec<&RunLine> = lines.iter().filter(|l| !l.warmup).collect();
        let summary = summarize(lines, &[Objective::time()], false)
            .into_iter()
            .next();
        let wall = summary.as_ref().and_then(|s| s.wall.as_ref());
        let runs: Vec<RunRecord> = measured.iter().filter_map(|l| l.record.clone()).collect();
        let throttle_trace = runs
            .iter()
            .enumerate()
            .flat_map(|(i, r)| {
                r.throttle_trace.iter().map(move |s| TracePoint {
                    run: i + 1,
                    t_s: s.t_s,
                    limit: s.limit,
                    throughput: s.throughput,
                })
            })
            .collect();
        Self {
            workload: workload.to_owned(),
            description,
            threads: config.threads,
            place: config.family.place,
            cpus: config.family.cpus.clone(),
            throttle: config.family.throttle,
            verified: measured.iter().all(|l| l.status == Status::Ok),
            wall_s: wall.map(|w| w.median),
            ci_s: wall.map(|w| w.ci),
            throughput: summary.as_ref().and_then(|s| s.throughput),
            ctx_switches: CtxSwitches {
                voluntary: summary.as_ref().and_then(|s| s.voluntary_ctx_switches),
                involuntary: summary.as_ref().and_then(|s| s.involuntary_ctx_switches),
            },
            migrations: summary.as_ref().and_then(|s| s.migrations),
            runs,
            throttle_trace,
        }
    }
}
