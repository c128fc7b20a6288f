//! A program built on coretune-pool the way its README says (`ThreadPoolBuilder::from_env`),
//! which reports where each of its threads may run: coretune's end-to-end placement test
//! (`crates/cli/tests/pin.rs`) runs it under `coretune run --threads N --place …`.
//!
//! ```text
//! placed [MS] [early]   each thread spins MS milliseconds (50); `early`: start one std
//!                       thread before the pool (it shifts the pinning library's count)
//! ```
//!
//! One line per thread on stdout, the main thread first, then worker 0, 1, …:
//! `thread <i> tid <tid> affinity <cpu list> seen <cpu list>` (the format of the C programs
//! in `crates/cli/tests/data/pin/`).

#[cfg(target_os = "linux")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    use std::sync::Barrier;

    let mut args = std::env::args().skip(1);
    let ms: u64 = match args.next() {
        Some(ms) => ms.parse()?,
        None => 50,
    };
    let early = args.next().as_deref() == Some("early");
    // A thread of the program's own, made before the pool, alive until the end.
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let helper = early.then(|| std::thread::spawn(move || stopped.recv()));

    let pool = coretune_pool::ThreadPoolBuilder::from_env()?.build()?;
    // Every thread spins at the same time, so that none borrows another's CPU unseen. The
    // workers report from a broadcast, which blocks its caller: a std thread waits on it
    // while the main thread reports.
    let barrier = Barrier::new(pool.num_threads() + 1);
    let (main, workers) = std::thread::scope(|s| {
        let workers = s.spawn(|| pool.broadcast(|i| report(i + 1, &barrier, ms)));
        let main = report(0, &barrier, ms);
        (main, workers.join())
    });
    let workers = workers.map_err(|_| "a worker panicked")?;
    drop(stop);
    if let Some(helper) = helper {
        let _ = helper.join();
    }
    println!("{main}");
    for line in workers {
        println!("{line}");
    }
    Ok(())
}

/// Thread `index`'s line: its affinity, and the CPUs it ran on while spinning `ms` beside
/// the others.
#[cfg(target_os = "linux")]
fn report(index: usize, barrier: &std::sync::Barrier, ms: u64) -> String {
    use std::collections::BTreeSet;
    use std::time::{Duration, Instant};

    barrier.wait();
    let mut seen = BTreeSet::new();
    let end = Instant::now() + Duration::from_millis(ms);
    while Instant::now() < end {
        // SAFETY: sched_getcpu takes nothing and returns a CPU number or -1.
        let cpu = unsafe { libc::sched_getcpu() };
        if let Ok(cpu) = usize::try_from(cpu) {
            seen.insert(cpu);
        }
    }
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut mask: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `mask` is a live cpu_set_t of the size passed; the kernel writes at most that.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&mask), &raw mut mask) };
    assert_eq!(
        rc,
        0,
        "sched_getaffinity: {}",
        std::io::Error::last_os_error()
    );
    let affinity: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below CPU_SETSIZE, the size of `mask`.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &mask) })
        .collect();
    let list = |cpus: &mut dyn Iterator<Item = usize>| {
        cpus.map(|c| c.to_string()).collect::<Vec<_>>().join(",")
    };
    // SAFETY: gettid takes nothing and cannot fail.
    let tid = unsafe { libc::gettid() };
    format!(
        "thread {index} tid {tid} affinity {} seen {}",
        list(&mut affinity.into_iter()),
        list(&mut seen.into_iter())
    )
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("placed: Linux only (it reads each thread's affinity with sched_getaffinity)");
    std::process::exit(2);
}
