//! CPU-set expressions on every real-machine topology give `hwloc-calc`'s answers, as recorded in
//! `expected.json` (`queries`), in hwloc's bitmap and taskset formats.

mod util;

use coretune_core::CpuSetExpr;
use coretune_core::cpuset::{CpuSetError, Format, ResolveOptions, Warning};
use coretune_core::{Topology, TopologySource};

#[test]
fn corpus_queries_match_hwloc_calc() {
    let expected = util::expected();
    let mut failures = Vec::new();
    let mut compared = 0;
    for file in util::corpus_files() {
        let facts = &expected[&file];
        let topo = util::load(&file);
        let with_disallowed =
            Topology::load_including_disallowed(&TopologySource::XmlFile(util::fixture(&file)))
                .unwrap();
        for (key, want) in facts["queries"].as_object().unwrap() {
            let (topo, expr, options) = match key.as_str() {
                // `--no-smt` restricts hwloc's topology; placement's `cores` policy covers it
                // (tests/placement.rs).
                "--no-smt all" => continue,
                "--disallowed all" => (&with_disallowed, "all", ResolveOptions::default()),
                k if k.starts_with("--pi ") => (
                    &topo,
                    &k["--pi ".len()..],
                    ResolveOptions { physical: true },
                ),
                k => (&topo, k, ResolveOptions::default()),
            };
            let got = expr
                .parse::<CpuSetExpr>()
                .and_then(|e| e.resolve(topo, &options));
            let hwloc_complained = want["stderr"]
                .as_str()
                .is_some_and(|s| s.contains("does not exist"));
            if want["stderr"]
                .as_str()
                .is_some_and(|s| s.contains("found multiple levels"))
            {
                // hwloc-calc refuses a type hwloc put on several levels; the kernel's cores are
                // the reference there (topologies.rs, `cores_across_levels_are_the_kernels`).
                assert!(
                    facts["kernel"].is_object(),
                    "{file} '{key}': {}",
                    want["stderr"]
                );
                continue;
            }
            match got {
                Err(e) if hwloc_complained => {
                    // hwloc-calc warns and ignores the missing object; coretune refuses.
                    assert!(
                        matches!(e, CpuSetError::NoSuchOsIndex { .. }),
                        "{file} {key}: {e}"
                    );
                }
                Err(e) => failures.push(format!("{file} '{key}': error {e}")),
                Ok(_) if hwloc_complained => failures.push(format!(
                    "{file} '{key}': accepted what hwloc-calc says does not exist"
                )),
                Ok(resolved) => {
                    compared += 1;
                    let hex = Format::Hwloc.render(&resolved.set).unwrap();
                    let taskset = Format::Taskset.render(&resolved.set).unwrap();
                    if hex != want["cpuset"].as_str().unwrap() {
                        failures.push(format!(
                            "{file} '{key}': {hex}, hwloc-calc {}",
                            want["cpuset"]
                        ));
                    }
                    if taskset != want["taskset"].as_str().unwrap() {
                        failures.push(format!(
                            "{file} '{key}': taskset {taskset}, hwloc-calc {}",
                            want["taskset"]
                        ));
                    }
                    let list = Format::List.render(&resolved.set).unwrap();
                    if list != want["pulist"].as_str().unwrap() {
                        failures.push(format!(
                            "{file} '{key}': list {list}, want {}",
                            want["pulist"]
                        ));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(compared >= 26 * 5, "only {compared} queries compared");
}

#[test]
fn per_object_sets_match_hwloc_calc() {
    // `expected.json` `numa[i]`, `packages[i]` and `l3[i]` come from `hwloc-info numa:<i>` and
    // `hwloc-calc package:<i>` / `l3cache:<i>`.
    let expected = util::expected();
    let mut failures = Vec::new();
    for file in util::corpus_files() {
        let facts = &expected[&file];
        let topo = util::load(&file);
        for (key, ty) in [("packages", "package"), ("l3", "l3cache")] {
            for obj in facts[key].as_array().unwrap() {
                let i = util::as_usize(&obj["logical_index"]);
                let expr = format!("{ty}:{i}");
                match coretune_core::cpuset::resolve(&expr, &topo, &ResolveOptions::default()) {
                    // hwloc-calc prints 0x0 for an object whose PUs are all disallowed; coretune
                    // calls an empty result an error.
                    Err(CpuSetError::Empty { .. }) if obj["cpuset"] == "0x0" => {}
                    Ok(r) => {
                        let hex = Format::Hwloc.render(&r.set).unwrap();
                        if hex != obj["cpuset"].as_str().unwrap() {
                            failures.push(format!("{file} {expr}: {hex} want {}", obj["cpuset"]));
                        }
                    }
                    Err(e) => failures.push(format!("{file} {expr}: {e}")),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn cpu_kinds_and_hybrid_names() {
    let raptor = util::load("intel-core-i7-1370p-raptorlake-hybrid-1p-14c-20pu.xml");
    let opts = ResolveOptions::default();
    let list = |e: &str, t: &Topology| {
        let r = coretune_core::cpuset::resolve(e, t, &opts).unwrap();
        Format::List.render(&r.set).unwrap()
    };
    assert_eq!(list("pcores", &raptor), "0-11");
    assert_eq!(list("ecores", &raptor), "12-19");
    assert_eq!(list("cpukind:0", &raptor), "12-19");
    assert_eq!(list("cpukind:1 ~pu:0", &raptor), "1-11");
    let mixed = coretune_core::cpuset::resolve("0-13", &raptor, &opts).unwrap();
    assert!(
        mixed
            .warnings
            .iter()
            .any(|w| matches!(w, Warning::MixesCpuKinds { kinds } if kinds.len() == 2)),
        "{:?}",
        mixed.warnings
    );
    let err = coretune_core::cpuset::resolve("cpukind:2", &raptor, &opts).unwrap_err();
    assert_eq!(
        err.to_string(),
        "'cpukind:2': index 2 past the last cpukind (there are 2)"
    );

    let uniform = util::load("intel-core-i7-1165g7-tigerlake-laptop-1p-4c-8pu.xml");
    let err = coretune_core::cpuset::resolve("pcores", &uniform, &opts).unwrap_err();
    assert!(err.to_string().contains("not hybrid"), "{err}");
}

#[test]
fn warnings_name_cpus_and_reasons() {
    let topo = util::load("amd-epyc-7451-zen1-2p-8numa-16l3-96pu-sysfs.xml");
    let r = coretune_core::cpuset::resolve("0-1 48", &topo, &ResolveOptions::default()).unwrap();
    let text: Vec<String> = r.warnings.iter().map(ToString::to_string).collect();
    assert!(matches!(r.warnings[0], Warning::IncludesCpu0), "{text:?}");
    // CPU 0 named by itself is what the user asked for: no warning about it.
    let named =
        coretune_core::cpuset::resolve("0 1 48", &topo, &ResolveOptions::default()).unwrap();
    assert!(
        !named
            .warnings
            .iter()
            .any(|w| matches!(w, Warning::IncludesCpu0)),
        "{:?}",
        named.warnings
    );
    // Every CPU: CPU 0 is not a choice, so not a warning.
    let all = coretune_core::cpuset::resolve("all", &topo, &ResolveOptions::default()).unwrap();
    assert!(
        !all.warnings
            .iter()
            .any(|w| matches!(w, Warning::IncludesCpu0)),
        "{:?}",
        all.warnings
    );
    // CPU 0's sibling is 48 (taken), CPU 1's sibling 49 is not.
    assert!(
        text.iter()
            .any(|w| w.contains("splits SMT") && w.contains("1 without 49")),
        "{text:?}"
    );
    let numa1 =
        coretune_core::cpuset::resolve("numa:0 numa:1", &topo, &ResolveOptions::default()).unwrap();
    assert!(
        numa1
            .warnings
            .iter()
            .any(|w| matches!(w, Warning::SpansNuma { nodes } if nodes.len() == 2))
    );
    assert!(
        numa1
            .warnings
            .iter()
            .any(|w| matches!(w, Warning::SpansL3 { caches } if caches.len() == 4))
    );
    // Windows would make two groups of four NUMA nodes of 12 PUs of this machine: Linux's CPUs
    // 60-70 (SMT siblings of 12-22, nodes 2 and 3) are all in the first, numa:3 and numa:4
    // are one in each.
    let one_group =
        coretune_core::cpuset::resolve("60-70", &topo, &ResolveOptions::default()).unwrap();
    assert!(
        !one_group
            .warnings
            .iter()
            .any(|w| matches!(w, Warning::CrossesProcessorGroups { .. })),
        "{:?}",
        one_group.warnings
    );
    let wide =
        coretune_core::cpuset::resolve("numa:3 numa:4", &topo, &ResolveOptions::default()).unwrap();
    assert!(wide.warnings.iter().any(|w| matches!(
        w,
        Warning::CrossesProcessorGroups { groups } if groups.len() == 2
    )));
    let one_core =
        coretune_core::cpuset::resolve("core:3", &topo, &ResolveOptions::default()).unwrap();
    assert!(one_core.warnings.is_empty(), "{:?}", one_core.warnings);
}

#[test]
fn offline_and_disallowed_cpus() {
    let opts = ResolveOptions::default();
    // OS CPUs 0-3 and 21-23 are offline on this machine.
    let offline = util::load("intel-xeon-e5-2680v3-haswell-2p-offline-cpu0-node0-17pu.xml");
    let r = coretune_core::cpuset::resolve("2-5", &offline, &opts).unwrap();
    assert!(
        r.warnings.contains(&Warning::Offline { cpus: vec![2, 3] }),
        "{:?}",
        r.warnings
    );
    let err = coretune_core::cpuset::resolve("0-3", &offline, &opts).unwrap_err();
    assert!(matches!(err, CpuSetError::Unusable { .. }), "{err}");
    let err = coretune_core::cpuset::resolve("24", &offline, &opts).unwrap_err();
    assert!(matches!(err, CpuSetError::NoSuchCpu { .. }), "{err}");

    // PUs 7-11 are disallowed by a cpuset cgroup.
    let cgroup = util::load("amd-opteron-865-8p-8numa-cpuset-disallowed-10of16pu.xml");
    let r = coretune_core::cpuset::resolve("6-8", &cgroup, &opts).unwrap();
    assert!(
        r.warnings
            .contains(&Warning::Disallowed { cpus: vec![7, 8] }),
        "{:?}",
        r.warnings
    );
}

#[test]
fn bad_input_is_one_line_naming_the_part() {
    let topo = Topology::load(&TopologySource::Synthetic(
        "pack:2 numa:1 core:2 pu:2".into(),
    ))
    .unwrap();
    let opts = ResolveOptions::default();
    let cases = [
        (
            "numa:7",
            "'numa:7': index 7 past the last numa (there are 2)",
        ),
        ("all foo:1", "'foo:1': unknown object type 'foo'"),
        (
            "numa:1.core:5",
            "'numa:1.core:5': index 5 past the last core (there are 2 in numa:1)",
        ),
        ("0-3 ~0-3", "'0-3 ~0-3': the result is empty"),
        (
            "99",
            "'99': CPU 99 does not exist (this machine has CPUs 0-7)",
        ),
        ("l3:0", "'l3:0': this machine has no l3 objects"),
        ("3-1", "'3-1': a range must go upwards"),
        ("~", "'~': an operator needs something after it"),
        ("0xfoo", "'0xfoo': 'o' is not a hex digit"),
        ("", "the expression is empty"),
    ];
    for (input, want) in cases {
        let err = input
            .parse::<CpuSetExpr>()
            .and_then(|e| e.resolve(&topo, &opts))
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with(want) || text.contains(want),
            "{input}: {text}"
        );
        assert!(!text.contains('\n'), "{input}: {text}");
    }
    let err = "all numa:7"
        .parse::<CpuSetExpr>()
        .unwrap()
        .resolve(&topo, &opts)
        .unwrap_err();
    assert_eq!(
        err.caret("all numa:7").unwrap(),
        "  all numa:7\n      ^^^^^^"
    );
}
