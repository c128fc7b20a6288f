//! Pool overhead: the main thread queues N empty work items, each decrements a shared
//! counter and the last one signals the main thread; reported as wall time / N.
//!
//! `cargo bench -p coretune-pool --features peers --bench spawn` (the peer pools are
//! behind that feature) runs N = 10,000,000, 5 repetitions
//! (median reported, workloads interleaved per repetition); `SPAWN_BENCH_ONLY=text`
//! keeps the row named `text`, or else the rows whose name contains it. Without `--bench` (as under
//! `cargo test --benches`) it is a smoke test: N = 10,000, 1 repetition.
//!
//! Also measured: coretune batch submission, scope, a ~1 µs task, idle CPU use of a
//! pool, and wake-up latency of a single spawn into a sleeping pool.

use coretune_pool::ThreadPool;
use std::hint::black_box;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Workers in every pool: this machine has 2 cores.
const THREADS: usize = 2;

use coretune_pool::peers::Countdown;

/// ~1 µs of dependent integer arithmetic (xorshift rounds; `ROUNDS` calibrated on this
/// machine: see `calibrate_work` in the output).
const ROUNDS: u64 = 700;
fn work(seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..ROUNDS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

/// Wall time and process CPU time (user + system, all threads) of one run.
#[derive(Clone, Copy)]
struct Cost {
    wall: Duration,
    cpu: Duration,
}

type Bench = fn(usize) -> Cost;

/// Times `queue(countdown)` plus the wait for the last item.
fn timed(n: usize, queue: impl FnOnce(&'static Countdown)) -> Cost {
    let countdown = Countdown::leak(n);
    let cpu = cpu_time().unwrap_or_default();
    let start = Instant::now();
    queue(countdown);
    countdown.wait();
    Cost {
        wall: start.elapsed(),
        cpu: cpu_time().unwrap_or_default().saturating_sub(cpu),
    }
}

fn coretune_pool() -> ThreadPool {
    ThreadPool::new(THREADS).expect("2 threads start")
}

fn coretune_spawn(n: usize) -> Cost {
    let pool = coretune_pool();
    timed(n, |c| (0..n).for_each(|_| pool.spawn(move || c.item())))
}

fn coretune_batch(n: usize) -> Cost {
    let pool = coretune_pool();
    timed(n, |c| pool.spawn_batch((0..n).map(|_| move || c.item())))
}

fn coretune_scope(n: usize) -> Cost {
    let pool = coretune_pool();
    timed(n, |c| {
        pool.scope(|s| (0..n).for_each(|_| s.spawn(move |_| c.item())))
    })
}

fn coretune_spawn_1us(n: usize) -> Cost {
    let pool = coretune_pool();
    let n = n / 10;
    let d = timed(n, |c| {
        (0..n).for_each(|i| {
            pool.spawn(move || {
                black_box(work(i as u64));
                c.item();
            })
        })
    });
    // Reported per item of the 10× smaller run.
    Cost {
        wall: d.wall * 10,
        cpu: d.cpu * 10,
    }
}

fn rayon_pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(THREADS)
        .build()
        .expect("2 threads start")
}

fn rayon_spawn(n: usize) -> Cost {
    let pool = rayon_pool();
    timed(n, |c| (0..n).for_each(|_| pool.spawn(move || c.item())))
}

fn rayon_scope(n: usize) -> Cost {
    let pool = rayon_pool();
    timed(n, |c| {
        pool.scope(|s| (0..n).for_each(|_| s.spawn(move |_| c.item())))
    })
}

fn tokio_spawn(n: usize) -> Cost {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(THREADS)
        .build()
        .expect("2 threads start");
    let d = timed(n, |c| {
        (0..n).for_each(|_| {
            runtime.spawn(async move { c.item() });
        })
    });
    drop(runtime);
    d
}

fn injector_spawn(n: usize) -> Cost {
    let pool = coretune_pool::peers::InjectorPool::new(THREADS);
    timed(n, |c| (0..n).for_each(|_| pool.spawn(move || c.item())))
}

fn mutex_spawn(n: usize) -> Cost {
    let pool = coretune_pool::peers::MutexPool::new(THREADS);
    timed(n, |c| (0..n).for_each(|_| pool.spawn(move || c.item())))
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// CPU time (user + system) of this process, from `/proc/self/stat` (Linux).
fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // USER_HZ is 100 on every Linux ABI Rust targets (proc(5), sysconf(_SC_CLK_TCK)).
    Some(Duration::from_millis(ticks * 10))
}

fn idle_cpu(window: Duration) {
    let pool = coretune_pool();
    pool.par_for(0..1000, 1, |i| {
        black_box(i);
    });
    std::thread::sleep(Duration::from_millis(100));
    let (Some(before), wall) = (cpu_time(), Instant::now()) else {
        println!("idle pool CPU: /proc/self/stat unavailable");
        return;
    };
    std::thread::sleep(window);
    let used = cpu_time().unwrap_or(before) - before;
    println!(
        "idle pool CPU ({THREADS} workers, {:.1} s): {:.2} % of one core (tick resolution 10 ms)",
        wall.elapsed().as_secs_f64(),
        100.0 * used.as_secs_f64() / wall.elapsed().as_secs_f64()
    );
}

/// Single spawn into a pool whose workers are asleep (after a 2 ms gap, long past their
/// 32-round search: `tests/idle.rs` sees them asleep 50 ms after work), time from before
/// `spawn` to the task's first instruction.
fn wake_latency(samples: usize) {
    let pool = coretune_pool();
    let rayon = rayon_pool();
    let run = |name: &str, spawn: &dyn Fn(Box<dyn FnOnce() + Send>)| {
        let (tx, rx) = mpsc::channel();
        let mut latencies: Vec<f64> = (0..samples)
            .map(|_| {
                std::thread::sleep(Duration::from_millis(2));
                let tx = tx.clone();
                let start = Instant::now();
                spawn(Box::new(move || {
                    tx.send(start.elapsed()).expect("main waits")
                }));
                rx.recv().expect("the task sends").as_secs_f64() * 1e6
            })
            .collect();
        latencies.sort_by(f64::total_cmp);
        let p99 = latencies[(latencies.len() * 99 / 100).min(latencies.len() - 1)];
        println!(
            "wake-up latency {name:<16} median {:6.1} µs   p99 {:6.1} µs   ({samples} samples)",
            latencies[latencies.len() / 2],
            p99
        );
    };
    run("coretune spawn", &|task| pool.spawn(task));
    run("rayon spawn", &|task| rayon.spawn(task));
}

fn main() {
    let full = std::env::args().any(|arg| arg == "--bench");
    let (n, reps) = if full { (10_000_000, 5) } else { (10_000, 1) };
    let start = Instant::now();
    black_box(work(1));
    let calibrate = 1000;
    let t = Instant::now();
    for i in 0..calibrate {
        black_box(work(i));
    }
    println!(
        "calibrate_work: {:.0} ns per ~1 µs task body (single thread)",
        t.elapsed().as_nanos() as f64 / calibrate as f64
    );
    // The same bodies on THREADS plain threads: the floor for the 1 µs row, per item.
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                (0..calibrate * 100).for_each(|i| {
                    black_box(work(i));
                })
            });
        }
    });
    println!(
        "calibrate_work: {:.0} ns per item with {THREADS} plain threads (no pool)",
        t.elapsed().as_nanos() as f64 / (calibrate * 100 * THREADS as u64) as f64
    );
    let benches: [(&str, Bench); 9] = [
        ("coretune spawn", coretune_spawn),
        ("coretune batch", coretune_batch),
        ("coretune scope", coretune_scope),
        ("coretune spawn 1µs", coretune_spawn_1us),
        ("rayon::spawn", rayon_spawn),
        ("rayon::scope", rayon_scope),
        ("tokio spawn", tokio_spawn),
        ("crossbeam Injector", injector_spawn),
        ("Mutex+Condvar", mutex_spawn),
    ];
    // `SPAWN_BENCH_ONLY=coretune` keeps the rows whose name contains that text, or
    // only the row of that exact name if there is one.
    let only = std::env::var("SPAWN_BENCH_ONLY").unwrap_or_default();
    let exact = benches.iter().any(|(name, _)| *name == only);
    let benches: Vec<_> = benches
        .into_iter()
        .filter(|(name, _)| {
            if exact {
                *name == only
            } else {
                name.contains(&only)
            }
        })
        .collect();
    let mut samples: Vec<Vec<Cost>> = vec![Vec::new(); benches.len()];
    for _ in 0..reps {
        for ((_, bench), samples) in benches.iter().zip(&mut samples) {
            samples.push(bench(n));
        }
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("{n} items, {THREADS} worker threads, median of {reps}; /proc/loadavg {load}");
    println!(
        "{:<20} {:>10} {:>10} {:>10} {:>8} {:>12}",
        "pool", "ns/item", "min", "max", "ratio", "CPU ns/item"
    );
    let per_item = |d: Duration| d.as_nanos() as f64 / n as f64;
    let wall = |samples: &[Cost]| median(samples.iter().map(|c| per_item(c.wall)).collect());
    let base = samples.first().map_or(1.0, |s| wall(s));
    for ((name, _), samples) in benches.iter().zip(&samples) {
        let walls: Vec<f64> = samples.iter().map(|c| per_item(c.wall)).collect();
        let min = walls.iter().copied().fold(f64::INFINITY, f64::min);
        let max = walls.iter().copied().fold(0.0, f64::max);
        let cpu = median(samples.iter().map(|c| per_item(c.cpu)).collect());
        let med = wall(samples);
        println!(
            "{name:<20} {med:>10.1} {min:>10.1} {max:>10.1} {:>7.2}x {cpu:>12.1}",
            med / base
        );
    }
    idle_cpu(if full {
        Duration::from_secs(1)
    } else {
        Duration::from_millis(200)
    });
    wake_latency(if full { 500 } else { 20 });
    println!("total {:.1} s", start.elapsed().as_secs_f64());
}
