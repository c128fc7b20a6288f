//! coretune's per-thread placement check for Rust programs on `std::thread`: the main thread
//! and N-1 spawned threads each report the CPUs they may run on (`Cpus_allowed_list` of
//! `/proc/thread-self/status`) and the CPUs they were seen on (`sched_getcpu` samples while
//! all of them spin together). Built by the tests with `rustc -O threads.rs`.
//!
//!   threads N [MS]
//!
//! Output as `threads.c`'s: `thread <index> tid <tid> affinity <cpu list> seen <cpu list>`.

use std::collections::BTreeSet;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

unsafe extern "C" {
    fn sched_getcpu() -> i32;
    fn gettid() -> i32;
}

fn status_field(name: &str) -> String {
    let status = std::fs::read_to_string("/proc/thread-self/status").expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .map(|v| v.trim().to_owned())
        .expect("field")
}

fn list(cpus: &BTreeSet<i32>) -> String {
    let v: Vec<String> = cpus.iter().map(ToString::to_string).collect();
    v.join(",")
}

fn work(barrier: &Barrier, spin: Duration) -> String {
    barrier.wait();
    let end = Instant::now() + spin;
    let mut seen = BTreeSet::new();
    let mut sink = 0u64;
    while Instant::now() < end {
        for i in 0..10_000u64 {
            sink = sink.wrapping_add(std::hint::black_box(i));
        }
        // SAFETY: glibc's sched_getcpu takes nothing and returns a CPU number or -1.
        seen.insert(unsafe { sched_getcpu() });
    }
    std::hint::black_box(sink);
    // SAFETY: glibc's gettid takes nothing and returns this thread's id.
    let tid = unsafe { gettid() };
    format!(
        "tid {tid} affinity {} seen {}",
        status_field("Cpus_allowed_list:"),
        list(&seen)
    )
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).expect("usage: threads N [MS]");
    let ms: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(50);
    let barrier = Arc::new(Barrier::new(n));
    let spin = Duration::from_millis(ms);
    let handles: Vec<_> = (1..n)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || work(&barrier, spin))
        })
        .collect();
    let main = work(&barrier, spin);
    println!("thread 0 {main}");
    for (i, h) in handles.into_iter().enumerate() {
        println!("thread {} {}", i + 1, h.join().expect("thread"));
    }
}
