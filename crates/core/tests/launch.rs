//! A command started through `program::run` starts with the CPU set applied, and
//! `program::rebind_process` moves every thread of a running process (Linux only; uses the live
//! machine's CPU 0, which every machine has, and changes no state of the test process).
#![cfg(target_os = "linux")]

use std::process::Command;

use coretune_core::cpuset::{set_from_indexes, set_to_vec};
use coretune_core::program::{affinity_of, rebind_process, run};

#[test]
fn child_starts_bound_and_running_process_is_rebound() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("status");
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(format!(
        "grep Cpus_allowed_list /proc/self/status > {}",
        out.display()
    ));
    let status = run(cmd, Some(&set_from_indexes([0])), None).unwrap();
    assert!(status.unwrap().success());
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.split_whitespace().nth(1), Some("0"), "{text}");

    let mut sleeper = Command::new("sleep").arg("5").spawn().unwrap();
    let pid = sleeper.id();
    let bound = rebind_process(pid, &set_from_indexes([0])).unwrap();
    assert_eq!(
        bound,
        vec![(i32::try_from(pid).unwrap(), set_from_indexes([0]))]
    );
    assert_eq!(set_to_vec(&affinity_of(bound[0].0).unwrap()), vec![0]);
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
}

/// At the timeout the program and what it started end together: a shell whose background child
/// would otherwise outlive it.
#[test]
fn a_timeout_kills_the_whole_process_tree() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("child");
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("sleep 30 & echo $! > {}; wait", pidfile.display()));
    let start = std::time::Instant::now();
    let status = run(cmd, None, Some(std::time::Duration::from_millis(500))).unwrap();
    assert!(status.is_none(), "killed, not ended: {status:?}");
    assert!(start.elapsed() < std::time::Duration::from_secs(10));
    let child: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Killed with its group: gone, or a zombie until init reaps it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next());
        if stat.is_empty() || state == Some("Z") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "sleep {child} still runs: {stat}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// This thread's voluntary context switches so far (`getrusage(RUSAGE_THREAD)`).
fn voluntary_switches() -> i64 {
    // SAFETY: `rusage` is plain integers, for which all zeroes is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable `rusage`, the one thing `getrusage` writes.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    assert_eq!(rc, 0);
    usage.ru_nvcsw
}

/// Waiting for a program with a timeout blocks in the kernel: the waiting thread sleeps once
/// (and wakes once) for the whole run, where a `try_wait` poll every 200 µs (what a sweep did)
/// switched about 1,500 times in these 0.3 s and preempted the program each time on a full
/// machine. A thread left alone may still be switched out now and then: the bound leaves room
/// for that, not for a poll.
#[test]
fn waiting_with_a_timeout_does_not_poll() {
    for timeout in [Some(std::time::Duration::from_secs(30)), None] {
        let mut cmd = Command::new("sleep");
        cmd.arg("0.3");
        let before = voluntary_switches();
        let status = run(cmd, None, timeout).unwrap();
        let switches = voluntary_switches() - before;
        assert!(status.is_some_and(|s| s.success()), "{status:?}");
        assert!(
            switches < 20,
            "{switches} voluntary context switches while waiting 0.3 s (timeout {timeout:?})"
        );
    }
}
