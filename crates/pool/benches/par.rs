//! Data parallelism: coretune-pool's `sum`, `map_collect`, `reduce`, `for_each`, recursive
//! `join` and its parallel iterators (`iter …` workloads: map/filter/sum, collect,
//! fold + reduce, chunks + zip + enumerate, the sorts) against rayon's `par_iter` and
//! `rayon::join` on the same data, in the same process and the same rounds (interleaved;
//! which of the two goes first alternates by round). Every run checks its result against a
//! serial computation.
//!
//! `cargo bench -p coretune-pool --bench par` runs the full sizes (10M-item sum, 5M-item
//! map-collect and for-each, a skewed reduce, 1M-leaf joins), 11 rounds; `-- --quick`
//! runs the same sizes, 3 rounds (a smoke run, a few seconds); without `--bench` (as
//! under `cargo test --benches`) tiny sizes, 1 round.
//!
//! Options (after `--`): `--threads N` (default: the CPU budget) — each workload runs on a
//! pool of N workers and on an oversubscribed one of 2N; `--busy` starts one busy-looping
//! thread per CPU in this process for the whole run (contention; or start such loops
//! outside and pass `--label contended` to have it printed); `--only TEXT` keeps the
//! workloads whose name contains TEXT.
//!
//! Reported per workload and pool size: the median wall time of each side, its spread
//! (min–max over the rounds) and the ratio coretune/rayon (below 1: coretune faster).

use rayon::prelude::*;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Sizes of one run.
#[derive(Clone, Copy)]
struct Sizes {
    sum: usize,
    map: usize,
    skew: usize,
    for_each: usize,
    join: usize,
    rounds: usize,
}

const FULL: Sizes = Sizes {
    sum: 10_000_000,
    map: 5_000_000,
    skew: 400_000,
    for_each: 5_000_000,
    join: 1 << 20,
    rounds: 11,
};
const QUICK: Sizes = Sizes { rounds: 3, ..FULL };
const SMOKE: Sizes = Sizes {
    sum: 10_000,
    map: 10_000,
    skew: 2_000,
    for_each: 10_000,
    join: 1 << 10,
    rounds: 1,
};

/// xorshift rounds: about 1 ns each, dependent.
fn work(seed: u64, rounds: u32) -> u64 {
    let mut x = seed | 1;
    for _ in 0..rounds {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

/// The skewed item: the first 10 % of the items cost 100× the others (2,000 rounds
/// against 20).
fn skewed(i: usize, n: usize) -> u64 {
    let rounds = if i < n / 10 { 2000 } else { 20 };
    work(i as u64, rounds)
}

/// Leaves of the recursive join: ranges of at most this many indices.
const JOIN_LEAF: usize = 16;

fn join_sum_coretune(range: std::ops::Range<usize>) -> u64 {
    if range.len() <= JOIN_LEAF {
        return range.map(|i| i as u64).sum();
    }
    let mid = range.start + range.len() / 2;
    let (a, b) = coretune_pool::join(
        || join_sum_coretune(range.start..mid),
        || join_sum_coretune(mid..range.end),
    );
    a + b
}

fn join_sum_rayon(range: std::ops::Range<usize>) -> u64 {
    if range.len() <= JOIN_LEAF {
        return range.map(|i| i as u64).sum();
    }
    let mid = range.start + range.len() / 2;
    let (a, b) = rayon::join(
        || join_sum_rayon(range.start..mid),
        || join_sum_rayon(mid..range.end),
    );
    a + b
}

/// The data and expected results of every workload, computed serially once.
struct Data {
    sizes: Sizes,
    values: Vec<u64>,
    sum_expected: u64,
    map_expected: Vec<u64>,
    skew_expected: u64,
    join_expected: u64,
    /// `iter map-filter-sum`: the sum of the even squares.
    even_squares: u64,
    /// `iter fold-reduce`: how many values fall in each of 16 buckets.
    histogram: [u64; 16],
    /// The values of the map workload, sorted.
    sorted: Vec<u64>,
    /// `iter chunks-zip-enum`: [`block_op`] of each block of the map workload's values.
    blocks: Vec<u64>,
}

impl Data {
    fn new(sizes: Sizes) -> Self {
        let values: Vec<u64> = (0..sizes.sum.max(sizes.map) as u64)
            .map(|i| i % 1000)
            .collect();
        let sum_expected = values[..sizes.sum].iter().map(|x| x * x).sum();
        let map_expected = values[..sizes.map].iter().map(|x| x * 3 + 1).collect();
        let skew_expected = (0..sizes.skew)
            .map(|i| skewed(i, sizes.skew))
            .fold(0, u64::wrapping_add);
        let join_expected = (0..sizes.join as u64).sum();
        let even_squares = values[..sizes.sum]
            .iter()
            .map(|x| x * x)
            .filter(|x| x % 2 == 0)
            .sum();
        let mut histogram = [0; 16];
        for x in &values[..sizes.sum] {
            histogram[(x % 16) as usize] += 1;
        }
        let mut sorted = values[..sizes.map].to_vec();
        sorted.sort_unstable();
        let blocks = values[..sizes.map]
            .iter()
            .enumerate()
            .map(|(j, x)| x * 3 + 1 + (j / 1000) as u64)
            .collect();
        Data {
            blocks,
            even_squares,
            histogram,
            sorted,
            sizes,
            values,
            sum_expected,
            map_expected,
            skew_expected,
            join_expected,
        }
    }
}

/// One workload: a name, the coretune run and the rayon run (each returns its wall time
/// and panics if its result is wrong).
struct Workload {
    name: &'static str,
    coretune: fn(&coretune_pool::ThreadPool, &Data) -> Duration,
    rayon: fn(&rayon::ThreadPool, &Data) -> Duration,
}

fn timed<R>(f: impl FnOnce() -> R) -> (R, Duration) {
    let start = Instant::now();
    let result = f();
    (result, start.elapsed())
}

fn workloads() -> Vec<Workload> {
    vec![
        Workload {
            name: "sum of squares",
            coretune: |pool, data| {
                let v = &data.values[..data.sizes.sum];
                let (sum, t) = timed(|| pool.sum(v, |x| x * x));
                assert_eq!(sum, data.sum_expected, "coretune sum");
                t
            },
            rayon: |pool, data| {
                let v = &data.values[..data.sizes.sum];
                let (sum, t) = timed(|| pool.install(|| v.par_iter().map(|x| x * x).sum::<u64>()));
                assert_eq!(sum, data.sum_expected, "rayon sum");
                t
            },
        },
        Workload {
            name: "map-collect",
            coretune: |pool, data| {
                let v = &data.values[..data.sizes.map];
                let (out, t) = timed(|| pool.map_collect(v, |x| x * 3 + 1));
                assert!(out == data.map_expected, "coretune map-collect");
                drop(black_box(out));
                t
            },
            rayon: |pool, data| {
                let v = &data.values[..data.sizes.map];
                let (out, t) = timed(|| {
                    pool.install(|| v.par_iter().map(|x| x * 3 + 1).collect::<Vec<u64>>())
                });
                assert!(out == data.map_expected, "rayon map-collect");
                drop(black_box(out));
                t
            },
        },
        Workload {
            name: "skewed reduce",
            coretune: |pool, data| {
                let n = data.sizes.skew;
                let (r, t) = timed(|| pool.reduce(0..n, || 0, |i| skewed(i, n), u64::wrapping_add));
                assert_eq!(r, data.skew_expected, "coretune skewed");
                t
            },
            rayon: |pool, data| {
                let n = data.sizes.skew;
                let (r, t) = timed(|| {
                    pool.install(|| {
                        (0..n)
                            .into_par_iter()
                            .map(|i| skewed(i, n))
                            .reduce(|| 0, u64::wrapping_add)
                    })
                });
                assert_eq!(r, data.skew_expected, "rayon skewed");
                t
            },
        },
        Workload {
            name: "for_each 5M-style",
            coretune: |pool, data| {
                let mut v = vec![1u32; data.sizes.for_each];
                let ((), t) = timed(|| pool.for_each(&mut v, |x| *x += 1));
                assert!(v.iter().all(|&x| x == 2), "coretune for_each");
                t
            },
            rayon: |pool, data| {
                let mut v = vec![1u32; data.sizes.for_each];
                let ((), t) = timed(|| pool.install(|| v.par_iter_mut().for_each(|x| *x += 1)));
                assert!(v.iter().all(|&x| x == 2), "rayon for_each");
                t
            },
        },
        Workload {
            name: "recursive join",
            coretune: |pool, data| {
                let (r, t) = timed(|| pool.install(|| join_sum_coretune(0..data.sizes.join)));
                assert_eq!(r, data.join_expected, "coretune join");
                t
            },
            rayon: |pool, data| {
                let (r, t) = timed(|| pool.install(|| join_sum_rayon(0..data.sizes.join)));
                assert_eq!(r, data.join_expected, "rayon join");
                t
            },
        },
        Workload {
            name: "iter map-filter-sum",
            coretune: |pool, data| iter_ops::map_filter_sum(pool, data),
            rayon: |pool, data| {
                let v = &data.values[..data.sizes.sum];
                let (r, t) = timed(|| {
                    pool.install(|| {
                        v.par_iter()
                            .map(|x| x * x)
                            .filter(|x| x % 2 == 0)
                            .sum::<u64>()
                    })
                });
                assert_eq!(r, data.even_squares, "rayon map-filter-sum");
                t
            },
        },
        Workload {
            name: "iter collect",
            coretune: |pool, data| iter_ops::collect(pool, data),
            rayon: |pool, data| {
                let v = &data.values[..data.sizes.map];
                let (out, t) = timed(|| {
                    pool.install(|| v.par_iter().map(|x| x * 3 + 1).collect::<Vec<u64>>())
                });
                assert!(out == data.map_expected, "rayon collect");
                t
            },
        },
        Workload {
            name: "iter fold-reduce",
            coretune: |pool, data| iter_ops::fold_reduce(pool, data),
            rayon: |pool, data| {
                let v = &data.values[..data.sizes.sum];
                let (r, t) = timed(|| {
                    pool.install(|| {
                        v.par_iter()
                            .fold(
                                || [0u64; 16],
                                |mut h, x| {
                                    h[(x % 16) as usize] += 1;
                                    h
                                },
                            )
                            .reduce(|| [0u64; 16], add_histograms)
                    })
                });
                assert_eq!(r, data.histogram, "rayon fold-reduce");
                t
            },
        },
        Workload {
            name: "iter chunks-zip-enum",
            coretune: |pool, data| iter_ops::chunks_zip_enumerate(pool, data),
            rayon: |pool, data| {
                let v = &data.values[..data.sizes.map];
                let mut out = vec![0u64; v.len()];
                let ((), t) = timed(|| {
                    pool.install(|| {
                        out.par_chunks_mut(1000)
                            .zip(v.par_chunks(1000))
                            .enumerate()
                            .for_each(|(block, (o, i))| block_op(block, o, i));
                    })
                });
                assert!(out == data.blocks, "rayon chunks-zip-enumerate");
                t
            },
        },
        Workload {
            name: "iter sort unstable",
            coretune: |pool, data| iter_ops::sort(pool, data, false),
            rayon: |pool, data| {
                let mut v = data.values[..data.sizes.map].to_vec();
                let ((), t) = timed(|| pool.install(|| v.par_sort_unstable()));
                assert!(v == data.sorted, "rayon par_sort_unstable");
                t
            },
        },
        Workload {
            name: "iter sort stable",
            coretune: |pool, data| iter_ops::sort(pool, data, true),
            rayon: |pool, data| {
                let mut v = data.values[..data.sizes.map].to_vec();
                let ((), t) = timed(|| pool.install(|| v.par_sort()));
                assert!(v == data.sorted, "rayon par_sort");
                t
            },
        },
    ]
}

/// Adds histogram `b` into `a`.
fn add_histograms(mut a: [u64; 16], b: [u64; 16]) -> [u64; 16] {
    for (a, b) in a.iter_mut().zip(b) {
        *a += b;
    }
    a
}

/// The body of the chunks + zip + enumerate workload: block `block` (of 1,000 items) of
/// the output is `3x + 1 + block` of the input's.
fn block_op(block: usize, out: &mut [u64], input: &[u64]) {
    for (o, i) in out.iter_mut().zip(input) {
        *o = i * 3 + 1 + block as u64;
    }
}

/// coretune-pool's parallel iterators: the same chains as the rayon side, with
/// coretune-pool's prelude (in a module of their own: both preludes name the same methods).
mod iter_ops {
    use super::{Data, add_histograms, block_op, timed};
    use coretune_pool::prelude::*;
    use std::time::Duration;

    pub(super) fn map_filter_sum(pool: &coretune_pool::ThreadPool, data: &Data) -> Duration {
        let v = &data.values[..data.sizes.sum];
        let (r, t) = timed(|| {
            pool.install(|| {
                v.par_iter()
                    .map(|x| x * x)
                    .filter(|x| x % 2 == 0)
                    .sum::<u64>()
            })
        });
        assert_eq!(r, data.even_squares, "coretune map-filter-sum");
        t
    }

    pub(super) fn collect(pool: &coretune_pool::ThreadPool, data: &Data) -> Duration {
        let v = &data.values[..data.sizes.map];
        let (out, t) =
            timed(|| pool.install(|| v.par_iter().map(|x| x * 3 + 1).collect::<Vec<u64>>()));
        assert!(out == data.map_expected, "coretune collect");
        t
    }

    pub(super) fn fold_reduce(pool: &coretune_pool::ThreadPool, data: &Data) -> Duration {
        let v = &data.values[..data.sizes.sum];
        let (r, t) = timed(|| {
            pool.install(|| {
                v.par_iter()
                    .fold(
                        || [0u64; 16],
                        |mut h, x| {
                            h[(x % 16) as usize] += 1;
                            h
                        },
                    )
                    .reduce(|| [0u64; 16], add_histograms)
            })
        });
        assert_eq!(r, data.histogram, "coretune fold-reduce");
        t
    }

    pub(super) fn chunks_zip_enumerate(pool: &coretune_pool::ThreadPool, data: &Data) -> Duration {
        let v = &data.values[..data.sizes.map];
        let mut out = vec![0u64; v.len()];
        let ((), t) = timed(|| {
            pool.install(|| {
                out.par_chunks_mut(1000)
                    .zip(v.par_chunks(1000))
                    .enumerate()
                    .for_each(|(block, (o, i))| block_op(block, o, i));
            })
        });
        assert!(out == data.blocks, "coretune chunks-zip-enumerate");
        t
    }

    pub(super) fn sort(pool: &coretune_pool::ThreadPool, data: &Data, stable: bool) -> Duration {
        let mut v = data.values[..data.sizes.map].to_vec();
        let ((), t) = if stable {
            timed(|| pool.install(|| v.par_sort()))
        } else {
            timed(|| pool.install(|| v.par_sort_unstable()))
        };
        assert!(v == data.sorted, "coretune sort");
        t
    }
}

/// 5M trivial items by hand: serial, `par_for` with chunk 64 (and chunk 1 in
/// full runs), against `for_each` (median of the rounds).
fn manual_chunks(pool: &coretune_pool::ThreadPool, n: usize, rounds: usize, full: bool) {
    use std::sync::atomic::AtomicU64;
    let median_of = |f: &dyn Fn() -> Duration| {
        let mut times: Vec<Duration> = (0..rounds).map(|_| f()).collect();
        times.sort();
        times[times.len() / 2]
    };
    let serial = median_of(&|| {
        let mut v = vec![1u32; n];
        let ((), t) = timed(|| v.iter_mut().for_each(|x| *x += 1));
        assert!(black_box(&v).iter().all(|&x| x == 2));
        t
    });
    let auto = median_of(&|| {
        let mut v = vec![1u32; n];
        let ((), t) = timed(|| pool.for_each(&mut v, |x| *x += 1));
        assert!(v.iter().all(|&x| x == 2));
        t
    });
    let chunk = |chunk: usize| {
        median_of(&|| {
            let v: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(1)).collect();
            let ((), t) = timed(|| {
                pool.par_for(0..n, chunk, |i| {
                    v[i].fetch_add(1, Ordering::Relaxed);
                })
            });
            assert!(v.iter().all(|x| x.load(Ordering::Relaxed) == 2));
            t
        })
    };
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    print!(
        "{n} trivial items, {} workers: serial {:.2} ms, for_each {:.2} ms, par_for chunk 64 {:.2} ms",
        pool.num_threads(),
        ms(serial),
        ms(auto),
        ms(chunk(64))
    );
    if full {
        print!(", chunk 1 {:.2} ms", ms(chunk(1)));
    }
    println!();
}

fn median(times: &[Duration]) -> f64 {
    let mut ms: Vec<f64> = times.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    ms[ms.len() / 2]
}

fn spread(times: &[Duration]) -> (f64, f64) {
    let ms = times.iter().map(|d| d.as_secs_f64() * 1e3);
    let min = ms.clone().fold(f64::INFINITY, f64::min);
    let max = ms.fold(0.0, f64::max);
    (min, max)
}

fn arg_value(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let full = args.iter().any(|a| a == "--bench");
    let quick = args.iter().any(|a| a == "--quick");
    let sizes = match (full, quick) {
        (true, false) => FULL,
        (true, true) => QUICK,
        (false, _) => SMOKE,
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = arg_value(&args, "--threads")
        .and_then(|t| t.parse().ok())
        .unwrap_or(cpus);
    let only = arg_value(&args, "--only").unwrap_or_default();
    let label = arg_value(&args, "--label").unwrap_or_default();
    let start = Instant::now();

    let stop = Arc::new(AtomicBool::new(false));
    let busy: Vec<_> = if args.iter().any(|a| a == "--busy") {
        (0..cpus)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let mut x = 1u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = black_box(work(x, 100));
                    }
                })
            })
            .collect()
    } else {
        Vec::new()
    };

    let data = Data::new(sizes);
    let workloads: Vec<Workload> = workloads()
        .into_iter()
        .filter(|w| w.name.contains(&only))
        .collect();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "{} CPUs, pools of {threads} and {} workers, {} rounds{}{}; /proc/loadavg {}",
        cpus,
        2 * threads,
        sizes.rounds,
        if busy.is_empty() {
            String::new()
        } else {
            format!(", {} busy threads", busy.len())
        },
        if label.is_empty() {
            String::new()
        } else {
            format!(", {label}")
        },
        load.trim()
    );
    println!(
        "{:<20} {:>7} {:>10} {:>17} {:>10} {:>17} {:>7}",
        "workload", "workers", "coretune", "(min-max)", "rayon", "(min-max)", "ratio"
    );
    for pool_threads in [threads, 2 * threads] {
        let coretune = coretune_pool::ThreadPool::new(pool_threads).expect("the pool starts");
        let rayon = rayon::ThreadPoolBuilder::new()
            .num_threads(pool_threads)
            .build()
            .expect("rayon's pool starts");
        for workload in &workloads {
            // One unmeasured run each: page faults of first use, workers awake.
            (workload.coretune)(&coretune, &data);
            (workload.rayon)(&rayon, &data);
            let (mut ours, mut theirs) = (Vec::new(), Vec::new());
            for round in 0..sizes.rounds {
                if round % 2 == 0 {
                    ours.push((workload.coretune)(&coretune, &data));
                    theirs.push((workload.rayon)(&rayon, &data));
                } else {
                    theirs.push((workload.rayon)(&rayon, &data));
                    ours.push((workload.coretune)(&coretune, &data));
                }
            }
            let (ours_min, ours_max) = spread(&ours);
            let (theirs_min, theirs_max) = spread(&theirs);
            println!(
                "{:<20} {:>7} {:>8.2}ms {:>7.2}-{:<8.2}ms {:>8.2}ms {:>7.2}-{:<8.2}ms {:>6.2}x",
                workload.name,
                pool_threads,
                median(&ours),
                ours_min,
                ours_max,
                median(&theirs),
                theirs_min,
                theirs_max,
                median(&ours) / median(&theirs)
            );
        }
        if only.is_empty() || "manual chunks".contains(&only) {
            manual_chunks(&coretune, sizes.for_each, sizes.rounds, full && !quick);
        }
    }
    stop.store(true, Ordering::Relaxed);
    for thread in busy {
        let _ = thread.join();
    }
    println!("total {:.1} s", start.elapsed().as_secs_f64());
}
