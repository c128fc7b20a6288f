//! `membw`: memory bandwidth, STREAM-style — the memory-bound, NUMA-sensitive case.
//!
//! Three arrays of `f64`, by default each 4 × the last-level cache (so the kernels stream from
//! memory, STREAM's rule), are allocated zeroed — large zeroed allocations are fresh mappings
//! whose pages do not exist yet — and each worker initialises the block it owns, so **the first
//! touch by the owning thread** places those pages on its NUMA node. Workers keep the same
//! static blocks in every kernel, as STREAM's OpenMP `schedule(static)` does.
//!
//! Each of `iterations` rounds runs two kernels, with a barrier after each:
//! triad `a = b + s·c` (2 reads, 1 write) and scale `c = a / 2` (1 read, 1 write). The values
//! change every round, so a skipped or doubled round is visible: after the run every element
//! must equal the scalar recurrence `c ← (1 + s·c) / 2` applied `iterations` times (checked for
//! every element, exactly: each element sees the same floating-point operations wherever it is
//! computed). Bandwidth counts STREAM's way: 3 + 2 words per element per round, over the time of
//! the kernels only (initialisation excluded), reported in GB/s (10^9 bytes).

use std::sync::Barrier;
use std::time::{Duration, Instant};

use super::{RunConfig, RunOutput, Size, Unit, Work, Workload, WorkloadError, run_workers};
use crate::measure::ThreadTracker;

const SCALAR: f64 = 0.5;
const B: f64 = 1.0;
const C0: f64 = 2.0;

/// Parameters of a membw instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Params {
    /// Elements per array.
    pub elements: usize,
    /// Rounds of triad + scale.
    pub iterations: usize,
}

impl Params {
    /// Sizes from the last-level cache: default arrays of 4 × LLC each (STREAM's rule), small
    /// 1 MiB each, large 16 × LLC.
    pub(super) fn for_size(size: Size, llc_bytes: usize) -> Self {
        let llc = llc_bytes.max(1 << 20);
        let bytes = match size {
            Size::Small => 1 << 20,
            Size::Default => 4 * llc,
            Size::Large => 16 * llc,
        };
        Self {
            elements: bytes / 8,
            iterations: if size == Size::Small { 4 } else { 10 },
        }
    }
}

/// The prepared workload.
#[derive(Debug)]
pub(super) struct MemBw {
    params: Params,
}

/// A run's arrays.
#[derive(Debug)]
pub(super) struct Arrays {
    /// `a` after the last triad.
    pub a: Vec<f64>,
    /// `c` after the last scale.
    pub c: Vec<f64>,
}

impl MemBw {
    /// # Errors
    ///
    /// [`WorkloadError::BadParameter`] for empty arrays or zero iterations.
    pub(super) fn new(params: Params) -> Result<Self, WorkloadError> {
        if params.elements == 0 || params.iterations == 0 {
            return Err(WorkloadError::BadParameter {
                workload: "membw",
                message: "arrays and iterations must be non-empty".into(),
            });
        }
        Ok(Self { params })
    }

    /// (a, c) of every element after the run, by the scalar recurrence.
    fn expected(&self) -> (f64, f64) {
        let (mut a, mut c) = (0.0, C0);
        for _ in 0..self.params.iterations {
            a = B + SCALAR * c;
            c = a / 2.0;
        }
        (a, c)
    }
}

/// One worker's blocks of the three arrays.
type Part<'a> = std::sync::Mutex<(&'a mut [f64], &'a mut [f64], &'a mut [f64])>;

/// Splits `v` into `n` contiguous blocks as even as possible (STREAM's static schedule).
fn blocks(v: &mut [f64], n: usize) -> Vec<&mut [f64]> {
    let len = v.len();
    let mut out = Vec::with_capacity(n);
    let mut rest = v;
    for i in 0..n {
        let take = len * (i + 1) / n - len * i / n;
        let (head, tail) = rest.split_at_mut(take);
        out.push(head);
        rest = tail;
    }
    out
}

impl Workload for MemBw {
    type Output = Arrays;

    fn name(&self) -> &'static str {
        "membw"
    }

    fn describe(&self) -> String {
        format!(
            "triad + scale over 3 arrays of {} MiB, {} rounds",
            (self.params.elements * 8) >> 20,
            self.params.iterations
        )
    }

    fn run(
        &self,
        config: &RunConfig<'_>,
        tracker: &ThreadTracker,
    ) -> Result<RunOutput<Arrays>, WorkloadError> {
        if config.throttle.is_some() {
            // Workers wait for each other at barriers between kernels: a throttle below the
            // thread count would deadlock, and one at or above it would do nothing.
            return Err(WorkloadError::BadParameter {
                workload: "membw",
                message: "a throttle does not apply (its kernels are separated by barriers)".into(),
            });
        }
        let n = self.params.elements;
        let threads = config.threads.max(1);
        // Zeroed allocations of this size are fresh mappings: no page exists until written.
        let mut a = vec![0.0f64; n];
        let mut b = vec![0.0f64; n];
        let mut c = vec![0.0f64; n];
        let parts: Vec<Part<'_>> = blocks(&mut a, threads)
            .into_iter()
            .zip(blocks(&mut b, threads))
            .zip(blocks(&mut c, threads))
            .map(|((a, b), c)| std::sync::Mutex::new((a, b, c)))
            .collect();
        let barrier = Barrier::new(threads);
        let kernel_start = std::sync::Mutex::new(None::<Instant>);
        let kernel_end = std::sync::Mutex::new(None::<Instant>);
        let iterations = self.params.iterations;
        run_workers("membw", config, tracker, |worker, probe| {
            let mut guard = parts[worker]
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let (a, b, c) = &mut *guard;
            // First touch by the owner.
            a.fill(0.0);
            b.fill(B);
            c.fill(C0);
            if barrier.wait().is_leader() {
                *kernel_start
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Instant::now());
            }
            barrier.wait();
            for _ in 0..iterations {
                for ((a, b), c) in a.iter_mut().zip(b.iter()).zip(c.iter()) {
                    *a = b + SCALAR * c;
                }
                barrier.wait();
                for (c, a) in c.iter_mut().zip(a.iter()) {
                    *c = a / 2.0;
                }
                barrier.wait();
                probe.sample();
            }
            if barrier.wait().is_leader() {
                *kernel_end
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Instant::now());
            }
        })?;
        drop(parts);
        let start = kernel_start.into_inner().ok().flatten();
        let end = kernel_end.into_inner().ok().flatten();
        let kernel_time = match (start, end) {
            (Some(s), Some(e)) => Some(e.duration_since(s)),
            _ => None,
        };
        #[allow(clippy::cast_precision_loss)]
        let bytes = (5 * 8 * n * iterations) as f64;
        Ok(RunOutput {
            work: Work {
                amount: bytes,
                unit: Unit::GbPerSec,
                kernel_time: kernel_time.map(|t| t.max(Duration::from_nanos(1))),
            },
            result: Arrays { a, c },
        })
    }

    fn verify(&self, arrays: &Arrays) -> Result<(), String> {
        let (want_a, want_c) = self.expected();
        for (name, v, want) in [("a", &arrays.a, want_a), ("c", &arrays.c, want_c)] {
            if v.len() != self.params.elements {
                return Err(format!("membw: array {name} has {} elements", v.len()));
            }
            if let Some(i) = v.iter().position(|x| x.to_bits() != want.to_bits()) {
                return Err(format!("membw: {name}[{i}] = {}, expected {want}", v[i]));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::workload::run_measured;

    fn small() -> MemBw {
        MemBw::new(Params {
            elements: 100_003,
            iterations: 3,
        })
        .unwrap()
    }

    #[test]
    fn verifies_for_any_thread_count() {
        let w = small();
        for threads in [1, 2, 3, 5] {
            let r = run_measured(&w, &RunConfig::threads(threads)).unwrap();
            assert!(r.verified, "{threads}: {:?}", r.verify_error);
            assert!(r.throughput.value > 0.0);
            assert_eq!(r.throughput.unit, Unit::GbPerSec);
        }
    }

    #[test]
    fn verification_catches_a_skipped_element() {
        let w = small();
        let mut out = w
            .run(&RunConfig::threads(2), &ThreadTracker::new())
            .unwrap();
        assert_eq!(w.verify(&out.result), Ok(()));
        out.result.c[77_777] = C0;
        let err = w.verify(&out.result).unwrap_err();
        assert!(err.contains("c[77777]"), "{err}");
    }

    #[test]
    fn blocks_cover_everything_once() {
        let mut v: Vec<f64> = (0..10).map(f64::from).collect();
        let b = blocks(&mut v, 3);
        assert_eq!(b.iter().map(|b| b.len()).collect::<Vec<_>>(), vec![3, 3, 4]);
    }
}
