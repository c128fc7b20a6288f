//! Snapshot tests of every report format, on a fixed sweep (hyperfine's `export/tests.rs`).

use std::collections::BTreeMap;
use std::time::Duration;

use coretune_core::machine::MachineRecord;
use coretune_core::measure::{Measurement, MigrationSource, RssSource};
use coretune_core::noise::Noise;
use coretune_core::sweep::recommend::recommend;
use coretune_core::sweep::{Config, Grid, Plan, RunLine, Status, Strategy, summarize};
use coretune_core::workload::{RunRecord, Size, Throughput, Unit, WorkloadSpec};

use super::*;

fn line(seq: usize, threads: usize, place: &str, wall: f64, status: Status) -> RunLine {
    let record = RunRecord {
        measurement: Measurement {
            wall: Duration::from_secs_f64(wall),
            user: Duration::from_secs_f64(wall * threads as f64 * 0.9),
            sys: Duration::from_millis(10),
            voluntary_ctx_switches: 2,
            involuntary_ctx_switches: 10 * threads as u64,
            migrations: Some(threads as u64),
            migrations_source: MigrationSource::Perf,
            peak_rss_bytes: 32 << 20,
            peak_rss_source: RssSource::Run,
            threads: Vec::new(),
        },
        throughput: Throughput {
            value: 3.0 / wall,
            unit: Unit::MraysPerSec,
        },
        verified: status == Status::Ok,
        verify_error: (status != Status::Ok).then(|| "raymesh: ray 7 was never traced".into()),
        checksum: Some(0xfeed),
    };
    RunLine {
        seq,
        config: Config {
            threads,
            place: place.into(),
            cpus: "all".into(),
            throttle: None,
        },
        warmup: false,
        status,
        error: record.verify_error.clone(),
        record: Some(record),
        noise: Noise {
            loadavg: Some(0.5),
            steal: Some(0.0),
            others_cpus: Some(0.01),
            busy: false,
        },
        ended_at: 1_795_298_295.0 + seq as f64,
    }
}

fn fixed_report() -> SweepReport {
    let mut lines = Vec::new();
    let times = [
        (1, "os", [2.00, 2.02, 1.98]),
        (2, "os", [1.02, 1.01, 1.03]),
        (2, "spread", [1.00, 1.01, 1.02]),
        (4, "os", [1.10, 1.12, 1.11]),
    ];
    for (threads, place, walls) in times {
        for w in walls {
            lines.push(line(lines.len(), threads, place, w, Status::Ok));
        }
    }
    lines.push(line(lines.len(), 4, "spread", 0.5, Status::Unverified));
    let summaries = summarize(&lines);
    let mut rec = recommend(&summaries, 0.03);
    if let Some(r) = rec.as_mut() {
        r.apply = vec!["coretune bench raymesh --threads 2 --place os".into()];
    }
    let machine = MachineRecord {
        hostname: "bench-host".into(),
        kernel: "6.1.0".into(),
        cpu_model: "Example CPU".into(),
        governor: None,
        topology: "1 package, 1 NUMA node, 1 L3, 2 cores, 2 PUs, SMT 1".into(),
        tool_version: "0.1.0".into(),
        command: vec!["coretune".into(), "tune".into()],
        environment: BTreeMap::new(),
    };
    let plan = Plan {
        grid: Grid {
            threads: vec![1, 2, 4],
            places: vec!["os".into(), "spread".into()],
            cpus: vec!["all".into()],
            throttles: vec![None],
        },
        strategy: Strategy::Search,
        runs: 3,
        warmup: 0,
        min_time: Duration::ZERO,
        tolerance: 0.03,
    };
    let target = Target::Workload {
        spec: WorkloadSpec {
            name: "raymesh".into(),
            size: Size::Default,
            rays: Some(250_000),
            ..WorkloadSpec::default()
        },
        description: "3 tables of 250000 rays".into(),
    };
    let mut report = SweepReport::build(target, machine, plan, &lines, &summaries, rec);
    report.created_at = 0.0;
    report.tool_version = "0.1.0".into();
    report
}

fn render(r: &dyn Reporter) -> String {
    String::from_utf8(r.render(&fixed_report()).unwrap()).unwrap()
}

#[test]
fn csv_snapshot() {
    insta::assert_snapshot!(render(&csv::Csv));
}

#[test]
fn markdown_snapshot() {
    insta::assert_snapshot!(render(&md::Markdown));
}

#[test]
fn json_snapshot_and_round_trip() {
    let text = render(&json::Json);
    insta::assert_snapshot!(text);
    let back: SweepReport = serde_json::from_str(&text).unwrap();
    assert_eq!(back, fixed_report());
}

#[test]
fn hyperfine_snapshot() {
    insta::assert_snapshot!(render(&hyperfine::Hyperfine));
}

#[test]
fn table_snapshot_plain_and_coloured() {
    let report = fixed_report();
    insta::assert_snapshot!(table::render(&report, false));
    let coloured = table::render(&report, true);
    assert!(coloured.contains("\u{1b}["), "colour codes when asked for");
    assert!(!table::render(&report, false).contains("\u{1b}["));
}

#[test]
fn recommendation_in_the_fixed_sweep() {
    let r = fixed_report().recommendation.unwrap();
    // 2 threads spread is 1% faster than 2 threads os: a tie, which goes to no pinning.
    assert_eq!((r.config.threads, r.config.place.as_str()), (2, "os"));
    assert_eq!((r.fastest.threads, r.fastest.place.as_str()), (2, "spread"));
    assert!(r.warnings.iter().any(|w| w.contains("1 run(s) failed")));
}
