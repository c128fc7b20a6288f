//! coretune-core: the machine's topology, CPU sets and placement, the built-in workloads, sweeps
//! and their statistics. The `coretune` binary is a thin layer over this crate; the thread pool
//! lives in `coretune-pool`, which knows nothing of hwloc.
//!
//! ```
//! use coretune_core::topology::{Topology, TopologySource};
//!
//! // Plan for a machine this is not running on: 2 packages of 8 cores with 2 PUs each.
//! let topo = Topology::load(&TopologySource::Synthetic("pack:2 core:8 pu:2".into()))?;
//! let counts = topo.counts();
//! assert_eq!((counts.packages, counts.cores, counts.pus), (2, 16, 32));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]
#![deny(unsafe_code)]

pub mod budget;
pub mod cpuset;
pub mod launch;
pub mod machine;
pub mod measure;
pub mod noise;
pub mod placement;
pub mod stats;
pub mod sweep;
mod sys;
#[cfg(test)]
mod test_util;
pub mod topology;
pub mod watch;
pub mod workload;

pub use hwlocality;
pub use hwlocality::cpu::cpuset::CpuSet;
pub use sys::SysError;
