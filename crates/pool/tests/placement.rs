//! Placement reaches the workers: each sits on the CPUs it was given (read back from
//! `/proc`), steals from its victims nearest first, and a pinned pool with a custom
//! steal order still runs every task exactly once.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

mod util;

use coretune_pool::{ThreadPool, ThreadPoolBuilder};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use util::{Tally, wait_for};

/// What the OS says about where this process and thread may run and are running.
#[cfg(target_os = "linux")]
mod os {
    /// A CPU list as the kernel writes it (`0-2,5`).
    fn parse_list(text: &str) -> Vec<usize> {
        text.trim()
            .split(',')
            .filter(|part| !part.is_empty())
            .flat_map(|part| match part.split_once('-') {
                Some((a, b)) => (a.parse().unwrap()..=b.parse().unwrap()).collect::<Vec<usize>>(),
                None => vec![part.parse().unwrap()],
            })
            .collect()
    }

    /// `Cpus_allowed_list` of `/proc/<path>/status`.
    fn allowed(path: &str) -> Vec<usize> {
        let status = std::fs::read_to_string(format!("/proc/{path}/status")).unwrap();
        let line = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .expect("status has Cpus_allowed_list");
        parse_list(line)
    }

    /// The CPUs this process may run on.
    pub(crate) fn process_cpus() -> Vec<usize> {
        allowed("self")
    }

    /// The CPUs the calling thread may run on.
    pub(crate) fn thread_cpus() -> Vec<usize> {
        allowed("thread-self")
    }

    /// Field 39 of `/proc/thread-self/stat`: the CPU the thread last ran on.
    pub(crate) fn current_cpu() -> usize {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        // Fields after the command name, which is in parentheses and may hold spaces.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        rest.split_whitespace().nth(36).unwrap().parse().unwrap()
    }
}

/// What Windows says, in hwloc's numbering of its CPUs (64 × group + bit), as the pool takes
/// them.
#[cfg(windows)]
#[allow(unsafe_code)]
mod os {
    use windows_sys::Win32::System::Kernel::PROCESSOR_NUMBER;
    use windows_sys::Win32::System::SystemInformation::GROUP_AFFINITY;
    use windows_sys::Win32::System::Threading::{
        GetCurrentProcess, GetCurrentProcessorNumberEx, GetCurrentThread, GetProcessAffinityMask,
        GetThreadGroupAffinity,
    };

    fn bits(group: u16, mask: usize) -> Vec<usize> {
        (0..usize::BITS as usize)
            .filter(|b| mask & (1 << b) != 0)
            .map(|b| usize::from(group) * 64 + b)
            .collect()
    }

    /// The CPUs this process may run on (its mask in its group: the tests run in one).
    pub(crate) fn process_cpus() -> Vec<usize> {
        let (mut process, mut system) = (0usize, 0usize);
        // SAFETY: the current process's pseudo-handle and two writable masks.
        assert!(
            unsafe { GetProcessAffinityMask(GetCurrentProcess(), &mut process, &mut system) } != 0
        );
        bits(0, process)
    }

    /// The CPUs the calling thread may run on.
    pub(crate) fn thread_cpus() -> Vec<usize> {
        let mut a = GROUP_AFFINITY::default();
        // SAFETY: the calling thread's pseudo-handle and a writable GROUP_AFFINITY.
        assert!(unsafe { GetThreadGroupAffinity(GetCurrentThread(), &mut a) } != 0);
        bits(a.Group, a.Mask)
    }

    /// The CPU the calling thread runs on.
    pub(crate) fn current_cpu() -> usize {
        let mut n = PROCESSOR_NUMBER::default();
        // SAFETY: a writable PROCESSOR_NUMBER.
        unsafe { GetCurrentProcessorNumberEx(&mut n) };
        usize::from(n.Group) * 64 + usize::from(n.Number)
    }
}

#[test]
#[cfg(any(target_os = "linux", windows))]
fn workers_sit_on_their_planned_cpus() {
    let cpus = os::process_cpus();
    // Two workers per CPU this process may use (at most four CPUs), wrapping around.
    let planned: Vec<Vec<usize>> = cpus.iter().take(4).map(|&c| vec![c]).collect();
    let n = 2 * planned.len();
    let pool = ThreadPoolBuilder::new()
        .num_threads(n)
        .cpus(planned.clone())
        .build()
        .unwrap();
    let seen = pool.broadcast(|_| {
        let mask = os::thread_cpus();
        let mut busy = 0u64;
        for i in 0..100_000u64 {
            busy = std::hint::black_box(busy + i);
        }
        (mask, os::current_cpu())
    });
    for (worker, (mask, cpu)) in seen.into_iter().enumerate() {
        let want = &planned[worker % planned.len()];
        assert_eq!(&mask, want, "worker {worker}'s Cpus_allowed_list");
        assert!(want.contains(&cpu), "worker {worker} ran on CPU {cpu}");
        assert_eq!(pool.worker_cpus(worker), Some(want.as_slice()));
    }
    // The submitting thread keeps its own affinity.
    assert_eq!(os::thread_cpus(), cpus);
}

#[test]
#[cfg(any(target_os = "linux", windows))]
fn a_refused_cpu_set_fails_the_build_naming_the_worker() {
    let error = ThreadPoolBuilder::new()
        .num_threads(2)
        .cpus(vec![vec![os::process_cpus()[0]], vec![100_000]])
        .build()
        .unwrap_err();
    assert_eq!(error.to_string(), "could not pin worker 1 to CPUs 100000");
    assert!(
        std::error::Error::source(&error).is_some(),
        "keeps the OS error"
    );
}

#[test]
fn empty_cpu_sets_are_rejected() {
    let none = ThreadPoolBuilder::new().num_threads(2).cpus(Vec::new());
    assert_eq!(
        none.build().unwrap_err().to_string(),
        "the list of per-worker CPU sets is empty"
    );
    let empty = ThreadPoolBuilder::new()
        .num_threads(2)
        .cpus(vec![vec![0], Vec::new()]);
    assert_eq!(empty.build().unwrap_err().to_string(), "CPU set 1 is empty");
}

/// Workers 0 and 1 each queue `JOBS` jobs on their own deque and then block until all
/// jobs ran, so only worker 2 runs them, by stealing, in its steal order `[1, 0]`. It may
/// take one job of worker 0 while worker 1's deque is still empty (that job waits until
/// worker 1 queued); after that it must drain worker 1 (nearer) before worker 0.
#[test]
fn thieves_follow_their_steal_order() {
    const JOBS: usize = 50;
    let pool = ThreadPoolBuilder::new()
        .num_threads(3)
        .steal_order(vec![vec![1, 2], vec![0, 2], vec![1, 0]])
        .build()
        .unwrap();
    assert_eq!(pool.steal_order(2), &[1, 0]);
    let queued = [AtomicUsize::new(0), AtomicUsize::new(0)];
    let done = AtomicUsize::new(0);
    // (worker that ran the job, worker that queued it), in run order.
    let ran = Mutex::new(Vec::new());
    let job = |owner: usize| {
        wait_for(&queued[1], 1);
        ran.lock()
            .unwrap()
            .push((pool.current_thread_index(), owner));
        done.fetch_add(1, Ordering::AcqRel);
    };
    let job = &job;
    pool.broadcast(|worker| {
        if worker == 2 {
            return;
        }
        if worker == 1 {
            wait_for(&queued[0], 1);
        }
        // From a worker, a scope's jobs go to that worker's own deque; the body blocks
        // (running nothing) until every job ran elsewhere.
        pool.scope(|s| {
            for _ in 0..JOBS {
                s.spawn(move |_| job(worker));
            }
            queued[worker].store(1, Ordering::Release);
            wait_for(&done, 2 * JOBS);
        });
    });
    let ran = ran.into_inner().unwrap();
    assert_eq!(ran.len(), 2 * JOBS);
    assert!(
        ran.iter().all(|&(by, _)| by == Some(2)),
        "only worker 2 was free to run jobs: {ran:?}"
    );
    let owners: Vec<usize> = ran[1..].iter().map(|&(_, owner)| owner).collect();
    let first_zero = owners.iter().position(|&o| o == 0).unwrap_or(owners.len());
    assert!(
        owners[first_zero..].iter().all(|&o| o == 0),
        "worker 2 took a job of worker 0 while worker 1 had some: {owners:?}"
    );
}

/// The stress test's mix (nested detached spawns, scopes, batches, par_for) on workers
/// pinned two to a CPU, with a steal order that is not round-robin.
#[test]
#[cfg(any(target_os = "linux", windows))]
fn pinned_workers_with_a_steal_order_run_every_task_once() {
    const TASKS: usize = 20_000;
    let cpu = os::process_cpus()[0];
    let last = os::process_cpus().last().copied().unwrap_or(cpu);
    let pool = Arc::new(
        ThreadPoolBuilder::new()
            .num_threads(4)
            .cpus(vec![vec![cpu], vec![cpu], vec![last], vec![last]])
            .steal_order(vec![
                vec![1, 3, 2],
                vec![0, 2, 3],
                vec![3, 0, 1],
                vec![2, 1, 0],
            ])
            .build()
            .unwrap(),
    );
    let tally = Tally::new(TASKS);
    let quarter = TASKS / 4;
    // Detached spawns from outside, each spawning a child from inside (own deque).
    for id in (0..quarter).step_by(2) {
        let (tally, inner) = (Arc::clone(&tally), Arc::clone(&pool));
        pool.spawn(move || {
            tally.hit(id);
            let tally = Arc::clone(&tally);
            inner.spawn(move || tally.hit(id + 1));
        });
    }
    // A batch.
    pool.spawn_batch((quarter..2 * quarter).map(|id| {
        let tally = Arc::clone(&tally);
        move || tally.hit(id)
    }));
    // Nested scopes from a worker.
    pool.broadcast(|worker| {
        if worker == 0 {
            pool.scope(|s| {
                for id in (2 * quarter..3 * quarter).step_by(2) {
                    let tally = &tally;
                    s.spawn(move |s| {
                        tally.hit(id);
                        s.spawn(move |_| tally.hit(id + 1));
                    });
                }
            });
        }
    });
    pool.par_for(3 * quarter..TASKS, 7, |id| tally.hit(id));
    // The detached spawns hold clones of the pool until they finish, and nothing above
    // waits for them: wait for the last clone to go, as `stress.rs` does.
    let start = std::time::Instant::now();
    while Arc::strong_count(&pool) > 1 {
        assert!(
            start.elapsed().as_secs() < 20,
            "tasks keep the pool after 20 s"
        );
        std::thread::yield_now();
    }
    let pool = Arc::try_unwrap(pool).unwrap_or_else(|_| panic!("tasks keep the pool"));
    drop(pool);
    tally.assert_each_once();
}

#[test]
fn a_pool_without_cpus_reports_none() {
    let pool = ThreadPool::new(2).unwrap();
    assert_eq!(pool.worker_cpus(0), None);
    assert_eq!(pool.steal_order(1), &[0]);
    assert_eq!(pool.steal_order(9), &[] as &[usize]);
}

/// `wakeups_are_never_lost` (stress.rs) with every thread pinned: two workers share the
/// submitter's CPU, a third sits on another one with a steal order that skips worker 0,
/// and the submitter is itself a pinned worker of a second pool. Single spawns after gaps
/// that land in every phase of a worker's way to sleep; a lost wake-up hangs the task and
/// `wait_for` fails after 20 s. The sleep protocol's fence pair (`membarrier` against a
/// compiler fence, `src/sleep/README.md`) must hold whether sleeper and submitter share a CPU or not.
#[test]
#[cfg(any(target_os = "linux", windows))]
fn pinned_wakeups_are_never_lost() {
    let cpu = os::process_cpus()[0];
    let last = os::process_cpus().last().copied().unwrap_or(cpu);
    let pool = Arc::new(
        ThreadPoolBuilder::new()
            .num_threads(3)
            .cpus(vec![vec![cpu], vec![cpu], vec![last]])
            .steal_order(vec![vec![1, 2], vec![0, 2], vec![1]])
            .build()
            .unwrap(),
    );
    let submitter = ThreadPoolBuilder::new()
        .num_threads(1)
        .cpus(vec![vec![cpu]])
        .build()
        .unwrap();
    let done = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(AtomicUsize::new(0));
    {
        let (pool, done, finished) = (Arc::clone(&pool), Arc::clone(&done), Arc::clone(&finished));
        submitter.spawn(move || {
            for round in 0..1500 {
                match round % 4 {
                    0 => {}
                    1 => (0..(round % 97) * 10).for_each(|_| std::hint::spin_loop()),
                    2 => std::thread::sleep(std::time::Duration::from_micros(
                        (round % 13) as u64 * 5,
                    )),
                    _ => std::thread::sleep(std::time::Duration::from_micros(300)),
                }
                let done_clone = Arc::clone(&done);
                pool.spawn(move || {
                    done_clone.fetch_add(1, Ordering::Release);
                });
                wait_for(&done, round + 1);
            }
            finished.fetch_add(1, Ordering::Release);
        });
    }
    wait_for(&finished, 1);
    drop(submitter);
    assert_eq!(done.load(Ordering::Acquire), 1500);
}

/// 16 workers pinned to one CPU (with the submitter free to run anywhere): the oversubscribed
/// sleep protocol (`util::no_wakeup_lost_with_many_workers`) when every worker shares a CPU.
#[test]
#[cfg(any(target_os = "linux", windows))]
fn pinned_oversubscribed_wakeups_are_never_lost() {
    let cpu = os::process_cpus()[0];
    let pool = ThreadPoolBuilder::new()
        .num_threads(16)
        .cpus(vec![vec![cpu]; 16])
        .build()
        .unwrap();
    util::no_wakeup_lost_with_many_workers(&pool, 500);
}
