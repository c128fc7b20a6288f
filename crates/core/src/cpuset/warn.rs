//! Warnings about a CPU set: not errors, but reasons a measurement on it may mislead.

use std::fmt;

use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::object::types::ObjectType;

use crate::sys::{format_list, set_to_vec};
use crate::topology::Topology;
use crate::topology::groups::ProcessorGroups;

/// Something about a CPU set worth knowing before measuring on it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Warning {
    /// CPU 0 is in the set, and the set is not every usable CPU.
    IncludesCpu0,
    /// The set takes some PUs of a core but not their SMT siblings.
    SplitsSmt {
        /// For each split core: its logical index, the PUs taken, the siblings left out.
        cores: Vec<(usize, Vec<usize>, Vec<usize>)>,
    },
    /// The set has cores of more than one kind (hybrid P/E machines).
    MixesCpuKinds {
        /// For each kind present: its name and the set's PUs of that kind.
        kinds: Vec<(String, Vec<usize>)>,
    },
    /// The set spans NUMA nodes.
    SpansNuma {
        /// For each node: its OS index and the set's PUs in it.
        nodes: Vec<(usize, Vec<usize>)>,
    },
    /// The set spans L3 caches (on AMD, CCXs).
    SpansL3 {
        /// For each L3: its logical index and the set's PUs under it.
        caches: Vec<(usize, Vec<usize>)>,
    },
    /// The set crosses a Windows processor group boundary (at most 64 CPUs each: the machine's
    /// groups on a Windows topology, the groups Windows would make of it otherwise).
    CrossesProcessorGroups {
        /// For each group: its number and the set's CPUs in it.
        groups: Vec<(usize, Vec<usize>)>,
    },
    /// The set names CPUs that are offline.
    Offline {
        /// The offline CPUs named.
        cpus: Vec<usize>,
    },
    /// The set names CPUs this process may not use (cgroup cpuset, affinity).
    Disallowed {
        /// The disallowed CPUs named.
        cpus: Vec<usize>,
    },
}

/// The most groups a warning lists one by one; past it, it gives their count and indexes.
const LISTED: usize = 4;

/// The longest CPU list a warning prints as is; past it, a count and the range it spans.
const LIST_CHARS: usize = 40;

/// A CPU list short enough for one line: `0-7,16-23`, or `512 CPUs in 0-2047` when the list
/// itself would be long (interleaved sets on big machines).
fn short_list(cpus: &[usize]) -> String {
    short_indexes(cpus, "CPUs")
}

/// A list of indexes, or `N <noun> in FIRST-LAST` when the list would be long.
fn short_indexes(items: &[usize], noun: &str) -> String {
    let list = format_list(items);
    match (items.first(), items.last()) {
        (Some(first), Some(last)) if list.len() > LIST_CHARS => {
            format!("{} {noun} in {first}-{last}", items.len())
        }
        _ => list,
    }
}

/// `node 0: 0-7; node 1: 8-15` for a few groups, `64 NUMA nodes 0-63` for many.
fn groups_text(groups: &[(usize, Vec<usize>)], what: &str, many: &str) -> String {
    if groups.len() <= LISTED {
        return groups
            .iter()
            .map(|(name, cpus)| format!("{what}{name}: {}", short_list(cpus)))
            .collect::<Vec<_>>()
            .join("; ");
    }
    let names: Vec<usize> = groups.iter().map(|(n, _)| *n).collect();
    let list = format_list(&names);
    if list.len() > LIST_CHARS {
        format!("{} {many}", groups.len())
    } else {
        format!("{} {many}: {list}", groups.len())
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::IncludesCpu0 => f.write_str(
                "includes CPU 0: the kernel runs much of its housekeeping and many interrupts \
                 there, so a thread on CPU 0 is interrupted more often than the others \
                 (exclude it with '~pu:0')",
            ),
            Warning::SplitsSmt { cores } => {
                let parts = if cores.len() <= LISTED {
                    cores
                        .iter()
                        .map(|(core, taken, left)| {
                            format!(
                                "core {core}: {} without {}",
                                short_list(taken),
                                short_list(left)
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("; ")
                } else {
                    let ids: Vec<usize> = cores.iter().map(|(c, _, _)| *c).collect();
                    let mut left: Vec<usize> = cores
                        .iter()
                        .flat_map(|(_, _, l)| l.iter().copied())
                        .collect();
                    left.sort_unstable();
                    let left_out = format_list(&left);
                    let left_out = if left_out.len() > LIST_CHARS {
                        format!("leaving out {} of their CPUs", left.len())
                    } else {
                        format!("leaving out CPUs {left_out}")
                    };
                    format!(
                        "{} cores {}, {left_out}",
                        cores.len(),
                        short_indexes(&ids, "cores")
                    )
                };
                write!(
                    f,
                    "splits SMT siblings ({parts}): whatever runs on the left-out siblings shares \
                     those cores' execution units and caches with this set"
                )
            }
            Warning::MixesCpuKinds { kinds } => {
                let parts: Vec<String> = kinds
                    .iter()
                    .map(|(name, cpus)| format!("{name}: {}", short_list(cpus)))
                    .collect();
                write!(
                    f,
                    "mixes kinds of core ({}): threads on the slower kind finish their share \
                     later, and a static split of work waits for them",
                    parts.join("; ")
                )
            }
            Warning::SpansNuma { nodes } => write!(
                f,
                "spans NUMA nodes ({}): memory first touched on one node is slower to reach from \
                 the others",
                groups_text(nodes, "node ", "NUMA nodes")
            ),
            Warning::SpansL3 { caches } => write!(
                f,
                "spans L3 caches ({}): threads under different L3s do not share cache, so \
                 shared data moves between them",
                groups_text(caches, "L3 ", "L3 caches")
            ),
            Warning::CrossesProcessorGroups { groups } => write!(
                f,
                "crosses Windows processor groups ({}): on Windows a thread runs in one group \
                 at a time and a process starts in one group only",
                groups_text(groups, "group ", "groups")
            ),
            Warning::Offline { cpus } => write!(
                f,
                "names offline CPUs {}: nothing can run there, binding ignores them",
                short_list(cpus)
            ),
            Warning::Disallowed { cpus } => write!(
                f,
                "names CPUs {} that this process may not use (cgroup cpuset or affinity): \
                 binding ignores them",
                short_list(cpus)
            ),
        }
    }
}

fn part_in(set: &CpuSet, of: &CpuSet) -> Vec<usize> {
    let mut both = set.clone();
    both &= of;
    set_to_vec(&both)
}

/// Everything worth warning about `set` on `topology`, in the order of [`Warning`]'s variants.
pub fn warnings(topology: &Topology, set: &CpuSet) -> Vec<Warning> {
    let mut out = Vec::new();
    let mut usable = set.clone();
    usable &= topology.cpuset();
    // Only when CPU 0 is a choice: a set of every usable CPU (`all`) has it as every program
    // does, and saying so each time is noise.
    if set.is_set(0) && usable != topology.cpuset() {
        out.push(Warning::IncludesCpu0);
    }

    let split: Vec<(usize, Vec<usize>, Vec<usize>)> = topology
        .objects(ObjectType::Core)
        .into_iter()
        .filter_map(|core| {
            let pus = core.cpuset()?.clone_target();
            let taken = part_in(&usable, &pus);
            let mut left = pus.clone();
            left -= &usable;
            (!taken.is_empty() && !left.is_empty())
                .then(|| (topology.logical_index(core), taken, set_to_vec(&left)))
        })
        .collect();
    if !split.is_empty() {
        out.push(Warning::SplitsSmt { cores: split });
    }

    let kinds = topology.cpu_kinds();
    if kinds.len() >= 2 {
        let present: Vec<(String, Vec<usize>)> = kinds
            .iter()
            .map(|k| {
                let pus: Vec<usize> = k
                    .pus
                    .iter()
                    .copied()
                    .filter(|&c| usable.is_set(c))
                    .collect();
                (k.label(), pus)
            })
            .filter(|(_, pus)| !pus.is_empty())
            .collect();
        if present.len() >= 2 {
            out.push(Warning::MixesCpuKinds { kinds: present });
        }
    }

    let nodes: Vec<(usize, Vec<usize>)> = topology
        .hwloc()
        .objects_with_type(ObjectType::NUMANode)
        .filter_map(|node| {
            let pus = part_in(&usable, &node.cpuset()?.clone_target());
            (!pus.is_empty()).then(|| (node.os_index().unwrap_or(node.logical_index()), pus))
        })
        .collect();
    if nodes.len() >= 2 {
        out.push(Warning::SpansNuma { nodes });
    }

    let caches: Vec<(usize, Vec<usize>)> = topology
        .l3_caches()
        .into_iter()
        .filter_map(|l3| {
            let pus = part_in(&usable, &l3.cpuset()?.clone_target());
            (!pus.is_empty()).then(|| (topology.logical_index(l3), pus))
        })
        .collect();
    if caches.len() >= 2 {
        out.push(Warning::SpansL3 { caches });
    }

    let model = ProcessorGroups::of(topology);
    let mut by_group: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for cpu in set_to_vec(&usable) {
        if let Some((g, _)) = model.locate(cpu) {
            by_group.entry(usize::from(g)).or_default().push(cpu);
        }
    }
    let groups: Vec<(usize, Vec<usize>)> = by_group.into_iter().collect();
    if groups.len() >= 2 {
        out.push(Warning::CrossesProcessorGroups { groups });
    }

    let mut unusable = set.clone();
    unusable -= topology.cpuset();
    if !unusable.is_empty() {
        let missing = topology.missing_pus();
        let named = set_to_vec(&unusable);
        let disallowed: Vec<usize> = named
            .iter()
            .copied()
            .filter(|c| missing.disallowed.contains(c))
            .collect();
        let offline: Vec<usize> = named
            .iter()
            .copied()
            .filter(|c| !missing.disallowed.contains(c))
            .collect();
        if !offline.is_empty() {
            out.push(Warning::Offline { cpus: offline });
        }
        if !disallowed.is_empty() {
            out.push(Warning::Disallowed { cpus: disallowed });
        }
    }
    out
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::topology::TopologySource;

    #[test]
    fn warnings_stay_one_short_line_on_any_machine() {
        // 2048 PUs: 64 NUMA nodes, 128 L3s, 32 Windows processor groups (issue 12).
        let topo = Topology::load(&TopologySource::Synthetic(
            "pack:16 numa:4 l3:2 core:8 pu:2".into(),
        ))
        .unwrap();
        for expr in ["all", "pu:even", "pu:odd", "core:0-700", "pu:3-2000"] {
            let resolved = crate::cpuset::resolve(expr, &topo, &Default::default()).unwrap();
            assert!(
                resolved.warnings.len() >= 3,
                "{expr}: {:?}",
                resolved.warnings
            );
            for w in &resolved.warnings {
                let line = w.to_string();
                assert!(!line.contains('\n'), "{expr}: {line}");
                assert!(line.len() < 300, "{expr}: {} chars: {line}", line.len());
            }
        }
        let all = crate::cpuset::resolve("all", &topo, &Default::default()).unwrap();
        let text: Vec<String> = all.warnings.iter().map(ToString::to_string).collect();
        assert!(
            text.iter().any(|w| w.contains("64 NUMA nodes: 0-63")),
            "{text:?}"
        );
        assert!(
            text.iter().any(|w| w.contains("128 L3 caches: 0-127")),
            "{text:?}"
        );
        assert!(
            text.iter().any(|w| w.contains("32 groups: 0-31")),
            "{text:?}"
        );
        // A few groups are still listed with their CPUs.
        let small = Topology::load(&TopologySource::Synthetic(
            "pack:2 numa:2 core:2 pu:2".into(),
        ))
        .unwrap();
        let r = crate::cpuset::resolve("pu:0-5", &small, &Default::default()).unwrap();
        let text: Vec<String> = r.warnings.iter().map(ToString::to_string).collect();
        assert!(
            text.iter().any(|w| w.contains("node 0: 0-3; node 1: 4-5")),
            "{text:?}"
        );
    }
}
