//! Statistics per configuration: [`summarize`] turns a log into [`ConfigSummary`] rows.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::log::{RunLine, Status};
use super::objective::{self, Objective};
use crate::grid::{Config, Family};
use crate::measure::Summary;
use crate::workload::{RunRecord, Throughput};

/// What a sweep found for one configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigSummary {
    /// The configuration.
    #[serde(flatten)]
    pub config: Config,
    /// Successful measured runs.
    pub runs: usize,
    /// Measured runs that failed, timed out or did not verify.
    pub failed: usize,
    /// Of those, the measured runs that timed out.
    #[serde(default)]
    pub timed_out: usize,
    /// Why the configuration is out of the running (a run of it failed, and the sweep does not
    /// ignore failures; or it timed out and has no successful run): `3 of 8 runs failed:
    /// ./flaky.sh exited with status 134 (race detected, aborting)`. `None`: eligible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out: Option<String>,
    /// The first failed run's reason, warm-up included (`None` when none failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<String>,
    /// Statistics of the successful runs' wall times (seconds).
    pub wall: Option<Summary>,
    /// Statistics of each objective the summaries were made for, in their order (`None` where
    /// no successful run has it).
    pub objectives: Vec<Option<Summary>>,
    /// Statistics of every metric read from the program's output, by name.
    pub metrics: BTreeMap<String, Summary>,
    /// Median workload throughput.
    pub throughput: Option<Throughput>,
    /// Speedup over the 1-thread configuration of the same family — with instances, over one
    /// copy of one thread of that placement family, so that the gain from splitting shows —
    /// or, failing that, over 1 thread placed by the OS.
    pub speedup: Option<f64>,
    /// Speedup per thread (every copy's threads counted).
    pub efficiency: Option<f64>,
    /// The configuration the speedup is taken over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Config>,
    /// Median voluntary context switches per run.
    pub voluntary_ctx_switches: Option<f64>,
    /// Median involuntary context switches per run.
    pub involuntary_ctx_switches: Option<f64>,
    /// Median CPU migrations per run.
    pub migrations: Option<f64>,
    /// Runs flagged as taken on a busy machine.
    pub busy_runs: usize,
}

/// Why a configuration whose runs are `runs` (warm-up included, in log order) is out of the
/// running, when it is: a failed run without `ignore_failure`, or a timeout that left it no
/// successful run. `made` and the counts are of measured runs.
fn out_reason(runs: &[&RunLine], ignore_failure: bool) -> Option<String> {
    let first = runs.iter().find(|l| l.status != Status::Ok)?;
    let measured: Vec<&&RunLine> = runs.iter().filter(|l| !l.warmup).collect();
    let ok = measured.iter().filter(|l| l.status == Status::Ok).count();
    let timed_out = measured
        .iter()
        .filter(|l| l.status == Status::Timeout)
        .count();
    let failed = measured.len() - ok;
    if ignore_failure && !(timed_out > 0 && ok == 0) {
        return None;
    }
    let why = first.failure().unwrap_or_default();
    if first.warmup {
        return Some(match first.status {
            Status::Timeout => format!("its warm-up run {why}"),
            _ => format!("its warm-up run failed: {why}"),
        });
    }
    let of = format!("{failed} of {}", crate::sys::counted(measured.len(), "run"));
    Some(if timed_out == failed {
        // `timed out after 2.0 s`: said once, after the count.
        format!("{of} {why}")
    } else if timed_out == 0 {
        format!("{of} failed: {why}")
    } else {
        format!("{of} failed or timed out; the first: {why}")
    })
}

/// Summarises the measured (non-warm-up) runs of the log per configuration, in configuration
/// order, with statistics of each of `objectives` (their first gives the speedup when it is a
/// metric of the program: its own figure against its 1-thread figure). A configuration with a
/// failed run is marked out of the running ([`ConfigSummary::out`]) unless `ignore_failure`.
pub fn summarize(
    lines: &[RunLine],
    objectives: &[Objective],
    ignore_failure: bool,
) -> Vec<ConfigSummary> {
    let mut all_runs: BTreeMap<Config, Vec<&RunLine>> = BTreeMap::new();
    for line in lines {
        all_runs.entry(line.config.clone()).or_default().push(line);
    }
    let med = |v: Vec<f64>| crate::measure::stats::median(&v);
    let mut out: Vec<ConfigSummary> = all_runs
        .into_iter()
        // A configuration put out by its warm-up run has a row too, to say why.
        .filter(|(_, all)| all.iter().any(|l| !l.warmup || l.status != Status::Ok))
        .map(|(config, all)| {
            let runs: Vec<&RunLine> = all.iter().copied().filter(|l| !l.warmup).collect();
            let ok: Vec<&RunRecord> = runs
                .iter()
                .filter(|l| l.status == Status::Ok)
                .filter_map(|l| l.record.as_ref())
                .collect();
            #[allow(clippy::cast_precision_loss)]
            let field = |f: &dyn Fn(&RunRecord) -> Option<f64>| {
                let v: Vec<f64> = ok.iter().filter_map(|r| f(r)).collect();
                if v.len() == ok.len() { med(v) } else { None }
            };
            let walls: Vec<f64> = ok
                .iter()
                .map(|r| r.measurement.wall.as_secs_f64())
                .collect();
            let mut metrics: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            for r in &ok {
                for (name, &v) in &r.metrics {
                    metrics.entry(name.clone()).or_default().push(v);
                }
            }
            #[allow(clippy::cast_precision_loss)]
            ConfigSummary {
                runs: ok.len(),
                failed: runs.len() - ok.len(),
                timed_out: runs.iter().filter(|l| l.status == Status::Timeout).count(),
                out: out_reason(&all, ignore_failure),
                first_failure: all.iter().find_map(|l| l.failure()),
                wall: Summary::of(&walls),
                objectives: objectives
                    .iter()
                    .map(|o| {
                        let v: Vec<f64> = ok.iter().filter_map(|r| o.value(r)).collect();
                        Summary::of(&v)
                    })
                    .collect(),
                metrics: metrics
                    .into_iter()
                    .filter_map(|(n, v)| Some((n, Summary::of(&v)?)))
                    .collect(),
                throughput: ok.first().and_then(|first| {
                    Some(Throughput {
                        value: med(ok.iter().map(|r| r.throughput.value).collect())?,
                        unit: first.throughput.unit,
                    })
                }),
                speedup: None,
                efficiency: None,
                baseline: None,
                voluntary_ctx_switches: field(&|r| {
                    r.measurement.voluntary_ctx_switches.map(|n| n as f64)
                }),
                involuntary_ctx_switches: field(&|r| {
                    r.measurement.involuntary_ctx_switches.map(|n| n as f64)
                }),
                migrations: field(&|r| r.measurement.migrations.map(|m| m as f64)),
                busy_runs: runs.iter().filter(|l| l.noise.busy).count(),
                config,
            }
        })
        .collect();
    // Speedup and efficiency against the family's 1-thread median — with instances, against
    // one copy of one thread of the same placement family — of the wall time, or of the
    // program's own figure when that is the objective (as a cost: a rate's speedup is the
    // ratio of the rates). A configuration out of the running is no baseline and gets none
    // (a crashing configuration's "182% efficiency" is no figure to show).
    let by_metric = objectives.first().filter(|o| {
        matches!(
            o.quantity,
            objective::Quantity::Metric(_) | objective::Quantity::Throughput
        )
    });
    let cost = |s: &ConfigSummary| -> Option<f64> {
        match by_metric {
            Some(o) => Some(o.cost(s.objectives.first()?.as_ref()?.median)),
            None => Some(s.wall.as_ref()?.median),
        }
    };
    let one_thread: BTreeMap<Family, (Config, f64)> = out
        .iter()
        .filter(|s| s.config.threads == 1 && s.out.is_none())
        .filter_map(|s| Some((s.config.family.clone(), (s.config.clone(), cost(s)?))))
        .collect();
    let os_baseline = one_thread
        .iter()
        .find(|(f, _)| !f.place.is_pinned() && **f == Family::new(f.place))
        .map(|(_, base)| base.clone());
    for s in out.iter_mut().filter(|s| s.out.is_none()) {
        let Some(own) = cost(s) else { continue };
        let family = s.config.family.clone().with_instances(1);
        let base = one_thread.get(&family).cloned().or(os_baseline.clone());
        if let Some((base_config, base)) = base {
            let threads = s.config.threads * s.config.family.instances;
            s.speedup = Some(crate::measure::stats::speedup(base, own));
            s.efficiency = Some(crate::measure::stats::efficiency(base, own, threads));
            s.baseline = Some(base_config);
        }
    }
    out
}
