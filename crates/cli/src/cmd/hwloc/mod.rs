//! hwloc's command-line tools as drop-ins: `coretune calc` (hwloc-calc) and `coretune distrib`
//! (hwloc-distrib), one file each, and what the two share in `common.rs` (hwloc's topology
//! input options, the load, `--restrict`, printing as a C program does).

pub(crate) mod calc;
mod common;
pub(crate) mod distrib;
