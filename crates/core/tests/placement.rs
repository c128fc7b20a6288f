//! Placement on every real-machine topology: `spread` is hwloc-distrib's answer (`expected.json`
//! `distrib`), `compact` walks hwloc's logical PU order, `cores` takes one PU per core first (the
//! set `hwloc-calc --no-smt all` gives), and the per-file invariants hold for every policy.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns, where clippy.toml does not reach

#[path = "util/strategies.rs"]
mod strategies;
mod util;

use std::collections::HashSet;

use coretune_core::Topology;
use coretune_core::cpuset::{Format, ResolveOptions, resolve};
use coretune_core::placement::distribute;
use coretune_core::{Binding, Placement, Policy, plan};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

fn hex(set: &coretune_core::CpuSet) -> String {
    Format::Hwloc.render(set).unwrap()
}

#[test]
fn spread_is_hwloc_distrib_on_every_corpus_file() {
    let expected = util::expected();
    let mut failures = Vec::new();
    let mut compared = 0;
    for file in util::corpus_files() {
        let facts = &expected[&file];
        let topo = util::load(&file);
        for (key, want) in facts["distrib"].as_object().unwrap() {
            let (single, n) = match key.strip_prefix("--single ") {
                Some(n) => (true, n.parse::<usize>().unwrap()),
                None => (false, key.parse::<usize>().unwrap()),
            };
            let want: Vec<String> = want["cpusets"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_owned())
                .collect();
            let got: Vec<String> = if single {
                let p = plan(&topo, n, Policy::Spread, None, Binding::Pu).unwrap();
                p.cpusets().iter().map(hex).collect()
            } else {
                // `--bind share`: each thread's set is its whole hwloc-distrib part.
                let shared = plan(&topo, n, Policy::Spread, None, Binding::Share).unwrap();
                let from_plan: Vec<String> = shared.cpusets().iter().map(hex).collect();
                let direct: Vec<String> = distribute(&topo, n, None)
                    .unwrap()
                    .iter()
                    .map(hex)
                    .collect();
                assert_eq!(from_plan, direct, "{file}: --bind share vs distribute {n}");
                from_plan
            };
            compared += 1;
            if got != want {
                failures.push(format!(
                    "{file} hwloc-distrib {key}:\n  got  {got:?}\n  want {want:?}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // 4 keys per file, fewer where ncores = 4 (the keys coincide).
    assert!(compared >= 100, "only {compared} distrib answers compared");
}

fn pus_of(v: &serde_json::Value) -> Vec<usize> {
    v.as_array().unwrap().iter().map(util::as_usize).collect()
}

#[test]
fn compact_cores_and_cpu0_on_every_corpus_file() {
    let expected = util::expected();
    for file in util::corpus_files() {
        let facts = &expected[&file];
        let topo = util::load(&file);
        let npus = util::as_usize(&facts["counts"]["pus"]);
        let ncores = util::as_usize(&facts["counts"]["cores"]);

        // compact = hwloc's logical PU order (`hwloc-calc -I pu --po all`).
        let logical = pus_of(&facts["queries"]["all"]["pus"]);
        let compact = plan(&topo, npus, Policy::Compact, None, Binding::Pu).unwrap();
        let firsts: Vec<usize> = compact.threads.iter().map(|t| t.pu.unwrap()).collect();
        assert_eq!(firsts, logical, "{file}: compact order");

        // cores: the first ncores threads are one PU per core, the set of `--no-smt all` (where
        // hwloc put cores on several levels, hwloc-calc's --no-smt keeps every PU: there the
        // first PU of each of the kernel's cores).
        let cores = plan(&topo, ncores, Policy::Cores, None, Binding::Pu).unwrap();
        let core_ids: HashSet<usize> = cores.threads.iter().map(|t| t.core.unwrap()).collect();
        assert_eq!(core_ids.len(), ncores, "{file}: cores repeats a core");
        let no_smt = match facts["kernel"]["cores"].as_array() {
            Some(kernel) => hex(&coretune_core::cpuset::set_from_indexes(
                kernel.iter().map(|core| util::as_usize(&core[0])),
            )),
            None => facts["queries"]["--no-smt all"]["cpuset"]
                .as_str()
                .unwrap()
                .to_owned(),
        };
        assert_eq!(
            hex(&cores.union()),
            no_smt,
            "{file}: cores policy vs hwloc-calc --no-smt all"
        );

        // `all ~pu:0` keeps the first PU free for every policy and thread count.
        let free = resolve("all ~pu:0", &topo, &ResolveOptions::default()).unwrap();
        let pu0 = logical[0];
        for policy in Policy::ALL {
            for threads in [1, 4, ncores, npus, npus + 3] {
                for binding in [Binding::Pu, Binding::Core, Binding::Shared, Binding::Share] {
                    let p = plan(&topo, threads, policy, Some(&free.set), binding).unwrap();
                    check_invariants(&topo, &p, threads, Some(&free.set));
                    assert!(
                        !p.union().is_set(pu0),
                        "{file} {policy} {threads} {binding}: uses CPU {pu0}"
                    );
                }
            }
        }
    }
}

/// What holds for every plan: one entry per thread, non-empty sets inside the usable CPUs, PU
/// binding = one PU each and no PU twice while threads fit; beyond, `spread` packs the extra
/// threads onto neighbouring PUs as hwloc-distrib does (every PU used, at most one thread more on
/// one PU than on another, a PU's threads consecutive) and the other policies wrap around;
/// `share` gives disjoint parts while threads fit; steal orders are permutations of the other
/// threads and begin with the nearest ones.
fn check_invariants(
    topo: &Topology,
    p: &Placement,
    threads: usize,
    cpus: Option<&coretune_core::CpuSet>,
) {
    let mut available = topo.cpuset();
    if let Some(c) = cpus {
        available &= c;
    }
    let navail = available.weight().unwrap();
    assert_eq!(p.len(), threads);
    for t in &p.threads {
        assert!(!t.pus.is_empty());
        assert!(
            t.pus.iter().all(|&c| available.is_set(c)),
            "{:?} outside",
            t.pus
        );
        if let Some(pu) = t.pu {
            assert!(t.pus.contains(&pu), "{:?} lacks its PU {pu}", t.pus);
        }
    }
    if p.policy == Policy::Os {
        assert!(p.threads.iter().all(|t| t.pu.is_none()));
    } else {
        let pus: Vec<usize> = p.threads.iter().map(|t| t.pu.unwrap()).collect();
        let distinct: HashSet<usize> = pus.iter().copied().collect();
        assert_eq!(
            distinct.len(),
            threads.min(navail),
            "{} duplicates a PU",
            p.policy
        );
        if p.policy == Policy::Spread || p.binding == Binding::Share {
            // Packed: each PU's threads are consecutive, counts differ by at most one.
            let mut counts = std::collections::BTreeMap::new();
            for w in pus.windows(2) {
                if w[0] != w[1] {
                    assert!(
                        !counts.contains_key(&w[1]),
                        "{} {}: PU {} used again after others",
                        p.policy,
                        p.binding,
                        w[1]
                    );
                }
                *counts.entry(w[0]).or_insert(0usize) += 1;
            }
            if threads >= navail {
                let all: Vec<usize> = pus
                    .iter()
                    .copied()
                    .collect::<HashSet<_>>()
                    .into_iter()
                    .collect();
                assert_eq!(all.len(), navail, "{} {}: unused PUs", p.policy, p.binding);
            }
        } else {
            for i in navail..threads {
                assert_eq!(pus[i], pus[i % navail], "{} does not wrap", p.policy);
            }
        }
        if p.binding == Binding::Pu {
            assert!(p.threads.iter().all(|t| t.pus.len() == 1));
        }
        if p.binding == Binding::Share && threads <= navail {
            let mut seen = HashSet::new();
            for t in &p.threads {
                for &c in t.pus.iter() {
                    assert!(seen.insert(c), "{} share: CPU {c} in two parts", p.policy);
                }
            }
        }
    }
    if threads <= 64 {
        let near = p.steal_near();
        for i in 0..threads {
            let mut order = p.steal_order(i);
            assert_eq!(
                &order[..near[i].len()],
                &near[i][..],
                "steal_near is the head"
            );
            assert!(!order.contains(&i));
            order.sort_unstable();
            assert_eq!(order, (0..threads).filter(|&j| j != i).collect::<Vec<_>>());
        }
    }
}

#[test]
fn steal_order_prefers_the_same_core_then_l3() {
    let topo = util::load("amd-epyc-7451-zen1-2p-8numa-16l3-96pu-sysfs.xml");
    // compact with 8 threads: 2 per core, 3 cores per L3 → threads 0,1 share a core, 0-5 an L3.
    let p = plan(&topo, 8, Policy::Compact, None, Binding::Pu).unwrap();
    let order = p.steal_order(0);
    assert_eq!(order[0], 1, "{order:?}");
    assert_eq!(&order[1..5], &[2, 3, 4, 5], "{order:?}");
    assert_eq!(p.steal_order(3)[0], 2);
}

#[test]
fn policies_and_bindings_parse_and_print() {
    for p in Policy::ALL {
        assert_eq!(p.to_string().parse::<Policy>().unwrap(), p);
    }
    assert!("sideways".parse::<Policy>().is_err());
    for b in [Binding::Pu, Binding::Core, Binding::Shared, Binding::Share] {
        assert_eq!(b.to_string().parse::<Binding>().unwrap(), b);
    }
}

#[test]
fn plans_print_as_each_tool_takes_them() {
    let topo = Topology::load(&coretune_core::TopologySource::Synthetic(
        "pack:2 core:2 pu:2".into(),
    ))
    .unwrap();
    let p = plan(&topo, 4, Policy::Spread, None, Binding::Pu).unwrap();
    assert_eq!(p.omp_places().unwrap(), "{0},{2},{4},{6}");
    assert_eq!(p.omp_proc_bind(), "close");
    assert_eq!(p.taskset_list(), "0,2,4,6");
    assert_eq!(p.likwid_pin().unwrap(), "0,2,4,6");
    let c = plan(&topo, 2, Policy::Spread, None, Binding::Core).unwrap();
    assert_eq!(c.thread_cpus(), vec![vec![0, 1], vec![4, 5]]);
    let s = plan(&topo, 2, Policy::Cores, None, Binding::Shared).unwrap();
    assert_eq!(s.omp_places().unwrap(), "{0,2}");
    let os = plan(&topo, 3, Policy::Os, None, Binding::Pu).unwrap();
    assert_eq!(os.omp_places(), None);
    assert_eq!(os.omp_proc_bind(), "false");
    assert_eq!(os.thread_cpus()[2], (0..8).collect::<Vec<_>>());
    assert!(plan(&topo, 0, Policy::Os, None, Binding::Pu).is_err());
}

fn policy() -> impl Strategy<Value = Policy> {
    proptest::sample::select(Policy::ALL.to_vec())
}

fn binding() -> impl Strategy<Value = Binding> {
    proptest::sample::select(vec![
        Binding::Pu,
        Binding::Core,
        Binding::Shared,
        Binding::Share,
    ])
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        // The regressions file beside this one (tests/ has no lib.rs for SourceParallel).
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn placement_invariants_for_any_thread_count(
        s in strategies::synthetic(),
        threads in 1usize..200,
        policy in policy(),
        binding in binding(),
        subset in strategies::cpu_indexes(64),
    ) {
        let topo = Topology::load(&coretune_core::TopologySource::Synthetic(s.description())).unwrap();
        let mut cpus = coretune_core::cpuset::set_from_indexes(subset);
        cpus &= topo.cpuset();
        let limit = (!cpus.is_empty()).then_some(&cpus);
        let p = plan(&topo, threads, policy, limit, binding).unwrap();
        check_invariants(&topo, &p, threads, limit);
    }
}
