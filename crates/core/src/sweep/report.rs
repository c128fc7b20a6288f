//! The report model: a sweep's results as data — per-configuration rows, Universal Scalability
//! Law fits, run counts and the recommendation ([`SweepReport`], the content of
//! `summary.json`), and what the per-run plots draw ([`RunView`]). Turning them into bytes
//! (tables, CSV, SVG, HTML) is the caller's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::design::Design;
use super::log::{RunLine, Status};
use super::objective::{MetricSpec, Objective, Quantity};
use super::recommend::{Recommendation, pareto, recommend_on};
use super::summary::{ConfigSummary, summarize};
use super::target::Target;
use crate::grid::{Config, Family};
use crate::measure::stats::{UslFit, usl_fit};
use crate::program::pin::{Mechanism, PinRecord};
use crate::program::watch::{CpuPlace, Sample};
use crate::topology::MachineRecord;
use crate::workload::{RunRecord, ThrottleSample, Throughput};

/// Version of `summary.json`; see `docs/summary.schema.json`.
pub const SUMMARY_SCHEMA: &str = "coretune-summary/1";

/// One configuration's row, as `summary.json`'s `configs` entries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigRow {
    /// The configuration (`threads` and the [`Family`] fields, beside the row's own).
    #[serde(flatten)]
    pub config: Config,
    /// Median wall time of the successful runs, seconds (null when none succeeded).
    pub median_s: Option<f64>,
    /// Bootstrap 95% interval of the median, seconds.
    pub ci_s: Option<(f64, f64)>,
    /// Mean wall time, seconds.
    pub mean_s: Option<f64>,
    /// Standard deviation of the wall times, seconds.
    pub stddev_s: Option<f64>,
    /// Fastest run, seconds.
    pub min_s: Option<f64>,
    /// Slowest run, seconds.
    pub max_s: Option<f64>,
    /// Median absolute deviation, seconds.
    pub mad_s: Option<f64>,
    /// Mean user CPU time of the successful runs, seconds.
    pub user_s: Option<f64>,
    /// Mean system CPU time of the successful runs, seconds.
    pub sys_s: Option<f64>,
    /// Successful measured runs.
    pub runs: usize,
    /// Failed, timed-out or unverified measured runs.
    pub failed: usize,
    /// Of those, the runs that timed out (absent when none did).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub timed_out: usize,
    /// Why the configuration is out of the running — a run of it failed (`1 of 3 runs
    /// failed: ./app exited with status 134 (race detected)`, `1 of 1 run timed out after
    /// 2.0 s`) — so that it is never recommended; absent while it is eligible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out: Option<String>,
    /// Speedup over the family's 1-thread median (with instances, over one copy of one thread
    /// of the same placement family).
    pub speedup: Option<f64>,
    /// Speedup per thread (with instances, per thread of all copies).
    pub efficiency: Option<f64>,
    /// Median workload throughput.
    pub throughput: Option<Throughput>,
    /// Median voluntary context switches per run.
    pub voluntary_ctx_switches: Option<f64>,
    /// Median involuntary context switches per run.
    pub involuntary_ctx_switches: Option<f64>,
    /// Median CPU migrations per run.
    pub migrations: Option<f64>,
    /// Runs taken while other processes used the CPUs.
    pub busy_runs: usize,
    /// Runs flagged as outliers (modified z-score > 3.5).
    pub outliers: usize,
    /// Run times fall in two separated clusters.
    pub bimodal: bool,
    /// How the placement reached an external program's threads (absent for built-in
    /// workloads and unpinned configurations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinning: Option<Mechanism>,
    /// Measured runs in which a thread was seen outside its planned place.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub off_place_runs: usize,
    /// Median seconds per run that the cgroup's CPU quota kept the program off the CPUs, when a
    /// quota throttled any run of this configuration (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_s: Option<f64>,
    /// Wall times of the successful runs, seconds, in the order they ran.
    pub times_s: Vec<f64>,
    /// Median CPU time (user + system) of the successful runs, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_s: Option<f64>,
    /// Median peak resident memory of the successful runs, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_rss_bytes: Option<f64>,
    /// Each objective of the sweep, in the plan's order: its statistics over the successful
    /// runs (absent for a wall-time-only sweep, whose figures are the `_s` fields).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objectives: Vec<Option<ObjectiveStat>>,
    /// Every metric read from the program's output, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<String, ObjectiveStat>,
    /// On the Pareto front of the sweep's objectives (two or more): no other configuration
    /// is better on all of them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pareto: bool,
    /// The launcher's command line that started this configuration's ranks, before the
    /// program's words (`tune --launcher`; absent when coretune starts the program itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<String>,
}

/// Statistics of one objective or metric of a configuration, in its own unit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ObjectiveStat {
    /// Median.
    pub median: f64,
    /// Bootstrap 95% interval of the median (absent for one run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci: Option<(f64, f64)>,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Runs with a value.
    pub n: usize,
}

impl ObjectiveStat {
    fn of(s: &crate::measure::Summary) -> Self {
        Self {
            median: s.median,
            ci: (s.n >= 2).then_some(s.ci),
            min: s.min,
            max: s.max,
            n: s.n,
        }
    }
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `complete` of a `summary.json` written before the field was: those were read as complete.
fn complete_by_default() -> bool {
    true
}

impl ConfigRow {
    fn of(s: &ConfigSummary, lines: &[RunLine], objectives: &[Objective]) -> Self {
        let w = s.wall.as_ref();
        let ok: Vec<&RunLine> = lines
            .iter()
            .filter(|l| !l.warmup && l.config == s.config && l.status == Status::Ok)
            .collect();
        let times_s = ok.iter().filter_map(|l| l.wall_s()).collect();
        // Over the runs that have the figure; none when a run lacks it (absent, not 0).
        let mean_of = |f: &dyn Fn(&RunRecord) -> Option<f64>| {
            let v: Vec<f64> = ok
                .iter()
                .filter_map(|l| l.record.as_ref())
                .map(f)
                .collect::<Option<_>>()?;
            crate::measure::stats::mean(&v)
        };
        Self {
            config: s.config.clone(),
            median_s: w.map(|w| w.median),
            // One run has no interval (it would be the run itself, zero wide).
            ci_s: w.filter(|_| s.runs >= 2).map(|w| w.ci),
            mean_s: w.map(|w| w.mean),
            stddev_s: w.map(|w| w.stddev),
            min_s: w.map(|w| w.min),
            max_s: w.map(|w| w.max),
            mad_s: w.map(|w| w.mad),
            user_s: mean_of(&|r| r.measurement.user.map(|d| d.as_secs_f64())),
            sys_s: mean_of(&|r| r.measurement.sys.map(|d| d.as_secs_f64())),
            runs: s.runs,
            failed: s.failed,
            timed_out: s.timed_out,
            out: s.out.clone(),
            speedup: s.speedup,
            efficiency: s.efficiency,
            throughput: s.throughput,
            voluntary_ctx_switches: s.voluntary_ctx_switches,
            involuntary_ctx_switches: s.involuntary_ctx_switches,
            migrations: s.migrations,
            busy_runs: s.busy_runs,
            outliers: w.map_or(0, |w| w.outliers.len()),
            bimodal: w.is_some_and(|w| w.bimodal),
            pinning: ok
                .iter()
                .find_map(|l| l.record.as_ref()?.pinning.as_deref())
                .map(|p| p.mechanism),
            off_place_runs: ok
                .iter()
                .filter(|l| {
                    l.record
                        .as_ref()
                        .and_then(|r| r.pinning.as_deref())
                        .is_some_and(PinRecord::is_flagged)
                })
                .count(),
            throttled_s: {
                let v: Vec<f64> = ok.iter().filter_map(|l| l.noise.throttled_s).collect();
                v.iter()
                    .any(|&t| t > 0.0)
                    .then(|| crate::measure::stats::median(&v))
                    .flatten()
            },
            times_s,
            cpu_s: {
                let v: Vec<f64> = ok
                    .iter()
                    .filter_map(|l| {
                        let m = &l.record.as_ref()?.measurement;
                        Some(m.user?.as_secs_f64() + m.sys?.as_secs_f64())
                    })
                    .collect();
                crate::measure::stats::median(&v)
            },
            peak_rss_bytes: {
                #[allow(clippy::cast_precision_loss)]
                let v: Vec<f64> = ok
                    .iter()
                    .filter_map(|l| Some(l.record.as_ref()?.measurement.peak_rss_bytes? as f64))
                    .collect();
                crate::measure::stats::median(&v)
            },
            objectives: if objectives.len() == 1 && objectives[0].is_time() {
                Vec::new()
            } else {
                s.objectives
                    .iter()
                    .map(|o| o.as_ref().map(ObjectiveStat::of))
                    .collect()
            },
            metrics: s
                .metrics
                .iter()
                .map(|(n, v)| (n.clone(), ObjectiveStat::of(v)))
                .collect(),
            pareto: false,
            launch: None,
        }
    }

    /// How the runs that did not count ended, in one word: `timed out` when every one timed
    /// out (or the configuration's warm-up did), else `failed`.
    pub fn failure_word(&self) -> &'static str {
        let warmup_timed_out = self.failed == 0
            && self
                .out
                .as_deref()
                .is_some_and(|o| o.starts_with("its warm-up run timed out"));
        if (self.failed > 0 && self.timed_out == self.failed) || warmup_timed_out {
            "timed out"
        } else {
            "failed"
        }
    }

    /// The first objective's median and interval (the wall time's for a time sweep).
    pub fn objective(&self) -> Option<(f64, Option<(f64, f64)>)> {
        match self.objectives.first() {
            Some(o) => o.as_ref().map(|o| (o.median, o.ci)),
            None => Some((self.median_s?, self.ci_s)),
        }
    }

    /// The median of the sweep's objective `i` (the wall time's for a time-only sweep, which
    /// keeps its one objective in the `_s` fields).
    pub fn objective_median(&self, i: usize) -> Option<f64> {
        match self.objectives.get(i) {
            Some(o) => Some(o.as_ref()?.median),
            None if i == 0 && self.objectives.is_empty() => self.median_s,
            None => None,
        }
    }
}

/// A Universal Scalability Law fit of one family's speedup curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UslRow {
    /// The family (its fields beside the fit's).
    #[serde(flatten)]
    pub family: Family,
    /// The fit.
    #[serde(flatten)]
    pub fit: UslFit,
}

/// Run counts of the whole sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunCounts {
    /// Measured runs (warm-ups excluded).
    pub measured: usize,
    /// Measured runs the whole sweep makes, when the plan knows it before the results are in
    /// (an exhaustive plan without `--min-time`, or a complete sweep); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned: Option<usize>,
    /// Measured runs that completed and verified.
    pub ok: usize,
    /// Measured runs that failed, timed out or did not verify.
    pub failed: usize,
    /// Measured runs taken on a busy machine.
    pub busy: usize,
    /// Warm-up runs.
    pub warmup: usize,
}

/// Everything `summary.json` holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepReport {
    /// [`SUMMARY_SCHEMA`].
    pub schema: String,
    /// coretune's version.
    pub tool_version: String,
    /// Unix time the summary was made, seconds.
    pub created_at: f64,
    /// What was measured.
    pub target: Target,
    /// The machine it was measured on.
    pub machine: MachineRecord,
    /// The grid and settings (`plan` in `summary.json`).
    #[serde(rename = "plan")]
    pub design: Design,
    /// Whether the sweep is complete: continuing it would make no run. An interrupted or
    /// stopped sweep's report says `false`, and its recommendation is provisional (absent in
    /// summaries of coretune before it: read as complete).
    #[serde(default = "complete_by_default")]
    pub complete: bool,
    /// One row per configuration measured, in configuration order.
    pub configs: Vec<ConfigRow>,
    /// One fit per family with enough points.
    pub usl: Vec<UslRow>,
    /// The recommendation, when any configuration has a successful run.
    pub recommendation: Option<Recommendation>,
    /// Run counts.
    pub runs: RunCounts,
    /// How each metric of the program's output was read (`--metric`), with its direction and
    /// unit (empty without metrics).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<MetricSpec>,
}

impl SweepReport {
    /// Builds the report from the run log: summaries, fits, and the recommendation with the
    /// lines `apply` gives for it.
    pub fn build(
        target: Target,
        machine: MachineRecord,
        design: Design,
        lines: &[RunLine],
        apply: &dyn Fn(&Config) -> Vec<String>,
    ) -> Self {
        let mut design = design;
        let mut objectives = design.objectives();
        // The throughput's unit is the workload's, known from its runs (a program's: runs/s).
        let unit = lines
            .iter()
            .find_map(|l| l.record.as_ref())
            .map(|r| r.throughput.unit);
        for o in &mut objectives {
            if let (Quantity::Throughput, None, Some(unit)) = (&o.quantity, &o.unit, unit) {
                o.unit = Some(match unit {
                    crate::workload::Unit::NsPerItem => "items/s".to_owned(),
                    other => other.to_string(),
                });
            }
        }
        if objectives
            .iter()
            .any(|o| o.quantity == Quantity::Throughput)
        {
            design.objectives.clone_from(&objectives);
        }
        let summaries = summarize(lines, &objectives, design.ignore_failure);
        let pareto = pareto(&summaries, &objectives);
        let mut recommendation = recommend_on(
            &summaries,
            design.tolerance,
            &objectives,
            &pareto,
            design.deciding_base(),
            &design.pus,
        );
        if let Some(r) = recommendation.as_mut() {
            r.apply = apply(&r.config);
        }
        let configs: Vec<ConfigRow> = summaries
            .iter()
            .map(|s| {
                let mut row = ConfigRow::of(s, lines, &objectives);
                row.pareto = pareto.contains(&s.config);
                row
            })
            .collect();
        let mut curves: BTreeMap<Family, Vec<(usize, f64)>> = BTreeMap::new();
        for s in &summaries {
            let points = curves.entry(s.config.family.clone()).or_default();
            if let Some(speedup) = s.speedup {
                points.push((s.config.threads, speedup));
            }
        }
        let usl = curves
            .into_iter()
            .filter_map(|(family, points)| {
                Some(UslRow {
                    family,
                    fit: usl_fit(&points)?,
                })
            })
            .collect();
        let measured: Vec<&RunLine> = lines.iter().filter(|l| !l.warmup).collect();
        let complete = super::is_complete(&design, lines);
        let runs = RunCounts {
            measured: measured.len(),
            planned: if complete {
                Some(measured.len())
            } else {
                super::planned_runs(&design, lines)
            },
            ok: measured.iter().filter(|l| l.status == Status::Ok).count(),
            failed: measured.iter().filter(|l| l.status != Status::Ok).count(),
            busy: measured.iter().filter(|l| l.noise.busy).count(),
            warmup: lines.len() - measured.len(),
        };
        Self {
            schema: SUMMARY_SCHEMA.into(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            created_at: crate::sys::since_epoch().as_secs_f64(),
            target,
            machine,
            design,
            complete,
            configs,
            usl,
            recommendation,
            runs,
            metrics: Vec::new(),
        }
    }

    /// The recommended configuration's row.
    pub fn recommended_row(&self) -> Option<&ConfigRow> {
        let r = self.recommendation.as_ref()?;
        self.configs.iter().find(|c| c.config == r.config)
    }

    /// Why nothing could be recommended: `None` when a configuration in the running completed
    /// a verified run, else a one-line reason naming the first failure.
    pub fn failure(&self, lines: &[RunLine]) -> Option<String> {
        if self.recommendation.is_some() {
            return None;
        }
        let failed: Vec<&RunLine> = lines.iter().filter(|l| l.status != Status::Ok).collect();
        let ok = lines.len() - failed.len();
        Some(match failed.first() {
            None => "no run was made".to_owned(),
            Some(first) => format!(
                "no configuration {} ({} of {} failed; the first: {}: {}{})",
                if ok == 0 {
                    "completed a verified run"
                } else {
                    // Some runs passed, in configurations that failed other runs.
                    "is in the running: each had a failed run"
                },
                failed.len(),
                crate::sys::counted(lines.len(), "run"),
                first.config,
                first.error.as_deref().unwrap_or("failed"),
                // Unless the error ends quoting it already (a server's does).
                first
                    .last_stderr_line()
                    .filter(|l| !first.error.as_deref().unwrap_or("").ends_with(l))
                    .map_or_else(String::new, |l| format!(": {l}"))
            ),
        })
    }

    /// How far an incomplete sweep got, for the outputs' "incomplete" line (`None` when it is
    /// complete): `5 of 12 measured runs` where the plan knows its total, else `5 measured
    /// runs so far`, or `no measured run yet` when it stopped before any configuration
    /// completed one (during warm-up).
    pub fn incomplete(&self) -> Option<String> {
        if self.complete {
            return None;
        }
        Some(match (self.runs.measured, self.runs.planned) {
            (0, _) => "no measured run yet".to_owned(),
            (done, Some(planned)) => format!("{done} of {planned} measured runs"),
            (done, None) => format!("{} so far", crate::sys::counted(done, "measured run")),
        })
    }

    /// What the outputs say when there is nothing to recommend: that the sweep stopped before
    /// any measured run (an incomplete sweep interrupted during warm-up), or that no
    /// configuration in the running completed a verified run.
    pub fn nothing_to_recommend(&self) -> &'static str {
        if !self.complete && self.runs.measured == 0 {
            "The sweep stopped before any configuration completed a measured run: nothing to \
             recommend yet."
        } else if self.complete {
            "No configuration in the running completed a verified run: nothing to recommend."
        } else {
            "No configuration in the running has completed a verified run yet: nothing to \
             recommend so far."
        }
    }
}

/// One thread in a per-run plot: its label, CPU number → samples seen there, migrations.
pub type ThreadView = (String, BTreeMap<usize, u64>, Option<u64>);

/// What the per-run plots draw: one run's monitor samples and where its threads ran.
#[derive(Clone, Debug, Default)]
pub struct RunView {
    /// Which run ("run 12: 2 threads, place os").
    pub label: String,
    /// The monitor's samples during the run (empty when the sweep was not monitored).
    pub samples: Vec<Sample>,
    /// Every thread shown.
    pub threads: Vec<ThreadView>,
    /// Where each CPU sits (core, L3, NUMA node), for grouping the per-CPU graphs.
    pub places: Vec<CpuPlace>,
    /// Every measured run of an adaptive throttle, with its trace (time, limit, throughput),
    /// in run order (empty when the sweep had none).
    pub throttle_traces: Vec<ThrottleTrace>,
}

/// One run's adaptive-throttle trace, for the report's throttle plot.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThrottleTrace {
    /// Which run ("run 12: 32 threads, place os, throttle adaptive").
    pub label: String,
    /// Its samples, oldest first.
    pub samples: Vec<ThrottleSample>,
}

impl ThrottleTrace {
    /// The traces of every measured, successful run in `lines` that kept one.
    pub fn of_runs(lines: &[RunLine]) -> Vec<Self> {
        lines
            .iter()
            .filter(|l| !l.warmup && l.status == Status::Ok)
            .filter_map(|l| {
                let samples = &l.record.as_ref()?.throttle_trace;
                (!samples.is_empty()).then(|| ThrottleTrace {
                    label: format!("run {}: {}", l.seq, l.config),
                    samples: samples.clone(),
                })
            })
            .collect()
    }
}

impl RunView {
    /// The run the per-run plots show: the recommended configuration's (one that was monitored
    /// if any was), else the last successful run. `samples_of` reads a run's monitor samples
    /// (by sequence number; `None` when there are none). The threads are the workers' own
    /// records of where they ran, or — for programs, whose threads coretune does not start —
    /// the monitor's.
    pub fn choose(
        report: &SweepReport,
        lines: &[RunLine],
        samples_of: &dyn Fn(usize) -> Option<Vec<Sample>>,
        places: &[CpuPlace],
    ) -> Self {
        let chosen = report.recommendation.as_ref().map(|r| &r.config);
        let ok: Vec<&RunLine> = lines
            .iter()
            .filter(|l| !l.warmup && l.status == Status::Ok)
            .collect();
        let of_chosen: Vec<&RunLine> = ok
            .iter()
            .copied()
            .filter(|l| Some(&l.config) == chosen)
            .collect();
        let pool = if of_chosen.is_empty() {
            &ok
        } else {
            &of_chosen
        };
        let monitored = pool
            .iter()
            .rev()
            .find_map(|l| samples_of(l.seq).map(|s| (*l, s)));
        let throttle_traces = ThrottleTrace::of_runs(lines);
        let Some((line, samples)) = monitored.or_else(|| pool.last().map(|l| (*l, Vec::new())))
        else {
            return Self {
                throttle_traces,
                ..Self::default()
            };
        };
        let workers = line
            .record
            .as_ref()
            .map(|r| r.measurement.threads.clone())
            .unwrap_or_default();
        // Several copies each number their workers from 0 (the records come copy after copy):
        // each thread is labelled with its copy, and a program's with its process.
        let copies = line.config.family.instances > 1;
        let threads = if workers.iter().any(|w| !w.cpus_seen.is_empty()) {
            let mut copy = 0;
            let mut previous: Option<usize> = None;
            workers
                .into_iter()
                .map(|w| {
                    if previous.is_some_and(|p| w.worker <= p) {
                        copy += 1;
                    }
                    previous = Some(w.worker);
                    let label = if copies {
                        format!("copy {copy} worker {} (tid {})", w.worker, w.tid)
                    } else {
                        format!("worker {} (tid {})", w.worker, w.tid)
                    };
                    (label, w.cpus_seen, w.migrations)
                })
                .collect()
        } else {
            crate::program::watch::summarize(&samples)
                .threads
                .into_iter()
                .take(16)
                .map(|t| {
                    let label = if copies {
                        format!("{} (pid {}, tid {})", t.name, t.pid, t.tid)
                    } else {
                        format!("{} (tid {})", t.name, t.tid)
                    };
                    (label, t.cpus_seen, t.migrations)
                })
                .collect()
        };
        Self {
            label: format!("run {}: {}", line.seq, line.config),
            samples,
            threads,
            places: places.to_vec(),
            throttle_traces,
        }
    }
}
