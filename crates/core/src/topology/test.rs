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

#[test]
fn a_synthetic_description_counts_its_pus_as_hwloc_builds_them() {
    assert_eq!(cache::pus("pack:2 core:4 pu:2"), Some(16));
    assert_eq!(cache::pus("2 4 2"), Some(16));
    assert_eq!(cache::pus("numa:2(memory=1GB) core:4 pu:1"), Some(8));
    // A level without a plain count: hwloc may read it otherwise, so it is never cached.
    assert_eq!(cache::pus("pack:2 [numa] core:4 pu:2"), None);
    assert_eq!(cache::pus(""), None);
}

#[test]
fn a_big_synthetic_topology_is_built_once_then_read_from_its_cached_xml() {
    let folder = tempfile::tempdir().unwrap();
    let description = "pack:1 core:1024 pu:1";
    let source = TopologySource::Synthetic(description.into());
    let options = LoadOptions::default();
    let built = Topology::load_cached(&source, &options, Some(folder.path())).unwrap();
    let file = cache::file(folder.path(), description, &options);
    let xml = std::fs::read_to_string(&file).unwrap();
    assert_eq!(xml, built.to_xml().unwrap());
    // Read back: the same objects, still named by its description. (hwloc's XML backend adds
    // that it can report disallowed PUs and NUMA nodes, which the synthetic backend does not.)
    let objects = |xml: &str| -> Vec<String> {
        xml.lines()
            .filter(|l| !l.trim_start().starts_with("<support "))
            .map(str::to_owned)
            .collect()
    };
    let read = Topology::load_cached(&source, &options, Some(folder.path())).unwrap();
    assert_eq!(objects(&read.to_xml().unwrap()), objects(&xml));
    assert_eq!(read.source(), &source);
    // It is the file that is read (another machine's XML put there is what loads)...
    let other = Topology::load(&TopologySource::Synthetic("pack:2 core:2 pu:1".into())).unwrap();
    std::fs::write(&file, other.to_xml().unwrap()).unwrap();
    let read = Topology::load_cached(&source, &options, Some(folder.path())).unwrap();
    assert_eq!(read.counts().pus, 4);
    // ...and a file that does not load is a miss: built again and rewritten.
    std::fs::write(&file, "not XML").unwrap();
    let read = Topology::load_cached(&source, &options, Some(folder.path())).unwrap();
    assert_eq!(read.counts().pus, 1024);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), xml);
    // Other load options are another file.
    let calc = LoadOptions::hwloc_calc(false);
    Topology::load_cached(&source, &calc, Some(folder.path())).unwrap();
    assert_ne!(cache::file(folder.path(), description, &calc), file);
    assert_eq!(std::fs::read_dir(folder.path()).unwrap().count(), 2);
}

#[test]
fn a_small_synthetic_topology_or_an_unwritable_cache_is_built_directly() {
    let folder = tempfile::tempdir().unwrap();
    let small = TopologySource::Synthetic("pack:2 core:8 pu:2".into());
    Topology::load_cached(&small, &LoadOptions::default(), Some(folder.path())).unwrap();
    assert_eq!(std::fs::read_dir(folder.path()).unwrap().count(), 0);
    // A cache folder under a file cannot be made: the topology loads all the same.
    let blocked = folder.path().join("file");
    std::fs::write(&blocked, "").unwrap();
    let big = TopologySource::Synthetic("pack:1 core:1024 pu:1".into());
    let topology =
        Topology::load_cached(&big, &LoadOptions::default(), Some(&blocked.join("sub"))).unwrap();
    assert_eq!(topology.counts().pus, 1024);
}
