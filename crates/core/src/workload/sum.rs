//! `sum`: the semaphore-throttle experiment — many OS threads, at most K computing at once.
//!
//! By default 64 threads each sum their slice of `1..=64·count` in 64-bit integers, the loop
//! repeated `repeat` times so that every thread runs long enough to be preempted (several
//! scheduler time slices). With a throttle of K, a thread holds one permit of a counting
//! semaphore ([`coretune_pool::Throttle`]) for its whole job (a seat held across its passes),
//! so at most K threads compete for
//! the CPUs; without one, all 64 do. What oversubscription costs shows in the involuntary context
//! switches; whether throttling pays is what the measurements say (on a physical 4-core laptop the
//! article found K = cores best; on these 2-vCPU machines admitting 2 of 64 was measured 9–14%
//! slower than no throttle).
//!
//! Each addition goes through `std::hint::black_box` so that the compiler cannot replace a loop
//! over a range with Gauss's formula. Verification: the grand total equals
//! `repeat · n(n+1)/2` with `n = threads · count`, and every thread reported its own slice's
//! closed-form sum.

use std::sync::atomic::{AtomicU64, Ordering};

use super::{RunConfig, RunOutput, Size, Unit, Work, Workload, WorkloadError, run_workers};
use crate::grid::{Grid, MachineCounts, ThrottleSpec};
use crate::measure::ThreadTracker;
use crate::placement::Policy;

/// OS threads of the article's experiment.
pub(super) const DEFAULT_THREADS: usize = 64;

/// Parameters of a sum instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Params {
    /// Numbers per thread.
    pub count: u64,
    /// Times each thread sums its slice.
    pub repeat: u64,
}

impl Params {
    /// Small: 4,096 numbers × 10; default 65,536 × 100 (≈ 6 ms of work per thread, a few time
    /// slices); large: 65,536 × 1,000.
    pub(super) fn for_size(size: Size) -> Self {
        match size {
            Size::Small => Self {
                count: 4096,
                repeat: 10,
            },
            Size::Default => Self {
                count: 65_536,
                repeat: 100,
            },
            Size::Large => Self {
                count: 65_536,
                repeat: 1000,
            },
        }
    }
}

/// The prepared workload.
#[derive(Debug)]
pub(super) struct Sum {
    params: Params,
}

/// A run's result.
#[derive(Debug)]
pub(super) struct Totals {
    /// Threads that ran.
    pub threads: u64,
    /// Sum over all threads and repetitions.
    pub total: u64,
    /// Threads whose own total was wrong.
    pub wrong_slices: u64,
}

/// `a + (a+1) + … + b`.
fn range_sum(a: u64, b: u64) -> u64 {
    (a + b) * (b - a + 1) / 2
}

impl Sum {
    /// # Errors
    ///
    /// [`WorkloadError::BadParameter`] for a zero count or repeat.
    pub(super) fn new(params: Params) -> Result<Self, WorkloadError> {
        if params.count == 0 || params.repeat == 0 {
            return Err(WorkloadError::BadParameter {
                workload: "sum",
                message: "count and repeat must be at least 1".into(),
            });
        }
        Ok(Self { params })
    }
}

impl Workload for Sum {
    type Output = Totals;

    fn name(&self) -> &'static str {
        "sum"
    }

    fn describe(&self) -> String {
        format!(
            "each thread sums {} integers {} times; total checked against n(n+1)/2",
            self.params.count, self.params.repeat
        )
    }

    fn default_threads(&self) -> Option<usize> {
        Some(DEFAULT_THREADS)
    }

    /// The article's experiment: 64 threads placed by the OS, on every CPU, under no throttle and
    /// a ladder of limits.
    fn default_grid(&self, _machine: MachineCounts) -> Grid {
        let mut throttles = vec![ThrottleSpec::None];
        throttles.extend([1, 2, 3, 4, 6, 8, 16, 64].map(ThrottleSpec::Limit));
        Grid::new(vec![DEFAULT_THREADS], vec![Policy::Os]).with_throttles(throttles)
    }

    fn run(
        &self,
        config: &RunConfig<'_>,
        tracker: &ThreadTracker,
    ) -> Result<RunOutput<Totals>, WorkloadError> {
        let Params { count, repeat } = self.params;
        let total = AtomicU64::new(0);
        let wrong = AtomicU64::new(0);
        run_workers("sum", config, tracker, |worker, probe| {
            // The seat takes a permit for the first pass and keeps it for the whole job, as the
            // article's semaphore does; only a lowered (adaptive) limit makes it give the permit
            // back between two passes.
            let mut seat = config.throttle.map(coretune_pool::Throttle::seat);
            probe.sample();
            let first = worker as u64 * count + 1;
            let last = first + count - 1;
            let mut mine = 0u64;
            for _ in 0..repeat {
                if let Some(seat) = &mut seat {
                    seat.hold();
                }
                let mut acc = 0u64;
                for i in first..=last {
                    acc = std::hint::black_box(acc) + i;
                }
                mine += acc;
                if let Some(throttle) = config.throttle {
                    // One pass over the slice is an adaptive throttle's unit of work:
                    // threads × repeat completions a run (6,400 at the default size), enough
                    // for throughput samples of a few milliseconds.
                    throttle.record_completions(1);
                }
            }
            drop(seat);
            probe.sample();
            if mine != repeat * range_sum(first, last) {
                wrong.fetch_add(1, Ordering::Relaxed);
            }
            total.fetch_add(mine, Ordering::Relaxed);
        })?;
        #[allow(clippy::cast_precision_loss)]
        let amount = (config.threads as u64 * count * repeat) as f64;
        Ok(RunOutput {
            work: Work {
                amount,
                unit: Unit::NsPerItem,
                kernel_time: None,
            },
            result: Totals {
                threads: config.threads as u64,
                total: total.into_inner(),
                wrong_slices: wrong.into_inner(),
            },
        })
    }

    fn verify(&self, t: &Totals) -> Result<(), String> {
        let n = t.threads * self.params.count;
        let want = self.params.repeat * range_sum(1, n);
        if t.wrong_slices > 0 {
            return Err(format!(
                "sum: {} threads summed their slice wrongly",
                t.wrong_slices
            ));
        }
        if t.total != want {
            return Err(format!(
                "sum: total {} is not {} × n(n+1)/2 = {want} for n = {n}",
                t.total, self.params.repeat
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::workload::run_measured;

    fn small() -> Sum {
        Sum::new(Params {
            count: 1000,
            repeat: 3,
        })
        .unwrap()
    }

    #[test]
    fn total_is_gauss_with_and_without_a_throttle() {
        let w = small();
        let r = run_measured(&w, &RunConfig::threads(64)).unwrap();
        assert!(r.verified, "{:?}", r.verify_error);
        let throttle = coretune_pool::Throttle::new(2);
        let config = RunConfig {
            throttle: Some(&throttle),
            ..RunConfig::threads(64)
        };
        let r = run_measured(&w, &config).unwrap();
        assert!(r.verified, "{:?}", r.verify_error);
        assert_eq!(r.measurement.threads.len(), 64);
    }

    #[test]
    fn verification_catches_a_wrong_total() {
        let w = small();
        let mut out = w
            .run(&RunConfig::threads(8), &ThreadTracker::new())
            .unwrap();
        assert_eq!(w.verify(&out.result), Ok(()));
        out.result.total += 1;
        assert!(w.verify(&out.result).unwrap_err().contains("n(n+1)/2"));
    }

    #[test]
    fn the_throttle_limits_concurrency() {
        use std::sync::atomic::AtomicUsize;
        // Count how many workers are inside the permit at once.
        let throttle = coretune_pool::Throttle::new(3);
        let (inside, peak) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let config = RunConfig {
            throttle: Some(&throttle),
            ..RunConfig::threads(16)
        };
        run_workers("test", &config, &ThreadTracker::new(), |_, _| {
            let _permit = config.throttle.map(coretune_pool::Throttle::acquire);
            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(5));
            inside.fetch_sub(1, Ordering::SeqCst);
        })
        .unwrap();
        let peak = peak.into_inner();
        assert!((1..=3).contains(&peak), "{peak} inside at once");
    }
}
