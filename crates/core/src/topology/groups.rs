//! Windows processor groups: which group and bit each CPU is, and the calls that put a program
//! on a CPU set there.
//!
//! Windows schedules at most 64 logical processors as one *processor group*. A thread runs in
//! one group at a time; a process starts in one (its *primary* group) and, until a thread is
//! moved, every thread it creates follows its creator's group; `SetProcessAffinityMask`,
//! `start /affinity` and PowerShell's `ProcessorAffinity` take one 64-bit mask and reach the
//! primary group only. A CPU set crossing groups therefore needs per-thread group affinity
//! (`SetThreadGroupAffinity`) or CPU sets (`SetProcessDefaultCpuSets`, Windows 10 and later).
//!
//! # Where the groups come from
//!
//! - **A Windows topology** (hwloc ran on Windows: the root's `OSName` info is `Windows`): hwloc
//!   numbers CPU `n` as bit `n % 64` of group `n / 64` (`topology-windows.c`), so the numbering
//!   *is* the grouping. This is what coretune uses on a live Windows machine.
//! - **Any other topology** (an XML file from Linux, a synthetic description): the grouping
//!   Windows would make of that machine, from Microsoft's rules ("Processor Groups" and "NUMA
//!   Support" in the Win32 documentation): the fewest groups; a NUMA node is never split between
//!   groups unless it has more than 64 logical processors, and then it is split into the fewest
//!   equal parts of whole cores; nodes that fit share a group with their neighbours; the
//!   processors of a core, and the cores of a package, stay together. Within a group, bits go
//!   core by core (SMT siblings adjacent, as Windows enumerates them). Where the rules leave a
//!   choice, the model balances: consecutive nodes are spread over the fewest groups as evenly
//!   as whole nodes allow (8 nodes of 12 make two groups of 48, not 60 + 36), as Windows was
//!   reported to do on 2 × 36 processors. `bcdedit /set groupsize` and hot-add reserve are not
//!   modelled. So `coretune cpus --input epyc.xml --to windows` answers for that machine booted
//!   on Windows, not with Linux's CPU numbers cut every 64.
//!
//! # Applying a set
//!
//! `sys/groups.rs` decides the calls (`place_new_process`, `rebind_threads`) and
//! `sys/windows/affinity.rs` makes them; the tests here record them through a fake on this
//! module's groups of topologies with hundreds of CPUs.
//!
//! A new program is placed between its creation (suspended) and its first instruction: its
//! first thread is moved to the right group, which is what `PROC_THREAD_ATTRIBUTE_GROUP_AFFINITY`
//! in `CreateProcess`'s attribute list does, since threads follow their creator's group. The
//! attribute itself is not used because the standard library's `Command` takes attribute lists
//! only on nightly Rust (`windows_process_extensions_raw_attribute`), and a hand-made
//! `CreateProcessW` would give up `Command`'s argument quoting and standard streams.

use std::collections::BTreeMap;

use hwlocality::object::types::ObjectType;

use crate::sys::groups::group_and_bit;
use crate::sys::set_to_vec;
pub use crate::sys::{GROUP_SIZE, GroupMask};
use crate::topology::Topology;

/// Masks as `start /affinity` takes them: group 0's alone as `FC`, otherwise one `GROUP:HEX` per
/// group (`0:FFFFFFFFFFFFFFFF,1:3`); `0` for none. With coretune's `win:` prefix either reads
/// back as a CPU-set expression.
pub(crate) fn windows_text(masks: &[GroupMask]) -> String {
    match masks {
        [] => "0".to_owned(),
        [GroupMask { group: 0, mask }] => format!("{mask:X}"),
        _ => {
            let parts: Vec<String> = masks.iter().map(ToString::to_string).collect();
            parts.join(",")
        }
    }
}

/// How a topology's groups were found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupSource {
    /// The topology is a Windows machine's: hwloc's numbering gives each CPU's group.
    Windows,
    /// The grouping Windows would make of this machine (see the module docs).
    Modelled,
}

/// A machine's processor groups.
#[derive(Clone, Debug)]
pub struct ProcessorGroups {
    source: GroupSource,
    /// Each group's CPUs (OS indexes), in bit order.
    groups: Vec<Vec<usize>>,
    /// CPU → (group, bit).
    place: BTreeMap<usize, (u16, u8)>,
}

impl ProcessorGroups {
    /// The groups of `topology`: read from a Windows topology's numbering, else modelled.
    pub fn of(topology: &Topology) -> Self {
        if is_windows(topology) {
            Self::numbered(set_to_vec(
                &topology.hwloc().complete_cpuset().clone_target(),
            ))
        } else {
            Self::modelled(topology)
        }
    }

    /// hwloc's numbering of Windows CPUs: CPU `n` is bit `n % 64` of group `n / 64`.
    pub fn numbered(cpus: impl IntoIterator<Item = usize>) -> Self {
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut place = BTreeMap::new();
        for cpu in cpus {
            let Some((group, bit)) = group_and_bit(cpu) else {
                continue;
            };
            let g = usize::from(group);
            if groups.len() <= g {
                groups.resize(g + 1, Vec::new());
            }
            groups[g].push(cpu);
            place.insert(cpu, (group, bit));
        }
        for group in &mut groups {
            group.sort_by_key(|cpu| cpu % GROUP_SIZE);
        }
        Self {
            source: GroupSource::Windows,
            groups,
            place,
        }
    }

    /// The grouping Windows would make of `topology` (module docs).
    fn modelled(topology: &Topology) -> Self {
        let parts = node_parts(topology);
        let sizes: Vec<usize> = parts.iter().map(Vec::len).collect();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for range in balanced_packing(&sizes) {
            groups.push(parts[range].concat());
        }
        let mut place = BTreeMap::new();
        for (g, cpus) in groups.iter().enumerate() {
            for (bit, &cpu) in cpus.iter().enumerate() {
                // At most 64 CPUs a group, and fewer than 65,536 groups: a u16 machine.
                if let (Ok(g), Ok(bit)) = (u16::try_from(g), u8::try_from(bit)) {
                    place.insert(cpu, (g, bit));
                }
            }
        }
        Self {
            source: GroupSource::Modelled,
            groups,
            place,
        }
    }

    /// How the groups were found.
    pub fn source(&self) -> GroupSource {
        self.source
    }

    /// How many groups there are (empty groups of a sparse Windows numbering included).
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// Whether there is no group at all (a topology without CPUs).
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Each group's CPUs (OS indexes) in bit order.
    pub fn groups(&self) -> &[Vec<usize>] {
        &self.groups
    }

    /// The group and bit of CPU `cpu`.
    pub fn locate(&self, cpu: usize) -> Option<(u16, u8)> {
        self.place.get(&cpu).copied()
    }

    /// `cpus` as one mask per group, by group number; CPUs the groups do not have are returned
    /// apart (the second list).
    pub fn split(&self, cpus: &[usize]) -> (Vec<GroupMask>, Vec<usize>) {
        let mut masks: BTreeMap<u16, u64> = BTreeMap::new();
        let mut unplaced = Vec::new();
        for &cpu in cpus {
            match self.locate(cpu) {
                Some((group, bit)) => *masks.entry(group).or_default() |= 1 << bit,
                None => unplaced.push(cpu),
            }
        }
        let masks = masks
            .into_iter()
            .map(|(group, mask)| GroupMask { group, mask })
            .collect();
        (masks, unplaced)
    }

    /// The CPUs (OS indexes, ascending) that group masks name.
    ///
    /// # Errors
    ///
    /// The text of the first group or bit this machine does not have.
    pub fn cpus(&self, masks: &[GroupMask]) -> Result<Vec<usize>, String> {
        let mut cpus = Vec::new();
        for m in masks {
            let Some(group) = self.groups.get(usize::from(m.group)) else {
                return Err(format!(
                    "processor group {} does not exist (this machine has {} group{}: 0-{})",
                    m.group,
                    self.len(),
                    if self.len() == 1 { "" } else { "s" },
                    self.len().saturating_sub(1)
                ));
            };
            for bit in (0..GROUP_SIZE).filter(|b| m.mask & (1 << b) != 0) {
                let cpu = match self.source {
                    GroupSource::Windows => {
                        let cpu = usize::from(m.group) * GROUP_SIZE + bit;
                        group.contains(&cpu).then_some(cpu)
                    }
                    GroupSource::Modelled => group.get(bit).copied(),
                };
                let Some(cpu) = cpu else {
                    return Err(format!(
                        "processor group {} has no logical processor {bit} (it has {})",
                        m.group,
                        group.len()
                    ));
                };
                cpus.push(cpu);
            }
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(cpus)
    }
}

/// How to start `cmd` on the CPUs `cpus` on Windows, in the commands people use there:
///
/// - within processor group 0: `start /affinity HEX` (cmd.exe) and PowerShell's
///   `ProcessorAffinity` (decimal), which both reach the group a process starts in — group 0 on
///   every machine of up to 64 logical processors;
/// - within another single group, or across groups: `coretune run --cpus 'win:…'`, which
///   starts the program in the right group (its first thread's group affinity, then the process
///   mask or CPU sets, as `coretune run` applies them) — `start /affinity` and `ProcessorAffinity`
///   cannot choose a group.
///
/// Empty when `cpus` is empty or names a CPU the groups do not have.
pub fn windows_lines(groups: &ProcessorGroups, cpus: &[usize], cmd: &str) -> Vec<String> {
    let (masks, unplaced) = groups.split(cpus);
    if masks.is_empty() || !unplaced.is_empty() {
        return Vec::new();
    }
    let win = format!("win:{}", windows_text(&masks));
    match masks.as_slice() {
        [GroupMask { group: 0, mask }] => vec![
            format!("cmd.exe: start /affinity {mask:X} {cmd}"),
            format!(
                "PowerShell: $p = Start-Process -PassThru {cmd}; $p.ProcessorAffinity = {mask}"
            ),
        ],
        [GroupMask { group, .. }] => vec![format!(
            "coretune run --cpus '{win}' -- {cmd}   (processor group {group}: start /affinity \
             and ProcessorAffinity reach group 0 only)"
        )],
        _ => vec![format!(
            "coretune run --cpus '{win}' -- {cmd}   (crosses processor groups {}: the first \
             thread in the largest part, CPU sets for the rest; no single mask can say it)",
            masks
                .iter()
                .map(|m| m.group.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )],
    }
}

/// Whether hwloc found `topology` on Windows (its root's `OSName` info).
pub fn is_windows(topology: &Topology) -> bool {
    topology
        .hwloc()
        .root_object()
        .info("OSName")
        .is_some_and(|name| name.to_bytes() == b"Windows")
}

/// The machine's CPUs cut into the units Windows assigns to groups: each NUMA node's CPUs (the
/// whole machine where hwloc reports no node), core by core, and a node of more than 64 cut into
/// the fewest equal parts of whole cores.
fn node_parts(topology: &Topology) -> Vec<Vec<usize>> {
    // Every PU, core by core in machine order (a PU outside any core stands alone).
    let mut ordered: Vec<usize> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for core in topology.objects_in_order(ObjectType::Core) {
        if let Some(set) = core.cpuset() {
            for pu in set_to_vec(&set.clone_target()) {
                if seen.insert(pu) {
                    ordered.push(pu);
                }
            }
        }
    }
    for pu in set_to_vec(&topology.cpuset()) {
        if seen.insert(pu) {
            ordered.push(pu);
        }
    }
    let usable = topology.cpuset();
    ordered.retain(|&pu| usable.is_set(pu));
    // Cores, as runs of `ordered`, so that a node is cut between cores only.
    let core_of: BTreeMap<usize, usize> = topology
        .objects_in_order(ObjectType::Core)
        .iter()
        .enumerate()
        .flat_map(|(i, core)| {
            core.cpuset()
                .map(|s| set_to_vec(&s.clone_target()))
                .unwrap_or_default()
                .into_iter()
                .map(move |pu| (pu, i))
        })
        .collect();
    let nodes: Vec<Vec<usize>> = topology
        .objects_in_order(ObjectType::NUMANode)
        .iter()
        .filter_map(|node| {
            let set = node.cpuset()?;
            let pus: Vec<usize> = ordered
                .iter()
                .copied()
                .filter(|&pu| set.is_set(pu))
                .collect();
            (!pus.is_empty()).then_some(pus)
        })
        .collect();
    // CPUs no node has (a machine without NUMA information) form one node.
    let in_nodes: std::collections::BTreeSet<usize> = nodes.iter().flatten().copied().collect();
    let mut nodes = nodes;
    let rest: Vec<usize> = ordered
        .iter()
        .copied()
        .filter(|pu| !in_nodes.contains(pu))
        .collect();
    if !rest.is_empty() {
        nodes.push(rest);
    }
    let mut parts = Vec::new();
    for node in nodes {
        if node.len() <= GROUP_SIZE {
            parts.push(node);
            continue;
        }
        let k = node.len().div_ceil(GROUP_SIZE);
        let mut cut: Vec<Vec<usize>> = vec![Vec::new(); k];
        let n = node.len();
        let mut i = 0;
        while i < n {
            // A core's PUs go together, to the part its first PU falls in.
            let core = core_of.get(&node[i]);
            let mut j = i + 1;
            while j < n && core.is_some() && core_of.get(&node[j]) == core {
                j += 1;
            }
            let part = (i * k / n).min(k - 1);
            cut[part].extend_from_slice(&node[i..j]);
            i = j;
        }
        parts.extend(cut.into_iter().filter(|p| !p.is_empty()));
    }
    parts
}

/// Consecutive units of these sizes (each at most 64) packed into the fewest groups of at most 64,
/// as evenly as whole units allow: the ranges of units each group takes.
fn balanced_packing(sizes: &[usize]) -> Vec<std::ops::Range<usize>> {
    let pack = |cap: usize| -> Vec<std::ops::Range<usize>> {
        let mut out = Vec::new();
        let mut start = 0;
        let mut sum = 0;
        for (i, &s) in sizes.iter().enumerate() {
            if sum + s > cap && i > start {
                out.push(start..i);
                start = i;
                sum = 0;
            }
            sum += s;
        }
        if start < sizes.len() {
            out.push(start..sizes.len());
        }
        out
    };
    let fewest = pack(GROUP_SIZE).len();
    let total: usize = sizes.iter().sum();
    let largest = sizes.iter().copied().max().unwrap_or(0);
    // The smallest cap that still needs no more groups than the fewest.
    let lower = total.div_ceil(fewest.max(1)).max(largest);
    (lower..=GROUP_SIZE)
        .map(pack)
        .find(|p| p.len() <= fewest)
        .unwrap_or_else(|| pack(GROUP_SIZE))
}

#[cfg(test)]
mod test {
    use super::*;
    use std::io;

    use crate::sys::groups::{GroupCalls, place_new_process, rebind_threads};
    use crate::topology::TopologySource;

    fn corpus(name: &str) -> Topology {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data/topologies")
            .join(name);
        Topology::load(&TopologySource::XmlFile(path)).unwrap()
    }

    fn sizes(g: &ProcessorGroups) -> Vec<usize> {
        g.groups().iter().map(Vec::len).collect()
    }

    /// Every CPU of the machine is in exactly one group, each group has at most 64, and bits are
    /// numbered from 0 without a gap.
    fn check(topo: &Topology, g: &ProcessorGroups) {
        let all = set_to_vec(&topo.cpuset());
        let mut seen: Vec<usize> = g.groups().iter().flatten().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, all);
        for (i, group) in g.groups().iter().enumerate() {
            assert!(group.len() <= GROUP_SIZE, "group {i}: {}", group.len());
            for (bit, &cpu) in group.iter().enumerate() {
                assert_eq!(
                    g.locate(cpu),
                    Some((u16::try_from(i).unwrap(), u8::try_from(bit).unwrap()))
                );
            }
        }
    }

    #[test]
    fn corpus_machines_get_the_groups_windows_would_make() {
        for (file, expected) in [
            // 2 nodes of 192: each cut into three groups of 64.
            ("amd-epyc-9654-zen4-2p-2numa-24l3-384pu.xml", vec![64; 6]),
            // One node of 256: four groups of 64.
            ("intel-xeon-phi-7210-knl-1p-64c-256pu.xml", vec![64; 4]),
            // 2 nodes of 64: one group each.
            (
                "amd-epyc-7763-zen3-2p-2numa-16l3-128pu-nosmt.xml",
                vec![64, 64],
            ),
            // 8 nodes of 12: two groups of 4 nodes (48), not 60 + 36.
            (
                "amd-epyc-7451-zen1-2p-8numa-16l3-96pu-sysfs.xml",
                vec![48, 48],
            ),
            // 4 nodes of 24: two groups of 2 nodes.
            ("ibm-x3950m2-xeon-4numa-16p-96pu.xml", vec![48, 48]),
            // 2 nodes of 36: as Windows shows a 2 x 36 machine.
            ("intel-xeon-gold-6140-skylake-2p-36c-72pu.xml", vec![36, 36]),
            // 16 PUs: one group.
            ("amd-opteron-865-8p-8numa-16pu.xml", vec![16]),
        ] {
            let topo = corpus(file);
            let g = ProcessorGroups::of(&topo);
            assert_eq!(g.source(), GroupSource::Modelled, "{file}");
            assert_eq!(sizes(&g), expected, "{file}");
            check(&topo, &g);
        }
    }

    #[test]
    fn a_node_never_shares_a_group_with_part_of_another_and_smt_siblings_stay_together() {
        for file in [
            "amd-epyc-9654-zen4-2p-2numa-24l3-384pu.xml",
            "intel-xeon-phi-7210-knl-1p-64c-256pu.xml",
            "intel-xeon-e5-4620v2-ivybridge-12p-96c-192pu.xml",
            "ia64-itanium-64numa-128p-256pu.xml",
            "ibm-power7-8numa-64c-256pu-smt4.xml",
            "intel-xeon-max-9460-sapphirerapids-2p-80c-160pu.xml",
        ] {
            let topo = corpus(file);
            let g = ProcessorGroups::of(&topo);
            check(&topo, &g);
            for core in topo.objects(ObjectType::Core) {
                let pus = set_to_vec(&core.cpuset().unwrap().clone_target());
                let groups: Vec<u16> = pus.iter().map(|&p| g.locate(p).unwrap().0).collect();
                assert!(groups.windows(2).all(|w| w[0] == w[1]), "{file}: {pus:?}");
                // Siblings on adjacent bits.
                let bits: Vec<u8> = pus.iter().map(|&p| g.locate(p).unwrap().1).collect();
                assert_eq!(
                    usize::from(bits[bits.len() - 1] - bits[0]) + 1,
                    bits.len(),
                    "{file}: {pus:?} -> {bits:?}"
                );
            }
            for node in topo.objects(ObjectType::NUMANode) {
                let pus = set_to_vec(&node.cpuset().unwrap().clone_target());
                let mut groups: Vec<u16> = pus.iter().map(|&p| g.locate(p).unwrap().0).collect();
                groups.sort_unstable();
                groups.dedup();
                // A node of at most 64 is in one group; a larger one fills whole groups alone.
                if pus.len() <= GROUP_SIZE {
                    assert_eq!(groups.len(), 1, "{file}");
                } else {
                    for group in groups {
                        let members = &g.groups()[usize::from(group)];
                        assert!(members.iter().all(|p| pus.contains(p)), "{file}");
                    }
                }
            }
        }
    }

    #[test]
    fn masks_name_their_cpus_and_print_as_start_affinity_takes_them() {
        let m = GroupMask {
            group: 1,
            mask: 0b101,
        };
        assert_eq!(m.cpus().collect::<Vec<_>>(), [64, 66]);
        assert_eq!(windows_text(&[]), "0");
        assert_eq!(
            windows_text(&[GroupMask {
                group: 0,
                mask: 0xFC
            }]),
            "FC"
        );
        assert_eq!(
            windows_text(&[GroupMask { group: 0, mask: 1 }, m]),
            "0:1,1:5"
        );
        assert_eq!(windows_text(&[m]), "1:5");
    }

    #[test]
    fn windows_lines_use_start_affinity_only_within_group_0() {
        let g = ProcessorGroups::numbered(0..128);
        let lines = windows_lines(&g, &[2, 3], "app.exe");
        assert_eq!(
            lines,
            [
                "cmd.exe: start /affinity C app.exe",
                "PowerShell: $p = Start-Process -PassThru app.exe; $p.ProcessorAffinity = 12",
            ]
        );
        let lines = windows_lines(&g, &[64, 65], "app.exe");
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].starts_with("coretune run --cpus 'win:1:3' -- app.exe"),
            "{lines:?}"
        );
        let lines = windows_lines(&g, &[1, 64], "app.exe");
        assert!(
            lines[0].starts_with("coretune run --cpus 'win:0:2,1:1' -- app.exe"),
            "{lines:?}"
        );
        assert!(
            lines[0].contains("crosses processor groups 0, 1"),
            "{lines:?}"
        );
        assert!(windows_lines(&g, &[500], "app.exe").is_empty());
    }

    #[test]
    fn windows_numbering_is_group_times_64_plus_bit() {
        let g = ProcessorGroups::numbered([0, 1, 2, 64, 65, 130]);
        assert_eq!(g.source(), GroupSource::Windows);
        assert_eq!(g.len(), 3);
        assert_eq!(g.locate(65), Some((1, 1)));
        assert_eq!(g.locate(130), Some((2, 2)));
        let (masks, unplaced) = g.split(&[1, 2, 64, 130, 500]);
        assert_eq!(
            masks,
            vec![
                GroupMask {
                    group: 0,
                    mask: 0b110
                },
                GroupMask { group: 1, mask: 1 },
                GroupMask {
                    group: 2,
                    mask: 0b100
                },
            ]
        );
        assert_eq!(unplaced, vec![500]);
        assert_eq!(g.cpus(&masks).unwrap(), vec![1, 2, 64, 130]);
        assert!(
            g.cpus(&[GroupMask {
                group: 1,
                mask: 0b100
            }])
            .unwrap_err()
            .contains("no logical processor 2")
        );
        assert!(
            g.cpus(&[GroupMask { group: 5, mask: 1 }])
                .unwrap_err()
                .contains("does not exist")
        );
    }

    #[test]
    fn modelled_masks_name_the_cpus_of_that_group_in_bit_order() {
        let topo = corpus("amd-epyc-9654-zen4-2p-2numa-24l3-384pu.xml");
        let g = ProcessorGroups::of(&topo);
        // Linux numbers the EPYC's SMT siblings 192 apart; Windows puts them on adjacent bits.
        assert_eq!(g.locate(0), Some((0, 0)));
        assert_eq!(g.locate(192), Some((0, 1)));
        assert_eq!(g.locate(1), Some((0, 2)));
        let (masks, _) = g.split(&[0, 192]);
        assert_eq!(
            masks,
            vec![GroupMask {
                group: 0,
                mask: 0b11
            }]
        );
        // Round trip for every group's full mask.
        for (i, cpus) in g.groups().iter().enumerate() {
            let (masks, unplaced) = g.split(cpus);
            assert!(unplaced.is_empty());
            assert_eq!(
                masks,
                vec![GroupMask {
                    group: u16::try_from(i).unwrap(),
                    mask: u64::MAX
                }]
            );
            let mut sorted = cpus.clone();
            sorted.sort_unstable();
            assert_eq!(g.cpus(&masks).unwrap(), sorted);
        }
    }

    /// Records the calls instead of making them; `primary` is the group Windows started the
    /// process in.
    #[derive(Default)]
    struct Recorder {
        primary: u16,
        calls: Vec<String>,
    }

    impl GroupCalls for Recorder {
        fn process_groups(&mut self, pid: u32) -> io::Result<Vec<u16>> {
            self.calls.push(format!("GetProcessGroupAffinity({pid})"));
            Ok(vec![self.primary])
        }
        fn set_process_mask(&mut self, pid: u32, mask: u64) -> io::Result<()> {
            self.calls
                .push(format!("SetProcessAffinityMask({pid}, {mask:#x})"));
            Ok(())
        }
        fn set_thread_group(&mut self, tid: u32, a: GroupMask) -> io::Result<()> {
            self.calls
                .push(format!("SetThreadGroupAffinity({tid}, {a})"));
            Ok(())
        }
        fn set_process_cpu_sets(&mut self, pid: u32, masks: &[GroupMask]) -> io::Result<()> {
            let text: Vec<String> = masks.iter().map(ToString::to_string).collect();
            self.calls.push(format!(
                "SetProcessDefaultCpuSets({pid}, {})",
                text.join(",")
            ));
            Ok(())
        }
    }

    #[test]
    fn a_new_process_on_a_set_in_its_primary_group_gets_the_thread_and_process_masks() {
        let topo = corpus("amd-epyc-9654-zen4-2p-2numa-24l3-384pu.xml");
        let g = ProcessorGroups::of(&topo);
        // numa:0's first 32 cores with both threads: group 0 whole.
        let (masks, _) = g.split(&g.groups()[0].clone());
        let mut rec = Recorder::default();
        place_new_process(&mut rec, 7, 8, &masks).unwrap();
        assert_eq!(
            rec.calls,
            [
                "GetProcessGroupAffinity(7)",
                "SetThreadGroupAffinity(8, 0:FFFFFFFFFFFFFFFF)",
                "SetProcessAffinityMask(7, 0xffffffffffffffff)",
            ]
        );
    }

    #[test]
    fn a_new_process_on_a_set_crossing_groups_starts_in_its_largest_part_with_cpu_sets() {
        let topo = corpus("amd-epyc-9654-zen4-2p-2numa-24l3-384pu.xml");
        let g = ProcessorGroups::of(&topo);
        // The second NUMA node: groups 3, 4 and 5; started in group 0 by Windows.
        let node1 = set_to_vec(
            &topo.objects(ObjectType::NUMANode)[1]
                .cpuset()
                .unwrap()
                .clone_target(),
        );
        let (masks, unplaced) = g.split(&node1);
        assert!(unplaced.is_empty());
        assert_eq!(masks.iter().map(|m| m.group).collect::<Vec<_>>(), [3, 4, 5]);
        let mut rec = Recorder::default();
        place_new_process(&mut rec, 7, 8, &masks).unwrap();
        assert_eq!(
            rec.calls,
            [
                "GetProcessGroupAffinity(7)",
                "SetThreadGroupAffinity(8, 3:FFFFFFFFFFFFFFFF)",
                "SetProcessDefaultCpuSets(7, 3:FFFFFFFFFFFFFFFF,4:FFFFFFFFFFFFFFFF,5:FFFFFFFFFFFFFFFF)",
            ]
        );
        // One core of group 4 only, in a process Windows started in group 4: masks, no CPU sets.
        let core = &g.groups()[4][..2];
        let (masks, _) = g.split(core);
        let mut rec = Recorder {
            primary: 4,
            ..Recorder::default()
        };
        place_new_process(&mut rec, 7, 8, &masks).unwrap();
        assert_eq!(
            rec.calls,
            [
                "GetProcessGroupAffinity(7)",
                "SetThreadGroupAffinity(8, 4:3)",
                "SetProcessAffinityMask(7, 0x3)",
            ]
        );
    }

    #[test]
    fn rebinding_deals_threads_over_the_groups_of_the_set() {
        let topo = corpus("intel-xeon-phi-7210-knl-1p-64c-256pu.xml");
        let g = ProcessorGroups::of(&topo);
        let all = set_to_vec(&topo.cpuset());
        let (masks, _) = g.split(&all);
        assert_eq!(masks.len(), 4);
        let mut rec = Recorder::default();
        let out = rebind_threads(&mut rec, 7, &[10, 11, 12, 13, 14], &masks).unwrap();
        let groups: Vec<u16> = out.iter().map(|(_, m, _)| m.group).collect();
        assert_eq!(groups, [0, 1, 2, 3, 0]);
        assert!(out.iter().all(|(_, _, r)| r.is_ok()));
        assert_eq!(rec.calls.len(), 1 + 5 + 1, "{:?}", rec.calls);
        assert!(
            rec.calls[6].starts_with("SetProcessDefaultCpuSets(7, 0:"),
            "{:?}",
            rec.calls
        );
        // Within the primary group: the process mask and each thread, no CPU sets.
        let (masks, _) = g.split(&g.groups()[0][..4]);
        let mut rec = Recorder::default();
        rebind_threads(&mut rec, 7, &[10, 11], &masks).unwrap();
        assert_eq!(
            rec.calls,
            [
                "GetProcessGroupAffinity(7)",
                "SetProcessAffinityMask(7, 0xf)",
                "SetThreadGroupAffinity(10, 0:F)",
                "SetThreadGroupAffinity(11, 0:F)",
            ]
        );
    }
}
