//! What a built-in workload is: the [`Workload`] trait (its result typed, [`Workload::Output`])
//! and [`DynWorkload`], the same workload with its result type erased, which a sweep or the
//! harness holds of any workload; the [`RunConfig`] a run gets, its [`RunOutput`] and
//! [`Work`], [`Size`], [`Unit`], [`Throughput`], and [`WorkloadError`].

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::grid::{Grid, MachineCounts};
use crate::measure::ThreadTracker;

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

/// What a run produced, to be verified: the work done and the workload's result (its
/// [`Workload::Output`]; for a [`DynWorkload`], an [`Unverified`] result that verifies itself).
#[derive(Debug)]
pub struct RunOutput<T> {
    /// The work done.
    pub work: Work,
    /// The workload's result.
    pub result: T,
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

/// A built-in workload, its result of its own type ([`Workload::Output`]). A sweep and the
/// harness take any workload as a [`DynWorkload`], which every `Workload` is.
pub trait Workload: Send + Sync {
    /// What a run computes, for [`Workload::verify`] to check.
    type Output: Send;

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
    ) -> Result<RunOutput<Self::Output>, WorkloadError>;

    /// Checks a run's result. `Err` says what is wrong.
    ///
    /// # Errors
    ///
    /// A description of the first discrepancy found.
    fn verify(&self, result: &Self::Output) -> Result<(), String>;

    /// A checksum of the run's result, equal across correct runs of the same instance
    /// (`None` for workloads whose result is only a count).
    fn checksum(&self, result: &Self::Output) -> Option<u64> {
        let _ = result;
        None
    }
}

/// A [`Workload`] with its result type erased, so that one `Box<dyn DynWorkload>` holds any
/// workload: its run's result comes back bound to the workload ([`Unverified`]), to be checked
/// after the run is measured. Every `Workload` is one; nothing else implements it.
pub trait DynWorkload: Send + Sync {
    /// [`Workload::name`].
    fn name(&self) -> &'static str;

    /// [`Workload::describe`].
    fn describe(&self) -> String;

    /// [`Workload::default_threads`].
    fn default_threads(&self) -> Option<usize>;

    /// [`Workload::default_grid`].
    fn default_grid(&self, machine: MachineCounts) -> Grid;

    /// [`Workload::run`], its result bound to the workload for [`Unverified::verify`].
    ///
    /// # Errors
    ///
    /// [`WorkloadError`] when the run could not complete.
    fn run_unverified<'a>(
        &'a self,
        config: &RunConfig<'_>,
        tracker: &ThreadTracker,
    ) -> Result<RunOutput<Unverified<'a>>, WorkloadError>;
}

impl<W: Workload> DynWorkload for W {
    fn name(&self) -> &'static str {
        Workload::name(self)
    }

    fn describe(&self) -> String {
        Workload::describe(self)
    }

    fn default_threads(&self) -> Option<usize> {
        Workload::default_threads(self)
    }

    fn default_grid(&self, machine: MachineCounts) -> Grid {
        Workload::default_grid(self, machine)
    }

    fn run_unverified<'a>(
        &'a self,
        config: &RunConfig<'_>,
        tracker: &ThreadTracker,
    ) -> Result<RunOutput<Unverified<'a>>, WorkloadError> {
        let RunOutput { work, result } = self.run(config, tracker)?;
        Ok(RunOutput {
            work,
            result: Unverified(Box::new(Bound {
                workload: self,
                result,
            })),
        })
    }
}

/// A run's result with the workload that checks it, its type erased ([`DynWorkload`]).
pub struct Unverified<'a>(Box<dyn Check + Send + 'a>);

impl Unverified<'_> {
    /// [`Workload::verify`] of the result.
    ///
    /// # Errors
    ///
    /// A description of the first discrepancy found.
    pub fn verify(&self) -> Result<(), String> {
        self.0.verify()
    }

    /// [`Workload::checksum`] of the result.
    pub fn checksum(&self) -> Option<u64> {
        self.0.checksum()
    }
}

impl fmt::Debug for Unverified<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Unverified")
    }
}

/// What [`Unverified`] can do with the result it hides.
trait Check {
    fn verify(&self) -> Result<(), String>;
    fn checksum(&self) -> Option<u64>;
}

/// A workload and one run's result.
struct Bound<'a, W: Workload> {
    workload: &'a W,
    result: W::Output,
}

impl<W: Workload> Check for Bound<'_, W> {
    fn verify(&self) -> Result<(), String> {
        self.workload.verify(&self.result)
    }

    fn checksum(&self) -> Option<u64> {
        self.workload.checksum(&self.result)
    }
}
