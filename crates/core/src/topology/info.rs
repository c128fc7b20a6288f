//! What a topology says of itself, as plain data: [`Counts`], [`Smt`], [`CpuKindInfo`],
//! [`NumaNodeInfo`], [`DistanceMatrix`], [`MissingPus`].

use std::collections::BTreeMap;

use serde::Serialize;

/// Object counts of a topology; keys as in `tests/data/topologies/expected.json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Packages (sockets).
    pub packages: usize,
    /// Dies (hwloc's Die objects; 0 when hwloc reports none).
    pub dies: usize,
    /// NUMA nodes, including CPU-less ones.
    pub numa_nodes: usize,
    /// L3 caches (on AMD, one per CCX).
    pub l3: usize,
    /// L2 caches.
    pub l2: usize,
    /// Physical cores.
    pub cores: usize,
    /// Processing units (hardware threads, the OS's CPUs).
    pub pus: usize,
}

/// SMT width: PUs per core.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Smt {
    /// Fewest PUs on a core.
    pub min: usize,
    /// Most PUs on a core.
    pub max: usize,
    /// PUs per core → number of cores with that many.
    pub histogram: BTreeMap<usize, usize>,
}

/// One kind of CPU core.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CpuKindInfo {
    /// Rank in hwloc's order (0 = most power-efficient).
    pub index: usize,
    /// hwloc's efficiency value, when known (higher = faster, hungrier).
    pub efficiency: Option<usize>,
    /// PUs of this kind (OS indexes).
    pub pus: Vec<usize>,
    /// What hwloc knows of it (CoreType, FrequencyMaxMHz, LinuxCapacity, ...).
    pub infos: BTreeMap<String, String>,
}

impl CpuKindInfo {
    /// A short name: hwloc's `CoreType` when present, else `kind N`.
    pub fn label(&self) -> String {
        self.infos
            .get("CoreType")
            .map_or_else(|| format!("kind {}", self.index), Clone::clone)
    }
}

/// One NUMA node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NumaNodeInfo {
    /// hwloc logical index.
    pub logical_index: usize,
    /// OS index (Linux node number).
    pub os_index: Option<usize>,
    /// Local memory in bytes (0 when unknown).
    pub local_memory: u64,
    /// PUs local to it (OS indexes).
    pub pus: Vec<usize>,
}

/// A distance matrix between NUMA nodes, row-major by logical index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DistanceMatrix {
    /// hwloc's name for it (`NUMALatency`, ...).
    pub name: String,
    /// OS index of each row's node.
    pub os_indexes: Vec<Option<usize>>,
    /// The values, `n × n`, row-major.
    pub values: Vec<u64>,
}

/// PUs the machine has that a default load leaves out.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MissingPus {
    /// Offline CPUs.
    pub offline: Vec<usize>,
    /// Online but not allowed (cgroup cpuset, or hwloc's allowed set).
    pub disallowed: Vec<usize>,
}
