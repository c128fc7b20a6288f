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

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use hwlocality::Topology as HwlocTopology;
use hwlocality::bitmap::Bitmap;
use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::memory::nodeset::NodeSet;
use hwlocality::object::TopologyObject;
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::depth::TypeToDepthError;
use hwlocality::object::types::ObjectType;
use hwlocality::topology::builder::{BuildFlags, TypeFilter};
use hwlocality::topology::editor::RestrictFlags;
use serde::Serialize;

use crate::sys::set_to_vec;

mod budget;
pub mod facts;
pub mod groups;
mod kind;
mod machine;

pub use budget::{CgroupCpuset, CpuBudget, Quota};
pub use facts::{Facts, TOPO_SCHEMA};
pub use kind::ObjKind;
pub use machine::{CpuSettings, MachineRecord, topology_summary};

/// Where a topology comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TopologySource {
    /// The machine this process runs on.
    Live,
    /// An hwloc XML file (as written by `lstopo --of xml` or `hwloc-gather-topology`).
    XmlFile(PathBuf),
    /// An hwloc XML document already in memory; `label` names it in messages.
    Xml {
        /// What the XML came from (a path, a directory), for messages.
        label: String,
        /// The XML text.
        xml: String,
    },
    /// An hwloc synthetic description such as `pack:2 numa:2 l3:2 core:8 pu:2`.
    Synthetic(String),
}

impl TopologySource {
    /// Classifies an `--input` value the way `lstopo --input` does: an existing file is XML, a
    /// string that looks like a path (contains `/` or ends in `.xml`) but does not exist is a
    /// missing file, anything else is a synthetic description.
    ///
    /// Directories are not handled here: hwloc reads them only through the environment (see the
    /// module documentation), so callers turn them into [`TopologySource::Xml`] themselves.
    pub fn from_input(input: &str) -> Self {
        let path = Path::new(input);
        if path.is_file()
            || input.contains('/')
            || input.ends_with(".xml")
            || input.ends_with(".XML")
        {
            TopologySource::XmlFile(path.to_path_buf())
        } else {
            TopologySource::Synthetic(input.to_owned())
        }
    }
}

impl fmt::Display for TopologySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopologySource::Live => f.write_str("this machine"),
            TopologySource::XmlFile(path) => write!(f, "{}", path.display()),
            TopologySource::Xml { label, .. } => f.write_str(label),
            TopologySource::Synthetic(s) => write!(f, "synthetic '{s}'"),
        }
    }
}

/// Why a topology could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TopologyError {
    /// The topology file could not be read.
    // The I/O error is part of the message rather than a `source`, so that `{:#}` chains do not
    // print it twice.
    #[error("{path}: {error}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// hwloc refused the XML; `reason` says what coretune could tell about why.
    #[error("{input}: hwloc rejected the XML: {reason}")]
    BadXml {
        /// What the XML came from.
        input: String,
        /// The most specific reason known.
        reason: String,
    },
    /// hwloc refused the synthetic description.
    #[error(
        "synthetic topology '{description}': hwloc rejected it: {reason} \
         (expected a list of TYPE:COUNT from the top down, e.g. 'pack:2 numa:2 core:8 pu:2')"
    )]
    BadSynthetic {
        /// The description as given.
        description: String,
        /// The most specific reason known.
        reason: String,
    },
    /// hwloc failed to discover the live machine.
    #[error("could not discover this machine's topology: {0}")]
    Live(String),
}

/// Which objects a load keeps (hwloc's type filters) and whether disallowed resources count.
///
/// The default is hwloc's default load. [`LoadOptions::hwloc_calc`] is how hwloc-calc loads
/// (every object type hwloc can report, including I/O devices, Misc objects and instruction
/// caches); [`LoadOptions::io`] adds PCI and OS devices, for device locality.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    include_disallowed: bool,
    all_types: bool,
    io: bool,
    io_important: bool,
    ignore: Vec<ObjectType>,
}

impl LoadOptions {
    /// lstopo's load: every object type kept (instruction caches, Misc objects), and the I/O
    /// devices hwloc finds important (bridges, PCI devices and OS devices with a use), as
    /// `lstopo --of xml` writes them.
    pub fn lstopo() -> Self {
        Self {
            all_types: true,
            io_important: true,
            ..Self::default()
        }
    }

    /// hwloc-calc's load: every object type kept, disallowed resources when asked.
    pub fn hwloc_calc(include_disallowed: bool) -> Self {
        Self {
            include_disallowed,
            all_types: true,
            ..Self::default()
        }
    }

    /// hwloc-distrib's load: hwloc's default filters.
    pub fn hwloc_distrib() -> Self {
        Self::default()
    }

    /// Includes disallowed resources (`--disallowed`).
    #[must_use]
    pub fn include_disallowed(mut self, yes: bool) -> Self {
        self.include_disallowed = yes;
        self
    }

    /// Keeps PCI devices, bridges and OS devices (network interfaces, disks, GPUs), so that
    /// `pci=...` and `os=...` name something.
    #[must_use]
    pub fn io(mut self, yes: bool) -> Self {
        self.io = yes;
        self
    }

    /// Leaves out objects of type `ty` (`hwloc-distrib --ignore`; hwloc's type names are read by
    /// [`crate::hwloc::type_from_name`]).
    pub fn ignore(&mut self, ty: ObjectType) {
        self.ignore.push(ty);
    }
}

/// Why [`Topology::restrict`] left the topology as it was.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RestrictError {
    /// hwloc refuses this combination of flags.
    #[error("hwloc refuses restrict flags {0:#x}")]
    Flags(u64),
    /// The set has nothing in common with the topology.
    #[error("the set has no CPU or NUMA node of the topology")]
    NothingLeft,
}

/// A loaded topology and where it came from.
///
/// This wraps [`hwlocality::Topology`] (reachable through [`Topology::hwloc`]) and adds the
/// summaries coretune prints and the queries placement needs.
#[derive(Debug)]
pub struct Topology {
    hwloc: HwlocTopology,
    source: TopologySource,
}

impl Topology {
    /// Loads a topology with hwloc's default flags (allowed resources only).
    ///
    /// # Errors
    ///
    /// [`TopologyError`] naming the input and the reason when the file is missing or unreadable,
    /// the XML or synthetic description is rejected, or discovery of the live machine fails.
    pub fn load(source: &TopologySource) -> Result<Self, TopologyError> {
        Self::load_with(source, &LoadOptions::default())
    }

    /// Loads the same source including disallowed resources (`--disallowed` in hwloc's tools).
    ///
    /// # Errors
    ///
    /// As [`Topology::load`].
    pub fn load_including_disallowed(source: &TopologySource) -> Result<Self, TopologyError> {
        Self::load_with(source, &LoadOptions::default().include_disallowed(true))
    }

    /// Loads a topology keeping the objects `options` asks for.
    ///
    /// # Errors
    ///
    /// As [`Topology::load`].
    pub fn load_with(
        source: &TopologySource,
        options: &LoadOptions,
    ) -> Result<Self, TopologyError> {
        let mut flags = BuildFlags::empty();
        if options.include_disallowed {
            flags |= BuildFlags::INCLUDE_DISALLOWED;
        }
        if options.all_types {
            flags |= BuildFlags::IMPORT_SUPPORT;
        }
        // The XML document and the name it goes by, for XML sources.
        let xml = match source {
            TopologySource::XmlFile(path) => Some((
                path.display().to_string(),
                std::fs::read_to_string(path).map_err(|error| TopologyError::Read {
                    path: path.clone(),
                    error,
                })?,
            )),
            TopologySource::Xml { label, xml } => Some((label.clone(), xml.clone())),
            TopologySource::Live | TopologySource::Synthetic(_) => None,
        };
        let builder = HwlocTopology::builder();
        let builder = match (source, &xml) {
            (_, Some((label, xml))) => builder.from_xml(xml).map_err(|_| bad_xml(label, xml))?,
            (TopologySource::Synthetic(description), None) => {
                builder
                    .from_synthetic(description)
                    .map_err(|_| TopologyError::BadSynthetic {
                        description: description.clone(),
                        reason: synthetic_reason(description),
                    })?
            }
            _ => builder,
        };
        let mut builder = builder
            .with_flags(flags)
            .map_err(|e| TopologyError::Live(e.to_string()))?;
        let filter_error = |e: &dyn std::fmt::Display| TopologyError::Live(e.to_string());
        if options.all_types {
            // hwloc_topology_set_all_types_filter, which leaves groups alone as hwloc-calc's
            // call does (hwloc cannot be made to keep every group).
            builder = builder
                .with_common_type_filter(TypeFilter::KeepAll)
                .map_err(|e| filter_error(&e))?;
        }
        if options.io {
            builder = builder
                .with_io_type_filter(TypeFilter::KeepAll)
                .map_err(|e| filter_error(&e))?;
        } else if options.io_important {
            builder = builder
                .with_io_type_filter(TypeFilter::KeepImportant)
                .map_err(|e| filter_error(&e))?;
        }
        // hwloc refuses to leave out machines, PUs and NUMA nodes; its tools carry on silently.
        for &ty in &options.ignore {
            if matches!(
                ty,
                ObjectType::Machine | ObjectType::PU | ObjectType::NUMANode
            ) {
                continue;
            }
            builder = builder
                .with_type_filter(ty, TypeFilter::KeepNone)
                .map_err(|e| filter_error(&e))?;
        }
        // Depending on how libhwloc was built (with libxml2 or its own minimal parser), a bad
        // XML document is refused when it is read or only when the topology is built.
        let hwloc = builder.build().map_err(|e| match (source, &xml) {
            (_, Some((label, xml))) => bad_xml(label, xml),
            (TopologySource::Synthetic(description), None) => TopologyError::BadSynthetic {
                description: description.clone(),
                reason: e.to_string(),
            },
            _ => TopologyError::Live(hwloc_reason(&e)),
        })?;
        Ok(Self {
            hwloc,
            source: source.clone(),
        })
    }

    /// Restricts the topology to some CPUs, or with hwloc's `BYNODESET` flag (8) to some NUMA
    /// nodes, as `hwloc_topology_restrict` does with hwloc's flag bits (`--restrict` and
    /// `--restrict-flags` in hwloc's tools).
    ///
    /// # Errors
    ///
    /// [`RestrictError`] when hwloc refuses the flags or the set would leave nothing; the
    /// topology is then unchanged.
    pub fn restrict(&mut self, set: &Bitmap, flags: u64) -> Result<(), RestrictError> {
        const REMOVE_CPULESS: u64 = 1 << 0;
        const ADAPT_MISC: u64 = 1 << 1;
        const ADAPT_IO: u64 = 1 << 2;
        const BYNODESET: u64 = 1 << 3;
        const REMOVE_MEMLESS: u64 = 1 << 4;
        let known = REMOVE_CPULESS | ADAPT_MISC | ADAPT_IO | BYNODESET | REMOVE_MEMLESS;
        let by_nodeset = flags & BYNODESET != 0;
        if flags & !known != 0
            || (by_nodeset && flags & REMOVE_CPULESS != 0)
            || (!by_nodeset && flags & REMOVE_MEMLESS != 0)
        {
            return Err(RestrictError::Flags(flags));
        }
        let mut restrict = RestrictFlags::empty();
        if flags & ADAPT_MISC != 0 {
            restrict |= RestrictFlags::ADAPT_MISC;
        }
        if flags & ADAPT_IO != 0 {
            restrict |= RestrictFlags::ADAPT_IO;
        }
        // hwlocality 1.0.0-alpha.13 cannot pass REMOVE_CPULESS/REMOVE_MEMLESS through (its
        // REMOVE_EMPTIED is all bits, which hwloc refuses), so they are a second restriction:
        // by nodeset to the nodes that kept CPUs, or by cpuset to the PUs that kept memory. Both
        // run on a copy: when the second is refused (hwloc refuses the whole call, e.g. when
        // the nodes left are all disallowed) the topology stays as it was.
        let mut work = self.hwloc.clone();
        let ok = if by_nodeset {
            let nodes = NodeSet::from(set.clone());
            let mut ok = work.edit(|e| e.restrict(&nodes, restrict).is_ok());
            if ok && flags & REMOVE_MEMLESS != 0 {
                let mut keep = CpuSet::new();
                for pu in work.objects_with_type(ObjectType::PU) {
                    if pu.nodeset().is_some_and(|n| !n.is_empty()) {
                        if let Some(c) = pu.cpuset() {
                            keep |= &*c;
                        }
                    }
                }
                ok = work.edit(|e| e.restrict(&keep, restrict).is_ok());
            }
            ok
        } else {
            let cpus = CpuSet::from(set.clone());
            let mut ok = work.edit(|e| e.restrict(&cpus, restrict).is_ok());
            if ok && flags & REMOVE_CPULESS != 0 {
                let mut keep = NodeSet::new();
                for node in work.objects_with_type(ObjectType::NUMANode) {
                    if node.cpuset().is_some_and(|c| !c.is_empty()) {
                        if let Some(n) = node.nodeset() {
                            keep |= &*n;
                        }
                    }
                }
                ok = work.edit(|e| e.restrict(&keep, restrict).is_ok());
            }
            ok
        };
        if ok {
            self.hwloc = work;
            Ok(())
        } else {
            Err(RestrictError::NothingLeft)
        }
    }

    /// The underlying hwloc topology, for queries this type does not wrap.
    pub fn hwloc(&self) -> &HwlocTopology {
        &self.hwloc
    }

    /// Where this topology came from.
    pub fn source(&self) -> &TopologySource {
        &self.source
    }

    /// Whether this topology describes the machine this process runs on (so binding works).
    pub fn is_this_system(&self) -> bool {
        matches!(self.source, TopologySource::Live) && self.hwloc.is_this_system()
    }

    /// The PUs of this topology (allowed and online), as OS indexes.
    pub fn cpuset(&self) -> CpuSet {
        self.hwloc.cpuset().clone_target()
    }

    /// The topology as hwloc XML (hwloc's v2 format), for saving alongside results.
    ///
    /// # Errors
    ///
    /// hwloc's export error, as text.
    pub fn to_xml(&self) -> Result<String, String> {
        self.hwloc
            .export_xml(hwlocality::topology::export::xml::XMLExportFlags::empty())
            .map(|xml| xml.as_str().to_owned())
            .map_err(|e| e.to_string())
    }

    /// Objects of one type whose CPU set intersects the topology's, in logical order (machine
    /// order, see [`Topology::objects_in_order`]).
    pub fn objects(&self, ty: ObjectType) -> Vec<&TopologyObject> {
        let all = self.hwloc.cpuset();
        self.objects_in_order(ty)
            .into_iter()
            .filter(|obj| obj.cpuset().is_some_and(|set| set.intersects(&*all)))
            .collect()
    }

    /// Every object of one type, in machine order: hwloc's logical order when the type is on one
    /// level of the tree; when hwloc put it on several (see the module documentation), the order
    /// in which a walk of the tree meets them, rather than hwloc's level by level. Groups keep
    /// hwloc's order: nested groups are different things on different levels.
    pub fn objects_in_order(&self, ty: ObjectType) -> Vec<&TopologyObject> {
        if self.is_split(ty) {
            let mut out = Vec::new();
            collect_in_order(self.hwloc.root_object(), ty, &mut out);
            out
        } else {
            self.hwloc.objects_with_type(ty).collect()
        }
    }

    /// An object's logical index (`L#`) among the objects of its type in machine order: hwloc's
    /// own where the type is on one level, its position in [`Topology::objects_in_order`] where
    /// hwloc numbered each level from 0.
    pub fn logical_index(&self, obj: &TopologyObject) -> usize {
        let ty = obj.object_type();
        if !self.is_split(ty) {
            return obj.logical_index();
        }
        self.objects_in_order(ty)
            .iter()
            .position(|o| std::ptr::eq(*o, obj))
            .unwrap_or_else(|| obj.logical_index())
    }

    /// Whether hwloc put objects of `ty` on more than one level.
    fn is_split(&self, ty: ObjectType) -> bool {
        ty != ObjectType::Group
            && matches!(
                self.hwloc.depth_for_type(ty),
                Err(TypeToDepthError::Multiple)
            )
    }

    /// L3 caches (hwloc's `l3cache` in `hwloc-calc`), in logical order.
    pub fn l3_caches(&self) -> Vec<&TopologyObject> {
        self.objects(ObjectType::L3Cache)
    }

    /// Size of the largest cache (the last level: L3, or L2 where there is no L3), in bytes;
    /// `None` when hwloc knows no cache sizes.
    pub fn last_level_cache_bytes(&self) -> Option<usize> {
        [ObjectType::L3Cache, ObjectType::L2Cache]
            .into_iter()
            .flat_map(|ty| self.objects(ty))
            .filter_map(|obj| match obj.attributes() {
                Some(ObjectAttributes::Cache(cache)) => cache.size(),
                _ => None,
            })
            .map(|size| usize::try_from(size.get()).unwrap_or(usize::MAX))
            .max()
    }

    /// Counts by object type, with the meaning of `expected.json`'s `counts`.
    pub fn counts(&self) -> Counts {
        Counts {
            packages: self.objects(ObjectType::Package).len(),
            dies: self.objects(ObjectType::Die).len(),
            numa_nodes: self.hwloc.objects_with_type(ObjectType::NUMANode).len(),
            l3: self.objects(ObjectType::L3Cache).len(),
            l2: self.objects(ObjectType::L2Cache).len(),
            cores: self.objects(ObjectType::Core).len(),
            pus: self.objects(ObjectType::PU).len(),
        }
    }

    /// How many PUs each core has: a histogram `{pus_per_core: cores}`, with min and max.
    pub fn smt(&self) -> Smt {
        let mut histogram = BTreeMap::new();
        for core in self.objects(ObjectType::Core) {
            let pus = core.cpuset().map_or(0, |set| set.weight().unwrap_or(0));
            *histogram.entry(pus).or_insert(0usize) += 1;
        }
        let min = histogram.keys().next().copied().unwrap_or(1);
        let max = histogram.keys().next_back().copied().unwrap_or(1);
        Smt {
            min,
            max,
            histogram,
        }
    }

    /// The kinds of CPU cores (hybrid P/E machines), most power-efficient first, as hwloc ranks
    /// them. Empty when hwloc has no information; one entry on a uniform machine that reports it.
    pub fn cpu_kinds(&self) -> Vec<CpuKindInfo> {
        let Ok(kinds) = self.hwloc.cpu_kinds() else {
            return Vec::new();
        };
        let all = self.hwloc.cpuset();
        kinds
            .enumerate()
            .map(|(index, kind)| {
                let mut cpuset = kind.cpuset.clone();
                cpuset &= &*all;
                let infos = kind
                    .infos
                    .iter()
                    .map(|info| {
                        (
                            info.name().to_string_lossy().into_owned(),
                            info.value().to_string_lossy().into_owned(),
                        )
                    })
                    .collect();
                CpuKindInfo {
                    index,
                    efficiency: kind.efficiency,
                    pus: set_to_vec(&cpuset),
                    infos,
                }
            })
            .collect()
    }

    /// NUMA nodes with their OS index, memory and PUs.
    pub fn numa_nodes(&self) -> Vec<NumaNodeInfo> {
        self.hwloc
            .objects_with_type(ObjectType::NUMANode)
            .map(|node| NumaNodeInfo {
                logical_index: node.logical_index(),
                os_index: node.os_index(),
                local_memory: match node.attributes() {
                    Some(ObjectAttributes::NUMANode(attrs)) => {
                        attrs.local_memory().map_or(0, |m| m.get())
                    }
                    _ => 0,
                },
                pus: node.cpuset().map(|s| set_to_vec(&s)).unwrap_or_default(),
            })
            .collect()
    }

    /// The NUMA distance matrices hwloc has (latency first, as `lstopo --distances` lists them).
    pub fn numa_distances(&self) -> Vec<DistanceMatrix> {
        let Ok(matrices) = self.hwloc.distances(None) else {
            return Vec::new();
        };
        matrices
            .iter()
            .filter(|d| {
                d.objects()
                    .all(|o| o.is_some_and(|o| o.object_type() == ObjectType::NUMANode))
            })
            .map(|d| DistanceMatrix {
                name: d
                    .name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
                os_indexes: d
                    .objects()
                    .map(|o| o.and_then(TopologyObject::os_index))
                    .collect(),
                values: d.distances().to_vec(),
            })
            .collect()
    }

    /// PUs the machine has but this topology does not: offline (absent from the complete set of
    /// a load with disallowed resources) and disallowed (present but not allowed).
    ///
    /// Costs a second load only when the complete CPU set differs from the usable one.
    pub fn missing_pus(&self) -> MissingPus {
        let usable = self.hwloc.cpuset();
        let complete = self.hwloc.complete_cpuset();
        if *complete == *usable {
            return MissingPus::default();
        }
        let mut gone = complete.clone_target();
        gone -= &*usable;
        let with_disallowed = Topology::load_including_disallowed(&self.source)
            .map(|t| t.hwloc.cpuset().clone_target());
        match with_disallowed {
            Ok(present) => {
                let mut offline = gone.clone();
                offline -= &present;
                let mut disallowed = gone;
                disallowed &= &present;
                MissingPus {
                    offline: set_to_vec(&offline),
                    disallowed: set_to_vec(&disallowed),
                }
            }
            Err(_) => MissingPus {
                offline: set_to_vec(&gone),
                disallowed: Vec::new(),
            },
        }
    }
}

/// One object of the topology tree as `coretune topo` shows it: only the levels that matter
/// for placement (packages, dies, groups, NUMA nodes, L3, an L2 shared by several cores, cores,
/// PUs); the others (L1, per-core L2, memory-side caches) are looked through.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TopoNode {
    /// What it is.
    pub kind: NodeKind,
    /// hwloc's logical index (`L#`).
    pub logical_index: usize,
    /// The OS index (`P#`), when it has one.
    pub os_index: Option<usize>,
    /// Memory: a NUMA node's local memory, the machine's total.
    pub memory_bytes: Option<u64>,
    /// A cache's size.
    pub cache_bytes: Option<u64>,
    /// Its PUs, as OS indexes.
    pub pus: Vec<usize>,
    /// The shown objects below it: NUMA nodes first, then the others in logical order.
    pub children: Vec<TopoNode>,
}

/// The kinds of object a [`TopoNode`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[non_exhaustive]
pub enum NodeKind {
    /// The whole machine (the root).
    Machine,
    /// A package (socket).
    Package,
    /// A die.
    Die,
    /// An hwloc group (cluster, module, ...).
    Group,
    /// A NUMA node.
    NumaNode,
    /// An L3 cache.
    L3,
    /// An L2 cache shared by several cores.
    L2,
    /// A physical core.
    Core,
    /// A processing unit (hardware thread).
    Pu,
}

impl fmt::Display for NodeKind {
    /// hwloc's names, with caches shortened as `lstopo` prints them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NodeKind::Machine => "Machine",
            NodeKind::Package => "Package",
            NodeKind::Die => "Die",
            NodeKind::Group => "Group",
            NodeKind::NumaNode => "NUMANode",
            NodeKind::L3 => "L3",
            NodeKind::L2 => "L2",
            NodeKind::Core => "Core",
            NodeKind::Pu => "PU",
        })
    }
}

impl Topology {
    /// The topology as a tree of the objects that matter for placement ([`TopoNode`]).
    pub fn tree(&self) -> TopoNode {
        let root = self.hwloc.root_object();
        TopoNode {
            kind: NodeKind::Machine,
            logical_index: root.logical_index(),
            os_index: root.os_index(),
            memory_bytes: Some(root.total_memory()).filter(|&m| m > 0),
            cache_bytes: None,
            pus: root.cpuset().map(|s| set_to_vec(&s)).unwrap_or_default(),
            children: shown_children(root)
                .into_iter()
                .map(|c| self.node(c))
                .collect(),
        }
    }

    /// The indexes of the objects of `kind` whose PUs intersect `set`: logical (hwloc-calc
    /// `-I`), or OS indexes when `physical`.
    pub fn indexes_intersecting(&self, kind: ObjKind, set: &CpuSet, physical: bool) -> Vec<usize> {
        self.objects(kind.object_type())
            .into_iter()
            .filter(|o| o.cpuset().is_some_and(|s| s.intersects(set)))
            .map(|o| {
                if physical {
                    o.os_index().unwrap_or_default()
                } else {
                    self.logical_index(o)
                }
            })
            .collect()
    }
}

impl Topology {
    /// One shown object and the shown objects below it.
    fn node(&self, obj: &TopologyObject) -> TopoNode {
        let kind = match obj.object_type() {
            ObjectType::Package => NodeKind::Package,
            ObjectType::Die => NodeKind::Die,
            ObjectType::Group => NodeKind::Group,
            ObjectType::NUMANode => NodeKind::NumaNode,
            ObjectType::L3Cache => NodeKind::L3,
            ObjectType::L2Cache => NodeKind::L2,
            ObjectType::Core => NodeKind::Core,
            ObjectType::PU => NodeKind::Pu,
            _ => NodeKind::Machine,
        };
        let (memory_bytes, cache_bytes) = match obj.attributes() {
            Some(ObjectAttributes::NUMANode(attrs)) => {
                (attrs.local_memory().map(|m| m.get()), None)
            }
            Some(ObjectAttributes::Cache(cache)) => (None, cache.size().map(|s| s.get())),
            _ => (None, None),
        };
        TopoNode {
            kind,
            logical_index: self.logical_index(obj),
            os_index: obj.os_index(),
            memory_bytes,
            cache_bytes,
            pus: obj.cpuset().map(|s| set_to_vec(&s)).unwrap_or_default(),
            children: shown_children(obj)
                .into_iter()
                .map(|c| self.node(c))
                .collect(),
        }
    }
}

/// The objects of type `ty` at or below `obj`, in the order a depth-first walk meets them.
fn collect_in_order<'a>(
    obj: &'a TopologyObject,
    ty: ObjectType,
    out: &mut Vec<&'a TopologyObject>,
) {
    if obj.object_type() == ty {
        out.push(obj);
    }
    for child in obj.normal_children() {
        collect_in_order(child, ty, out);
    }
}

/// Levels shown in the tree; the others (L1, per-core L2, memory-side caches) are looked
/// through.
fn is_shown(obj: &TopologyObject) -> bool {
    match obj.object_type() {
        ObjectType::Package
        | ObjectType::Die
        | ObjectType::Group
        | ObjectType::L3Cache
        | ObjectType::Core
        | ObjectType::PU
        | ObjectType::NUMANode => true,
        // An L2 shared by several cores (Knights Landing tiles, Atom clusters) says something.
        ObjectType::L2Cache => cores_below(obj) > 1,
        _ => false,
    }
}

fn cores_below(obj: &TopologyObject) -> usize {
    if obj.object_type() == ObjectType::Core {
        1
    } else {
        obj.normal_children().map(cores_below).sum()
    }
}

/// The shown objects directly below `obj`: NUMA nodes first, then normal children, looking
/// through the levels that are not shown.
fn shown_children(obj: &TopologyObject) -> Vec<&TopologyObject> {
    let mut out = Vec::new();
    collect_memory(obj, &mut out);
    for child in obj.normal_children() {
        if is_shown(child) {
            out.push(child);
        } else {
            out.extend(shown_children(child));
        }
    }
    out
}

fn collect_memory<'a>(obj: &'a TopologyObject, out: &mut Vec<&'a TopologyObject>) {
    for mem in obj.memory_children() {
        if mem.object_type() == ObjectType::NUMANode {
            out.push(mem);
        } else {
            // MemCache objects sit between a parent and its NUMA nodes.
            collect_memory(mem, out);
        }
    }
}

fn bad_xml(input: &str, xml: &str) -> TopologyError {
    let reason = if !xml.contains("<topology") {
        "not an hwloc XML file (no <topology> element)".to_owned()
    } else if xml.contains("version=\"3.0\"") {
        "it is in hwloc 3's XML format, which libhwloc 2 cannot read".to_owned()
    } else {
        "malformed or inconsistent hwloc XML (HWLOC_XML_VERBOSE=1 makes hwloc say where)".to_owned()
    };
    TopologyError::BadXml {
        input: input.to_owned(),
        reason,
    }
}

/// hwloc says nothing about why a synthetic description failed; point at the first token that is
/// not `TYPE:COUNT` with a positive count, or say the combination was refused.
fn synthetic_reason(description: &str) -> String {
    for token in description.split_whitespace() {
        if token.starts_with('[') || token.starts_with('(') || token.starts_with('{') {
            continue;
        }
        match token.split_once(':') {
            None => return format!("'{token}' is not TYPE:COUNT"),
            Some((_, count)) => {
                let digits: String = count.chars().take_while(char::is_ascii_digit).collect();
                if digits.is_empty() || digits.parse::<u64>().map_or(true, |n| n == 0) {
                    return format!("'{token}' needs a positive count");
                }
            }
        }
    }
    if description.trim().is_empty() {
        return "the description is empty".to_owned();
    }
    "unknown object type, or types out of order".to_owned()
}

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

/// An hwloc call's failure in words (`hwloc_topology_load failed: Invalid argument`):
/// hwlocality's own message shows the errno as Rust's debug text.
fn hwloc_reason(e: &hwlocality::errors::RawHwlocError) -> String {
    match e.errno {
        Some(errno) => format!("{} failed: {errno}", e.api),
        None => format!("{} failed", e.api),
    }
}
#[cfg(test)]
mod test {
    use super::*;
    use crate::sys::set_from_indexes;

    #[test]
    fn node_kinds_print_as_hwloc_and_lstopo_name_them() {
        for (kind, ty) in [
            (NodeKind::Machine, ObjectType::Machine),
            (NodeKind::Package, ObjectType::Package),
            (NodeKind::Die, ObjectType::Die),
            (NodeKind::Group, ObjectType::Group),
            (NodeKind::NumaNode, ObjectType::NUMANode),
            (NodeKind::Core, ObjectType::Core),
            (NodeKind::Pu, ObjectType::PU),
        ] {
            assert_eq!(kind.to_string(), ty.to_string());
        }
    }

    #[test]
    fn a_refused_restriction_leaves_the_topology_as_it_was() {
        // PU 12's NUMA node is disallowed in this file: with REMOVE_CPULESS (1) hwloc refuses
        // the whole call (hwloc-calc then answers on the unrestricted machine); without it the
        // restriction stands.
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "../../tests/data/topologies/amd-opteron-865-8p-8numa-cpuset-disallowed-10of16pu.xml",
        );
        let mut topo = Topology::load(&TopologySource::XmlFile(path)).unwrap();
        let before = topo.cpuset();
        let pu12 = Bitmap::from_range(12..=12);
        assert!(topo.restrict(&pu12, 1).is_err());
        assert_eq!(topo.cpuset(), before);
        topo.restrict(&pu12, 0).unwrap();
        assert_eq!(topo.cpuset(), CpuSet::from(pu12));
    }

    #[test]
    fn tree_keeps_the_levels_placement_needs() {
        let topo = Topology::load(&TopologySource::Synthetic(
            "pack:2 numa:2 l3:1 core:2 pu:2".into(),
        ))
        .unwrap();
        let tree = topo.tree();
        assert_eq!(tree.kind, NodeKind::Machine);
        assert_eq!(tree.pus.len(), 16);
        let pack = &tree.children[0];
        assert_eq!(pack.kind, NodeKind::Package);
        // A NUMA node's memory child and its L3 (a normal child) are both under the package's
        // group level, NUMA first.
        let kinds: Vec<NodeKind> = pack.children.iter().map(|c| c.kind).collect();
        assert!(
            kinds.contains(&NodeKind::L3) || kinds.contains(&NodeKind::Group),
            "{kinds:?}"
        );
        fn count(n: &TopoNode, k: NodeKind) -> usize {
            usize::from(n.kind == k) + n.children.iter().map(|c| count(c, k)).sum::<usize>()
        }
        assert_eq!(count(&tree, NodeKind::Core), 8);
        assert_eq!(count(&tree, NodeKind::Pu), 16);
        assert_eq!(count(&tree, NodeKind::NumaNode), 4);
        let all = set_from_indexes(0..16);
        assert_eq!(
            topo.indexes_intersecting(ObjKind::Numa, &set_from_indexes([5]), false),
            vec![1]
        );
        assert_eq!(
            topo.indexes_intersecting(ObjKind::Core, &all, false).len(),
            8
        );
    }
}
