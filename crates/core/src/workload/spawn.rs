//! `spawn`: what a thread pool itself costs — the benchmark this field knows.
//!
//! The main thread queues `items` (10,000,000 by default) empty work items; each decrements a
//! shared atomic counter, and the one that brings it to zero signals the waiting main thread.
//! The figure is wall time per item from the first submission until the main thread wakes, with
//! the pool built before the clock starts. The same shape runs on coretune's pool and on its
//! peers, selected with `--pool`, so one command compares them:
//!
//! | `--pool` | what queues the items |
//! |---|---|
//! | `coretune` | `coretune_pool::ThreadPool::spawn` (or `spawn_batch` with `--batch`) |
//! | `rayon` | `rayon::ThreadPool::spawn` |
//! | `rayon-scope` | `rayon::ThreadPool::scope` + `Scope::spawn` |
//! | `tokio` | tokio's multi-thread runtime, `Runtime::spawn` of an `async` block |
//! | `crossbeam` | a minimal pool on one `crossbeam_deque::Injector` ([`coretune_pool::peers`]) |
//! | `mutex` | a `Mutex<VecDeque>` + `Condvar` pool ([`coretune_pool::peers`]) |
//!
//! coretune's pool is built with the run's placement as data (each worker's CPUs and steal
//! order, [`RunConfig::pool_builder`]); rayon's and tokio's workers pin themselves in a start
//! hook ([`RunConfig::pinning_start_hook`]); the two minimal peers have no hook and run
//! unpinned. The countdown is leaked (64 bytes a run) so that
//! `'static` tasks hold a plain reference: a reference count per task would be measured instead
//! of the pool, as in `crates/pool/benches/spawn.rs`.
//!
//! Verification: after the pool is gone the counter is exactly zero — an item lost would leave it
//! above zero (and the main thread waiting), an item run twice would wrap it around. No second
//! counter is kept: another atomic per item would be measured along with the pool.
//!
//! Per-thread records: pools own their threads, so instead of the workers reporting themselves,
//! the pool's threads are read from `/proc/self/task` after the countdown (the CPU each was last
//! on, and `se.nr_migrations` since the pool started).

use std::collections::BTreeMap;
use std::str::FromStr;
#[cfg(feature = "peers")]
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use coretune_pool::peers::Countdown;

use super::{RunConfig, RunOutput, Size, Unit, Work, Workload, WorkloadError};
use crate::measure::{MigrationSource, ThreadRecord, ThreadTracker};
use crate::sys;

/// Which pool runs the items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PoolKind {
    /// coretune's pool.
    Coretune,
    /// `rayon::ThreadPool::spawn`.
    Rayon,
    /// `rayon::ThreadPool::scope`.
    RayonScope,
    /// tokio's multi-thread runtime.
    Tokio,
    /// A minimal crossbeam `Injector` pool.
    Crossbeam,
    /// A `Mutex<VecDeque>` + `Condvar` pool.
    Mutex,
}

impl PoolKind {
    /// Every pool, in `--help` order.
    pub(super) const ALL: [PoolKind; 6] = [
        PoolKind::Coretune,
        PoolKind::Rayon,
        PoolKind::RayonScope,
        PoolKind::Tokio,
        PoolKind::Crossbeam,
        PoolKind::Mutex,
    ];

    /// The `--pool` name.
    pub(super) fn name(self) -> &'static str {
        match self {
            PoolKind::Coretune => "coretune",
            PoolKind::Rayon => "rayon",
            PoolKind::RayonScope => "rayon-scope",
            PoolKind::Tokio => "tokio",
            PoolKind::Crossbeam => "crossbeam",
            PoolKind::Mutex => "mutex",
        }
    }
}

impl FromStr for PoolKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PoolKind::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = PoolKind::ALL.iter().map(|p| p.name()).collect();
                format!("unknown pool '{s}' (expected {})", names.join(", "))
            })
    }
}

/// Parameters of a spawn instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Params {
    /// Work items per run.
    pub items: usize,
    /// The pool.
    pub pool: PoolKind,
    /// coretune only: submit with `spawn_batch` instead of one `spawn` per item.
    pub batch: bool,
}

impl Params {
    /// Small 100,000 items, default 10,000,000 (the benchmark's), large 50,000,000.
    pub(super) fn for_size(size: Size) -> Self {
        let items = match size {
            Size::Small => 100_000,
            Size::Default => 10_000_000,
            Size::Large => 50_000_000,
        };
        Self {
            items,
            pool: PoolKind::Coretune,
            batch: false,
        }
    }
}

/// The result: what the countdown ended at, read after the pool is gone.
#[derive(Debug)]
pub(super) struct Counts {
    /// Items queued.
    pub items: usize,
    /// The countdown's final value: 0 when every item ran once.
    pub remaining: usize,
}

/// The prepared workload.
#[derive(Debug)]
pub(super) struct Spawn {
    params: Params,
}

impl Spawn {
    /// # Errors
    ///
    /// [`WorkloadError::BadParameter`] for zero items, or `batch` with a pool other than
    /// coretune's.
    pub(super) fn new(params: Params) -> Result<Self, WorkloadError> {
        if params.items == 0 {
            return Err(WorkloadError::BadParameter {
                workload: "spawn",
                message: "--items must be at least 1".into(),
            });
        }
        if params.batch && params.pool != PoolKind::Coretune {
            return Err(WorkloadError::BadParameter {
                workload: "spawn",
                message: format!(
                    "--batch is coretune's batch submission; pool '{}' has none",
                    params.pool.name()
                ),
            });
        }
        Ok(Self { params })
    }
}

/// Thread ids of this process, with each one's `se.nr_migrations` and last CPU; threads whose
/// migrations cannot be read are left out.
fn task_migrations() -> BTreeMap<i32, (u64, Option<usize>)> {
    sys::own_threads()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|t| Some((t.tid, (t.migrations?, t.cpu))))
        .collect()
}

impl Workload for Spawn {
    type Output = Counts;

    fn name(&self) -> &'static str {
        "spawn"
    }

    fn describe(&self) -> String {
        format!(
            "{} empty items counted down on the {} pool{}",
            self.params.items,
            self.params.pool.name(),
            if self.params.batch {
                " (batch submission)"
            } else {
                ""
            }
        )
    }

    fn run(
        &self,
        config: &RunConfig<'_>,
        tracker: &ThreadTracker,
    ) -> Result<RunOutput<Counts>, WorkloadError> {
        let Params { items, pool, batch } = self.params;
        let threads = config.threads;
        if threads == 0 {
            return Err(WorkloadError::BadParameter {
                workload: "spawn",
                message: "needs at least 1 thread".into(),
            });
        }
        let system = |e: String| WorkloadError::System {
            workload: "spawn",
            message: e,
        };
        #[cfg(feature = "peers")]
        let hook = config.pinning_start_hook();
        let countdown = Countdown::leak(items);
        let before = task_migrations();
        let elapsed: Duration;
        let after: BTreeMap<i32, (u64, Option<usize>)>;
        // Each arm builds its pool, then times submission to wake-up, then reads the pool's
        // threads before the pool is dropped.
        macro_rules! timed {
            ($submit:expr) => {{
                let start = Instant::now();
                $submit;
                countdown.wait();
                let e = start.elapsed();
                (e, task_migrations())
            }};
        }
        match pool {
            PoolKind::Coretune => {
                let p = config
                    .pool_builder()
                    .build()
                    .map_err(|e| system(e.to_string()))?;
                (elapsed, after) = if batch {
                    timed!(p.spawn_batch((0..items).map(|_| move || countdown.item())))
                } else {
                    timed!((0..items).for_each(|_| p.spawn(move || countdown.item())))
                };
            }
            #[cfg(feature = "peers")]
            PoolKind::Rayon | PoolKind::RayonScope => {
                let mut builder = rayon::ThreadPoolBuilder::new().num_threads(threads);
                if let Some(hook) = hook {
                    builder = builder.start_handler(move |i| hook(i));
                }
                let p = builder.build().map_err(|e| system(e.to_string()))?;
                (elapsed, after) = if pool == PoolKind::Rayon {
                    timed!((0..items).for_each(|_| p.spawn(move || countdown.item())))
                } else {
                    timed!(p.scope(|s| (0..items).for_each(|_| s.spawn(move |_| countdown.item()))))
                };
            }
            #[cfg(feature = "peers")]
            PoolKind::Tokio => {
                let mut builder = tokio::runtime::Builder::new_multi_thread();
                builder.worker_threads(threads);
                if let Some(hook) = hook {
                    // tokio numbers no threads: number them in start order.
                    let next = std::sync::Arc::new(AtomicUsize::new(0));
                    builder.on_thread_start(move || hook(next.fetch_add(1, Ordering::Relaxed)));
                }
                let rt = builder.build().map_err(|e| system(e.to_string()))?;
                (elapsed, after) = timed!((0..items).for_each(|_| {
                    rt.spawn(async move { countdown.item() });
                }));
            }
            #[cfg(not(feature = "peers"))]
            PoolKind::Rayon | PoolKind::RayonScope | PoolKind::Tokio => {
                return Err(WorkloadError::BadParameter {
                    workload: "spawn",
                    message: format!(
                        "--pool {}: this coretune was built without the `peers` feature \
                         (rayon and tokio)",
                        pool.name()
                    ),
                });
            }
            PoolKind::Crossbeam => {
                let p = coretune_pool::peers::InjectorPool::new(threads);
                (elapsed, after) =
                    timed!((0..items).for_each(|_| p.spawn(move || countdown.item())));
            }
            PoolKind::Mutex => {
                let p = coretune_pool::peers::MutexPool::new(threads);
                (elapsed, after) =
                    timed!((0..items).for_each(|_| p.spawn(move || countdown.item())));
            }
        }
        let main = sys::current_tid().unwrap_or(0);
        for (worker, (&tid, &(n, cpu))) in after
            .iter()
            .filter(|(tid, _)| **tid != main && !before.contains_key(tid))
            .enumerate()
        {
            tracker.push(ThreadRecord {
                worker,
                tid,
                cpus_seen: cpu.map(|c| (c, 1)).into_iter().collect(),
                migrations: Some(n),
                migrations_source: Some(MigrationSource::SchedStat),
                ctx_switches: None,
            });
        }
        #[allow(clippy::cast_precision_loss)]
        let amount = items as f64;
        Ok(RunOutput {
            work: Work {
                amount,
                unit: Unit::NsPerItem,
                kernel_time: Some(elapsed),
            },
            result: Counts {
                items,
                remaining: countdown.remaining(),
            },
        })
    }

    fn verify(&self, c: &Counts) -> Result<(), String> {
        if c.remaining != 0 {
            // Above `items`: it wrapped, an item ran twice. Otherwise items were lost (the main
            // thread would not have woken, unless the count was corrupted).
            return Err(format!(
                "spawn: countdown of {} items ended at {} (0 when every item runs once)",
                c.items, c.remaining
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::workload::run_measured;

    #[test]
    fn every_pool_runs_every_item_once() {
        let built = |p: &PoolKind| {
            cfg!(feature = "peers")
                || !matches!(p, PoolKind::Rayon | PoolKind::RayonScope | PoolKind::Tokio)
        };
        for pool in PoolKind::ALL.into_iter().filter(built) {
            let w = Spawn::new(Params {
                items: 20_000,
                pool,
                batch: false,
            })
            .unwrap();
            let r = run_measured(&w, &RunConfig::threads(2)).unwrap();
            assert!(r.verified, "{}: {:?}", pool.name(), r.verify_error);
            assert_eq!(r.throughput.unit, Unit::NsPerItem);
            assert!(r.throughput.value > 0.0);
        }
        let batch = Spawn::new(Params {
            items: 20_000,
            pool: PoolKind::Coretune,
            batch: true,
        })
        .unwrap();
        assert!(
            run_measured(&batch, &RunConfig::threads(2))
                .unwrap()
                .verified
        );
    }

    #[test]
    #[cfg(feature = "peers")]
    fn start_hook_reaches_the_pool_threads() {
        use std::sync::Arc;
        for pool in [PoolKind::Coretune, PoolKind::Rayon, PoolKind::Tokio] {
            let seen = Arc::new(AtomicUsize::new(0));
            let seen2 = Arc::clone(&seen);
            let config = RunConfig {
                start_hook: Some(Arc::new(move |_| {
                    seen2.fetch_add(1, Ordering::Relaxed);
                })),
                ..RunConfig::threads(2)
            };
            let w = Spawn::new(Params {
                items: 1000,
                pool,
                batch: false,
            })
            .unwrap();
            run_measured(&w, &config).unwrap();
            // rayon neither waits for its threads to start nor joins them on drop: a worker that
            // ran no item may call the hook after the run. Every worker calls it eventually.
            let deadline = Instant::now() + Duration::from_secs(10);
            while seen.load(Ordering::Relaxed) < 2 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            assert!(seen.load(Ordering::Relaxed) >= 2, "{}", pool.name());
        }
    }

    #[test]
    fn verification_catches_a_lost_item_and_bad_parameters_are_errors() {
        let w = Spawn::new(Params::for_size(Size::Small)).unwrap();
        let mut out = w
            .run(&RunConfig::threads(2), &ThreadTracker::new())
            .unwrap();
        assert_eq!(w.verify(&out.result), Ok(()));
        out.result.remaining = usize::MAX;
        assert!(w.verify(&out.result).unwrap_err().contains("ended at"));
        let err = Spawn::new(Params {
            items: 10,
            pool: PoolKind::Rayon,
            batch: true,
        })
        .unwrap_err();
        assert!(err.to_string().contains("--batch"), "{err}");
        assert!(
            "nope"
                .parse::<PoolKind>()
                .unwrap_err()
                .contains("unknown pool 'nope'")
        );
    }
}
