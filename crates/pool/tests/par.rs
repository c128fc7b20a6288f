//! Data parallelism (`for_each`, `map_collect`, `reduce`, `sum`) against serial results,
//! `join` on workers, `install` and the free functions, the global pool (in child
//! processes: it is built once per process), `spawn_fifo` order and the exit handler.

mod util;

use coretune_pool::{ThreadPool, ThreadPoolBuilder};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use util::{DropCounter, Tally, quiet_expected_panics};

/// Sizes around the edges: empty, one, odd, a power of two and its neighbours, large.
const SIZES: [usize; 10] = [0, 1, 2, 3, 7, 64, 1023, 1025, 100_003, 2_000_000];

fn pools() -> Vec<ThreadPool> {
    [1, 2, 4]
        .into_iter()
        .map(|n| ThreadPool::new(n).expect("the pool starts"))
        .collect()
}

#[test]
fn sum_and_reduce_match_serial_on_slices_vectors_and_ranges() {
    for pool in pools() {
        for n in SIZES {
            let v: Vec<u64> = (0..n as u64).map(|i| i % 1000).collect();
            let serial: u64 = v.iter().map(|x| x * x).sum();
            assert_eq!(pool.sum(&v[..], |x| x * x), serial, "slice, n = {n}");
            assert_eq!(pool.sum(&v, |x| x * x), serial, "&Vec, n = {n}");
            let range_sum: usize = (0..n).sum();
            assert_eq!(pool.sum(0..n, |i| i), range_sum, "range, n = {n}");
            let offset: usize = (5..n + 5).sum();
            assert_eq!(pool.sum(5..n + 5, |i| i), offset, "offset range, n = {n}");
            let max = v.iter().copied().max();
            let reduced = pool.reduce(&v, || None, |x| Some(*x), |a, b| a.max(b));
            assert_eq!(reduced, max, "reduce max, n = {n}");
        }
    }
}

#[test]
fn reduce_keeps_the_order_of_a_non_commutative_operation() {
    let pool = ThreadPool::new(4).unwrap();
    for n in [0, 1, 5, 1000, 100_000] {
        // Concatenation is associative, not commutative.
        let expected: Vec<usize> = (0..n).collect();
        let concatenated = pool.reduce(
            0..n,
            Vec::new,
            |i| vec![i],
            |mut a, b| {
                a.extend(b);
                a
            },
        );
        assert_eq!(concatenated, expected, "n = {n}");
    }
}

#[test]
fn reversed_and_empty_ranges_have_no_items() {
    let pool = ThreadPool::new(2).unwrap();
    let (start, end) = (std::hint::black_box(10), std::hint::black_box(3));
    assert_eq!(pool.sum(start..end, |i| i), 0);
    assert!(pool.map_collect(start..end, |i| i).is_empty());
    pool.for_each(start..end, |_| panic!("no item expected"));
}

#[test]
fn map_collect_keeps_order_and_drops_each_result_once() {
    for pool in pools() {
        for n in SIZES {
            let v: Vec<u32> = (0..n as u32).collect();
            let expected: Vec<u64> = v.iter().map(|&x| u64::from(x) * 3 + 1).collect();
            assert_eq!(pool.map_collect(&v, |&x| u64::from(x) * 3 + 1), expected);
            let squares: Vec<usize> = pool.map_collect(0..n, |i| i * i);
            assert!(squares.iter().enumerate().all(|(i, &s)| s == i * i));
        }
        // Results that own memory: each dropped exactly once, with the vector.
        let drops = Arc::new(AtomicUsize::new(0));
        let out = pool.map_collect(0..10_000, |i| (i, DropCounter(Arc::clone(&drops))));
        assert!(out.iter().enumerate().all(|(i, (j, _))| i == *j));
        assert_eq!(drops.load(Ordering::Relaxed), 0);
        drop(out);
        assert_eq!(drops.load(Ordering::Relaxed), 10_000);
        let strings = pool.map_collect(0..1000, |i| i.to_string());
        assert_eq!(strings[999], "999");
    }
}

#[test]
fn for_each_visits_every_item_once() {
    for pool in pools() {
        for n in SIZES {
            let tally = Tally::new(n);
            pool.for_each(0..n, |i| tally.hit(i));
            tally.assert_each_once();
            let mut v = vec![1u32; n];
            pool.for_each(&mut v[..], |x| *x += 1);
            assert!(v.iter().all(|&x| x == 2), "&mut slice, n = {n}");
            pool.for_each(&mut v, |x| *x *= 5);
            assert!(v.iter().all(|&x| x == 10), "&mut Vec, n = {n}");
            let seen = AtomicUsize::new(0);
            pool.for_each(&v, |&x| {
                seen.fetch_add(x as usize, Ordering::Relaxed);
            });
            assert_eq!(seen.into_inner(), 10 * n);
        }
    }
}

#[test]
fn skewed_items_are_all_visited() {
    // The first 10 % of the items are 100× costlier: the splitting must still cover each
    // item once.
    let pool = ThreadPool::new(3).unwrap();
    let n = 20_000;
    let tally = Tally::new(n);
    let total = pool.reduce(
        0..n,
        || 0u64,
        |i| {
            tally.hit(i);
            let rounds = if i < n / 10 { 2000 } else { 20 };
            (0..rounds).fold(i as u64, |x, r| x.wrapping_mul(31).wrapping_add(r))
        },
        u64::wrapping_add,
    );
    tally.assert_each_once();
    let serial = (0..n)
        .map(|i| {
            let rounds = if i < n / 10 { 2000 } else { 20 };
            (0..rounds).fold(i as u64, |x, r| x.wrapping_mul(31).wrapping_add(r))
        })
        .fold(0, u64::wrapping_add);
    assert_eq!(total, serial);
}

#[test]
fn panics_propagate_and_the_pool_stays_usable() {
    quiet_expected_panics();
    for pool in pools() {
        let caught = catch_unwind(AssertUnwindSafe(|| {
            pool.for_each(0..100_000, |i| {
                if i == 77_777 {
                    panic!("expected panic in for_each");
                }
            })
        }));
        let payload = caught.expect_err("the panic reaches the caller");
        assert_eq!(
            payload.downcast_ref::<&str>(),
            Some(&"expected panic in for_each")
        );
        let caught = catch_unwind(AssertUnwindSafe(|| {
            pool.map_collect(0..10_000, |i| {
                if i == 5000 {
                    panic!("expected panic in map_collect");
                }
                i.to_string()
            })
        }));
        assert!(caught.is_err());
        let caught = catch_unwind(AssertUnwindSafe(|| {
            pool.sum(0..10_000, |i| {
                assert!(i != 0, "expected panic in sum");
                i
            })
        }));
        assert!(caught.is_err());
        let caught = catch_unwind(AssertUnwindSafe(|| {
            pool.install(|| panic!("expected panic in install"))
        }));
        assert!(caught.is_err());
        // Still usable, from outside and inside.
        assert_eq!(pool.sum(0..1000usize, |i| i), 499_500);
        assert_eq!(pool.install(|| pool.sum(0..1000usize, |i| i)), 499_500);
    }
}

#[test]
fn join_on_a_worker_propagates_panics_of_either_side_after_both_ran() {
    quiet_expected_panics();
    let pool = ThreadPool::new(2).unwrap();
    for round in 0..200 {
        let ran = AtomicUsize::new(0);
        let result = catch_unwind(AssertUnwindSafe(|| {
            pool.install(|| {
                coretune_pool::join(
                    || {
                        ran.fetch_add(1, Ordering::SeqCst);
                        if round % 2 == 0 {
                            panic!("expected panic in a");
                        }
                    },
                    || {
                        ran.fetch_add(1, Ordering::SeqCst);
                        if round % 3 == 0 {
                            panic!("expected panic in b");
                        }
                    },
                )
            })
        }));
        assert_eq!(ran.load(Ordering::SeqCst), 2, "round {round}: both ran");
        match (round % 2 == 0, round % 3 == 0) {
            (false, false) => assert!(result.is_ok()),
            (true, _) => assert_eq!(
                result.unwrap_err().downcast_ref::<&str>(),
                Some(&"expected panic in a"),
                "a's panic wins"
            ),
            (false, true) => assert_eq!(
                result.unwrap_err().downcast_ref::<&str>(),
                Some(&"expected panic in b")
            ),
        }
    }
}

#[test]
fn recursive_join_on_workers_matches_serial() {
    fn sum(range: std::ops::Range<u64>) -> u64 {
        if range.end - range.start <= 4 {
            return range.sum();
        }
        let mid = range.start + (range.end - range.start) / 2;
        let (a, b) = coretune_pool::join(|| sum(range.start..mid), || sum(mid..range.end));
        a + b
    }
    for pool in pools() {
        for n in [0u64, 1, 5, 1000, 100_001] {
            assert_eq!(pool.install(|| sum(0..n)), (0..n).sum::<u64>());
            // ThreadPool::join from a worker of the pool takes the same path.
            let (a, b) = pool.install(|| pool.join(|| sum(0..n), || sum(n..2 * n)));
            assert_eq!(a + b, (0..2 * n).sum::<u64>());
        }
    }
}

#[test]
fn nested_use_inside_scope_join_and_for_each() {
    let pool = ThreadPool::new(3).unwrap();
    let v: Vec<u64> = (0..10_000).collect();
    let serial: u64 = v.iter().sum();
    let mut results = [0u64; 4];
    pool.scope(|s| {
        for slot in &mut results {
            let (pool, v) = (&pool, &v);
            s.spawn(move |_| *slot = pool.sum(v, |x| *x));
        }
    });
    assert_eq!(results, [serial; 4]);
    let (a, b) = pool.join(|| pool.sum(&v, |x| *x), || pool.map_collect(&v, |x| x + 1));
    assert_eq!(a, serial);
    assert_eq!(b[9999], 10_000);
    // Nested data parallelism: a for_each whose items run a sum each.
    let rows: Vec<Vec<u64>> = (0..50).map(|r| (0..r * 100).collect()).collect();
    let sums = pool.map_collect(&rows, |row| pool.sum(row, |x| *x));
    let expected: Vec<u64> = rows.iter().map(|row| row.iter().sum()).collect();
    assert_eq!(sums, expected);
    // From inside a detached task.
    let (tx, rx) = mpsc::channel();
    let shared = Arc::new(pool);
    let inner = Arc::clone(&shared);
    shared.spawn(move || tx.send(inner.sum(0..1000usize, |i| i)).unwrap());
    assert_eq!(rx.recv().unwrap(), 499_500);
}

#[test]
fn a_throttled_pool_runs_data_parallel_work() {
    let (pool, throttle) = util::throttled_pool(3, 1);
    let tally = Tally::new(50_000);
    pool.for_each(0..50_000, |i| {
        assert!(throttle.in_use() <= 1);
        tally.hit(i);
    });
    tally.assert_each_once();
    assert_eq!(pool.sum(0..1000usize, |i| i), 499_500);
}

#[test]
fn data_parallel_calls_report_a_completion_per_item_to_the_throttle() {
    let (pool, throttle) = util::throttled_pool(2, 2);
    let before = throttle.completions();
    let total: u64 = pool.sum(0..100_000, |i| i as u64);
    assert_eq!(total, 4_999_950_000);
    let after_sum = throttle.completions();
    assert!(
        after_sum - before >= 100_000,
        "{} completions",
        after_sum - before
    );
    let mut values = vec![1u32; 10_000];
    pool.for_each(&mut values, |x| *x += 1);
    let after_for_each = throttle.completions();
    assert!(
        after_for_each - after_sum >= 10_000,
        "{} completions",
        after_for_each - after_sum
    );
    let squares = pool.map_collect(&values, |x| x * x);
    assert_eq!(squares.len(), 10_000);
    assert!(throttle.completions() - after_for_each >= 10_000);
}

#[test]
fn install_runs_on_a_worker_and_free_functions_use_its_pool() {
    let pool = ThreadPool::new(3).unwrap();
    assert_eq!(pool.current_thread_index(), None);
    let (index, threads) = pool.install(|| {
        (
            pool.current_thread_index(),
            coretune_pool::current_num_threads(),
        )
    });
    assert!(index.is_some_and(|i| i < 3));
    assert_eq!(threads, 3);
    // Free join and scope inside install run on this pool's workers.
    let (a, b) = pool.install(|| {
        coretune_pool::join(
            || pool.current_thread_index(),
            || pool.current_thread_index(),
        )
    });
    assert!(a.is_some() && b.is_some());
    let in_scope = pool.install(|| {
        let mut seen = None;
        coretune_pool::scope(|s| s.spawn(|_| seen = Some(pool.current_thread_index())));
        seen
    });
    assert!(in_scope.is_some_and(|i| i.is_some()));
    // Free spawn and spawn_fifo from a worker queue on this pool.
    let pool = Arc::new(pool);
    let (tx, rx) = mpsc::channel();
    for fifo in [false, true] {
        let (tx, inner) = (tx.clone(), Arc::clone(&pool));
        pool.install(move || {
            let task = move || tx.send(inner.current_thread_index()).unwrap();
            if fifo {
                coretune_pool::spawn_fifo(task);
            } else {
                coretune_pool::spawn(task);
            }
        });
        assert!(rx.recv().unwrap().is_some(), "fifo: {fifo}");
    }
    // Installing from a worker of the same pool runs inline.
    let same = pool.install(|| {
        let outer = pool.current_thread_index();
        (outer, pool.install(|| pool.current_thread_index()))
    });
    assert_eq!(same.0, same.1);
    // Installing into another pool from a worker blocks for it and uses that pool.
    let other = ThreadPool::new(2).unwrap();
    let (outer, inner, threads) = pool.install(|| {
        other.install(|| {
            (
                pool.current_thread_index(),
                other.current_thread_index(),
                coretune_pool::current_num_threads(),
            )
        })
    });
    assert_eq!(outer, None);
    assert!(inner.is_some());
    assert_eq!(threads, 2);
}

#[test]
fn spawn_fifo_runs_in_spawn_order_with_one_worker() {
    let pool = ThreadPool::new(1).unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    // Hold the worker so that every task is queued before any runs.
    let (release_tx, release_rx) = mpsc::channel::<()>();
    pool.spawn(move || release_rx.recv().unwrap());
    for i in 0..100 {
        let order = Arc::clone(&order);
        pool.spawn_fifo(move || order.lock().unwrap().push(i));
    }
    release_tx.send(()).unwrap();
    // From the worker itself: its own deque is LIFO, spawn_fifo still starts in order.
    let inner = Arc::clone(&order);
    pool.install(move || {
        for i in 100..200 {
            let order = Arc::clone(&inner);
            coretune_pool::spawn_fifo(move || order.lock().unwrap().push(i));
        }
    });
    drop(pool);
    let order = order.lock().unwrap().clone();
    assert_eq!(order, (0..200).collect::<Vec<_>>());
}

#[test]
fn exit_handler_runs_once_per_worker_on_drop() {
    for threads in [1, 2, 5] {
        let exits = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&exits);
        let pool = ThreadPoolBuilder::new()
            .num_threads(threads)
            .exit_handler(move |i| log.lock().unwrap().push(i))
            .build()
            .unwrap();
        pool.for_each(0..1000, |_| ());
        assert!(exits.lock().unwrap().is_empty(), "no exit while alive");
        drop(pool);
        let mut exits = exits.lock().unwrap().clone();
        exits.sort_unstable();
        assert_eq!(exits, (0..threads).collect::<Vec<_>>());
    }
}

#[test]
fn a_panicking_exit_handler_goes_to_the_panic_handler() {
    quiet_expected_panics();
    let caught = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&caught);
    let pool = ThreadPoolBuilder::new()
        .num_threads(2)
        .exit_handler(|_| panic!("expected panic in the exit handler"))
        .panic_handler(move |_| {
            count.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .unwrap();
    drop(pool);
    assert_eq!(caught.load(Ordering::SeqCst), 2);
}

/// The environment variable under which a child process runs one of the tests below.
const CHILD: &str = "CORETUNE_POOL_PAR_TEST_CHILD";

/// Runs the test `name` of this binary in a child process with `env`; returns its output.
fn run_child(name: &str, env: &[(&str, &str)]) -> std::process::Output {
    let exe = std::env::current_exe().expect("the test binary has a path");
    let mut command = std::process::Command::new(exe);
    command
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, name)
        .env_remove("CORETUNE_NUM_THREADS");
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().expect("the child runs");
    assert!(
        output.status.success(),
        "child {name} failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn is_child(name: &str) -> bool {
    std::env::var(CHILD).is_ok_and(|child| child == name)
}

/// In a child: prints the global pool's size as seen by the free functions.
#[test]
fn child_reports_the_global_pool() {
    if !is_child("child_reports_the_global_pool") {
        return;
    }
    let outside = coretune_pool::current_num_threads();
    // The free functions outside any pool use the global pool.
    let (a, b) = coretune_pool::join(|| 1, coretune_pool::current_num_threads);
    assert_eq!((a, b), (1, outside));
    let (tx, rx) = mpsc::channel();
    coretune_pool::spawn(move || tx.send(coretune_pool::current_num_threads()).unwrap());
    assert_eq!(rx.recv().unwrap(), outside);
    // A pool's install switches to that pool; outside again, the global pool.
    let pool = ThreadPool::new(outside + 1).unwrap();
    assert_eq!(
        pool.install(coretune_pool::current_num_threads),
        outside + 1
    );
    assert_eq!(coretune_pool::current_num_threads(), outside);
    println!("global threads: {outside}");
}

#[test]
fn the_global_pool_is_sized_by_coretune_num_threads() {
    let default = std::thread::available_parallelism().map_or(1, |n| n.get());
    for (value, expected, warns) in [
        (None, default, false),
        (Some("3"), 3, false),
        (Some(" 5 "), 5, false),
        // 0 is not a number of workers: said, as every other value that does not parse.
        (Some("0"), default, true),
        (Some("many"), default, true),
        (Some("-2"), default, true),
    ] {
        let env: Vec<(&str, &str)> = value
            .map(|v| ("CORETUNE_NUM_THREADS", v))
            .into_iter()
            .collect();
        let output = run_child("child_reports_the_global_pool", &env);
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stdout.contains(&format!("global threads: {expected}\n")),
            "CORETUNE_NUM_THREADS={value:?}: {stdout}"
        );
        assert_eq!(
            stderr.contains("coretune-pool: ignoring CORETUNE_NUM_THREADS"),
            warns,
            "CORETUNE_NUM_THREADS={value:?}: {stderr}"
        );
    }
}

/// In a child: the threads a data-parallel call of a pool built by `from_env` runs on.
#[test]
fn child_counts_the_threads_of_a_sum() {
    if !is_child("child_counts_the_threads_of_a_sum") {
        return;
    }
    let pool = ThreadPoolBuilder::from_env().unwrap().build().unwrap();
    let threads = Mutex::new(std::collections::HashSet::new());
    let total: u64 = pool.sum(0..100_000, |i| {
        threads.lock().unwrap().insert(std::thread::current().id());
        i as u64
    });
    assert_eq!(total, 4_999_950_000);
    let caller = threads
        .lock()
        .unwrap()
        .contains(&std::thread::current().id());
    println!("workers: {}, caller shares: {caller}", pool.num_threads());
    println!("threads: {}", threads.into_inner().unwrap().len());
}

#[test]
fn under_coretune_num_threads_a_data_parallel_call_from_the_building_thread_uses_n_threads() {
    // `coretune run --threads 2` sets 1 worker: the building thread is the second thread.
    let output = run_child(
        "child_counts_the_threads_of_a_sum",
        &[("CORETUNE_NUM_THREADS", "1")],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("workers: 1, caller shares: true\n"),
        "{stdout}"
    );
    assert!(stdout.contains("threads: 2\n"), "{stdout}");
}

/// In a child: `build_global` sets the global pool once.
#[test]
fn child_builds_the_global_pool() {
    if !is_child("child_builds_the_global_pool") {
        return;
    }
    ThreadPoolBuilder::new()
        .num_threads(3)
        .build_global()
        .unwrap();
    assert_eq!(coretune_pool::current_num_threads(), 3);
    let again = ThreadPoolBuilder::new().num_threads(2).build_global();
    assert_eq!(
        again.unwrap_err().to_string(),
        "the global thread pool exists already"
    );
    assert_eq!(coretune_pool::current_num_threads(), 3);
}

/// In a child: the global pool built on first use cannot be replaced.
#[test]
fn child_cannot_build_the_global_pool_after_use() {
    if !is_child("child_cannot_build_the_global_pool_after_use") {
        return;
    }
    let (tx, rx) = mpsc::channel();
    coretune_pool::spawn_fifo(move || tx.send(()).unwrap());
    rx.recv().unwrap();
    assert!(ThreadPoolBuilder::new().build_global().is_err());
}

#[test]
fn build_global_sets_the_global_pool_once() {
    // The variable does not override an explicit build_global.
    run_child(
        "child_builds_the_global_pool",
        &[("CORETUNE_NUM_THREADS", "7")],
    );
    run_child("child_cannot_build_the_global_pool_after_use", &[]);
}
