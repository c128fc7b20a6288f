//! The topology ([`Topology`]): hwloc's tree, loaded once, and every question coretune asks of
//! it (objects by kind in machine order, CPU sets, counts, SMT, NUMA nodes and distances, CPU
//! kinds, restricting it to a set).

use std::collections::BTreeMap;
use std::path::Path;

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

use super::cache;
use super::info::{Counts, CpuKindInfo, DistanceMatrix, MissingPus, NumaNodeInfo, Smt};
use super::source::{
    LoadOptions, RestrictError, TopologyError, TopologySource, bad_xml, hwloc_reason,
    synthetic_reason,
};
use crate::sys::set_to_vec;

/// A loaded topology and where it came from.
///
/// This wraps [`hwlocality::Topology`] (reachable through [`Topology::hwloc`]) and adds the
/// summaries coretune prints and the queries placement needs.
#[derive(Debug)]
pub struct Topology {
    pub(super) hwloc: HwlocTopology,
    pub(super) source: TopologySource,
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
        Self::load_cached(source, options, cache::folder().as_deref())
    }

    /// [`Topology::load_with`], a big synthetic description read from its XML in `cache` when
    /// it is there, and put there when not (see the `cache` module).
    pub(super) fn load_cached(
        source: &TopologySource,
        options: &LoadOptions,
        cache: Option<&Path>,
    ) -> Result<Self, TopologyError> {
        let cached = match (source, cache) {
            (TopologySource::Synthetic(description), Some(folder))
                if cache::pus(description).is_some_and(|n| n >= cache::MIN_PUS) =>
            {
                Some(cache::file(folder, description, options))
            }
            _ => None,
        };
        let Some(file) = cached else {
            return Self::build(source, options);
        };
        if let Ok(xml) = std::fs::read_to_string(&file) {
            let label = file.display().to_string();
            if let Ok(topology) = Self::build(&TopologySource::Xml { label, xml }, options) {
                return Ok(Self {
                    source: source.clone(),
                    ..topology
                });
            }
        }
        let topology = Self::build(source, options)?;
        if let Ok(xml) = topology.to_xml() {
            cache::store(&file, &xml);
        }
        Ok(topology)
    }

    /// Has hwloc build the topology of `source`.
    fn build(source: &TopologySource, options: &LoadOptions) -> Result<Self, TopologyError> {
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
