use std::path::Path;

use hwlocality::bitmap::Bitmap;
use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::object::types::ObjectType;

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
