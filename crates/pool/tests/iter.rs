//! Parallel iterators (`coretune_pool::iter`) against rayon's on the same inputs, every row
//! of the crate front page's "Coming from rayon" table (`iter_common.rs` and the module
//! `coming_from_rayon`), and what rayon's tests cannot say for this pool: where the work runs,
//! panics, drops, the throttle.

mod util;

use coretune_pool::ThreadPoolBuilder;
use coretune_pool::prelude::*;
use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;
use util::{DropCounter, quiet_expected_panics};

/// The program of `iter_common.rs` built against rayon.
mod with_rayon {
    use rayon::prelude::*;
    use rayon::{
        ThreadPoolBuildError, ThreadPoolBuilder, current_num_threads, join, scope, spawn,
        spawn_fifo,
    };
    include!("iter_common.rs");
}

/// The same program built against coretune-pool: only the `use` lines differ.
#[allow(dead_code)] // `LENGTHS` is read from the rayon copy
mod with_coretune {
    use coretune_pool::prelude::*;
    use coretune_pool::{
        ThreadPoolBuildError, ThreadPoolBuilder, current_num_threads, join, scope, spawn,
        spawn_fifo,
    };
    include!("iter_common.rs");
}

/// Runs `f` on a pool of `threads` workers (through `install`).
fn on_pool<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    let pool = ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("the pool starts");
    pool.install(f)
}

#[test]
fn a_program_written_for_rayon_gives_the_same_results_on_every_length() {
    for len in with_rayon::LENGTHS {
        let expected = with_rayon::program(len);
        assert_eq!(
            with_coretune::program(len),
            expected,
            "from the global pool"
        );
        for threads in [1, 2, 3] {
            let got = on_pool(threads, || with_coretune::program(len));
            assert_eq!(got.len(), expected.len());
            for (got, expected) in got.iter().zip(&expected) {
                assert_eq!(got, expected, "{threads} threads");
            }
        }
    }
}

#[test]
fn join_scope_spawn_and_the_builder_are_used_the_same_way_as_rayons() {
    quiet_expected_panics();
    for threads in [1, 2, 3] {
        assert_eq!(
            with_coretune::pool_program(threads),
            with_rayon::pool_program(threads)
        );
    }
}

#[test]
fn collect_keeps_the_order_of_indexed_and_filtered_items() {
    for threads in [1, 2, 4] {
        on_pool(threads, || {
            for len in [0, 1, 2, 3, 7, 1023, 1025, 300_001] {
                let all: Vec<usize> = (0..len).into_par_iter().collect();
                assert_eq!(all, (0..len).collect::<Vec<_>>());
                let odd: Vec<usize> = (0..len).into_par_iter().filter(|i| i % 2 == 1).collect();
                assert_eq!(odd, (0..len).filter(|i| i % 2 == 1).collect::<Vec<_>>());
                let owned: Vec<String> = (0..len.min(5000))
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
                    .into_par_iter()
                    .collect();
                assert!(owned.iter().enumerate().all(|(i, s)| *s == i.to_string()));
            }
        });
    }
}

#[test]
fn par_sort_and_par_sort_by_key_are_stable_as_std_sort_is() {
    // Many equal keys, long enough to be cut into pieces and merged.
    let pairs: Vec<(u32, usize)> = (0..200_000).map(|i| ((i * 7919 % 101) as u32, i)).collect();
    let mut expected = pairs.clone();
    expected.sort_by_key(|p| p.0);
    for threads in [1, 2, 3] {
        on_pool(threads, || {
            let mut by_key = pairs.clone();
            by_key.par_sort_by_key(|p| p.0);
            assert_eq!(by_key, expected);
            let mut by = pairs.clone();
            by.par_sort_by(|a, b| a.0.cmp(&b.0));
            assert_eq!(by, expected);
            let mut unstable = pairs.clone();
            unstable.par_sort_unstable_by_key(|p| p.0);
            assert!(unstable.windows(2).all(|w| w[0].0 <= w[1].0));
            let mut all = pairs.clone();
            all.par_sort_unstable();
            let mut std_sorted = pairs.clone();
            std_sorted.sort_unstable();
            assert_eq!(all, std_sorted);
        });
    }
}

#[test]
fn a_panic_in_a_closure_reaches_the_caller_and_the_pool_stays_usable() {
    quiet_expected_panics();
    for threads in [1, 2, 3] {
        let pool = ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("the pool starts");
        let caught = catch_unwind(AssertUnwindSafe(|| {
            pool.install(|| {
                (0..100_000).into_par_iter().for_each(|i| {
                    if i == 77_777 {
                        panic!("expected panic at {i}");
                    }
                });
            });
        }));
        assert!(caught.is_err());
        let from_global = catch_unwind(|| {
            (0..1000usize)
                .into_par_iter()
                .map(|i| {
                    if i == 999 {
                        panic!("expected panic")
                    } else {
                        i
                    }
                })
                .sum::<usize>()
        });
        assert!(from_global.is_err());
        assert_eq!(
            pool.install(|| (0..1000usize).into_par_iter().sum::<usize>()),
            499_500
        );
    }
}

#[test]
fn inside_install_the_work_runs_on_that_pools_workers() {
    let pool = ThreadPoolBuilder::new()
        .num_threads(3)
        .thread_name(|i| format!("iter-test-{i}"))
        .build()
        .expect("the pool starts");
    let names = Mutex::new(HashSet::new());
    let indices: Vec<Option<usize>> = pool.install(|| {
        (0..100_000)
            .into_par_iter()
            .map(|_| {
                let name = std::thread::current().name().map(str::to_owned);
                names.lock().expect("no panic holds it").insert(name);
                pool.current_thread_index()
            })
            .collect()
    });
    assert!(indices.iter().all(|i| i.is_some_and(|i| i < 3)));
    let names = names.into_inner().expect("no panic holds it");
    assert!(!names.is_empty());
    for name in names {
        assert!(
            name.as_deref().is_some_and(|n| n.starts_with("iter-test-")),
            "{name:?}"
        );
    }
    // The sorts too.
    let mut v: Vec<u64> = (0..50_000).rev().collect();
    let seen = Mutex::new(HashSet::new());
    pool.install(|| {
        v.par_sort_by(|a, b| {
            seen.lock()
                .expect("no panic holds it")
                .insert(pool.current_thread_index());
            a.cmp(b)
        });
    });
    assert!(v.windows(2).all(|w| w[0] <= w[1]));
    assert!(
        seen.into_inner()
            .expect("no panic holds it")
            .iter()
            .all(Option::is_some)
    );
}

#[test]
fn nested_parallel_iterators_match_serial_results() {
    let expected: Vec<u64> = (0..200u64)
        .map(|i| (0..i * 10).map(|j| j ^ i).sum())
        .collect();
    for threads in [1, 2, 4] {
        let got: Vec<u64> = on_pool(threads, || {
            (0..200u64)
                .into_par_iter()
                .map(|i| (0..i * 10).into_par_iter().map(|j| j ^ i).sum::<u64>())
                .collect()
        });
        assert_eq!(got, expected);
    }
    let from_global: u64 = (0..100u64)
        .into_par_iter()
        .map(|i| (0..i).into_par_iter().sum::<u64>())
        .sum();
    assert_eq!(from_global, (0..100u64).map(|i| (0..i).sum::<u64>()).sum());
}

#[test]
fn owned_items_are_dropped_exactly_once_by_zip_find_any_and_panics() {
    quiet_expected_panics();
    let drops = Arc::new(AtomicUsize::new(0));
    let make = |n: usize| -> Vec<DropCounter> {
        (0..n).map(|_| DropCounter(Arc::clone(&drops))).collect()
    };

    // zip: the longer side's extra items are dropped unread.
    let pairs = make(10_000).into_par_iter().zip(make(3_000)).count();
    assert_eq!(pairs, 3_000);
    assert_eq!(drops.swap(0, Ordering::SeqCst), 13_000);

    // find_any stops early: the items not reached are dropped in place.
    let found = make(100_000)
        .into_par_iter()
        .enumerate()
        .find_any(|(i, _)| *i == 10);
    assert!(found.is_some());
    drop(found);
    assert_eq!(drops.swap(0, Ordering::SeqCst), 100_000);

    // A panic half way.
    let caught = catch_unwind(AssertUnwindSafe(|| {
        make(50_000)
            .into_par_iter()
            .enumerate()
            .for_each(|(i, item)| {
                if i == 25_000 {
                    panic!("expected panic");
                }
                drop(item);
            });
    }));
    assert!(caught.is_err());
    assert_eq!(drops.swap(0, Ordering::SeqCst), 50_000);

    // An iterator dropped unused drops its items once.
    drop(make(10).into_par_iter().map(|item| item));
    assert_eq!(drops.swap(0, Ordering::SeqCst), 10);
}

#[test]
fn a_throttle_of_limit_one_does_not_deadlock_nested_calls() {
    let (pool, throttle) = util::throttled_pool(3, 1);
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let result = pool.install(|| {
            let (sum, _) = pool.join(|| (0..100_000u64).into_par_iter().sum::<u64>(), || 1);
            let nested: u64 = (0..100u64)
                .into_par_iter()
                .map(|i| (0..i).into_par_iter().sum::<u64>())
                .sum();
            let mut v: Vec<u32> = (0..20_000).rev().collect();
            v.par_sort_unstable();
            assert!(throttle.in_use() <= 1);
            (sum, nested, v[0])
        });
        let _ = done.send(result);
    });
    let result = finished
        .recv_timeout(Duration::from_secs(30))
        .expect("a throttled pool finishes nested parallel iterators within 30 s");
    assert_eq!(result, (4_999_950_000, 161_700, 0));
}

#[test]
fn pieces_report_their_items_to_the_pools_throttle() {
    let (pool, throttle) = util::throttled_pool(2, 2);
    let before = throttle.completions();
    let sum: u64 = pool.install(|| (0..100_000u64).into_par_iter().sum());
    assert_eq!(sum, 4_999_950_000);
    let after_sum = throttle.completions();
    assert!(
        after_sum - before >= 100_000,
        "{} completions",
        after_sum - before
    );
    let values: Vec<u32> = pool.install(|| (0..10_000u32).into_par_iter().collect());
    assert!(throttle.completions() - after_sum >= 10_000);
    assert_eq!(values.len(), 10_000);
}

#[test]
fn a_throttled_pool_runs_no_more_pieces_at_once_than_its_limit() {
    let (pool, throttle) = util::throttled_pool(3, 1);
    let hits = AtomicUsize::new(0);
    pool.install(|| {
        (0..50_000).into_par_iter().for_each(|_| {
            assert!(throttle.in_use() <= 1);
            hits.fetch_add(1, Ordering::Relaxed);
        });
    });
    assert_eq!(hits.into_inner(), 50_000);
}

#[test]
fn every_integer_range_type_covers_its_bounds() {
    assert_eq!(
        (u32::MAX - 2..=u32::MAX)
            .into_par_iter()
            .collect::<Vec<u32>>(),
        [u32::MAX - 2, u32::MAX - 1, u32::MAX]
    );
    assert_eq!((i64::MAX - 1..=i64::MAX).into_par_iter().count(), 2);
    assert_eq!(
        (i32::MIN..i32::MIN + 3)
            .into_par_iter()
            .collect::<Vec<i32>>(),
        [i32::MIN, i32::MIN + 1, i32::MIN + 2]
    );
    assert_eq!(
        (u64::MAX..=u64::MAX)
            .into_par_iter()
            .enumerate()
            .collect::<Vec<_>>(),
        [(0, u64::MAX)]
    );
    #[allow(clippy::reversed_empty_ranges)]
    let empty = (5..=4usize).into_par_iter().count();
    assert_eq!(empty, 0);
    assert_eq!((0..1usize << 20).into_par_iter().len(), 1 << 20);
}

/// Names the test a child process runs (the global pool is built once per process).
const CHILD: &str = "CORETUNE_POOL_ITER_TEST_CHILD";

/// In a child: the threads a parallel iterator called from the main thread runs on, on the
/// global pool.
#[test]
fn child_counts_the_threads_of_a_parallel_sum() {
    if std::env::var(CHILD).as_deref() != Ok("child_counts_the_threads_of_a_parallel_sum") {
        return;
    }
    let threads = Mutex::new(HashSet::new());
    let total: u64 = (0..100_000u64)
        .into_par_iter()
        .map(|i| {
            threads
                .lock()
                .expect("no panic holds it")
                .insert(std::thread::current().id());
            i
        })
        .sum();
    assert_eq!(total, 4_999_950_000);
    println!(
        "threads: {}",
        threads.into_inner().expect("no panic holds it").len()
    );
}

/// Runs the test `path` (ending in `name`) of this binary in a child process with `vars`
/// set, and returns what it printed; fails if the child failed.
fn run_child(path: &str, name: &str, vars: &[(&str, &str)]) -> String {
    let exe = std::env::current_exe().expect("the test binary has a path");
    let output = std::process::Command::new(exe)
        .args([path, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, name)
        .envs(vars.iter().copied())
        .output()
        .expect("the child runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn under_coretune_num_threads_a_parallel_iterator_from_main_uses_n_threads() {
    // `coretune run --threads 2` hands the program CORETUNE_NUM_THREADS=2: the global pool
    // is built as `from_env` builds it, and the calling thread works off a share.
    let name = "child_counts_the_threads_of_a_parallel_sum";
    let stdout = run_child(name, name, &[("CORETUNE_NUM_THREADS", "1")]);
    assert!(stdout.contains("threads: 2\n"), "{stdout}");
}

/// The rows of the crate front page's "Coming from rayon" table where the two crates differ,
/// one test each, rayon's form beside this crate's. The rows marked "the same" are the
/// program of `iter_common.rs` (the tests above); `build_global` is tested in a child process
/// in `tests/par.rs` (`build_global_sets_the_global_pool_once`).
mod coming_from_rayon {
    use super::{CHILD, on_pool, run_child};
    use coretune_pool::ThreadPoolBuilder;
    use coretune_pool::prelude::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, mpsc};
    use std::time::Duration;

    fn rayon_pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("rayon's pool starts")
    }

    fn pool(threads: usize) -> coretune_pool::ThreadPool {
        ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("the pool starts")
    }

    #[test]
    fn enumerate_and_zip_also_take_u64_and_i64_ranges() {
        let pairs: Vec<(usize, u64)> =
            on_pool(2, || (10..14u64).into_par_iter().enumerate().collect());
        assert_eq!(pairs, [(0, 10), (1, 11), (2, 12), (3, 13)]);
        let zipped: Vec<(i64, u64)> =
            on_pool(2, || (-2..2i64).into_par_iter().zip(5..9u64).collect());
        assert_eq!(zipped, [(-2, 5), (-1, 6), (0, 7), (1, 8)]);
    }

    #[test]
    fn current_thread_index_is_asked_of_the_pool_in_hand() {
        let rayon_index = rayon_pool(3).install(rayon::current_thread_index);
        let pool = pool(3);
        let index = pool.install(|| pool.current_thread_index());
        assert!(rayon_index.is_some_and(|i| i < 3));
        assert!(index.is_some_and(|i| i < 3));
        assert_eq!(
            (rayon::current_thread_index(), pool.current_thread_index()),
            (None, None)
        );
    }

    #[test]
    fn a_pools_current_num_threads_is_num_threads() {
        assert_eq!(rayon_pool(3).current_num_threads(), pool(3).num_threads());
    }

    #[test]
    fn broadcast_gives_the_worker_index_where_rayon_gives_a_context() {
        let rayon_indices = rayon_pool(3).broadcast(|context| context.index());
        let indices = pool(3).broadcast(|index| index);
        assert_eq!(rayon_indices, [0, 1, 2]);
        assert_eq!(indices, rayon_indices);
    }

    /// Queues `tasks` tasks of 1 ms with `spawn`; returns how many have run so far, and the
    /// receiver that hears of each.
    fn queue(
        tasks: usize,
        spawn: impl Fn(Box<dyn FnOnce() + Send>),
    ) -> (Arc<AtomicUsize>, mpsc::Receiver<()>) {
        let ran = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        for _ in 0..tasks {
            let (ran, tx) = (Arc::clone(&ran), tx.clone());
            spawn(Box::new(move || {
                std::thread::sleep(Duration::from_millis(1));
                ran.fetch_add(1, Ordering::SeqCst);
                let _ = tx.send(());
            }));
        }
        (ran, rx)
    }

    #[test]
    fn dropping_a_pool_runs_its_queued_tasks_before_it_returns() {
        let pool = pool(2);
        let (ran, _) = queue(50, |task| pool.spawn(task));
        drop(pool);
        assert_eq!(ran.load(Ordering::SeqCst), 50); // all of them, when `drop` returned

        // rayon's drop returns at once; the tasks still run, in the background.
        let rayon = rayon_pool(2);
        let (_, done) = queue(50, |task| rayon.spawn(task));
        drop(rayon);
        for _ in 0..50 {
            done.recv_timeout(Duration::from_secs(30))
                .expect("rayon runs the queued tasks after the drop");
        }
    }

    /// In a child with both variables set to 3: the thread counts each crate's builders and
    /// global pool take from them.
    #[test]
    fn child_reads_the_thread_count_variables() {
        if std::env::var(CHILD).as_deref() != Ok("child_reads_the_thread_count_variables") {
            return;
        }
        let from_env = ThreadPoolBuilder::from_env()
            .and_then(ThreadPoolBuilder::build)
            .expect("the pool starts");
        let new = ThreadPoolBuilder::new().build().expect("the pool starts");
        let rayon_new = rayon::ThreadPoolBuilder::new()
            .build()
            .expect("rayon's pool starts");
        println!("coretune from_env: {}", from_env.num_threads());
        println!("coretune new: {}", new.num_threads());
        println!("coretune global: {}", coretune_pool::current_num_threads());
        println!("rayon new: {}", rayon_new.current_num_threads());
        println!("rayon global: {}", rayon::current_num_threads());
    }

    #[test]
    fn coretune_num_threads_is_read_by_from_env_and_the_global_pool_not_by_new() {
        let name = "child_reads_the_thread_count_variables";
        let stdout = run_child(
            &format!("coming_from_rayon::{name}"),
            name,
            &[("CORETUNE_NUM_THREADS", "3"), ("RAYON_NUM_THREADS", "3")],
        );
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        for line in [
            "rayon new: 3".to_owned(),
            "rayon global: 3".to_owned(),
            "coretune from_env: 3".to_owned(),
            "coretune global: 3".to_owned(),
            format!("coretune new: {cpus}"),
        ] {
            assert!(stdout.contains(&format!("{line}\n")), "{line}: {stdout}");
        }
    }
}
