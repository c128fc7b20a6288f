//! The fleet report on simulated node types (the sweep engine's test fixtures).

use super::*;
use crate::grid::Config;
use crate::placement::Policy;
use crate::sweep::test::{grid, plan, record};
use crate::sweep::{Outcome, RunLog, Strategy, SweepReport, Target, execute};
use crate::topology::MachineRecord;

fn machine(host: &str) -> MachineRecord {
    MachineRecord {
        hostname: host.into(),
        kernel: "6.1".into(),
        cpu_model: "test".into(),
        governor: None,
        settings: Default::default(),
        topology: "1 package, 4 cores".into(),
        tool_version: "0.1.0".into(),
        command: Vec::new(),
        environment: Default::default(),
    }
}

/// A type whose configuration `threads, place os` takes `times[threads]` seconds, 3 runs
/// each, identical (so each interval is a point).
fn node_type(name: &str, times: &[(usize, f64)]) -> NodeTypeReport {
    let threads: Vec<usize> = times.iter().map(|t| t.0).collect();
    let p = plan(grid(threads, &["os"], &["all"]), Strategy::Exhaustive);
    let mut log = RunLog::in_memory();
    execute(
        &p,
        None,
        &mut log,
        &mut |c| {
            let t = times.iter().find(|t| t.0 == c.threads).unwrap().1;
            Outcome::Done(record(t, 0))
        },
        &mut |_| {},
        &|| false,
    )
    .unwrap();
    let report = SweepReport::build(
        Target::Command {
            argv: vec!["./app".into()],
            shell: false,
        },
        machine(name),
        p,
        log.lines(),
        &|_| Vec::new(),
    );
    NodeTypeReport {
        name: name.into(),
        nodes: Vec::new(),
        report,
    }
}

fn os(threads: usize) -> Config {
    Config::new(threads, Policy::Os)
}

#[test]
fn the_fleet_setting_is_the_simplest_within_tolerance_of_the_best_geomean() {
    // a: fastest at 4 threads, 2 threads 2% slower; b: fastest at 2, 4 threads 1% slower;
    // 8 threads only measured on a.
    let a = node_type("a", &[(1, 4.0), (2, 1.02), (4, 1.0), (8, 1.5)]);
    let b = node_type("b", &[(1, 4.0), (2, 2.0), (4, 2.02)]);
    let r = FleetReport::build(vec![a, b], Vec::new(), &|i, c| {
        vec![format!("type {i}: {c}")]
    });
    assert_eq!(r.schema, FLEET_SCHEMA);
    assert_eq!(r.configs.len(), 4);
    let row = |t: usize| r.configs.iter().find(|c| c.config == os(t)).unwrap();
    assert!(row(8).geomean.is_none() && row(8).cells[1].is_none());
    // geomean(4) = sqrt(1.0 × 1.01), geomean(2) = sqrt(1.02 × 1.0).
    let g4 = (1.0f64 * 1.01).sqrt();
    let g2 = (1.02f64 * 1.0).sqrt();
    assert!((row(4).geomean.unwrap() - g4).abs() < 1e-9);
    assert!((row(2).geomean.unwrap() - g2).abs() < 1e-9);
    let f = r.fleet.as_ref().unwrap();
    // 4 threads has the lowest geomean, 2 threads ties within 3% and is simpler.
    assert_eq!(f.best, os(4));
    assert_eq!(f.config, os(2));
    assert_eq!(f.candidates, 3);
    assert!((f.geomean - g2).abs() < 1e-9);
    assert_eq!(f.losses.len(), 2);
    assert!((f.losses[0].ratio - 1.02).abs() < 1e-9);
    assert!((f.losses[1].ratio - 1.0).abs() < 1e-9);
    assert_eq!(f.losses[1].apply, ["type 1: 2 threads, place os"]);
    assert!(f.reason.contains("a +2.0%, b +0.0%"), "{}", f.reason);
    assert!(f.reason.contains("the simpler one"), "{}", f.reason);
    // Both types' curves of the setting's family, on one plot.
    let curves = r.speedup_curves();
    assert_eq!(curves.len(), 2);
    assert_eq!(curves[0].0, "a: place os");
    assert_eq!(curves[1].1.len(), 3);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[test]
fn a_clear_loser_elsewhere_is_not_the_fleet_setting() {
    // 4 threads is 1% faster on a but twice as slow on b.
    let a = node_type("a", &[(2, 1.01), (4, 1.0)]);
    let b = node_type("b", &[(2, 1.0), (4, 2.0)]);
    let r = FleetReport::build(vec![a, b], Vec::new(), &|_, _| Vec::new());
    let f = r.fleet.unwrap();
    assert_eq!((f.config.clone(), f.best.clone()), (os(2), os(2)));
    assert!(!f.reason.contains("simpler"), "{}", f.reason);
}

#[test]
fn no_common_configuration_means_no_fleet_setting_and_a_warning() {
    let a = node_type("a", &[(1, 1.0)]);
    let b = node_type("b", &[(2, 1.0)]);
    let r = FleetReport::build(vec![a, b], Vec::new(), &|_, _| Vec::new());
    assert!(r.fleet.is_none());
    assert!(
        r.warnings.iter().any(|w| w.contains("--exhaustive")),
        "{:?}",
        r.warnings
    );
}
