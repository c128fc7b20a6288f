//! Running a workload: [`run_measured`], the one place a run is measured; [`run_copies`], a
//! workload's instances at once; [`run_workers`], the coretune pool that carries a placement to
//! the workers.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::api::{DynWorkload, RunConfig, RunOutput, Unverified, Work, WorkloadError};
use super::record::{RunRecord, ThrottleSample};
use crate::measure::{Probe, ThreadProbe, ThreadTracker};

/// Runs `workload` once under `config`: measures the run, then verifies its result outside the
/// measured region.
///
/// # Errors
///
/// The workload's error when the run itself failed (a failed *verification* is not an error:
/// it is recorded in the returned record as `verified: false`).
pub fn run_measured(
    workload: &dyn DynWorkload,
    config: &RunConfig<'_>,
) -> Result<RunRecord, WorkloadError> {
    let tracker = ThreadTracker::new();
    let probe = Probe::start();
    let output = workload.run_unverified(config, &tracker)?;
    let measurement = probe.finish(tracker.into_records());
    let verdict = output.result.verify();
    Ok(RunRecord {
        throughput: output.work.throughput(measurement.wall),
        verified: verdict.is_ok(),
        verify_error: verdict.err(),
        checksum: output.result.checksum(),
        measurement,
        throttle_trace: config
            .throttle
            .map(|t| t.trace().into_iter().map(ThrottleSample::from).collect())
            .unwrap_or_default(),
        pinning: None,
        audit: None,
        metrics: std::collections::BTreeMap::new(),
        sampler: None,
    })
}

/// Runs `workload` as `configs.len()` copies at once (`tune --instances`), each on a pool of its
/// own built from its [`RunConfig`] (its part of the CPUs, its throttle), released together, and
/// measured as one run: the wall time is the slowest copy's, the CPU time and counters the
/// process's over all copies, the worker records every copy's in turn (copy 0's workers, then
/// copy 1's, ...). The figure is the aggregate one: the copies' work summed, over the slowest
/// copy's time (its measured kernel time, for a workload that times one). Every copy's result is
/// verified; one that fails fails the run. One copy is [`run_measured`].
///
/// # Errors
///
/// The first copy's error when a copy could not complete.
pub fn run_copies(
    workload: &dyn DynWorkload,
    configs: &[RunConfig<'_>],
) -> Result<RunRecord, WorkloadError> {
    if let [one] = configs {
        return run_measured(workload, one);
    }
    let trackers: Vec<ThreadTracker> = configs.iter().map(|_| ThreadTracker::new()).collect();
    let go = std::sync::Barrier::new(configs.len());
    let probe = Probe::start();
    let outputs: Vec<Result<RunOutput<Unverified<'_>>, WorkloadError>> = std::thread::scope(|s| {
        let copies: Vec<_> = configs
            .iter()
            .zip(&trackers)
            .map(|(config, tracker)| {
                let go = &go;
                s.spawn(move || {
                    go.wait();
                    workload.run_unverified(config, tracker)
                })
            })
            .collect();
        copies
            .into_iter()
            .map(|copy| {
                copy.join().unwrap_or_else(|_| {
                    Err(WorkloadError::Panicked {
                        workload: workload.name(),
                        message: "a copy's thread panicked".into(),
                    })
                })
            })
            .collect()
    });
    let threads = trackers
        .into_iter()
        .flat_map(ThreadTracker::into_records)
        .collect();
    let measurement = probe.finish(threads);
    let outputs = outputs.into_iter().collect::<Result<Vec<_>, _>>()?;
    let work = Work {
        amount: outputs.iter().map(|o| o.work.amount).sum(),
        unit: outputs[0].work.unit,
        kernel_time: outputs.iter().filter_map(|o| o.work.kernel_time).max(),
    };
    let verdict = outputs
        .iter()
        .enumerate()
        .try_for_each(|(i, o)| o.result.verify().map_err(|e| format!("copy {i}: {e}")));
    Ok(RunRecord {
        throughput: work.throughput(measurement.wall),
        verified: verdict.is_ok(),
        verify_error: verdict.err(),
        checksum: outputs[0].result.checksum(),
        measurement,
        throttle_trace: Vec::new(),
        pinning: None,
        audit: None,
        metrics: std::collections::BTreeMap::new(),
        sampler: None,
    })
}

/// Runs `body(worker, probe)` once on each of `config.threads` workers of a coretune pool built
/// for the run ([`RunConfig::pool_builder`]: pinned, with its steal order and start hook), each
/// recorded in `tracker`; a panic in any worker becomes [`WorkloadError::Panicked`].
///
/// # Errors
///
/// [`WorkloadError::BadParameter`] for zero threads, [`WorkloadError::Panicked`] when a worker
/// (or the start hook) panicked, [`WorkloadError::System`] when the pool could not be built (a
/// thread refused, or a worker's CPU set).
pub fn run_workers<F>(
    workload: &'static str,
    config: &RunConfig<'_>,
    tracker: &ThreadTracker,
    body: F,
) -> Result<(), WorkloadError>
where
    F: Fn(usize, &mut ThreadProbe) + Sync,
{
    if config.threads == 0 {
        return Err(WorkloadError::BadParameter {
            workload,
            message: "needs at least 1 thread".into(),
        });
    }
    // The first panic's message: a worker catches its own panic so the message is not lost in
    // the pool's re-raise; the start hook's goes through the pool's panic handler.
    let panicked = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
    let record = |panicked: &std::sync::Mutex<Option<String>>, message: String| {
        panicked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get_or_insert(message);
    };
    let from_hook = std::sync::Arc::clone(&panicked);
    let pool = config
        .pool_builder()
        .thread_name(move |worker| format!("{workload}-{worker}"))
        .panic_handler(move |panic| record(&from_hook, panic_message(panic.as_ref())))
        .build()
        .map_err(|e| WorkloadError::System {
            workload,
            message: match std::error::Error::source(&e) {
                Some(cause) => format!("{e}: {cause}"),
                None => e.to_string(),
            },
        })?;
    pool.broadcast(|worker| {
        let ran = catch_unwind(AssertUnwindSafe(|| {
            let mut probe = tracker.start(worker);
            body(worker, &mut probe);
            tracker.finish(probe);
        }));
        if let Err(panic) = ran {
            record(&panicked, panic_message(panic.as_ref()));
        }
    });
    drop(pool);
    let first = panicked
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    match first {
        Some(message) => Err(WorkloadError::Panicked { workload, message }),
        None => Ok(()),
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".into())
}

/// FNV-1a over 64-bit words: a cheap, stable checksum of a result table.
pub(crate) fn fnv1a(words: impl IntoIterator<Item = u64>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for w in words {
        for b in w.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}
