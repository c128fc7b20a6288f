//! Built-in workloads ([`Workload`], made by [`build`] from a [`WorkloadSpec`]): real jobs that
//! check their own answers, so that `coretune tune` works with nothing installed and a broken
//! parallel run can never look fast. One file each: `raymesh`, `membw`, `mixed`, `sum`, `spawn`.
//!
//! Each workload is prepared once (inputs generated, reference answers computed), then run any
//! number of times under a [`RunConfig`] — thread count, each worker's CPU set and steal order
//! (a placement as plain data), a start hook, and optionally a limit on how many workers compute
//! at once — and each run's output is verified outside the measured region. The workers are a
//! coretune pool's ([`run_workers`]), so the placement reaches them. [`run_measured`] is the one place that measures a run
//! ([`crate::measure`]), used by `coretune bench` and by every run of a sweep.

mod membw;
mod mixed;
mod raymesh;
mod spawn;
mod sum;

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::grid::{Grid, MachineCounts};
use crate::measure::{Measurement, Probe, ThreadProbe, ThreadTracker};

/// How big a job to run. Each workload maps these to its own parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Size {
    /// Well under a second on one thread: tests and quick looks.
    Small,
    /// The workload's reference size (raymesh: the article's 3 × 975,065 rays).
    #[default]
    Default,
    /// Several times the default, for machines with many cores.
    Large,
}

impl Size {
    /// Every size, smallest first.
    pub const ALL: [Size; 3] = [Size::Small, Size::Default, Size::Large];
}

impl FromStr for Size {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "small" => Ok(Size::Small),
            "default" => Ok(Size::Default),
            "large" => Ok(Size::Large),
            other => Err(format!(
                "unknown size '{other}' (expected small, default or large)"
            )),
        }
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Size::Small => "small",
            Size::Default => "default",
            Size::Large => "large",
        })
    }
}

/// The unit of a workload's own throughput figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Unit {
    /// Nanoseconds per work item (lower is better).
    #[serde(rename = "ns/item")]
    NsPerItem,
    /// Million rays per second.
    #[serde(rename = "Mrays/s")]
    MraysPerSec,
    /// Gigabytes (10^9 bytes) per second.
    #[serde(rename = "GB/s")]
    GbPerSec,
    /// Tasks per second.
    #[serde(rename = "tasks/s")]
    TasksPerSec,
    /// Whole runs per second (an external program, whose work coretune cannot count).
    #[serde(rename = "runs/s")]
    RunsPerSec,
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unit::NsPerItem => "ns/item",
            Unit::MraysPerSec => "Mrays/s",
            Unit::GbPerSec => "GB/s",
            Unit::TasksPerSec => "tasks/s",
            Unit::RunsPerSec => "runs/s",
        })
    }
}

/// A workload's throughput figure.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// The number.
    pub value: f64,
    /// Its unit.
    pub unit: Unit,
}

impl fmt::Display for Throughput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.value;
        let digits = if v >= 100.0 {
            0
        } else if v >= 10.0 {
            1
        } else {
            2
        };
        write!(f, "{v:.digits$} {}", self.unit)
    }
}

/// The work a run did, from which its throughput follows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Work {
    /// How many units of work (rays, bytes, tasks, items).
    pub amount: f64,
    /// What the throughput is expressed in.
    pub unit: Unit,
    /// The time of the measured kernel, when the workload times a part of its run (STREAM times
    /// its loops, not the first-touch initialisation); `None` = the whole run's wall time.
    pub kernel_time: Option<Duration>,
}

impl Work {
    /// Throughput over `wall` (or the kernel time, when the workload measured one).
    pub fn throughput(&self, wall: Duration) -> Throughput {
        let secs = self.kernel_time.unwrap_or(wall).as_secs_f64().max(1e-12);
        let value = match self.unit {
            Unit::NsPerItem => secs * 1e9 / self.amount.max(1.0),
            Unit::MraysPerSec => self.amount / secs / 1e6,
            Unit::GbPerSec => self.amount / secs / 1e9,
            Unit::TasksPerSec | Unit::RunsPerSec => self.amount / secs,
        };
        Throughput {
            value,
            unit: self.unit,
        }
    }
}

/// A start hook: called on worker `i`'s thread before it does any work (where a pool that takes
/// no CPU sets is pinned). Shared, because thread pools keep their start handler for their whole life.
pub type StartHook = std::sync::Arc<dyn Fn(usize) + Send + Sync>;

/// How one run is configured.
#[derive(Clone)]
pub struct RunConfig<'a> {
    /// Worker threads.
    pub threads: usize,
    /// Worker `i` runs on `cpus[i % cpus.len()]` (OS CPU numbers); `None` = unpinned
    /// ([`crate::Placement::pool_cpus`]).
    pub cpus: Option<Vec<Vec<usize>>>,
    /// For each worker, the workers its pool steals from, nearest first
    /// ([`crate::Placement::steal_orders`]); `None` = the pool's round-robin.
    pub steal_order: Option<Vec<Vec<usize>>>,
    /// Called on worker `i`'s thread before it does any work (after pinning).
    pub start_hook: Option<StartHook>,
    /// At most this many workers run at once: each workload holds a permit
    /// ([`coretune_pool::ThrottleSeat`], kept from one unit to the next) over its units of work
    /// (a pass over a sum slice, a raymesh block, a whole mixed task, its blocking included, as a
    /// pool thread stays taken while its task blocks) and reports each finished unit.
    pub throttle: Option<&'a coretune_pool::Throttle>,
}

impl fmt::Debug for RunConfig<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunConfig")
            .field("threads", &self.threads)
            .field("cpus", &self.cpus)
            .field("steal_order", &self.steal_order)
            .field("start_hook", &self.start_hook.is_some())
            .field(
                "throttle",
                &self.throttle.map(coretune_pool::Throttle::limit),
            )
            .finish()
    }
}

impl RunConfig<'_> {
    /// `threads` workers, unpinned.
    pub fn threads(threads: usize) -> RunConfig<'static> {
        RunConfig {
            threads,
            cpus: None,
            steal_order: None,
            start_hook: None,
            throttle: None,
        }
    }

    /// A coretune-pool builder for this run: `threads` workers, pinned to `cpus`, stealing in
    /// `steal_order`, each running the start hook.
    pub fn pool_builder(&self) -> coretune_pool::ThreadPoolBuilder {
        let mut builder = coretune_pool::ThreadPoolBuilder::new().num_threads(self.threads);
        if let Some(cpus) = &self.cpus {
            builder = builder.cpus(cpus.clone());
        }
        if let Some(order) = &self.steal_order {
            builder = builder.steal_order(order.clone());
        }
        if let Some(hook) = self.start_hook.clone() {
            builder = builder.start_handler(move |i| hook(i));
        }
        builder
    }

    /// A start hook that pins worker `i` to `cpus[i % cpus.len()]`, then runs the start hook:
    /// for pools that take code, not CPU sets (rayon, tokio).
    ///
    /// The hook panics with a message naming the worker and its CPUs if the kernel refuses the
    /// binding.
    pub fn pinning_start_hook(&self) -> Option<StartHook> {
        let hook = self.start_hook.clone();
        let Some(cpus) = self.cpus.clone().filter(|c| !c.is_empty()) else {
            return hook;
        };
        let sets: Vec<hwlocality::cpu::cpuset::CpuSet> = cpus
            .iter()
            .map(|c| crate::sys::set_from_indexes(c.iter().copied()))
            .collect();
        Some(std::sync::Arc::new(move |worker: usize| {
            let set = &sets[worker % sets.len()];
            if let Err(e) = crate::sys::set_task_affinity(0, set) {
                panic!("pinning worker {worker} to CPUs {set}: {e}");
            }
            if let Some(hook) = &hook {
                hook(worker);
            }
        }))
    }
}

/// What a run produced, to be verified.
#[derive(Debug)]
pub struct RunOutput {
    /// The work done.
    pub work: Work,
    /// The workload's result, opaque to the harness.
    pub result: Box<dyn std::any::Any + Send>,
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkloadError {
    /// A parameter is out of range.
    #[error("{workload}: {message}")]
    BadParameter {
        /// The workload.
        workload: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A worker thread panicked; the run is void.
    #[error("{workload}: a worker panicked: {message}")]
    Panicked {
        /// The workload.
        workload: &'static str,
        /// The panic message.
        message: String,
    },
    /// The operating system refused a thread or a resource.
    #[error("{workload}: {message}")]
    System {
        /// The workload.
        workload: &'static str,
        /// What failed.
        message: String,
    },
}

/// A built-in workload.
pub trait Workload: Send + Sync {
    /// Its name on the command line.
    fn name(&self) -> &'static str;

    /// A one-line description of this instance's parameters.
    fn describe(&self) -> String;

    /// The thread count of the experiment, when the workload has one of its own (`sum`: the
    /// article's 64 threads); `None` = as many as the CPUs the process may use.
    fn default_threads(&self) -> Option<usize> {
        None
    }

    /// The grid `coretune tune` sweeps when the user gives no axis values; the command line
    /// replaces the axes it names. Default: [`Grid::default_for`].
    fn default_grid(&self, machine: MachineCounts) -> Grid {
        Grid::default_for(machine)
    }

    /// Runs once under `config`, recording each worker in `tracker`.
    ///
    /// # Errors
    ///
    /// [`WorkloadError`] when the run could not complete.
    fn run(
        &self,
        config: &RunConfig<'_>,
        tracker: &ThreadTracker,
    ) -> Result<RunOutput, WorkloadError>;

    /// Checks a run's result. `Err` says what is wrong.
    ///
    /// # Errors
    ///
    /// A description of the first discrepancy found.
    fn verify(&self, output: &RunOutput) -> Result<(), String>;

    /// A checksum of the run's result, equal across correct runs of the same instance
    /// (`None` for workloads whose result is only a count).
    fn checksum(&self, output: &RunOutput) -> Option<u64> {
        let _ = output;
        None
    }
}

/// One measured, verified run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// What it cost.
    #[serde(flatten)]
    pub measurement: Measurement,
    /// The workload's own figure.
    pub throughput: Throughput,
    /// Whether verification passed.
    pub verified: bool,
    /// Why verification failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_error: Option<String>,
    /// The result checksum, for workloads that have one. Written as a decimal string: it
    /// exceeds 2^53, which jq and JavaScript round (read back from a number too, as coretune
    /// 0.1.0 wrote it).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "checksum_text"
    )]
    pub checksum: Option<u64>,
    /// An adaptive throttle's samples during the run (empty for no or a fixed throttle).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub throttle_trace: Vec<ThrottleSample>,
    /// How a pinned placement reached an external program's threads, and whether any was seen
    /// outside its place (absent for built-in workloads, unpinned runs and older folders).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinning: Option<Box<crate::program::pin::PinRecord>>,
    /// What coretune checked about the run against its configuration, and what did not match
    /// (absent in older folders): a run with a mismatch does not count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<Box<crate::program::Audit>>,
    /// The program's own figures read from its output (`tune --metric`), by name (empty for
    /// built-in workloads and sweeps without metrics).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub metrics: std::collections::BTreeMap<String, f64>,
}

/// One sample of an adaptive throttle: the limit in force and the throughput measured under it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThrottleSample {
    /// Seconds since the run's throttle was created.
    pub t_s: f64,
    /// The limit in force during the sample.
    pub limit: usize,
    /// Completions (work units) per second during the sample.
    pub throughput: f64,
}

impl From<coretune_pool::TraceSample> for ThrottleSample {
    fn from(s: coretune_pool::TraceSample) -> Self {
        Self {
            t_s: s.at.as_secs_f64(),
            limit: s.limit,
            throughput: s.throughput,
        }
    }
}

/// Runs `workload` once under `config`: measures the run, then verifies its result outside the
/// measured region.
///
/// # Errors
///
/// The workload's error when the run itself failed (a failed *verification* is not an error:
/// it is recorded in the returned record as `verified: false`).
pub fn run_measured(
    workload: &dyn Workload,
    config: &RunConfig<'_>,
) -> Result<RunRecord, WorkloadError> {
    let tracker = ThreadTracker::new();
    let probe = Probe::start();
    let output = workload.run(config, &tracker)?;
    let measurement = probe.finish(tracker.into_records());
    let verdict = workload.verify(&output);
    Ok(RunRecord {
        throughput: output.work.throughput(measurement.wall),
        verified: verdict.is_ok(),
        verify_error: verdict.err(),
        checksum: workload.checksum(&output),
        measurement,
        throttle_trace: config
            .throttle
            .map(|t| t.trace().into_iter().map(ThrottleSample::from).collect())
            .unwrap_or_default(),
        pinning: None,
        audit: None,
        metrics: std::collections::BTreeMap::new(),
    })
}

/// Runs `workload` as `configs.len()` copies at once (`tune --instances`), each on a pool of its
/// own built from its [`RunConfig`] (its part of the CPUs, its throttle), released together, and
/// measured as one run: the wall time is the slowest copy's, the CPU time and counters the
/// process's over all copies, the worker records every copy's in turn (copy 0's workers, then
/// copy 1's, ...). The figure is the aggregate one: the copies' work summed, over the slowest
/// copy's time (its measured kernel time, for a workload that times one). Every copy's result is
/// verified; one that fails fails the run. One copy is [`run_measured`].
///
/// # Errors
///
/// The first copy's error when a copy could not complete.
pub fn run_copies(
    workload: &dyn Workload,
    configs: &[RunConfig<'_>],
) -> Result<RunRecord, WorkloadError> {
    if let [one] = configs {
        return run_measured(workload, one);
    }
    let trackers: Vec<ThreadTracker> = configs.iter().map(|_| ThreadTracker::new()).collect();
    let go = std::sync::Barrier::new(configs.len());
    let probe = Probe::start();
    let outputs: Vec<Result<RunOutput, WorkloadError>> = std::thread::scope(|s| {
        let copies: Vec<_> = configs
            .iter()
            .zip(&trackers)
            .map(|(config, tracker)| {
                let go = &go;
                s.spawn(move || {
                    go.wait();
                    workload.run(config, tracker)
                })
            })
            .collect();
        copies
            .into_iter()
            .map(|copy| {
                copy.join().unwrap_or_else(|_| {
                    Err(WorkloadError::Panicked {
                        workload: workload.name(),
                        message: "a copy's thread panicked".into(),
                    })
                })
            })
            .collect()
    });
    let threads = trackers
        .into_iter()
        .flat_map(ThreadTracker::into_records)
        .collect();
    let measurement = probe.finish(threads);
    let outputs = outputs.into_iter().collect::<Result<Vec<_>, _>>()?;
    let work = Work {
        amount: outputs.iter().map(|o| o.work.amount).sum(),
        unit: outputs[0].work.unit,
        kernel_time: outputs.iter().filter_map(|o| o.work.kernel_time).max(),
    };
    let verdict = outputs
        .iter()
        .enumerate()
        .try_for_each(|(i, o)| workload.verify(o).map_err(|e| format!("copy {i}: {e}")));
    Ok(RunRecord {
        throughput: work.throughput(measurement.wall),
        verified: verdict.is_ok(),
        verify_error: verdict.err(),
        checksum: workload.checksum(&outputs[0]),
        measurement,
        throttle_trace: Vec::new(),
        pinning: None,
        audit: None,
        metrics: std::collections::BTreeMap::new(),
    })
}

/// Runs `body(worker, probe)` once on each of `config.threads` workers of a coretune pool built
/// for the run ([`RunConfig::pool_builder`]: pinned, with its steal order and start hook), each
/// recorded in `tracker`; a panic in any worker becomes [`WorkloadError::Panicked`].
///
/// # Errors
///
/// [`WorkloadError::BadParameter`] for zero threads, [`WorkloadError::Panicked`] when a worker
/// (or the start hook) panicked, [`WorkloadError::System`] when the pool could not be built (a
/// thread refused, or a worker's CPU set).
pub fn run_workers<F>(
    workload: &'static str,
    config: &RunConfig<'_>,
    tracker: &ThreadTracker,
    body: F,
) -> Result<(), WorkloadError>
where
    F: Fn(usize, &mut ThreadProbe) + Sync,
{
    if config.threads == 0 {
        return Err(WorkloadError::BadParameter {
            workload,
            message: "needs at least 1 thread".into(),
        });
    }
    // The first panic's message: a worker catches its own panic so the message is not lost in
    // the pool's re-raise; the start hook's goes through the pool's panic handler.
    let panicked = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
    let record = |panicked: &std::sync::Mutex<Option<String>>, message: String| {
        panicked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get_or_insert(message);
    };
    let from_hook = std::sync::Arc::clone(&panicked);
    let pool = config
        .pool_builder()
        .thread_name(move |worker| format!("{workload}-{worker}"))
        .panic_handler(move |panic| record(&from_hook, panic_message(panic.as_ref())))
        .build()
        .map_err(|e| WorkloadError::System {
            workload,
            message: match std::error::Error::source(&e) {
                Some(cause) => format!("{e}: {cause}"),
                None => e.to_string(),
            },
        })?;
    pool.broadcast(|worker| {
        let ran = catch_unwind(AssertUnwindSafe(|| {
            let mut probe = tracker.start(worker);
            body(worker, &mut probe);
            tracker.finish(probe);
        }));
        if let Err(panic) = ran {
            record(&panicked, panic_message(panic.as_ref()));
        }
    });
    drop(pool);
    let first = panicked
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    match first {
        Some(message) => Err(WorkloadError::Panicked { workload, message }),
        None => Ok(()),
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".into())
}

/// FNV-1a over 64-bit words: a cheap, stable checksum of a result table.
pub(crate) fn fnv1a(words: impl IntoIterator<Item = u64>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for w in words {
        for b in w.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// Which workload to build, at what size, with which overrides: the command line's workload
/// options as data (also recorded with every sweep, so a run can be repeated).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadSpec {
    /// `raymesh`, `membw` or `mixed`.
    pub name: String,
    /// Size preset; the overrides below win over it.
    pub size: Size,
    /// raymesh: rays per table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rays: Option<usize>,
    /// membw: MiB per array.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mib: Option<usize>,
    /// mixed: tasks per run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<usize>,
    /// mixed: compute per task, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_us: Option<u64>,
    /// mixed: blocking per task, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_us: Option<u64>,
    /// sum: numbers per thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// sum: times each thread sums its slice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u64>,
    /// spawn: work items per run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<usize>,
    /// spawn: which pool (`coretune`, `rayon`, `rayon-scope`, `tokio`, `crossbeam`, `mutex`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// spawn: coretune's batch submission.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub batch: bool,
}

/// Names of the workloads [`build`] knows.
pub const NAMES: &[&str] = &["raymesh", "membw", "mixed", "sum", "spawn"];

impl WorkloadSpec {
    /// The spec a sweep uses when the user gave no size: a workload whose default size is too
    /// long to repeat over a whole grid gets a smaller one (raymesh: 500,000
    /// rays per table, so that the default sweep takes about a minute on 2 cores).
    pub fn for_sweep(mut self, size_given: bool) -> Self {
        if self.name == "raymesh" && !size_given && self.rays.is_none() {
            self.rays = Some(raymesh::SWEEP_RAYS);
        }
        self
    }
}

/// Prepares the workload `spec` names. `llc_bytes` sizes membw (its arrays are 4 × the
/// last-level cache by default).
///
/// # Errors
///
/// [`WorkloadError::BadParameter`] for an unknown name or a parameter out of range.
pub fn build(spec: &WorkloadSpec, llc_bytes: usize) -> Result<Box<dyn Workload>, WorkloadError> {
    Ok(match spec.name.as_str() {
        "raymesh" => {
            let mut p = raymesh::Params::for_size(spec.size);
            if let Some(rays) = spec.rays {
                p.rays = rays;
            }
            Box::new(raymesh::RayMesh::new(p)?)
        }
        "membw" => {
            let mut p = membw::Params::for_size(spec.size, llc_bytes);
            if let Some(mib) = spec.mib {
                p.elements = mib << 17;
            }
            Box::new(membw::MemBw::new(p)?)
        }
        "mixed" => {
            let mut p = mixed::Params::for_size(spec.size);
            if let Some(tasks) = spec.tasks {
                p.tasks = tasks;
            }
            if let Some(us) = spec.compute_us {
                p.compute = Duration::from_micros(us);
            }
            if let Some(us) = spec.block_us {
                p.block = Duration::from_micros(us);
            }
            Box::new(mixed::Mixed::new(p)?)
        }
        "sum" => {
            let mut p = sum::Params::for_size(spec.size);
            if let Some(count) = spec.count {
                p.count = count;
            }
            if let Some(repeat) = spec.repeat {
                p.repeat = repeat;
            }
            Box::new(sum::Sum::new(p)?)
        }
        "spawn" => {
            let mut p = spawn::Params::for_size(spec.size);
            if let Some(items) = spec.items {
                p.items = items;
            }
            if let Some(pool) = &spec.pool {
                p.pool = pool
                    .parse()
                    .map_err(|message| WorkloadError::BadParameter {
                        workload: "spawn",
                        message,
                    })?;
            }
            p.batch = spec.batch;
            Box::new(spawn::Spawn::new(p)?)
        }
        other => {
            return Err(WorkloadError::BadParameter {
                workload: "workload",
                message: format!(
                    "unknown workload '{other}' (built in: {})",
                    NAMES.join(", ")
                ),
            });
        }
    })
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn build_knows_every_name_and_rejects_others() {
        for name in NAMES {
            let spec = WorkloadSpec {
                name: (*name).into(),
                size: Size::Small,
                ..WorkloadSpec::default()
            };
            assert_eq!(build(&spec, 1 << 20).unwrap().name(), *name);
        }
        let spec = WorkloadSpec {
            name: "nope".into(),
            ..WorkloadSpec::default()
        };
        let err = build(&spec, 1 << 20).err().unwrap().to_string();
        assert!(err.contains("unknown workload 'nope'"), "{err}");
        let spec = WorkloadSpec {
            name: "raymesh".into(),
            rays: Some(0),
            ..WorkloadSpec::default()
        };
        assert!(build(&spec, 1 << 20).is_err());
    }

    #[test]
    fn copies_run_at_once_and_count_their_work_together() {
        let spec = WorkloadSpec {
            name: "sum".into(),
            size: Size::Small,
            ..WorkloadSpec::default()
        };
        let w = build(&spec, 1 << 20).unwrap();
        let one = run_measured(w.as_ref(), &RunConfig::threads(1)).unwrap();
        // Each copy's worker pinned (both on CPU 0, which every machine has).
        let configs: Vec<RunConfig<'_>> = (0..2)
            .map(|_| RunConfig {
                cpus: Some(vec![vec![0]]),
                ..RunConfig::threads(1)
            })
            .collect();
        let two = run_copies(w.as_ref(), &configs).unwrap();
        assert!(two.verified, "{:?}", two.verify_error);
        assert_eq!(two.checksum, one.checksum);
        // Both copies' workers.
        assert_eq!(two.measurement.threads.len(), 2);
        assert_eq!(two.throughput.unit, one.throughput.unit);
        // The figure is the copies' work together over the slowest one's (kernel) time: two
        // copies of 10 tasks timed at 1 s and 2 s make 10 tasks/s, and one that fails its
        // check fails the run.
        struct Fixed;
        impl Workload for Fixed {
            fn name(&self) -> &'static str {
                "fixed"
            }
            fn describe(&self) -> String {
                String::new()
            }
            fn run(
                &self,
                config: &RunConfig<'_>,
                _: &ThreadTracker,
            ) -> Result<RunOutput, WorkloadError> {
                Ok(RunOutput {
                    work: Work {
                        amount: 10.0,
                        unit: Unit::TasksPerSec,
                        kernel_time: Some(Duration::from_secs(config.threads as u64)),
                    },
                    result: Box::new(config.threads),
                })
            }
            fn verify(&self, output: &RunOutput) -> Result<(), String> {
                match output.result.downcast_ref::<usize>() {
                    Some(3) => Err("three is wrong".into()),
                    _ => Ok(()),
                }
            }
        }
        let r = run_copies(&Fixed, &[RunConfig::threads(1), RunConfig::threads(2)]).unwrap();
        assert!(
            (r.throughput.value - 10.0).abs() < 1e-9,
            "{:?}",
            r.throughput
        );
        assert!(r.verified);
        let r = run_copies(&Fixed, &[RunConfig::threads(1), RunConfig::threads(3)]).unwrap();
        assert_eq!(r.verify_error.as_deref(), Some("copy 1: three is wrong"));
    }

    #[test]
    fn throughput_units() {
        let w = Work {
            amount: 2e6,
            unit: Unit::MraysPerSec,
            kernel_time: None,
        };
        assert!((w.throughput(Duration::from_secs(2)).value - 1.0).abs() < 1e-12);
        let w = Work {
            amount: 1e6,
            unit: Unit::NsPerItem,
            kernel_time: None,
        };
        assert!((w.throughput(Duration::from_millis(30)).value - 30.0).abs() < 1e-9);
        let w = Work {
            amount: 8e9,
            unit: Unit::GbPerSec,
            kernel_time: Some(Duration::from_secs(2)),
        };
        assert!((w.throughput(Duration::from_secs(100)).value - 4.0).abs() < 1e-12);
        assert_eq!(
            serde_json::to_value(Unit::MraysPerSec).unwrap(),
            serde_json::json!("Mrays/s")
        );
    }

    #[test]
    fn worker_panic_becomes_an_error() {
        let tracker = ThreadTracker::new();
        let err = run_workers("test", &RunConfig::threads(2), &tracker, |i, _| {
            assert!(i != 1, "worker one fails");
        })
        .unwrap_err();
        assert!(err.to_string().contains("worker one fails"), "{err}");
    }

    #[test]
    fn zero_threads_is_a_parameter_error() {
        let tracker = ThreadTracker::new();
        let err = run_workers("test", &RunConfig::threads(0), &tracker, |_, _| {}).unwrap_err();
        assert!(matches!(err, WorkloadError::BadParameter { .. }));
    }

    #[test]
    fn start_hook_runs_on_every_worker() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let seen = Arc::new(AtomicUsize::new(0));
        let seen2 = Arc::clone(&seen);
        let config = RunConfig {
            start_hook: Some(Arc::new(move |i: usize| {
                seen2.fetch_or(1 << i, Ordering::Relaxed);
            })),
            ..RunConfig::threads(3)
        };
        let tracker = ThreadTracker::new();
        run_workers("test", &config, &tracker, |_, _| {}).unwrap();
        assert_eq!(seen.load(Ordering::Relaxed), 0b111);
        assert_eq!(tracker.into_records().len(), 3);
    }

    #[test]
    fn workers_run_on_their_cpus_and_a_refused_set_is_an_error() {
        let cpu = crate::sys::set_to_vec(&crate::sys::task_affinity(0).unwrap())[0];
        let config = RunConfig {
            cpus: Some(vec![vec![cpu]]),
            steal_order: Some(vec![vec![1, 2], vec![2, 0], vec![0, 1]]),
            ..RunConfig::threads(3)
        };
        let tracker = ThreadTracker::new();
        run_workers("test", &config, &tracker, |_, probe| probe.sample()).unwrap();
        let records = tracker.into_records();
        assert_eq!(records.len(), 3);
        for r in &records {
            assert_eq!(
                r.cpus_seen.keys().copied().collect::<Vec<_>>(),
                [cpu],
                "{r:?}"
            );
        }
        let refused = RunConfig {
            cpus: Some(vec![vec![100_000]]),
            ..RunConfig::threads(2)
        };
        let err = run_workers("test", &refused, &ThreadTracker::new(), |_, _| {}).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("test: could not pin worker 0 to CPUs 100000: "),
            "{err}"
        );
    }

    #[test]
    fn a_worker_panic_is_an_error_with_its_message() {
        let err = run_workers(
            "test",
            &RunConfig::threads(2),
            &ThreadTracker::new(),
            |w, _| {
                assert!(w != 1, "worker one failed");
            },
        )
        .unwrap_err();
        assert!(matches!(err, WorkloadError::Panicked { .. }), "{err}");
        assert!(err.to_string().contains("worker one failed"), "{err}");
    }
}

/// `Option<u64>` as a decimal string, read from a string or a number.
mod checksum_text {
    use serde::{Deserialize, Deserializer, Serializer};

    #[allow(clippy::ref_option)] // serde's `with` passes a reference to the field
    pub(super) fn serialize<S: Serializer>(value: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(v) => s.serialize_str(&v.to_string()),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Number(u64),
            Text(String),
        }
        match Option::<Either>::deserialize(d)? {
            None => Ok(None),
            Some(Either::Number(n)) => Ok(Some(n)),
            Some(Either::Text(t)) => t.parse().map(Some).map_err(serde::de::Error::custom),
        }
    }

    #[cfg(test)]
    mod test {
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct R {
            #[serde(default, with = "super")]
            checksum: Option<u64>,
        }

        #[test]
        fn written_as_text_read_from_either() {
            let big = R {
                checksum: Some(15_639_989_007_075_704_049),
            };
            let text = serde_json::to_string(&big).unwrap();
            assert_eq!(text, r#"{"checksum":"15639989007075704049"}"#);
            assert_eq!(serde_json::from_str::<R>(&text).unwrap(), big);
            let old = r#"{"checksum":15639989007075704049}"#;
            assert_eq!(serde_json::from_str::<R>(old).unwrap(), big);
            assert_eq!(
                serde_json::from_str::<R>("{}").unwrap(),
                R { checksum: None }
            );
        }
    }
}
