use std::cell::Cell;
use std::time::Duration;

use std::collections::BTreeMap;
use std::io::Write;

use super::engine::estimates;
use super::recommend::{recommend, recommend_on};
use super::*;
use crate::grid::{Config, Family, Grid};
use crate::measure::{Measurement, MigrationSource, Noise, RssSource};
use crate::workload::{RunRecord, Unit};

/// A run record with the given wall time (what a runner hands back).
pub(crate) fn record(wall: f64, involuntary: u64) -> RunRecord {
    RunRecord::verified(
        Measurement {
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
        crate::workload::Throughput {
            value: 1.0 / wall,
            unit: Unit::TasksPerSec,
        },
        std::collections::BTreeMap::new(),
    )
}

pub(crate) fn plan(grid: Grid, strategy: Strategy) -> Design {
    Design {
        grid,
        strategy,
        runs: 3,
        warmup: 1,
        min_time: Duration::ZERO,
        tolerance: 0.03,
        max_runs: 0,
        objectives: Vec::new(),
        ignore_failure: false,
        pus: BTreeMap::new(),
    }
}

pub(crate) fn grid(threads: Vec<usize>, places: &[&str], cpus: &[&str]) -> Grid {
    Grid::new(threads, places.iter().map(|s| s.parse().unwrap()).collect())
        .with_cpus(cpus.iter().map(|s| s.parse().unwrap()).collect())
}

/// Deterministic ±0.5% jitter from the configuration and the run number.
fn jitter(c: &Config, n: u64) -> f64 {
    let mut h = c.threads as u64 * 0x9e37_79b9
        + n * 0x85eb_ca6b
        + c.family.place.as_str().len() as u64 * 31;
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
        None,
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
                let pin = if c.family.place.as_str() == "os" {
                    1.0
                } else {
                    1.04
                };
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
                let pin = if c.family.place.as_str() == "spread" {
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
            &summarize(&full, &[Objective::time()], false),
            0.03,
            &[Objective::time()],
        )
        .unwrap();
        let b = recommend(
            &summarize(&fast, &[Objective::time()], false),
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
    let summaries = summarize(&lines, &[Objective::time()], false);
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
        None,
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
        None,
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
    for s in summarize(&lines, &[Objective::time()], false) {
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
        None,
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
    let summaries = summarize(log.lines(), &[Objective::time()], false);
    let two = summaries.iter().find(|s| s.config.threads == 2).unwrap();
    // Its warm-up failed: no measured run, and out of the running, saying why.
    assert_eq!((two.runs, two.failed), (0, 0));
    assert_eq!(
        two.out.as_deref(),
        Some("its warm-up run failed: exit status 3")
    );
    assert!(two.wall.is_none());
    let rec = recommend(&summaries, 0.03, &[Objective::time()]).unwrap();
    assert_eq!(rec.config.threads, 1);
    assert!(
        rec.warnings.iter().any(|w| w.contains(
            "1 configuration is out of the running after a failed run (the first: 2 threads, \
             place os: its warm-up run failed: exit status 3)"
        )),
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
        base * if c.family.place.as_str() == "spread" {
            0.995
        } else {
            1.0
        }
    });
    let rec = recommend(
        &summarize(&lines, &[Objective::time()], false),
        0.03,
        &[Objective::time()],
    )
    .unwrap();
    assert_eq!(
        (rec.config.threads, rec.config.family.place.as_str()),
        (2, "os")
    );
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
            * if c.family.place.as_str() == "spread" {
                0.8
            } else {
                1.0
            }
    });
    let rec = recommend(
        &summarize(&lines, &[Objective::time()], false),
        0.03,
        &[Objective::time()],
    )
    .unwrap();
    assert_eq!(
        (rec.config.threads, rec.config.family.place.as_str()),
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
            * if c.family.place.as_str() == "spread" {
                0.8
            } else {
                1.0
            }
    };
    let mut one_run = plan(g.clone(), Strategy::Exhaustive);
    one_run.runs = 1;
    let rec = recommend(
        &summarize(&simulate(&one_run, &cost), &[Objective::time()], false),
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
            .any(|w| w.starts_with("one successful run per configuration")),
        "{:?}",
        rec.warnings
    );
    // Only the 4-thread spread configuration measured.
    let alone = plan(grid(vec![4], &["spread"], &["all"]), Strategy::Exhaustive);
    let rec = recommend(
        &summarize(&simulate(&alone, &cost), &[Objective::time()], false),
        0.03,
        &[Objective::time()],
    )
    .unwrap();
    assert!(!rec.beyond_noise);
    assert!(!rec.reason.contains("beyond noise"), "{}", rec.reason);
    assert!(
        rec.warnings
            .iter()
            .any(|w| w.contains("the only configuration in the running")),
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
        &summarize(&lines, &[Objective::time()], false),
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
        None,
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
        None,
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
        None,
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
        None,
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

/// A failed run of `./flaky2.sh` (finding 6's script) with its stderr.
fn crash() -> Outcome {
    Outcome::ProgramFailed {
        error: "./flaky2.sh exited with status 134".into(),
        stderr_tail: Some("race detected, aborting\n".into()),
    }
}

/// Finding 6's sweep: 1 thread passes all 8 runs in 0.2 s; 2 threads take 0.05 s when they
/// pass, and crash on every run but each fourth, from the third on.
fn flaky_sweep(ignore_failure: bool) -> Vec<RunLine> {
    let mut p = plan(grid(vec![1, 2], &["os"], &["all"]), Strategy::Exhaustive);
    (p.runs, p.warmup, p.ignore_failure) = (8, 0, ignore_failure);
    let made = std::cell::RefCell::new(BTreeMap::<usize, usize>::new());
    let mut log = RunLog::in_memory();
    execute(
        &p,
        None,
        &mut log,
        &mut |c| {
            let mut made = made.borrow_mut();
            let k = made.entry(c.threads).or_insert(0);
            *k += 1;
            match (c.threads, *k) {
                (1, _) => Outcome::Done(record(0.2, 0)),
                (_, 1 | 2) => Outcome::Done(record(0.05, 0)),
                (_, k) if k % 4 == 0 => Outcome::Done(record(0.05, 0)),
                _ => crash(),
            }
        },
        &mut |_| {},
        &|| false,
    )
    .unwrap();
    log.lines().to_vec()
}

#[test]
fn a_configuration_whose_runs_mostly_crash_is_never_recommended() {
    let lines = flaky_sweep(false);
    // Its first failure is its last run, as a timeout's is.
    let two: Vec<&RunLine> = lines.iter().filter(|l| l.config.threads == 2).collect();
    assert_eq!(two.len(), 3, "{two:#?}");
    assert_eq!(two[2].status, Status::Failed);
    assert_eq!(lines.iter().filter(|l| l.config.threads == 1).count(), 8);
    let objectives = [Objective::time(), cpu()];
    let summaries = summarize(&lines, &objectives, false);
    let flaky = summaries.iter().find(|s| s.config.threads == 2).unwrap();
    assert_eq!(
        flaky.out.as_deref(),
        Some("1 of 3 runs failed: ./flaky2.sh exited with status 134 (race detected, aborting)")
    );
    let rec = recommend(&summaries, 0.03, &objectives).unwrap();
    // Not recommended, not the fastest, not on the Pareto front (though faster on both).
    assert_eq!((rec.config.threads, rec.fastest.threads), (1, 1));
    assert_eq!(
        super::recommend::pareto(&summaries, &objectives),
        vec![rec.config.clone()]
    );
    assert!(!rec.reason.contains("2 threads"), "{}", rec.reason);
    assert!(
        rec.warnings.iter().any(|w| w.starts_with(
            "1 configuration is out of the running after a failed run (the first: 2 threads, \
             place os: 1 of 3 runs failed: ./flaky2.sh exited with status 134 (race detected, \
             aborting)); tune -i keeps"
        )),
        "{:?}",
        rec.warnings
    );
    // A sweep resumed from this log makes no further run of it: it is complete.
    let mut p = plan(grid(vec![1, 2], &["os"], &["all"]), Strategy::Exhaustive);
    (p.runs, p.warmup) = (8, 0);
    assert!(is_complete(&p, &lines));
}

/// `tune -i`: failed runs are left out of the statistics as hyperfine's `--ignore-failure`
/// does, the configuration gets all its runs and stays eligible, and the warning quotes the
/// first failure.
#[test]
fn with_ignore_failure_failed_runs_are_left_out_and_the_configuration_stays_eligible() {
    let lines = flaky_sweep(true);
    assert_eq!(lines.iter().filter(|l| l.config.threads == 2).count(), 8);
    let summaries = summarize(&lines, &[Objective::time()], true);
    let flaky = summaries.iter().find(|s| s.config.threads == 2).unwrap();
    assert_eq!(
        (flaky.runs, flaky.failed, flaky.out.as_deref()),
        (4, 4, None)
    );
    let rec = recommend(&summaries, 0.03, &[Objective::time()]).unwrap();
    assert_eq!(rec.config.threads, 2);
    assert!(
        rec.warnings.iter().any(|w| w
            == "2 threads, place os: 4 of 8 runs failed (left out of its statistics); the \
                first: ./flaky2.sh exited with status 134 (race detected, aborting)."),
        "{:?}",
        rec.warnings
    );
    // The same log judged without -i puts it out.
    let strict = summarize(&lines, &[Objective::time()], false);
    assert!(strict.iter().any(|s| s.out.is_some()));
}

fn cpu() -> Objective {
    Objective::resolve(&["cpu".into()], &[]).unwrap().remove(0)
}

/// The search's estimates leave out a configuration with a failed run: a crash that happened to
/// be fast first is explored like any fast point, but once a run of it fails it is no
/// contender, gets no further run and is never recommended.
#[test]
fn the_search_counts_no_configuration_with_a_failed_run_as_a_contender() {
    let g = grid((1..=8).collect(), &["os"], &["all"]);
    let lines = {
        let made = std::cell::RefCell::new(BTreeMap::<usize, usize>::new());
        let mut log = RunLog::in_memory();
        execute(
            &plan(g.clone(), Strategy::Search),
            None,
            &mut log,
            &mut |c| {
                let mut made = made.borrow_mut();
                let k = made.entry(c.threads).or_insert(0);
                *k += 1;
                match (c.threads, *k) {
                    // Far the fastest on its warm-up and first run, then it crashes.
                    (4, 1 | 2) => Outcome::Done(record(0.01, 0)),
                    (4, _) => crash(),
                    (t, _) => Outcome::Done(record(1.0 / t as f64, 0)),
                }
            },
            &mut |_| {},
            &|| false,
        )
        .unwrap();
        log.lines().to_vec()
    };
    let time = Objective::time();
    let four = g.configs()[3].clone();
    assert!(!estimates(&lines, &time, false).contains_key(&four));
    assert!(estimates(&lines, &time, true).contains_key(&four));
    // The warm-up, the exploring run and the contender's run that crashed; then no more.
    let of_four: Vec<&RunLine> = lines.iter().filter(|l| l.config == four).collect();
    assert_eq!(of_four.len(), 3, "{of_four:#?}");
    assert_eq!(of_four[2].status, Status::Failed);
    let rec = recommend(
        &summarize(&lines, std::slice::from_ref(&time), false),
        0.03,
        &[time],
    )
    .unwrap();
    assert_eq!(rec.config.threads, 8);
}

fn failed_line(seq: usize, threads: usize, warmup: bool, status: Status) -> RunLine {
    let mut c = grid(vec![threads], &["os"], &["all"]).configs().remove(0);
    c.threads = threads;
    RunLine {
        seq,
        config: c,
        warmup,
        status,
        error: Some(match status {
            Status::Timeout => "timed out after 2.0 s".into(),
            _ => "./flaky2.sh exited with status 134".into(),
        }),
        stderr_tail: (status == Status::Failed).then(|| "race detected, aborting\n".into()),
        record: None,
        noise: Noise::default(),
        ended_at: 0.0,
    }
}

/// As each run fails, one line says so at once (as hyperfine shows an exit code); after three
/// of one configuration, one line says the rest are in runs.jsonl, then nothing.
#[test]
fn each_failed_run_is_told_at_once_and_after_three_the_rest_are_in_the_log() {
    let mut lines: Vec<RunLine> = Vec::new();
    let mut notes = Vec::new();
    for (threads, warmup, status) in [
        (2, true, Status::Ok),
        (2, false, Status::Ok),
        (2, false, Status::Ok),
        (2, false, Status::Failed),
        (1, false, Status::Timeout),
        (2, false, Status::Failed),
        (2, false, Status::Failed),
        (2, false, Status::Failed),
        (2, false, Status::Failed),
    ] {
        let mut l = failed_line(lines.len(), threads, warmup, status);
        if status == Status::Ok {
            (l.error, l.stderr_tail, l.record) = (None, None, Some(record(0.1, 0)));
        }
        lines.push(l);
        let p = Progress {
            line: lines.last().unwrap(),
            done: lines.len(),
            remaining_in_stage: 0,
            stage: 0,
            lines: &lines,
            ignore_failure: true,
        };
        notes.extend(p.failure_note());
    }
    assert_eq!(
        notes,
        [
            "2 threads, place os: run 3 failed: ./flaky2.sh exited with status 134 (race \
             detected, aborting)",
            "1 thread, place os: run 1 timed out after 2.0 s; no more runs of it",
            "2 threads, place os: run 4 failed: ./flaky2.sh exited with status 134 (race \
             detected, aborting)",
            "2 threads, place os: run 5 failed: ./flaky2.sh exited with status 134 (race \
             detected, aborting)",
            "2 threads, place os: further failures of it are in runs.jsonl",
        ]
    );
    // Without -i, the first failure is the configuration's last run, and the line says so.
    let p = Progress {
        line: &lines[3],
        done: 4,
        remaining_in_stage: 0,
        stage: 0,
        lines: &lines[..4],
        ignore_failure: false,
    };
    assert!(
        p.failure_note()
            .unwrap()
            .ends_with("(race detected, aborting); no more runs of it (-i keeps going)")
    );
}

/// The "one run per configuration" warning counts the runs that succeeded, and says so: 8
/// runs of which 1 passed leave no interval either, and `--runs 3` is not the advice.
#[test]
fn the_one_run_warning_counts_successful_runs_and_says_so() {
    let mut lines = flaky_sweep(true);
    // One success of 2 threads only: drop its other passes.
    let mut passed = 0;
    lines.retain(|l| {
        if l.config.threads == 2 && l.status == Status::Ok {
            passed += 1;
            return passed == 1;
        }
        true
    });
    let rec = recommend(
        &summarize(&lines, &[Objective::time()], true),
        0.03,
        &[Objective::time()],
    )
    .unwrap();
    assert!(
        rec.warnings.iter().any(|w| w
            == "1 configuration with one successful run (2 threads, place os, of 5 made): \
                there is no interval for it, so no difference can be told from noise."),
        "{:?}",
        rec.warnings
    );
    assert!(
        !rec.warnings.iter().any(|w| w.contains("--runs 3")),
        "{:?}",
        rec.warnings
    );
}

/// Finding 19: with instances, the speedup is over one copy of one thread of the same
/// placement family, so 2 copies of membw at 154 GB/s against one at 78.7 show 1.96×, and the
/// reason says which baseline.
#[test]
fn with_instances_the_speedup_is_over_one_copy_of_one_thread() {
    let mut g = grid(vec![1], &["os"], &["all"]);
    g.instances = vec![1, 2];
    let mut lines = Vec::new();
    for c in g.configs() {
        let gbs = if c.family.instances == 1 { 78.7 } else { 154.0 };
        for _ in 0..3 {
            let mut r = record(0.1, 0);
            r.throughput = crate::workload::Throughput {
                value: gbs,
                unit: Unit::GbPerSec,
            };
            let mut l = failed_line(lines.len(), 1, false, Status::Ok);
            (l.config, l.error, l.stderr_tail, l.record) = (c.clone(), None, None, Some(r));
            lines.push(l);
        }
    }
    let objectives = [Objective::throughput()];
    let summaries = summarize(&lines, &objectives, false);
    let two = summaries
        .iter()
        .find(|s| s.config.family.instances == 2)
        .unwrap();
    assert!(
        (two.speedup.unwrap() - 154.0 / 78.7).abs() < 1e-9,
        "{two:?}"
    );
    // Two copies of one thread: the efficiency is per thread of all copies.
    assert!((two.efficiency.unwrap() - 154.0 / 78.7 / 2.0).abs() < 1e-9);
    assert_eq!(two.baseline.as_ref().map(|b| b.family.instances), Some(1));
    let rec = recommend(&summaries, 0.03, &objectives).unwrap();
    assert_eq!(rec.config.family.instances, 2);
    assert!(
        rec.reason
            .contains("1.96× one copy of 1 thread's throughput"),
        "{}",
        rec.reason
    );
}

/// An interrupted sweep's report says it is incomplete, with its counts where the plan knows
/// them; before any measured run, it says that.
#[test]
fn an_interrupted_sweep_reports_itself_incomplete_with_its_counts() {
    let p = plan(
        grid(vec![1, 2], &["os", "spread"], &["all"]),
        Strategy::Exhaustive,
    );
    let made = Cell::new(0);
    let mut log = RunLog::in_memory();
    let result = execute(
        &p,
        None,
        &mut log,
        &mut |c| {
            made.set(made.get() + 1);
            Outcome::Done(record(1.0 / c.threads as f64, 0))
        },
        &mut |_| {},
        &|| made.get() >= 9,
    );
    assert!(matches!(result, Err(SweepError::Interrupted)));
    let target = Target::Command {
        argv: vec!["./app".into()],
        shell: false,
    };
    let report = |lines: &[RunLine]| {
        SweepReport::build(target.clone(), test_machine(), p.clone(), lines, &|_| {
            Vec::new()
        })
    };
    // 4 warm-ups and 5 measured runs of 4 × 3.
    let r = report(log.lines());
    assert!(!r.complete);
    assert_eq!((r.runs.measured, r.runs.planned), (5, Some(12)));
    assert_eq!(r.incomplete().as_deref(), Some("5 of 12 measured runs"));
    let r = report(&log.lines()[..3]);
    assert_eq!(r.incomplete().as_deref(), Some("no measured run yet"));
    assert!(
        r.nothing_to_recommend()
            .starts_with("The sweep stopped before any configuration completed a measured run")
    );
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["complete"], false);
    // A search does not know its total before the results are in.
    let mut search = p.clone();
    search.strategy = Strategy::Search;
    let r = SweepReport::build(target, test_machine(), search, log.lines(), &|_| Vec::new());
    assert_eq!(r.runs.planned, None);
    assert_eq!(r.incomplete().as_deref(), Some("5 measured runs so far"));
}

fn test_machine() -> crate::topology::MachineRecord {
    crate::topology::MachineRecord {
        hostname: "test".into(),
        kernel: "6.1".into(),
        cpu_model: "test".into(),
        governor: None,
        settings: Default::default(),
        topology: "1 package, 2 cores".into(),
        tool_version: "0.1.0".into(),
        command: Vec::new(),
        environment: Default::default(),
    }
}

/// A program file touched or copied anew is the same program; one rebuilt is not.
#[cfg(unix)]
#[test]
fn a_program_touched_is_the_same_file_but_one_rebuilt_is_not() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app");
    let write = |body: &str| {
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    write("#!/bin/sh\necho 1\n");
    let name = path.to_str().unwrap();
    let then = ProgramFile::of(name).unwrap();
    assert!(
        then.hash.starts_with("crc32:") && then.hash.len() == 14,
        "{then:?}"
    );
    std::thread::sleep(Duration::from_millis(20));
    write("#!/bin/sh\necho 1\n");
    let touched = ProgramFile::of(name).unwrap();
    assert_ne!(then.mtime_ns, touched.mtime_ns);
    assert!(then.differences(&touched).is_empty());
    write("#!/bin/sh\necho 2\n");
    assert_eq!(
        then.differences(&ProgramFile::of(name).unwrap()),
        ["mtime", "hash"]
    );
}

/// Runs `p` in `log` with `time(config, k)` the k-th (1-based) run of a configuration, until
/// done or `stop_after` runs of this call; returns the configurations in the order they ran.
fn scripted(
    p: &Design,
    log: &mut RunLog,
    time: &dyn Fn(&Config, usize) -> f64,
    stop_after: Option<usize>,
) -> Vec<Config> {
    let made = std::cell::RefCell::new(Vec::<Config>::new());
    let before: Vec<Config> = log.lines().iter().map(|l| l.config.clone()).collect();
    let _ = execute(
        p,
        None,
        log,
        &mut |c| {
            let mut made = made.borrow_mut();
            made.push(c.clone());
            let k = before.iter().chain(made.iter()).filter(|m| *m == c).count();
            Outcome::Done(record(time(c, k), 0))
        },
        &mut |_| {},
        &|| stop_after.is_some_and(|n| made.borrow().len() >= n),
    );
    made.into_inner()
}

/// 1 thread is 10% slower than 2 threads, but the first three runs of 2 threads hold a slow one
/// (1.20 s): with 3 runs the intervals overlap. 4 threads are far slower (no tie).
fn one_slow_run(c: &Config, k: usize) -> f64 {
    let wobble = [1.0, 0.99, 1.01, 1.005, 0.995][k % 5];
    match c.threads {
        1 => 1.10 * wobble,
        2 if k == 2 => 1.20,
        2 => 1.00 * wobble,
        _ => 2.0 * wobble,
    }
}

fn deciding_plan(max_runs: usize) -> Design {
    let mut p = plan(grid(vec![1, 2, 4], &["os"], &["all"]), Strategy::Exhaustive);
    p.warmup = 0;
    p.max_runs = max_runs;
    p
}

/// The recommendation of a sweep whose configurations got 3 runs before deciding runs, on a
/// machine whose CPU sets have `pus` PUs.
fn decided(summaries: &[ConfigSummary], pus: &BTreeMap<String, usize>) -> Recommendation {
    recommend_on(summaries, 0.03, &[Objective::time()], &[], Some(3), pus).unwrap()
}

fn runs_of(lines: &[RunLine], threads: usize) -> usize {
    lines
        .iter()
        .filter(|l| l.config.threads == threads && !l.warmup)
        .count()
}

#[test]
fn a_slow_run_no_longer_makes_a_slower_configuration_tie() {
    // 1 thread is 10% slower than 2; one of the first three runs of 2 threads is slow (1.20 s),
    // so their intervals overlap. The old rule took that as a tie and picked 1 thread; a median
    // beyond the tolerance is no tie, so there is nothing to decide and no more runs.
    let mut log = RunLog::in_memory();
    scripted(&deciding_plan(10), &mut log, &one_slow_run, None);
    let lines = log.lines();
    for t in [1, 2, 4] {
        assert_eq!(runs_of(lines, t), 3, "{t} threads");
    }
    let summaries = summarize(lines, &[Objective::time()], false);
    let rec = decided(&summaries, &BTreeMap::new());
    assert_eq!(rec.config.threads, 2, "{}", rec.reason);
    assert!(
        !rec.reason.contains("Decided by more runs"),
        "{}",
        rec.reason
    );
    // The slow run makes the lower bound of 1 thread's ratio reach below 1: not beyond noise.
    assert!(!rec.beyond_noise, "{}", rec.reason);
}

#[test]
fn a_tie_the_runs_cannot_show_is_decided_by_more_runs_of_those_two() {
    // 1 thread is 1.5% slower than 2 by median, but 2 threads' runs spread by ±4%: three runs
    // cannot show the tie within 3%, about twenty can.
    let time = |c: &Config, k: usize| {
        let wobble = [1.0, 1.0, 0.96, 1.04, 1.0][k % 5];
        match c.threads {
            1 => 1.015,
            2 => wobble,
            _ => 2.0,
        }
    };
    let p = deciding_plan(30);
    let mut log = RunLog::in_memory();
    let order = scripted(&p, &mut log, &time, None);
    let lines = log.lines();
    let before = recommend(
        &summarize(&lines[..9], &[Objective::time()], false),
        0.03,
        &[Objective::time()],
    )
    .unwrap();
    assert_eq!(before.config.threads, 2, "{}", before.reason);
    assert!(
        before
            .reason
            .contains("cannot show it within the 3% tolerance"),
        "{}",
        before.reason
    );
    // More runs of 1 and 2 threads only, interleaved, until the tie is shown.
    let (a, b) = (runs_of(lines, 1), runs_of(lines, 2));
    assert!(a > 3 && a < 30 && a == b, "{a} and {b} runs");
    assert_eq!(runs_of(lines, 4), 3);
    let extra: Vec<usize> = order[9..].iter().map(|c| c.threads).collect();
    assert!(extra.chunks(2).all(|p| p == [1, 2]), "{extra:?}");
    let summaries = summarize(lines, &[Objective::time()], false);
    let rec = decided(&summaries, &BTreeMap::new());
    assert_eq!(rec.config.threads, 1, "{}", rec.reason);
    assert!(!rec.beyond_noise, "{}", rec.reason);
    assert!(
        rec.reason
            .contains("within the 3% tolerance (its runs put it at most"),
        "{}",
        rec.reason
    );
    assert!(
        rec.reason.contains(&format!(
            "Decided by more runs where 3 could not tell: 1 thread, place os ({a} runs), 2 threads, place os ({b} runs)."
        )),
        "{}",
        rec.reason
    );
}

#[test]
fn a_tie_within_the_tolerance_gets_no_more_runs() {
    // 1 thread is 2% slower, and both vary by 0.1%: the runs show the tie at once.
    let time = |c: &Config, k: usize| {
        let wobble = [1.0, 0.999, 1.001][k % 3];
        match c.threads {
            1 => 1.02 * wobble,
            2 => wobble,
            _ => 2.0,
        }
    };
    let mut log = RunLog::in_memory();
    scripted(&deciding_plan(10), &mut log, &time, None);
    for t in [1, 2, 4] {
        assert_eq!(runs_of(log.lines(), t), 3, "{t} threads");
    }
    let summaries = summarize(log.lines(), &[Objective::time()], false);
    let rec = decided(&summaries, &BTreeMap::new());
    assert_eq!(rec.config.threads, 1);
    assert!(
        !rec.reason.contains("Decided by more runs"),
        "{}",
        rec.reason
    );
}

#[test]
fn one_far_run_costs_a_tie_its_support_and_is_named() {
    // 1 thread is 2% slower by median, but one of 2 threads' runs is 20% slower: it widens
    // the bound (the standard deviation counts it) and is named as an outlier; the runs never
    // show the tie, so the fastest is recommended and the reason says why.
    let time = |c: &Config, k: usize| match c.threads {
        1 => 1.02,
        2 if k == 2 => 1.20,
        2 => [1.0, 0.99, 1.01][k % 3],
        _ => 2.0,
    };
    let mut log = RunLog::in_memory();
    scripted(&deciding_plan(6), &mut log, &time, None);
    assert_eq!(runs_of(log.lines(), 1), 6);
    assert_eq!(runs_of(log.lines(), 2), 6);
    let summaries = summarize(log.lines(), &[Objective::time()], false);
    let rec = decided(&summaries, &BTreeMap::new());
    assert_eq!(rec.config.threads, 2, "{}", rec.reason);
    assert!(
        rec.reason.contains("1 thread, place os is within 2.0% of the fastest by median, but its 6 runs and the fastest's 6 cannot show it within the 3% tolerance"),
        "{}",
        rec.reason
    );
    assert!(
        rec.warnings
            .iter()
            .any(|w| w.starts_with("2 threads, place os: 1 of")
                && w.contains("statistical outliers")),
        "{:?}",
        rec.warnings
    );
}

#[test]
fn more_runs_stop_at_the_bound_and_a_resumed_sweep_continues_them() {
    // 1 thread is 1.6% slower than 2 by median, but every third run of 2 threads is slow:
    // their runs never show the tie.
    let time = |c: &Config, k: usize| match c.threads {
        1 => 0.975,
        2 if k % 3 == 2 => 1.50,
        2 => [0.95, 0.96][k % 2],
        _ => 2.0,
    };
    for bound in [3, 6, 10] {
        let mut log = RunLog::in_memory();
        scripted(&deciding_plan(bound), &mut log, &time, None);
        assert_eq!(runs_of(log.lines(), 1), bound);
        assert_eq!(runs_of(log.lines(), 2), bound);
        assert_eq!(runs_of(log.lines(), 4), 3);
        assert!(is_complete(&deciding_plan(bound), log.lines()));
    }
    // Interrupted in the middle of the deciding runs, the sweep is incomplete; resumed, it
    // makes exactly the runs left and ends as an uninterrupted one does.
    let p = deciding_plan(10);
    let mut whole = RunLog::in_memory();
    let all = scripted(&p, &mut whole, &time, None);
    let mut log = RunLog::in_memory();
    let first = scripted(&p, &mut log, &time, Some(12));
    assert_eq!(first.len(), 12);
    assert!(!is_complete(&p, log.lines()));
    assert_eq!(planned_runs(&p, log.lines()), None);
    let rest = scripted(&p, &mut log, &time, None);
    assert_eq!([first, rest].concat(), all);
    assert!(is_complete(&p, log.lines()));
}

/// A 2-PU machine's plan: 1, 2, 4 and 8 threads placed by the OS, 3 runs each, up to 10 to
/// decide.
fn two_pu_plan() -> Design {
    let mut p = plan(
        grid(vec![1, 2, 4, 8], &["os"], &["all"]),
        Strategy::Exhaustive,
    );
    p.warmup = 0;
    p.max_runs = 10;
    p.pus = BTreeMap::from([("all".to_owned(), 2)]);
    p
}

#[test]
fn an_oversubscribed_configuration_not_shown_faster_gives_way_to_one_that_fits() {
    // On 2 PUs, 4 threads are 2% faster than 2 by median, but both vary by ±8%: the runs show
    // neither a tie nor a difference. The tie rule alone would take 4 threads; 2 threads are
    // recommended, after more runs of the two could not tell them apart.
    let time = |c: &Config, k: usize| {
        let wobble = [1.0, 0.92, 1.08, 0.96, 1.04][k % 5];
        match c.threads {
            1 => 2.0 * wobble,
            2 => 1.02 * wobble,
            4 => wobble,
            _ => 1.5 * wobble,
        }
    };
    let p = two_pu_plan();
    let mut log = RunLog::in_memory();
    scripted(&p, &mut log, &time, None);
    let lines = log.lines();
    assert_eq!(runs_of(lines, 2), 10);
    assert_eq!(runs_of(lines, 4), 10);
    assert_eq!(runs_of(lines, 1), 3);
    assert_eq!(runs_of(lines, 8), 3);
    let summaries = summarize(lines, &[Objective::time()], false);
    let rec = decided(&summaries, &p.pus);
    assert_eq!(rec.config.threads, 2, "{}", rec.reason);
    assert_eq!(rec.fastest.threads, 4, "{}", rec.reason);
    assert!(!rec.beyond_noise);
    assert!(
        rec.reason.starts_with(
            "4 threads, place os is fastest, but it is oversubscribed (4 threads at once on 2 \
             PUs), and 2 threads, place os, the fastest configuration that is not, is within the \
             3% tolerance of it by median (2.0% behind) and its runs do not show it slower \
             beyond noise: 2 threads, place os is recommended ("
        ),
        "{}",
        rec.reason
    );
    // Without the PUs (a sweep from before them) the tie rule's pick stands.
    let old = decided(&summaries, &BTreeMap::new());
    assert_eq!(old.config.threads, 4, "{}", old.reason);
}

#[test]
fn an_oversubscribed_configuration_far_ahead_is_recommended_and_said_so() {
    // Threads that mostly wait: 8 on 2 PUs take a quarter of the time of 2.
    let time = |c: &Config, k: usize| {
        let wobble = [1.0, 0.99, 1.01][k % 3];
        wobble
            * match c.threads {
                1 => 4.0,
                2 => 2.0,
                4 => 1.0,
                _ => 0.5,
            }
    };
    let p = two_pu_plan();
    let mut log = RunLog::in_memory();
    scripted(&p, &mut log, &time, None);
    for t in [1, 2, 4, 8] {
        assert_eq!(runs_of(log.lines(), t), 3, "{t} threads");
    }
    let summaries = summarize(log.lines(), &[Objective::time()], false);
    let rec = decided(&summaries, &p.pus);
    assert_eq!(rec.config.threads, 8, "{}", rec.reason);
    assert!(
        rec.reason.contains(
            "It is oversubscribed (8 threads at once on 2 PUs) and recommended all the same: 2 \
             threads, place os, the fastest configuration that is not, is 300.0% slower by \
             median, beyond the 3% tolerance."
        ),
        "{}",
        rec.reason
    );
}

#[test]
fn oversubscription_counts_threads_at_once_against_the_cpu_sets_pus() {
    use crate::grid::ThrottleSpec;
    let mut p = two_pu_plan();
    p.pus.insert("pu:0".to_owned(), 1);
    let os = Family::new("os".parse().unwrap());
    assert_eq!(p.oversubscribed(&os.clone().at(2)), None);
    assert_eq!(p.oversubscribed(&os.clone().at(3)), Some((3, 2)));
    let one: crate::grid::Cpus = "pu:0".parse().unwrap();
    assert_eq!(
        p.oversubscribed(&os.clone().with_cpus(one).at(2)),
        Some((2, 1))
    );
    // A fixed throttle below the PUs keeps 64 threads within them; to the PUs as well.
    let t = |spec| os.clone().with_throttle(spec).at(64);
    assert_eq!(p.oversubscribed(&t(ThrottleSpec::Limit(2))), None);
    assert_eq!(p.oversubscribed(&t(ThrottleSpec::Limit(4))), Some((4, 2)));
    assert_eq!(p.oversubscribed(&t(ThrottleSpec::Pus)), None);
    assert_eq!(p.oversubscribed(&t(ThrottleSpec::Adaptive)), Some((64, 2)));
    // A CPU set the sweep did not count: unknown, so not oversubscribed.
    let other: crate::grid::Cpus = "pu:1".parse().unwrap();
    assert_eq!(p.oversubscribed(&os.with_cpus(other).at(8)), None);
}
