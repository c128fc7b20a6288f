//! coretune-core: the machine's topology, CPU sets and placement, the built-in workloads, the
//! sweep engine and its statistics. The `coretune` binary is a thin layer over this crate (it
//! parses arguments, shows progress and writes report files); the thread pool lives in
//! `coretune-pool`, which knows nothing of hwloc.
//!
//! One public module per concept, in the order the crate is built up (each uses only those
//! above it; `tests/layers.rs` checks it, and `ARCHITECTURE.md` draws it):
//!
//! - [`topology`]: the machine (hwloc, live or from XML/synthetic descriptions), the CPU budget
//!   this process really has, its Windows processor groups, the reproducibility record;
//! - [`hwloc`]: hwloc-calc and hwloc-distrib themselves, for the drop-ins and as the ground the
//!   CPU-set language and the `spread` placement stand on;
//! - [`cpuset`]: coretune's CPU-set language and its output formats;
//! - [`placement`]: which CPUs each of N threads gets ([`plan`] → [`Placement`]);
//! - [`program`]: other programs started, rebound, pinned thread by thread and watched;
//! - [`measure`]: what a run costs, how quiet the machine was, the statistics of repeats;
//! - [`grid`]: one configuration of a sweep and the grid of them;
//! - [`workload`]: the built-in workloads, each verifying its own answer;
//! - [`sweep`]: the engine (runs, search, log, results folder, recommendation, report model);
//! - [`fleet`]: sweeps on every node type of a Slurm cluster, merged into one report;
//! - [`enforce`]: keeping a placement in force (rules, CPUs reserved);
//! - [`adapt`]: keeping a running program at its best online, judged by its own figure;
//! - [`doctor`]: what this machine lets each of the above do, and what they do instead.
//!
//! The root re-exports the few types nearly every user needs.
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

// The platform layer: private, at the bottom (imports nothing of the crate).
mod sys;

pub mod topology;

pub mod hwloc;

pub mod cpuset;

pub mod placement;

pub mod memory;

pub mod program;

pub mod measure;

pub mod grid;

pub mod workload;

pub mod sweep;

pub mod fleet;

pub mod enforce;

pub mod adapt;

pub mod doctor;

#[cfg(test)]
mod test_util;

pub use hwlocality::bitmap::Bitmap;
pub use hwlocality::cpu::cpuset::CpuSet;

pub use cpuset::CpuSetExpr;
pub use placement::{Binding, PlaceSpec, Placement, Policy, plan, plan_spec};
pub use sweep::{Runner, SweepFolder, SweepReport, SweepSpec};
pub use sys::SysError;
pub use topology::{Topology, TopologySource};
pub use workload::Workload;
