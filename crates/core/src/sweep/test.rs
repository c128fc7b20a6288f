use std::cell::Cell;
use std::time::Duration;

use super::recommend::recommend;
use super::*;
use crate::grid::ThrottleSpec;
use crate::measure::{Measurement, MigrationSource, RssSource};
use crate::workload::Unit;

/// A run record with the given wall time (what a runner hands back).
pub(crate) fn record(wall: f64, involuntary: u64) -> RunRecord {
    RunRecord {
        measurement: Measurement {
            wall: Duration::from_secs_f64(wall),
            user: Some(Duration::from_secs_f64(wall)),
            sys: Some(Duration::ZERO),
            voluntary_ctx_switches: Some(1),
            involuntary_ctx_switches: Some(involuntary),
            migrations: Some(0),
            migrations_source: MigrationSource::Perf,
            peak_rss_bytes: Some(1 << 20),
            peak_rss_source: RssSource::Run,
            threads: Vec::new(),
        },
        throughput: crate::workload::Throughput {
            value: 1.0 / wall,
            unit: Unit::TasksPerSec,
        },
        verified: true,
        verify_error: None,
        checksum: None,
        throttle_trace: Vec::new(),
        pinning: None,
        audit: None,
        metrics: std::collections::BTreeMap::new(),
    }
}

pub(crate) fn plan(grid: Grid, strategy: Strategy) -> Design {
    Design {
        grid,
        strategy,
        runs: 3,
        warmup: 1,
        min_time: Duration::ZERO,
        tolerance: 0.03,
        objectives: Vec::new(),
    }
}

pub(crate) fn grid(threads: Vec<usize>, places: &[&str], cpus: &[&str]) -> Grid {
    Grid {
        threads,
        places: places.iter().map(|s| s.parse().unwrap()).collect(),
        cpus: cpus.iter().map(|s| s.parse().unwrap()).collect(),
        throttles: vec![ThrottleSpec::None],
        mems: vec![crate::grid::Mem::Default],
        instances: vec![1],
    }
}

/// Deterministic ±0.5% jitter from the configuration and the run number.
fn jitter(c: &Config, n: u64) -> f64 {
    let mut h =
        c.threads as u64 * 0x9e37_79b9 + n * 0x85eb_ca6b + c.place.as_str().len() as u64 * 31;
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    #[allow(clippy::cast_precision_loss)]
    let u = (h % 1000) as f64 / 1000.0;
    1.0 + (u - 0.5) * 0.01
}

/// Runs a plan against a cost model; returns the log's lines. The k-th run of a configuration
/// always measures the same, whatever the strategy, so strategies are compared on equal data.
fn simulate(plan: &Design, cost: &dyn Fn(&Config) -> f64) -> Vec<RunLine> {
    let dir = tempfile::tempdir().unwrap();
    let mut log = RunLog::open(&dir.path().join("runs.jsonl")).unwrap();
    let runs = std::cell::RefCell::new(std::collections::BTreeMap::<Config, u64>::new());
    execute(
        plan,
        &mut log,
        &mut |c| {
            let mut runs = runs.borrow_mut();
            let k = runs.entry(c.clone()).or_insert(0);
            *k += 1;
            Outcome::Done(record(cost(c) * jitter(c, *k), c.threads as u64 * 10))
        },
        &mut |_| {},
        &|| false,
    )
    .unwrap();
    log.lines().to_vec()
}

/// Scaling curves of the kind the built-in workloads produce: Amdahl plus a contention term
/// that grows with threads past the cores, per placement.
type CostModel = Box<dyn Fn(&Config) -> f64>;

fn scenarios() -> Vec<(&'static str, CostModel)> {
    vec![
        (
            "best at 18 threads on 4 cores (the article's renderer)",
            Box::new(|c: &Config| {
                let t = c.threads as f64;
                let pin = if c.place.as_str() == "os" { 1.0 } else { 1.04 };
                pin * (1.0 / t.min(18.0) * 18.0 / 18.0 + 0.02 * (t - 18.0).max(0.0) + 0.3)
            }),
        ),
        (
            "CPU-bound: flat past the core count, pinning irrelevant",
            Box::new(|c: &Config| {
                let t = c.threads as f64;
                2.0 / t.min(4.0) + 0.001 * t
            }),
        ),
        (
            "spread placement wins by 15%",
            Box::new(|c: &Config| {
                let t = c.threads as f64;
                let pin = if c.place.as_str() == "spread" {
                    0.85
                } else {
                    1.0
                };
                pin * (4.0 / t.min(8.0) + 0.01 * t)
            }),
        ),
        (
            "blocking tasks: best far above the core count",
            Box::new(|c: &Config| {
                let t = c.threads as f64;
                10.0 / t.min(20.0) + 0.002 * t
            }),
        ),
    ]
}

#[test]
fn search_agrees_with_exhaustive_in_fewer_runs() {
    let g = grid(
        (1..=24).collect(),
        &["os", "compact", "spread", "cores"],
        &["all", "all ~pu:0"],
    );
    for (name, cost) in scenarios() {
        let full = simulate(&plan(g.clone(), Strategy::Exhaustive), &cost);
        let fast = simulate(&plan(g.clone(), Strategy::Search), &cost);
        let a = recommend(
            &summarize(&full, &[Objective::time()]),
            0.03,
            &[Objective::time()],
        )
        .unwrap();
        let b = recommend(
            &summarize(&fast, &[Objective::time()]),
            0.03,
            &[Objective::time()],
        )
        .unwrap();
        assert_eq!(a.config, b.config, "{name}: exhaustive vs search");
        assert!(
            fast.len() * 2 < full.len(),
            "{name}: search made {} runs, exhaustive {}",
            fast.len(),
            full.len()
        );
    }
}

#[test]
fn interleaved_rounds_with_warmup_and_no_repeats() {
    let g = grid(vec![1, 2], &["os", "spread"], &["all"]);
    let lines = simulate(&plan(g, Strategy::Exhaustive), &|c| 1.0 / c.threads as f64);
    // 4 configurations × (1 warm-up + 3 runs).
    assert_eq!(lines.len(), 16);
    // Warm-ups first, then each round runs every configuration once before the next round.
    assert!(lines[..4].iter().all(|l| l.warmup));
    for round in lines[4..].chunks(4) {
        let mut configs: Vec<&Config> = round.iter().map(|l| &l.config).collect();
        configs.sort();
        configs.dedup();
        assert_eq!(configs.len(), 4, "every configuration once per round");
    }
    let summaries = summarize(&lines, &[Objective::time()]);
    assert!(summaries.iter().all(|s| s.runs == 3 && s.failed == 0));
    let two = summaries.iter().find(|s| s.config.threads == 2).unwrap();
    assert!((two.speedup.unwrap() - 2.0).abs() < 0.05);
    assert!((two.efficiency.unwrap() - 1.0).abs() < 0.03);
}

#[test]
fn interrupted_sweep_resumes_without_losing_or_repeating_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.jsonl");
    let g = grid(vec![1, 2, 3], &["os", "spread"], &["all"]);
    let p = plan(g, Strategy::Exhaustive);
    let cost = |c: &Config| 1.0 / c.threads as f64;
    let made = Cell::new(0);
    let mut log = RunLog::open(&path).unwrap();
    let result = execute(
        &p,
        &mut log,
        &mut |c| {
            made.set(made.get() + 1);
            Outcome::Done(record(cost(c), 0))
        },
        &mut |_| {},
        &|| made.get() >= 10,
    );
    assert!(matches!(result, Err(SweepError::Interrupted)));
    drop(log);
    // A crash in the middle of writing leaves a torn line: it is dropped, not fatal.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(b"{\"seq\": 10, \"thr")
        .unwrap();
    let mut log = RunLog::open(&path).unwrap();
    assert_eq!(log.lines().len(), 10);
    execute(
        &p,
        &mut log,
        &mut |c| {
            made.set(made.get() + 1);
            Outcome::Done(record(cost(c), 0))
        },
        &mut |_| {},
        &|| false,
    )
    .unwrap();
    // 6 configurations × 4 runs, each made exactly once.
    assert_eq!(made.get(), 24);
    let lines = RunLog::open(&path).unwrap().lines().to_vec();
    assert_eq!(lines.len(), 24);
    for s in summarize(&lines, &[Objective::time()]) {
        assert_eq!((s.runs, s.failed), (3, 0), "{}", s.config);
    }
}

#[test]
fn failures_are_logged_and_never_timed() {
    let g = grid(vec![1, 2], &["os"], &["all"]);
    let p = plan(g, Strategy::Exhaustive);
    let dir = tempfile::tempdir().unwrap();
    let mut log = RunLog::open(&dir.path().join("runs.jsonl")).unwrap();
    execute(
        &p,
        &mut log,
        &mut |c| {
            if c.threads == 2 {
                Outcome::Failed("exit status 3".into())
            } else {
                Outcome::Done(record(1.0, 0))
            }
        },
        &mut |_| {},
        &|| false,
    )
    .unwrap();
    let summaries = summarize(log.lines(), &[Objective::time()]);
    let two = summaries.iter().find(|s| s.config.threads == 2).unwrap();
    assert_eq!((two.runs, two.failed), (0, 3));
    assert!(two.wall.is_none());
    let rec = recommend(&summaries, 0.03, &[Objective::time()]).unwrap();
    assert_eq!(rec.config.threads, 1);
    assert!(
        rec.warnings.iter().any(|w| w.contains("3 run(s) failed")),
        "{:?}",
        rec.warnings
    );
}

#[test]
fn ties_go_to_fewer_threads_and_no_pinning() {
    let g = grid(vec![1, 2, 4], &["os", "spread"], &["all"]);
    // 2 and 4 threads within 1%, spread 0.5% faster than os: noise.
    let lines = simulate(&plan(g, Strategy::Exhaustive), &|c| {
        let base = match c.threads {
            1 => 2.0,
            2 => 1.005,
            _ => 1.0,
        };
        base * if c.place.as_str() == "spread" {
            0.995
        } else {
            1.0
        }
    });
    let rec = recommend(
        &summarize(&lines, &[Objective::time()]),
        0.03,
        &[Objective::time()],
    )
    .unwrap();
    assert_eq!((rec.config.threads, rec.config.place.as_str()), (2, "os"));
    assert!(!rec.beyond_noise);
    assert!(
        rec.reason
            .contains("within noise: leave placement to the OS"),
        "{}",
        rec.reason
    );
}

#[test]
fn a_clear_winner_is_recommended_beyond_noise() {
    let g = grid(vec![1, 2, 4], &["os", "spread"], &["all"]);
    let lines = simulate(&plan(g, Strategy::Exhaustive), &|c| {
        let t = c.threads as f64;
        (1.0 / t)
            * if c.place.as_str() == "spread" {
                0.8
            } else {
                1.0
            }
    });
    let rec = recommend(
        &summarize(&lines, &[Objective::time()]),
        0.03,
        &[Objective::time()],
    )
    .unwrap();
    assert_eq!(
        (rec.config.threads, rec.config.place.as_str()),
        (4, "spread")
    );
    assert!(rec.beyond_noise);
    assert!(rec.reason.contains("beyond noise"), "{}", rec.reason);
}

/// No claim beyond noise without intervals (one run each) or without a simpler configuration
/// measured (a sweep stopped after its first configuration).
#[test]
fn no_claim_beyond_noise_without_runs_to_support_it() {
    let g = grid(vec![1, 2, 4], &["os", "spread"], &["all"]);
    let cost = |c: &Config| {
        (1.0 / c.threads as f64)
            * if c.place.as_str() == "spread" {
                0.8
            } else {
                1.0
            }
    };
    let mut one_run = plan(g.clone(), Strategy::Exhaustive);
    one_run.runs = 1;
    let rec = recommend(
        &summarize(&simulate(&one_run, &cost), &[Objective::time()]),
        0.03,
        &[Objective::time()],
    )
    .unwrap();
    assert_eq!(rec.config.threads, 4);
    assert!(!rec.beyond_noise);
    assert!(!rec.reason.contains("beyond noise"), "{}", rec.reason);
    assert!(
        rec.warnings
            .iter()
            .any(|w| w.starts_with("one run per configuration")),
        "{:?}",
        rec.warnings
    );
    // Only the 4-thread spread configuration measured.
    let alone = plan(grid(vec![4], &["spread"], &["all"]), Strategy::Exhaustive);
    let rec = recommend(
        &summarize(&simulate(&alone, &cost), &[Objective::time()]),
        0.03,
        &[Objective::time()],
    )
    .unwrap();
    assert!(!rec.beyond_noise);
    assert!(!rec.reason.contains("beyond noise"), "{}", rec.reason);
    assert!(
        rec.warnings
            .iter()
            .any(|w| w.contains("the only configuration measured")),
        "{:?}",
        rec.warnings
    );
}

#[test]
fn oversubscription_shows_in_the_reason() {
    let g = grid(vec![1, 2, 8], &["os"], &["all"]);
    let lines = simulate(&plan(g, Strategy::Exhaustive), &|c| match c.threads {
        1 => 2.0,
        2 => 1.0,
        _ => 1.2,
    });
    let rec = recommend(
        &summarize(&lines, &[Objective::time()]),
        0.03,
        &[Objective::time()],
    )
    .unwrap();
    assert_eq!(rec.config.threads, 2);
    // The mock's involuntary switches are 10 per thread: 20 → 80.
    assert!(
        rec.reason.contains("involuntary context switches rise 4×"),
        "{}",
        rec.reason
    );
}

#[test]
fn a_timed_out_configuration_gets_no_more_runs_and_the_sweep_ends() {
    let plan = plan(grid(vec![1, 2], &["os"], &["all"]), Strategy::Exhaustive);
    let dir = tempfile::tempdir().unwrap();
    let mut log = RunLog::open(&dir.path().join("runs.jsonl")).unwrap();
    execute(
        &plan,
        &mut log,
        &mut |c| {
            if c.threads == 2 {
                Outcome::Timeout
            } else {
                Outcome::Done(record(1.0, 1))
            }
        },
        &mut |_| {},
        &|| false,
    )
    .unwrap();
    let two: Vec<&RunLine> = log
        .lines()
        .iter()
        .filter(|l| l.config.threads == 2)
        .collect();
    assert_eq!(two.len(), 1);
    assert_eq!(two[0].status, Status::Timeout);
    // 1 warm-up + 3 runs of the other configuration.
    assert_eq!(log.lines().len(), 5);
}

#[test]
fn an_abandoned_run_is_logged_then_stops_the_sweep() {
    let plan = plan(grid(vec![1, 2], &["os"], &["all"]), Strategy::Exhaustive);
    let mut log = RunLog::in_memory();
    let err = execute(
        &plan,
        &mut log,
        &mut |_| Outcome::Abandoned("stuck".into()),
        &mut |_| {},
        &|| false,
    )
    .unwrap_err();
    assert!(
        matches!(err, SweepError::Abandoned(ref why) if why == "stuck"),
        "{err}"
    );
    assert_eq!(log.lines().len(), 1);
    assert_eq!(log.lines()[0].status, Status::Timeout);
    assert_eq!(log.lines()[0].error.as_deref(), Some("stuck"));
}

#[test]
fn log_errors_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.jsonl");
    std::fs::write(&path, "not json\n{\"also\": \"not a run\"}\n").unwrap();
    let err = RunLog::open(&path).unwrap_err().to_string();
    assert!(err.starts_with(&format!("{}:1: ", path.display())), "{err}");
    let missing = dir.path().join("missing/runs.jsonl");
    let err = RunLog::open(&missing).unwrap_err().to_string();
    assert!(err.contains(&missing.display().to_string()), "{err}");
}

#[test]
fn complete_means_continuing_would_make_no_run() {
    let p = plan(grid(vec![1, 2], &["os"], &["all"]), Strategy::Exhaustive);
    let mut lines = Vec::new();
    assert!(!is_complete(&p, &lines));
    let mut log = RunLog::in_memory();
    execute(
        &p,
        &mut log,
        &mut |c| Outcome::Done(record(1.0 / c.threads as f64, 0)),
        &mut |_| {},
        &|| false,
    )
    .unwrap();
    lines.extend(log.lines().iter().cloned());
    assert!(is_complete(&p, &lines));
    // One measured run short: not complete.
    lines.pop();
    assert!(!is_complete(&p, &lines));
}

#[test]
fn a_run_stopped_by_a_signal_is_not_logged_and_stops_the_sweep() {
    let p = plan(grid(vec![1, 2], &["os"], &["all"]), Strategy::Exhaustive);
    let mut log = RunLog::in_memory();
    let made = Cell::new(0);
    let result = execute(
        &p,
        &mut log,
        &mut |_| {
            made.set(made.get() + 1);
            if made.get() == 3 {
                Outcome::Stopped("./app was ended by signal 15".into())
            } else {
                Outcome::Done(record(1.0, 0))
            }
        },
        &mut |_| {},
        &|| false,
    );
    assert!(matches!(result, Err(SweepError::Interrupted)));
    assert_eq!(log.lines().len(), 2);
    assert!(log.lines().iter().all(|l| l.status == Status::Ok));
}
