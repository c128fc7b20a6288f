//! Live tests on simulated multi-socket machines: QEMU guests (TCG) with SMT, NUMA nodes and
//! distances, CPUs taken offline and a cgroup-v2 cpuset and quota, each running one payload of
//! `scripts/vm/payloads/` whose checks are compared here with what the guest's kernel and hwloc's
//! tools (in the same guest) say.
//!
//! Adding a check: a `check NAME CMD...` line in the payload, an assertion on `guest.ok(NAME)`
//! here. The guests run the release binary, so these tests run in the release pass
//! (`cargo test --release --test cli vm::`, part of `make test`); they skip, saying so, only where QEMU
//! cannot run. `make vm-shell` boots a guest by hand (see the README).
// Not built for Windows: QEMU guests booting Linux, checked against the guest's kernel: Linux hosts only.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

#[path = "vm/guest.rs"]
mod guest;
use crate::util;

use std::collections::{BTreeMap, BTreeSet};

use guest::Guest;
use serde_json::Value;

type Cpus = BTreeSet<usize>;

/// hwloc's bitmap format: comma-separated 32-bit hex words, most significant first.
fn hwloc_hex(text: &str) -> Cpus {
    let mut cpus = Cpus::new();
    for (i, word) in text.trim().rsplit(',').enumerate() {
        let word = word.trim_start_matches("0x");
        let bits = if word.is_empty() {
            0
        } else {
            u32::from_str_radix(word, 16).unwrap_or_else(|e| panic!("'{text}': {e}"))
        };
        cpus.extend((0..32).filter(|b| bits & (1 << b) != 0).map(|b| 32 * i + b));
    }
    cpus
}

/// A Linux CPU list (`0-3,8`).
fn list(text: &str) -> Cpus {
    coretune_core::cpuset::parse_list(text.trim())
        .unwrap_or_else(|| panic!("'{text}' is not a CPU list"))
        .into_iter()
        .collect()
}

fn numbers(v: &Value) -> Cpus {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|n| usize::try_from(n.as_u64().unwrap()).unwrap())
        .collect()
}

/// What the guest's kernel says (`facts` in the payload: sysfs).
#[derive(Debug)]
struct Kernel {
    online: Cpus,
    /// CPU → (package, its SMT siblings, NUMA node).
    cpus: BTreeMap<usize, (usize, Cpus, usize)>,
    /// NUMA node → (CPUs, distances to every node).
    nodes: BTreeMap<usize, (Cpus, Vec<u64>)>,
}

impl Kernel {
    fn read(guest: &Guest, check: &str) -> Self {
        let mut k = Kernel {
            online: Cpus::new(),
            cpus: BTreeMap::new(),
            nodes: BTreeMap::new(),
        };
        for line in guest.ok(check).lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            match f.as_slice() {
                ["online", cpus] => k.online = list(cpus),
                ["cpu", cpu, package, siblings, node] => {
                    k.cpus.insert(
                        cpu.parse().unwrap(),
                        (
                            package.parse().unwrap(),
                            list(siblings),
                            node.parse().unwrap(),
                        ),
                    );
                }
                ["node", node, cpus, "distances", distances @ ..] => {
                    k.nodes.insert(
                        node.parse().unwrap(),
                        (
                            list(cpus),
                            distances.iter().map(|d| d.parse().unwrap()).collect(),
                        ),
                    );
                }
                _ => panic!("{}: unexpected kernel fact line '{line}'", guest.name),
            }
        }
        k
    }

    /// The cores (sets of SMT siblings), in the order of their first CPU.
    fn cores(&self) -> Vec<Cpus> {
        let set: BTreeSet<Vec<usize>> = self
            .cpus
            .values()
            .map(|(_, siblings, _)| siblings.iter().copied().collect())
            .collect();
        set.into_iter().map(|v| v.into_iter().collect()).collect()
    }

    fn packages(&self) -> usize {
        self.cpus
            .values()
            .map(|c| c.0)
            .collect::<BTreeSet<_>>()
            .len()
    }
}

/// `coretune topo --json` agrees with the kernel: counts, SMT, NUMA nodes, distances, offline.
fn assert_topo_is_the_kernels(guest: &Guest, topo: &str, kernel: &Kernel) {
    let json = guest.json(topo);
    let what = format!("{}: {topo}", guest.name);
    let counts = &json["counts"];
    assert_eq!(counts["pus"], kernel.online.len(), "{what}: PUs");
    assert_eq!(counts["cores"], kernel.cores().len(), "{what}: cores");
    assert_eq!(counts["packages"], kernel.packages(), "{what}: packages");
    assert_eq!(
        counts["numa_nodes"],
        kernel.nodes.len(),
        "{what}: NUMA nodes"
    );
    let widths: BTreeSet<usize> = kernel.cores().iter().map(BTreeSet::len).collect();
    assert_eq!(json["smt"]["min"], *widths.first().unwrap(), "{what}: SMT");
    assert_eq!(json["smt"]["max"], *widths.last().unwrap(), "{what}: SMT");
    for (node, (i, (cpus, distances))) in json["numa_nodes"]
        .as_array()
        .unwrap()
        .iter()
        .zip(kernel.nodes.iter())
    {
        assert_eq!(node["os_index"], *i, "{what}");
        let mut online = cpus.clone();
        online.retain(|c| kernel.online.contains(c));
        assert_eq!(numbers(&node["pus"]), online, "{what}: PUs of node {i}");
        let row = &json["distances"][0]["values"];
        let n = kernel.nodes.len();
        let got: Vec<u64> = (0..n).map(|j| row[i * n + j].as_u64().unwrap()).collect();
        assert_eq!(&got, distances, "{what}: distances from node {i}");
    }
}

/// `hwloc-calc -N TYPE all` in the guest, as `TYPE COUNT` lines, against `coretune topo --json`.
fn assert_counts_are_hwlocs(guest: &Guest, topo: &str, hwloc: &str) {
    let json = guest.json(topo);
    for line in guest.ok(hwloc).lines() {
        let (ty, n) = line.split_once(' ').unwrap();
        let key = match ty {
            "package" => "packages",
            "numa" => "numa_nodes",
            "l3cache" => "l3",
            "core" => "cores",
            "pu" => "pus",
            _ => panic!("{line}"),
        };
        assert_eq!(
            json["counts"][key].to_string(),
            n.trim(),
            "{}: {key}: coretune vs hwloc-calc -N {ty}",
            guest.name
        );
    }
}

/// Every `cpus EXPR` check has the answer of its `hwloc-calc EXPR` check.
fn assert_cpus_are_hwloc_calcs(guest: &Guest) -> usize {
    let mut compared = 0;
    for (name, record) in &guest.records {
        let Some(expr) = name.strip_prefix("cpus ") else {
            continue;
        };
        let Some(hwloc) = guest.records.get(&format!("hwloc-calc {expr}")) else {
            continue;
        };
        assert_eq!(
            (record.rc, record.out.trim()),
            (hwloc.rc, hwloc.out.trim()),
            "{}: coretune cpus {expr} vs hwloc-calc {expr} (stderr: {} / {})",
            guest.name,
            record.err,
            hwloc.err
        );
        compared += 1;
    }
    compared
}

/// Each planned thread's CPUs, from `coretune place --json`.
fn planned(guest: &Guest, place: &str) -> Vec<Cpus> {
    guest.json(place)["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| numbers(&t["pus"]))
        .collect()
}

/// The threads of a run of a test program, by thread number: (number, CPUs seen, affinity).
/// `where` prints a JSON line per OpenMP thread; the pin tests' `threads` prints
/// `thread I tid T affinity LIST seen LIST`, I in creation order (main first).
fn threads(guest: &Guest, run: &str) -> Vec<(usize, Cpus, Cpus)> {
    let pthreads = guest.ok(run).starts_with("thread ");
    let mut out: Vec<(usize, Cpus, Cpus)> = if pthreads {
        guest
            .ok(run)
            .lines()
            .map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                assert_eq!(w.len(), 8, "{}: {run}: '{l}'", guest.name);
                (w[1].parse().unwrap(), list(w[7]), list(w[5]))
            })
            .collect()
    } else {
        guest
            .json_lines(run)
            .iter()
            .map(|t| {
                (
                    usize::try_from(t["thread"].as_u64().unwrap()).unwrap(),
                    numbers(&t["cpus"]),
                    numbers(&t["affinity"]),
                )
            })
            .collect()
    };
    out.sort_by_key(|t| t.0);
    out
}

/// A run placed by plan `place` (`coretune run --place P --threads N -- where`): thread i is
/// bound to the plan's thread i and ran only there.
fn assert_threads_follow_plan(guest: &Guest, place: &str, run: &str) {
    assert_threads_placed(guest, run, &planned(guest, place));
}

/// Thread i of a run of `where` or `threads` is bound to `want[i]` and ran only there.
fn assert_threads_placed(guest: &Guest, run: &str, want: &[Cpus]) {
    let got = threads(guest, run);
    assert_eq!(got.len(), want.len(), "{}: {run}: threads", guest.name);
    for ((i, seen, affinity), want) in got.iter().zip(want) {
        assert_eq!(
            affinity, want,
            "{}: {run}: thread {i} bound to {affinity:?}, planned {want:?}",
            guest.name
        );
        assert!(
            !seen.is_empty() && seen.is_subset(want),
            "{}: {run}: thread {i} ran on {seen:?}, planned {want:?}",
            guest.name
        );
    }
}

/// Every thread of a `where` run is bound to `cpus` and ran only there.
fn assert_threads_in(guest: &Guest, run: &str, cpus: &Cpus, count: usize) {
    let got = threads(guest, run);
    assert_eq!(got.len(), count, "{}: {run}: threads", guest.name);
    for (i, seen, affinity) in got {
        assert_eq!(
            &affinity, cpus,
            "{}: {run}: thread {i}'s affinity",
            guest.name
        );
        assert!(
            !seen.is_empty() && seen.is_subset(cpus),
            "{}: {run}: thread {i} ran on {seen:?}, outside {cpus:?}",
            guest.name
        );
    }
}

/// Each thread's first victims (`steal_first`) on the kernel's machine: other threads, nearest
/// first (same core, then the same NUMA node), every SMT sibling among them, none on another node.
fn assert_steal_orders_nearest_first(guest: &Guest, place: &str, kernel: &Kernel) {
    let json = guest.json(place);
    let threads = json["threads"].as_array().unwrap();
    let cpu = |t: &Value| *numbers(&t["pus"]).first().unwrap();
    for (i, t) in threads.iter().enumerate() {
        let (_, siblings, node) = &kernel.cpus[&cpu(t)];
        let first: Vec<usize> = t["steal_first"]
            .as_array()
            .unwrap_or_else(|| panic!("{place}: no steal_first in {t}"))
            .iter()
            .map(|j| usize::try_from(j.as_u64().unwrap()).unwrap())
            .collect();
        let class = |j: usize| {
            let theirs = cpu(&threads[j]);
            if siblings.contains(&theirs) {
                0
            } else if kernel.cpus[&theirs].2 == *node {
                1
            } else {
                2
            }
        };
        let classes: Vec<u8> = first.iter().map(|&j| class(j)).collect();
        assert!(
            !first.contains(&i) && classes.is_sorted() && !classes.contains(&2),
            "{place}: thread {i} (CPU {}) steals first from {first:?}, classes {classes:?}",
            cpu(t)
        );
        let near: Vec<usize> = (0..threads.len())
            .filter(|&j| j != i && class(j) == 0)
            .collect();
        assert!(
            near.iter().all(|j| first.contains(j)),
            "{place}: thread {i}: SMT siblings {near:?} not all in {first:?}"
        );
    }
}

#[test]
#[cfg_attr(
    not(optimized),
    ignore = "the guests run the release binary: cargo test --release --test cli vm::"
)]
fn two_sockets_smt_numa_placement_and_cgroup() {
    let Some(guest) = guest::boot("smt") else {
        return;
    };
    let kernel = Kernel::read(&guest, "kernel");
    assert_eq!(
        kernel.online,
        (0..16).collect(),
        "the guest has the 16 CPUs configured"
    );
    assert_eq!(kernel.cores().len(), 8);
    assert_eq!(kernel.packages(), 2);
    assert_eq!(kernel.nodes[&1].0, (8..16).collect());
    assert_topo_is_the_kernels(&guest, "topo", &kernel);
    assert_counts_are_hwlocs(&guest, "topo", "hwloc-counts");
    let budget = &guest.json("topo")["budget"];
    assert_eq!(numbers(&budget["usable"]), kernel.online);
    assert_eq!(budget["budget"], 16.0);

    assert!(assert_cpus_are_hwloc_calcs(&guest) >= 11);

    // Placement: each OpenMP thread runs where planned.
    for p in ["spread", "cores", "compact"] {
        assert_threads_follow_plan(&guest, &format!("place {p}"), &format!("run {p}"));
    }
    let spread = planned(&guest, "place spread");
    let nodes: BTreeSet<usize> = spread
        .iter()
        .map(|t| kernel.cpus[t.first().unwrap()].2)
        .collect();
    assert_eq!(nodes.len(), 2, "spread uses both NUMA nodes: {spread:?}");
    let cores: BTreeSet<Cpus> = planned(&guest, "place cores")
        .iter()
        .map(|t| kernel.cpus[t.first().unwrap()].1.clone())
        .collect();
    assert_eq!(cores.len(), 4, "cores: one thread per core");

    // A CPU set binds every thread, as hwloc-bind does.
    let core3 = hwloc_hex(guest.ok("hwloc-calc core:3"));
    assert_eq!(core3, kernel.cores()[3]);
    assert_threads_in(&guest, "run core:3", &core3, 3);
    assert_threads_in(&guest, "hwloc-bind core:3", &core3, 3);

    // Rebinding a running program: every thread moves, hwloc sees the new binding.
    let target = hwloc_hex(guest.ok("hwloc-calc numa:1.core:2-3"));
    assert_eq!(target, (12..16).collect());
    assert_threads_in(&guest, "run --pid", &target, 4);
    assert_eq!(hwloc_hex(guest.ok("run --pid hwloc-bind --get")), target);

    // Per-thread pinning of an unmodified pthreads program: the preloaded library placed each
    // thread, in creation order, wrapping around past the last place.
    assert_threads_placed(&guest, "pin spread", &planned(&guest, "place spread"));
    let debug = &guest.get("pin spread").err;
    assert!(
        debug.contains("]: plan of 6 places") && debug.contains("pthread_create #4 -> place 5"),
        "pin spread: the library did not say it pinned: {debug}"
    );
    let cores4 = planned(&guest, "place cores");
    let want: Vec<Cpus> = (0..9).map(|i| cores4[i % 4].clone()).collect();
    assert_threads_placed(&guest, "pin cores 9", &want);
    let whole = planned(&guest, "place cores 4 core");
    for place in &whole {
        assert_eq!(
            place,
            &kernel.cpus[place.first().unwrap()].1,
            "--bind core: a whole core"
        );
    }
    assert_threads_placed(&guest, "pin cores core", &whole);
    // Re-pinning a running OpenMP program's threads one by one, in creation order.
    assert_threads_follow_plan(&guest, "place spread 4", "run --pid --place");

    // The pool's steal order on the guest's machine.
    assert_steal_orders_nearest_first(&guest, "place compact 16", &kernel);

    // Built-in workloads: each worker ran only on its planned CPUs.
    for p in ["compact", "spread", "cores"] {
        let plan = planned(&guest, &format!("place {p} 4"));
        let bench = guest.json(&format!("bench {p}"));
        assert_eq!(bench["verified"], true, "bench {p}");
        let workers = bench["runs"][0]["threads"].as_array().unwrap();
        assert_eq!(workers.len(), 4, "bench {p}: workers");
        for w in workers {
            let i = usize::try_from(w["worker"].as_u64().unwrap()).unwrap();
            let seen: Cpus = w["cpus_seen"]
                .as_object()
                .unwrap()
                .keys()
                .map(|k| k.parse().unwrap())
                .collect();
            assert!(
                !seen.is_empty() && seen.is_subset(&plan[i]),
                "bench {p}: worker {i} ran on {seen:?}, planned {:?}",
                plan[i]
            );
        }
    }

    // watch on a program pinned to CPUs 4-5: its threads were seen only there, and those CPUs
    // were busy.
    let watch = guest.json("watch");
    let pinned: Cpus = [4, 5].into();
    let workers: Vec<&Value> = watch["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"] == "where")
        .collect();
    assert_eq!(
        workers.len(),
        2,
        "watch saw the program's 2 threads: {watch}"
    );
    for t in workers {
        let seen: Cpus = t["cpus_seen"]
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.parse().unwrap())
            .collect();
        assert!(
            seen.is_subset(&pinned),
            "watch: a pinned thread seen on {seen:?}"
        );
    }
    for cpu in &watch["cpus"].as_array().unwrap()[4..6] {
        assert!(
            cpu["busy_pct"].as_f64().unwrap() >= 40.0,
            "watch: pinned CPU {} only {}% busy",
            cpu["cpu"],
            cpu["busy_pct"]
        );
    }

    // Memory placement: first touch by each worker puts the pages on its node.
    let pages = |check: &str| -> (f64, f64) {
        let out = guest.ok(check);
        let mut f = out.split_whitespace();
        let total: f64 = f.next().unwrap().parse().unwrap();
        let mut per: BTreeMap<&str, f64> = BTreeMap::new();
        for kv in f {
            let (k, v) = kv.split_once('=').unwrap();
            per.insert(k, v.parse().unwrap());
        }
        // 3 arrays of 32 MiB in 4 KiB pages.
        assert!(
            total >= 0.9 * 3.0 * 32.0 * 256.0,
            "{check}: only {total} pages seen"
        );
        (
            per.get("N0").copied().unwrap_or(0.0) / total,
            per.get("N1").copied().unwrap_or(0.0) / total,
        )
    };
    let (n0, n1) = pages("numa_maps spread");
    assert!(
        n0 >= 0.25 && n1 >= 0.25,
        "spread: pages split {n0:.2}/{n1:.2}"
    );
    let (n0, _) = pages("numa_maps compact");
    assert!(n0 >= 0.9, "compact: only {n0:.2} of the pages on node 0");

    // The rules daemon, on the process-event connector: the program started after it got one
    // core of node 1 per thread, in creation order.
    let stderr = guest.ok("rules watch stderr");
    assert!(
        stderr.contains("watching process starts through the kernel's process-event connector"),
        "rules watch did not use the connector: {stderr}"
    );
    // The rule plans as many places as node 1 has CPUs (8); where's 4 threads take the first 4.
    assert_threads_placed(
        &guest,
        "rules watch",
        &planned(&guest, "place cores numa:1")[..4],
    );
    let log = guest.json_lines("rules watch log");
    let exec = log
        .iter()
        .find(|l| l["event"] == "exec" && l["exe"].as_str().is_some_and(|e| e.ends_with("/where")))
        .unwrap_or_else(|| panic!("rules watch: no exec of where logged: {log:?}"));
    assert_eq!(exec["result"], "applied", "{exec}");
    assert_eq!(exec["rule"], "where: node 1, a core each", "{exec}");
    assert!(exec["latency_ms"].as_f64().is_some(), "{exec}");

    // Under a cgroup-v2 cpuset (4-11) and a 2.5-CPU quota.
    let box_cpus: Cpus = (4..12).collect();
    let topo = guest.json("cgroup topo");
    let budget = &topo["budget"];
    assert_eq!(numbers(&budget["usable"]), box_cpus);
    assert_eq!(numbers(&budget["cgroup_cpuset"]["cpus"]), box_cpus);
    assert_eq!(budget["quota"]["cpus"], 2.5);
    assert_eq!(budget["budget"], 2.5);
    assert_eq!(topo["counts"]["pus"], 8);
    assert_eq!(
        guest.ok("cgroup cpus all").trim(),
        guest.ok("cgroup hwloc-calc all").trim()
    );
    assert_eq!(hwloc_hex(guest.ok("cgroup cpus all")), box_cpus);
    let plan = planned(&guest, "cgroup place");
    assert!(plan.iter().all(|t| t.is_subset(&box_cpus)), "{plan:?}");
    assert_threads_follow_plan(&guest, "cgroup place", "cgroup run");

    // tune --launcher mpirun, 2 ranks × 4 threads, spread: Open MPI's line (a rank per node), and each
    // rank's threads, as they report from inside, on 4 cores of its own node, a core each.
    if guest.records.contains_key("tune mpirun") {
        let out = guest.ok("tune mpirun");
        assert!(
            out.contains("mpirun -np 2 --map-by numa:PE=4 --bind-to core"),
            "{out}"
        );
        for rank in 0..2 {
            let node = &kernel.nodes[&rank].0;
            let mut cores = BTreeSet::new();
            for line in out
                .lines()
                .filter(|l| l.starts_with(&format!("rank {rank}/2 thread ")))
            {
                let cpus = list(line.rsplit(' ').next().unwrap());
                let first = *cpus.iter().next().unwrap();
                assert!(cpus.is_subset(node), "rank {rank} off its node: {line}");
                assert_eq!(cpus, kernel.cpus[&first].1, "not one whole core: {line}");
                assert!(cores.insert(first), "two threads on one core: {out}");
            }
            assert_eq!(cores.len(), 4, "rank {rank}: {out}");
        }
    } else {
        util::skip("'tune mpirun' (no Open MPI on this host: scripts/setup.sh --test)");
    }
}

/// Every `numa_maps` line shows `policy`, and the pages are on `nodes` only
/// (`N<node>=<pages>`), some of them at least.
fn assert_pages_on(what: &str, lines: &[&str], policy: &str, nodes: &[usize]) {
    let mut seen = BTreeSet::new();
    for line in lines {
        assert!(line.contains(&format!(" {policy} ")), "{what}: {line}");
        for field in line.split_whitespace() {
            if let Some((node, _)) = field.strip_prefix('N').and_then(|f| f.split_once('=')) {
                seen.insert(node.parse::<usize>().unwrap());
            }
        }
    }
    let want: BTreeSet<usize> = nodes.iter().copied().collect();
    assert!(
        !seen.is_empty() && seen.is_subset(&want),
        "{what}: pages on nodes {seen:?}, asked {want:?}: {lines:?}"
    );
}

#[test]
#[cfg_attr(
    not(optimized),
    ignore = "the guests run the release binary: cargo test --release --test cli vm::"
)]
fn four_sockets_four_nodes_with_distances() {
    let Some(guest) = guest::boot("big") else {
        return;
    };
    let kernel = Kernel::read(&guest, "kernel");
    assert_eq!(kernel.online.len(), 64);
    assert_eq!(kernel.cores().len(), 32);
    assert_eq!(kernel.packages(), 4);
    // The distances configured in payloads/big.sh, as the kernel reports them.
    assert_eq!(kernel.nodes[&0].1, [10, 12, 21, 31]);
    assert_eq!(kernel.nodes[&3].1, [31, 26, 14, 10]);
    assert_topo_is_the_kernels(&guest, "topo", &kernel);
    assert_counts_are_hwlocs(&guest, "topo", "hwloc-counts");
    assert!(assert_cpus_are_hwloc_calcs(&guest) >= 6);

    // spread is hwloc-distrib's answer, and the threads run there.
    let plan = planned(&guest, "place spread");
    let distrib: Vec<Cpus> = guest
        .ok("hwloc-distrib --single 8")
        .lines()
        .map(hwloc_hex)
        .collect();
    assert_eq!(plan, distrib, "spread vs hwloc-distrib --single 8");
    let nodes: BTreeSet<usize> = plan
        .iter()
        .map(|t| kernel.cpus[t.first().unwrap()].2)
        .collect();
    assert_eq!(nodes.len(), 4, "spread uses every node: {plan:?}");
    assert_threads_follow_plan(&guest, "place spread", "run spread");
    // The pthreads program, thread by thread through the preloaded library; the pool's steal
    // order: the thread on the same node first, then the others.
    assert_threads_placed(&guest, "pin spread", &plan);
    assert_steal_orders_nearest_first(&guest, "place spread", &kernel);

    // tune --mem: each configuration's run started with its own policy (its numa_maps, in a
    // file named by the policy), its pages on the nodes asked for.
    let tuned = guest.ok("tune mem");
    for (file, policy, nodes) in [
        ("maps-bind:numa:2:", "bind:2", [2].as_slice()),
        (
            "maps-interleave:numa:1-2:",
            "interleave:1-2",
            [1, 2].as_slice(),
        ),
    ] {
        let lines: Vec<&str> = tuned.lines().filter(|l| l.starts_with(file)).collect();
        assert!(!lines.is_empty(), "{file}: {tuned}");
        assert_pages_on(file, &lines, policy, nodes);
    }

    // tune --mem on membw: its arrays' pages, seen from outside during the runs, on node 2
    // (the workers' own policy: the mappings themselves show the default policy) — all but a
    // few pages, the first of each array, where malloc writes its chunk header from the thread
    // that allocates (the run's, which has no policy): at most 1 page in 1000 elsewhere.
    let membw = guest.ok("tune mem membw");
    let arrays: Vec<&str> = membw.lines().collect();
    assert!(!arrays.is_empty(), "no array seen: {membw}");
    for line in &arrays {
        let mut on = BTreeMap::new();
        for field in line.split_whitespace() {
            if let Some((node, pages)) = field.strip_prefix('N').and_then(|f| f.split_once('=')) {
                on.insert(
                    node.parse::<usize>().unwrap(),
                    pages.parse::<u64>().unwrap(),
                );
            }
        }
        let elsewhere: u64 = on.iter().filter(|(n, _)| **n != 2).map(|(_, p)| p).sum();
        let on_2 = on.get(&2).copied().unwrap_or(0);
        assert!(
            on_2 >= 8192 && elsewhere * 1000 <= on_2,
            "membw's pages not on node 2: {line}"
        );
    }

    // tune --instances 4 --mem local: copy k ran on NUMA node k's CPUs exactly, as the kernel
    // lists them, with its pages on that node.
    let copies = guest.ok("tune instances");
    for (node, (cpus, _)) in &kernel.nodes {
        let file = format!("inst-{node}:");
        let lines: Vec<&str> = copies.lines().filter(|l| l.starts_with(&file)).collect();
        let allowed = lines
            .iter()
            .find_map(|l| l.split_once("Cpus_allowed_list:"))
            .map(|(_, list)| self::list(list))
            .unwrap_or_else(|| panic!("{file} has no CPUs: {copies}"));
        assert_eq!(&allowed, cpus, "{file}: {copies}");
        let maps: Vec<&str> = lines
            .into_iter()
            .filter(|l| !l.contains("Cpus_allowed_list"))
            .collect();
        assert_pages_on(&file, &maps, "local", &[*node]);
    }

    // run --mem: the kernel shows the policy on the program's mappings, and their pages are on
    // the nodes asked for (`N<node>=<pages>` in numa_maps).
    for (name, policy, nodes) in [
        ("mem bind", "bind:2", [2].as_slice()),
        ("mem interleave", "interleave:1-2", [1, 2].as_slice()),
        ("mem near", "bind:3", [3].as_slice()),
    ] {
        let maps = guest.ok(name);
        assert_pages_on(name, &maps.lines().collect::<Vec<_>>(), policy, nodes);
    }
}

#[test]
#[cfg_attr(
    not(optimized),
    ignore = "the guests run the release binary: cargo test --release --test cli vm::"
)]
fn offline_cpus_keep_core_numbering_right() {
    let Some(guest) = guest::boot("offline") else {
        return;
    };
    for phase in ["cpu3", "cpu0"] {
        let kernel = Kernel::read(&guest, &format!("{phase} kernel"));
        assert_topo_is_the_kernels(&guest, &format!("{phase} topo"), &kernel);
        let topo = guest.json(&format!("{phase} topo"));
        let offline: Cpus = (0..16).filter(|c| !kernel.online.contains(c)).collect();
        assert_eq!(numbers(&topo["offline_pus"]), offline, "{phase}");
        // core:N is the kernel's N-th core (in CPU order); one past the last is an error.
        let cores = kernel.cores();
        for (i, core) in cores.iter().enumerate() {
            let got = list(guest.ok(&format!("{phase} cpus core:{i}")));
            assert_eq!(&got, core, "{phase}: core:{i}");
        }
        let past = guest.get(&format!("{phase} cpus core:{}", cores.len()));
        assert_eq!(past.rc, 2, "{phase}: core:{} must be refused", cores.len());
        assert!(past.err.contains("past the last core"), "{}", past.err);
    }

    // CPU 3 offline: CPU 2 is a core of its own, shown once with its own index.
    let text = guest.ok("cpu3 topo text");
    let indexes: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("Core L#"))
        .map(|l| l.split([' ', ':']).next().unwrap())
        .collect();
    let distinct: BTreeSet<&&str> = indexes.iter().collect();
    assert_eq!(indexes.len(), 8, "cores shown: {text}");
    assert_eq!(distinct.len(), 8, "a core index shown twice: {text}");
    // hwloc-calc 2.9 refuses core:N here ("found multiple levels") or gives coretune's answer.
    let hwloc = guest.get("cpu3 hwloc-calc core:1");
    if hwloc.rc == 0 && hwloc.out.trim() != "0x0" {
        assert_eq!(hwloc_hex(&hwloc.out), [2].into());
    }
    let kernel = Kernel::read(&guest, "cpu3 kernel");
    let cores: BTreeSet<Cpus> = planned(&guest, "cpu3 place cores")
        .iter()
        .map(|t| kernel.cpus[t.first().unwrap()].1.clone())
        .collect();
    assert_eq!(
        cores.len(),
        8,
        "cores policy: one thread on each of the 8 cores"
    );
    assert_threads_follow_plan(&guest, "cpu3 place cores", "cpu3 run cores");
    assert!(guest.ok("cpu3 xml").contains("<topology"));

    // CPU 0 offline too.
    assert_eq!(
        guest.ok("cpu0 cpus all").trim(),
        guest.ok("cpu0 hwloc-calc all").trim()
    );
    assert_eq!(
        guest.ok("cpu0 cpus numa:0").trim(),
        guest.ok("cpu0 hwloc-calc numa:0").trim()
    );
    let cpu0 = guest.get("cpu0 cpus 0");
    assert_eq!(cpu0.rc, 2, "naming only offline CPU 0 is an error");
    assert!(cpu0.err.contains("offline"), "{}", cpu0.err);
    assert_threads_follow_plan(&guest, "cpu0 place compact", "cpu0 run compact");
    assert!(
        planned(&guest, "cpu0 place compact")
            .iter()
            .all(|t| !t.contains(&0) && !t.contains(&3))
    );
}
