//! Random expressions on random synthetic machines give the same CPU set as the `hwloc-calc`
//! program (hwloc 2.9, Debian package hwloc-nox); skipped with a note when it is not installed.
//!
//! Where hwloc-calc only warns (an object that does not exist) or prints `0x0`, coretune must
//! refuse with an error instead.

#[path = "util/strategies.rs"]
mod strategies;
mod util;

use std::process::Command;

use coretune_core::CpuSetExpr;
use coretune_core::cpuset::set_from_indexes;
use coretune_core::cpuset::{Format, ResolveOptions};
use coretune_core::{Topology, TopologySource};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use strategies::{Synthetic, synthetic};

fn hwloc_calc_available() -> bool {
    Command::new("hwloc-calc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// One term of an expression, as text.
fn term(s: &Synthetic, physical: bool) -> BoxedStrategy<String> {
    let op = prop_oneof![Just(""), Just("~"), Just("x"), Just("^")];
    let depths = s.levels.len();
    let s1 = s.clone();
    let level = (0..depths).prop_flat_map(move |d| {
        let total = s1.total(d);
        let name = s1.levels[d].0;
        range(total, physical).prop_map(move |r| format!("{name}:{r}"))
    });
    let s2 = s.clone();
    let nested = (0..depths - 1)
        .prop_flat_map(move |outer| (Just(outer), outer + 1..depths))
        .prop_flat_map(move |(outer, inner)| {
            let per = s2.total(inner) / s2.total(outer);
            let (on, inn) = (s2.levels[outer].0, s2.levels[inner].0);
            (0..s2.total(outer) + 1, range(per, physical))
                .prop_map(move |(i, r)| format!("{on}:{i}.{inn}:{r}"))
        });
    let pus = s.pus();
    let mask = (strategies::cpu_indexes(pus), any::<bool>()).prop_map(|(cpus, hwloc)| {
        let set = set_from_indexes(cpus);
        let f = if hwloc {
            Format::Hwloc
        } else {
            Format::Taskset
        };
        f.render(&set)
            .expect("hwloc and taskset formats take any set")
    });
    let atom = prop_oneof![
        1 => Just("all".to_owned()),
        4 => level,
        2 => nested,
        2 => mask,
    ];
    (op, atom)
        .prop_map(|(op, atom)| format!("{op}{atom}"))
        .boxed()
}

/// An index range over `width` objects; sometimes one past the end.
fn range(width: usize, physical: bool) -> BoxedStrategy<String> {
    let single = (0..=width).prop_map(|i| i.to_string());
    let span = (0..=width, 0..3usize).prop_map(|(a, n)| format!("{a}-{}", a + n));
    if physical {
        return prop_oneof![single, span].boxed();
    }
    prop_oneof![
        3 => single,
        2 => span,
        1 => (0..width.max(1)).prop_map(|a| format!("{a}-")),
        1 => (0..=width, 1..4usize).prop_map(|(a, w)| format!("{a}:{w}")),
        1 => prop_oneof![Just("all".to_owned()), Just("odd".to_owned()), Just("even".to_owned())],
    ]
    .boxed()
}

fn case() -> impl Strategy<Value = (Synthetic, bool, Vec<String>)> {
    (synthetic(), any::<bool>()).prop_flat_map(|(s, physical)| {
        let terms = proptest::collection::vec(term(&s, physical), 1..4);
        (Just(s), Just(physical), terms)
    })
}

fn hwloc_calc(description: &str, physical: bool, terms: &[String]) -> (String, String) {
    let mut cmd = Command::new("hwloc-calc");
    cmd.arg("--input").arg(description);
    if physical {
        cmd.arg("--pi");
    }
    let out = cmd.args(terms).output().expect("hwloc-calc runs");
    (
        String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

proptest! {
    // Each case runs hwloc-calc once (a few ms); 96 cases keep this under a few seconds.
    #![proptest_config(ProptestConfig {
        cases: 96,
        // The regressions file beside this one (tests/ has no lib.rs for SourceParallel).
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn same_answer_as_hwloc_calc((s, physical, terms) in case()) {
        if !hwloc_calc_available() {
            util::skip("hwloc-calc is not installed: no comparison with it");
            return Ok(());
        }
        let description = s.description();
        let topo = Topology::load(&TopologySource::Synthetic(description.clone())).unwrap();
        let (want, stderr) = hwloc_calc(&description, physical, &terms);
        let hwloc_refused = ["does not exist", "ignored", "invalid", "could not", "failed"]
            .iter()
            .any(|w| stderr.contains(w));
        let got = CpuSetExpr::from_args(&terms)
            .and_then(|e| e.resolve(&topo, &ResolveOptions { physical }));
        match got {
            Ok(r) => {
                prop_assert!(!hwloc_refused, "hwloc-calc refused {terms:?} ({stderr}), coretune accepted");
                prop_assert_eq!(Format::Hwloc.render(&r.set).unwrap(), want, "{:?} on '{}'", terms, description);
            }
            Err(e) => prop_assert!(
                hwloc_refused || want == "0x0",
                "coretune: {e}; hwloc-calc: {want} for {terms:?} on '{description}'"
            ),
        }
    }
}
