//! Helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One counter per task id, to check that each task ran exactly once.
#[derive(Debug)]
pub struct Tally(Vec<AtomicUsize>);

impl Tally {
    pub fn new(n: usize) -> Arc<Self> {
        Arc::new(Tally((0..n).map(|_| AtomicUsize::new(0)).collect()))
    }

    pub fn hit(&self, id: usize) {
        self.0[id].fetch_add(1, Ordering::Relaxed);
    }

    pub fn total(&self) -> usize {
        self.0.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// Panics naming the first task that did not run exactly once.
    pub fn assert_each_once(&self) {
        for (id, count) in self.0.iter().enumerate() {
            let count = count.load(Ordering::Relaxed);
            assert_eq!(count, 1, "task {id} ran {count} times");
        }
    }
}

/// Increments its counter when dropped: proves captured values are freed exactly once.
#[derive(Debug)]
pub struct DropCounter(pub Arc<AtomicUsize>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Spins (yielding) until `counter` reaches `target`; panics after 20 s.
pub fn wait_for(counter: &AtomicUsize, target: usize) {
    let start = std::time::Instant::now();
    while counter.load(Ordering::Acquire) < target {
        assert!(
            start.elapsed().as_secs() < 20,
            "stuck at {counter:?} of {target}"
        );
        std::thread::yield_now();
    }
}

/// Silences the default panic message for payloads tagged `"expected panic"`, so the
/// tests that panic on purpose keep the output readable.
pub fn quiet_expected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let expected = info
                .payload()
                .downcast_ref::<&str>()
                .is_some_and(|s| s.starts_with("expected panic"));
            if !expected {
                default(info);
            }
        }));
    });
}

/// The sleep protocol with more workers than CPUs (`src/sleep/README.md`): `rounds` rounds of
/// (a) one spawn after a gap that lands in some phase of the workers' way to sleep (busy,
/// spinning, yielding, announcing sleep, blocked), and (b) a job A that cannot finish before a
/// job B spawned after it has run, as a job waiting on a channel another job sends to: with
/// every other worker asleep, B must be handed on to a sleeper even when its push found A's
/// worker searching and woke nobody. A lost wake-up hangs a round, and `wait_for` fails after
/// 20 s naming the count it waited for.
pub fn no_wakeup_lost_with_many_workers(pool: &coretune_pool::ThreadPool, rounds: usize) {
    let done = Arc::new(AtomicUsize::new(0));
    let b_ran = Arc::new(AtomicUsize::new(0));
    for round in 0..rounds {
        match round % 4 {
            0 => {}
            1 => (0..(round % 97) * 10).for_each(|_| std::hint::spin_loop()),
            2 => std::thread::sleep(std::time::Duration::from_micros((round % 13) as u64 * 5)),
            _ => std::thread::sleep(std::time::Duration::from_micros(300)),
        }
        let done_a = Arc::clone(&done);
        let b_seen = Arc::clone(&b_ran);
        pool.spawn(move || {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            while b_seen.load(Ordering::Acquire) <= round {
                assert!(
                    std::time::Instant::now() < deadline,
                    "job B of round {round} never ran"
                );
                std::thread::yield_now();
            }
            done_a.fetch_add(1, Ordering::Release);
        });
        let b_set = Arc::clone(&b_ran);
        pool.spawn(move || {
            b_set.fetch_add(1, Ordering::Release);
        });
        wait_for(&done, round + 1);
    }
}

/// A pool of `workers` workers (unpinned) and its throttle, a fixed limit of `limit`.
pub fn throttled_pool(
    workers: usize,
    limit: usize,
) -> (coretune_pool::ThreadPool, Arc<coretune_pool::Throttle>) {
    let throttle = Arc::new(coretune_pool::Throttle::new(limit));
    let pool = coretune_pool::ThreadPoolBuilder::new()
        .num_threads(workers)
        .throttle(Arc::clone(&throttle))
        .build()
        .expect("an unpinned pool builds");
    (pool, throttle)
}
