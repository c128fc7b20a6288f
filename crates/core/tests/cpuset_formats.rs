//! Every parseable output format reads back to the same set, for sets of up to 4096 CPUs; the
//! canonical rendering of an expression parses back to the same expression.

mod util;

use coretune_core::CpuSetExpr;
use coretune_core::cpuset::set_from_indexes;
use coretune_core::cpuset::{Atom, Format};
use coretune_core::topology::groups::{GroupMask, ProcessorGroups};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

fn big_set() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        proptest::collection::btree_set(0usize..4096, 1..300),
        // Dense runs, as real sets are.
        (0usize..4000, 1usize..96).prop_map(|(a, n)| (a..a + n).collect()),
    ]
    .prop_map(|s| s.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        // The regressions file beside this one (tests/ has no lib.rs for SourceParallel).
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn parse_of_format_is_identity(cpus in big_set()) {
        let set = set_from_indexes(cpus.iter().copied());
        for format in Format::ALL.into_iter().filter(|f| f.is_parseable()) {
            let text = format.render(&set).unwrap();
            let expr: CpuSetExpr = text.parse().map_err(|e| {
                TestCaseError::fail(format!("{format} '{text}': {e}"))
            })?;
            prop_assert_eq!(expr.terms().len(), 1);
            prop_assert_eq!(&expr.terms()[0].atom, &Atom::Cpus(cpus.clone()), "{} '{}'", format, text);
        }
        // What `start /affinity` takes reads back with coretune's `win:` prefix; masks stay
        // masks until resolved on a machine's processor groups, and without a topology they are
        // in hwloc's numbering (64 × group + bit).
        let text = format!("win:{}", Format::Windows.render(&set).unwrap());
        let expr: CpuSetExpr = text.parse().map_err(|e| TestCaseError::fail(format!("'{text}': {e}")))?;
        let want = Atom::WindowsGroups(ProcessorGroups::numbered(cpus.iter().copied()).split(&cpus).0);
        prop_assert_eq!(&expr.terms()[0].atom, &want, "'{}'", text);
    }

    #[test]
    fn display_parses_back(text in "(~|x|\\^)?(all|core:[0-9]{1,2}(-[0-9]{1,2})?|numa:[0-3]\\.pu:(odd|even|[0-9]:[1-3])|0x[0-9a-f]{1,12}|0b[01]{1,20}|[0-9]{1,3}(,[0-9]{1,3}){0,3}|cpukind:[0-2]|pcores|ecores)( (~|x|\\^)?(all|l3:[0-9]-|pu:[0-9]{1,3}))?") {
        if let Ok(expr) = text.parse::<CpuSetExpr>() {
            let shown = expr.to_string();
            let again: CpuSetExpr = shown.parse().map_err(|e| TestCaseError::fail(format!("'{shown}': {e}")))?;
            prop_assert_eq!(again, expr);
        }
    }
}

#[test]
fn examples_from_the_issue_parse() {
    let cases: &[(&str, &[usize])] = &[
        ("0-3,8", &[0, 1, 2, 3, 8]),
        ("0xff", &[0, 1, 2, 3, 4, 5, 6, 7]),
        ("0b1010", &[1, 3]),
        ("0x00000001,0x00000003", &[0, 1, 32]),
        ("0x1,,0x2", &[1, 64]),
        ("mask_cpu:0x5", &[0, 2]),
    ];
    for (text, want) in cases {
        let expr: CpuSetExpr = text.parse().unwrap();
        assert_eq!(expr.terms()[0].atom, Atom::Cpus(want.to_vec()), "{text}");
    }
    let mask = |group, mask| GroupMask { group, mask };
    for (text, want) in [
        ("win:FFFFFFFFFFFFFFFC", vec![mask(0, !3)]),
        ("win:0:1,1:2", vec![mask(0, 1), mask(1, 2)]),
        ("win:1:2,0:1,1:1", vec![mask(0, 1), mask(1, 3)]),
    ] {
        let expr: CpuSetExpr = text.parse().unwrap();
        assert_eq!(expr.terms()[0].atom, Atom::WindowsGroups(want), "{text}");
        let again: CpuSetExpr = expr.to_string().parse().unwrap();
        assert_eq!(again, expr, "{text} prints as {expr}");
    }
    for bad in [
        "0x",
        "0b",
        "0b102",
        "win:",
        "win:g",
        "win:1:",
        "0x123456789,0x1",
        "1--",
        "-1",
        "0-70000",
        "numa",
        "numa:",
        "core:3-1",
    ] {
        assert!(bad.parse::<CpuSetExpr>().is_err(), "{bad} parsed");
    }
    // Open-ended sets run to the machine's last CPU; they print back as lists.
    for (text, cpus, from) in [
        ("8-", vec![], 8),
        ("0-3,8-", vec![0, 1, 2, 3], 8),
        ("0xf...f", vec![], 0),
        // hwloc's meaning: the infinite part starts after the last 64-bit word given.
        ("0xf...f,0xfffffff0", (4..32).collect(), 64),
        ("0xf...f,0x0000000f,0x00000001", vec![0, 32, 33, 34, 35], 64),
    ] {
        let expr: CpuSetExpr = text.parse().unwrap();
        assert_eq!(
            expr.terms()[0].atom,
            Atom::CpusFrom {
                cpus: cpus.clone(),
                from
            },
            "{text}"
        );
        let again: CpuSetExpr = expr.to_string().parse().unwrap();
        assert_eq!(again, expr, "{text} prints as {expr}");
    }
}
