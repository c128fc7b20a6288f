//! Every real-machine topology in `tests/data/topologies/` loads and has the counts hwloc's own
//! tools computed for it (`expected.json`). A file dropped into that folder is tested here
//! without code changes; a file without facts in `expected.json` fails, so none goes untested.

mod util;

use coretune_core::cpuset;
use coretune_core::cpuset::set_to_vec;
use coretune_core::cpuset::{CpuSetError, ResolveOptions};
use coretune_core::topology::{NodeKind, TopoNode};
use coretune_core::{Binding, Policy, plan};
use coretune_core::{Topology, TopologySource};

#[test]
fn every_corpus_file_matches_hwloc_counts_and_smt() {
    let expected = util::expected();
    let files = util::corpus_files();
    assert!(
        files.len() >= 20,
        "corpus looks truncated: {} files",
        files.len()
    );
    let mut failures = Vec::new();
    for file in &files {
        let Some(facts) = expected.get(file) else {
            failures.push(format!("{file}: no entry in expected.json"));
            continue;
        };
        let topo = util::load(file);
        let counts = topo.counts();
        let want = &facts["counts"];
        let pairs = [
            ("packages", counts.packages),
            ("numa_nodes", counts.numa_nodes),
            ("l3", counts.l3),
            ("l2", counts.l2),
            ("dies", counts.dies),
            ("cores", counts.cores),
            ("pus", counts.pus),
        ];
        for (key, got) in pairs {
            let want = util::as_usize(&want[key]);
            if got != want {
                failures.push(format!("{file}: {key} = {got}, hwloc says {want}"));
            }
        }
        let smt = topo.smt();
        let (min, max) = (
            util::as_usize(&facts["smt"]["min"]),
            util::as_usize(&facts["smt"]["max"]),
        );
        if (smt.min, smt.max) != (min, max) {
            failures.push(format!(
                "{file}: SMT {}..{}, hwloc says {min}..{max}",
                smt.min, smt.max
            ));
        }
        for (pus, cores) in facts["smt"]["pus_per_core_histogram"].as_object().unwrap() {
            let pus: usize = pus.parse().unwrap();
            let got = smt.histogram.get(&pus).copied().unwrap_or(0);
            if got != util::as_usize(cores) {
                failures.push(format!(
                    "{file}: {got} cores with {pus} PUs, hwloc says {cores}"
                ));
            }
        }
        let missing = topo.missing_pus();
        let offline: Vec<usize> = facts["offline_pus"]
            .as_array()
            .unwrap()
            .iter()
            .map(util::as_usize)
            .collect();
        let disallowed: Vec<usize> = facts["disallowed_pus"]
            .as_array()
            .unwrap()
            .iter()
            .map(util::as_usize)
            .collect();
        if missing.offline != offline || missing.disallowed != disallowed {
            failures.push(format!(
                "{file}: offline {:?} disallowed {:?}, hwloc says {offline:?} {disallowed:?}",
                missing.offline, missing.disallowed
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn numa_nodes_and_distances_match_hwloc() {
    let expected = util::expected();
    for file in util::corpus_files() {
        let facts = &expected[&file];
        let topo = util::load(&file);
        let nodes = topo.numa_nodes();
        let want = facts["numa"].as_array().unwrap();
        assert_eq!(nodes.len(), want.len(), "{file}: NUMA node count");
        for (node, want) in nodes.iter().zip(want) {
            assert_eq!(
                node.os_index,
                Some(util::as_usize(&want["os_index"])),
                "{file}"
            );
            assert_eq!(
                node.local_memory,
                want["local_memory"].as_u64().unwrap(),
                "{file}"
            );
            let pus: Vec<usize> = want["pus"]
                .as_array()
                .unwrap()
                .iter()
                .map(util::as_usize)
                .collect();
            assert_eq!(
                node.pus, pus,
                "{file}: PUs of NUMA node {}",
                node.logical_index
            );
        }
        let has_matrix = facts["distances"].as_array().is_some_and(|d| !d.is_empty());
        let matrices = topo.numa_distances();
        assert_eq!(
            !matrices.is_empty(),
            has_matrix,
            "{file}: distance matrix presence"
        );
        if let Some(first) = facts["distances"].as_array().and_then(|d| d.first()) {
            let flat: Vec<u64> = first["matrix"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|row| row.as_array().unwrap().iter().map(|v| v.as_u64().unwrap()))
                .collect();
            assert_eq!(matrices[0].values, flat, "{file}: distance matrix");
        }
    }
}

#[test]
fn cpu_kinds_match_hwloc() {
    let expected = util::expected();
    for file in util::corpus_files() {
        let want = &expected[&file]["cpukinds"];
        let kinds = Topology::cpu_kinds(&util::load(&file));
        let want = want.as_array().map(Vec::as_slice).unwrap_or_default();
        assert_eq!(kinds.len(), want.len(), "{file}: number of CPU kinds");
        for (kind, want) in kinds.iter().zip(want) {
            let pus: Vec<usize> = want["pus"]
                .as_array()
                .unwrap()
                .iter()
                .map(util::as_usize)
                .collect();
            assert_eq!(kind.pus, pus, "{file}: PUs of CPU kind {}", kind.index);
        }
    }
}

/// Where hwloc put cores on two levels (the `qemu-*` files: a guest core whose SMT sibling went
/// offline sits below its per-thread L1 caches, the others above theirs), coretune numbers the
/// cores in machine order, as the kernel lists them (`kernel.cores`: the guest's
/// `thread_siblings_list`s): `core:N`, the tree's `L#` and the placements all agree with it. The
/// issue-17 regression: the lone core was shown as a second `Core L#0` and `core:1` gave `4-5`.
#[test]
fn cores_across_levels_are_the_kernels() {
    let expected = util::expected();
    let mut checked = 0;
    for file in util::corpus_files() {
        let Some(kernel) = expected[&file]["kernel"]["cores"].as_array() else {
            continue;
        };
        let kernel: Vec<Vec<usize>> = kernel
            .iter()
            .map(|core| {
                core.as_array()
                    .unwrap()
                    .iter()
                    .map(util::as_usize)
                    .collect()
            })
            .collect();
        let topo = util::load(&file);

        fn cores(node: &TopoNode, out: &mut Vec<(usize, Vec<usize>)>) {
            if node.kind == NodeKind::Core {
                out.push((node.logical_index, node.pus.clone()));
            }
            for child in &node.children {
                cores(child, out);
            }
        }
        let mut shown = Vec::new();
        cores(&topo.tree(), &mut shown);
        let want: Vec<(usize, Vec<usize>)> = kernel.iter().cloned().enumerate().collect();
        assert_eq!(shown, want, "{file}: the tree's cores and their L#");

        let options = ResolveOptions::default();
        for (i, core) in kernel.iter().enumerate() {
            let got = cpuset::resolve(&format!("core:{i}"), &topo, &options)
                .unwrap_or_else(|e| panic!("{file}: core:{i}: {e}"));
            assert_eq!(&set_to_vec(&got.set), core, "{file}: core:{i}");
        }
        let past = cpuset::resolve(&format!("core:{}", kernel.len()), &topo, &options);
        assert!(
            matches!(past, Err(CpuSetError::IndexOutOfRange { count, .. }) if count == kernel.len()),
            "{file}: {past:?}"
        );
        let first_two: Vec<usize> = kernel[..2].iter().flatten().copied().collect();
        let got = cpuset::resolve("core:0-1", &topo, &options).unwrap();
        assert_eq!(set_to_vec(&got.set), first_two, "{file}: core:0-1");

        // One thread per kernel core, in order, each labelled with its core's index.
        let placement = plan(&topo, kernel.len(), Policy::Cores, None, Binding::Pu).unwrap();
        for (i, thread) in placement.threads.iter().enumerate() {
            assert_eq!(thread.pu, Some(kernel[i][0]), "{file}: cores thread {i}");
            assert_eq!(thread.core, Some(i), "{file}: cores thread {i}'s core");
        }
        checked += 1;
    }
    assert!(checked >= 2, "only {checked} files with kernel cores");
}

#[test]
fn a_synthetic_machine_of_4096_pus_loads_with_its_counts() {
    let topo = Topology::load(&TopologySource::Synthetic(
        "pack:4 numa:4 l3:4 core:16 pu:4".into(),
    ))
    .unwrap();
    let c = topo.counts();
    assert_eq!(
        (c.packages, c.numa_nodes, c.l3, c.cores, c.pus),
        (4, 16, 64, 1024, 4096)
    );
    assert_eq!((topo.smt().min, topo.smt().max), (4, 4));
}

#[test]
fn bad_inputs_name_the_input_and_the_reason() {
    let missing = Topology::load(&TopologySource::XmlFile("no/such/file.xml".into())).unwrap_err();
    assert!(
        missing.to_string().starts_with("no/such/file.xml: "),
        "{missing}"
    );

    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.xml");
    std::fs::write(&junk, "this is not xml").unwrap();
    let err = Topology::load(&TopologySource::XmlFile(junk.clone()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("junk.xml") && err.contains("no <topology> element"),
        "{err}"
    );

    let err = Topology::load(&TopologySource::Synthetic("pack:2 core:x".into())).unwrap_err();
    assert!(
        err.to_string().contains("'core:x' needs a positive count"),
        "{err}"
    );
    let err = Topology::load(&TopologySource::Synthetic("pack:2 banana:3".into())).unwrap_err();
    assert!(err.to_string().contains("pack:2 banana:3"), "{err}");
}
