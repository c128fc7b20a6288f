//! coretune-core: the machine's topology, CPU sets and placement, the built-in workloads, the
//! sweep engine and its statistics. The `coretune` binary is a thin layer over this crate (it
//! parses arguments, shows progress and writes report files); the thread pool lives in
//! `coretune-pool`, which knows nothing of hwloc.
//!
//! Everything is re-exported here; the modules behind it are private. In the order data flows
//! (see `ARCHITECTURE.md`):
//!
//! - **the machine**: [`Topology`] (hwloc, live or from XML/synthetic descriptions), its tree
//!   ([`TopoNode`]), the [`CpuBudget`] this process really has, the [`MachineRecord`];
//! - **CPU sets and placement**: [`CpuSetExpr`] (hwloc-calc's location language and more),
//!   [`Format`], [`plan`] → [`Placement`] ([`Policy`], [`Binding`]); hwloc-calc and
//!   hwloc-distrib themselves ([`Calc`], [`hwloc_distrib`]), for the drop-ins;
//! - **applying it to programs**: [`thread_env`], [`spawn_program`], [`run_program`],
//!   [`rebind_process`], and thread by thread through the preloaded pinning library
//!   ([`inspect_program`], [`per_thread`], [`repin_process`], [`check_pinning`]);
//! - **workloads** that verify their own answers ([`Workload`], [`build_workload`]) and how a run
//!   is measured ([`run_measured`], [`Measurement`]);
//! - **the sweep**: a [`Grid`] of [`Config`]s, a [`Runner`] that makes one run, [`execute`] with
//!   its [`RunLog`], the results folder ([`SweepFolder`]), [`summarize`], [`recommend`],
//!   [`apply_lines`] and the report model ([`SweepReport`], [`RunView`]);
//! - **fleets**: sweeps on every node type of a Slurm cluster ([`SlurmFleet`], [`Slurm`]) and
//!   their merged report ([`FleetFolder`], [`FleetReport`]);
//! - **watching** a running program ([`Sampler`], [`Monitor`], [`summarize_watch`]);
//! - **keeping a placement in force**: rules files ([`RuleSet`]) applied to running processes
//!   ([`Enforcer`]) and, by a daemon, to every process that starts ([`watch_rules`]); CPUs kept
//!   free of every process ([`plan_reserve`], [`apply_reserve`], [`undo_reserve`]).
//!
//! ```
//! use coretune_core::{Binding, Policy, Topology, TopologySource, plan};
//!
//! // Plan for a machine this is not running on: 2 packages of 8 cores with 2 PUs each.
//! let topo = Topology::load(&TopologySource::Synthetic("pack:2 core:8 pu:2".into()))?;
//! let counts = topo.counts();
//! assert_eq!((counts.packages, counts.cores, counts.pus), (2, 16, 32));
//! // Spread as hwloc-distrib does: two threads per package, as far apart as they go.
//! let placement = plan(&topo, 4, Policy::Spread, None, Binding::Pu)?;
//! assert_eq!(placement.thread_cpus(), vec![vec![0], vec![8], vec![16], vec![24]]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]
#![deny(unsafe_code)]

mod budget;
mod cpuset;
mod fleet;
mod groups;
mod launch;
mod machine;
mod measure;
mod noise;
mod pin;
mod placement;
mod reserve;
mod rules;
mod stats;
mod sweep;
mod sys;
#[cfg(test)]
mod test_util;
mod topology;
mod watch;
mod workload;

// The machine.
pub use budget::{CgroupCpuset, CpuBudget, Quota};
pub use hwlocality::bitmap::Bitmap;
pub use hwlocality::cpu::cpuset::CpuSet;
pub use machine::{MachineRecord, topology_summary};
pub use sys::SysError;
pub use topology::{
    Counts, CpuKindInfo, DistanceMatrix, LoadOptions, MissingPus, NodeKind, NumaNodeInfo,
    RestrictError, Smt, TopoNode, Topology, TopologyError, TopologySource, set_from_indexes,
    set_to_vec,
};

// CPU sets and placement.
pub use cpuset::{
    Atom, Calc, CalcStop, CpuSetError, CpuSetExpr, CpusetFormat, Format, FormatError, IndexRange,
    KindSel, LOCAL_NUMANODE_FLAGS, Level, LocationSettings, MAX_CPU, Message, ObjKind, Op,
    OutputSettings, PreparedOutput, RESTRICT_FLAGS, ResolveOptions, Resolved, Term, Warning,
    c_atoi, c_atol, format_list, hwloc_string, list_string, parse_flags, parse_hwloc_bitmap,
    parse_list, resolve as resolve_cpus, systemd_dbus_string, taskset_string,
    warnings as cpu_set_warnings,
};
pub use groups::{GROUP_SIZE, GroupMask, GroupSource, ProcessorGroups, is_windows, windows_lines};
pub use placement::{
    Binding, DistribError, DistribOptions, MAX_THREADS, Placement, PlacementError, Policy,
    ThreadPlacement, distribute, hwloc_distrib, plan,
};

// Applying a placement to programs.
pub use launch::{
    LaunchError, Launched, affinity_of, exit_code, find_program, rebind_process, repin_process,
    run as run_program, shell_command, spawn as spawn_program, thread_count, thread_env,
};

// Thread-by-thread placement of other programs.
pub use pin::{
    LIB_FILE as PIN_LIB_FILE, LIB_VAR as PIN_LIB_VAR, Mechanism, Obstacle, OffPlace, OpenMpRuntime,
    PLAN_VAR as PIN_PLAN_VAR, PerThread, PinError, PinRecord, ProgramInfo, SkipMask,
    check_samples as check_pinning, fallback as pin_fallback, find_library as find_pin_library,
    inspect_program, per_thread,
};

// Keeping a placement in force: rules applied as programs start.
pub use rules::{
    Action as RuleActionRecord, Enforcer, EventSource, Outcome as RuleOutcome, Rule, RuleAction,
    RuleEffect, RuleSet, RuleWarning, RulesError, Trigger as RuleTrigger, WatchEvent, WatchOptions,
    keeping_in_force_is_supported, watch as watch_rules,
};

pub use reserve::{
    RESERVE_SCHEMA, ReserveError, ReserveMethod, ReservePlan, ReserveStep, SYSTEMD_UNITS,
    apply_reserve, default_state_path as reserve_state_path, ensure_not_reserved, plan_reserve,
    read_reserve_state, reserve_rules_path, undo_reserve,
};

// Workloads, and how a run is measured.
pub use measure::{
    ChildProbe, Measurement, MigrationSource, Probe, RssSource, ThreadProbe, ThreadRecord,
    ThreadTracker,
};
pub use noise::{BUSY_OTHERS_CPUS, BUSY_STEAL, Noise, NoiseProbe};
pub use stats::{Summary, UslFit};
pub use workload::{
    NAMES as WORKLOAD_NAMES, RunConfig, RunOutput, RunRecord, Size, StartHook, ThrottleSample,
    Throughput, Unit, Work, Workload, WorkloadError, WorkloadSpec, build as build_workload,
    run_measured, run_workers,
};

// The sweep engine.
pub use sweep::{
    Config, ConfigError, ConfigRow, ConfigSummary, Cpus, Estimate, FLEET_SCHEMA, Family, FleetCell,
    FleetChoice, FleetFolder, FleetReport, FleetRow, Grid, MachineCounts, NodeInfo, NodeTypeReport,
    Outcome, Plan, PlanCost, PlanEstimate, Progress, Recommendation, RunCounts, RunLine, RunLog,
    RunResult, RunSettings, RunView, Runner, SUMMARY_SCHEMA, SWEEP_SCHEMA, Status, Strategy,
    SweepError, SweepFolder, SweepReport, SweepResults, SweepSpec, Target, ThreadView,
    ThrottleSpec, ThrottleTrace, TypeLoss, UslRow, apply_lines, default_threads, execute,
    monitor_file, parse_threads, recommend, substitute, summarize, timestamped_dir,
};

// Sweeps across a Slurm cluster.
pub use fleet::{
    FleetError, FleetSpec, JobCounts, JobRecord, NodeProgress, QueueEntry, SLURM_FLEET_SCHEMA,
    Slurm, SlurmFleet, SlurmTarget, Submission, TargetKind, Where,
};

// Watching a program run.
pub use watch::{
    CpuBusy, CpuPlace, CpuSummary, CpuTimes, InterruptSummary, Monitor,
    SUMMARY_SCHEMA as WATCH_SCHEMA, Sample, Sampler, ThreadSample, ThreadSummary, WatchError,
    WatchSummary, cpu_places, summarize as summarize_watch,
};
