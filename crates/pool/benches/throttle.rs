//! The adaptive throttle against every fixed limit on the shapes where a limit matters: a
//! pool whose tasks are requests to a backend that collapses past a concurrency, a
//! contended spin lock, blocking I/O, mixed compute and I/O, and a backend whose knee moves
//! mid-run. Interleaved: each round runs every configuration of a shape once, in an order
//! rotated per round, so drift hits all alike.
//!
//! `cargo bench -p coretune-pool --bench throttle` runs every shape at its default size
//! (3 rounds of 2 s runs, the step 1 s + 2 s; about 4 minutes); `-- --quick` 1 round of
//! 0.5 s runs; without `--bench` (as under `cargo test --benches`) one tiny run of each.
//! Options (after `--`): `--only NAME` (backend, lock, io, mixed, step; repeatable),
//! `--rounds N`, `--seconds S`, `--label TEXT` (printed with each table).
//!
//! Each run builds a fresh pool (`--threads` workers of the shape) with a fresh throttle: a
//! fixed limit of the ladder 1, 2, 4, 8, 16, 32 (and 12 for the step), or
//! `Throttle::adaptive(AdaptiveConfig::default())`. Tasks respawn themselves (twice as many
//! outstanding as workers, so every worker always has work) until the run's time is up.
//! Printed per shape: every configuration's median throughput over the rounds, its
//! min–max, the median of its per-round ratio to the best fixed limit of the same round, and
//! for the adaptive one its limits at the end of each run; for the step, the time after the
//! change until the adaptive run's throughput over 250 ms first reaches 0.9 of the best
//! fixed limit's throughput after the change, and its throughput after the change as a ratio.

use coretune_pool::{AdaptiveConfig, ThreadPoolBuilder, Throttle};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// xorshift rounds: about 1 ns each, dependent.
fn work(rounds: u64) -> u64 {
    let mut x = rounds | 1;
    for _ in 0..rounds {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    black_box(x)
}

/// `work` rounds per microsecond on this machine, measured once.
fn rounds_per_us() -> u64 {
    static ROUNDS: OnceLock<u64> = OnceLock::new();
    *ROUNDS.get_or_init(|| {
        // The fastest of 20 short runs: a run the scheduler interrupted reads slow.
        let n = 200_000;
        let fastest = (0..20)
            .map(|_| {
                let start = Instant::now();
                work(n);
                start.elapsed()
            })
            .min()
            .expect("20 runs");
        (n as f64 / fastest.as_secs_f64() / 1e6).max(1.0) as u64
    })
}

/// Computes for about `us` microseconds of CPU time.
fn compute(us: u64) {
    work(us * rounds_per_us());
}

/// A backend whose latency grows with the requests in flight past its knee: a request that
/// finds `n` in flight (itself included) takes `base × max(1, n / knee)²`, so throughput
/// rises up to the knee and falls as `knee² / n` beyond it.
struct Backend {
    in_flight: AtomicUsize,
    knee: AtomicUsize,
    base: Duration,
}

impl Backend {
    fn request(&self) {
        let n = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        let over = (n as f64 / self.knee.load(Ordering::Relaxed) as f64).max(1.0);
        std::thread::sleep(self.base.mul_f64(over * over));
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A spin lock: waiters burn their CPU, and a holder descheduled holds everybody up.
struct SpinLock(AtomicBool);

impl SpinLock {
    fn with(&self, f: impl FnOnce()) {
        while self
            .0
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        f();
        self.0.store(false, Ordering::Release);
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Backend,
    Lock,
    Io,
    Mixed,
    Step,
}

impl Shape {
    const ALL: [Shape; 5] = [
        Shape::Backend,
        Shape::Lock,
        Shape::Io,
        Shape::Mixed,
        Shape::Step,
    ];

    fn name(self) -> &'static str {
        match self {
            Shape::Backend => "backend",
            Shape::Lock => "lock",
            Shape::Io => "io",
            Shape::Mixed => "mixed",
            Shape::Step => "step",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Shape::Backend => {
                "backend collapsing past 4 in flight (1 ms × max(1, n/4)²), 32 workers"
            }
            Shape::Lock => "spin lock held 20 µs of compute per task, 16 workers",
            Shape::Io => "blocking I/O: 1 ms sleep + 10 µs compute per task, 32 workers",
            Shape::Mixed => "mixed: 200 µs compute + 800 µs sleep per task, 32 workers",
            Shape::Step => {
                "step: the backend's knee moves from 4 to 12 a third into the run, 32 workers"
            }
        }
    }

    fn threads(self) -> usize {
        match self {
            Shape::Lock => 16,
            _ => 32,
        }
    }

    fn ladder(self) -> Vec<usize> {
        match self {
            Shape::Step => vec![1, 2, 4, 8, 12, 16, 32],
            _ => vec![1, 2, 4, 8, 16, 32],
        }
    }
}

/// What one task does, shared by the pool's tasks.
struct Load {
    shape: Shape,
    backend: Backend,
    lock: SpinLock,
    stop: AtomicBool,
    done: AtomicU64,
    outstanding: AtomicUsize,
}

impl Load {
    fn task(self: Arc<Self>) {
        match self.shape {
            Shape::Backend | Shape::Step => self.backend.request(),
            Shape::Lock => self.lock.with(|| compute(20)),
            Shape::Io => {
                std::thread::sleep(Duration::from_millis(1));
                compute(10);
            }
            Shape::Mixed => {
                compute(200);
                std::thread::sleep(Duration::from_micros(800));
            }
        }
        if self.stop.load(Ordering::Relaxed) {
            self.outstanding.fetch_sub(1, Ordering::SeqCst);
        } else {
            self.done.fetch_add(1, Ordering::Relaxed);
            coretune_pool::spawn(move || self.task());
        }
    }
}

/// One run's outcome.
struct Run {
    throughput: f64,
    /// Step: throughput after the change.
    after: f64,
    /// Step: completions counted every 50 ms from the change on.
    ticks: Vec<u64>,
    /// Adaptive: the limit at the end.
    limit: Option<usize>,
}

const TICK: Duration = Duration::from_millis(50);

fn run(shape: Shape, limit: Option<usize>, seconds: f64) -> Run {
    let threads = shape.threads();
    let throttle = Arc::new(match limit {
        Some(k) => Throttle::new(k),
        None => Throttle::adaptive(AdaptiveConfig::default()),
    });
    let pool = ThreadPoolBuilder::new()
        .num_threads(threads)
        .throttle(Arc::clone(&throttle))
        .build()
        .expect("a pool");
    let load = Arc::new(Load {
        shape,
        backend: Backend {
            in_flight: AtomicUsize::new(0),
            knee: AtomicUsize::new(4),
            base: Duration::from_millis(1),
        },
        lock: SpinLock(AtomicBool::new(false)),
        stop: AtomicBool::new(false),
        done: AtomicU64::new(0),
        outstanding: AtomicUsize::new(2 * threads),
    });
    let total = Duration::from_secs_f64(seconds);
    let step_at = total / 3;
    let start = Instant::now();
    for _ in 0..2 * threads {
        let load = Arc::clone(&load);
        pool.spawn(move || load.task());
    }
    let mut ticks = Vec::new();
    let mut at_step = 0;
    if shape == Shape::Step {
        std::thread::sleep(step_at.saturating_sub(start.elapsed()));
        load.backend.knee.store(12, Ordering::Relaxed);
        at_step = load.done.load(Ordering::Relaxed);
        let mut next = step_at + TICK;
        while next <= total {
            std::thread::sleep(next.saturating_sub(start.elapsed()));
            ticks.push(load.done.load(Ordering::Relaxed) - at_step);
            next += TICK;
        }
    }
    std::thread::sleep(total.saturating_sub(start.elapsed()));
    let done = load.done.load(Ordering::Relaxed);
    let elapsed = start.elapsed();
    load.stop.store(true, Ordering::Relaxed);
    while load.outstanding.load(Ordering::SeqCst) > 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let limit = throttle.is_adaptive().then(|| throttle.limit());
    drop(pool);
    Run {
        throughput: done as f64 / elapsed.as_secs_f64(),
        after: (done - at_step) as f64 / elapsed.saturating_sub(step_at).as_secs_f64(),
        ticks,
        limit,
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Seconds after the change until the throughput over 250 ms first reaches `target`.
fn time_to_reach(ticks: &[u64], target: f64) -> Option<f64> {
    let window = 5; // ticks of 50 ms
    (window..=ticks.len()).find_map(|end| {
        let before = if end == window {
            0
        } else {
            ticks[end - window - 1]
        };
        let rate = (ticks[end - 1] - before) as f64 / (TICK.as_secs_f64() * window as f64);
        (rate >= target).then(|| TICK.as_secs_f64() * end as f64)
    })
}

fn bench(shape: Shape, rounds: usize, seconds: f64, label: &str) {
    let seconds = if shape == Shape::Step {
        seconds * 1.5
    } else {
        seconds
    };
    let mut configs: Vec<Option<usize>> = shape.ladder().into_iter().map(Some).collect();
    configs.push(None);
    // runs[config][round]
    let mut runs: Vec<Vec<Run>> = configs.iter().map(|_| Vec::new()).collect();
    for round in 0..rounds {
        for i in 0..configs.len() {
            let c = (i + round) % configs.len();
            runs[c].push(run(shape, configs[c], seconds));
        }
    }
    let name = |c: Option<usize>| c.map_or("adaptive".to_string(), |k| k.to_string());
    let measure = |r: &Run| {
        if shape == Shape::Step {
            r.after
        } else {
            r.throughput
        }
    };
    let best: Vec<f64> = (0..rounds)
        .map(|round| {
            runs.iter()
                .zip(&configs)
                .filter(|(_, c)| c.is_some())
                .map(|(r, _)| measure(&r[round]))
                .fold(0.0, f64::max)
        })
        .collect();
    println!(
        "\n**{}** — {} ({} rounds of {:.1} s{}{})\n",
        shape.name(),
        shape.describe(),
        rounds,
        seconds,
        if shape == Shape::Step {
            "; throughput after the change"
        } else {
            ""
        },
        if label.is_empty() {
            String::new()
        } else {
            format!("; {label}")
        }
    );
    println!("| limit | per s (median) | min–max | ratio to best fixed (median) | per round |");
    println!("| --- | ---: | --- | ---: | --- |");
    for (c, config) in configs.iter().enumerate() {
        let mut values: Vec<f64> = runs[c].iter().map(measure).collect();
        let mut ratios: Vec<f64> = values.iter().zip(&best).map(|(v, b)| v / b).collect();
        let per_round = ratios
            .iter()
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(", ");
        let (lo, hi) = (
            values.iter().copied().fold(f64::INFINITY, f64::min),
            values.iter().copied().fold(0.0, f64::max),
        );
        println!(
            "| {} | {:.0} | {:.0}–{:.0} | {:.3} | {} |",
            name(*config),
            median(&mut values),
            lo,
            hi,
            median(&mut ratios),
            per_round
        );
    }
    let adaptive = &runs[configs.len() - 1];
    let limits: Vec<String> = adaptive
        .iter()
        .map(|r| r.limit.map_or("-".into(), |l| l.to_string()))
        .collect();
    println!(
        "\nadaptive: limit at the end of each run: {}",
        limits.join(", ")
    );
    if shape == Shape::Step {
        let times: Vec<String> = adaptive
            .iter()
            .zip(&best)
            .map(|(r, b)| {
                time_to_reach(&r.ticks, 0.9 * b).map_or("never".into(), |t| format!("{t:.2} s"))
            })
            .collect();
        println!(
            "adaptive: time after the change until its throughput over 250 ms reaches 0.9 of the best fixed limit's: {}",
            times.join(", ")
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let full = args.iter().any(|a| a == "--bench");
    let quick = args.iter().any(|a| a == "--quick");
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let only: Vec<String> = args
        .windows(2)
        .filter(|w| w[0] == "--only")
        .map(|w| w[1].clone())
        .collect();
    let (mut rounds, mut seconds) = match (full, quick) {
        (_, true) => (1, 0.5),
        (true, false) => (3, 2.0),
        (false, false) => (1, 0.05),
    };
    if let Some(r) = value("--rounds") {
        rounds = r.parse().expect("--rounds N");
    }
    if let Some(s) = value("--seconds") {
        seconds = s.parse().expect("--seconds S");
    }
    let label = value("--label").unwrap_or_default();
    println!(
        "throttle bench: {} CPUs, {} rounds, compute calibrated at {} rounds/µs",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        rounds,
        rounds_per_us()
    );
    for shape in Shape::ALL {
        if only.is_empty() || only.iter().any(|o| o == shape.name()) {
            bench(shape, rounds, seconds, &label);
        }
    }
}
