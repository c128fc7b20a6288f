//! The tree `coretune topo` draws ([`TopoNode`]): only the levels that matter for placement.

use std::fmt;

use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::object::TopologyObject;
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::types::ObjectType;
use serde::Serialize;

use super::kind::ObjKind;
use super::model::Topology;
use crate::sys::set_to_vec;

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
