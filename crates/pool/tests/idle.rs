//! An idle pool sleeps: its workers use (almost) no CPU. One test per file because it
//! measures the whole process.
#![cfg(target_os = "linux")]

use coretune_pool::ThreadPool;
use std::time::Duration;

/// User + system CPU time of this process in clock ticks (fields 14 and 15 of
/// `/proc/self/stat`, see proc(5)).
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("Linux has /proc/self/stat");
    // The command name (field 2) may contain spaces; fields after it follow ") ".
    let after_name = &stat[stat.rfind(')').expect("field 2 ends with ')'") + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // `after_name` starts at field 3, so field 14 is index 11.
    let ticks = |i: usize| {
        fields[i]
            .parse::<u64>()
            .expect("utime and stime are integers")
    };
    ticks(11) + ticks(12)
}

#[test]
fn idle_pool_uses_no_cpu() {
    let pool = ThreadPool::new(4).unwrap();
    // Wake every worker, then let them fall asleep.
    pool.par_for(0..1000, 1, |i| {
        std::hint::black_box(i);
    });
    std::thread::sleep(Duration::from_millis(50));
    let before = cpu_ticks();
    std::thread::sleep(Duration::from_millis(300));
    let used = cpu_ticks() - before;
    // Ticks are usually 10 ms; spinning workers would burn ~120 ticks here.
    assert!(used <= 3, "idle pool used {used} ticks of CPU in 300 ms");
    drop(pool);
}
