//! The machine: its topology as hwloc sees it ([`Topology`], loaded from the live system or a
//! description of another one, [`TopologySource`]), the kinds of object coretune names
//! ([`ObjKind`]), the CPUs this process may really use ([`CpuBudget`]), how Windows groups its
//! processors ([`groups`]), everything `coretune topo` reports ([`Facts`]) and the
//! reproducibility record of a sweep ([`MachineRecord`]).
//!
//! Every command that needs a topology takes the same `--input`: nothing for the live machine, a
//! hwloc XML file, or a hwloc synthetic description (`"pack:2 numa:2 core:8 pu:2"`). A saved
//! `/sys` + `/proc` tree is hwloc's "fsroot" input; hwloc only reads it through the
//! `HWLOC_FSROOT` environment variable, so the CLI converts it to XML in a child process and hands
//! the XML here (see [`TopologySource::Xml`]).
//!
//! Counting follows hwloc's default load, as `hwloc-calc -N TYPE all` does: disallowed PUs are
//! not part of the topology, and an object counts when its CPU set intersects the topology's.
//! NUMA nodes are the exception: every NUMA node counts, CPU-less ones included, as
//! `hwloc-info` lists them.
//!
//! Objects of one type are numbered in machine order (the order of the tree), which is hwloc's
//! logical order wherever hwloc keeps the type on one level. hwloc can put one type on several
//! levels — in a QEMU guest whose L1 caches are per thread, a core whose SMT sibling went offline
//! sits below its L1 cache while the other cores sit above theirs — and then numbers each level
//! from 0, so two cores would both be `L#0` (and `hwloc-calc core:N` refuses: "found multiple
//! levels"). coretune numbers such a type across its levels instead ([`Topology::objects_in_order`],
//! [`Topology::logical_index`]), so `core:1` is the machine's second core whatever level it is on.

mod budget;
mod cache;
pub mod facts;
pub mod groups;
mod info;
mod kind;
mod machine;
mod model;
mod source;
mod tree;

pub use budget::{CgroupCpuset, CpuBudget, Quota};
pub use facts::{Facts, TOPO_SCHEMA};
pub use info::{Counts, CpuKindInfo, DistanceMatrix, MissingPus, NumaNodeInfo, Smt};
pub use kind::ObjKind;
pub use machine::{CpuSettings, MachineRecord, topology_summary};
pub use model::Topology;
pub use source::{LoadOptions, RestrictError, TopologyError, TopologySource};
pub use tree::{NodeKind, TopoNode};

#[cfg(test)]
mod test;
