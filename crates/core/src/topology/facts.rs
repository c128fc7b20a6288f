//! What `coretune topo` reports about a machine, as one object: `coretune topo --json`
//! (`docs/topo.schema.json`).

use serde::Serialize;

use super::groups::{GroupSource, ProcessorGroups};
use super::{
    Counts, CpuBudget, CpuKindInfo, DistanceMatrix, NumaNodeInfo, Smt, Topology, topology_summary,
};

/// Version of `coretune topo --json`'s format; see `docs/topo.schema.json`.
pub const TOPO_SCHEMA: &str = "coretune-topo/1";

/// Everything `coretune topo` reports about a machine: `coretune topo --json`'s object.
#[derive(Debug, Serialize)]
pub struct Facts {
    /// [`TOPO_SCHEMA`].
    pub schema: &'static str,
    /// Where the topology came from (`this system`, a file, a synthetic description).
    pub source: String,
    /// Whether it is the machine this process runs on.
    pub this_system: bool,
    /// One line: packages, cores, PUs, NUMA nodes ([`topology_summary`]).
    pub summary: String,
    /// Object counts.
    pub counts: Counts,
    /// Hardware threads per core.
    pub smt: Smt,
    /// NUMA nodes with their CPUs and memory.
    pub numa_nodes: Vec<NumaNodeInfo>,
    /// hwloc's distance matrices.
    pub distances: Vec<DistanceMatrix>,
    /// hwloc's CPU kinds (hybrid cores), most efficient first.
    pub cpu_kinds: Vec<CpuKindInfo>,
    /// PUs that exist but are offline.
    pub offline_pus: Vec<usize>,
    /// PUs this process may not use.
    pub disallowed_pus: Vec<usize>,
    /// Windows processor groups, read or modelled.
    pub processor_groups: Groups,
    /// Only for the live machine: budgets of other machines are not knowable from a description.
    pub budget: Option<Budget>,
}

/// Windows processor groups, read from a Windows topology or modelled ([`ProcessorGroups`]).
#[derive(Debug, Serialize)]
pub struct Groups {
    /// `windows` or `modelled`.
    pub source: &'static str,
    /// Each group.
    pub groups: Vec<Group>,
}

/// One processor group.
#[derive(Debug, Serialize)]
pub struct Group {
    /// Its number.
    pub group: usize,
    /// Its PUs (OS indexes) in bit order.
    pub pus: Vec<usize>,
}

/// The CPU budget, with the sentence that explains it.
#[derive(Debug, Serialize)]
pub struct Budget {
    /// [`CpuBudget`]'s explanation, as `topo` prints it.
    pub explanation: String,
    /// The budget.
    #[serde(flatten)]
    pub budget: CpuBudget,
}

impl Facts {
    /// The facts of `topo`; the budget only when it is this system.
    pub fn gather(topo: &Topology) -> Self {
        let counts = topo.counts();
        let smt = topo.smt();
        let missing = topo.missing_pus();
        let budget = topo.is_this_system().then(|| {
            let budget = CpuBudget::live(topo);
            Budget {
                explanation: budget.to_string(),
                budget,
            }
        });
        Facts {
            schema: TOPO_SCHEMA,
            source: topo.source().to_string(),
            this_system: topo.is_this_system(),
            summary: topology_summary(topo),
            counts,
            smt,
            numa_nodes: topo.numa_nodes(),
            distances: topo.numa_distances(),
            cpu_kinds: topo.cpu_kinds(),
            offline_pus: missing.offline,
            disallowed_pus: missing.disallowed,
            processor_groups: {
                let groups = ProcessorGroups::of(topo);
                Groups {
                    source: match groups.source() {
                        GroupSource::Windows => "windows",
                        _ => "modelled",
                    },
                    groups: groups
                        .groups()
                        .iter()
                        .enumerate()
                        .map(|(group, pus)| Group {
                            group,
                            pus: pus.clone(),
                        })
                        .collect(),
                }
            },
            budget,
        }
    }
}
