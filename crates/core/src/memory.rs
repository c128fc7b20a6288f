//! Where a program's memory goes: the memory policy `run --mem` sets before `exec`, as
//! `numactl` sets it.
//!
//! | `--mem` | numactl | the program's pages go |
//! |---|---|---|
//! | `local` | `--localalloc` | on the node of the CPU that first touches them |
//! | `interleave[:NODES]` | `--interleave=NODES` | round-robin over the nodes (all of them without `:NODES`) |
//! | `bind[:NODES]` | `--membind=NODES` | only on the nodes (those near the CPUs used without `:NODES`) |
//! | `preferred:NODE` | `--preferred=NODE` | on the node while it has free memory |
//!
//! **NODES** is numactl's node numbers — `0`, `0,1`, `0-1`: NUMA nodes by OS index, as numactl
//! and the kernel number them — or a location as `hwloc-calc --nodeset-output` reads it —
//! `numa:0-1`, `numa:2` (a CPU-less memory node too), `package:1` (the nodes of that package) —
//! or `near`: the nodes local to the CPUs the program runs on. A node that is not there is
//! refused as `coretune cpus` refuses it (`'numa:1': index 1 past the last numa (there are 1)`).
//! Nodes are written and applied by OS index, as the kernel and numactl number them.

use std::fmt;
use std::str::FromStr;

use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::memory::nodeset::NodeSet;

use crate::hwloc::{Calc, LocationSettings, Message};
use crate::sys::format_list;
use crate::topology::Topology;

pub use crate::sys::MemMode;

/// A memory policy as `--mem` takes it, before it is resolved on a topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemPolicy {
    /// How pages are placed.
    pub mode: MemMode,
    /// The nodes, as written (`None`: every node for interleave, `near` for bind).
    pub nodes: Option<String>,
}

/// Why a memory policy cannot be applied. Each message is one line naming the part.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MemError {
    /// Not one of the forms in the module table.
    #[error(
        "unknown memory policy '{0}' (known: local, interleave[:NODES], bind[:NODES], \
         preferred:NODE; NODES like numa:0-1 or near)"
    )]
    Unknown(String),
    /// The node location does not name a node of this machine.
    #[error("--mem '{policy}': {reason}")]
    Nodes {
        /// The policy as written.
        policy: String,
        /// What is wrong with its nodes.
        reason: String,
    },
    /// A node without memory (a CPU-only die, as two of the first Threadrippers' four).
    #[error(
        "--mem '{policy}': NUMA node {nodes} has no memory of its own; its CPUs use other nodes' \
         (nodes with memory here: {with_memory})"
    )]
    NoMemory {
        /// The policy as written.
        policy: String,
        /// The memory-less nodes it names.
        nodes: String,
        /// The nodes that have memory.
        with_memory: String,
    },
    /// `preferred` names one node.
    #[error("--mem '{policy}': preferred takes one node, not {nodes}")]
    NotOneNode {
        /// The policy as written.
        policy: String,
        /// The nodes it named.
        nodes: String,
    },
}

impl FromStr for MemPolicy {
    type Err = MemError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, nodes) = match s.split_once(':') {
            Some((name, nodes)) => (name, Some(nodes.trim().to_owned())),
            None => (s, None),
        };
        let mode = match name.trim().to_ascii_lowercase().as_str() {
            "local" | "localalloc" if nodes.is_none() => MemMode::Local,
            "interleave" => MemMode::Interleave,
            "bind" | "membind" => MemMode::Bind,
            "preferred" if nodes.is_some() => MemMode::Preferred,
            _ => return Err(MemError::Unknown(s.to_owned())),
        };
        if nodes.as_deref() == Some("") {
            return Err(MemError::Unknown(s.to_owned()));
        }
        Ok(MemPolicy { mode, nodes })
    }
}

impl fmt::Display for MemPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.mode {
            MemMode::Local => "local",
            MemMode::Interleave => "interleave",
            MemMode::Bind => "bind",
            MemMode::Preferred => "preferred",
        };
        match &self.nodes {
            Some(nodes) => write!(f, "{name}:{nodes}"),
            None => f.write_str(name),
        }
    }
}

/// A memory policy resolved on a topology: what to set and how numactl says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemPlan {
    /// How pages are placed.
    pub mode: MemMode,
    /// The nodes (OS indexes, ascending; empty for [`MemMode::Local`]).
    pub nodes: Vec<usize>,
    /// Something worth saying before the program runs (a machine with one node: no effect).
    pub note: Option<String>,
}

impl MemPlan {
    /// Makes `cmd`'s child set this policy between `fork` and `exec`, so the program's first
    /// page already follows it (Linux's `set_mempolicy`; elsewhere an `Unsupported` error).
    ///
    /// # Errors
    ///
    /// `io::ErrorKind::Unsupported` where there is no `set_mempolicy`.
    pub fn apply_before_exec(&self, cmd: &mut std::process::Command) -> std::io::Result<()> {
        crate::sys::set_mempolicy_before_exec(cmd, self.mode, &self.nodes)
    }

    /// Sets this policy for the calling thread: the pages it touches first from now on follow
    /// it (a built-in workload's worker, set before it touches its data).
    ///
    /// # Errors
    ///
    /// The kernel's refusal; `io::ErrorKind::Unsupported` where there is no `set_mempolicy`.
    pub fn apply_to_this_thread(&self) -> std::io::Result<()> {
        crate::sys::set_thread_mempolicy(self.mode, &self.nodes)
    }

    /// The policy as the kernel shows it in `/proc/PID/numa_maps` for a process started with
    /// it (`local`, `interleave:0-1`, `bind:1`, `prefer:0`): what the audit of a run compares
    /// with what each of its processes has.
    pub fn numa_maps_word(&self) -> String {
        let nodes = format_list(&self.nodes);
        match self.mode {
            MemMode::Local => "local".to_owned(),
            MemMode::Interleave => format!("interleave:{nodes}"),
            MemMode::Bind => format!("bind:{nodes}"),
            MemMode::Preferred => format!("prefer:{nodes}"),
        }
    }

    /// The systemd unit settings that set the same policy (`NUMAPolicy=`, and `NUMAMask=` for
    /// a policy over nodes), with a leading space.
    pub fn systemd(&self) -> String {
        let nodes = format_list(&self.nodes).replace(',', " ");
        match self.mode {
            MemMode::Local => " NUMAPolicy=local".to_owned(),
            MemMode::Interleave => format!(" NUMAPolicy=interleave NUMAMask={nodes}"),
            MemMode::Bind => format!(" NUMAPolicy=bind NUMAMask={nodes}"),
            MemMode::Preferred => format!(" NUMAPolicy=preferred NUMAMask={nodes}"),
        }
    }

    /// The `numactl` options that set the same policy.
    pub fn numactl(&self) -> String {
        let nodes = format_list(&self.nodes);
        match self.mode {
            MemMode::Local => "--localalloc".to_owned(),
            MemMode::Interleave => format!("--interleave={nodes}"),
            MemMode::Bind => format!("--membind={nodes}"),
            MemMode::Preferred => format!("--preferred={nodes}"),
        }
    }
}

impl MemPolicy {
    /// The policy on `topology` for a program running on `cpus` (the CPUs `near` means).
    /// `physical`: object indexes in the node location are OS indexes.
    ///
    /// # Errors
    ///
    /// [`MemError::Nodes`] for a location that names no node of the machine,
    /// [`MemError::NoMemory`] for a memory-less node, [`MemError::NotOneNode`] for `preferred`
    /// over several.
    pub fn plan(
        &self,
        topology: &Topology,
        cpus: &CpuSet,
        physical: bool,
    ) -> Result<MemPlan, MemError> {
        let all = topology.numa_nodes();
        let note = (all.len() <= 1).then(|| {
            format!(
                "--mem {self}: this machine has one NUMA node, so where its pages go cannot \
                 change: no effect"
            )
        });
        if self.mode == MemMode::Local {
            return Ok(MemPlan {
                mode: self.mode,
                nodes: Vec::new(),
                note,
            });
        }
        let nodes = match (self.nodes.as_deref(), self.mode) {
            (None, MemMode::Interleave) => topology.hwloc().nodeset().clone_target(),
            (None | Some("near"), _) => NodeSet::from_cpuset(topology.hwloc(), cpus),
            (Some(location), _) => self.resolve_nodes(topology, location, physical)?,
        };
        let nodes: Vec<usize> = nodes.iter_set().map(usize::from).collect();
        if nodes.is_empty() {
            return Err(self.nodes_error("no NUMA node there".to_owned()));
        }
        let memoryless: Vec<usize> = all
            .iter()
            .filter(|n| n.local_memory == 0 && n.os_index.is_some_and(|i| nodes.contains(&i)))
            .filter_map(|n| n.os_index)
            .collect();
        // hwloc reports 0 bytes where it does not know the size (a synthetic machine, some
        // XML files): only a node with 0 among nodes of known size is memory-less.
        let sizes_known = all.iter().any(|n| n.local_memory > 0);
        if sizes_known && !memoryless.is_empty() {
            let with_memory: Vec<usize> = all
                .iter()
                .filter(|n| n.local_memory > 0)
                .filter_map(|n| n.os_index)
                .collect();
            return Err(MemError::NoMemory {
                policy: self.to_string(),
                nodes: format_list(&memoryless),
                with_memory: format_list(&with_memory),
            });
        }
        if self.mode == MemMode::Preferred && nodes.len() > 1 {
            return Err(MemError::NotOneNode {
                policy: self.to_string(),
                nodes: format_list(&nodes),
            });
        }
        Ok(MemPlan {
            mode: self.mode,
            nodes,
            note,
        })
    }

    /// The nodes a location names, as `hwloc-calc --nodeset-output` gives them.
    fn resolve_nodes(
        &self,
        topology: &Topology,
        location: &str,
        physical: bool,
    ) -> Result<NodeSet, MemError> {
        let settings = LocationSettings {
            logical: !physical,
            nodeset_output: true,
            ..LocationSettings::default()
        };
        let calc = Calc::new(topology);
        let mut set = hwlocality::bitmap::Bitmap::new();
        for word in location.split_whitespace() {
            if let Some(numbers) = node_numbers(word) {
                for index in self.existing_nodes(topology, word, &numbers)? {
                    set.set(index);
                }
                continue;
            }
            let mut msgs = Vec::new();
            let recognized = calc
                .apply(&mut set, word, &settings, &mut msgs)
                .map_err(|e| self.nodes_error(e.to_string()))?;
            if let Some(line) = msgs.iter().find_map(|m| match m {
                Message::Stderr(line) => Some(line.clone()),
                _ => None,
            }) {
                // hwloc-calc's complaint speaks of depths and bitmaps; coretune's own reading of
                // the same location says which object is missing, as `coretune cpus` does.
                let options = crate::cpuset::ResolveOptions { physical };
                let reason = match crate::cpuset::resolve(word, topology, &options) {
                    Err(e) => e.to_string(),
                    Ok(_) => format!("'{word}': {line}"),
                };
                return Err(self.nodes_error(reason));
            }
            if !recognized {
                return Err(self.nodes_error(format!(
                    "'{word}' is neither node numbers (0-1) nor a location (numa:0-1)"
                )));
            }
        }
        let mut nodes = NodeSet::from(set);
        nodes &= topology.hwloc().nodeset();
        Ok(nodes)
    }

    /// `numbers` (OS indexes, from `word`), each the OS index of a NUMA node of `topology`.
    fn existing_nodes(
        &self,
        topology: &Topology,
        word: &str,
        numbers: &[usize],
    ) -> Result<Vec<usize>, MemError> {
        let have: Vec<usize> = topology
            .numa_nodes()
            .iter()
            .filter_map(|n| n.os_index)
            .collect();
        match numbers.iter().find(|i| !have.contains(i)) {
            Some(&index) => Err(self.nodes_error(
                crate::cpuset::CpuSetError::NoSuchOsIndex {
                    part: word.to_owned(),
                    kind: crate::cpuset::ObjKind::Numa,
                    index,
                    available: format_list(&have),
                }
                .to_string(),
            )),
            None => Ok(numbers.to_vec()),
        }
    }

    fn nodes_error(&self, reason: String) -> MemError {
        MemError::Nodes {
            policy: self.to_string(),
            reason,
        }
    }
}

/// numactl's node numbers (`0`, `0,1`, `0-1`): a Linux list of decimal numbers; `None` for
/// anything else (a location such as `numa:0`, which hwloc-calc reads).
fn node_numbers(word: &str) -> Option<Vec<usize>> {
    word.bytes()
        .all(|b| b.is_ascii_digit() || b == b',' || b == b'-')
        .then(|| crate::sys::parse_list(word))
        .flatten()
        .filter(|nodes| !nodes.is_empty())
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::sys::set_from_indexes;
    use crate::topology::TopologySource;

    fn topo(synthetic: &str) -> Topology {
        Topology::load(&TopologySource::Synthetic(synthetic.into())).unwrap()
    }

    /// A built-in workload's worker sets its own policy: the kernel shows it for that thread
    /// (and only that one) in its numa_maps.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_sets_its_own_policy() {
        let plan = MemPlan {
            mode: MemMode::Interleave,
            nodes: vec![0],
            note: None,
        };
        let seen = std::thread::spawn(move || {
            plan.apply_to_this_thread().unwrap();
            std::fs::read_to_string("/proc/thread-self/numa_maps").unwrap()
        })
        .join()
        .unwrap();
        assert!(seen.contains(" interleave:0"), "{seen}");
        let own = std::fs::read_to_string("/proc/thread-self/numa_maps").unwrap();
        assert!(!own.contains(" interleave:"), "{own}");
    }

    fn plan(t: &Topology, policy: &str, cpus: &str) -> Result<MemPlan, MemError> {
        let cpus = crate::sys::parse_list(cpus).unwrap();
        policy
            .parse::<MemPolicy>()?
            .plan(t, &set_from_indexes(cpus), false)
    }

    #[test]
    fn policies_resolve_to_numactl_s_options() {
        // Two packages of one node each, and a CPU-less memory node at the machine level.
        let t = topo("[numa] pack:2 [numa] core:2 pu:1");
        assert_eq!(plan(&t, "local", "0").unwrap().numactl(), "--localalloc");
        assert_eq!(
            plan(&t, "interleave", "0").unwrap().numactl(),
            "--interleave=0-2"
        );
        assert_eq!(
            plan(&t, "interleave:numa:1-2", "0").unwrap().numactl(),
            "--interleave=1-2"
        );
        // near: the nodes local to the CPUs used (hwloc's cpuset-to-nodeset). OS indexes: the
        // packages' nodes are 0 and 1, the machine's 2.
        assert_eq!(plan(&t, "bind", "2-3").unwrap().numactl(), "--membind=1-2");
        assert_eq!(
            plan(&t, "bind:near", "0").unwrap().numactl(),
            "--membind=0,2"
        );
        assert_eq!(
            // A package's nodes, as hwloc counts them: its own and the machine's.
            plan(&t, "bind:package:1", "0").unwrap().numactl(),
            "--membind=1-2"
        );
        // A CPU-less node is named like any other.
        assert_eq!(
            plan(&t, "preferred:numa:0", "0").unwrap().numactl(),
            "--preferred=0"
        );
        assert!(plan(&t, "bind", "0").unwrap().note.is_none());
    }

    #[test]
    fn bad_policies_are_one_line_each() {
        let t = topo("pack:2 [numa] core:2 pu:1");
        for bad in ["", "far", "local:0", "bind:", "preferred"] {
            let err = bad.parse::<MemPolicy>().unwrap_err().to_string();
            assert!(err.starts_with("unknown memory policy"), "{bad}: {err}");
        }
        let err = plan(&t, "bind:numa:5", "0").unwrap_err().to_string();
        assert!(err.starts_with("--mem 'bind:numa:5': 'numa:5'"), "{err}");
        assert!(!err.contains('\n'), "{err}");
        let err = plan(&t, "preferred:numa:0-1", "0").unwrap_err().to_string();
        assert_eq!(
            err,
            "--mem 'preferred:numa:0-1': preferred takes one node, not 0-1"
        );
        let err = plan(&t, "bind:bogus", "0").unwrap_err().to_string();
        assert!(err.contains("'bogus'"), "{err}");
        // One node: nothing to choose between, said once.
        let one = topo("pack:1 core:2 pu:1");
        let note = plan(&one, "interleave", "0").unwrap().note.unwrap();
        assert!(note.ends_with("no effect"), "{note}");
    }

    #[test]
    fn numactl_node_numbers_are_nodes_by_os_index_and_missing_nodes_read_as_cpus_says() {
        let t = topo("pack:2 [numa] core:2 pu:1");
        assert_eq!(
            plan(&t, "preferred:1", "0").unwrap().numactl(),
            "--preferred=1"
        );
        assert_eq!(
            plan(&t, "interleave:0,1", "0").unwrap().numactl(),
            "--interleave=0-1"
        );
        assert_eq!(
            plan(&t, "bind:0-1", "0").unwrap().numactl(),
            "--membind=0-1"
        );
        assert_eq!(
            plan(&t, "bind:2", "0").unwrap_err().to_string(),
            "--mem 'bind:2': '2': no numa has OS index 2 (they have 0-1)"
        );
        assert_eq!(
            plan(&t, "interleave:0,5", "0").unwrap_err().to_string(),
            "--mem 'interleave:0,5': '0,5': no numa has OS index 5 (they have 0-1)"
        );
        // A location past the last node: coretune's words, not hwloc's depths and bitmaps.
        assert_eq!(
            plan(&t, "bind:numa:2", "0").unwrap_err().to_string(),
            "--mem 'bind:numa:2': 'numa:2': index 2 past the last numa (there are 2)"
        );
    }

    #[test]
    fn a_memoryless_node_is_refused() {
        // Like the first Threadrippers' dies without memory: a node of 0 bytes beside nodes of
        // known size.
        let t = topo("pack:2 [numa(memory=0)] [numa(memory=1000000)] core:2 pu:1");
        let empty = t
            .numa_nodes()
            .into_iter()
            .find(|n| n.local_memory == 0)
            .unwrap();
        let policy = format!("bind:numa:{}", empty.logical_index);
        let err = plan(&t, &policy, "0").unwrap_err().to_string();
        assert!(err.contains("has no memory of its own"), "{err}");
        assert!(plan(&t, "local", "0").is_ok());
    }
}
