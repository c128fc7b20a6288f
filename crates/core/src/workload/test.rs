use std::time::Duration;

use super::*;
use crate::measure::ThreadTracker;

#[test]
fn build_knows_every_name_and_rejects_others() {
    for name in NAMES {
        let spec = WorkloadSpec {
            name: (*name).into(),
            size: Size::Small,
            ..WorkloadSpec::default()
        };
        assert_eq!(build(&spec, 1 << 20).unwrap().name(), *name);
    }
    let spec = WorkloadSpec {
        name: "nope".into(),
        ..WorkloadSpec::default()
    };
    let err = build(&spec, 1 << 20).err().unwrap().to_string();
    assert!(err.contains("unknown workload 'nope'"), "{err}");
    let spec = WorkloadSpec {
        name: "raymesh".into(),
        rays: Some(0),
        ..WorkloadSpec::default()
    };
    assert!(build(&spec, 1 << 20).is_err());
}

#[test]
fn copies_run_at_once_and_count_their_work_together() {
    let spec = WorkloadSpec {
        name: "sum".into(),
        size: Size::Small,
        ..WorkloadSpec::default()
    };
    let w = build(&spec, 1 << 20).unwrap();
    let one = run_measured(w.as_ref(), &RunConfig::threads(1)).unwrap();
    // Each copy's worker pinned (both on CPU 0, which every machine has).
    let configs: Vec<RunConfig<'_>> = (0..2)
        .map(|_| RunConfig {
            cpus: Some(vec![vec![0]]),
            ..RunConfig::threads(1)
        })
        .collect();
    let two = run_copies(w.as_ref(), &configs).unwrap();
    assert!(two.verified, "{:?}", two.verify_error);
    assert_eq!(two.checksum, one.checksum);
    // Both copies' workers.
    assert_eq!(two.measurement.threads.len(), 2);
    assert_eq!(two.throughput.unit, one.throughput.unit);
    // The figure is the copies' work together over the slowest one's (kernel) time: two
    // copies of 10 tasks timed at 1 s and 2 s make 10 tasks/s, and one that fails its
    // check fails the run.
    struct Fixed;
    impl Workload for Fixed {
        type Output = usize;

        fn name(&self) -> &'static str {
            "fixed"
        }
        fn describe(&self) -> String {
            String::new()
        }
        fn run(
            &self,
            config: &RunConfig<'_>,
            _: &ThreadTracker,
        ) -> Result<RunOutput<usize>, WorkloadError> {
            Ok(RunOutput {
                work: Work {
                    amount: 10.0,
                    unit: Unit::TasksPerSec,
                    kernel_time: Some(Duration::from_secs(config.threads as u64)),
                },
                result: config.threads,
            })
        }
        fn verify(&self, threads: &usize) -> Result<(), String> {
            match threads {
                3 => Err("three is wrong".into()),
                _ => Ok(()),
            }
        }
    }
    let r = run_copies(&Fixed, &[RunConfig::threads(1), RunConfig::threads(2)]).unwrap();
    assert!(
        (r.throughput.value - 10.0).abs() < 1e-9,
        "{:?}",
        r.throughput
    );
    assert!(r.verified);
    let r = run_copies(&Fixed, &[RunConfig::threads(1), RunConfig::threads(3)]).unwrap();
    assert_eq!(r.verify_error.as_deref(), Some("copy 1: three is wrong"));
}

#[test]
fn throughput_is_work_over_time_in_its_unit() {
    let w = Work {
        amount: 2e6,
        unit: Unit::MraysPerSec,
        kernel_time: None,
    };
    assert!((w.throughput(Duration::from_secs(2)).value - 1.0).abs() < 1e-12);
    let w = Work {
        amount: 1e6,
        unit: Unit::NsPerItem,
        kernel_time: None,
    };
    assert!((w.throughput(Duration::from_millis(30)).value - 30.0).abs() < 1e-9);
    let w = Work {
        amount: 8e9,
        unit: Unit::GbPerSec,
        kernel_time: Some(Duration::from_secs(2)),
    };
    assert!((w.throughput(Duration::from_secs(100)).value - 4.0).abs() < 1e-12);
    assert_eq!(
        serde_json::to_value(Unit::MraysPerSec).unwrap(),
        serde_json::json!("Mrays/s")
    );
}

#[test]
fn worker_panic_becomes_an_error() {
    let tracker = ThreadTracker::new();
    let err = run_workers("test", &RunConfig::threads(2), &tracker, |i, _| {
        assert!(i != 1, "worker one fails");
    })
    .unwrap_err();
    assert!(err.to_string().contains("worker one fails"), "{err}");
}

#[test]
fn zero_threads_is_a_parameter_error() {
    let tracker = ThreadTracker::new();
    let err = run_workers("test", &RunConfig::threads(0), &tracker, |_, _| {}).unwrap_err();
    assert!(matches!(err, WorkloadError::BadParameter { .. }));
}

#[test]
fn start_hook_runs_on_every_worker() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let seen = Arc::new(AtomicUsize::new(0));
    let seen2 = Arc::clone(&seen);
    let config = RunConfig {
        start_hook: Some(Arc::new(move |i: usize| {
            seen2.fetch_or(1 << i, Ordering::Relaxed);
        })),
        ..RunConfig::threads(3)
    };
    let tracker = ThreadTracker::new();
    run_workers("test", &config, &tracker, |_, _| {}).unwrap();
    assert_eq!(seen.load(Ordering::Relaxed), 0b111);
    assert_eq!(tracker.into_records().len(), 3);
}

#[test]
fn workers_run_on_their_cpus_and_a_refused_set_is_an_error() {
    let cpu = crate::sys::set_to_vec(&crate::sys::task_affinity(0).unwrap())[0];
    let config = RunConfig {
        cpus: Some(vec![vec![cpu]]),
        steal_order: Some(vec![vec![1, 2], vec![2, 0], vec![0, 1]]),
        ..RunConfig::threads(3)
    };
    let tracker = ThreadTracker::new();
    run_workers("test", &config, &tracker, |_, probe| probe.sample()).unwrap();
    let records = tracker.into_records();
    assert_eq!(records.len(), 3);
    for r in &records {
        assert_eq!(
            r.cpus_seen.keys().copied().collect::<Vec<_>>(),
            [cpu],
            "{r:?}"
        );
    }
    let refused = RunConfig {
        cpus: Some(vec![vec![100_000]]),
        ..RunConfig::threads(2)
    };
    let err = run_workers("test", &refused, &ThreadTracker::new(), |_, _| {}).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("test: could not pin worker 0 to CPUs 100000: "),
        "{err}"
    );
}

#[test]
fn a_worker_panic_is_an_error_with_its_message() {
    let err = run_workers(
        "test",
        &RunConfig::threads(2),
        &ThreadTracker::new(),
        |w, _| {
            assert!(w != 1, "worker one failed");
        },
    )
    .unwrap_err();
    assert!(matches!(err, WorkloadError::Panicked { .. }), "{err}");
    assert!(err.to_string().contains("worker one failed"), "{err}");
}
