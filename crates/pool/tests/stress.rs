//! Every task runs exactly once and every captured value is dropped exactly once, under
//! nested spawns, panics and concurrent submitters.

mod util;

use coretune_pool::{ThreadPool, ThreadPoolBuilder};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use util::{DropCounter, Tally, no_wakeup_lost_with_many_workers, quiet_expected_panics, wait_for};

const TASKS: usize = 20_000;

#[test]
fn detached_spawns_run_once_and_drop_waits_for_them() {
    let pool = ThreadPool::new(2).unwrap();
    let tally = Tally::new(TASKS);
    let drops = Arc::new(AtomicUsize::new(0));
    for id in 0..TASKS {
        let tally = Arc::clone(&tally);
        let guard = DropCounter(Arc::clone(&drops));
        pool.spawn(move || {
            let _guard = guard;
            tally.hit(id);
        });
    }
    drop(pool);
    tally.assert_each_once();
    assert_eq!(drops.load(Ordering::Relaxed), TASKS);
}

#[test]
fn batches_run_once() {
    let pool = ThreadPool::new(2).unwrap();
    let tally = Tally::new(TASKS);
    let drops = Arc::new(AtomicUsize::new(0));
    for batch in 0..10 {
        pool.spawn_batch((0..TASKS / 10).map(|i| {
            let tally = Arc::clone(&tally);
            let guard = DropCounter(Arc::clone(&drops));
            move || {
                let _guard = guard;
                tally.hit(batch * TASKS / 10 + i);
            }
        }));
    }
    drop(pool);
    tally.assert_each_once();
    assert_eq!(drops.load(Ordering::Relaxed), TASKS);
}

#[test]
fn concurrent_submitters_lose_nothing() {
    let pool = ThreadPool::new(2).unwrap();
    let tally = Tally::new(TASKS);
    std::thread::scope(|s| {
        for submitter in 0..4 {
            let (pool, tally) = (&pool, &tally);
            s.spawn(move || {
                for i in 0..TASKS / 4 {
                    let tally = Arc::clone(tally);
                    let id = submitter * TASKS / 4 + i;
                    if i % 2 == 0 {
                        pool.spawn(move || tally.hit(id));
                    } else {
                        pool.scope(|s| s.spawn(move |_| tally.hit(id)));
                    }
                }
            });
        }
    });
    drop(pool);
    tally.assert_each_once();
}

#[test]
fn nested_detached_spawns_from_workers() {
    // Each of 100 roots spawns 10 children from inside the pool (own-deque path), and
    // each child 10 grandchildren.
    let pool = Arc::new(ThreadPool::new(2).unwrap());
    let tally = Tally::new(100 * 111);
    let done = Arc::new(AtomicUsize::new(0));
    for root in 0..100 {
        let (p, tally, done) = (Arc::clone(&pool), Arc::clone(&tally), Arc::clone(&done));
        pool.spawn(move || {
            tally.hit(root * 111);
            done.fetch_add(1, Ordering::Release);
            for child in 0..10 {
                let (p2, tally, done) = (Arc::clone(&p), Arc::clone(&tally), Arc::clone(&done));
                p.spawn(move || {
                    let id = root * 111 + 1 + child * 11;
                    tally.hit(id);
                    done.fetch_add(1, Ordering::Release);
                    for grandchild in 0..10 {
                        let (tally, done) = (Arc::clone(&tally), Arc::clone(&done));
                        p2.spawn(move || {
                            tally.hit(id + 1 + grandchild);
                            done.fetch_add(1, Ordering::Release);
                        });
                    }
                });
            }
        });
    }
    wait_for(&done, 100 * 111);
    tally.assert_each_once();
    // The tasks' clones of the pool are dropped with the tasks; this is the last one
    // once the workers finished them.
    while Arc::strong_count(&pool) > 1 {
        std::thread::yield_now();
    }
}

#[test]
fn nested_scopes_count_every_job() {
    let pool = ThreadPool::new(2).unwrap();
    let tally = Tally::new(64 * 64);
    pool.scope(|s| {
        for outer in 0..64 {
            let tally = &tally;
            s.spawn(move |s| {
                for inner in 0..64 {
                    s.spawn(move |_| tally.hit(outer * 64 + inner));
                }
            });
        }
    });
    tally.assert_each_once();
}

#[test]
fn scope_panic_propagates_after_all_jobs_ran() {
    quiet_expected_panics();
    let pool = ThreadPool::new(2).unwrap();
    let tally = Tally::new(1000);
    let drops = Arc::new(AtomicUsize::new(0));
    let result = catch_unwind(AssertUnwindSafe(|| {
        pool.scope(|s| {
            for id in 0..1000 {
                let (tally, guard) = (&tally, DropCounter(Arc::clone(&drops)));
                s.spawn(move |_| {
                    let _guard = guard;
                    tally.hit(id);
                    if id % 100 == 7 {
                        panic!("expected panic in job {id}");
                    }
                });
            }
        })
    }));
    let payload = result.expect_err("the scope re-raises the job's panic");
    assert!(
        payload
            .downcast_ref::<String>()
            .unwrap()
            .starts_with("expected panic")
    );
    tally.assert_each_once();
    assert_eq!(drops.load(Ordering::Relaxed), 1000);
    // The pool is still fully usable.
    assert_eq!(pool.join(|| 1, || 2), (1, 2));
}

#[test]
fn body_panic_waits_for_jobs_and_wins() {
    quiet_expected_panics();
    let pool = ThreadPool::new(2).unwrap();
    let ran = AtomicUsize::new(0);
    let result = catch_unwind(AssertUnwindSafe(|| {
        pool.scope(|s| {
            for _ in 0..100 {
                s.spawn(|_| {
                    std::thread::yield_now();
                    ran.fetch_add(1, Ordering::Relaxed);
                });
            }
            panic!("expected panic in the body");
        })
    }));
    assert_eq!(
        *result.unwrap_err().downcast_ref::<&str>().unwrap(),
        "expected panic in the body"
    );
    assert_eq!(ran.load(Ordering::Relaxed), 100);
}

#[test]
fn join_propagates_panics_from_either_side() {
    quiet_expected_panics();
    let pool = ThreadPool::new(2).unwrap();
    let a = catch_unwind(AssertUnwindSafe(|| {
        pool.join(|| panic!("expected panic a"), || 1)
    }));
    assert!(a.is_err());
    let b = catch_unwind(AssertUnwindSafe(|| {
        pool.join(|| 1, || panic!("expected panic b"))
    }));
    assert!(b.is_err());
    assert_eq!(pool.join(|| "a", || "b"), ("a", "b"));
}

#[test]
fn detached_panics_go_to_the_handler_and_workers_survive() {
    quiet_expected_panics();
    let panics = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&panics);
    let pool = ThreadPoolBuilder::new()
        .num_threads(2)
        .panic_handler(move |_| {
            counted.fetch_add(1, Ordering::Relaxed);
        })
        .build()
        .unwrap();
    let tally = Tally::new(1000);
    let drops = Arc::new(AtomicUsize::new(0));
    for id in 0..1000 {
        let (tally, guard) = (Arc::clone(&tally), DropCounter(Arc::clone(&drops)));
        pool.spawn(move || {
            let _guard = guard;
            tally.hit(id);
            if id % 10 == 0 {
                panic!("expected panic {id}");
            }
        });
    }
    drop(pool);
    tally.assert_each_once();
    assert_eq!(panics.load(Ordering::Relaxed), 100);
    assert_eq!(drops.load(Ordering::Relaxed), 1000);
}

#[test]
fn recursive_join_and_par_for() {
    let pool = ThreadPool::new(2).unwrap();
    fn sum(pool: &ThreadPool, range: std::ops::Range<u64>) -> u64 {
        if range.end - range.start < 1000 {
            return range.sum();
        }
        let mid = (range.start + range.end) / 2;
        let (a, b) = pool.join(|| sum(pool, range.start..mid), || sum(pool, mid..range.end));
        a + b
    }
    assert_eq!(sum(&pool, 0..1_000_000), 999_999 * 1_000_000 / 2);

    let tally = Tally::new(10_007);
    pool.par_for(0..10_007, 64, |i| tally.hit(i));
    tally.assert_each_once();
    pool.par_for(0..0, 0, |_| unreachable!());
    let one = Tally::new(3);
    pool.par_for(0..3, 0, |i| one.hit(i));
    one.assert_each_once();
}

#[test]
fn broadcast_runs_once_on_each_worker_even_from_a_worker() {
    let pool = ThreadPool::new(2).unwrap();
    let ids = pool.broadcast(|i| (i, std::thread::current().id()));
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0].1, ids[1].1);
    // From inside the pool: the calling worker runs its own share while waiting.
    let nested = pool.join(|| 0, || pool.broadcast(|i| i));
    assert_eq!(nested.1, vec![0, 1]);
}

#[test]
fn builder_hooks_names_and_indices() {
    let started = Arc::new(Tally::new(3));
    let seen = Arc::clone(&started);
    let pool = ThreadPoolBuilder::new()
        .num_threads(3)
        .thread_name(|i| format!("ct-worker-{i}"))
        .stack_size(256 * 1024)
        .start_handler(move |i| seen.hit(i))
        .steal_order(vec![vec![1, 2], vec![0, 2], vec![1, 0]])
        .build()
        .unwrap();
    let names = pool.broadcast(|_| std::thread::current().name().map(str::to_owned));
    assert_eq!(names[2].as_deref(), Some("ct-worker-2"));
    assert_eq!(
        pool.broadcast(|i| pool.current_thread_index() == Some(i)),
        [true; 3]
    );
    assert_eq!(pool.current_thread_index(), None);
    started.assert_each_once();
}

#[test]
fn throttled_pool_runs_at_most_k_tasks_at_once() {
    let (pool, throttle) = util::throttled_pool(2, 1);
    let running = AtomicUsize::new(0);
    let peak = AtomicUsize::new(0);
    // Nested scopes inside tasks must not deadlock on the single permit.
    pool.par_for(0..200, 1, |_| {
        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
        peak.fetch_max(now, Ordering::SeqCst);
        std::thread::yield_now();
        running.fetch_sub(1, Ordering::SeqCst);
    });
    assert_eq!(peak.load(Ordering::SeqCst), 1);
    let nested = pool.join(|| pool.join(|| 1, || 2), || 3);
    assert_eq!(nested, ((1, 2), 3));
    drop(pool);
    assert!(throttle.completions() >= 200);
    assert_eq!(throttle.in_use(), 0);
}

#[test]
fn wakeups_are_never_lost() {
    // Single spawns after gaps that land in every phase of a worker's way to sleep:
    // busy, spinning, yielding, announcing sleep, blocked. A lost wake-up hangs the
    // task and `wait_for` fails after 20 s.
    let pool = ThreadPool::new(2).unwrap();
    let done = Arc::new(AtomicUsize::new(0));
    for round in 0..2000 {
        match round % 4 {
            0 => {}
            1 => (0..(round % 97) * 10).for_each(|_| std::hint::spin_loop()),
            2 => std::thread::sleep(std::time::Duration::from_micros((round % 13) as u64 * 5)),
            _ => std::thread::sleep(std::time::Duration::from_micros(300)),
        }
        let done_clone = Arc::clone(&done);
        pool.spawn(move || {
            done_clone.fetch_add(1, Ordering::Release);
        });
        wait_for(&done, round + 1);
    }
}

/// 64 workers on however few CPUs the machine has (2 in CI): pushes that find a searcher wake
/// nobody, and nothing is stranded (`util::no_wakeup_lost_with_many_workers`).
#[test]
fn oversubscribed_wakeups_are_never_lost() {
    let pool = ThreadPool::new(64).unwrap();
    no_wakeup_lost_with_many_workers(&pool, 1000);
}

#[test]
fn submitter_queues_survive_their_threads_and_their_pools() {
    // Jobs left in the queue of a thread that exited still run.
    let pool = ThreadPool::new(2).unwrap();
    let tally = Tally::new(2000);
    std::thread::scope(|s| {
        for t in 0..20 {
            let (pool, tally) = (&pool, &tally);
            s.spawn(move || {
                for i in 0..100 {
                    let tally = Arc::clone(tally);
                    pool.spawn(move || tally.hit(t * 100 + i));
                }
            });
        }
    });
    drop(pool);
    tally.assert_each_once();
    // One thread submitting to a sequence of pools (each gets its own queue) and to
    // two pools at once.
    let other = ThreadPool::new(1).unwrap();
    for _ in 0..20 {
        let pool = ThreadPool::new(1).unwrap();
        let tally = Tally::new(200);
        for i in 0..100 {
            let (t1, t2) = (Arc::clone(&tally), Arc::clone(&tally));
            pool.spawn(move || t1.hit(i));
            other.spawn(move || t2.hit(100 + i));
        }
        drop(pool);
        let start = std::time::Instant::now();
        while tally.total() < 200 {
            assert!(start.elapsed().as_secs() < 20, "stuck at {}", tally.total());
            std::thread::yield_now();
        }
        tally.assert_each_once();
    }
}

/// A task whose closure is one word (a `Box` of its state), so that `spawn` from outside
/// the pool puts it in the submitter's ring (`src/ring.rs`) rather than its deque.
fn small_task(
    tally: &Arc<Tally>,
    drops: &Arc<AtomicUsize>,
    id: usize,
) -> impl FnOnce() + Send + use<> {
    let state = Box::new((Arc::clone(tally), DropCounter(Arc::clone(drops)), id));
    move || {
        let (tally, _guard, id) = *state;
        tally.hit(id);
    }
}

#[test]
fn one_word_spawns_run_once_through_full_rings() {
    // The first task holds both workers back (a `Barrier` they pass only after the
    // submitter queued everything), so the ring (1024 slots) fills and the rest spills to
    // the deque; then both drain.
    let pool = ThreadPool::new(2).unwrap();
    let tally = Tally::new(TASKS);
    let drops = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(std::sync::Barrier::new(3));
    for _ in 0..2 {
        let gate = Arc::clone(&gate);
        pool.spawn(move || {
            gate.wait();
        });
    }
    for id in 0..TASKS {
        if id % 5000 == 4000 {
            // A large closure now and then: it goes to the deque, and the small ones
            // follow it there until the deque is empty.
            let (tally, guard) = (Arc::clone(&tally), DropCounter(Arc::clone(&drops)));
            let pad = [id; 8];
            pool.spawn(move || {
                let _guard = guard;
                tally.hit(pad[7]);
            });
        } else {
            pool.spawn(small_task(&tally, &drops, id));
        }
    }
    gate.wait();
    drop(pool);
    tally.assert_each_once();
    assert_eq!(drops.load(Ordering::Relaxed), TASKS);
}

#[test]
fn small_and_large_spawns_from_many_threads_run_once() {
    let pool = ThreadPool::new(2).unwrap();
    let tally = Tally::new(TASKS);
    let drops = Arc::new(AtomicUsize::new(0));
    std::thread::scope(|s| {
        for submitter in 0..4 {
            let (pool, tally, drops) = (&pool, &tally, &drops);
            s.spawn(move || {
                for i in 0..TASKS / 4 {
                    let id = submitter * TASKS / 4 + i;
                    match i % 3 {
                        0 | 1 => pool.spawn(small_task(tally, drops, id)),
                        _ => {
                            let (tally, guard) =
                                (Arc::clone(tally), DropCounter(Arc::clone(drops)));
                            pool.spawn(move || {
                                let _guard = guard;
                                tally.hit(id);
                            });
                        }
                    }
                }
            });
        }
    });
    drop(pool);
    tally.assert_each_once();
    assert_eq!(drops.load(Ordering::Relaxed), TASKS);
}

#[test]
fn rings_of_exited_threads_and_dropped_pools_are_drained() {
    let pool = ThreadPool::new(2).unwrap();
    let tally = Tally::new(2000);
    let drops = Arc::new(AtomicUsize::new(0));
    std::thread::scope(|s| {
        for t in 0..20 {
            let (pool, tally, drops) = (&pool, &tally, &drops);
            s.spawn(move || {
                for i in 0..100 {
                    pool.spawn(small_task(tally, drops, t * 100 + i));
                }
            });
        }
    });
    drop(pool);
    tally.assert_each_once();
    assert_eq!(drops.load(Ordering::Relaxed), 2000);
    // One thread, a sequence of pools, each dropped right after its spawns.
    for _ in 0..20 {
        let pool = ThreadPool::new(1).unwrap();
        let tally = Tally::new(300);
        for i in 0..300 {
            pool.spawn(small_task(&tally, &drops, i));
        }
        drop(pool);
        tally.assert_each_once();
    }
    assert_eq!(drops.load(Ordering::Relaxed), 2000 + 20 * 300);
}
